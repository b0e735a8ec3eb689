"""Records of many experiments (audit finding): right or loud as one long record.

The diagnostic subsample cut every experiment into 10 pieces (100 x 300 samples -> 1000 pieces
of 17 regression samples) and the whiteness test centred each piece: on well-posed data
whiteness failed (z 11.7 against 4.18), the moment checks said "too few samples" and linearity
was not tested, so a saturating state went unflagged.  Here random plants (3 states, 2 inputs,
fractional delays, T = 0.5 s) at 20 dB measurement noise, open loop, are recorded as many
experiments (each from rest) and as one long record of the same plant.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from scipy import stats

from dmdidc import DMDidc, IdData
from dmdidc.inference import diagnostics
from dmdidc.inference.checks import STATISTICAL_CHECKS
from dmdidc.trajectories import subsample
from simulations.studies.data_kinds import make_data, random_plant

T, R = 0.5, 4
SEEDS = range(10)
LEVEL = 0.01 / STATISTICAL_CHECKS          # each check's level in the default fit
#: The checks that need the residual series (the subsample's pieces): each must run here
#: whenever it ran on the long record.
WINDOWED = ("input_correlation", "feedback", "whiteness", "state_completeness", "outliers",
            "linearity", "time_invariance", "excitation")
#: The level-calibrated checks of the residuals (the others are thresholds on the data's
#: information: weak instruments, excitation, precision).
RESIDUAL = WINDOWED[:-1]
LAYOUTS = ["100x300", "300x100", "1000x50", "drop"]


def record(layout: str, kind: str, plant, rng: np.random.Generator):
    """``layout`` "EXK" (E experiments of K samples, each from rest) or "drop" (one record of
    30 000 samples with 1 in 150 states lost, split at each gap: about 200 pieces)."""
    if layout == "drop":
        data = make_data(kind, plant, samples=30_000, snr_db=20.0, rng=rng)
        X = data.X.copy()
        X[0, rng.random(X.shape[1]) < 1 / 150] = np.nan
        return IdData(X, data.U, dt=T, missing="drop")
    count, K = (int(v) for v in layout.split("x"))
    experiments = [make_data(kind, plant, samples=K, snr_db=20.0, rng=rng) for _ in range(count)]
    return IdData([d.X for d in experiments], [d.U for d in experiments], dt=T)


def fitted(data, **options) -> DMDidc:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=R, **options).fit(data)


def right(est: DMDidc, plant) -> bool:
    """The data kinds' criterion: eigenvalues of A_c within 25 %, delays within 0.15 T."""
    from simulations.studies.data_kinds import _eigenvalue_error

    eig = _eigenvalue_error(np.linalg.eigvals(est.A_c), np.linalg.eigvals(plant.A_c))
    return eig <= 0.25 and float(np.max(np.abs(est.delay - plant.delay))) / T <= 0.15


def allowed(fits: int) -> int:
    """Failures of one check in ``fits`` well-posed fits beyond which its false-alarm rate
    exceeds ``LEVEL`` with probability above 1 - 1e-3 (binomial)."""
    return int(stats.binom.isf(1e-3, fits, LEVEL))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["white", "lowpass_inputs"])
