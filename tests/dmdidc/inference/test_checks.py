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


def test_coloured_noise_is_named_and_inconclusive_checks_are_not_blamed():
    est, _ = fit("coloured_noise")
    assert est.diagnostics_["whiteness"].failed
    assert est.diagnostics_["state_completeness"].passed in (True, None)


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
