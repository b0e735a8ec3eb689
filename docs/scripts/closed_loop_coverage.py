"""Coverage of the 95 % delay intervals of batch ``DMDidc`` fits on closed-loop data, with
open-loop data as control ("Closed loop" on the "Noisy data" page).

Random plants (``random_plant``: 3 states, 2 inputs, T = 1, ``max_delay=4``), half of them with
whole delays (1, 2 or 3 T), half fractional (0.2-2.8 T); 20-40 dB of measurement noise;
K log-uniform in 2000-20000.  Closed loop: ``make_data("closed_loop")`` (an LQR gain on the noisy
measurements, scaled down where the delayed loop would have spectral radius 0.98 or more, process
noise and a dither passed as ``reference``); open loop: white inputs.
Each fit uses the default estimator.  Per channel: does the 95 % interval cover the truth, and
its half-width (whole and fractional delays apart; for whole delays also how far the interval
reaches below the estimate); per fit: *right* (every delay within 0.1 T), else *loud* (an error,
or a DiagnosticWarning: the tally also counts those that warned of something other than
``precision``), else *covered* (off by more than 0.1 T, but every interval covers the truth: the
fit says how little it knows), else *silently wrong*.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/closed_loop_coverage.py \
          [--plants 40] [--estimator auto] [--kinds closed_loop white]
"""

from __future__ import annotations

import argparse
import warnings
from collections import Counter

import numpy as np

from dmdidc import DelayedPlant, DMDidc
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import make_data, random_plant


def draw_case(seed: int) -> tuple[DelayedPlant, int, float]:
    """The plant, K and SNR (dB) of sweep case ``seed`` (whole delays for even seeds)."""
    rng = np.random.default_rng(30_000 + seed)
    base = random_plant(rng, n_states=3, n_inputs=2, dt=1.0, max_delay=4)
    delay = rng.integers(1, 4, 2).astype(float) if seed % 2 == 0 else base.delay
    plant = DelayedPlant.from_continuous(base.A_c, base.B_c, delay, 1.0, max_delay=4)
    samples = int(round(np.exp(rng.uniform(np.log(2000), np.log(20000)))))
    return plant, samples, float(rng.uniform(20.0, 40.0))


def fit_case(seed: int, kind: str, estimator: str = "auto") -> dict:
    """One fit of case ``seed`` on ``kind`` data: coverage per channel and the verdict."""
    plant, samples, snr_db = draw_case(seed)
    data = make_data(kind, plant, samples=samples, snr_db=snr_db, rng=seed)
    record = dict(seed=seed, kind=kind, samples=samples, snr_db=snr_db, truth=plant.delay)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = DMDidc(max_delay=4, estimator=estimator).fit(
                data.X, data.U, dt=1.0,
                reference=None if estimator in ("ls", "huber") else data.reference)
            ci = fit.delay_ci(0.95)
        except ValueError as error:         # refused: loud
            return record | dict(verdict="loud", covers=None, note=str(error)[:80])
    loud = any(issubclass(w.category, DiagnosticWarning) for w in caught)
    covers = (ci.low <= plant.delay) & (plant.delay <= ci.high)
    right = bool(np.all(np.abs(fit.delay - plant.delay) <= 0.1))
    verdict = ("right" if right else "loud" if loud else
               "covered" if covers.all() else "silently wrong")
    return record | dict(verdict=verdict, covers=covers, estimate=fit.delay, low=ci.low,
                         high=ci.high, estimator=fit.diagnostics_.estimator,
                         failed=[c.name for c in fit.diagnostics_.failed])


def describe(r: dict) -> str:
    """One line on a fit of :func:`fit_case`."""
    head = f"K {r['samples']}, {r['snr_db']:.0f} dB, true {np.round(r['truth'], 2)} T: "
    if r["covers"] is None:
        return head + f"refused ({r['note']})"
    return head + (f"fitted {np.round(r['estimate'], 2)}, 95 % [{np.round(r['low'], 2)}, "
                   f"{np.round(r['high'], 2)}], {r['estimator']}, {r['verdict']}, failed "
                   f"{r['failed']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plants", type=int, default=40)
    parser.add_argument("--estimator", default="auto")
    parser.add_argument("--kinds", nargs="+", default=["closed_loop", "white"])
    args = parser.parse_args()
    for kind in args.kinds:
        covered, channels, tally, chosen = 0, 0, Counter(), Counter()
        widths = {True: [], False: []}      # whole delay? -> half-widths (T)
        below = []                          # whole delays: estimate minus the interval's low end
        by_estimator = Counter()              # (estimator, covered) -> channels
        besides_precision = 0
        for seed in range(args.plants):
            r = fit_case(seed, kind, args.estimator)
            tally[r["verdict"]] += 1
            if r["covers"] is not None:
                covered += int(r["covers"].sum())
                channels += r["covers"].size
                chosen[r["estimator"]] += 1
                for hit in r["covers"]:
                    by_estimator[r["estimator"], bool(hit)] += 1
                whole = seed % 2 == 0
                widths[whole] += list(0.5 * (r["high"] - r["low"]))
                below += list(r["estimate"] - r["low"]) if whole else []
                besides_precision += int(r["verdict"] == "loud"
                                         and set(r["failed"]) - {"precision"} != set())
            if r["verdict"] != "right" or (r["covers"] is not None and not r["covers"].all()):
                print(f"  {kind} seed {seed}: {describe(r)}", flush=True)
        print(f"{kind}: 95 % intervals covering the truth {covered} of {channels} channels "
              f"({100 * covered / max(channels, 1):.0f} %); fits right {tally['right']}, loud "
              f"{tally['loud']} (of them with a failed check besides precision "
              f"{besides_precision}), off but covered {tally['covered']}, silently wrong "
              f"{tally['silently wrong']} of {args.plants}; estimators {dict(chosen)}", flush=True)
        for whole, name in ((True, "whole"), (False, "fractional")):
            if widths[whole]:
                print(f"  {name} delays: median half-width {np.median(widths[whole]):.4f} T, "
                      f"90th percentile {np.percentile(widths[whole], 90):.4f} T")
        if below:
            print(f"  whole delays: the interval reaches below the estimate by median "
                  f"{np.median(below):.4f} T, 90th percentile {np.percentile(below, 90):.4f} T")
        for name in sorted(chosen):
            hits, misses = by_estimator[name, True], by_estimator[name, False]
            print(f"  fits by {name}: intervals covering {hits} of {hits + misses} channels "
                  f"({100 * hits / (hits + misses):.0f} %)")


if __name__ == "__main__":
    main()