def test_well_posed_records_of_many_experiments_raise_no_false_alarms(kind, monkeypatch):
    """No check fails more often than its level allows (binomial bound over 40 fits), and every
    windowed check that ran on the long record of the plant runs on its many experiments.  An
    alarm counts as false on white inputs always; on low-pass ones (weak excitation: every
    long record fails `excitation`, two `whiteness`, with A_c 13-14 % off) only for a residual
    check, when the fit is right and the plant's long record passed that check on all of its
    samples (else the alarm is the fit's, not the layout's: plant 9's passed on the 20 000 of
    the subsample, 3.66, and fails on all 30 000, 4.83, against 4.18)."""
    false, fits, missing = {}, 0, []
    for seed in SEEDS:
        plant = random_plant(1000 + seed)
        with monkeypatch.context() as patch:     # the reference's checks on every sample
            patch.setattr(diagnostics, "subsample", functools.partial(subsample, samples=10**6))
            long = fitted(record("1x30000", kind, plant,
                                 np.random.default_rng(seed))).diagnostics_
        for layout in LAYOUTS:
            est = fitted(record(layout, kind, plant, np.random.default_rng(seed)))
            checks, fits = est.diagnostics_, fits + 1
            counted = kind == "white" or right(est, plant)
            for check in checks.failed:
                if counted and (kind == "white" or (check.name in RESIDUAL
                                                    and long[check.name].passed)):
                    false.setdefault(check.name, []).append((seed, layout, check.finding))
            missing += [(seed, layout, name, checks[name].finding) for name in WINDOWED
                        if long[name].passed is not None and checks[name].passed is None]
    assert not missing
    excess = {name: alarms for name, alarms in false.items() if len(alarms) > allowed(fits)}
    assert not excess, f"{excess}"


@pytest.mark.slow
@pytest.mark.parametrize("detrend", ["constant", "linear"])
def test_a_trend_per_experiment_leaves_the_whiteness_test_unbiased(detrend):
    """detrend= fits an intercept (and slope) per experiment, which centres each experiment's
    residuals: uncorrected, 300 experiments of 100 samples put the whiteness statistic about
    300 (1 + 2 rho_1) / sqrt(N) below zero at every lag."""
    alarms = []
    for seed in SEEDS:
        plant = random_plant(1000 + seed)
        for layout in ("100x300", "300x100"):
            est = fitted(record(layout, "white", plant, np.random.default_rng(seed)),
                         detrend=detrend)
            whiteness = est.diagnostics_["whiteness"]
            if whiteness.failed:
                alarms.append((seed, layout, whiteness.finding))
    assert len(alarms) <= allowed(2 * len(SEEDS)), alarms


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["coloured_noise", "saturating_state", "closed_loop"])
def test_faulty_data_cut_into_many_experiments_are_still_flagged(kind):
    """Coloured noise fails whiteness and a saturating state fails linearity (tested, or
    inconclusive beside failed whiteness) on every plant; a closed loop is loud or right
    (feedback near its limit: 2 of 8 plants pass it at 300 x 100, their fits right)."""
    for seed in range(8):
        plant = random_plant(1000 + seed)
        for layout in ("100x300", "1000x50"):
            est = fitted(record(layout, kind, plant, np.random.default_rng(seed)))
            checks = est.diagnostics_
            if kind == "coloured_noise":
                assert checks["whiteness"].failed, (seed, layout)
            elif kind == "saturating_state":
                linearity = checks["linearity"]
                assert linearity.failed or (linearity.statistic is not None
                                            and checks["whiteness"].failed), (seed, layout)
            else:
                assert checks.failed or right(est, plant), (seed, layout)


@pytest.mark.parametrize("seed", range(2))
def test_a_check_that_cannot_run_on_short_experiments_says_why(seed):
    """Experiments of 20 samples are shorter than the moment tests' window (max_delay + 20
    lags) and the linearity check's filters: each says so with the numbers, instead of "too
    few samples, or no inputs" / "no inputs, no input acts, or too few samples"."""
    plant = random_plant(1000 + seed)
    rng = np.random.default_rng(seed)
    experiments = [make_data("white", plant, samples=20, snr_db=20.0, rng=rng)
                   for _ in range(600)]
    checks = fitted(IdData([d.X for d in experiments], [d.U for d in experiments],
                           dt=T)).diagnostics_
    for name in ("input_correlation", "feedback", "state_completeness"):
        assert checks[name].passed is None
        assert (f"each of the 600 pieces (of 20 samples) loses {R + 20} to the lags"
                in checks[name].finding)
    assert checks["linearity"].passed is None
    assert "pieces read are shorter than 20 residual samples" in checks["linearity"].finding
