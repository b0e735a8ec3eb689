"""Adaptive control on a delay change: a fixed controller against one re-designed on line.

The true plant is continuous, ``x' = A_c x + B_c u(t - r)``, sampled exactly (period ``T``);
its delay steps from ``old_delay`` to ``new_delay`` (in periods, every channel) at sample
``step``; the blocks switch there, as in :mod:`simulations.studies.live_stream`.  Two loops
run on the same plant with the same random draws (common random numbers):

* **fixed**: the controller designed on the true plant with the initial delay, kept;
* **adaptive**: the same controller at the start; :class:`~dmdidc.OnlineDMDidc` identifies
  the plant on line from the loop's data, and the controller is re-designed
  (``controller.with_model(live.model_)``: the gain is kept, the prediction through the delay
  recomputed) when the delay estimate of some channel has moved from the controller's delay by
  more than ``tolerance`` periods *and* its confidence interval excludes the controller's
  delay (:class:`AdaptiveConfig`).  No confirmation over several updates is needed: a delay
  the data do not support is NaN (``OnlineDMDidc.delay_status_``), not a confident wrong
  number, and NaN re-designs nothing.

Each step the controller measures ``y_k = x_k + v_k`` (it sits with the sensor) and issues
``u_k = law(y_k, issued commands) + e_k``, with a white excitation ``e_k`` that keeps the
closed-loop data informative (without it ``u_k`` is a linear function of the regressors).
Packets are lost at rate ``lost``: a lost measurement packet reaches the identifier as NaN; a
lost command packet is not applied: the actuator holds its previous value (the identifier
gets NaN with ``lost_inputs="hold"``).  Process noise ``w_k`` enters the state.  The stage cost
is ``x_k' x_k + u_k' u_k`` on the true state and the applied command (the LQR weights).

References
----------
Dissertation ch. 9 (DMDidc, eqs. 9.13, 9.65, 9.70-9.75); issue 22 item 6.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import (
    as_generator,
    check_in_interval,
    check_integer,
    check_nonnegative,
    check_positive,
    check_probability,
)
from simulations.studies.data_kinds import random_state_matrix

__all__ = ["AdaptiveConfig", "AdaptiveRun", "adaptive_delay_run", "adaptive_delay_study",
           "plot_adaptive_run", "summarize_runs"]

#: The controllers the study runs (names of :func:`controllers.make_controller`).
_CONTROLLERS = ("fractional", "truncated", "exact", "mpc")
#: A state norm beyond which a loop counts as diverged (its cost is then infinite).
DIVERGED_NORM = 1e6


@dataclass(frozen=True)
class AdaptiveConfig:
    """Settings of the study (delays in periods ``T``; noise levels are standard deviations).

    The adaptive controller is re-designed after an identifier update where some channel's
    estimate moved by more than ``tolerance`` with its ``level`` interval excluding the
    controller's delay and every channel's delay is determined with an interval narrower than
    ``interval_width``.  ``update="delay"`` replaces the delay of the design
    model (``A_c``, ``B_c`` kept); ``"model"`` takes the whole identified model.
    ``controller`` is a name of :func:`controllers.make_controller` (``"fractional"``,
    ``"truncated"``, ``"exact"`` or ``"mpc"``, the latter with ``horizon``).
    """

    steps: int = 3000
    step: int = 1000
    dt: float = 0.5
    old_delay: float = 1.3
    new_delay: float = 2.6
    max_delay: int = 4
    n_states: int = 3
    n_inputs: int = 2
    real_parts: tuple[float, float] = (-0.3, 0.0)
    lost: float = 0.03
    excitation: float = 1.0
    process_noise: float = 0.1
    measurement_noise: float = 0.02
    chunk: int = 50
    forgetting: float = 0.999
    tolerance: float = 0.15
    interval_width: float = 0.5
    update: str = "delay"
    level: float = 0.99
    controller: str = "fractional"
    horizon: int = 10

    def __post_init__(self) -> None:
        check_integer("steps", self.steps, minimum=2)
        for name in ("max_delay", "n_states", "n_inputs", "horizon"):
            check_integer(name, getattr(self, name), minimum=1)
        check_integer("step", self.step, minimum=1)
        if not self.step < self.steps:
            raise ParameterError(f"step must lie inside the run (0 < step < steps = "
                                 f"{self.steps}); got step = {self.step}")
        for name in ("old_delay", "new_delay"):
            value = getattr(self, name)
            if not 0 <= value <= self.max_delay:
                raise ParameterError(f"{name} must be in [0, max_delay = {self.max_delay}] "
                                     f"periods; got {value!r}")
        if self.update not in ("delay", "model"):
            raise ParameterError(f"update must be 'delay' or 'model'; got {self.update!r}")
        check_probability("lost", self.lost, allow_one=False)
        check_positive("dt", self.dt)
        for name in ("excitation", "process_noise", "measurement_noise"):
            check_nonnegative(name, getattr(self, name))
        for name in ("tolerance", "interval_width"):
            check_positive(name, getattr(self, name))
        check_in_interval("forgetting", self.forgetting, 0.0, 1.0, low_open=True)
        check_in_interval("level", self.level, 0.0, 1.0, low_open=True, high_open=True)
        check_integer("chunk", self.chunk, minimum=1)
        if self.controller not in _CONTROLLERS:
            raise ParameterError(f"controller must be one of {_CONTROLLERS}; got "
                                 f"{self.controller!r}")


@dataclass
class AdaptiveRun:
    """One plant, both loops.

    Attributes
    ----------
    config : AdaptiveConfig
    times : ndarray, shape (C,)
        Sample after each identifier update (chunk end).
    estimate, low, high : ndarray, shape (C, m)
        Delay estimate and its ``level`` interval (periods) after each update (NaN while no
        fit).
    controller_delay : ndarray, shape (C, m)
        The adaptive controller's delay (periods) after each update.
    events : list of int
        Samples at which the change detector fired.
    redesigns : list of int
        Samples at which the adaptive controller was re-designed.
    lost_measurements, lost_commands : ndarray of bool, shapes (steps + 1,), (steps,)
    cost_fixed, cost_adaptive : ndarray, shape (steps,)
        Stage costs ``x_k' x_k + u_k' u_k`` (inf after a divergence).
    """

    config: AdaptiveConfig
    times: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    controller_delay: np.ndarray
    events: list[int]
    redesigns: list[int]
    lost_measurements: np.ndarray
    lost_commands: np.ndarray
    cost_fixed: np.ndarray
    cost_adaptive: np.ndarray
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def costs(self) -> dict[str, float]:
        """Summed stage costs before and after the step, per loop, and the ratio after."""
        s = self.config.step
        out = {"fixed_before": float(self.cost_fixed[:s].sum()),
               "adaptive_before": float(self.cost_adaptive[:s].sum()),
               "fixed_after": float(self.cost_fixed[s:].sum()),
               "adaptive_after": float(self.cost_adaptive[s:].sum())}
        out["ratio_after"] = out["adaptive_after"] / out["fixed_after"]
        return out


class _Loop:
    """One closed loop: the controller, the issued and applied commands, the true state."""

    def __init__(self, controller: Any, x0: np.ndarray, steps: int, m: int, pad: int) -> None:
        self.controller, self.x, self.pad = controller, x0.copy(), pad
        self.issued = np.zeros((steps + pad, m))      # row pad + k: u_k as issued
        self.applied = np.zeros((steps + pad, m))     # row pad + k: u_k as the plant got it
        self.cost = np.zeros(steps)
        self.diverged = False

    def command(self, y: np.ndarray, k: int) -> np.ndarray:
        """The controller's law at ``y_k`` with the commands it issued (without excitation)."""
        c, i = self.controller, self.pad + k
        if hasattr(c, "feedback_matrices"):
            K_x, K_u = c.feedback_matrices()
            H = K_u.shape[0]
            return K_x @ y + np.einsum("hab,hb->a", K_u, self.issued[i - H:i][::-1])
        R = c.plant.max_delay
        return c.solve(y, self.issued[i - R:i].T).first_input

    def advance(self, k: int, u: np.ndarray, lost: bool, A_d: np.ndarray,
                blocks: np.ndarray, w: np.ndarray) -> None:
        i = self.pad + k
        self.issued[i] = u
        self.applied[i] = self.applied[i - 1] if lost else u     # the actuator holds
        if self.diverged:
            self.cost[k] = np.inf
            return
        u = self.applied[i]
        self.cost[k] = self.x @ self.x + u @ u
        past = self.applied[i - blocks.shape[0] + 1:i + 1][::-1]     # u_k .. u_{k-R}
        self.x = A_d @ self.x + np.einsum("jnm,jm->n", blocks, past) + w
        if not np.linalg.norm(self.x) < DIVERGED_NORM:
            self.diverged = True


