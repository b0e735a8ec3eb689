"""Plants, closed-loop simulation, case studies, figures and the ``dmdidc`` command line.

The names below are imported on first use (PEP 562), so that the ``dmdidc`` command, whose
entry point lives in this package, starts without loading the controllers and their solvers.
"""

from __future__ import annotations

from _toolbox.lazy import lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "simulations.closed_loop": ["ClosedLoopResult", "Controller", "LinearController",
                                "NoiseSampler", "noise_sampler", "simulate_closed_loop"],
    "simulations.studies.fractional_delay": ["StudyConfig", "StudyRow", "plot_study",
                                             "run_fractional_delay_study", "write_study"],
    "simulations.plant": ["intersample_trajectory", "simulate_plant"],
})
