"""Benchmark: SaS privacy numerics next to dp_accounting's Gaussian.

Times (wall clock, best of ``--repeat``):

* ``sas epsilon``: one pure-DP epsilon evaluation (bracketing + Brent on the SaS log-density
  ratio), cold (cache cleared);
* ``sas calibrate``: ``SaSMechanism.from_epsilon`` (root find over the scale);
* ``sas compose``: building the pessimistic PLD of one Poisson-subsampled SaS release and composing
  ``--steps`` (default 1e4) of them, then epsilon for delta = 1e-5;
* ``gauss compose``: dp_accounting's native Gaussian PLD with the same settings
  (sigma = sqrt(2) scale, i.e. SaS alpha = 2), and the ratio of the two;
* ``vector eps m=2``: the certified epsilon of a 2-vector SaS query (cold), vectorized over the
  grid of sensitivities, against the same grid evaluated one scalar epsilon at a time (the former
  implementation), and the ratio;
* ``generic gauss``: the generic pessimistic PLD of a Gaussian with sigma = 0.05 (loss range
  ~2000; it used to overflow and return NaN after 86 s) against dp_accounting's native PLD and
  the exact closed form;
* ``1e9 steps``: a billion subsampled releases (RDP for the Gaussian, optimal pure-DP composition
  for SaS; dp_accounting's PLD self-composition cannot do this).

Run:  .venv/bin/python benchmarks/bench_privacy.py [--alpha 1.95] [--scale 1.0] [--steps 10000]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from _common import best_time  # noqa: E402
from dp_accounting.pld import privacy_loss_distribution as pld_lib  # noqa: E402

from privacy import GaussianMechanism, SaSMechanism, accounting, pure_epsilon  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=1.95)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--sampling-rate", type=float, default=1e-3)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    alpha, scale, q, steps = args.alpha, args.scale, args.sampling_rate, args.steps

    def clear():
        pure_epsilon._epsilon_of_ratio.cache_clear()
        pure_epsilon._vector_epsilon.cache_clear()

    def cold_epsilon():
        clear()
        return SaSMechanism(alpha=alpha, scale=scale).epsilon
    t_eps, eps = best_time(cold_epsilon, args.repeat)

    def calibrate():
        clear()
        return SaSMechanism.from_epsilon(1.0, alpha=alpha).scale
    t_cal, cal = best_time(calibrate, args.repeat)

    def sas_compose():
        return accounting.epsilon(SaSMechanism(alpha=alpha, scale=scale), delta=args.delta,
                                  steps=steps, sampling_rate=q)
    t_sas, sas_eps = best_time(sas_compose, args.repeat)

    sigma = math.sqrt(2.0) * scale

    def gauss_compose():
        pld = pld_lib.from_gaussian_mechanism(sigma, sampling_prob=q)
        return pld.self_compose(steps).get_epsilon_for_delta(args.delta)
    t_gauss, gauss_eps = best_time(gauss_compose, args.repeat)

    print(f"alpha={alpha} scale={scale} q={q} steps={steps} delta={args.delta}")
    print(f"{'task':<16}{'seconds':>10}  result")
    print(f"{'sas epsilon':<16}{t_eps:>10.4f}  pure eps = {eps:.10g}")
    print(f"{'sas calibrate':<16}{t_cal:>10.4f}  scale for eps=1: {cal:.8g}")
    print(f"{'sas compose':<16}{t_sas:>10.3f}  eps = {sas_eps:.6g}")
    print(f"{'gauss compose':<16}{t_gauss:>10.3f}  eps = {gauss_eps:.6g} (sigma = sqrt2*scale)")
    print(f"ratio sas/gauss compose time: {t_sas / t_gauss:.2f}")

    def vector():
        clear()
        return SaSMechanism(alpha=alpha, scale=scale, dimension=2).epsilon
    t_vec, vec = best_time(vector, args.repeat)

    def vector_one_at_a_time():   # the same grid, one scalar maximisation per point
        clear()
        grid = np.unique(np.concatenate([np.linspace(0.0, 1.0, 201)[1:],
                                         np.geomspace(1e-4, 1.0, 1500),
                                         (1.0 + np.linspace(-0.5, 0.5, 401)) / 2, [0.5]]))
        return max(pure_epsilon._epsilon_of_ratio(alpha, scale / d) for d in grid)
    t_loop, _ = best_time(vector_one_at_a_time, 1)
    print(f"{'vector eps m=2':<16}{t_vec:>10.3f}  eps = {vec:.6g}; one grid point at a time: "
          f"{t_loop:.2f} s, ratio {t_loop / t_vec:.1f}x")

    tiny = GaussianMechanism(sigma=0.05)
    t_gen, gen = best_time(lambda: accounting.epsilon(tiny, delta=args.delta, generic=True), 1)
    t_nat, nat = best_time(lambda: pld_lib.from_gaussian_mechanism(0.05).get_epsilon_for_delta(
        args.delta), 1)
    exact = tiny.epsilon_for_delta(args.delta)
    print(f"{'generic gauss':<16}{t_gen:>10.3f}  sigma=0.05, one release: eps = {gen:.9g}; "
          f"dp_accounting native {nat:.9g} in {t_nat:.2f} s (ratio {t_nat / t_gen:.1f}x); "
          f"exact {exact:.9g}")

    t_rdp, rdp = best_time(lambda: accounting.guarantee(
        GaussianMechanism(sigma=1.0), delta=args.delta, steps=10 ** 9, sampling_rate=0.01), 1)
    t_pure, pure = best_time(lambda: accounting.guarantee(
        SaSMechanism(alpha=alpha, scale=scale), delta=args.delta, steps=10 ** 9,
        sampling_rate=q), 1)
    print(f"{'1e9 steps':<16}{t_rdp:>10.3f}  gauss sigma=1 q=0.01: eps = {rdp.epsilon:.6g} "
          f"({rdp.method})")
    print(f"{'1e9 steps':<16}{t_pure:>10.3f}  sas q={q:g}: eps = {pure.epsilon:.6g} "
          f"({pure.method})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
