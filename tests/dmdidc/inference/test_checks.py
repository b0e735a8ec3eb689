"""The diagnostics of a fit: stored, printed, warned with check, statistic, threshold, remedy."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from _toolbox.errors import ContinuousModelWarning, DiagnosticWarning, NotFittedError
from dmdidc import DMDidc, FitDiagnostics, SufficientStatistics
from simulations.studies.data_kinds import make_data, random_plant


def fit(kind, seed=0, **params):
    plant = random_plant(1000 + seed)
    data = make_data(kind, plant, rng=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DMDidc(max_delay=4, **params).fit(data.X, data.U, dt=0.5)
    return est, [w for w in caught if issubclass(w.category, ContinuousModelWarning)]


def test_every_fit_stores_its_checks_and_a_summary():
    est, caught = fit("white")
    diagnostics = est.diagnostics_
    assert isinstance(diagnostics, FitDiagnostics) and diagnostics.passed and not caught
    names = [c.name for c in diagnostics.checks]
    for name in ("effect", "delay_bound", "block_structure", "offset", "input_correlation",
                 "feedback", "whiteness", "state_completeness", "outliers",
                 "instrument_strength", "ls_vs_iv", "precision", "excitation"):
        assert name in names
    summary = diagnostics.summary()
    assert "fit diagnostics (iv, instruments model" in summary and "pass  whiteness" in summary
    assert diagnostics.estimator == "iv" and diagnostics.instruments == "model"
    with pytest.raises(KeyError, match="no check named 'colour'"):
        diagnostics["colour"]
    with pytest.raises(NotFittedError):
        _ = DMDidc().diagnostics_


def test_a_failed_check_warns_naming_check_statistic_threshold_and_remedy():
    est, caught = fit("partial")
    assert caught and all(issubclass(w.category, DiagnosticWarning) for w in caught)
    for warning in caught:
        message = str(warning.message)
        assert re.match(r"check '\w+' failed", message), message
        assert "Remedy:" in message
    failed = {c.name for c in est.diagnostics_.failed}
    assert {"block_structure", "input_correlation"} & failed
    check = est.diagnostics_.failed[0]
    assert check.statistic > check.threshold or np.isnan(check.statistic)


def test_the_warning_states_the_true_relation_of_statistic_and_threshold():
    # `effect` fails when its largest T^2 stays below the critical value: its warning read
    # "statistic 12.2 > threshold 18.3"
    from dmdidc.inference.checks import Check

    above = Check("whiteness", "?", False, 6.0, 4.0, "found", "do").message()
    below = Check("effect", "?", False, 12.2, 18.3, "found", "do").message()
    assert "(statistic 6 > threshold 4)" in above
    assert "(statistic 12.2 <= threshold 18.3)" in below


def test_coloured_noise_is_named_and_inconclusive_checks_are_not_blamed():
    est, _ = fit("coloured_noise")
    assert est.diagnostics_["whiteness"].failed
    assert est.diagnostics_["state_completeness"].passed in (True, None)


@pytest.mark.parametrize("seed", range(6))
def test_a_few_spikes_do_not_hide_coloured_noise_from_the_whiteness_check(seed):
    """AR(1) noise (0.9, 5 % of each state's spread) plus 6 spikes of 20 spreads: the spikes
    filled the lag-0 variance of the residuals' autocorrelations, whiteness passed (3.4-4.0
    against 4.3 where the noise alone read 24) and the colour then failed state_completeness
    with every state measured (3 of 12 random plants).  Clipped at the outlier threshold, the
    spikes leave the colour seen: whiteness fails and state_completeness is not blamed.  The
    same defects on a partial measurement (n - 1 combinations of the states) stay loud."""
    from scipy import signal

    from dmdidc import random_excitation

    rng = np.random.default_rng(5000 + seed)
    plant = random_plant(rng)
    n = plant.n_states
    U = random_excitation(plant.n_inputs, 4000, rng=rng)
    X = plant.simulate(np.zeros(n), U)
    spread = X.std(axis=1, keepdims=True)
    X += 0.05 * spread * signal.lfilter([np.sqrt(1 - 0.81)], [1, -0.9],
                                        rng.standard_normal(X.shape), axis=1)
    row, at = rng.integers(n), rng.choice(np.arange(100, X.shape[1] - 100), 6, replace=False)
    X[row, at] += 20 * spread[row, 0] * rng.choice([-1.0, 1.0], 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = DMDidc(max_delay=4).fit(X, U, dt=plant.dt).diagnostics_
        partial = DMDidc(max_delay=4).fit(rng.standard_normal((n - 1, n)) @ X, U,
                                          dt=plant.dt).diagnostics_
    assert full["outliers"].statistic > full["outliers"].threshold      # spikes were there
    assert full["whiteness"].failed and "clipped at the outlier threshold" in (
        full["whiteness"].finding)
    assert full["state_completeness"].passed in (True, None)
    assert partial.failed


def test_white_noise_with_outliers_keeps_a_white_verdict():
    """The clipping changes nothing where nothing is flagged, and clipped outliers of white
    noise are white: 1 % of the samples at 50 x the noise level ("outliers" data) pass."""
    for seed in range(3):
        est, _ = fit("outliers", seed=seed)
        assert est.diagnostics_["whiteness"].passed
        assert "clipped" in est.diagnostics_["whiteness"].finding
    est, _ = fit("white")
    assert est.diagnostics_["whiteness"].passed
    assert "clipped" not in est.diagnostics_["whiteness"].finding


def test_feedback_is_detected_and_the_reference_accounts_for_it():
    plant = random_plant(1000)
    data = make_data("closed_loop", plant, samples=20000, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        blind = DMDidc(max_delay=4).fit(data.X, data.U, dt=0.5)
        informed = DMDidc(max_delay=4).fit(data.X, data.U, dt=0.5, reference=data.reference)
    assert blind.diagnostics_["feedback"].failed
    assert "reference" in blind.diagnostics_["feedback"].remedy
    feedback = informed.diagnostics_["feedback"]
    assert feedback.passed and "reference's instruments account for it" in feedback.finding


def test_outliers_switch_the_default_to_robust_instrumental_variables():
    est, caught = fit("outliers", seed=3)
    assert est.diagnostics_.estimator == "huber_iv"
    assert any("outliers" in note for note in est.diagnostics_.notes)
    assert est.diagnostics_["outliers"].passed and not any(
        "'outliers'" in str(w.message) for w in caught)


def test_the_residual_figure(tmp_path):
    est, _ = fit("white")
    path = tmp_path / "resid.png"
    fig = est.diagnostics_.plot(path)
    assert path.stat().st_size > 10_000 and len(fig.axes) == 3
    data = make_data("white", random_plant(1000), rng=0)
    stats = SufficientStatistics.from_data(data.X, data.U, max_delay=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_stats = DMDidc(max_delay=4).fit_statistics(stats, dt=0.5)
    assert from_stats.diagnostics_["whiteness"].passed is None    # no residual series
    with pytest.raises(ValueError, match="no residual analysis"):
        from_stats.diagnostics_.plot()


def test_check_level_is_validated_and_sets_the_thresholds():
    data = make_data("white", random_plant(1000), rng=0)
    with pytest.raises(ValueError, match="check_level must be a real number in"):
        DMDidc(max_delay=4, check_level=1.5).fit(data.X, data.U, dt=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        strict = DMDidc(max_delay=4, check_level=1e-6).fit(data.X, data.U, dt=0.5)
        loose = DMDidc(max_delay=4, check_level=0.5).fit(data.X, data.U, dt=0.5)
    assert strict.diagnostics_["whiteness"].threshold > loose.diagnostics_["whiteness"].threshold
    assert strict.diagnostics_.level == 1e-6


def test_a_delay_that_discards_a_significant_block_is_reported():
    # The check on the fitted model passes; on a model whose delay (2.00 T for 1.5 T) sets the
    # significant B^(1) to zero it fails, naming the channel, the block, its T^2 and the remedy.
    from dmdidc import DelayedPlant, random_excitation
    from dmdidc.inference.checks import unexplained_blocks

    plant = DelayedPlant.from_continuous([[-0.5, 0.3], [0.0, -0.8]], [[1.0], [0.5]],
                                         delay=1.5, dt=1.0)
    U = random_excitation(1, 600, rng=0)
    X = plant.simulate([0.0, 0.0], U) + 0.01 * np.random.default_rng(1).standard_normal((2, 601))
    est = DMDidc(max_delay=3).fit(X, U, dt=1.0)
    check = unexplained_blocks(est.block_test_, est.model_)
    assert check.passed and est.diagnostics_["unexplained_block"].passed
    later = DelayedPlant.from_continuous(est.A_c, est.B_c, [2.0], 1.0, max_delay=3)
    check = unexplained_blocks(est.block_test_, later)
    assert check.failed and check.statistic > check.threshold
    assert re.search(r"channel 0: B\^\(1\) \(T\^2 = [\d.e+]+\) is zero in the model of delay 2 T",
                     check.finding), check.finding
    assert "method='bootstrap'" in check.remedy and "longer data" in check.remedy


def test_blocks_discarded_by_a_block_rtol_override_name_the_override():
    # block_rtol=0.8 keeps only each channel's largest blocks: on random white-input plants
    # with fractional delays the model then zeroes significant blocks (1.71 T read as 2 T).
    # The check says so and its remedy is the override, not more excitation.  One definition
    # of an active block: by default the recovery's blocks (active) are the check's
    # (significant); the override changes the recovery's only, so the check still sees what
    # the data show.
    from dmdidc.inference.blocks import block_test

    failed = 0
    for seed in range(4):
        rng = np.random.default_rng(5000 + seed)
        plant = random_plant(rng, n_states=3, n_inputs=2, dt=1.0, max_delay=4)
        data = make_data("white", plant, samples=3000, snr_db=35, rng=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DMDidc(max_delay=4, block_rtol=0.8).fit(data.X, data.U, dt=1.0)
        default = block_test(est.regression_, 3, 2, 4)       # the default rule, same fit
        np.testing.assert_array_equal(default.significant, default.active)
        np.testing.assert_array_equal(est.block_test_.significant, default.active)
        check = est.diagnostics_["unexplained_block"]
        if check.failed:
            failed += 1
            assert "block_rtol" in check.remedy and "excite" not in check.remedy, check.remedy
    assert failed >= 2


@pytest.mark.parametrize("delays", ["whole", "fractional", "short"])
def test_the_recovered_delay_explains_the_blocks_of_well_posed_fits(delays):
    # Random open-loop plants with white inputs (whole delays, fractional ones, and delays
    # 0.04-0.15 T short of a whole period, whose B^(w) is weak): the check raises no alarm.
    from dmdidc import DelayedPlant

    for seed in range(4):
        rng = np.random.default_rng(900 + seed)
        base = random_plant(rng, n_states=3, n_inputs=2, dt=1.0, max_delay=4)
        delay = {"whole": rng.integers(1, 4, 2).astype(float), "fractional": base.delay,
                 "short": rng.integers(1, 3, 2) - rng.uniform(0.04, 0.15, 2)}[delays]
        plant = DelayedPlant.from_continuous(base.A_c, base.B_c, delay, 1.0, max_delay=4)
        data = make_data("white", plant, samples=2000, snr_db=rng.uniform(25, 35), rng=seed)
        est = DMDidc(max_delay=4).fit(data.X, data.U, dt=1.0)
        assert est.diagnostics_["unexplained_block"].passed, est.diagnostics_["unexplained_block"]
        assert np.all(np.abs(est.delay - plant.delay) <= 0.1), (est.delay, plant.delay)


@pytest.mark.parametrize("seed", range(3))
def test_the_outlier_check_is_quiet_on_gaussian_noise_and_loud_on_gross_errors(seed):
    """Random plants (2-12 states), white inputs, 30 dB Gaussian noise, 300 samples (where
    the MAD scale's own error is largest): at level 0.05 the outlier check and the default
    fit's outlier test raise no alarm (before the scale margin: the largest residual passed
    the threshold on 26 % of such fits at level 0.2, 1.6 % at 0.0014); with 3 of the samples
    50 noise standard deviations off, the IV fit fails the check and the default turns to
    huber_iv (or keeps least squares and fails it)."""
    rng = np.random.default_rng(seed)
    for _ in range(3):
        plant = random_plant(rng, n_states=int(rng.integers(2, 13)))
        data = make_data("white", plant, samples=300, rng=rng)
        noise = 10 ** (-30 / 20) * np.sqrt(np.mean(data.X ** 2, axis=1))
        hit = rng.choice(data.X.shape[1], 3, replace=False)
        gross_X = data.X.copy()
        gross_X[:, hit] += 50 * noise[:, None] * rng.choice([-1.0, 1.0], (plant.n_states, 3))
        for gross, X in [(False, data.X), (True, gross_X)]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                iv = DMDidc(max_delay=4, estimator="iv", check_level=0.05 * 7).fit(
                    X, data.U, dt=0.5)
                default = DMDidc(max_delay=4, check_level=0.05 * 7).fit(X, data.U, dt=0.5)
            kind = "outliers" if gross else "white"
            assert iv.diagnostics_["outliers"].failed is gross, (kind, plant.n_states)
            # the default turns robust, or keeps least squares (a short experiment) and fails
            loud = (default.diagnostics_.estimator == "huber_iv"
                    or default.diagnostics_["outliers"].failed)
            assert loud is gross, (kind, default.diagnostics_.notes)


@pytest.mark.parametrize("kind", ["white", "multisine", "lowpass_inputs", "partial", "offset"])
def test_status_statistic_and_limit_agree_and_the_finding_states_the_numbers(kind):
    # walkthrough finding 15: 'excitation 0.000152 / 1' beside "smallest relative eigenvalue
    # 0.66", 'instrument_strength 1.25 / 1' beside "first-stage F 7.97 < 10", and ls_vs_iv
    # 5.95 / 4.16 shown as a plain pass
    est, _ = fit(kind)
    for check in est.diagnostics_.checks:
        if check.passed is None or not np.isfinite(check.statistic * check.threshold):
            continue
        beyond = (check.statistic <= check.threshold if check.fails_below
                  else check.statistic > check.threshold)
        assert ("min" if check.fails_below else "max") in check.row()
        if check.passed and beyond:         # found and handled: said in status and text
            assert check.row().startswith("  note  "), check
            assert check.name in ("ls_vs_iv", "offset", "excitation"), check
            assert check.finding.startswith(("IV kept: ", "an offset was found")) or (
                "excites weakly" in check.finding and est.diagnostics_["precision"].passed), check
            continue
        assert check.failed == beyond, check
    for name, digits in (("excitation", ".2g"), ("instrument_strength", ".3g")):
        check = est.diagnostics_[name]
        if np.isfinite(check.statistic):
            assert format(check.statistic, digits) in check.finding, check
    precision = est.diagnostics_["precision"]
    assert f"statistic {precision.statistic:.3g}" in precision.finding


@pytest.mark.parametrize("seed, both", [(0, False), (1, False), (2, True), (3, True)])
def test_a_delay_exactly_at_the_bound_is_decided_by_exactness_or_named_with_its_remedy(seed,
                                                                                      both):
    # one or both delays exactly max_delay periods (a user trial).  Exact data: the exact fit
    # misses no block, so the delay is R whole periods and both delay_bound and precision pass
    # saying so (not "every first block lies before the last", nor "no input acts"); noisy
    # data: the fraction would be read from B^(R + 1), outside the model, and precision fails
    # naming the bound and max_delay=R + 1
    from dmdidc import DelayedPlant, random_excitation
    rng = np.random.default_rng(seed)
    R, dt = 3, 0.5
    A_c = 0.4 * rng.standard_normal((2, 2)) - 0.8 * np.eye(2)
    delays = [R * dt if both else rng.uniform(0.2, 1.5) * dt, R * dt]
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)) + 2 * np.eye(2),
                                         delays, dt, max_delay=R + 1)
    U = random_excitation(2, 800, rng=rng)
    X = plant.simulate(np.zeros(2), U)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiagnosticWarning)
        exact = DMDidc(max_delay=R).fit(X, U, dt=dt)
    assert np.allclose(exact.delay, delays, atol=1e-6 * dt)
    bound, precision = exact.diagnostics_["delay_bound"], exact.diagnostics_["precision"]
    assert bound.passed and f"B^({R})" in bound.finding
    assert "before the last one" not in bound.finding
    assert precision.passed and f"is max_delay={R} whole periods" in precision.finding
    assert "no input acts" not in precision.finding
    noisy = X + 0.02 * np.abs(X).max() * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiagnosticWarning)
        fit = DMDidc(max_delay=R).fit(noisy, U, dt=dt)
    assert fit.diagnostics_["delay_bound"].failed
    precision = fit.diagnostics_["precision"]
    assert precision.failed and "sits at" in precision.finding
    assert f"max_delay={R + 1}" in precision.remedy


@pytest.mark.parametrize("seed", range(3))
def test_inputs_logged_one_row_late_are_named_in_the_feedback_remedy(seed):
    # open-loop data whose row k holds the input applied at k - 1 (a common logging
    # convention) look like feedback at exactly one sample: the remedy says how to tell
    from dmdidc import DelayedPlant, random_excitation
    rng = np.random.default_rng(seed)
    dt = 0.5
    A_c = 0.4 * rng.standard_normal((2, 2)) - 0.8 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)),
                                         rng.uniform(0.2, 1.5, 2) * dt, dt, max_delay=2)
    U = random_excitation(2, 3000, rng=rng)
    X = plant.simulate(np.zeros(2), U)
    X = X + 0.02 * np.abs(X).max() * rng.standard_normal(X.shape)
    late = np.hstack([np.zeros((2, 1)), U[:, :-1]])              # row k holds u_(k-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiagnosticWarning)
        fit = DMDidc(max_delay=3).fit(X, late, dt=dt)
    feedback = {c.name: c for c in fit.diagnostics_}["feedback"]
    assert feedback.passed is False and " 1 samples later" in feedback.finding
    assert "logged one row late" in feedback.remedy


@pytest.mark.parametrize("seed", range(3))
def test_weak_excitation_is_a_note_when_the_data_determine_the_model(seed):
    # step-like inputs (a user trial): exact data determine the model though the inputs'
    # lag covariance is nearly singular; the same inputs under heavy noise leave the model
    # undetermined, and there excitation fails with its remedy
    from dmdidc import DelayedPlant
    rng = np.random.default_rng(seed)
    dt, K = 0.5, 4000
    A_c = 0.4 * rng.standard_normal((2, 2)) - 0.8 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)) + 2 * np.eye(2),
                                         rng.uniform(0.2, 1.5, 2) * dt, dt, max_delay=2)
    U = np.repeat(rng.standard_normal((2, K // 1000 + 1)), 1000, axis=1)[:, :K]   # 4 steps
    X = plant.simulate(np.zeros(2), U)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiagnosticWarning)
        exact = DMDidc(max_delay=3).fit(X, U, dt=dt)
        noisy = DMDidc(max_delay=3).fit(X + 0.3 * X.std() * rng.standard_normal(X.shape), U,
                                        dt=dt)
    check = exact.diagnostics_["excitation"]
    assert check.beyond and check.passed and "excites weakly" in check.finding
    assert np.allclose(exact.delay, plant.delay, atol=1e-6 * dt)
    assert noisy.diagnostics_["precision"].failed and noisy.diagnostics_["excitation"].failed
    assert "broadband" in noisy.diagnostics_["excitation"].remedy


@pytest.mark.parametrize("seed, level", [(0, 0.0), (1, 0.0), (2, 0.0), (3, 20.0), (4, -7.0)])
def test_an_open_loop_input_left_out_of_the_reference_is_named(seed, level):
    # a mixed loop (a user trial): input 0 driven by feedback plus a dither, input 1 open
    # loop; a reference of the dither alone explains input 1 little (its instruments weak),
    # and the note says to pass it as a row of its own; with it, no such note
    from dmdidc import DelayedPlant
    rng = np.random.default_rng(seed)
    dt, K = 0.5, 4000
    A_c = 0.4 * rng.standard_normal((2, 2)) - 0.8 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)) + 2 * np.eye(2),
                                         rng.uniform(0.2, 1.5, 2) * dt, dt, max_delay=2)
    # a set point at a level and an open-loop input at an operating point (a review: the
    # shares were computed about zero, 2.2e4 %, and the open-loop input went unnamed)
    dither, open_loop = level + rng.standard_normal(K), 0.2 * level + rng.standard_normal(K)
    X, U = np.zeros((2, K + 1)), np.zeros((2, K))
    for k in range(K):
        measured = X[:, k] + 0.05 * rng.standard_normal(2)
        U[:, k] = dither[k] - 0.3 * measured[0], open_loop[k]
        X[:, k + 1] = plant.A_d @ X[:, k] + sum(
            B @ U[:, k - j] for j, B in enumerate(plant.B_blocks) if k - j >= 0)
    X += 0.05 * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiagnosticWarning)
        alone = DMDidc(max_delay=3).fit(X, U, dt=dt, reference=dither[None])
        both = DMDidc(max_delay=3).fit(X, U, dt=dt, reference=np.vstack([dither, open_loop]))
    named = [note for note in alone.diagnostics_.notes if "instrumented weakly" in note]
    assert len(named) == 1 and "input(s) [1]" in named[0] and "row of its own" in named[0]
    assert not any("instrumented weakly" in note for note in both.diagnostics_.notes)
