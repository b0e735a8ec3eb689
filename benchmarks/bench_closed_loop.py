"""Closed-loop simulation speed: lifted fast path vs per-step controller calls vs a naive loop.

Plant: random n = 10 states, m = 2 inputs, per-channel fractional delays (R = 3 past periods),
delay-aware LQR feedback on state and input history (a linear controller, H = R).
Prints steps per second of CPU time (best of the repeats: the machine is shared) and ratios,
with python-control's ``forced_response`` of the lifted closed loop as the established
alternative.

Run:  .venv/bin/python benchmarks/bench_closed_loop.py [--steps 200000] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import cpu_best_time, emit_summary, summary_row

from dmdidc import DelayedPlant
from simulations.closed_loop import simulate_closed_loop

#: The closed-loop row's goal: keep the ratio to python-control measured on main (35x faster),
#: with 50 % allowed for a loaded shared machine.
KEEP = 1.5 / 35


class Gain:
    """Linear controller u_k = K_x x_k + sum_i K_u[i-1] u_{k-i} with its own input history."""

    def __init__(self, K_x: np.ndarray, K_u: np.ndarray) -> None:
        self.K_x, self.K_u = K_x, K_u
        self.reset()

    def reset(self) -> None:
        self.history = np.zeros((self.K_u.shape[0], self.K_x.shape[0]))   # u_{k-1}, u_{k-2}, ...

    def __call__(self, x: np.ndarray) -> np.ndarray:
        u = self.K_x @ x + np.einsum("hij,hj->i", self.K_u, self.history)
        self.history = np.roll(self.history, 1, axis=0)
        self.history[0] = u
        return u

    def feedback_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        return self.K_x, self.K_u


def make_problem(n: int = 10, m: int = 2, seed: int = 0) -> tuple[DelayedPlant, Gain,
                                                                np.ndarray]:
    """Random plant and an LQR gain designed on its lifted (delay-aware) realization."""
    import control

    rng = np.random.default_rng(seed)
    A_c = 0.3 * rng.normal(size=(n, n))
    B_c = rng.normal(size=(n, m))
    plant = DelayedPlant.from_continuous(A_c, B_c, delay=[0.13, 0.27][:m] + [0.2] * (m - 2),
                                         dt=0.1)
    F, G = plant.lifted_matrices()
    K, _, _ = control.dlqr(F, G, np.eye(F.shape[0]), np.eye(m))
    K_u = np.stack([-K[:, n + m * i:n + m * (i + 1)] for i in range(plant.max_delay)])
    return plant, Gain(-K[:, :n], K_u), rng.normal(size=n)


def naive_loop(plant: DelayedPlant, controller: Gain, x0: np.ndarray, steps: int) -> np.ndarray:
    """Textbook loop: x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}, inputs kept in a Python list."""
    controller.reset()
    A_d, blocks = plant.A_d, plant.B_blocks
    past = [np.zeros(plant.n_inputs) for _ in range(plant.max_delay)]
    x = np.array(x0, dtype=float)
    states = [x]
    for _ in range(steps):
        u = controller(x)
        past.insert(0, u)
        x = A_d @ x
        for j, block in enumerate(blocks):
            x = x + block @ past[j]
        past.pop()
        states.append(x)
    return np.array(states).T


def tight_loop(plant: DelayedPlant, controller: Gain, x0: np.ndarray, steps: int) -> np.ndarray:
    """The unblocked alternative: iterate the lifted closed-loop matrix one step at a time."""
    from controllers.analysis import lifted_loop
    from simulations.closed_loop import _linear_trajectory

    F, G, C = lifted_loop(plant, *controller.feedback_matrices())
    z0 = np.zeros(F.shape[0])
    z0[:plant.n_states] = x0
    return _linear_trajectory(F + G @ C, z0, None, steps, None, blocked=False).T


def python_control(plant: DelayedPlant, controller: Gain, x0: np.ndarray, steps: int
                   ) -> np.ndarray:
    """The established alternative: python-control's ``forced_response`` of the lifted closed
    loop (delay-free state ``[x_k, u_{k-1}, ..]``, no external input), its plant states."""
    import control

    from controllers.analysis import lifted_loop

    F, G, C = lifted_loop(plant, *controller.feedback_matrices())
    size = F.shape[0]
    z0 = np.zeros(size)
    z0[:plant.n_states] = x0
    loop = control.ss(F + G @ C, np.zeros((size, 1)), np.eye(size), np.zeros((size, 1)),
                      plant.dt)
    response = control.forced_response(loop, T=np.arange(steps + 1) * plant.dt, X0=z0)
    return response.states[:plant.n_states]


def rate(run, steps: int, repeats: int) -> tuple[float, np.ndarray]:
    best, out = cpu_best_time(run, repeats)   # CPU time: the machine is shared
    return steps / best, out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true",
                        help="only the headline row (fast path vs python-control) for "
                             "run_all.py's table")
    args = parser.parse_args(argv)
    plant, controller, x0 = make_problem()
    steps = args.steps
    rows = []
    fast, fast_result = rate(lambda: simulate_closed_loop(plant, controller, x0, steps,
                                                          method="linear"), steps, args.repeats)
    rows.append(("fast path (lifted, method='linear')", fast))
    peer, peer_states = rate(lambda: python_control(plant, controller, x0, steps), steps,
                             args.repeats)
    rows.append(("python-control forced_response", peer))
    if args.json:
        scale = np.max(np.abs(peer_states))
        assert np.max(np.abs(fast_result.states - peer_states)) <= 1e-8 * scale
        emit_summary([summary_row(f"closed loop, {steps} steps", steps / fast, steps / peer,
                                  "python-control forced_response",
                                  f"keep (<= {KEEP:.3f}: 1/35 on main, +50 % for load)",
                                  peer / fast <= KEEP)])
        return
    noisy, _ = rate(lambda: simulate_closed_loop(plant, controller, x0, steps, method="linear",
                                                 process_noise=lambda r, s: r.normal(0, .01, s),
                                                 rng=0), steps, args.repeats)
    rows.append(("fast path + process noise", noisy))
    tight, _ = rate(lambda: tight_loop(plant, controller, x0, steps), steps, args.repeats)
    rows.append(("lifted matrix, one mat-vec per step", tight))
    step, step_result = rate(lambda: simulate_closed_loop(plant, controller, x0, steps,
                                                          method="step"), steps, args.repeats)
    rows.append(("per-step path (method='step')", step))
    naive, naive_states = rate(lambda: naive_loop(plant, controller, x0, steps), steps,
                               args.repeats)
    rows.append(("naive python loop", naive))
    gap = max(np.max(np.abs(fast_result.states - step_result.states)),
              np.max(np.abs(fast_result.states - naive_states)))
    scale = np.max(np.abs(naive_states))
    print(f"closed loop, n = {plant.n_states}, m = {plant.n_inputs}, R = {plant.max_delay}, "
          f"{steps} steps, best of {args.repeats}")
    print(f"{'method':<38}{'steps/s':>14}{'vs naive':>10}")
    for name, value in rows:
        print(f"{name:<38}{value:>14,.0f}{value / naive:>9.1f}x")
    print(f"max |state difference| between methods: {gap:.2e} (relative {gap / scale:.1e})")


if __name__ == "__main__":
    main()
