"""Plants, closed-loop simulation, case studies, figures and the ``dmdidc`` command line."""

from simulations.closed_loop import (
    ClosedLoopResult,
    Controller,
    LinearController,
    NoiseSampler,
    noise_sampler,
    simulate_closed_loop,
)
from simulations.fractional_delay_study import (
    StudyConfig,
    StudyRow,
    plot_study,
    run_fractional_delay_study,
    write_study,
)
from simulations.plant import intersample_trajectory, simulate_plant

__all__ = [
    "ClosedLoopResult",
    "Controller",
    "LinearController",
    "NoiseSampler",
    "StudyConfig",
    "StudyRow",
    "intersample_trajectory",
    "noise_sampler",
    "plot_study",
    "run_fractional_delay_study",
    "simulate_closed_loop",
    "simulate_plant",
    "write_study",
]
