"""Cost of one bootstrap resample over trajectories: the fit's decisions kept, no checks.

The data of docs/noisy-data.md's example (the damped README plant, ``--trajectories``
experiments of 300 samples: 100 as in the example, 20 as in ``bench_estimators.py``'s coverage
section; 10 dB noise on the states; ``max_delay=3``).  Per resample, in CPU
time (best of ``--repeat`` rounds of ``--resamples`` resamples, the same resamples for every
row):

  * the bootstrap over trajectories (``dmdidc.resampling.trajectory_refit``) for the refined IV
    of ``estimator="iv"`` (the example's: each resample refits the data without checks) and
    for the estimators whose moments add up over trajectories, IV with input instruments and
    least squares (a weighted sum of per-trajectory statistics and one solve);
  * before: each resample a whole ``fit`` of the resampled trajectories (every diagnostic
    check, the auto decisions), as ``confidence_intervals(method="bootstrap", X=..., U=...)``
    did;
  * the reference: the bootstrap over ``fit_statistics`` parts (one input-instrument
    statistics per experiment; ``dmdidc.resampling.parts_refit``: the counts-weighted sum of
    the parts and the fit's solve, no checks), itself against a whole ``fit_statistics`` of
    the sum of the repeated parts per resample (before: every check).

Each row prints ours, the whole refit and their ratio, the ratio to the parts bootstrap, and
the largest difference between our model vectors and the whole refits' over the resamples where
the whole refit took the fit's decisions (the others are counted: there the whole refit
switched, e.g. to an intercept its offset test found in the resample).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_bootstrap.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import cpu_best_time, emit_summary, summary_row

from dmdidc import DelayedPlant, DMDidc, SufficientStatistics, random_excitation
from dmdidc.inference.intervals import model_vector

DT = 2.0


def data(trajectories: int, rng: np.random.Generator):
    """The example of docs/noisy-data.md: noisy states of the damped README plant."""
    plant = DelayedPlant.from_continuous([[-0.3, 1.1], [-1.1, -0.3]], [[1, -1], [-1, 2]],
                                         delay=2.5, dt=DT)
    Us = [random_excitation(2, 300, rng=rng) for _ in range(trajectories)]
    Xs = [plant.simulate(np.zeros(2), U) for U in Us]
    rms = np.sqrt(np.mean(np.concatenate(Xs, axis=1) ** 2, axis=1, keepdims=True))
    return [X + 0.3 * rms * rng.standard_normal(X.shape) for X in Xs], Us


def whole_fit(params: dict, Xs: list, Us: list, counts) -> DMDidc:
    """The previous resample: a whole fit of the resampled trajectories."""
    picked = [k for k, c in enumerate(counts) for _ in range(c)]
    return DMDidc(**params).fit([Xs[k] for k in picked], [Us[k] for k in picked], dt=DT)


def size_rows(P: int, resamples: int, repeat: int, parts_only: bool = False
              ) -> list[dict]:
    """The rows of one data size (module notes), printed as they come."""
    rng = np.random.default_rng(0)
    Xs, Us = data(P, rng)
    draws = [np.bincount(rng.integers(0, P, P), minlength=P) for _ in range(resamples)]

    def per_resample(refit) -> tuple[float, list]:
        seconds, vectors = cpu_best_time(lambda: [refit(c) for c in draws], repeat)
        return seconds / len(draws), vectors

    parts = [SufficientStatistics.from_data(X, U, max_delay=3, instruments="inputs")
             for X, U in zip(Xs, Us, strict=True)]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=3, estimator="iv").fit_statistics(parts, dt=DT)
        reference, new = per_resample(est._parts_refit()[0])
        before, old = per_resample(lambda c: model_vector(DMDidc(
            max_delay=3, estimator="iv").fit_statistics(
                sum(p for p, k in zip(parts, c, strict=True) for _ in range(k)), dt=DT).model_))
        gap = max((float(np.max(np.abs(a - b))) for a, b in zip(new, old, strict=True)
                   if a is not None and b is not None), default=np.nan)
        print(f"{P} parts, IV input instruments: {1e3 * reference:.1f} ms per resample, whole "
              f"fit_statistics {1e3 * before:.1f} ms (ratio {reference / before:.3f}); model "
              f"vectors differ by at most {gap:.1e}", flush=True)
        rows.append(summary_row(f"bootstrap resample over {P} statistics parts, IV inputs",
                                reference, before, "a whole fit_statistics per resample "
                                "(before)", "< 1 (faster)", reference < before))
        for label, params in (("refined IV (estimator='iv', the example)",
                               dict(estimator="iv")),
                              ("IV, input instruments", dict(estimator="iv",
                                                             instruments="inputs")),
                              ("least squares", dict(estimator="ls"))
                              )[:0 if parts_only else 3]:
            params = dict(params, max_delay=3)
            est = DMDidc(**params).fit(Xs, Us, dt=DT)
            ours, new = per_resample(est._trajectory_refit(Xs, Us, None)[0])
            before, old = per_resample(
                lambda c, params=params: model_vector(whole_fit(params, Xs, Us, c).model_))
            same = [whole_fit(params, Xs, Us, c)._decisions == est._decisions for c in draws]
            gap = max((float(np.max(np.abs(a - b)))
                       for a, b, s in zip(new, old, same, strict=True)
                       if s and a is not None and b is not None), default=np.nan)
            print(f"{P} trajectories, {label}: {1e3 * ours:.1f} ms per resample, whole refit "
                  f"{1e3 * before:.1f} ms (ratio {ours / before:.3f}), parts bootstrap "
                  f"{1e3 * reference:.1f} ms (ratio {ours / reference:.2f}); model vectors "
                  f"differ by at most {gap:.1e} where the whole refit kept the fit's "
                  f"decisions, {len(same) - sum(same)} of {len(same)} resamples where it "
                  f"switched", flush=True)
            rows.append(summary_row(f"bootstrap resample over {P} trajectories x 300, "
                                    f"{label}", ours, before,
                                    "a whole fit per resample (before)", "< 1 (faster)",
                                    ours < before))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--resamples", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parts-only", action="store_true",
                        help="only the bootstrap over fit_statistics parts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for P in args.trajectories:
        rows += size_rows(P, args.resamples, args.repeat, args.parts_only)
    if args.json:
        emit_summary(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
