"""DP-SGD training loop and its accounting (privacy.dpsgd.train, privacy.dpsgd.noise)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from prv_accountant.dpsgd import DPSGDAccountant
from scipy import stats

from _toolbox.validation import DATA_MAGNITUDE_LIMIT
from privacy import DimensionError, NonFiniteError, ParameterError, stable
from privacy.dpsgd import (
    DPSGDConfig,
    GradientNoise,
    LogisticModel,
    MLPModel,
    SoftmaxModel,
    calibrate_noise,
    dpsgd_epsilon,
    dpsgd_event,
    dpsgd_train,
    poisson_batches,
)
from privacy.vector_sas import sas_gaussian_equivalent_sigma


def _data(n=60, F=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


@pytest.mark.statistical
def test_poisson_batches_include_each_example_with_probability_q():
    rng = np.random.default_rng(0)
    R, n, q, draws = 5, 40, 0.3, 400
    counts = np.zeros((R, n))
    for _ in range(draws):
        idx, valid = poisson_batches(rng, R, n, q)
        assert idx.shape == valid.shape and idx.shape[0] == R
        for r in range(R):
            chosen = idx[r, valid[r]]
            assert chosen.size == np.unique(chosen).size       # no example twice
            counts[r, chosen] += 1
    # each count is Binomial(400, 0.3); a two-sided 1e-6 band for all 200 of them
    lo, hi = stats.binom.ppf([1e-6, 1 - 1e-6], draws, q)
    assert counts.min() >= lo and counts.max() <= hi
    assert abs(counts.mean() / draws - q) < 0.01


def test_full_batch_without_noise_is_gradient_descent():
    X, y = _data()
    model = LogisticModel(3)
    config = DPSGDConfig(clip_norm=1e6, learning_rate=0.3, sampling_rate=1.0, steps=25,
                         weight_decay=0.01)
    result = dpsgd_train(model, X, y, config=config, noise=None, replicates=2, rng=0)
    w = np.zeros((1, 4))
    for _ in range(25):
        w = w - 0.3 * (model.gradient(w, X, y) + 0.01 * w)
    np.testing.assert_allclose(result.params, np.repeat(w, 2, axis=0), rtol=1e-12, atol=1e-14)
    assert result.epsilon(1e-5) == math.inf
    assert not result.params.flags.writeable


def test_a_fixed_expected_batch_size_makes_the_step_a_function_of_the_noisy_sum_only():
    # the accountant covers the noisy sum; the default normaliser q n also depends on the data
    # set's size (treated as public), a fixed one does not: one full-batch step on D and on
    # D + x then differs by exactly lr * clip(g_x) / B
    X, y = _data()
    model = LogisticModel(3)
    x, label = np.array([[3.0, -1.0, 2.0]]), np.array([1])
    g_x = model.gradient(np.zeros((1, 4)), x, label)[0]
    clipped = g_x * min(1.0, 0.5 / np.linalg.norm(g_x))
    steps = {}
    for B in (None, 40.0):
        config = DPSGDConfig(clip_norm=0.5, learning_rate=0.3, sampling_rate=1.0, steps=1,
                             expected_batch_size=B)
        without, with_x = (dpsgd_train(model, data, labels, config=config, noise=None,
                                       rng=0).params[0]
                           for data, labels in ((X, y), (np.vstack([X, x]), np.append(y, label))))
        steps[B] = with_x - without
    np.testing.assert_allclose(steps[40.0], -0.3 * clipped / 40.0, rtol=1e-12, atol=1e-15)
    assert not np.allclose(steps[None], -0.3 * clipped / len(X), rtol=1e-3, atol=0)


def test_clipping_bounds_every_step():
    X, y = _data()
    X = 100.0 * X                                    # large gradients, all clipped
    steps = []
    config = DPSGDConfig(clip_norm=0.1, learning_rate=1.0, sampling_rate=0.5, steps=10,
                         expected_batch_size=7.0)
    prev = [np.zeros((3, 4))]

    def record(step, params):
        steps.append(np.linalg.norm(params - prev[0], axis=1))
        prev[0] = params.copy()
    dpsgd_train(LogisticModel(3), X, y, config=config, noise=None, replicates=3, rng=1,
                callback=record)
    # |update| <= lr * C * (batch size) / B, with at most n = 60 examples in a batch
    assert len(steps) == 10
    assert np.max(steps) <= 0.1 * 60 / 7.0
    assert np.max(steps) > 0.1 * 10 / 7.0          # and clipping did not zero them


@pytest.mark.statistical
@pytest.mark.parametrize("noise", [GradientNoise("gaussian", 2.0),
                                   GradientNoise("sas", 1.5, alpha=1.5)], ids=["gauss", "sas"])
def test_injected_noise_has_the_declared_law(noise):
    """With gradients clipped to ~0 the final parameters are -lr/B times a sum of N noises."""
    X, y = _data()
    steps, lr, B = 8, 0.5, 4.0
    config = DPSGDConfig(clip_norm=1e-12, learning_rate=lr, sampling_rate=0.2, steps=steps,
                         expected_batch_size=B)
    result = dpsgd_train(LogisticModel(3), X, y, config=config, noise=noise, replicates=500,
                         rng=3)
    sums = (-B / lr * result.params).ravel()        # 2000 i.i.d. sums of 8 noise draws
    if noise.law == "gaussian":
        cdf = stats.norm(scale=noise.scale * math.sqrt(steps)).cdf
    else:                                            # stability: sum of N is SaS(gamma N^(1/a))
        def cdf(x):
            return stable.sas_cdf(x, noise.alpha, noise.scale * steps ** (1 / noise.alpha))
    assert stats.kstest(sums, cdf).pvalue > 1e-4


def test_same_seed_same_numbers_and_paired_batches():
    X, y = _data()
    config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=0.3, steps=5)
    a = dpsgd_train(LogisticModel(3), X, y, config=config, noise=GradientNoise("gaussian", 1.0),
                    replicates=3, rng=7)
    b = dpsgd_train(LogisticModel(3), X, y, config=config, noise=GradientNoise("gaussian", 1.0),
                    replicates=3, rng=7)
    np.testing.assert_array_equal(a.params, b.params)
    assert not np.allclose(a.params[0], a.params[1])
    # batches come from their own stream: the noise law does not change which examples are
    # used (with negligible noise both laws give the same trajectory)
    runs = [dpsgd_train(LogisticModel(3), X, y, config=config, noise=noise, replicates=3,
                        rng=7).params
            for noise in (GradientNoise("gaussian", 1e-12), GradientNoise("sas", 1e-12, 1.9))]
    np.testing.assert_allclose(runs[0], runs[1], atol=1e-9)
    assert not np.allclose(runs[0], dpsgd_train(LogisticModel(3), X, y, config=config,
                                                noise=None, replicates=3, rng=8).params)


def test_softmax_training_learns_and_epsilon_reported():
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=3.0, size=(3, 4))
    y = rng.integers(0, 3, 300)
    X = centers[y] + rng.normal(size=(300, 4))
    config = DPSGDConfig(clip_norm=1.0, learning_rate=1.0, sampling_rate=0.2, steps=40)
    noise = GradientNoise("gaussian", 1.0)
    model = SoftmaxModel(4, 3)
    result = dpsgd_train(model, X, y, config=config, noise=noise, replicates=4, rng=1)
    assert model.accuracy(result.params, X, y).min() > 0.85
    assert result.epsilon(1e-5) == pytest.approx(dpsgd_epsilon(
        noise, clip_norm=1.0, steps=40, sampling_rate=0.2, delta=1e-5))


def test_releasing_several_replicates_composes_their_runs():
    # the replicates train on the same data: releasing r of them costs the composition of r
    # runs (r * steps subsampled Gaussians; dpsgd_epsilon equals dp_accounting's PLD, tested
    # below), more than one run
    X, y = _data()
    config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=0.1, steps=12)
    noise = GradientNoise("gaussian", 2.5)
    result = dpsgd_train(LogisticModel(3), X, y, config=config, replicates=4, rng=0,
                         noise=noise)
    for bad in (0, 5, 1.5):
        with pytest.raises(ParameterError, match="released"):
            result.epsilon(1e-5, released=bad)
    one, four = (result.epsilon(1e-5, released=r) for r in (1, 4))
    assert one == result.epsilon(1e-5) < four
    assert four == pytest.approx(dpsgd_epsilon(noise, clip_norm=1.0, steps=48,
                                               sampling_rate=0.1, delta=1e-5))


def test_training_input_errors():
    X, y = _data()
    config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=0.3, steps=2)
    model = LogisticModel(3)
    with pytest.raises(DimensionError, match="X has 2 features"):
        dpsgd_train(model, X[:, :2], y, config=config, noise=None)
    with pytest.raises(DimensionError, match="y has 59 labels"):
        dpsgd_train(model, X, y[:-1], config=config, noise=None)
    with pytest.raises(ParameterError, match="labels"):
        dpsgd_train(model, X, y + 1, config=config, noise=None)
    with pytest.raises(ParameterError, match="config must be a DPSGDConfig"):
        dpsgd_train(model, X, y, config={"steps": 2}, noise=None)
    with pytest.raises(ParameterError, match="noise must be a GradientNoise"):
        dpsgd_train(model, X, y, config=config, noise=1.0)
    with pytest.raises(DimensionError, match="init must have shape"):
        dpsgd_train(model, X, y, config=config, noise=None, init=np.zeros((2, 4)))
    # trial 13: no examples read "valid must have shape (1, 0)", an internal array
    with pytest.raises(DimensionError, match=r"X has no examples \(shape \(0, 3\)\)"):
        dpsgd_train(model, X[:0], y[:0], config=config, noise=None)
    with pytest.raises(ParameterError, match="sampling_rate"):
        DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=0.0, steps=2)
    with pytest.raises(ParameterError, match="clip_norm"):
        DPSGDConfig(clip_norm=-1.0, learning_rate=0.5, sampling_rate=0.1, steps=2)
    assert DPSGDConfig.from_epochs(epochs=3, sampling_rate=0.01, clip_norm=1.0,
                                   learning_rate=0.1).steps == 300


@pytest.mark.parametrize("model", [LogisticModel(3), SoftmaxModel(3, 2), MLPModel(3, 4, 2)],
                         ids=lambda m: type(m).__name__)
def test_huge_example_is_refused_or_harmless_with_and_without_it(model):
    # a NaN run only when one huge example was sampled revealed it with certainty
    X, y = _data()
    config = DPSGDConfig(clip_norm=0.5, learning_rate=0.3, sampling_rate=0.3, steps=20)
    noise = GradientNoise("gaussian", 1.0)
    for magnitude in (1e101, 1e155, 1e160, 1e300):
        huge = X.copy()
        huge[0, 1] = -magnitude
        with pytest.raises(NonFiniteError, match=re.escape(f"X has an entry of magnitude "
                                                           f"{magnitude:.3g}, beyond 1e+100")):
            dpsgd_train(model, huge, y, config=config, noise=noise, replicates=4, rng=0)
    at_limit = X.copy()
    at_limit[0, 1] = DATA_MAGNITUDE_LIMIT
    for data, labels in ((at_limit, y), (X[1:], y[1:])):
        result = dpsgd_train(model, data, labels, config=config, noise=noise, replicates=4,
                             rng=0)
        assert np.isfinite(result.params).all()


def test_diverging_run_raises_instead_of_returning_nan():
    X, y = _data()
    config = DPSGDConfig(clip_norm=1.0, learning_rate=1e300, sampling_rate=0.5, steps=5)
    with pytest.raises(NonFiniteError, match=r"DP-SGD diverged: after step \d+ .*replicate"
                                             r".*lower learning_rate"):
        dpsgd_train(LogisticModel(3), X, y, config=config, noise=GradientNoise("gaussian", 1e10),
                    replicates=2, rng=0)


def test_gradient_noise_validation():
    with pytest.raises(ParameterError, match="law must be one of"):
        GradientNoise("laplace", 1.0)
    with pytest.raises(ParameterError, match="needs alpha"):
        GradientNoise("sas", 1.0)
    with pytest.raises(ParameterError, match="alpha must lie in"):
        GradientNoise("sas", 1.0, alpha=2.0)
    with pytest.raises(ParameterError, match="only for law='sas'"):
        GradientNoise("gaussian", 1.0, alpha=1.9)
    assert GradientNoise("sas", 1.0, alpha=1.999).label == "sas_1.999"
    np.testing.assert_allclose(GradientNoise("sas", 2.0, alpha=1.0).logpdf(np.array([0.0])),
                               [-math.log(2.0 * math.pi)])


# ---------------------------------------------------------------- accounting of a run


def _event(noise_multiplier, q, steps):
    return dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(noise_multiplier)), steps)


@pytest.mark.slow
def test_gaussian_run_epsilon_matches_dp_accounting_and_prv_accountant():
    """Opacus reports these accountants' numbers for DP-SGD (noise multiplier sigma / C)."""
    sigma, clip, q, steps, delta = 2.0, 2.0, 0.05, 200, 1e-5
    ours = dpsgd_epsilon(GradientNoise("gaussian", sigma), clip_norm=clip, steps=steps,
                         sampling_rate=q, delta=delta)
    pld = pld_privacy_accountant.PLDAccountant()
    pld.compose(_event(sigma / clip, q, steps))
    assert ours == pytest.approx(pld.get_epsilon(delta), rel=1e-6)
    rdp = rdp_privacy_accountant.RdpAccountant()
    rdp.compose(_event(sigma / clip, q, steps))
    assert ours <= rdp.get_epsilon(delta)                   # RDP is a looser upper bound
    lower, _, upper = DPSGDAccountant(noise_multiplier=sigma / clip, sampling_probability=q,
                                      max_steps=steps, eps_error=0.01,
                                      delta_error=1e-10).compute_epsilon(delta, steps)
    assert lower <= ours <= upper


