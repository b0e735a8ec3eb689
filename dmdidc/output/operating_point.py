"""The input operating point of an output model: where the data sat, for control.

An :class:`~dmdidc.OutputDMDidc` fitted to inputs around a non-zero level ``u_op`` (a valve at
45 %) drives its states with the inputs themselves, ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}``,
and puts what remains constant in the output offset ``c`` of ``y = C x + c``.  Its equilibrium
under ``u_op`` is ``x_op = (I - A_d)^-1 B_d u_op = -A_c^-1 B_c u_op`` with the output
``y_op = C x_op + c``: the outputs' level in the data (the fitted offset is consistent with it by
construction).  Without it a controller regulates ``x`` to 0, i.e. the inputs to 0 (valve shut,
heater off, walkthrough finding 3); with it, as :class:`~dmdidc.OperatingPoint` of the model's
:meth:`~dmdidc.OutputDMDidc.plant`, controllers and the observer regulate around ``(x_op,
u_op)``.  Because ``x_op`` is the model's exact equilibrium, the model in deviations and the
model in the data's units have the same matrices: nothing else changes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["OPERATING_LEVEL", "input_level", "input_operating_point"]

#: An input whose mean is below this fraction of its spread (standard deviation about the mean)
#: is excitation around zero, not an operating point: zero-mean excitation of K samples has a
#: mean of about 1/sqrt(K) of its spread (0.02 at K = 2000), a plant run at an operating point
#: a mean of several spreads (the walkthrough's valve: 45 % +- 5 %).
OPERATING_LEVEL = 0.1
#: Batches whose means give the standard error of an input's mean (batch means: right for
#: serially correlated inputs whose memory is short against a batch).
_BATCHES = 20
#: Two-sided level at which the mean must also differ from zero: the fraction alone is no test,
#: and white zero-mean excitation of 400 samples passed it on 4 of 60 fits (an operating point
#: made up from chance, which a controller would then hold).
_SIGNIFICANCE = 1e-3


def input_level(experiments: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray | None:
    """The mean input ``(m,)`` over every experiment's ``(Y, U)``, or ``None`` when every input
    varies around zero: its mean at most :data:`OPERATING_LEVEL` of its spread, or within
    chance of zero (a t test at level 1e-3 on the means of :data:`_BATCHES` consecutive
    batches of the samples)."""
    from scipy.special import stdtrit

    U = np.hstack([Ui for _, Ui in experiments])
    if U.shape[0] == 0 or U.shape[1] == 0:
        return None
    mean = U.mean(axis=1)
    spread = U.std(axis=1)
    level = np.abs(mean) > OPERATING_LEVEL * spread
    batches = min(_BATCHES, U.shape[1] // 10)
    if batches >= 2:
        means = np.array([b.mean(axis=1) for b in np.array_split(U, batches, axis=1)])
        error = means.std(axis=0, ddof=1) / np.sqrt(batches)
        level &= np.abs(mean) > stdtrit(batches - 1, 1.0 - _SIGNIFICANCE / 2) * error
    if not level.any():
        return None
    return mean


def input_operating_point(A_c: np.ndarray, B_c: np.ndarray, dt: float,
                          level: np.ndarray | None):
    """The equilibrium ``OperatingPoint(x_op, u_op)`` of an output model under the input level
    ``u_op``: ``x_op = (I - A_d)^-1 B_d u_op`` (:func:`dmdidc.model.steady_state`, equal to
    ``-A_c^-1 B_c u_op``) with ``(A_d, B_d)`` the hold of ``(A_c, B_c)`` over ``dt``; ``None``
    without a level or for a model with an integrator (no equilibrium under a non-zero
    input)."""
    from dmdidc.discretization import zoh_matrices
    from dmdidc.errors import NoSteadyStateError
    from dmdidc.model import OperatingPoint, steady_state

    if level is None:
        return None
    A_d, B_d = zoh_matrices(A_c, B_c, dt)
    try:
        state = steady_state(A_d, B_d @ level)
    except NoSteadyStateError:
        return None
    return OperatingPoint(state, level)
