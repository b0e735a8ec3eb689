"""Benchmark: SaS privacy numerics next to dp_accounting's Gaussian.

Times (wall clock, best of ``--repeat``):

* ``sas epsilon``: one pure-DP epsilon evaluation (bracketing + Brent on the SaS log-density
  ratio), cold (cache cleared);
* ``sas calibrate``: ``SaSMechanism.from_epsilon`` (root find over the scale);
* ``sas compose``: building the pessimistic PLD of one Poisson-subsampled SaS release and composing
  ``--steps`` (default 1e4) of them, then epsilon for delta = 1e-5;
* ``gauss compose``: dp_accounting's native Gaussian PLD with the same settings
  (sigma = sqrt(2) scale, i.e. SaS alpha = 2), and the ratio of the two.

Run:  .venv/bin/python benchmarks/bench_privacy.py [--alpha 1.95] [--scale 1.0] [--steps 10000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dp_accounting.pld import privacy_loss_distribution as pld_lib  # noqa: E402

from privacy import (  # noqa: E402
    SaSMechanism,
    accounting,
    mechanisms,  # noqa: E402
)


def _best(fn, repeat: int) -> tuple[float, object]:
    best, value = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


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

    def cold_epsilon():
        mechanisms._sas_epsilon_normalized.cache_clear()
        return SaSMechanism(alpha=alpha, scale=scale).epsilon
    t_eps, eps = _best(cold_epsilon, args.repeat)

    def calibrate():
        mechanisms._sas_epsilon_normalized.cache_clear()
        return SaSMechanism.from_epsilon(1.0, alpha=alpha).scale
    t_cal, cal = _best(calibrate, args.repeat)

    def sas_compose():
        return accounting.epsilon(SaSMechanism(alpha=alpha, scale=scale), delta=args.delta,
                                  steps=steps, sampling_rate=q)
    t_sas, sas_eps = _best(sas_compose, args.repeat)

    sigma = math.sqrt(2.0) * scale

    def gauss_compose():
        pld = pld_lib.from_gaussian_mechanism(sigma, sampling_prob=q)
        return pld.self_compose(steps).get_epsilon_for_delta(args.delta)
    t_gauss, gauss_eps = _best(gauss_compose, args.repeat)

    print(f"alpha={alpha} scale={scale} q={q} steps={steps} delta={args.delta}")
    print(f"{'task':<16}{'seconds':>10}  result")
    print(f"{'sas epsilon':<16}{t_eps:>10.4f}  pure eps = {eps:.10g}")
    print(f"{'sas calibrate':<16}{t_cal:>10.4f}  scale for eps=1: {cal:.8g}")
    print(f"{'sas compose':<16}{t_sas:>10.3f}  eps = {sas_eps:.6g}")
    print(f"{'gauss compose':<16}{t_gauss:>10.3f}  eps = {gauss_eps:.6g} (sigma = sqrt2*scale)")
    print(f"ratio sas/gauss compose time: {t_sas / t_gauss:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
