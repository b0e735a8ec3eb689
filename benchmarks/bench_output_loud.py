"""OutputDMDidc over many random plants: right, loud, or silently wrong?

Each seed draws a random stable plant (order 1-5, 1-3 inputs, 1-3 random sensors, T = 0.5 s),
delays per channel either fractional (uniform in 0.2-3.8 T) or within 0.03 T of a whole number
of periods, white output noise at 10-40 dB, K = 1000-8000 samples and white or low-pass
(AR(1), pole 0.8) inputs.  A fit is *right* when its order is the plant's, every eigenvalue is
within 10 % and every delay within 0.1 T; *loud* when it raises a ValueError or issues a
DiagnosticWarning; otherwise *silently wrong*.  On the right fits a warning is a *false alarm*.
Coverage: the share of true delays and eigenvalues inside the reported 95 % intervals (right
fits; eigenvalue intervals are boxes of the real and imaginary parts).  Silently wrong fits that
are *reduced models* (too few modes, but every found mode within 10 % of a true one and every
delay within 0.1 T) are counted apart.

    python benchmarks/bench_output_loud.py [--seeds 40] [--first 0] [--verbose]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import signal

from dmdidc import DelayedPlant, OutputDMDidc
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import random_state_matrix

T, R = 0.5, 4


def case(seed: int) -> dict:
    """The random experiment of ``seed``: plant, sensors, data and a short description."""
    rng = np.random.default_rng(seed)
    n, m, ny = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    whole = rng.random() < 0.5
    if whole:       # within 0.03 T of a whole number of periods (either side)
        periods = np.clip(rng.integers(1, R, m) + rng.uniform(-0.03, 0.03, m), 0.0, R - 0.1)
    else:
        periods = rng.uniform(0.2, R - 0.2, m)
    snr_db, K = float(rng.uniform(10, 40)), int(rng.integers(1000, 8001))
    lowpass = rng.random() < 0.5
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, n, T),
                                         rng.standard_normal((n, m)), periods * T, T,
                                         max_delay=R)
    U = rng.standard_normal((m, K))
    if lowpass:
        U = signal.lfilter([1.0], [1.0, -0.8], U, axis=1)
        U /= U.std(axis=1, keepdims=True)
    C = rng.standard_normal((ny, n))
    Y = C @ plant.simulate(rng.standard_normal(n), U)[:, :K]
    Y = Y + Y.std(axis=1, keepdims=True) * 10 ** (-snr_db / 20) * rng.standard_normal(Y.shape)
    label = (f"n={n} m={m} l={ny} {'whole' if whole else 'frac'} {snr_db:4.1f}dB K={K} "
             f"{'lowpass' if lowpass else 'white'}")
    return {"plant": plant, "Y": Y, "U": U, "n": n, "label": label}


def judge(seed: int) -> dict:
    """Fit the case of ``seed`` and classify the result."""
    c = case(seed)
    plant = c["plant"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.process_time()
        try:
            est = OutputDMDidc(max_delay=R).fit(c["Y"], c["U"], dt=T)
            error = None
        except ValueError as exc:
            est, error = None, exc
        seconds = time.process_time() - start
    messages = [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]
    result = {"seed": seed, "label": c["label"], "seconds": seconds, "warnings": messages,
              "error": error, "loud": bool(messages) or error is not None, "right": False,
              "order": None, "eig_error": np.nan, "delay_error": np.nan, "covered": []}
    if est is None:
        return result
    truth = np.sort_complex(np.linalg.eigvals(plant.A_c))
    result["order"] = est.order_
    result["delay_error"] = float(np.max(np.abs(est.delay - plant.delay)) / T)
    # a reduced model: too few modes, but each found one within 10 % of a true one
    distance = np.abs(est.eigenvalues_[:, None] - truth[None, :]) / np.abs(truth)[None, :]
    result["reduced"] = bool(est.order_ < c["n"] and np.all(distance.min(axis=1) < 0.1)
                             and result["delay_error"] < 0.1)
    if est.order_ == c["n"]:
        found = np.sort_complex(est.eigenvalues_)
        result["eig_error"] = float(np.max(np.abs(found - truth) / np.abs(truth)))
        result["right"] = result["eig_error"] < 0.1 and result["delay_error"] < 0.1
        if result["right"]:
            low, high = est.delay_ci().T
            result["delay_covered"] = list((low <= plant.delay) & (plant.delay <= high))
            low, high = est.eigenvalue_ci().T
            low, high = low[np.argsort(est.eigenvalues_)], high[np.argsort(est.eigenvalues_)]
            inside = ((low.real <= truth.real) & (truth.real <= high.real)
                      & (low.imag <= truth.imag) & (truth.imag <= high.imag))
            result["covered"] = result["delay_covered"] + list(inside)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    results = []
    for seed in range(args.first, args.first + args.seeds):
        r = judge(seed)
        results.append(r)
        if args.verbose or (not r["right"] and not r["loud"]):
            state = "right" if r["right"] else ("loud" if r["loud"] else "SILENTLY WRONG")
            if r["right"] and r["loud"]:
                state = "right+FALSE ALARM"
            print(f"seed {seed:3d} {r['label']:<46} order {r['order']} eig err "
                  f"{r['eig_error']:.3g} delay err {r['delay_error']:.3g} T  {state} "
                  f"{r['seconds']:.1f}s", flush=True)
            for text in r["warnings"] + ([repr(r["error"])] if r["error"] else []):
                print(f"      {text[:160]}", flush=True)
    right = [r for r in results if r["right"]]
    silent = [r for r in results if not r["right"] and not r["loud"]]
    wrong_loud = [r for r in results if not r["right"] and r["loud"]]
    false_alarms = [r for r in right if r["loud"]]
    delays = [c for r in right for c in r.get("delay_covered", [])]
    every = [c for r in right for c in r["covered"]]
    print(f"\n{'plants':>7} {'right':>6} {'wrong, loud':>12} {'SILENTLY WRONG':>15} "
          f"{'false alarms':>13} {'delay CI cover':>15} {'all CI cover':>13} "
          f"{'CPU s (median)':>15}")
    print(f"{len(results):>7} {len(right):>6} {len(wrong_loud):>12} {len(silent):>15} "
          f"{len(false_alarms):>13} {np.mean(delays) if delays else np.nan:>15.2f} "
          f"{np.mean(every) if every else np.nan:>13.2f} "
          f"{np.median([r['seconds'] for r in results]):>15.2f}")
    if silent:
        print("silently wrong seeds:", ",".join(str(r["seed"]) for r in silent))
        reduced = [r["seed"] for r in silent if r.get("reduced")]
        print(f"of which reduced models (too few modes, each found mode and every delay "
              f"right): {len(reduced)} ({','.join(map(str, reduced))})")
    if false_alarms:
        print("false-alarm seeds:", ",".join(str(r["seed"]) for r in false_alarms))


if __name__ == "__main__":
    main()
