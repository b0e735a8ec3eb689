"""Right or loud under offsets: a sensor offset, an input bias or both, on random plants
("Offsets and operating points" on the "Noisy data" page).

Random plants (``random_plant``: 3-6 states, 1-3 inputs, T = 1, ``max_delay=4``), whole delays
(1-3 T) for even seeds and fractional ones (0.2-2.8 T) for odd ones; white, low-pass or
closed-loop inputs (an LQR gain on the noisy measurements plus a dither, as
``make_data("closed_loop")``); 20-40 dB of measurement noise; K log-uniform in 2000-20000.
Scenarios on the same plant and noise: ``none`` (no offset), ``sensor`` (``y = x + c``, ``c``
0.1-3 times each state's rms, log-uniform, random signs), ``bias`` (the actuator acts on
``u + b``, ``b`` 0.1-3 input standard deviations; the recorded input is ``u``) and ``both``;
``mean`` is offset-free too, with the inputs recorded around a mean ``b`` (an operating point).
Each fit: *right* (every delay within 0.1 T and every eigenvalue of ``A_c`` within 10 %,
matched one to one), else *loud* (an error or a DiagnosticWarning), else *silently wrong*.
A failed ``offset`` check on offset-free data is a *false alarm* (it can fail only with
``--detrend none``).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/offset_sweep.py \
          [--plants 30] [--estimators auto iv ls] [--scenarios none mean sensor bias both]
          [--detrend auto|none]
"""

from __future__ import annotations

import argparse
import warnings
from collections import Counter

import numpy as np

from dmdidc import DelayedPlant, DMDidc
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import _eigenvalue_error, _loop_gain, _rms, random_plant

SCENARIOS = ("none", "mean", "sensor", "bias", "both")
FEEDS = ("white", "lowpass", "closed_loop")


def draw_case(seed: int) -> dict:
    """The plant, feed, K, SNR and offsets of sweep case ``seed``."""
    rng = np.random.default_rng(40_000 + seed)
    n, m = int(rng.integers(3, 7)), int(rng.integers(1, 4))
    base = random_plant(rng, n_states=n, n_inputs=m, dt=1.0, max_delay=4)
    delay = rng.integers(1, 4, m).astype(float) if seed % 2 == 0 else base.delay
    plant = DelayedPlant.from_continuous(base.A_c, base.B_c, delay, 1.0, max_delay=4)
    return dict(plant=plant, feed=FEEDS[seed % 3],
                samples=int(round(np.exp(rng.uniform(np.log(2000), np.log(20000))))),
                snr_db=float(rng.uniform(20.0, 40.0)),
                sensor=np.exp(rng.uniform(np.log(0.1), np.log(3.0), n)) * rng.choice([-1, 1], n),
                bias=np.exp(rng.uniform(np.log(0.1), np.log(3.0), m)) * rng.choice([-1, 1], m))


def simulate(case: dict, scenario: str, seed: int):
    """``(Y, U, reference)`` of case ``seed`` under ``scenario`` (same noise in every one)."""
    plant, K = case["plant"], case["samples"]
    n, m, R = plant.n_states, plant.n_inputs, plant.max_delay
    rng = np.random.default_rng(seed)
    closed = case["feed"] == "closed_loop"
    if case["feed"] == "lowpass":
        from scipy import signal
        b, a = signal.butter(2, 0.1)
        excitation = signal.lfilter(b, a, rng.standard_normal((m, K + 200)), axis=1)[:, 200:]
        excitation /= excitation.std(axis=1, keepdims=True)
    else:
        excitation = (0.3 if closed else 1.0) * rng.standard_normal((m, K))
    scale = _rms(plant.simulate(np.zeros(n), rng.standard_normal((m, K))))
    noise = 10 ** (-case["snr_db"] / 20) * scale * rng.standard_normal((n, K + 1))
    process = (0.3 if closed else 0.0) * scale * rng.standard_normal((n, K))
    c = case["sensor"][:, None] * scale if scenario in ("sensor", "both") else np.zeros((n, 1))
    u_scale = 1.0 if not closed else 0.3
    b = case["bias"] * u_scale if scenario in ("bias", "both") else np.zeros(m)
    if scenario == "mean":
        excitation = excitation + case["bias"][:, None] * u_scale
    if not closed:
        return plant.simulate(np.zeros(n), excitation + b[:, None]) + c + noise, excitation, None
    gain = _loop_gain(plant)
    X, U = np.zeros((n, K + 1)), np.zeros((m, K))
    history = np.zeros((R + 1, m))
    for k in range(K):
        U[:, k] = excitation[:, k] - gain @ (X[:, k] + c[:, 0] + noise[:, k])
        history = np.roll(history, 1, axis=0)
        history[0] = U[:, k] + b
        X[:, k + 1] = (plant.A_d @ X[:, k] + np.einsum("jab,jb->a", plant.B_blocks, history)
                       + process[:, k])
    return X + c + noise, U, excitation


