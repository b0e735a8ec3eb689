"""Cost of the delay recovery of a fit (issues 19/21): the eigenbasis of A_c against expm.

On the ``bench_fit.py`` plant (n = 20, m = 4, R = 20) with ``--samples`` noisy samples, the
default fit is run once; then, in CPU time (best of ``--repeat``, every cache cleared before
each call so that nothing is reused from the fit):

  * what a fit and its checks recover from the blocks: the continuous model with the branch
    choice (``recover_branch``), the ambiguity check's second recovery
    (``delay_with_earlier_block``) and the delays' standard errors (``delay_standard_errors``),
    with the hold integrals ``Gamma(s) b`` and ``e^{A s} b`` from one eigendecomposition of
    ``A_c`` (the default);
  * the same with every hold integral a block matrix exponential (scipy ``expm``), the way
    before, forced by setting the eigenbasis' condition limit to zero.

The largest difference between the two delays (in periods) is printed with the ratio.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_recovery.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import cpu_best_time, emit_summary, summary_row
from bench_fit import make_plant

from dmdidc import DMDidc, random_excitation
from dmdidc.inference import branches, recovery
from dmdidc.inference.ambiguity import delay_with_earlier_block
from dmdidc.inference.diagnostics import delay_standard_errors, restricted_solution


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    plant = make_plant()
    rng = np.random.default_rng(1)
    U = random_excitation(plant.n_inputs, args.samples, rng=rng)
    X = plant.simulate(rng.standard_normal(plant.n_states), U)
    X += 1e-3 * np.std(X, axis=1, keepdims=True) * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=plant.max_delay).fit(X, U, dt=plant.dt)
    active, dt = est.block_test_.active, plant.dt
    restricted = restricted_solution(est.regression_, active | est.B_blocks.any(axis=1))

    def recover():
        recovery._LAST.clear()
        branches._LAST.clear()
        A_c, _, delay = branches.recover_branch(est.A_d, est.B_blocks, dt, active=active,
                                                block_variance=1e-6)
        below = delay_with_earlier_block(A_c, est.regression_, active, dt)
        return delay, below, delay_standard_errors(est.model_, restricted)

    t_eigen, fast = cpu_best_time(recover, args.repeat)
    limit = recovery._EIGENBASIS_CONDITION
    recovery._EIGENBASIS_CONDITION = 0.0                  # every hold integral by expm
    try:
        t_expm, slow = cpu_best_time(recover, args.repeat)
    finally:
        recovery._EIGENBASIS_CONDITION = limit
    gap = max(float(np.nanmax(np.abs(a - b))) for a, b in zip(fast[:2], slow[:2], strict=True))
    rows = [summary_row(f"delay recovery of a fit + ambiguity check + delay standard errors "
                        f"(n = {plant.n_states}, m = {plant.n_inputs}, R = {plant.max_delay}; "
                        f"delays differ by {gap / dt:.1e} T)", t_eigen, t_expm,
                        "the same by scipy expm", "< 1 (faster)", t_eigen < t_expm)]
    emit_summary(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