def test_a_run_describes_itself_as_an_event():
    noise = GradientNoise("sas", 1.3, alpha=1.9)
    sigma = sas_gaussian_equivalent_sigma(1.9, 1.3)
    event = dpsgd_event(noise, clip_norm=0.5, steps=20, sampling_rate=0.2)
    assert event == _event(sigma / 0.5, 0.2, 20)
    assert dpsgd_event(noise, clip_norm=0.5, steps=3, sampling_rate=1.0) == \
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(sigma / 0.5), 3)
    with pytest.raises(ParameterError, match="sampling_rate"):
        dpsgd_event(noise, clip_norm=0.5, steps=3, sampling_rate=0.0)


def test_sas_run_is_accounted_through_its_gaussian_equivalent():
    noise = GradientNoise("sas", 1.3, alpha=1.9)
    sigma = sas_gaussian_equivalent_sigma(1.9, 1.3)
    got = dpsgd_epsilon(noise, clip_norm=1.0, steps=20, sampling_rate=0.2, delta=1e-5)
    assert got == pytest.approx(dpsgd_epsilon(GradientNoise("gaussian", sigma), clip_norm=1.0,
                                              steps=20, sampling_rate=0.2, delta=1e-5))


def _count_pld_evaluations(monkeypatch, limit):
    """Count the calibration's accountant evaluations; fail at once past ``limit`` (a search
    at these epsilons composes PLDs of 10-20 s each: it took minutes before)."""
    from privacy import calibration

    calls = []

    def counted(*args, **kwargs):
        calls.append(kwargs.get("steps"))
        assert len(calls) <= limit, "a PLD search at a huge epsilon (minutes)"
        return original(*args, **kwargs)

    original = calibration.accounting.epsilon
    monkeypatch.setattr(calibration.accounting, "epsilon", counted)
    return calls


