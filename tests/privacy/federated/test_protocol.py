"""The protocol values, rng derivation, reply validation, checkpoints and the reference runner."""

from __future__ import annotations

import doctest
import logging

import numpy as np
import pytest

from privacy.errors import DimensionError, ParameterError
from privacy.federated import protocol, runner
from privacy.federated.protocol import (
    ABSTAIN,
    CLIENT,
    ROUND,
    SECRET_BITS,
    VERSION,
    ClientState,
    Message,
    Reply,
    RoundPlan,
    ServerState,
    derive_rng,
    load_server_state,
    new_client_secret,
    run_client,
    save_server_state,
    simulation_secret,
    validate_reply,
)
from privacy.federated.runner import Network, run_async, run_sync, stagger_schedule
from tests.privacy.federated.toy import NoisyMean, toy_data


@pytest.mark.parametrize("module", [protocol, runner])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_derive_rng_depends_on_every_key_only():
    draw = lambda *key: derive_rng(*key).normal(size=3)  # noqa: E731
    base = draw(5, "client", 2, 7)
    np.testing.assert_array_equal(base, draw(5, "client", 2, 7))
    for other in [(6, "client", 2, 7), (5, "server", 2, 7), (5, "client", 3, 7),
                  (5, "client", 2, 8)]:
        assert not np.allclose(base, draw(*other))
    with pytest.raises(ParameterError, match="role"):
        derive_rng(0, "attacker", 0, 0)
    with pytest.raises(ParameterError, match="round"):
        derive_rng(0, "client", 0, -1)


def test_messages_are_flat_and_reserved_keys_are_stamped():
    plan = RoundPlan((0, 2), {"w": [1.0, 2.0]}, {"lr": 0.1}, {2: {"local_steps": 3}})
    m0 = plan.message_for(0, round=4, model_version=3, seed=9)
    m2 = plan.message_for(2, round=4, model_version=3, seed=9)
    assert (m0.round, m0.model_version, m0.seed) == (4, 3, 9)
    assert "local_steps" not in m0.config and m2.config["local_steps"] == 3
    assert m0.arrays["w"].dtype == np.float64 and not m0.arrays["w"].flags.writeable
    with pytest.raises(ParameterError, match="reserved"):
        RoundPlan((0,), config={ROUND: 1})
    with pytest.raises(ParameterError, match="duplicate"):
        RoundPlan((1, 1))
    with pytest.raises(ParameterError, match="scalar"):
        Message(config={"nested": {"a": 1}})
    with pytest.raises(DimensionError, match="numeric"):
        Message(arrays={"w": "abc"})
    with pytest.raises(ParameterError, match="reserved key"):
        _ = Message().round


def test_run_client_initializes_state_and_is_deterministic():
    algo = NoisyMean()
    data = toy_data()[1]
    message = RoundPlan((1,), {"mean": np.zeros(2)}).message_for(1, round=3, model_version=2,
                                                                seed=11)
    reply, state = run_client(algo, 1, data, ClientState(), message, secret=5)
    again, _ = run_client(algo, 1, data, ClientState(), message, secret=5)
    np.testing.assert_array_equal(reply.arrays["mean"], again.arrays["mean"])
    assert reply.metrics[CLIENT] == 1 and reply.metrics[ROUND] == 3
    assert reply.metrics[VERSION] == 2 and state.scalars["sent"] == 1
    to_two = RoundPlan((2,), {"mean": np.zeros(2)}).message_for(2, round=3, model_version=2,
                                                               seed=11)
    other, _ = run_client(algo, 2, data, ClientState(), to_two, secret=5)
    assert not np.allclose(other.arrays["mean"], reply.arrays["mean"])
    with pytest.raises(ParameterError, match="addressed to client 1"):
        run_client(algo, 2, data, ClientState(), message, secret=5)
    for bad in (-1, 2 ** SECRET_BITS, 1.5, True, "7"):
        with pytest.raises(ParameterError, match=r"secret must be an integer in \[0, 2\*\*128\)"):
            run_client(algo, 1, data, ClientState(), message, secret=bad)


