"""Attack (b): occupancy inference from per-day statistics."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.errors import DimensionError, ParameterError
from simulations.smartgrid import (
    GramBlocks,
    daily_statistics,
    draw_households,
    load_profiles,
    occupancy_attack,
    simulate_fleet,
    statistics_features,
)


@pytest.fixture(scope="module")
def record():
    fleet = draw_households(10, rng=1)
    return simulate_fleet(fleet, load_profiles("extract"), start_day=0, days=30, setback_K=2.0,
                          rng=2)


@pytest.mark.statistical
def test_plain_daily_statistics_reveal_occupancy(record):
    result = occupancy_attack(record, cv="household")
    assert result.n_days == 300 and 0.5 < result.occupied_share < 0.95
    assert result.balanced_accuracy >= 0.9
    assert occupancy_attack(record, cv="day", rng=0).balanced_accuracy >= 0.9


@pytest.mark.statistical
def test_statistics_without_information_fall_to_chance(record):
    """Same attack on statistics unrelated to the days' data: it must not find anything."""
    rng = np.random.default_rng(0)
    plain = daily_statistics(record, 3)
    noise = [[GramBlocks(rng.normal(size=b.gram.shape), rng.normal(size=b.cross.shape),
                         rng.normal(size=b.target_gram.shape), b.n_samples, 3) for b in days]
             for days in plain]
    result = occupancy_attack(record, statistics=noise, cv="household")
    # The public outdoor temperature alone carries little: near chance.
    assert result.balanced_accuracy < 0.65


def test_features_and_errors(record):
    blocks = daily_statistics(record, 3)[0][0]
    features = statistics_features(blocks)
    assert features.shape == (8 * 9 // 2,)
    assert features[0] == pytest.approx(blocks.gram[0, 0] / blocks.n_samples)
    with pytest.raises(ParameterError, match="cv must be one of"):
        occupancy_attack(record, cv="week")
    with pytest.raises(DimensionError, match="30 days for each of 10 households"):
        occupancy_attack(record, statistics=daily_statistics(record, 3)[:5])
