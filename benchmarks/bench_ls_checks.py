"""Residual-model checks of least-squares fits (``estimator="ls"`` and ``"huber"``) on
process noise: false alarms where least squares is right, detections where it is not.

Process noise drives the states, so the residuals reach the later states: the prewhitened
residual/state correlations (``state_completeness`` of fits without instrument signals until
2026-11-27) are not zero at the lags tested once the states' filter is applied to both.  The
fits without instrument signals now run the moment checks (``moment_checks``) with least
squares' own projection, the regressors as their own instruments; IV with fixed instruments
(``--estimators iv_inputs iv_states``: the lagged inputs beyond ``R`` or the lagged states)
with the IV projection on those instruments.  This script counts, per
condition, how often ``input_correlation``, ``feedback`` and ``state_completeness`` fail at
the fit's share of ``check_level`` (``0.01 / 9``), how many p-values fall below 0.05 and
their uniformity (Kolmogorov-Smirnov), as ``diagnostics_`` reports them (a failed
``state_completeness`` beside a failed ``whiteness`` is inconclusive: counted as not failed,
and the count of those is shown).

Conditions (random stable plants: 2-6 states, 1-3 inputs, delays 0.2-2.8 T, T = 0.5 s,
max_delay = 4; K log-uniform in 2e3-1e4; process noise 0.3-3 x the input response's rms per
step, white):

  white          white inputs, no measurement noise (least squares exactly right)
  lowpass        inputs through a 2nd-order Butterworth low-pass at 0.1 x Nyquist (right)
  missing_state  white or low-pass; y = C x with one signal fewer than states (a fault)
  beyond_bound   delays 5.2-6.8 T, beyond max_delay (a fault)
  closed         ``data_kinds``' closed loop (LQR gain, dither 0.3) on exact states: least
                 squares stays consistent; ``feedback`` is right to fail (the inputs react
                 to the noise), the other checks are not
  noisy          ``white``/``lowpass`` plus 20-40 dB white measurement noise: least squares is
                 biased (errors in variables), so failing is right (``ls_vs_iv`` too)
  noisy_closed   ``closed`` with 20-40 dB measurement noise
  measurement    ``noisy`` without process noise: least squares' bias is then all the error
                 (failing is right)

Run:  PYTHONPATH=.:benchmarks OPENBLAS_NUM_THREADS=1 .venv/bin/python
      benchmarks/bench_ls_checks.py [--seeds 40] [--conditions white lowpass ...]
      [--estimators ls huber auto iv_inputs iv_states]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from bench_pretest_moments import p_value
from scipy import signal, stats

from dmdidc import DMDidc
from dmdidc.inference.checks import STATISTICAL_CHECKS
from simulations.studies.data_kinds import _loop_gain, _run_loop, random_plant

T, R = 0.5, 4
CHECKS = ("input_correlation", "feedback", "state_completeness")
CONDITIONS = ("white", "lowpass", "missing_state", "beyond_bound", "closed", "noisy",
              "noisy_closed", "measurement")
#: The fits compared: least squares, Huber, the default, and IV with fixed instruments (the
#: lagged inputs beyond R, or the lagged measured states).
ESTIMATORS = {"ls": {"estimator": "ls"}, "huber": {"estimator": "huber"},
              "auto": {"estimator": "auto"},
              "iv_inputs": {"estimator": "iv", "instruments": "inputs"},
              "iv_states": {"estimator": "iv", "instruments": "states"}}


def record(condition: str, seed: int, samples: tuple[int, int] = (2000, 10000)):
    """``(X, U)`` of ``condition`` (module notes) for ``seed``."""
    rng = np.random.default_rng([seed, CONDITIONS.index(condition), 7])
    n, m = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    if condition == "missing_state":
        n = max(n, 3)
    beyond = condition == "beyond_bound"
    plant = random_plant(rng, n_states=n, n_inputs=m, dt=T, max_delay=R + 3 if beyond else R,
                         delay_periods=(5.2, 6.8) if beyond else (0.2, 2.8))
    K = int(np.exp(rng.uniform(*np.log(samples))))
    ratio = np.exp(rng.uniform(np.log(0.3), np.log(3.0)))
    snr_db = rng.uniform(20.0, 40.0)
    scale = np.sqrt(np.mean(plant.simulate(np.zeros(n), rng.standard_normal((m, K))) ** 2,
                            axis=1, keepdims=True))
    w = (condition != "measurement") * ratio * scale * rng.standard_normal((n, K))
    if condition in ("closed", "noisy_closed"):
        v = np.zeros((n, K + 1))
        if condition == "noisy_closed":
            v = 10 ** (-snr_db / 20) * scale * rng.standard_normal((n, K + 1))
        X, U = _run_loop(plant, _loop_gain(plant), None, 0.3 * rng.standard_normal((m, K)),
                         w, v)
        return X + v, U
    U = rng.standard_normal((m, K + 200))
    if condition == "lowpass" or (condition in ("missing_state", "noisy", "measurement")
                                  and rng.random() < 0.5):
        U = signal.lfilter(*signal.butter(2, 0.1), U, axis=1)
    U = U[:, 200:] / U[:, 200:].std(axis=1, keepdims=True)
    forcing = w
    for j, B in enumerate(plant.B_blocks):
        forcing[:, j:] += B @ U[:, :K - j]
    X = np.zeros((n, K + 1))
    for k in range(K):
        X[:, k + 1] = plant.A_d @ X[:, k] + forcing[:, k]
    if condition in ("noisy", "measurement"):
        X = X + 10 ** (-snr_db / 20) * np.sqrt(np.mean(X ** 2, axis=1, keepdims=True)) \
            * rng.standard_normal(X.shape)
    if condition == "missing_state":
        X = rng.standard_normal((n - 1, n)) @ X
    return X, U


def section(condition: str, estimator: str, seeds: int) -> None:
    share = 0.01 / STATISTICAL_CHECKS
    found = {name: [] for name in CHECKS}
    inconclusive = warned = 0
    seconds, others = [], {}
    for seed in range(seeds):
        X, U = record(condition, seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.process_time()
            est = DMDidc(max_delay=R, **ESTIMATORS[estimator]).fit(X, U, dt=T)
            seconds.append(time.process_time() - start)
        warned += any(issubclass(w.category, UserWarning) for w in caught)
        for check in est.diagnostics_.checks:
            if check.passed is False and check.name not in CHECKS:
                others[check.name] = others.get(check.name, 0) + 1
        for name in CHECKS:
            check = est.diagnostics_[name]
            found[name].append(check)
            inconclusive += check.passed is None and "inconclusive" in check.finding
    cells = []
    for name in CHECKS:
        checks = found[name]
        failed = sum(c.passed is False for c in checks)
        p = np.array([p_value(c, share) for c in checks])
        p = p[np.isfinite(p)]
        below = f"{np.mean(p < 0.05):4.0%}" if p.size else "   -"
        ks = f"{stats.kstest(p, 'uniform').pvalue:7.2g}" if p.size >= 5 else "      -"
        cells.append(f"{failed:3d}/{len(checks):<3d} {below} {ks}")
    print(f"  {condition:14s} {estimator:9s} " + " | ".join(cells)
          + f" | inconclusive {inconclusive:2d} warned {warned:2d}/{seeds} "
            f"{np.median(seconds):.3f} s/fit", flush=True)
    if others:
        print(f"  {'':21s} other failed checks: "
              + ", ".join(f"{name} {count}" for name, count in sorted(others.items())),
              flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    parser.add_argument("--estimators", nargs="+", default=["ls"],
                        choices=list(ESTIMATORS))
    args = parser.parse_args(argv)
    print(f"fails at the share {0.01 / STATISTICAL_CHECKS:.2g} / p < 0.05 / KS p, per check: "
          f"{', '.join(CHECKS)}", flush=True)
    for condition in args.conditions:
        for estimator in args.estimators:
            section(condition, estimator, args.seeds)


if __name__ == "__main__":
    main()
