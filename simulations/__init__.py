"""Plants, closed-loop simulation, case studies, figures and the ``dmdidc`` command line.

The names below are imported on first use (PEP 562), so that the ``dmdidc`` command, whose
entry point lives in this package, starts without loading the controllers and their solvers.
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

# public name -> module that defines it
_EXPORTS = {
    "ClosedLoopResult": "simulations.closed_loop",
    "Controller": "simulations.closed_loop",
    "LinearController": "simulations.closed_loop",
    "NoiseSampler": "simulations.closed_loop",
    "noise_sampler": "simulations.closed_loop",
    "simulate_closed_loop": "simulations.closed_loop",
    "StudyConfig": "simulations.fractional_delay_study",
    "StudyRow": "simulations.fractional_delay_study",
    "plot_study": "simulations.fractional_delay_study",
    "run_fractional_delay_study": "simulations.fractional_delay_study",
    "write_study": "simulations.fractional_delay_study",
    "intersample_trajectory": "simulations.plant",
    "simulate_plant": "simulations.plant",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