def fit_case(seed: int, scenario: str, estimator: str, detrend: str | None = "auto") -> dict:
    """One fit: the verdict, the errors, whether the affine model was fitted, the warnings."""
    case = draw_case(seed)
    plant = case["plant"]
    Y, U, reference = simulate(case, scenario, seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = DMDidc(max_delay=4, estimator=estimator, detrend=detrend).fit(
                Y, U, dt=1.0, reference=None if estimator == "ls" else reference)
            A_c, delay = fit.A_c, fit.delay
        except ValueError as error:
            return dict(verdict="loud", note=f"raised {error}"[:120], affine=None, eig=np.inf,
                        delay=np.inf, chosen="-", failed=[], alarm=True)
    loud = [str(w.message)[:80] for w in caught if issubclass(w.category, DiagnosticWarning)]
    eig = _eigenvalue_error(np.linalg.eigvals(A_c), np.linalg.eigvals(plant.A_c))
    delay_error = float(np.max(np.abs(delay - plant.delay)))
    right = eig <= 0.1 and delay_error <= 0.1
    diagnostics = fit.diagnostics_
    return dict(verdict="right" if right else "loud" if loud else "silently wrong",
                alarm=bool(loud), eig=eig, delay=delay_error, chosen=diagnostics.estimator,
                affine=fit.model_.operating_point is not None,
                failed=[c.name for c in diagnostics.failed], note="; ".join(loud))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plants", type=int, default=30)
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--estimators", nargs="+", default=["auto", "iv", "ls"])
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS))
    parser.add_argument("--detrend", choices=["auto", "none"], default="auto")
    parser.add_argument("--verbose", action="store_true", help="print every fit not right")
    args = parser.parse_args()
    seeds = range(args.first, args.first + args.plants)
    for estimator in args.estimators:
        detrend = None if args.detrend == "none" else "auto"
        results = {s: [fit_case(seed, s, estimator, detrend) for seed in seeds]
                   for s in args.scenarios}
        baseline = results.get("none")
        for scenario, rows in results.items():
            tally = Counter(r["verdict"] for r in rows)
            line = (f"{estimator:4s} {scenario:6s}: right {tally['right']:3d}, loud "
                    f"{tally['loud']:3d}, silently wrong {tally['silently wrong']:3d} of "
                    f"{len(rows)}; affine {sum(bool(r['affine']) for r in rows)}; offset check "
                    f"failed {sum('offset' in r['failed'] for r in rows)}; right but warned "
                    f"{sum(r['verdict'] == 'right' and r['alarm'] for r in rows)}")
            if baseline is not None and scenario not in ("none", "mean"):
                kept = Counter(r["verdict"] for r, b in zip(rows, baseline, strict=True)
                               if b["verdict"] == "right")
                line += (f"; of the {sum(kept.values())} right without offset: right "
                         f"{kept['right']}, loud {kept['loud']}, silently wrong "
                         f"{kept['silently wrong']}")
            print(line, flush=True)
            for seed, r in zip(seeds, rows, strict=True):
                if args.verbose and r["verdict"] != "right":
                    case = draw_case(seed)
                    print(f"  {estimator} {scenario} seed {seed} ({case['feed']}, n "
                          f"{case['plant'].n_states}, m {case['plant'].n_inputs}, K "
                          f"{case['samples']}, {case['snr_db']:.0f} dB): {r['verdict']}, eig "
                          f"{r['eig']:.3g}, delay {r['delay']:.3g} T, {r['chosen']}, affine "
                          f"{r['affine']}, failed {r['failed']} {r['note'][:60]}", flush=True)

if __name__ == "__main__":
    main()
