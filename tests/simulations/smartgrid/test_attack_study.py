"""Attack and defence: both attacks on what households share, plain and privatized."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score

from dmdidc import SufficientStatistics
from dmdidc.regression import lagged_inputs
from privacy.errors import ParameterError
from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
from simulations.smartgrid.attack_study import (
    attack_summary,
    chance_epsilon,
    household_interval,
    occupancy_privacy_study,
    plot_attacks,
)
from simulations.smartgrid.attack_windows import (
    ATTACK_WINDOW,
    attack_window,
    reconstruct_window,
    reconstruction_privacy_study,
    releases_reached,
)
from simulations.smartgrid.occupancy_attack import occupancy_attack
from simulations.smartgrid.private_identification import daily_household_statistics
from simulations.smartgrid.reconstruction import (
    GramBlocks,
    reconstruct_trajectory,
    relative_error,
)


@pytest.fixture(scope="module")
def record():
    """Ten houses, 24 winter days, 2 K away setback: enough for household-level CV."""
    return simulate_fleet(draw_households(10, rng=1), load_profiles("extract"), start_day=0,
                          days=24, setback_K=2.0, rng=2)


def test_blocks_of_shared_statistics_match_numpy():
    """GramBlocks.from_statistics against Phi Phi^T built by hand, with bounds (the stored
    unit-box values scaled back) and with instruments (a later first sample)."""
    rng = np.random.default_rng(0)
    X, U, E = rng.uniform(-1, 1, (2, 41)), rng.uniform(-1, 1, (1, 40)), rng.uniform(-1, 1, (1, 40))
    stats = SufficientStatistics.from_data(X, U, max_delay=3, state_bound=[2.0, 3.0],
                                           input_bound=1.5, instruments=E, instrument_bound=1.0)
    blocks = GramBlocks.from_statistics(stats)
    k0 = blocks.first_sample
    assert k0 == stats.layout.first_sample > 3 and blocks.n_samples == 40 - k0
    Phi = np.vstack([X[:, k0:-1], lagged_inputs(U[:, k0 - 3:], 3)])
    Y = X[:, k0 + 1:]
    np.testing.assert_allclose(blocks.gram, Phi @ Phi.T, atol=1e-12)
    np.testing.assert_allclose(blocks.cross, Y @ Phi.T, atol=1e-12)
    np.testing.assert_allclose(blocks.target_gram, Y @ Y.T, atol=1e-12)
    with pytest.raises(ParameterError, match="SufficientStatistics"):
        GramBlocks.from_statistics(blocks)
    with pytest.raises(ParameterError, match="first_sample must be >= max_delay=3"):
        GramBlocks(blocks.gram, blocks.cross, blocks.target_gram, 5, 3, 2)


def test_reconstruction_plain_succeeds_private_fails(record):
    """A one-hour window's shared statistics give the trajectory away; privatized at
    epsilon = 1 per time step the best of the attacks is no better than the mean level."""
    target = attack_window(record, 0, start=288 * 3 + 24, steps=ATTACK_WINDOW, max_delay=3)
    assert target.states.shape == (2, ATTACK_WINDOW - target.statistics.layout.first_sample + 1)
    error, states, _ = reconstruct_window(target, target.statistics, rng=0)
    assert error < 1e-6
    np.testing.assert_allclose(states, target.states, atol=1e-6)
    for mechanism in ("laplace", "gaussian"):
        delta = 1e-5 if mechanism == "gaussian" else None
        # each mechanism tried on its own (an attack per release): accounted
        shared = target.statistics.privatize(mechanism, epsilon=1.0, delta=delta, rng=1,
                                             accounted=True)
        assert reconstruct_window(target, shared, rng=1)[0] > 1.0


def test_shared_states_need_a_signed_start(record):
    """Shared states are offsets of either sign: started at the root mean square (the default
    for raw temperatures) the search misses this window; started at the mean state the
    shared sums give, it finds the truth."""
    target = attack_window(record, 0, start=264, steps=ATTACK_WINDOW, max_delay=3)
    blocks = GramBlocks.from_statistics(target.statistics)
    unsigned = reconstruct_trajectory(blocks, target.commands, restarts=2, rng=1)
    assert relative_error(unsigned.states, target.states) > 1.0
    mean = target.statistics.moments()[1][:2] / target.statistics.n_samples
    signed = reconstruct_trajectory(blocks, target.commands, start_level=mean, restarts=2,
                                    rng=1)
    assert relative_error(signed.states, target.states) < 1e-6


def test_reconstruction_study_rows(record):
    rows = reconstruction_privacy_study(record, windows=(12, 18), epsilons=(1.0,),
                                        mechanisms=("laplace",), starts=1, restarts=2, rng=0)
    by = {(r["window_steps"], r["mechanism"]): r for r in rows}
    assert set(by) == {(12, "plain"), (12, "laplace"), (18, "plain"), (18, "laplace")}
    short, long = by[12, "plain"], by[18, "plain"]
    # unknowns n (N + 1); 2 (N + 1) <= 21 numbers about the states: locally unique
    assert short["unknowns"] == 2 * (short["n_samples"] + 1) and short["free_dimensions"] == 0
    assert long["unknowns"] == 2 * (long["n_samples"] + 1) > 21 and long["free_dimensions"] > 0
    assert short["success_share"] == 1.0 and by[12, "laplace"]["success_share"] == 0.0
    assert by[12, "laplace"]["epsilon"] == pytest.approx(1.0) and by[12, "laplace"][
        "releases"] == 1


@pytest.mark.statistical
def test_occupancy_plain_succeeds_private_at_chance(record):
    rows = occupancy_privacy_study(record, epsilons=(0.1,), mechanisms=("laplace",), seeds=1,
                                   rng=0)
    plain, private = rows
    assert plain["mechanism"] == "plain" and plain["balanced_accuracy"] >= 0.85
    assert plain["ci_low"] <= plain["balanced_accuracy"] <= plain["ci_high"]
    assert private["epsilon"] == pytest.approx(0.1) and private["releases"] == 1
    assert abs(private["balanced_accuracy"] - 0.5) < 0.15
    assert private["ci_low"] <= 0.5 <= private["ci_high"]
    assert chance_epsilon(rows, "laplace") == pytest.approx(0.1)


def test_window_unit_composes_over_days(record):
    """A 300-step privacy window reaches up to three days' releases (the last step of one
    day, the next day, 11 steps of the third): the accountant composes them and the
    household's guarantee stays within its budget."""
    rows = occupancy_privacy_study(record, epsilons=(2.0,), mechanisms=("laplace",), seeds=1,
                                   unit="window", window=300, rng=0)
    private = rows[1]
    assert private["releases"] == 3
    assert private["epsilon"] <= 2.0 * (1 + 1e-9)
    assert private["epsilon_day"] < private["epsilon"]


