"""End-to-end audits of the DP-SGD implementation with canary examples."""

from __future__ import annotations

import numpy as np
import pytest

from privacy import NonFiniteError, ParameterError
from privacy.audit import epsilon_lower_bound
from privacy.dpsgd import DPSGDConfig, GradientNoise, dpsgd_epsilon
from privacy.dpsgd.canary import canary_scores

DELTA = 1e-3        # resolvable with a few thousand runs; the claim is read at the same delta


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    return X, (X[:, 0] > 0).astype(int)


def _audit(noise, config, runs, seed, canary_dims=1):
    scores = canary_scores(*_data(), config=config, noise=noise, runs=runs,
                           canary_dims=canary_dims, rng=seed)
    return {key: epsilon_lower_bound(*pair, delta=DELTA, rng=seed).epsilon_lower_bound
            for key, pair in scores.items()}


@pytest.mark.statistical
def test_white_box_canary_catches_halved_noise_and_passes_the_correct_run():
    # full batches: with a few thousand runs a subsampled run's tails are out of reach
    config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=1.0, steps=3)
    noise = GradientNoise("gaussian", 3.0)
    claim = dpsgd_epsilon(noise, clip_norm=1.0, steps=3, sampling_rate=1.0, delta=DELTA)
    good = _audit(noise, config, runs=6000, seed=1)
    assert good["white_box"] <= claim and good["black_box"] <= claim
    assert good["white_box"] > 0.3 * claim                   # the audit has power
    # a bug that halves the noise while the accountant still claims the calibrated epsilon
    bad = _audit(GradientNoise("gaussian", 1.5), config, runs=6000, seed=2)
    assert bad["white_box"] > claim


@pytest.mark.statistical
def test_spread_canary_on_sas_noise_respects_the_certified_bound():
    config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=1.0, steps=1)
    noise = GradientNoise("sas", 1.0, alpha=1.5)
    certified = dpsgd_epsilon(noise, clip_norm=1.0, steps=1, sampling_rate=1.0, delta=DELTA)
    got = _audit(noise, config, runs=4000, seed=3, canary_dims=8)
    assert got["white_box"] <= certified
    assert got["white_box"] > 0.5                              # the spread canary is seen


def test_canary_errors():
    X, y = _data()
    config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=0.5, steps=1)
    with pytest.raises(ParameterError, match="noise must be a GradientNoise"):
        canary_scores(X, y, config=config, noise=None, runs=2)
    with pytest.raises(ParameterError, match="canary_dims"):
        canary_scores(X, y, config=config, noise=GradientNoise("gaussian", 1.0), runs=2,
                      canary_dims=0)
    with pytest.raises(NonFiniteError, match=r"canary \(canary_norm / sqrt\(canary_dims\)\) "
                                             r"has an entry of magnitude 1e\+150"):
        canary_scores(X, y, config=config, noise=GradientNoise("gaussian", 1.0), runs=2,
                      canary_norm=2e150, canary_dims=4)
