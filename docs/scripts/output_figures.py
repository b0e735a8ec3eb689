"""Figures of the "Identify from outputs" page: the canonical correlations of partial
measurements, the noise edge and the chosen order; and a setpoint step of the identified
oscillator under MPC through the observer, with and without an output bound.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/output_figures.py [--out docs/figures]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from _toolbox.plotting import new_figure, save_figure
from dmdidc import OutputDMDidc, random_excitation
from simulations.studies.data_kinds import random_plant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "figures"))
    out = Path(parser.parse_args().out)
    rng = np.random.default_rng(0)
    plant = random_plant(rng, n_states=3, n_inputs=2, dt=0.5, max_delay=4)
    U = random_excitation(2, 4000, rng=rng)
    C = rng.standard_normal((2, 3))
    Y = C @ plant.simulate(rng.standard_normal(3), U)[:, :-1]
    Y += 0.1 * Y.std(axis=1, keepdims=True) * rng.standard_normal(Y.shape)     # 20 dB
    est = OutputDMDidc(max_delay=4).fit(Y, U, dt=0.5)
    fig = est.plot_singular_values()
    fig.axes[0].set_title("3 states, 2 sensors, 20 dB")
    save_figure(fig, out / "output_singular_values.png")
    print(f"wrote {out / 'output_singular_values.png'}: {est.order_rule_}")
    output_bounds_figure(out / "output_bounds.png")


def output_bounds_figure(path: Path) -> None:
    """The page's example: the oscillator identified from one sensor (offset 2) around an input
    level of 30, moved to 31 by MPC through the observer, with and without ``y_max``."""
    from controllers import DelayedKalmanObserver, DelayedMPC, OutputFeedback
    from dmdidc import DelayedPlant
    from simulations.closed_loop import simulate_closed_loop

    base = DelayedPlant.from_continuous([[-0.05, 1.0], [-1.0, -0.05]], [[0.0], [1.0]],
                                        delay=1.3, dt=0.5)
    u_op = np.array([30.0])
    x_op = np.linalg.solve(np.eye(2) - base.A_d, base.B_d @ u_op)
    physical = DelayedPlant.from_continuous(base.A_c, base.B_c, base.delay, base.dt,
                                            operating_point=(x_op, u_op))
    C_true = np.array([[1.0, 0.0]])
    U = random_excitation(1, 3000, rng=0)
    U = u_op[:, None] + U - U.mean(axis=1, keepdims=True)
    Y = C_true @ physical.simulate(x_op, U)[:, :-1] + 2.0
    Y = Y + 0.05 * Y.std() * np.random.default_rng(1).standard_normal(Y.shape)
    est = OutputDMDidc(max_delay=4).fit(Y, U, dt=0.5)
    setpoint = est.with_operating_point(input=[31.0])
    level = float((est.C @ setpoint.operating_point_.state + est.offset_)[0])
    start = float((C_true @ x_op)[0] + 2.0)
    runs = {}

    def loop(**bounds):
        mpc = DelayedMPC(setpoint, horizon=20, u_min=0.0, u_max=100.0, R=[[1.0]], **bounds)
        return simulate_closed_loop(
            physical, OutputFeedback(mpc, DelayedKalmanObserver(est)), x_op, 60,
            measurement_matrix=C_true, measurement_noise=np.full((1, 61), 2.0))

    runs["unbounded"] = loop()
    limit = level + 0.2 * float((C_true @ runs["unbounded"].states)[0].max() + 2.0 - level)
    runs[f"y_max = level + {limit - level:.3f}"] = loop(y_max=[limit],
                                                        soft_state_constraints=True)
    fig = new_figure((7, 5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    for name, run in runs.items():
        top.plot(run.times, (C_true @ run.states)[0] + 2.0, label=name)
        bottom.step(run.times[:-1], run.inputs[0], where="post", label=name)
    top.axhline(level, color="0.4", lw=0.8, ls="--", label="new output level")
    top.axhline(limit, color="C3", lw=0.8, ls=":", label="y_max")
    top.set_ylabel("sensor reading y")
    bottom.set_ylabel("input u")
    bottom.set_xlabel("time [s]")
    top.set_title("setpoint step 30 -> 31 through the observer (delay 1.3 s)")
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    save_figure(fig, path)
    overshoot = {name: float((C_true @ run.states)[0].max() + 2.0 - level)
                 for name, run in runs.items()}
    print(f"wrote {path}: overshoot {overshoot} of a step {level - start:.3f}")


if __name__ == "__main__":
    main()
