"""The batch numbers of the ``delay_ambiguity`` check ("When to trust a fit"): random plants
(``random_plant``, 3 states, 2 inputs) whose channel 1 is weak (its ``B_c`` column scaled by
0.05-0.3, ``--gain``), open loop (white inputs) and closed loop (``make_data("closed_loop")``,
the dither as ``reference``), 20-30 dB, fitted by ``DMDidc(max_delay=4)``.  A channel's delay
is *confidently wrong* when it is off by more than 0.1 T and its 99 % interval excludes the
truth; it is *flagged* when the ``delay_ambiguity`` check failed for the fit.  Then the false
alarms: the same plants with strong channels (gain 1) and whole delays (1, 2 or 3 T).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/weak_channel_check.py \
          [--plants 40] [--samples 800] [--gain 0.05 0.3]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from dmdidc import DelayedPlant, DMDidc
from simulations.studies.data_kinds import make_data, random_plant


def plant_with(seed: int, gain: float, whole: bool) -> DelayedPlant:
    """The random plant of ``seed``, channel 1's column scaled by ``gain``, whole delays if
    ``whole``."""
    rng = np.random.default_rng(seed)
    base = random_plant(rng, n_states=3, n_inputs=2, dt=1.0, max_delay=4)
    B_c = base.B_c.copy()
    B_c[:, 1] *= gain
    delay = rng.integers(1, 4, 2).astype(float) if whole else base.delay
    return DelayedPlant.from_continuous(base.A_c, B_c, delay, 1.0, max_delay=4)


def fit_once(plant: DelayedPlant, kind: str, samples: int, snr_db: float, seed: int
             ) -> tuple[np.ndarray, bool, bool]:
    """Per channel, whether the delay is confidently wrong; whether delay_ambiguity failed;
    whether another check failed."""
    data = make_data(kind, plant, samples=samples, snr_db=snr_db, rng=seed + 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit = DMDidc(max_delay=4).fit(data.X, data.U, dt=1.0, reference=data.reference)
            ci = fit.delay_ci(0.99)
        except ValueError as error:     # refused (a quiet loop, no continuous model): loud
            print(f"  seed {seed}: refused: {str(error)[:70]}...")
            return np.zeros(plant.n_inputs, dtype=bool), False, True
    error = np.abs(fit.delay - plant.delay)
    # (a channel without effect has no interval: the 'effect' check warns of it)
    excluded = (ci.low > plant.delay) | (plant.delay > ci.high)
    flagged = fit.diagnostics_["delay_ambiguity"].failed
    others = [c.name for c in fit.diagnostics_.failed if c.name != "delay_ambiguity"]
    bad = (error > 0.1) & excluded
    if bad.any() or flagged:
        print(f"  seed {seed} ({kind}): true {np.round(plant.delay, 2)} T, fitted "
              f"{np.round(fit.delay, 2)} T, 99 % [{np.round(ci.low, 2)}, {np.round(ci.high, 2)}]"
              f"; delay_ambiguity {'FAIL' if flagged else 'pass'}; other failed checks {others}")
    return bad, flagged, bool(others)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plants", type=int, default=40)
    parser.add_argument("--samples", type=int, default=800,
                        help="open-loop samples (closed loop: twice as many)")
    parser.add_argument("--gain", type=float, nargs=2, default=(0.05, 0.3),
                        help="range of the weak channel's gain")
    args = parser.parse_args()
    for kind, samples in (("white", args.samples), ("closed_loop", 2 * args.samples)):
        wrong = caught = before = after = flags = 0
        for seed in range(args.plants):
            rng = np.random.default_rng(10_000 + seed)
            plant = plant_with(seed, rng.uniform(*args.gain), whole=False)
            bad, flagged, loud = fit_once(plant, kind, samples, rng.uniform(20, 30), seed)
            wrong += int(bad.any())
            caught += int(bad.any() and flagged)
            before += int(bad.any() and not loud)             # silent without the check
            after += int(bad.any() and not loud and not flagged)
            flags += int(flagged)
        print(f"{kind}, weak channel: {wrong} of {args.plants} fits confidently wrong, "
              f"{caught} of them flagged by delay_ambiguity; confidently wrong and silent "
              f"(no failed check): {before} without delay_ambiguity, {after} with it; "
              f"fits flagged {flags}", flush=True)
        alarms = 0
        for seed in range(args.plants):
            rng = np.random.default_rng(20_000 + seed)
            plant = plant_with(seed, 1.0, whole=True)
            alarms += int(fit_once(plant, kind, samples, rng.uniform(20, 30), seed)[1])
        print(f"{kind}, strong channels, whole delays: {alarms} of {args.plants} fits flagged "
              f"(false alarms)", flush=True)


if __name__ == "__main__":
    main()
