"""Figure 9.1 from data: identified models, LQR gain, truncated vs fractional feedback."""

import json

import numpy as np
import pytest

from controllers import FractionalDelayController, PredictiveController, lqr_gain
from controllers.analysis import spectral_radius
from dmdidc import DelayedPlant
from simulations.studies.fractional_delay import (
    StudyConfig,
    format_table,
    plot_study,
    run_fractional_delay_study,
    write_study,
)


@pytest.fixture(scope="module")
def study():
    return run_fractional_delay_study(StudyConfig(steps=30))


def _row(rows, delay, name):
    (row,) = [r for r in rows if r.delay_in_periods == delay and r.controller == name]
    return row


def test_delays_are_identified_from_data(study):
    rows, _ = study
    for row in rows:
        assert row.identified_delay_in_periods == pytest.approx(row.delay_in_periods, abs=1e-9)


def test_fractional_controller_is_stable_at_every_delay(study):
    rows, runs = study
    for delay in (1.0, 1.25, 1.5):
        row = _row(rows, delay, "fractional")
        assert row.spectral_radius < 1
        assert row.final_state_norm < 1e-8


def test_truncated_controller_matches_at_whole_delay_slows_then_fails(study):
    rows, _ = study
    at_1 = _row(rows, 1.0, "truncated")
    assert at_1.spectral_radius == pytest.approx(_row(rows, 1.0, "fractional").spectral_radius,
                                                 rel=1e-9)
    assert at_1.cost == pytest.approx(_row(rows, 1.0, "fractional").cost, rel=1e-9)
    slow = _row(rows, 1.25, "truncated")
    assert _row(rows, 1.25, "fractional").spectral_radius < slow.spectral_radius < 1
    assert slow.cost > _row(rows, 1.25, "fractional").cost
    assert _row(rows, 1.5, "truncated").spectral_radius >= 1


def test_identified_gain_matches_gain_on_exact_model(study):
    """The LQR gain from the identified model equals the one from the exact discretization."""
    A_c, B_c = np.array(StudyConfig().A_c), np.array(StudyConfig().B_c)
    exact = DelayedPlant.from_continuous(A_c, B_c, 2.5, 2.0, max_delay=3)
    K = lqr_gain(exact)
    rows, _ = study
    radius = spectral_radius(exact, FractionalDelayController(exact, K))
    assert _row(rows, 1.25, "fractional").spectral_radius == pytest.approx(radius, rel=1e-7)
    truncated = spectral_radius(exact, PredictiveController(exact, K))
    assert _row(rows, 1.25, "truncated").spectral_radius == pytest.approx(truncated, rel=1e-7)


def test_simulated_trajectory_decays_at_the_spectral_rate(study):
    rows, runs = study
    run = runs[(1.5, "truncated")]
    norms = np.linalg.norm(run.states, axis=0)
    rate = (norms[-1] / norms[-11]) ** (1 / 10)
    assert rate == pytest.approx(_row(rows, 1.5, "truncated").spectral_radius, rel=0.1)


def test_outputs_written(study, tmp_path):
    rows, runs = study
    figure = plot_study(runs, tmp_path / "fig.png")
    assert figure.stat().st_size > 10_000
    files = write_study(rows, StudyConfig(steps=30), tmp_path)
    data = json.loads(files["json"].read_text())
    assert len(data["results"]) == 6
    assert files["csv"].read_text().count("\n") == 7
    assert "fractional" in format_table(rows)


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="dt"):
        StudyConfig(dt=0.0)
    with pytest.raises(ValueError, match="delays_in_periods"):
        StudyConfig(delays_in_periods=(4.0,), max_delay=3)
    with pytest.raises(ValueError, match="steps"):
        StudyConfig(steps=-1)