def _plants(config: AdaptiveConfig, rng: np.random.Generator) -> tuple[Any, Any]:
    from dmdidc import DelayedPlant

    A_c = random_state_matrix(rng, config.n_states, config.dt, real_parts=config.real_parts)
    B_c = rng.standard_normal((config.n_states, config.n_inputs))
    return tuple(DelayedPlant.from_continuous(A_c, B_c, np.full(config.n_inputs, d * config.dt),
                                              config.dt, max_delay=config.max_delay)
                 for d in (config.old_delay, config.new_delay))


def _controller(config: AdaptiveConfig, plant: Any) -> Any:
    from controllers import make_controller

    options = {"horizon": config.horizon} if config.controller == "mpc" else {}
    return make_controller(config.controller, plant, **options)


def adaptive_delay_run(config: AdaptiveConfig = AdaptiveConfig(),
                       rng: np.random.Generator | int | None = None) -> AdaptiveRun:
    """Run the fixed and the adaptive loop on one random plant (module notes).

    Parameters
    ----------
    config : AdaptiveConfig
    rng : numpy.random.Generator, int or None
        Draws the plant, then the noise, excitation and losses shared by both loops.

    Returns
    -------
    AdaptiveRun

    Examples
    --------
    >>> run = adaptive_delay_run(AdaptiveConfig(steps=600, step=300), rng=0)
    >>> run.cost_fixed.shape, run.estimate.shape[1]
    ((600,), 2)
    """
    from dmdidc import OnlineDMDidc

    seed = rng if isinstance(rng, (int, np.integer)) else None
    rng = as_generator(rng)
    c = config
    old, new = _plants(c, rng)
    n, m, steps = c.n_states, c.n_inputs, c.steps
    W = c.process_noise * rng.standard_normal((steps, n))
    V = c.measurement_noise * rng.standard_normal((steps + 1, n))
    E = c.excitation * rng.standard_normal((steps, m))
    lost_x = rng.random(steps + 1) < c.lost
    lost_u = rng.random(steps) < c.lost
    pad = c.max_delay + 2
    loops = {"fixed": _Loop(_controller(c, old), np.zeros(n), steps, m, pad),
             "adaptive": _Loop(_controller(c, old), np.zeros(n), steps, m, pad)}
    live = OnlineDMDidc(max_delay=c.max_delay, dt=c.dt, forgetting=c.forgetting,
                        lost_inputs="hold")
    Y = np.full((steps + 1, n), np.nan)          # what the identifier receives
    U = np.full((steps, m), np.nan)
    controller_delay = np.full(m, c.old_delay)
    track: dict[str, list] = {k: [] for k in ("times", "estimate", "low", "high", "ctrl")}
    redesigns: list[int] = []
    last = 0
    for k in range(steps):
        plant = old if k < c.step else new
        for name, loop in loops.items():
            y = loop.x + V[k]
            u = (0.0 if loop.diverged else loop.command(y, k)) + E[k]
            if name == "adaptive":
                Y[k] = np.nan if lost_x[k] else y
                U[k] = np.nan if lost_u[k] else u
            loop.advance(k, u, lost_u[k], plant.A_d, plant.B_blocks, W[k])
        if (k + 1) % c.chunk == 0 or k + 1 == steps:
            Y[k + 1] = np.nan if lost_x[k + 1] else loops["adaptive"].x + V[k + 1]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # diagnostics of fits on few samples
                live.update(Y[last:k + 2].T, U[last:k + 1].T)
            last = k + 1
            estimate, low, high = _read(live, c)
            if _should_redesign(estimate, low, high, controller_delay, c.tolerance,
                                c.interval_width):
                redesigned = _redesign(loops["adaptive"].controller, live, old, estimate, c)
                if redesigned is not None:
                    loops["adaptive"].controller = redesigned
                    controller_delay = estimate.copy()
                    redesigns.append(k + 1)
            for key, value in zip(("times", "estimate", "low", "high", "ctrl"),
                                  (k + 1, estimate, low, high, controller_delay.copy()),
                                  strict=True):
                track[key].append(value)
    return AdaptiveRun(
        config=c, times=np.array(track["times"]), estimate=np.array(track["estimate"]),
        low=np.array(track["low"]), high=np.array(track["high"]),
        controller_delay=np.array(track["ctrl"]), events=[e.sample for e in live.events_],
        redesigns=redesigns, lost_measurements=lost_x, lost_commands=lost_u,
        cost_fixed=loops["fixed"].cost, cost_adaptive=loops["adaptive"].cost, seed=seed)


