"""Federated Inference: exactness without noise, Algorithm 2's cycles, Theorem 7.3.1, privacy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privacy.accounting import epsilon as accountant_epsilon
from privacy.errors import DimensionError, ParameterError
from privacy.federated import Network, run_async, run_sync
from privacy.federated.fedinfer import FedInfer
from privacy.federated.local_dp import LocalDP
from privacy.federated.models import KernelFeatures, LeastSquaresModel, SeparableLoss


def _setup(num_clients=3, n=90, classes=3, count=3, rng=0):
    gen = np.random.default_rng(rng)
    X = gen.normal(size=(n, 2)) + np.repeat(np.eye(3, 2) * 2, n // 3, axis=0)
    y = np.repeat(np.arange(3), n // 3) % classes
    feats = KernelFeatures.random(low=[-3, -3], high=[3, 3], count=count, rng=rng + 1)
    model = LeastSquaresModel(feats, classes, feature_bound=4.0, total_samples=n, ridge=1e-3)
    order = gen.permutation(n)   # non-IID split: sorted by label
    parts = np.array_split(np.argsort(y[order], kind="stable"), num_clients)
    data = [{"X": X[order][p], "y": y[order][p]} for p in parts]
    return model, data, X, y


def _dp(model, noise="gaussian", epsilon=1.0, **kw):
    norm = "l2" if noise == "gaussian" else "l1"
    return LocalDP.per_update(noise, epsilon=epsilon, delta=1e-5,
                              sensitivity=model.block_sensitivity(norm),
                              dimension=model.block_dimension, **kw)


def test_noise_free_one_round_is_the_centralized_solution():
    model, data, X, y = _setup()
    result = run_sync(FedInfer(model, None, num_clients=3), data, rounds=1)
    np.testing.assert_allclose(result.model["w"], model.centralized(X, y), atol=1e-12)
    assert result.epsilon_history().shape == (1, 3) and not result.epsilon_history().any()


def test_noise_free_async_full_cycles_are_exact():
    model, data, X, y = _setup(num_clients=3)
    algo = FedInfer(model, None, num_clients=3, stagger=[1, 2, 4], shares=[1 / 3] * 3)
    result = run_async(algo, data, stagger=[1, 2, 4], ticks=12, seed=0)
    assert algo.cycle == 4 + 2 + 1
    full = [r for r in result.history if r.round % 4 == 0]
    central = model.centralized(X, y)
    state = result.state
    np.testing.assert_allclose(algo.model(state)["w"], central, atol=1e-10)
    assert len(full) == 3 and int(state.scalars["n"]) == 3


def test_sync_round_equals_replies_applied_one_by_one():
    model, data, _, _ = _setup()
    algo = FedInfer(model, _dp(model), num_clients=3)
    result = run_sync(algo, data, rounds=3, seed=4)
    state = algo.init_server_state(3, 4)
    from privacy.federated.protocol import ClientState, derive_rng, run_client, simulation_secret
    clients = [ClientState()] * 3
    for t in range(3):
        replies = {}
        # the server's own messages: a client's noise is keyed by what it receives too
        plan = algo.configure_round(state, t, derive_rng(4, "server", 0, t))
        for k in range(3):
            message = plan.message_for(k, round=t, model_version=t, seed=4)
            replies[k], clients[k] = run_client(algo, k, data[k], clients[k], message,
                                                   secret=simulation_secret(4, k))
        for k in range(3):
            state = algo.apply_reply(state, k, replies[k])
    for name in ("xi", "zbar", "post/mean"):
        np.testing.assert_allclose(state.arrays[name], result.state.arrays[name], atol=1e-13)


def test_generic_separable_loss_runs_through_fedinfer():
    # mean estimation as argmin w^2 - 2 w xbar, per client blocks [n_k/N, sum x / N]
    loss = SeparableLoss(g=lambda w: np.array([w[0] ** 2, -2 * w[0]]),
                         h=lambda d: np.array([1.0, d["x"].mean()]), dimension=2, w0=[0.0],
                         total_samples=6, sensitivity=1.0, bounds=([0, -5], [1, 5]))
    data = [{"x": np.array([1.0, 2.0])}, {"x": np.array([3.0, 4.0, 5.0, 6.0])}]
    result = run_sync(FedInfer(loss, None, num_clients=2), data, rounds=1)
    assert result.model["w"][0] == pytest.approx(3.5, abs=1e-6)


@pytest.mark.statistical
def test_posterior_mean_converges_as_theorem_7_3_1():
    """Gaussian releases: the posterior of z* is N(zbar_n, K sigma^2 / n); its 95 % intervals
    cover z* and the error shrinks like 1/sqrt(n).  False-failure rate: binomial tails < 1e-6."""
    model, data, X, y = _setup(count=2)
    dp = _dp(model, epsilon=2.0)
    algo = FedInfer(model, dp, num_clients=3)
    z_star = sum(model.block(d) for d in data)
    errors = {}
    covered = 0
    for rounds in (25, 400):
        result = run_sync(algo, data, rounds=rounds, seed=rounds)
        post = algo.posterior_summary(result.state)
        np.testing.assert_allclose(post.std, dp.scale * np.sqrt(3 / rounds), rtol=1e-12)
        errors[rounds] = np.sqrt(np.mean((post.mean - z_star) ** 2))
        inside = (post.lower <= z_star) & (z_star <= post.upper)
        covered += int(inside.sum())
        # composed privacy after `rounds` releases, reported by the accountant
        assert result.history[-1].releases == (rounds,) * 3
        np.testing.assert_allclose(result.final_epsilon(), dp.epsilon(rounds))
        assert dp.epsilon(rounds) == pytest.approx(
            accountant_epsilon(dp.mechanism, delta=1e-5, steps=rounds), rel=1e-9)
    total = 2 * model.block_dimension
    assert stats.binom.cdf(covered, total, 0.95) > 1e-6
    assert stats.binom.sf(covered - 1, total, 0.95) > 1e-6
    ratio = errors[25] / errors[400]   # expected 4; the RMS over ~50 coordinates is within 30 %
    assert 2.8 < ratio < 5.6


@pytest.mark.slow
@pytest.mark.statistical
def test_sas_posterior_converges_and_accuracy_recovers():
    model, data, X, y = _setup(count=2, n=150)
    dp = LocalDP("sas", 0.004, model.block_sensitivity("l1"), model.block_dimension, alpha=1.5)
    algo = FedInfer(model, dp, num_clients=3)
    z_star = sum(model.block(d, "l1") for d in data)
    result = run_sync(algo, data, rounds=60, seed=1)
    post = algo.posterior_summary(result.state)
    z = (post.mean - z_star) / post.std
    assert np.mean(np.abs(z) < 1.96) > 0.8
    central = model.accuracy(model.centralized(X, y), X, y)
    assert model.accuracy(result.model["w"], X, y) >= central - 0.05


def test_budget_stops_releases_and_state():
    model, data, _, _ = _setup()
    dp0 = _dp(model, epsilon=1.0)
    dp = LocalDP(dp0.noise, dp0.scale, dp0.sensitivity, dp0.dimension, delta=1e-5,
                 budget=dp0.epsilon(3) * 1.0001)
    result = run_sync(FedInfer(model, dp, num_clients=3), data, rounds=6, seed=0)
    assert result.releases().tolist() == [3, 3, 3]
    assert [r.accepted for r in result.history] == [(0, 1, 2)] * 3 + [()] * 3
    assert result.state.version == 3
    history = result.epsilon_history()
    assert history.shape == (6, 3) and np.all(np.diff(history[:3, 0]) > 0)
    assert np.all(result.final_epsilon() <= dp.budget) and np.all(history[3:] == history[2])


def test_checkpoint_resume_identical_with_grid_posterior(tmp_path):
    model, data, _, _ = _setup(count=1)
    dp = LocalDP("laplace", 0.01, model.block_sensitivity("l1"), model.block_dimension)
    network = Network(drop=[0.0, 0.3, 0.0], timeout=3.0)

    def algo():
        return FedInfer(model, dp, num_clients=3, stagger=[1, 1, 1], grid_core=64, grid_tail=16)
    full = run_async(algo(), data, stagger=[1, 1, 1], ticks=10, seed=3, network=network)
    run_async(algo(), data, stagger=[1, 1, 1], ticks=4, seed=3, network=network,
              checkpoint=tmp_path / "ck")
    resumed = run_async(algo(), data, stagger=[1, 1, 1], ticks=10, network=network,
                        resume=tmp_path / "ck")
    assert int(full.state.scalars["n"]) >= 3
    assert full.history == resumed.history
    for name, value in full.state.arrays.items():
        np.testing.assert_array_equal(value, resumed.state.arrays[name])


def test_inconsistent_privacy_or_shapes_are_refused():
    model, _, _, _ = _setup()
    dp = _dp(model)
    with pytest.raises(ParameterError, match="privacy claim would be false"):
        FedInfer(model, dp.replace_scale(dp.scale).__class__(
            "gaussian", dp.scale, dp.sensitivity / 2, dp.dimension), num_clients=3)
    with pytest.raises(DimensionError, match="block has"):
        FedInfer(model, LocalDP("gaussian", 1.0, 1.0, dimension=3), num_clients=3)
    with pytest.raises(ParameterError, match="summing to 1"):
        FedInfer(model, None, num_clients=3, shares=[0.5, 0.5, 0.5])
    with pytest.raises(ParameterError, match="equal release weights"):
        FedInfer(model, _dp(model, "laplace"), num_clients=3, stagger=[1, 2, 2])


@pytest.mark.parametrize("seed", range(3))
def test_a_clean_round_aggregates_its_validation_stack_like_any_other_order(seed):
    # in order, the server step aggregates the stack its validation built; shuffled or with an
    # unreadable entry it takes the general path: the same state either way
    from privacy.federated.protocol import CLIENT, ROUND, VERSION, Reply
    from privacy.federated.server_step import ServerStep

    rng = np.random.default_rng(seed)
    model, _, _, _ = _setup()
    algo = FedInfer(model, _dp(model), num_clients=3)
    size = model.block_dimension
    replies = [(k, Reply({"z": rng.uniform(-0.1, 0.1, size)}, {CLIENT: k, ROUND: 0, VERSION: 0}))
               for k in range(3)]
    states = []
    for received in (replies, replies[::-1], [*replies, (-1, "unreadable")]):
        step = ServerStep.start(algo, num_clients=3, seed=0)
        step.open_round(0)
        record = step.close_round(received, missing=(), time=0.0, releases=())
        assert record.accepted == (0, 1, 2)
        states.append(step.state)
    for state in states[1:]:
        for name in ("xi", "zbar", "post/mean"):
            np.testing.assert_allclose(state.arrays[name], states[0].arrays[name],
                                       rtol=1e-13, atol=1e-300)
