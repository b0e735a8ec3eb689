"""The dissertation's Figure 9.1, reproduced from data: excitation -> DMDidc -> LQR gain ->
whole-delay (truncated) vs fractional-delay predictive feedback, in closed loop on the true
continuous-time plant of eq. (9.76) with T = 2 and r = 1T, 1.25T, 1.5T.

Expected (section 9.5): both controllers coincide at 1T, the truncated one converges more slowly
at 1.25T and fails at 1.5T, while the fractional controller is stable at every delay.
"""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import as_generator, check_integer, check_positive
from controllers import (
    FractionalDelayController,
    PredictiveController,
    UnstableLoopWarning,
    lqr_gain,
)
from controllers.analysis import spectral_radius
from dmdidc import DelayedPlant, DMDidc, random_excitation
from simulations.closed_loop import ClosedLoopResult, simulate_closed_loop

__all__ = ["StudyConfig", "StudyRow", "format_table", "plot_study", "run_fractional_delay_study",
           "write_study"]

SEED_A_C = ((0.0, 1.1), (-1.1, 0.0))
SEED_B_C = ((1.0, -1.0), (-1.0, 2.0))


@dataclass(frozen=True)
class StudyConfig:
    """Settings of the Figure 9.1 study (defaults: the dissertation's example, eq. 9.76).

    Attributes
    ----------
    A_c, B_c : tuple of tuples
        Continuous plant.
    dt : float
        Sampling period ``T`` (seconds).
    delays_in_periods : tuple of float
        True input delays as multiples of ``T``.
    max_delay : int
        ``R`` used by DMDidc.
    excitation_steps : int
        Length of the random excitation used for identification.
    steps : int
        Closed-loop steps simulated.
    x0 : tuple of float
        Initial state of the closed loop.
    seed : int
        Seed of every random draw in the study.
    """

    A_c: tuple[tuple[float, ...], ...] = SEED_A_C
    B_c: tuple[tuple[float, ...], ...] = SEED_B_C
    dt: float = 2.0
    delays_in_periods: tuple[float, ...] = (1.0, 1.25, 1.5)
    max_delay: int = 3
    excitation_steps: int = 200
    steps: int = 25
    x0: tuple[float, ...] = (1.0, 1.0)
    seed: int = 0
    Q: tuple[tuple[float, ...], ...] | None = field(default=None)
    R: tuple[tuple[float, ...], ...] | None = field(default=None)

    def __post_init__(self) -> None:
        check_positive("dt", self.dt)
        check_integer("max_delay", self.max_delay, minimum=0)
        check_integer("excitation_steps", self.excitation_steps, minimum=1)
        check_integer("steps", self.steps, minimum=1)
        check_integer("seed", self.seed, minimum=0)
        for value in self.delays_in_periods:
            if not 0 <= value <= self.max_delay:
                raise ValueError(f"delays_in_periods must lie in [0, max_delay={self.max_delay}]; "
                                 f"got {value}")


@dataclass(frozen=True)
class StudyRow:
    """One (delay, controller) result: identification error, spectral radius and cost."""

    delay_in_periods: float
    identified_delay_in_periods: float
    controller: str
    spectral_radius: float
    cost: float
    final_state_norm: float


