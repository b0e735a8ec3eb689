"""Benchmark: clipped per-example gradient sums of DP-SGD, three ways, same inputs.

Times (wall clock, best of ``--repeat``) of one DP-SGD step's clipped gradient sum for ``R``
replicates with batches of ``B`` examples (digits-sized MLP 64-32-10 and softmax 64x10):

* ``naive loop``: one example at a time (``model.gradient`` on a single example), clipped and
  added - what a direct transcription of DP-SGD does;
* ``materialized``: all per-example gradients at once (``per_example_gradients``, shape
  (R, B, P)), then clipped and summed;
* ``ghost``: ``clipped_gradient_sum`` (norms from the factor norms, sums as batched matrix
  products; no (R, B, P) array).

All three results are compared (max abs difference printed) and the speed-ups are printed as
ratios.

Run:  .venv/bin/python benchmarks/bench_dpsgd.py [--replicates 20] [--batch 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privacy.dpsgd import MLPModel, SoftmaxModel  # noqa: E402


def _best(fn, repeat: int) -> tuple[float, np.ndarray]:
    """Best wall time of ``repeat`` calls (timeit) and the function's value."""
    return min(timeit.Timer(fn).repeat(repeat, number=1)), fn()


def _clip_sum(grads: np.ndarray, clip: float) -> np.ndarray:
    norms = np.linalg.norm(grads, axis=-1, keepdims=True)
    return (grads * np.minimum(1.0, clip / norms)).sum(axis=-2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    R, B, clip = args.replicates, args.batch, 1.0
    print(f"R = {R} replicates x B = {B} examples per step, clip = {clip}")
    print(f"{'model':>22} {'P':>6} {'naive loop':>12} {'materialized':>13} {'ghost':>10} "
          f"{'loop/ghost':>11} {'mat/ghost':>10} {'max |diff|':>11}")
    for model in (SoftmaxModel(64, 10), MLPModel(64, 32, 10)):
        params = model.init(R, rng) + 0.1 * rng.normal(size=(R, model.n_params))
        X = rng.random((R, B, 64))
        y = rng.integers(0, 10, (R, B))
        valid = np.ones((R, B), dtype=bool)

        def naive(model=model, params=params, X=X, y=y):
            out = np.zeros((R, model.n_params))
            for r in range(R):
                for b in range(B):
                    g = model.gradient(params[r:r + 1], X[r, b:b + 1], y[r, b:b + 1])[0]
                    out[r] += g * min(1.0, clip / np.linalg.norm(g))
            return out

        def materialized(model=model, params=params, X=X, y=y):
            return _clip_sum(model.per_example_gradients(params, X, y), clip)

        def ghost(model=model, params=params, X=X, y=y, valid=valid):
            return model.clipped_gradient_sum(params, X, y, valid, clip)

        t_loop, v_loop = _best(naive, max(1, args.repeat // 2))
        t_mat, v_mat = _best(materialized, args.repeat)
        t_ghost, v_ghost = _best(ghost, args.repeat)
        diff = max(np.abs(v_loop - v_ghost).max(), np.abs(v_mat - v_ghost).max())
        print(f"{type(model).__name__:>22} {model.n_params:>6} {1e3 * t_loop:10.1f}ms "
              f"{1e3 * t_mat:11.2f}ms {1e3 * t_ghost:8.2f}ms {t_loop / t_ghost:10.0f}x "
              f"{t_mat / t_ghost:9.1f}x {diff:11.1e}")
        print(f"{'':>22} {'':>6} examples/s: loop {R * B / t_loop:,.0f}, materialized "
              f"{R * B / t_mat:,.0f}, ghost {R * B / t_ghost:,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