def _read(live: Any, config: AdaptiveConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Delay estimate and interval in periods (NaN while the statistics give no fit)."""
    nan = np.full(config.n_inputs, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # diagnostics of fits on few samples
        try:
            ci = live.delay_ci(config.level)
        except (ValueError, ArithmeticError):
            return nan, nan, nan
    return (np.asarray(ci.value) / config.dt, np.asarray(ci.low) / config.dt,
            np.asarray(ci.high) / config.dt)


def _should_redesign(estimate: np.ndarray, low: np.ndarray, high: np.ndarray,
                     current: np.ndarray, tolerance: float, width: float) -> bool:
    """Some channel moved by more than ``tolerance`` with its interval excluding ``current``,
    and every channel's interval is narrower than ``width`` (NaN compares False: no fit, no
    re-design)."""
    moved = np.abs(estimate - current) > tolerance
    excluded = (current < low) | (current > high)
    # every channel's delay known (the new model sets them all), to a fraction of a period
    precise = np.all(high - low < width)
    return bool(precise and np.any(moved & excluded))


def _redesign(controller: Any, live: Any, design: Any, estimate: np.ndarray,
              config: AdaptiveConfig) -> Any:
    """``controller.with_model(...)`` on the updated model (``config.update``), or None when
    the fit gives no usable model (e.g. an identified ``A_d`` without a real logarithm)."""
    from dmdidc import DelayedPlant

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if config.update == "model":
                return controller.with_model(live.model_)
            model = DelayedPlant.from_continuous(design.A_c, design.B_c, estimate * config.dt,
                                                 config.dt, max_delay=config.max_delay)
            return controller.with_model(model)
        except (ValueError, ArithmeticError):
            return None


def adaptive_delay_study(config: AdaptiveConfig = AdaptiveConfig(), plants: int = 5,
                         rng: np.random.Generator | int | None = None,
                         progress: Callable[[int], Any] | None = None) -> list[AdaptiveRun]:
    """:func:`adaptive_delay_run` on ``plants`` random plants (seeds drawn from ``rng``).

    Examples
    --------
    >>> runs = adaptive_delay_study(AdaptiveConfig(steps=400, step=200), plants=2, rng=1)
    >>> len(runs), sorted(runs[0].costs())[:2]
    (2, ['adaptive_after', 'adaptive_before'])
    """
    plants = check_integer("plants", plants, minimum=1)
    seeds = as_generator(rng).integers(0, 2**31, plants)
    runs = []
    for i, seed in enumerate(seeds):
        runs.append(adaptive_delay_run(config, int(seed)))
        if progress is not None:
            progress(i + 1)
    return runs


def summarize_runs(runs: list[AdaptiveRun]) -> dict[str, Any]:
    """JSON-ready summary: the config, every run's costs, events and re-designs."""
    rows = [{"seed": run.seed, **run.costs(), "events": run.events,
             "redesigns": run.redesigns,
             "final_estimate": [None if not np.isfinite(v) else float(v)
                                for v in run.estimate[-1]]}
            for run in runs]
    ratios = np.array([row["ratio_after"] for row in rows])
    return {"config": asdict(runs[0].config), "runs": rows,
            "adaptive_beats_fixed_after_step": int(np.sum(ratios < 1)),
            "median_ratio_after": float(np.median(ratios))}