def run_fractional_delay_study(config: StudyConfig = StudyConfig(), *,
                               progress: Callable[[str], None] | None = None
                               ) -> tuple[list[StudyRow], dict[tuple[float, str],
                                                               ClosedLoopResult]]:
    """Identify the plant at every delay, design the gain, run both controllers.

    Parameters
    ----------
    config : StudyConfig
    progress : callable, optional
        Called with a short message after each step (the CLI shows it).

    Returns
    -------
    rows : list of StudyRow
    runs : dict
        ``(delay_in_periods, controller_name) -> ClosedLoopResult`` with the fine inter-sample
        trajectory.

    Examples
    --------
    >>> rows, runs = run_fractional_delay_study(StudyConfig(delays_in_periods=(1.5,)))
    >>> {row.controller: row.spectral_radius < 1 for row in rows}
    {'truncated': False, 'fractional': True}
    """
    rng = as_generator(config.seed)
    A_c, B_c = np.array(config.A_c), np.array(config.B_c)
    rows: list[StudyRow] = []
    runs: dict[tuple[float, str], ClosedLoopResult] = {}
    for periods in config.delays_in_periods:
        true_plant = DelayedPlant.from_continuous(A_c, B_c, periods * config.dt, config.dt,
                                                  max_delay=config.max_delay)
        U = random_excitation(B_c.shape[1], config.excitation_steps, rng=rng)
        X = true_plant.simulate(rng.standard_normal(A_c.shape[0]), U)
        model = DMDidc(max_delay=config.max_delay).fit(X, U, dt=config.dt).model_
        K = lqr_gain(model, Q=None if config.Q is None else np.array(config.Q),
                     R=None if config.R is None else np.array(config.R))
        identified = float(np.max(model.delay) / config.dt)
        with warnings.catch_warnings():
            # the truncated loop's instability is what the study measures and reports
            warnings.simplefilter("ignore", UnstableLoopWarning)
            compared = (("truncated", PredictiveController(model, K)),
                        ("fractional", FractionalDelayController(model, K)))
        for name, controller in compared:
            result = simulate_closed_loop(true_plant, controller, np.array(config.x0),
                                          config.steps, fine=True)
            runs[(periods, name)] = result
            rows.append(StudyRow(
                delay_in_periods=float(periods), identified_delay_in_periods=identified,
                controller=name, spectral_radius=float(spectral_radius(true_plant, controller)),
                cost=float(result.cost),
                final_state_norm=float(np.linalg.norm(result.states[:, -1]))))
            if progress is not None:
                progress(f"r = {periods:g} T, {name}: spectral radius "
                         f"{rows[-1].spectral_radius:.4f}")
    return rows, runs


def plot_study(runs: dict[tuple[float, str], ClosedLoopResult], path: str | Path) -> Path:
    """Figure 9.1: state norm over time, truncated (dashed) vs fractional (solid) controllers.

    Written as a PNG with matplotlib's object-oriented API (the caller's backend is untouched);
    parent folders are created.  Returns ``path``.
    """
    fig = new_figure((7, 4.2))
    ax = fig.add_subplot()
    delays = sorted({delay for delay, _ in runs})
    for i, delay in enumerate(delays):
        for name, style in (("fractional", "-"), ("truncated", "--")):
            result = runs.get((delay, name))
            if result is None:
                continue
            times, states = ((result.fine_times, result.fine_states)
                             if result.fine_states is not None else (result.times, result.states))
            ax.semilogy(times, np.maximum(np.linalg.norm(states, axis=0), 1e-16), style,
                        color=f"C{i % 10}", label=f"r = {delay:g} T, {name}")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("state norm |x(t)|")
    ax.set_title("Fractional-delay (solid) vs whole-delay predictive feedback (dashed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return save_figure(fig, path, dpi=130)


def write_study(rows: list[StudyRow], config: StudyConfig, out_dir: str | Path) -> dict[str, Path]:
    """Write ``summary.json`` and ``summary.csv`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = out / "summary.json", out / "summary.csv"
    json_path.write_text(json.dumps({"config": asdict(config),
                                     "results": [asdict(row) for row in rows]}, indent=2))
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(asdict(rows[0])))
        writer.writeheader()
        writer.writerows(asdict(row) for row in rows)
    return {"json": json_path, "csv": csv_path}


def format_table(rows: list[StudyRow]) -> str:
    """A plain-text table of the study."""
    header = (f"{'r/T':>5} {'r_hat/T':>9} {'controller':>11} {'spectral radius':>16} "
              f"{'cost':>12} {'|x_N|':>10}")
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(f"{row.delay_in_periods:5.2f} {row.identified_delay_in_periods:9.6f} "
                     f"{row.controller:>11} {row.spectral_radius:16.4f} {row.cost:12.4g} "
                     f"{row.final_state_norm:10.3g}")
    return "\n".join(lines)