def test_the_message_seed_does_not_key_the_clients_noise():
    """The server chooses the seed and sends it: a client noise it determined could be
    regenerated and removed by the server.  The noise is keyed by the client's secret; the seed,
    like the rest of the message, only selects which independent draw it is."""
    algo = NoisyMean(noise=1.0)
    data = toy_data()[0]
    plan = RoundPlan((0,), {"mean": np.zeros(2)})
    replies = [run_client(algo, 0, data, ClientState(),
                          plan.message_for(0, round=2, model_version=0, seed=seed),
                          secret=secret)[0].arrays["mean"]
               for seed, secret in ((1, 9), (1, 9), (1, 10), (2, 9))]
    np.testing.assert_array_equal(replies[0], replies[1])
    assert not np.allclose(replies[0], replies[2])
    assert not np.allclose(replies[0], replies[3])


def _server_view_attack(noise: float, secrets=None):
    """What the server of the walkthrough did: regenerate each client's noise from the seed in
    its messages (and checkpoint) and subtract it from the replies.  Returns the largest
    residual |reply - regenerated noise - clean value| and the noise's scale."""
    algo = NoisyMean(noise=noise)
    data = toy_data(3)
    seen = {}

    def spy(k, t, reply):
        seen[(k, t)] = np.array(reply.arrays["mean"])
        return [reply]

    run_sync(algo, data, rounds=3, seed=0, network=Network(tamper=spy), secrets=secrets)
    assert len(seen) == 9
    residuals = [np.abs(r - noise * derive_rng(0, "client", k, t).normal(size=2)
                        - data[k]["x"].mean(axis=0)).max() for (k, t), r in seen.items()]
    return max(residuals)


def test_the_server_can_no_longer_regenerate_and_subtract_the_noise():
    """Before the fix the residual was 0 to rounding (2.8e-17 for FedInfer): the server
    recovered every clean value.  Now it is of the noise's size (N(0, 1) per coordinate: the
    largest of 18 draws lies above 0.5 with probability 1 - 0.38**18), with the clients' own
    secrets and in a simulation alike (there the secrets derive from the seed under a key of
    their own, which the seed-keyed generators never reproduce)."""
    assert _server_view_attack(1.0, secrets=[new_client_secret() for _ in range(3)]) > 0.5
    assert _server_view_attack(1.0, secrets=[11, 12, 13]) > 0.5
    assert _server_view_attack(1.0) > 0.5


def test_a_simulation_says_that_its_seed_determines_the_noise():
    data = toy_data(3)
    simulated = run_sync(NoisyMean(), data, rounds=2, seed=3)
    again = run_sync(NoisyMean(), data, rounds=2, seed=3)
    np.testing.assert_array_equal(simulated.model["mean"], again.model["mean"])
    assert simulated.seeded_noise and "whoever knows the seed" in simulated.noise_note()
    keyed = [simulation_secret(3, k) for k in range(3)]
    explicit = run_sync(NoisyMean(), data, rounds=2, seed=3, secrets=keyed)
    np.testing.assert_array_equal(explicit.model["mean"], simulated.model["mean"])
    own = run_sync(NoisyMean(), data, rounds=2, seed=3, secrets=[21, 22, 23])
    assert not own.seeded_noise and "never received" in own.noise_note()
    assert not np.allclose(own.model["mean"], simulated.model["mean"])
    with pytest.raises(DimensionError, match="secrets has 2 entries; expected 3"):
        run_sync(NoisyMean(), data, rounds=1, secrets=[1, 2])
    with pytest.raises(ParameterError, match=r"secrets\[1\] must be an integer"):
        run_sync(NoisyMean(), data, rounds=1, secrets=[1, -2, 3])


def _reply(arrays=None, **metrics):
    head = {CLIENT: 0, ROUND: 1, VERSION: 1}
    head.update(metrics)
    return Reply({"w": np.ones(2)} if arrays is None else arrays, head)


