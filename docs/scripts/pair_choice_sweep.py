"""Does a fit's delay discard a significant input block?  A sweep over random plants for the
``unexplained_block`` check and the recovery's choice of its pair of blocks ("Whole delay
without tuning" on the "Noisy data" page).

Random plants (``random_plant``: 3 states, 2 inputs, T = 1, ``max_delay=4``) with three kinds of
delay per draw: *whole* (1, 2 or 3 T), *fractional* (0.2-2.8 T) and *short* (0.04-0.15 T short
of 1 or 2 periods: a weak ``B^(w-1)``); K 2000-5000, 25-35 dB.  Data: white and low-pass inputs
in open loop, and closed loop (``make_data``).  Each fit uses the default estimator.  Per fit:
*right* (every delay within 0.1 T), else *loud* (an error or a DiagnosticWarning), else
*covered* (every 95 % interval covers the truth), else *silently wrong*; and, computed here
from the fit's own regression and model (so it also runs against code without the check):
*discards*, whether the model sets to zero a block (up to ``w + 1``) the test found
significant, and whether the fit said so.
The count of failed checks per fit (all of them) compares false alarms between code versions.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/pair_choice_sweep.py [--plants 12]
          [--kinds white lowpass_inputs closed_loop] [--delays whole fractional short]
"""

from __future__ import annotations

import argparse
import warnings
from collections import Counter

import numpy as np

from dmdidc import DelayedPlant, DMDidc
from dmdidc.discretization import first_active_blocks
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import make_data, random_plant


def draw_case(seed: int, delays: str) -> tuple[DelayedPlant, int, float]:
    """The plant, K and SNR (dB) of case ``seed`` with ``delays`` of that kind."""
    rng = np.random.default_rng(70_000 + seed)
    base = random_plant(rng, n_states=3, n_inputs=2, dt=1.0, max_delay=4)
    delay = {"whole": lambda: rng.integers(1, 4, 2).astype(float),
             "fractional": lambda: base.delay,
             "short": lambda: rng.integers(1, 3, 2) - rng.uniform(0.04, 0.15, 2)}[delays]()
    plant = DelayedPlant.from_continuous(base.A_c, base.B_c, delay, 1.0, max_delay=4)
    return plant, int(rng.integers(2000, 5000)), float(rng.uniform(25, 35))


def discarded_blocks(fit: DMDidc) -> bool:
    """Whether the model sets to zero a block up to ``w + 1`` that the test found significant
    (the ``unexplained_block`` check, computed here so that code without it is measured too)."""
    test, model = fit.block_test_, fit.model_
    first = first_active_blocks(test.active)
    up_to = np.arange(test.active.shape[0])[:, None] <= first[None, :] + 1
    return bool(np.any((test.statistics > test.critical_value) & ~model.active_blocks & up_to))


def fit_case(seed: int, kind: str, delays: str) -> dict:
    """One fit: verdict, failed checks and whether it discards a significant block."""
    plant, samples, snr_db = draw_case(seed, delays)
    data = make_data(kind, plant, samples=samples, snr_db=snr_db, rng=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = DMDidc(max_delay=4).fit(data.X, data.U, dt=1.0, reference=data.reference)
            ci = fit.delay_ci(0.95)
        except ValueError as error:
            return dict(verdict="loud", failed=[type(error).__name__], discards=False,
                        covers=None)
    loud = any(issubclass(w.category, DiagnosticWarning) for w in caught)
    covers = (ci.low <= plant.delay) & (plant.delay <= ci.high)
    right = bool(np.all(np.abs(fit.delay - plant.delay) <= 0.1))
    verdict = ("right" if right else "loud" if loud else
               "covered" if covers.all() else "silently wrong")
    return dict(verdict=verdict, failed=[c.name for c in fit.diagnostics_.failed],
                discards=discarded_blocks(fit), covers=covers, truth=plant.delay,
                estimate=fit.delay, low=ci.low, high=ci.high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plants", type=int, default=12)
    parser.add_argument("--kinds", nargs="+", default=["white", "lowpass_inputs", "closed_loop"])
    parser.add_argument("--delays", nargs="+", default=["whole", "fractional", "short"])
    args = parser.parse_args()
    for kind in args.kinds:
        for delays in args.delays:
            tally, alarms, covered, channels = Counter(), Counter(), 0, 0
            for seed in range(args.plants):
                r = fit_case(seed, kind, delays)
                tally[r["verdict"]] += 1
                alarms.update(r["failed"])
                if r["discards"]:
                    said = "unexplained_block" in r["failed"]
                    tally["discards, said so" if said else "discards silently"] += 1
                if r["covers"] is not None:
                    covered += int(r["covers"].sum())
                    channels += r["covers"].size
                if r["discards"] or r["verdict"] not in ("right", "loud"):
                    print(f"  {kind} {delays} seed {seed}: {r['verdict']}, true "
                          f"{np.round(r.get('truth', []), 3)}, fitted "
                          f"{np.round(r.get('estimate', []), 3)}, failed {r['failed']}",
                          flush=True)
            print(f"{kind}, {delays} delays, {args.plants} plants: "
                  f"right {tally['right']}, loud {tally['loud']}, covered {tally['covered']}, "
                  f"silently wrong {tally['silently wrong']}; discarding a significant block "
                  f"{tally['discards silently']} silently, {tally['discards, said so']} said so; "
                  f"intervals cover {covered} of {channels}; failed checks "
                  f"{sum(alarms.values())} {dict(sorted(alarms.items()))}", flush=True)


if __name__ == "__main__":
    main()
