"""The FedAvg family: protocol consistency, convergence without noise, update sensitivity."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.errors import ParameterError
from privacy.federated import run_async, run_sync
from privacy.federated.gradient import (
    FedAvg,
    FedLin,
    FedNova,
    FedProx,
    Scaffold,
    update_sensitivity,
)
from privacy.federated.local_dp import LocalDP
from privacy.federated.models import KernelFeatures, LeastSquaresModel
from privacy.federated.protocol import ClientState, run_client, simulation_secret

METHODS = [FedAvg, FedProx, Scaffold, FedNova, FedLin]


def _setup(n=(40, 30, 50), rng=0):
    gen = np.random.default_rng(rng)
    total = sum(n)
    feats = KernelFeatures(np.zeros((0, 2)))          # phi = [1, x]
    model = LeastSquaresModel(feats, 3, feature_bound=3.0, total_samples=total, ridge=0.01)
    data = []
    for k, size in enumerate(n):   # non-IID: client k mostly holds class k
        y = np.where(gen.random(size) < 0.8, k, gen.integers(0, 3, size))
        X = gen.normal(size=(size, 2)) * 0.7 + np.eye(3, 2)[y] * 1.5
        data.append({"X": X, "y": y})
    return model, data


def _make(cls, model, dp=None, **kw):
    args = dict(samples=[40, 30, 50], lr=0.1, local_steps=[5, 3, 2], clip=100.0)
    if cls is FedProx:
        args["mu"] = 0.05
    args.update(kw)
    if cls is FedLin:   # the client with the fewest steps takes the largest ones
        steps = np.atleast_1d(args["local_steps"])
        args["lr"] *= steps.min() / steps.max()
    return cls(model, dp, **args)


def _dps(model, cls, clip=1.0, epsilon=1.0):
    return [LocalDP.per_update("gaussian", epsilon=epsilon, delta=1e-5,
                               sensitivity=update_sensitivity(model, clip, n, "l2"),
                               dimension=model.num_features * model.num_outputs,
                               releases=cls.releases_per_update) for n in (40, 30, 50)]


@pytest.mark.parametrize("cls", METHODS)
def test_round_equals_replies_applied_one_by_one(cls):
    model, data = _setup()
    algo = _make(cls, model, _dps(model, cls), clip=1.0)
    result = run_sync(algo, data, rounds=3, seed=2)
    state = sent = algo.init_server_state(3, 2)
    clients = [ClientState()] * 3
    for t in range(3):
        # the messages come from the aggregated state, as in run_sync: a client's noise is keyed
        # by its message bit for bit, and one-by-one application differs in the last bits
        plan = algo.configure_round(sent, t, None)
        replies = {}
        for k in plan.clients:
            message = plan.message_for(k, round=t, model_version=t, seed=2)
            replies[k], clients[k] = run_client(algo, k, data[k], clients[k], message,
                                               secret=simulation_secret(2, k))
        for k in plan.clients:
            state = algo.apply_reply(state, k, replies[k])
        sent = algo.aggregate(sent, t, replies)
    for name, value in result.state.arrays.items():
        np.testing.assert_allclose(state.arrays[name], value, atol=1e-12)
    releases = 1 + 2 * 2 if cls is FedLin else 3
    assert result.releases().tolist() == [releases] * 3


def test_control_variates_remove_client_drift():
    """Without noise, SCAFFOLD and FedLin reach the centralized optimum on non-IID data;
    FedAvg with several local steps stops at a drifted point (seed Sec. 5.4)."""
    model, data = _setup()
    X = np.vstack([d["X"] for d in data])
    y = np.concatenate([d["y"] for d in data])
    optimum = model.centralized(X, y)
    gaps = {}
    for cls in (FedAvg, Scaffold, FedLin):
        result = run_sync(_make(cls, model, local_steps=[5, 5, 5]), data, rounds=600, seed=0)
        gaps[cls.name] = np.linalg.norm(result.model["w"] - optimum)
    assert gaps["scaffold"] < 1e-6 and gaps["fedlin"] < 1e-6
    assert gaps["fedavg"] > 1e-3


def test_fednova_normalizes_heterogeneous_work():
    model, data = _setup()
    algo = _make(FedNova, model, local_steps=[8, 2, 1])
    result = run_sync(algo, data, rounds=1, seed=0)
    W0 = np.zeros(model.weight_shape)
    us = [algo._local_descent(d, W0, np.zeros_like(W0), k) for k, d in enumerate(data)]
    p = np.array([40, 30, 50]) / 120
    tau = p @ [8, 2, 1]
    np.testing.assert_allclose(result.model["w"], -0.1 * tau * np.tensordot(p, us, axes=1),
                               atol=1e-14)


@pytest.mark.parametrize("cls", METHODS)
def test_update_sensitivity_by_brute_force(cls):
    """Adding one record moves the released direction u by at most G / n_k (l2)."""
    model, data = _setup()
    clip = 0.5
    algo = _make(cls, model, clip=clip, lr=0.2)
    gen = np.random.default_rng(1)
    worst = 0.0
    for trial in range(20):
        k = trial % 3
        start = gen.normal(scale=2.0, size=model.weight_shape)
        correction = gen.normal(scale=0.3, size=model.weight_shape)
        more = {"X": np.vstack([data[k]["X"], gen.normal(scale=4.0, size=(1, 2))]),
                "y": np.r_[data[k]["y"], gen.integers(0, 3)]}
        u = algo._local_descent(data[k], start, correction, k)
        u_more = algo._local_descent(more, start, correction, k)
        ratio = np.linalg.norm(u_more - u) / update_sensitivity(model, clip, algo.samples[k],
                                                                "l2")
        assert ratio <= 1 + 1e-9
        worst = max(worst, ratio)
    assert worst > 0.5   # the bound is not vacuous


@pytest.mark.parametrize("cls", METHODS)
def test_client_refuses_more_records_than_declared(cls):
    """The sensitivity and step-size check assume at most n_k + 1 records (the brute force
    above uses n_k + 1); a client holding more refuses before it releases anything."""
    model, data = _setup()
    gen = np.random.default_rng(2)
    algo = _make(cls, model, _dps(model, cls), clip=1.0)

    def extended(extra):
        grown = [dict(d) for d in data]
        grown[1] = {"X": np.vstack([data[1]["X"], gen.normal(size=(extra, 2))]),
                    "y": np.r_[data[1]["y"], gen.integers(0, 3, extra)]}
        return grown
    assert np.isfinite(run_sync(algo, extended(1), rounds=2, seed=0).model["w"]).all()
    with pytest.raises(ParameterError, match=r"client 1 holds 32 records, more than its "
                                             r"declared samples\[1\] = 30 .* at most 31"):
        run_sync(algo, extended(2), rounds=2, seed=0)
    start = np.zeros(model.weight_shape)
    with pytest.raises(ParameterError, match="client 1 holds 80 records"):
        algo._local_descent(extended(50)[1], start, start, 1)


def test_fedlin_starts_with_gradients_and_sampling_is_reproducible():
    model, data = _setup()
    algo = _make(FedLin, model, _dps(model, FedLin), clip=1.0)
    first = run_sync(algo, data, rounds=1, seed=0)
    assert not first.model["w"].any() and first.releases().tolist() == [1, 1, 1]
    sampled = _make(FedAvg, model, sample_rate=0.5)
    a = run_sync(sampled, data, rounds=8, seed=5)
    b = run_sync(sampled, data, rounds=8, seed=5)
    assert [r.accepted for r in a.history] == [r.accepted for r in b.history]
    assert len({r.accepted for r in a.history}) > 1
    asynchronous = run_async(_make(Scaffold, model), data, stagger=[1, 2, 4], ticks=8, seed=0)
    assert np.isfinite(asynchronous.model["w"]).all()


def test_refuses_unsound_privacy_or_step_sizes():
    model, _ = _setup()
    dps = _dps(model, FedAvg)
    with pytest.raises(ParameterError, match="claim would be false"):
        _make(FedAvg, model, dps, clip=2.0)       # noise calibrated for clip 1
    with pytest.raises(ParameterError, match="non-expansive"):
        _make(FedAvg, model, lr=0.5)
    with pytest.raises(ParameterError, match="mu"):
        _make(FedProx, model, mu=0.0)