@pytest.mark.parametrize("reply, kwargs, reason", [
    ("junk", {}, "not a Reply"),
    (Reply({"w": np.ones(2)}, {ROUND: 1, VERSION: 1}), {}, "client_id"),
    (_reply(**{ROUND: 1.5}), {}, "'round'"),
    (_reply(**{CLIENT: 3}), {}, "claims client 3"),
    (_reply(), {"expected_round": 2}, "stale reply: round 1"),
    (_reply(), {"expected_round": 0}, "future reply"),
    (_reply(**{VERSION: 2}), {"current_version": 9, "max_staleness": 3}, "7 versions old"),
    (_reply({"w": np.ones(3)}), {}, "shape (3,)"),
    (_reply({"w": np.ones(2), "extra": np.ones(1)}), {}, "differ"),
    (_reply({"v": np.ones(2)}), {}, "differ"),
    (_reply({"w": np.array([1.0, np.inf])}), {}, "non-finite"),
    (_reply({"w": np.array([1 + 1j, 2])}), {}, "not real"),
    (_reply({"w": np.array(["a", "b"])}), {}, "not real"),
    (Reply([1.0], {CLIENT: 0, ROUND: 1, VERSION: 1}), {}, "not a mapping"),
    (_reply(**{ABSTAIN: 1}), {}, "abstaining reply carries arrays"),
])
def test_validate_reply_rejects_with_reason(reply, kwargs, reason):
    found = validate_reply(reply, {"w": (2,)}, client_id=0, **kwargs)
    assert found is not None and reason in found


def test_validate_reply_accepts_and_catches_duplicates():
    seen: set = set()
    assert validate_reply(_reply(), {"w": (2,)}, client_id=0, expected_round=1, seen=seen) is None
    again = validate_reply(_reply(), {"w": (2,)}, client_id=0, expected_round=1, seen=seen)
    assert "duplicate" in again
    abstain = Reply({}, {CLIENT: 0, ROUND: 2, VERSION: 1, ABSTAIN: 1})
    assert validate_reply(abstain, {"w": (2,)}, client_id=0) is None and abstain.abstained


def test_server_state_checkpoint_roundtrip(tmp_path):
    state = ServerState.new({"w": np.random.default_rng(0).normal(size=(3, 4))}, num_clients=4,
                            seed=12, mode="sync", rate=0.1)
    save_server_state(tmp_path / "ck", state, extra={"note": [1, 2]})
    loaded, extra = load_server_state(tmp_path / "ck")
    np.testing.assert_array_equal(loaded.arrays["w"], state.arrays["w"])
    assert loaded.scalars == state.scalars and extra == {"note": [1, 2]}
    with pytest.raises(ParameterError, match="version"):
        ServerState({"w": np.ones(1)}, {"num_clients": 1, "seed": 0})


# ------------------------------------------------------------------------------- runner
def test_sync_runner_matches_direct_average():
    data = toy_data(3)
    result = run_sync(NoisyMean(noise=0.0), data, rounds=2, seed=0)
    expected = np.mean([d["x"].mean(axis=0) for d in data], axis=0)
    np.testing.assert_allclose(result.model["mean"], expected)
    assert [r.accepted for r in result.history] == [(0, 1, 2), (0, 1, 2)]
    assert result.releases().tolist() == [2, 2, 2]


def test_bad_replies_are_rejected_logged_and_never_averaged(caplog):
    data = toy_data(3)

    def tamper(client, round, reply):
        if client == 1:   # NaN, wrong shape, and two copies of a reply for another client
            nan = Reply({"mean": np.array([np.nan, 0.0])}, reply.metrics)
            wrong = Reply({"mean": np.zeros(3)}, reply.metrics)
            return [nan, wrong]
        if client == 2:   # duplicate
            return [reply, reply]
        return [reply]
    with caplog.at_level(logging.WARNING, logger="privacy.federated"):
        result = run_sync(NoisyMean(noise=0.0), data, rounds=1, seed=0,
                          network=Network(tamper=tamper))
    record = result.history[0]
    reasons = [r for _, r in record.rejected]
    assert record.accepted == (0, 2)
    assert any("non-finite" in r for r in reasons) and any("shape" in r for r in reasons)
    assert any("duplicate" in r for r in reasons)
    assert sum("rejected reply" in m for m in caplog.messages) == 3
    expected = np.mean([data[0]["x"].mean(axis=0), data[2]["x"].mean(axis=0)], axis=0)
    np.testing.assert_allclose(result.model["mean"], expected)