def test_household_interval_against_sklearn(record):
    result = occupancy_attack(record, statistics=[daily_household_statistics(
        record, i, max_delay=3) for i in range(10)])
    low, high = household_interval([result], resamples=300, rng=5)
    # the same resamples scored by scikit-learn
    pick = np.random.default_rng(5).integers(0, 10, size=(300, 10))
    scores = []
    for row in pick:
        mask = np.concatenate([np.flatnonzero(result.households == h) for h in row])
        if np.unique(result.labels[mask]).size == 2:
            scores.append(balanced_accuracy_score(result.labels[mask], result.predicted[mask]))
    assert (low, high) == pytest.approx((np.percentile(scores, 2.5),
                                         np.percentile(scores, 97.5)))
    assert low <= result.balanced_accuracy <= high
    with pytest.raises(ParameterError, match="at least one"):
        household_interval([])


def test_releases_and_chance_epsilon():
    assert releases_reached("sample", None, 12, 50) == 1
    assert releases_reached("window", 13, 12, 50) == 2
    assert releases_reached("window", 1000, 12, 50) == 50
    assert releases_reached("trajectory", None, 288, 28) == 28
    with pytest.raises(ParameterError, match="unit must be one of"):
        releases_reached("day", None, 12, 50)
    rows = [{"mechanism": "sas", "epsilon": e, "ci_low": low}
            for e, low in ((0.1, 0.45), (1.0, 0.49), (10.0, 0.55), (100.0, 0.48))]
    assert chance_epsilon(rows, "sas") == 1.0          # 100 is above a failure at 10
    assert chance_epsilon(rows[2:3], "sas") == 0.0
    with pytest.raises(ParameterError, match="no rows"):
        chance_epsilon(rows, "laplace")


