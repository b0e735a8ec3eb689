"""Right or loud: the default fit on realistic data, against least squares, and its cost (issue 16).

Sections:

  kinds     for every data kind of ``simulations.studies.data_kinds`` (random stable plants:
            3 states, 2 inputs, fractional delays 0.2-2.8 T, T = 0.5 s, max_delay = 4,
            K = 3000, 30 dB measurement noise): how often the fit is right (delay within
            0.15 T, eigenvalues of A_c within 25 %), loud (a warning or an error) and silently
            wrong (neither), for the default ``DMDidc(max_delay=4)``, for least squares through
            the origin (``estimator="ls", detrend=None``: the default before issue 16, with
            today's checks) and for the default given the closed loop's reference;
  wellposed the issue's criteria on white, open-loop, full-state data at 30 dB: the share of
            plants within 5 % (eigenvalues and delay) and the share that warn;
  consistency  median A_c error at 10 dB for K = 3000 and 30000 (a consistent estimator
            divides it by about sqrt(10) = 3.2), default against least squares;
  speed     fit time of the default, of least squares (the former default's estimator) and
            of PyDMD's DMDc (R = 0, its only case) on the same data, best of --repeats, with
            ratios.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_trust.py [--seeds 10]
      [--sections kinds wellposed consistency speed]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import best_time

from dmdidc import DMDidc
from simulations.studies.data_kinds import DATA_KINDS, make_data, random_plant, right_or_loud

T, R = 0.5, 4
FITS = {
    "default": lambda d: DMDidc(max_delay=R).fit(d.X, d.U, dt=T),
    "least squares": lambda d: DMDidc(max_delay=R, estimator="ls",
                                               detrend=None).fit(d.X, d.U, dt=T),
    "default + reference": lambda d: DMDidc(max_delay=R).fit(
        d.X, d.U, dt=T, reference=d.reference),
}


def kinds_section(seeds: int) -> None:
    print(f"{'data kind':16s} {'fit':24s} {'right':>6s} {'loud':>6s} {'silently wrong':>15s}")
    for kind in DATA_KINDS:
        for name, fit in FITS.items():
            if name == "default + reference" and kind != "closed_loop":
                continue
            outcomes = right_or_loud(fit, kinds=[kind], seeds=range(seeds))
            right = sum(o.right for o in outcomes)
            loud = sum(o.loud for o in outcomes)
            silent = sum(o.silently_wrong for o in outcomes)
            total = len(outcomes)
            print(f"{kind:16s} {name:24s} {right:3d}/{total:<3d}{loud:3d}/{total:<3d}"
                  f"{silent:8d}/{total}", flush=True)


def wellposed_section(seeds: int) -> None:
    outcomes = right_or_loud(FITS["default"], kinds=["white"], seeds=range(seeds))
    within = np.mean([o.eigenvalue_error <= 0.05 and o.delay_error <= 0.05 for o in outcomes])
    warned = np.mean([o.loud for o in outcomes])
    print(f"well-posed (30 dB, white inputs), {seeds} random plants: within 5 % {within:.0%} "
          f"(target >= 90 %), warned {warned:.0%} (target <= 10 %)", flush=True)


def consistency_section(seeds: int) -> None:
    errors = {(name, K): [] for name in ("default", "least squares")
              for K in (3000, 30000)}
    for seed in range(seeds):
        plant = random_plant(1000 + seed)
        for K in (3000, 30000):
            data = make_data("white", plant, samples=K, snr_db=10.0, rng=seed)
            for name in ("default", "least squares"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = FITS[name](data)
                errors[(name, K)].append(np.linalg.norm(est.A_c - plant.A_c)
                                         / np.linalg.norm(plant.A_c)
                                         if est.model_.has_continuous else np.inf)
    for name in ("default", "least squares"):
        small, large = (np.median(errors[(name, K)]) for K in (3000, 30000))
        print(f"consistency, 10 dB, {seeds} plants, {name}: median A_c error {small:.3f} at "
              f"K=3000, {large:.3f} at K=30000 (ratio {large / small:.2f}; 1/sqrt(10) = 0.32)",
              flush=True)


def _best(fit, repeats: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return best_time(fit, repeats)[0]


def speed_section(repeats: int) -> None:
    from pydmd import DMDc

    plant = random_plant(1000)
    for K in (3000, 30000, 300000):
        data = make_data("white", plant, samples=K, rng=0)
        default = _best(lambda d=data: FITS["default"](d), repeats)
        ls = _best(lambda d=data: FITS["least squares"](d), repeats)
        pydmd = _best(lambda d=data: DMDc(svd_rank=-1).fit(d.X, d.U), repeats)
        ours0 = _best(lambda d=data: DMDidc(max_delay=0).fit(d.X, d.U, dt=T), repeats)
        print(f"K={K:>6d}: default {1e3 * default:8.1f} ms, least squares {1e3 * ls:8.1f} ms "
              f"(default / ls = {default / ls:.2f}); R = 0: default {1e3 * ours0:8.1f} ms, "
              f"PyDMD DMDc {1e3 * pydmd:8.1f} ms (ratio {ours0 / pydmd:.2f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sections", nargs="+",
                        default=["kinds", "wellposed", "consistency", "speed"])
    args = parser.parse_args()
    if "kinds" in args.sections:
        kinds_section(args.seeds)
    if "wellposed" in args.sections:
        wellposed_section(max(args.seeds, 10))
    if "consistency" in args.sections:
        consistency_section(args.seeds)
    if "speed" in args.sections:
        speed_section(args.repeats)


if __name__ == "__main__":
    main()