def test_dropped_client_costs_exactly_the_timeout_and_late_replies_are_stale():
    data = toy_data(3)
    network = Network(latency=[1.0, 1.0, 7.0], timeout=4.0)
    result = run_sync(NoisyMean(noise=0.0), data, rounds=3, seed=0, network=network)
    times = [r.time for r in result.history]
    assert times == [4.0, 8.0, 12.0]
    assert all(r.missing == (2,) and r.accepted == (0, 1) for r in result.history)
    late = [reason for r in result.history[1:] for k, reason in r.rejected if k == 2]
    assert late and all("stale reply" in reason for reason in late)
    fast = run_sync(NoisyMean(noise=0.0), data, rounds=3, seed=0,
                    network=Network(latency=1.0, timeout=4.0))
    assert [r.time for r in fast.history] == [1.0, 2.0, 3.0]
    with pytest.raises(ParameterError, match="timeout"):
        run_sync(NoisyMean(), data, rounds=1, network=Network(drop=[0, 0, 1]))


def test_random_dropouts_and_sampling_are_reproducible():
    data = toy_data(4)
    kwargs = dict(rounds=6, seed=3, network=Network(drop=0.3, jitter=0.5, timeout=2.0))
    a = run_sync(NoisyMean(fraction=0.7), data, **kwargs)
    b = run_sync(NoisyMean(fraction=0.7), data, **kwargs)
    assert a.history == b.history
    np.testing.assert_array_equal(a.model["mean"], b.model["mean"])
    assert any(r.missing for r in a.history) and len({r.accepted for r in a.history}) > 1


def _same_run(a, b):
    assert a.history == b.history
    for x, y in zip(a.client_states + (a.state,), b.client_states + (b.state,), strict=True):
        assert x.arrays.keys() == y.arrays.keys() and x.scalars == y.scalars
        for name in x.arrays:
            np.testing.assert_array_equal(x.arrays[name], y.arrays[name])


def test_sync_checkpoint_resume_is_identical(tmp_path):
    data = toy_data(3)
    network = Network(latency=[0.5, 1.0, 3.0], jitter=0.5, timeout=2.5)
    full = run_sync(NoisyMean(fraction=0.8), data, rounds=6, seed=5, network=network)
    run_sync(NoisyMean(fraction=0.8), data, rounds=3, seed=5, network=network,
             checkpoint=tmp_path / "run")
    resumed = run_sync(NoisyMean(fraction=0.8), data, rounds=6, network=network,
                       resume=tmp_path / "run")
    _same_run(full, resumed)
    assert any(k == 2 for r in full.history[3:] for k, _ in r.rejected)  # late reply in flight


def test_async_stagger_counts_and_staleness():
    data = toy_data(3)
    result = run_async(NoisyMean(noise=0.0), data, stagger=[1, 2, 5], ticks=10, seed=0)
    counts = np.bincount([k for r in result.history for k in r.accepted], minlength=3)
    assert counts.tolist() == [10, 5, 2]
    schedule = stagger_schedule([1, 2, 5], 10)
    assert [(r.round, k) for r in result.history for k in r.accepted] == schedule
    tick5 = result.history[4]
    assert tick5.accepted == (0, 2)
    # client 0 answers a request sent at tick 4 before client 1's tick-4 reply was applied;
    # client 2 computed from version 0, then 5 replies of client 0 and 2 of client 1 arrived
    assert tick5.staleness == (1, 7)
    rejected = run_async(NoisyMean(noise=0.0), data, stagger=[1, 2, 5], ticks=10, seed=0,
                         max_staleness=3)
    assert all("versions old" in reason for r in rejected.history for _, reason in r.rejected)
    assert sum(len(r.rejected) for r in rejected.history) > 0


def test_async_timeouts_reissue_and_resume_identically(tmp_path, caplog):
    data = toy_data(3)
    network = Network(drop=[0.0, 0.5, 0.0], latency=[0.0, 0.0, 2.5], timeout=4.0)
    kwargs = dict(stagger=[1, 2, 2], seed=2, network=network)
    with caplog.at_level(logging.WARNING, logger="privacy.federated"):
        full = run_async(NoisyMean(), data, ticks=20, **kwargs)
    assert any("re-issuing" in m for m in caplog.messages)
    assert sum(1 for r in full.history for k in r.accepted if k == 1) > 0
    run_async(NoisyMean(), data, ticks=9, checkpoint=tmp_path / "a", **kwargs)
    resumed = run_async(NoisyMean(), data, ticks=20, resume=tmp_path / "a", **kwargs)
    _same_run(full, resumed)
    with pytest.raises(DimensionError, match="stagger"):
        run_async(NoisyMean(), data, stagger=[1, 2], ticks=1)