def plot_adaptive_run(run: AdaptiveRun, path: str | Path) -> Path:
    """Three panels: delay estimate vs truth (interval band, events, re-designs), running
    closed-loop cost fixed vs adaptive, lost packets."""
    from _toolbox.plotting import new_figure, save_figure

    c = run.config
    fig = new_figure((8.0, 7.0))
    ax_delay, ax_cost, ax_lost = fig.subplots(3, 1, sharex=True,
                                              gridspec_kw={"height_ratios": [3, 3, 1]})
    k = np.arange(c.steps)
    for i in range(c.n_inputs):
        # no interval: the delay is undetermined (e.g. just after an event, on few samples)
        shown = np.where(np.isfinite(run.low[:, i]), run.estimate[:, i], np.nan)
        line, = ax_delay.plot(run.times, shown, lw=1.3,
                              label=f"estimate, input {i}")
        ax_delay.fill_between(run.times, run.low[:, i], run.high[:, i], color=line.get_color(),
                              alpha=0.2, lw=0)
    ax_delay.plot(k, np.where(k < c.step, c.old_delay, c.new_delay), "k--", lw=1,
                  label="true delay")
    ax_delay.step(run.times, run.controller_delay[:, 0], where="post", color="C3", lw=1,
                  label="adaptive controller's delay")
    for j, sample in enumerate(run.events):
        ax_delay.axvline(sample, color="k", lw=0.8, label="change detected" if j == 0 else None)
    for j, sample in enumerate(run.redesigns):
        ax_delay.axvline(sample, color="C3", lw=0.8, ls=":",
                         label="re-design" if j == 0 else None)
    ax_delay.set_ylabel("delay / T")
    ax_delay.set_ylim(0, c.max_delay)
    ax_delay.legend(fontsize=7, ncol=3, loc="upper left")
    costs = run.costs()
    for name, stage in (("fixed", run.cost_fixed), ("adaptive", run.cost_adaptive)):
        after = costs[f"{name}_after"]
        ax_cost.plot(k, np.cumsum(stage), lw=1.3,
                     label=f"{name} (after the step: {after:.4g})")
    ax_cost.axvline(c.step, color="k", ls="--", lw=0.8)
    ax_cost.set_ylabel("running cost  sum x'x + u'u")
    ax_cost.legend(fontsize=8, loc="upper left")
    for row, lost in enumerate((run.lost_measurements[:-1], run.lost_commands)):
        where = np.flatnonzero(lost)
        ax_lost.plot(where, np.full(where.size, row), "|", ms=6, color=f"C{row + 4}")
    ax_lost.set_yticks([0, 1], ["measurement", "command"], fontsize=8)
    ax_lost.set_ylim(-0.6, 1.6)
    ax_lost.set_xlabel("sample k")
    ax_lost.set_title(f"lost packets ({100 * c.lost:g} % each)", fontsize=8)
    ax_delay.set_title(f"{c.controller} controller, delay {c.old_delay:g} T -> {c.new_delay:g} T "
                       f"at k = {c.step}: fixed vs re-designed on line", fontsize=10)
    return Path(save_figure(fig, path))
