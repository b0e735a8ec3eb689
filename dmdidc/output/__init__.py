"""Output identification: the plant and its fractional input delays from measured outputs.

:mod:`dmdidc.output.subspace` finds the dynamics ``(A, C)`` (canonical variates with the
inputs in flight projected out, so the delay adds no states); :mod:`dmdidc.output.blocks` reads
each channel's input vector and delay from the structured output-error regression;
:mod:`dmdidc.output.estimator` ties them together in :class:`OutputDMDidc`.
"""
