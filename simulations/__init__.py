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
    "StudyConfig": "simulations.studies.fractional_delay",
    "StudyRow": "simulations.studies.fractional_delay",
    "plot_study": "simulations.studies.fractional_delay",
    "run_fractional_delay_study": "simulations.studies.fractional_delay",
    "write_study": "simulations.studies.fractional_delay",
    "intersample_trajectory": "simulations.plant",
    "simulate_plant": "simulations.plant",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
