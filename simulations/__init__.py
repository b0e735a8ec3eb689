"""Plants, closed-loop simulation, case studies, figures and the ``dmdidc`` command line.

The names below are imported on first use (PEP 562), so that the ``dmdidc`` command, whose
entry point lives in this package, starts without loading the controllers and their solvers.
"""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'simulations' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value      # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