@pytest.mark.parametrize("epsilon", [1e10, 1e12])
def test_calibrate_noise_at_huge_epsilon_takes_one_accountant_check(monkeypatch, epsilon):
    """Trial 13: epsilon 1e6 hung > 200 s in the PLD search.  The Renyi-DP sigma brackets it,
    one PLD evaluation confirms it; the accountant's epsilon of the result is within target."""
    kwargs = dict(clip_norm=0.5, steps=15, sampling_rate=0.02, delta=1e-5)
    calls = _count_pld_evaluations(monkeypatch, limit=1)
    noise = calibrate_noise(epsilon, law="gaussian", **kwargs)
    assert len(calls) == 1
    monkeypatch.undo()
    assert 0.0 < dpsgd_epsilon(noise, **kwargs) <= epsilon


@pytest.mark.slow
def test_calibrate_noise_at_the_trials_epsilon_1e6_meets_it_in_seconds(monkeypatch):
    kwargs = dict(clip_norm=0.5, steps=15, sampling_rate=0.021, delta=1e-5)
    calls = _count_pld_evaluations(monkeypatch, limit=1)
    noise = calibrate_noise(1e6, law="sas", alpha=1.9, **kwargs)
    monkeypatch.undo()
    assert len(calls) == 1 and dpsgd_epsilon(noise, **kwargs) <= 1e6


@pytest.mark.slow
def test_calibrate_noise_meets_target_and_is_tight():
    kwargs = dict(clip_norm=0.5, steps=4, sampling_rate=0.5, delta=1e-5)
    # the SaS scale is derived from the calibrated Gaussian sigma, so this covers both laws
    # (epsilon 0.5, not 2: a larger noise, a smaller PLD grid; 2 % less noise still exceeds it)
    noise = calibrate_noise(0.5, law="sas", alpha=1.5, rtol=5e-3, **kwargs)
    assert dpsgd_epsilon(noise, **kwargs) <= 0.5
    assert dpsgd_epsilon(GradientNoise("sas", noise.scale * 0.98, 1.5), **kwargs) > 0.5
    with pytest.raises(ParameterError, match="needs alpha"):
        calibrate_noise(2.0, law="sas", **kwargs)
