"""Identify from outputs, then control in closed loop (issue 19, the demo's ``outputs`` part).

A random lightly damped plant with a fractional input delay per channel is measured by fewer
sensors than it has states. From excitation data at ``snr_db``, :class:`dmdidc.OutputDMDidc`
finds its order, delays (with intervals) and eigenvalues. Two controllers, the fractional-delay
predictive feedback (eqs. 9.70-9.74) and input-bounded MPC, then act on the estimate of a
delay-aware Kalman filter (:class:`controllers.DelayedKalmanObserver`) and run on the TRUE
continuous-time plant, measured by its sensors with the same noise. Each is compared with the
same controller and filter designed on the true plant (the best this loop can do) and with no
control; the cost weighs the measured outputs, ``sum y_k' y_k + u_k' R u_k``, the same in any
state basis.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import check_integer, check_nonnegative, check_positive

__all__ = ["CONTROLLERS", "OutputControlConfig", "OutputControlRun", "plot_output_control",
           "run_output_control"]

CONTROLLERS = ("predictive", "mpc")
# Lightly damped modes (Re(lambda) T in this range): left alone, the plant rings for a while,
# so control has something to do.
REAL_PARTS = (-0.1, -0.02)
DELAY_PERIODS = (0.2, 2.8)
#: Fewest excitation samples: OutputDMDidc's default window (horizon 22 at max_delay 4, two
#: inputs, one output: 141 stacked rows, 282 windows) needs 329 of the default plant; 200 to
#: 328 were accepted and then refused by the fit ('record longer ... or lower horizon').
MIN_SAMPLES = 400


@dataclass(frozen=True)
class OutputControlConfig:
    """Settings of the identify-from-outputs -> control study.

    Attributes
    ----------
    seed : int
        Seed of every random draw (plant, sensors, excitation, noise, initial state).
    n_states, n_inputs, n_outputs : int
        Plant size; ``n_outputs < n_states`` (fewer sensors than states).
    dt : float
        Sampling period ``T`` (s).
    samples : int
        Excitation samples ``K`` for the fit (at least :data:`MIN_SAMPLES`).
    snr_db : float
        Signal-to-noise ratio of each measured output, in the data and in closed loop.
    max_delay : int
        ``R`` of the fit (at least 3: the delays are drawn in ``[0.2, 2.8] T``).
    steps : int
        Closed-loop steps.
    input_weight : float
        ``R = input_weight I`` of the cost and of both designs.
    disturbance : float
        Standard deviation of a white load disturbance added to each input channel in closed
        loop (the same draw for every loop, no control included).
    input_bound : float
        MPC's bounds ``|u_i| <= input_bound``.
    horizon : int
        MPC's horizon (decision moves).
    """

    seed: int = 0
    n_states: int = 3
    n_inputs: int = 2
    n_outputs: int = 1
    dt: float = 0.5
    samples: int = 2000
    snr_db: float = 20.0
    max_delay: int = 4
    steps: int = 200
    input_weight: float = 0.03
    disturbance: float = 0.3
    input_bound: float = 0.5
    horizon: int = 20

    def __post_init__(self) -> None:
        check_integer("seed", self.seed, minimum=0)
        check_integer("n_states", self.n_states, minimum=2)
        check_integer("n_inputs", self.n_inputs, minimum=1)
        check_integer("n_outputs", self.n_outputs, minimum=1)
        if self.n_outputs >= self.n_states:
            raise ParameterError(f"n_outputs={self.n_outputs}: this study measures fewer "
                                 f"signals than states; accepted: 1 .. {self.n_states - 1}")
        check_positive("dt", self.dt)
        check_integer("samples", self.samples, minimum=MIN_SAMPLES)
        check_positive("snr_db", self.snr_db)
        check_integer("max_delay", self.max_delay, minimum=3)
        check_integer("steps", self.steps, minimum=10)
        check_positive("input_weight", self.input_weight)
        check_nonnegative("disturbance", self.disturbance)
        check_positive("input_bound", self.input_bound)
        check_integer("horizon", self.horizon, minimum=1)


@dataclass(frozen=True)
class OutputControlRun:
    """Outcome of :func:`run_output_control`.

    Attributes
    ----------
    config : OutputControlConfig
    plant : dmdidc.DelayedPlant
        The true plant.
    C : ndarray, shape (l, n)
        The true sensors.
    model : dmdidc.OutputDMDidc
        The fit.
    fit_warnings : list of str
        What the fit warned (a model is never handed on in silence).
    fit_seconds : float
        CPU time of the fit.
    loops : dict
        ``(controller, "identified" | "true model")`` and ``("none", "no control")`` ->
        :class:`~simulations.closed_loop.ClosedLoopResult` on the true plant.
    """

    config: OutputControlConfig
    plant: Any
    C: np.ndarray
    model: Any
    fit_warnings: list[str]
    fit_seconds: float
    loops: dict[tuple[str, str], Any]

    def cost(self, controller: str, model: str) -> float:
        """Closed-loop cost of one loop (``"none", "no control"`` for the open plant)."""
        return float(self.loops[controller, model].cost)

    def summary(self) -> dict[str, Any]:
        """The numbers as plain JSON: configuration, truth, fit, costs and their ratios."""
        est, plant = self.model, self.plant
        idle = self.cost("none", "no control")
        loops = {name: {"identified": self.cost(name, "identified"),
                        "true model": self.cost(name, "true model"),
                        "identified / true model": (self.cost(name, "identified")
                                                    / self.cost(name, "true model")),
                        "identified / no control": self.cost(name, "identified") / idle,
                        "largest |u|": float(np.abs(self.loops[name, "identified"].inputs).max())}
                 for name in CONTROLLERS}
        return {
            "config": asdict(self.config),
            "plant": {"eigenvalues": _pairs(np.linalg.eigvals(plant.A_c)),
                      "delay_s": plant.delay.tolist(), "C": self.C.tolist()},
            "fit": {"order": int(est.order_), "order_rule": est.order_rule_,
                    "delay_s": est.delay.tolist(), "delay_ci_95_s": est.delay_ci().tolist(),
                    "eigenvalues": _pairs(est.eigenvalues_),
                    "eigenvalue_se": est.eigenvalue_se_.tolist(),
                    "warnings": list(self.fit_warnings), "cpu_seconds": self.fit_seconds},
            "cost": {"no control": idle, **loops},
        }


def _pairs(values: np.ndarray) -> list[list[float]]:
    """Complex values as ``[real, imaginary]`` pairs (JSON has no complex numbers)."""
    values = np.sort_complex(np.asarray(values, dtype=complex))
    return [[float(v.real), float(v.imag)] for v in values]


def _random_plant(config: OutputControlConfig, rng: np.random.Generator):
    from dmdidc import DelayedPlant
    from simulations.studies.data_kinds import random_state_matrix

    n, m = config.n_states, config.n_inputs
    A_c = random_state_matrix(rng, n, config.dt, real_parts=REAL_PARTS)
    delay = rng.uniform(*DELAY_PERIODS, m) * config.dt
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay, config.dt,
                                         max_delay=config.max_delay)
    return plant, rng.standard_normal((config.n_outputs, n))


def _fit(config: OutputControlConfig, plant, C: np.ndarray, rng: np.random.Generator):
    from dmdidc import OutputDMDidc, random_excitation

    U = random_excitation(config.n_inputs, config.samples, rng=rng)
    Y = C @ plant.simulate(np.zeros(config.n_states), U)[:, :-1]
    noise_std = np.sqrt(np.mean(Y ** 2, axis=1)) * 10.0 ** (-config.snr_db / 20.0)
    Y = Y + noise_std[:, None] * rng.standard_normal(Y.shape)
    start = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=config.max_delay).fit(Y, U, dt=config.dt)
    return est, [str(w.message) for w in caught], time.process_time() - start, noise_std


def _controller(kind: str, model, C: np.ndarray, config: OutputControlConfig):
    """``kind`` designed on ``model`` with the output weight ``C' C`` (tiny ridge: a state the
    sensors do not see still gets a definite weight)."""
    from controllers import DelayedMPC, FractionalDelayController, lqr_gain

    Q = C.T @ C + 1e-6 * np.eye(C.shape[1])
    R = config.input_weight * np.eye(config.n_inputs)
    if kind == "predictive":
        return FractionalDelayController(model, lqr_gain(model, Q=Q, R=R))
    return DelayedMPC(model, horizon=config.horizon, Q=Q, R=R, u_min=-config.input_bound,
                      u_max=config.input_bound)


class _NoControl:
    def __init__(self, m: int) -> None:
        self.m = m

    def reset(self) -> None:
        pass

    def __call__(self, y: np.ndarray) -> np.ndarray:
        return np.zeros(self.m)


def run_output_control(config: OutputControlConfig = OutputControlConfig(), *,
                       progress: Any = None) -> OutputControlRun:
    """Identify a random plant from its outputs, then control it through a Kalman filter.

    Parameters
    ----------
    config : OutputControlConfig
    progress : callable, optional
        Called with a short message after the fit and after each closed loop (6 calls).

    Returns
    -------
    OutputControlRun

    Examples
    --------
    >>> run = run_output_control(OutputControlConfig(samples=1000, steps=40))
    >>> run.model.order_ <= run.config.n_states + 2
    True
    >>> sorted(run.summary()["cost"])
    ['mpc', 'no control', 'predictive']
    """
    from controllers import DelayedKalmanObserver, OutputFeedback
    from simulations.closed_loop import simulate_closed_loop

    report = progress or (lambda message: None)
    rng = np.random.default_rng(config.seed)
    plant, C = _random_plant(config, rng)
    est, caught, seconds, noise_std = _fit(config, plant, C, rng)
    report(f"fit: order {est.order_}")
    x0 = rng.standard_normal(config.n_states)
    x0 /= np.linalg.norm(C @ x0)            # outputs of size 1 at the start
    # one draw of each noise for every loop: the loops differ only by their controller
    noise = noise_std[:, None] * rng.standard_normal((config.n_outputs, config.steps + 1))
    load = config.disturbance * rng.standard_normal((config.n_inputs, config.steps))
    weights = {"Q": C.T @ C, "R": config.input_weight * np.eye(config.n_inputs),
               "process_noise": plant.B_d @ load}     # enters where the inputs do
    loops = {("none", "no control"): simulate_closed_loop(
        plant, _NoControl(config.n_inputs), x0, config.steps, method="step", **weights)}
    report("no control")
    observers = {"identified": lambda: DelayedKalmanObserver(est),
                 "true model": lambda: DelayedKalmanObserver(
                     plant, C=C, measurement_noise=np.diag(noise_std ** 2))}
    for kind in CONTROLLERS:
        for name, model, sensors in (("identified", est, est.C), ("true model", plant, C)):
            loop = OutputFeedback(_controller(kind, model, sensors, config), observers[name]())
            loops[kind, name] = simulate_closed_loop(
                plant, loop, x0, config.steps, measurement_matrix=C, measurement_noise=noise,
                **weights)
            report(f"{kind}, {name}")
    return OutputControlRun(config, plant, C, est, caught, seconds, loops)


def plot_output_control(run: OutputControlRun, path: str | Path) -> Path:
    """Outputs (top) and inputs (bottom) over time, one column per controller: the loop on the
    identified model (solid), on the true model (dashed) and without control (grey).

    Written as a PNG with matplotlib's object-oriented API; returns ``path``.
    """
    fig = new_figure((10, 6))
    axes = fig.subplots(2, len(CONTROLLERS), sharex=True)
    idle = run.loops["none", "no control"]
    titles = {"predictive": "fractional-delay predictive feedback",
              "mpc": f"MPC, |u| <= {run.config.input_bound:g}"}
    for column, kind in enumerate(CONTROLLERS):
        top, bottom = axes[0, column], axes[1, column]
        top.plot(idle.times, (run.C @ idle.states)[0], color="0.6", label="no control")
        for name, style in (("identified", "-"), ("true model", "--")):
            result = run.loops[kind, name]
            top.plot(result.times, (run.C @ result.states)[0], style, color="C0",
                     label=f"{name}, cost {result.cost:.3g}")
            for channel, u in enumerate(result.inputs):
                bottom.step(result.times[:-1], u, style, where="post", color=f"C{channel + 1}",
                            label=f"u{channel} ({name})")
        if kind == "mpc":
            for bound in (-run.config.input_bound, run.config.input_bound):
                bottom.axhline(bound, color="k", lw=0.6, ls=":")
        top.set_title(f"{titles[kind]} (no control: cost {idle.cost:.3g})", fontsize=9)
        top.set_ylabel("first output y0")
        bottom.set_ylabel("inputs u")
        bottom.set_xlabel("time [s]")
        top.legend(fontsize=7)
        bottom.legend(fontsize=7, ncol=2)
        for ax in (top, bottom):
            ax.grid(True, alpha=0.3)
    sensors = "1 sensor" if run.config.n_outputs == 1 else f"{run.config.n_outputs} sensors"
    fig.suptitle(f"A {run.config.n_states}-state plant identified from {sensors}, controlled "
                 f"through a delay-aware Kalman filter on the true plant", fontsize=10)
    return save_figure(fig, path, dpi=110)
