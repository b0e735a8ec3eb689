"""Moment checks when ``estimator="auto"`` keeps least squares: calibrated, and why.

With weak instruments (first-stage F below 10) Hausman's pretest keeps least squares when it
agrees with IV; the fit's instrument signals stay, so ``input_correlation``, ``feedback`` and
``state_completeness`` are the moment checks (``dmdidc.inference.residuals.moment_checks``)
with the least-squares coefficients and the IV correction.  This script shows when that
happens and how those checks reject, at the fit's share of ``check_level`` (``0.01 / 9``) and
at 5 % (p-values read back from each check's chi-squared threshold), against the IV-kept fits
and against ``estimator="ls"`` (the moment checks with least squares' own projection since
2026-11-27, ``benchmarks/bench_ls_checks.py``; the prewhitened residual correlations before,
which failed ``state_completeness`` on 19-21 of 40 process-noise data sets).

Conditions (random stable plants: 2-6 states, 1-3 inputs, delays 0.2-2.8 T, T = 0.5 s,
max_delay = 4; white or low-pass inputs at random; K log-uniform in 2e3-2e4; white
measurement noise of 20-40 dB unless said):

  open           measurement noise only (strong instruments)
  process        plus process noise of 0.3 x the input response's rms per step
  process3       the same at 3 x (the states are mostly noise: weak instruments)
  process_only   process noise 1 x, no measurement noise (least squares exactly right)
  exact          noise-free
  closed         ``data_kinds``' closed loop, fitted without its reference (a fault)
  closed_ref     the same with its reference
  missing_state  process3 measured as y = C x with one signal fewer than states (a fault)
  beyond_bound   process3 with delays 5.2-6.8 T, beyond max_delay (a fault)
  coloured       process3 with AR(1) (0.9) measurement noise

The moment checks are counted as computed: ``diagnostics_`` reports a failed
``state_completeness`` as inconclusive when ``whiteness`` fails too (a missing state colours
the residuals).  For fits that kept least squares, ``--variants`` also runs the checks with
the IV twin's coefficients (the same moments, the covariance from weak IV's residuals) and
with least squares' own projection (the regressors as instruments).

Run:  PYTHONPATH=.:benchmarks OPENBLAS_NUM_THREADS=1 .venv/bin/python
      benchmarks/bench_pretest_moments.py [--seeds 40] [--conditions open process3 ...]
      [--variants]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy import signal, special, stats

from dmdidc import DMDidc
from dmdidc.inference.checks import STATISTICAL_CHECKS
from simulations.studies.data_kinds import make_data, random_plant

T, R = 0.5, 4
CHECKS = ("input_correlation", "feedback", "state_completeness")
CONDITIONS = ("open", "process", "process3", "process_only", "exact", "closed", "closed_ref",
              "missing_state", "beyond_bound", "coloured")
_PROCESS = {"process": 0.3, "process_only": 1.0}


def record(condition: str, seed: int, samples: tuple[int, int] = (2000, 20000)):
    """``(X, U, reference)`` of ``condition`` (module notes) for ``seed``; ``samples``: the
    range of K (log-uniform)."""
    rng = np.random.default_rng([seed, CONDITIONS.index(condition)])
    n, m = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    if condition == "missing_state":
        n = max(n, 3)
    beyond = condition == "beyond_bound"
    plant = random_plant(rng, n_states=n, n_inputs=m, dt=T, max_delay=R + 3 if beyond else R,
                         delay_periods=(5.2, 6.8) if beyond else (0.2, 2.8))
    K = int(np.exp(rng.uniform(*np.log(samples))))
    snr_db = rng.uniform(20.0, 40.0)
    if condition in ("closed", "closed_ref"):
        data = make_data("closed_loop", plant, samples=K, snr_db=snr_db, rng=rng)
        return data.X, data.U, data.reference if condition == "closed_ref" else None
    U = rng.standard_normal((m, K + 200))
    if rng.random() < 0.5:
        U = signal.lfilter(*signal.butter(2, 0.1), U, axis=1)
    U = U[:, 200:] / U[:, 200:].std(axis=1, keepdims=True)
    forcing = np.zeros((n, K))
    for j, B in enumerate(plant.B_blocks):
        forcing[:, j:] += B @ U[:, :K - j]
    response = plant.simulate(np.zeros(n), U)
    ratio = _PROCESS.get(condition, 0.0 if condition in ("open", "exact") else 3.0)
    forcing += ratio * np.sqrt(np.mean(response ** 2, axis=1, keepdims=True)) \
        * rng.standard_normal((n, K))
    X = np.zeros((n, K + 1))
    for k in range(K):
        X[:, k + 1] = plant.A_d @ X[:, k] + forcing[:, k]
    if condition not in ("exact", "process_only"):
        noise = rng.standard_normal(X.shape)
        if condition == "coloured":
            noise = signal.lfilter([np.sqrt(1.0 - 0.81)], [1.0, -0.9], noise, axis=1)
        X = X + 10 ** (-snr_db / 20) * np.sqrt(np.mean(X ** 2, axis=1, keepdims=True)) * noise
    if condition == "missing_state":
        X = rng.standard_normal((n - 1, n)) @ X
    return X, U, None


def p_value(check, share: float) -> float:
    """A moment check's p-value (its degrees of freedom read back from its threshold, the
    chi-squared quantile at ``share``); ``nan`` when not applicable or when the threshold is
    no such quantile (the residual correlations' Gaussian one)."""
    if check.passed is None or not np.isfinite(check.threshold):
        return np.nan
    dfs = np.arange(1, 6000)
    df = dfs[np.argmin(np.abs(special.chdtri(dfs, share) - check.threshold))]
    if not np.isclose(special.chdtri(df, share), check.threshold, rtol=1e-12):
        return np.nan
    return float(special.chdtrc(df, check.statistic))


def _fit(estimator: str, X, U, reference, spy: list | None = None) -> DMDidc:
    from dmdidc.inference import residuals

    original = residuals.moment_checks

    def recording(*args, **kwargs):
        checks = original(*args, **kwargs)
        spy.append((args, kwargs, {c.name: c for c in checks}))
        return checks

    if spy is not None:
        residuals.moment_checks = recording
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DMDidc(max_delay=R, estimator=estimator).fit(X, U, dt=T, reference=reference)
    finally:
        residuals.moment_checks = original


def _variants(call, pretest) -> dict[str, dict]:
    """The LS-kept fit's moment checks with the IV twin's coefficients and with least squares'
    own projection (the measured states as ``simulated`` instrument signals: ``z_k = phi_k``)."""
    from dmdidc.inference.residuals import moment_checks

    (trajectories, signals, coefficients), options, _ = call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin = moment_checks(trajectories, signals, pretest.coefficients, **options)
        own = moment_checks(trajectories, [X[:, :U.shape[1]] for X, U in trajectories],
                            coefficients, **dict(options, kind="simulated",
                                                 instrument_moments=None))
    return {"IV twin's residuals": {c.name: c for c in twin},
            "LS projection": {c.name: c for c in own}}


def _row(label: str, fits: list[dict], share: float) -> str:
    cells = []
    for name in CHECKS:
        failed = sum(f[name].passed is False for f in fits)
        p = np.array([p_value(f[name], share) for f in fits])
        p = p[np.isfinite(p)]
        below = f"{np.mean(p < 0.05):4.0%}" if p.size else "   -"
        ks = f"{stats.kstest(p, 'uniform').pvalue:7.2g}" if p.size >= 5 else "      -"
        cells.append(f"{failed:3d}/{len(fits):<3d} {below} {ks}")
    return f"  {label:34s} " + " | ".join(cells)


def condition_section(condition: str, seeds: int, variants: bool) -> None:
    share = 0.01 / STATISTICAL_CHECKS
    groups: dict[str, list] = {}
    ls_fits, Fs = [], {}
    for seed in range(seeds):
        X, U, reference = record(condition, seed)
        spy: list = []
        est = _fit("auto", X, U, reference, spy)
        pretest = getattr(est, "_pretest_iv", None)
        kept = ("LS (pretest)" if pretest is not None
                else f"{est.diagnostics_.estimator}" + ("" if spy else " (no moments)"))
        # the moment checks as computed (diagnostics_ calls a failed state_completeness
        # inconclusive when whiteness fails too)
        checks = spy[0][2] if spy else {name: est.diagnostics_[name] for name in CHECKS}
        groups.setdefault(kept, []).append(checks)
        strength = pretest if pretest is not None else est.regression_
        if strength.estimator == "iv" and strength.instrument_strength is not None:
            from dmdidc.regression.instrumental import first_stage_f
            Fs.setdefault(kept, []).append(first_stage_f(strength))
        if variants and pretest is not None and spy:
            for name, found in _variants(spy[0], pretest).items():
                groups.setdefault(f"  {name}", []).append(found)
        ls = _fit("ls", X, U, None)             # (least squares takes no reference)
        ls_fits.append({name: ls.diagnostics_[name] for name in CHECKS})
    print(f"{condition} ({seeds} seeds): fails at the share {share:.2g} / p < 0.05 / KS p of "
          f"the p-values, per check: {', '.join(CHECKS)}", flush=True)
    for kept, fits in groups.items():
        F = Fs.get(kept)
        median = f" F~{np.median(F):.3g}" if F else ""
        print(_row(f"auto kept {kept}{median}" if not kept.startswith("  ") else kept, fits,
                   share), flush=True)
    print(_row('estimator="ls" (LS projection)', ls_fits, share), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    parser.add_argument("--variants", action="store_true")
    args = parser.parse_args(argv)
    for condition in args.conditions:
        condition_section(condition, args.seeds, args.variants)


if __name__ == "__main__":
    main()