@pytest.mark.slow
def test_attack_summary_keys_values_and_plot(record, tmp_path):
    summary = attack_summary(record, mechanism="laplace", epsilon=1.0, rng=0)
    assert summary["attack_window"] == ATTACK_WINDOW
    assert summary["attack_window_s"] == ATTACK_WINDOW * record.dt_s
    assert summary["attack_error_plain"] < 1e-6 < 1.0 < summary["attack_error_private"]
    for kind in ("plain", "private"):
        low, high = summary[f"attack_accuracy_{kind}_ci"]
        assert low <= summary[f"attack_accuracy_{kind}"] <= high
    assert summary["attack_accuracy_plain"] > summary["attack_accuracy_private_ci"][1]
    for key in ("attack_guarantee_window", "attack_guarantee_day"):
        guarantee = summary[key]
        assert guarantee["epsilon"] <= 1.0 + 1e-9 and guarantee["unit"] == "sample"
    trace = summary["attack_trace"]
    np.testing.assert_allclose(trace["plain"], trace["truth"], atol=1e-6)
    again = attack_summary(record, mechanism="laplace", epsilon=1.0, rng=0)
    assert again["attack_error_private"] == summary["attack_error_private"]
    assert again["attack_accuracy_private"] == summary["attack_accuracy_private"]
    path = plot_attacks(summary, tmp_path / "attacks.png")
    import matplotlib.image

    assert matplotlib.image.imread(path).shape[:2] == (440, 1210)


def test_bad_arguments_raise(record):
    with pytest.raises(ParameterError, match="mechanism must be one of"):
        attack_summary(record, mechanism="cauchy")
    with pytest.raises(ParameterError, match="unit must be one of"):
        attack_summary(record, unit="day")
    with pytest.raises(ParameterError, match="household must be < 10; got 10"):
        attack_summary(record, household=10)
    with pytest.raises(ParameterError, match="at least 5 households"):
        attack_summary(simulate_fleet(draw_households(3, rng=0), load_profiles("extract"),
                                      start_day=0, days=2, rng=0))
    with pytest.raises(ParameterError, match="inside one day"):
        attack_window(record, 0, start=280, steps=12, max_delay=3)
    with pytest.raises(ParameterError, match="no regression sample"):
        attack_window(record, 0, start=0, steps=5, max_delay=3)
    with pytest.raises(ParameterError, match="mechanism must be one of"):
        occupancy_privacy_study(record, mechanisms=("cauchy",))
    assert math.isinf(occupancy_privacy_study(record, epsilons=(), mechanisms=())[0]["epsilon"])


def test_alpha_without_sas_is_refused_and_applies_to_the_sas_cells_only(record):
    # alpha would change nothing for Gaussian or Laplace noise: refused, naming it
    with pytest.raises(ParameterError, match="alpha applies to mechanism 'sas' only; got "
                                             "alpha=1.5 with mechanisms \\['gaussian'\\]"):
        attack_summary(record, mechanism="gaussian", alpha=1.5)
    for study in (occupancy_privacy_study, reconstruction_privacy_study):
        with pytest.raises(ParameterError, match="alpha applies to mechanism 'sas' only"):
            study(record, mechanisms=("laplace", "gaussian"), alpha=1.5)
    # with SaS among the mechanisms it is the SaS cells' (the Laplace cells take none)
    rows = reconstruction_privacy_study(record, windows=(12,), epsilons=(1.0,),
                                        mechanisms=("sas", "laplace"), alpha=1.5, starts=1,
                                        restarts=1, rng=0)
    assert {r["mechanism"] for r in rows} == {"plain", "sas", "laplace"}
