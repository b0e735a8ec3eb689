"""Flower in-process: same numbers as the numpy runner, robustness, checkpoints, internals."""

from __future__ import annotations

import copy
import logging
import subprocess
import sys

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, MetricRecord, RecordDict
from flwr.app import Message as FlowerMessage

from privacy.errors import DimensionError, ParameterError
from privacy.federated.fedinfer import FedInfer
from privacy.federated.flower import (
    SIMULATION_SEED,
    InProcessGrid,
    ProtocolStrategy,
    discover_clients,
    load_client_state,
    make_client_app,
    run_async_grid,
    run_inprocess_async,
    run_inprocess_sync,
    save_client_state,
)
from privacy.federated.flower.records import (
    load_context_state,
    message_content,
    message_from_content,
    reply_content,
    reply_from_flower,
    store_context_state,
)
from privacy.federated.flower.transport import group_of
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
from privacy.federated.protocol import (
    CLIENT,
    ROUND,
    VERSION,
    ClientState,
    Reply,
    RoundPlan,
    run_client,
    simulation_secret,
)
from privacy.federated.runner import Network, run_async, run_sync
from tests.privacy.federated.toy import NoisyMean, toy_data

STAGGER = [1, 2, 5, 10]


def classification_data(sizes=(20, 30, 25, 15), seed=0):
    """Clients with shifted inputs and heavy-tailed label noise (non-IID)."""
    rng = np.random.default_rng(seed)
    data = []
    for k, size in enumerate(sizes):
        X = rng.normal(size=(size, 2)) + 0.4 * k
        y = (X[:, 0] - X[:, 1] + 0.5 * rng.standard_t(3, size=size) > 0).astype(int)
        data.append({"X": X, "y": y})
    return data


def build(name, sizes=(20, 30, 25, 15), stagger=None):
    """Every protocol algorithm of the package, with local DP and a setting that exercises it."""
    features = KernelFeatures.random(low=[-2, -2], high=[2, 2], count=4, rng=1)
    model = LeastSquaresModel(features, num_classes=2, feature_bound=3.0,
                              total_samples=sum(sizes))
    if name.startswith("fedinfer"):
        noise = name.split("-")[1]
        norm = "l2" if noise == "gaussian" else "l1"
        sensitivity = model.block_sensitivity(norm)
        dp = LocalDP(noise, 3 * sensitivity, sensitivity, model.block_dimension)
        return FedInfer(model, dp, num_clients=len(sizes), stagger=stagger, grid_core=48,
                        grid_tail=16)
    dps = [LocalDP("gaussian", 3 * update_sensitivity(model, 1.0, n, "l2"),
                   update_sensitivity(model, 1.0, n, "l2"),
                   model.num_features * model.num_outputs) for n in sizes]
    options = {"fedavg": dict(local_steps=2, sample_rate=0.7),
               "fedprox": dict(mu=0.1, local_steps=[1, 2, 3, 1]),
               "scaffold": dict(local_steps=2),
               "fednova": dict(local_steps=[1, 3, 2, 2]),
               "fedlin": dict(local_steps=[1, 2, 4, 2])}[name]
    cls = {"fedavg": FedAvg, "fedprox": FedProx, "scaffold": Scaffold, "fednova": FedNova,
           "fedlin": FedLin}[name]
    return cls(model, dps, samples=sizes, lr=0.05, **options)


# SaS noise is left out: the runtime treats every noise law alike (noise in client_update, the
# grid posterior is exercised by Laplace), and the SaS vector accountant costs ~5-20 s per call.
SYNC = ["fedinfer-gaussian", "fedinfer-laplace", "fedavg", "fedprox", "scaffold", "fednova",
        "fedlin"]


def assert_same_run(flower, reference, *, times=False, releases_bound=False):
    """Bit-identical model, state and history (wall/virtual times aside).

    ``releases_bound``: the server counts a request in flight as ``releases_per_update``
    releases (it cannot see the client), so its counts may only exceed the runner's.
    """
    assert flower.state.scalars == reference.state.scalars
    assert flower.state.arrays.keys() == reference.state.arrays.keys()
    for name, value in reference.state.arrays.items():
        np.testing.assert_array_equal(flower.state.arrays[name], value)
    assert len(flower.history) == len(reference.history)
    for ours, theirs in zip(flower.history, reference.history, strict=True):
        for field in ("round", "accepted", "rejected", "missing", "version", "staleness",
                      "metrics") + (() if releases_bound else ("releases",)):
            assert getattr(ours, field) == getattr(theirs, field), (field, ours, theirs)
        if releases_bound:
            assert np.all(np.array(ours.releases) >= np.array(theirs.releases))
        if times:
            assert ours.time == pytest.approx(theirs.time)


def assert_same_clients(flower, reference):
    for ours, theirs in zip(flower.client_states, reference.client_states, strict=True):
        assert ours.scalars == theirs.scalars
        for name, value in theirs.arrays.items():
            np.testing.assert_array_equal(ours.arrays[name], value)


# ------------------------------------------------------------------------ records
def test_records_round_trip_exactly():
    plan = RoundPlan((1,), {"w": [[1.0, -2.5e-300], [np.pi, 0.1]]}, {"lr": 0.1, "tag": "x",
                                                                       "on": True})
    message = plan.message_for(1, round=3, model_version=2, seed=7)
    back = message_from_content(message_content(message))
    np.testing.assert_array_equal(back.arrays["w"], message.arrays["w"])
    assert back.config == message.config
    assert {type(v) for v in back.config.values()} == {type(v) for v in message.config.values()}
    state = ClientState({"c": np.arange(3.0)}, {"dp_releases": 4, "name": "k", "flag": False})
    context = Context(1, 5, {}, RecordDict(), {})
    assert load_context_state(context).empty
    store_context_state(context, state)
    again = load_context_state(context)
    np.testing.assert_array_equal(again.arrays["c"], state.arrays["c"])
    assert again.scalars == state.scalars


def test_unreadable_replies_give_reasons_not_exceptions():
    from flwr.app import Error

    from privacy.federated.flower import ensure_task_identity

    ensure_task_identity(1)
    request = FlowerMessage(RecordDict(), 3, "train", group_id="0/0")
    error = FlowerMessage(Error(2, "ValueError: boom"), reply_to=request)
    assert "client error" in reply_from_flower(error) and "boom" in reply_from_flower(error)
    empty = FlowerMessage(RecordDict({"x": ConfigRecord({"a": 1})}), reply_to=request)
    assert "expected 'arrays'" in reply_from_flower(empty)
    reply = Reply({"mean": np.array([1.0, np.nan])}, {CLIENT: 0, ROUND: 0, VERSION: 0})
    parsed = reply_from_flower(FlowerMessage(reply_content(reply, 2, 1), reply_to=request))
    assert np.isnan(parsed.arrays["mean"][1]) and parsed.metrics == reply.metrics
    assert group_of(error) == (0, 0)


# ------------------------------------------------------------------------ equality
@pytest.mark.parametrize("name", SYNC)
def test_sync_equals_numpy_runner(name):
    algorithm, data = build(name), classification_data()
    reference = run_sync(algorithm, data, rounds=3, seed=11)
    flower = run_inprocess_sync(algorithm, data, rounds=3, seed=11)
    assert_same_run(flower, reference)
    assert_same_clients(flower, reference)
    np.testing.assert_array_equal(flower.epsilon_history(), reference.epsilon_history())
    assert flower.epsilon_history().shape == (3, 4) and flower.epsilon_history().max() > 0
    other = run_inprocess_sync(algorithm, data, rounds=3, seed=12)
    assert not np.array_equal(other.model["w"], flower.model["w"])


@pytest.mark.parametrize("name", ["fedinfer-gaussian", "fedavg", "scaffold", "fedlin"])
def test_async_equals_numpy_runner_with_stagger(name):
    algorithm, data = build(name, stagger=STAGGER), classification_data()
    reference = run_async(algorithm, data, stagger=STAGGER, ticks=12, seed=5)
    flower = run_inprocess_async(algorithm, data, stagger=STAGGER, ticks=12, seed=5)
    # FedLin's first update releases once, later ones twice: in flight, the bound counts two
    assert_same_run(flower, reference, times=True, releases_bound=name == "fedlin")
    assert_same_clients(flower, reference)
    # the slow client's replies are stale: staleness is measured through the group id
    assert max(max(r.staleness, default=0) for r in flower.history) >= 10


def test_flower_strategy_start_runs_the_same_rounds():
    data = toy_data(3)
    algorithm = NoisyMean(fraction=0.7)
    grid = InProcessGrid(make_client_app(algorithm, data), num_clients=3,
                         node_config={SIMULATION_SEED: 4})
    strategy = ProtocolStrategy(algorithm, num_clients=3, seed=4)
    result = strategy.start(grid, ArrayRecord(), num_rounds=3, timeout=10)
    reference = run_sync(algorithm, data, rounds=3, seed=4)
    assert_same_run(strategy.result(), reference)
    np.testing.assert_array_equal(result.arrays["mean"].numpy(), reference.model["mean"])


# ------------------------------------------------------------------------ robustness
def corrupt(client_id, round, reply):
    """Faults injected identically into the numpy runner and the Flower grid."""
    metrics = dict(reply.metrics)
    if (client_id, round) == (1, 0):
        return [Reply({"mean": np.array([np.nan, 1.0])}, metrics)]
    if (client_id, round) == (2, 1):
        return [Reply({"mean": np.zeros(3)}, metrics)]
    if (client_id, round) == (0, 1):
        return [reply, reply]
    if (client_id, round) == (3, 2):
        return [Reply(reply.arrays, {**metrics, CLIENT: 0})]
    if (client_id, round) == (1, 2):
        return [Reply({}, metrics)]
    return [reply]


def flower_tamper(protocol_tamper):
    """The same fault on the Flower side: re-encode what the protocol tamper returns."""
    def tamper(client_id, message):
        if group_of(message) is None:  # the identify handshake
            return [message]
        reply = reply_from_flower(message)
        out = []
        for bad in protocol_tamper(client_id, group_of(message)[0], reply):
            copied = copy.deepcopy(message)
            copied.content = RecordDict({
                "arrays": ArrayRecord({k: Array(np.asarray(v)) for k, v in bad.arrays.items()}),
                "metrics": MetricRecord(dict(bad.metrics)),
                "runtime": message.content.metric_records["runtime"]})
            out.append(copied)
        return out
    return tamper


def test_bad_replies_are_rejected_and_logged_like_the_numpy_runner(caplog):
    data = toy_data(4)
    reference = run_sync(NoisyMean(), data, rounds=4, seed=2, network=Network(tamper=corrupt))
    with caplog.at_level(logging.WARNING, logger="privacy.federated"):
        flower = run_inprocess_sync(NoisyMean(), data, rounds=4, seed=2,
                                    tamper=flower_tamper(corrupt))
    assert_same_run(flower, reference)
    reasons = [reason for r in flower.history for _, reason in r.rejected]
    for expected in ("non-finite", "shape (3,)", "duplicate", "claims client 0",
                     "array names"):
        assert any(expected in reason for reason in reasons), expected
        assert expected in caplog.text
    assert flower.history[0].accepted == (0, 2, 3)


def raising_app(app, failing):
    def client_app(message, context):
        if context.node_config["partition-id"] == failing and message.metadata.message_type \
                == "train":
            raise RuntimeError("sensor offline")
        return app(message, context)
    return client_app


def test_a_raising_client_is_rejected_and_others_are_aggregated(caplog):
    data = toy_data(3)
    algorithm = NoisyMean()
    grid = InProcessGrid(raising_app(make_client_app(algorithm, data), 1), num_clients=3,
                         node_config={SIMULATION_SEED: 0})
    from privacy.federated.flower import run_sync_grid

    with caplog.at_level(logging.WARNING, logger="privacy.federated"):
        result = run_sync_grid(algorithm, grid, num_clients=3, rounds=2, seed=0)
    assert all(r.accepted == (0, 2) and r.missing == () for r in result.history)
    assert all("sensor offline" in r.rejected[0][1] for r in result.history)
    # clients 0 and 2 answer both rounds; a client's noise is keyed by its message and state
    # too, so replay both rounds with the server's messages
    states, expected = {0: ClientState(), 2: ClientState()}, np.zeros(2)
    for t in range(2):
        replies = []
        for k in (0, 2):
            message = RoundPlan((k,), {"mean": expected}, {"scale": 1.0}).message_for(
                k, round=t, model_version=t, seed=0)
            reply, states[k] = run_client(algorithm, k, data[k], states[k], message,
                                          secret=simulation_secret(0, k))
            replies.append(reply.arrays["mean"])
        expected = np.mean(replies, axis=0)
    np.testing.assert_array_equal(result.model["mean"], expected)
    assert "sensor offline" in caplog.text


def test_a_silent_node_costs_a_round_its_timeout_and_matches_the_runner():
    data = toy_data(3)
    reference = run_sync(NoisyMean(), data, rounds=3, seed=1,
                         network=Network(drop=[0.0, 1.0, 0.0], timeout=5.0))
    flower = run_inprocess_sync(NoisyMean(), data, rounds=3, seed=1, timeout=5.0, silent=[1])
    assert_same_run(flower, reference, times=True)
    assert [r.missing for r in flower.history] == [(1,)] * 3
    assert [r.time for r in flower.history] == [5.0, 10.0, 15.0]


def test_late_replies_are_rejected_as_stale_in_a_later_round():
    data = toy_data(3)
    reference = run_sync(NoisyMean(), data, rounds=4, seed=3,
                         network=Network(latency=[0.0, 8.0, 0.0], timeout=5.0))
    flower = run_inprocess_sync(NoisyMean(), data, rounds=4, seed=3, timeout=5.0,
                                delays=[0.0, 8.0, 0.0])
    assert_same_run(flower, reference, times=True)
    stale = [reason for r in flower.history for _, reason in r.rejected]
    assert stale and all(reason.startswith("stale reply") for reason in stale)


def test_async_drop_out_is_reissued_after_the_timeout_like_the_runner():
    data = toy_data(3)
    reference = run_async(NoisyMean(), data, stagger=[1, 2, 3], ticks=10, seed=8,
                          network=Network(drop=[0.0, 0.0, 1.0], timeout=4.0))
    flower = run_inprocess_async(NoisyMean(), data, stagger=[1, 2, 3], ticks=10, seed=8,
                                 timeout=4.0, silent=[2])
    assert_same_run(flower, reference, times=True)
    assert 2 not in {k for r in flower.history for k in r.accepted}


def test_async_max_staleness_rejects_old_replies():
    data = toy_data(4)
    reference = run_async(NoisyMean(), data, stagger=STAGGER, ticks=12, seed=5, max_staleness=3)
    flower = run_inprocess_async(NoisyMean(), data, stagger=STAGGER, ticks=12, seed=5,
                                 max_staleness=3)
    assert_same_run(flower, reference)
    assert any("versions old" in reason for r in flower.history for _, reason in r.rejected)


# ------------------------------------------------------------------------ checkpoints
def test_sync_resume_continues_bit_identically(tmp_path):
    data = toy_data(3)
    algorithm = NoisyMean(fraction=0.7)
    full = run_inprocess_sync(algorithm, data, rounds=5, seed=9)
    run_inprocess_sync(algorithm, data, rounds=2, seed=9, checkpoint=tmp_path / "ck",
                       state_dir=tmp_path / "clients")
    resumed = run_inprocess_sync(algorithm, data, rounds=5, resume=tmp_path / "ck",
                                 state_dir=tmp_path / "clients")
    assert_same_run(resumed, full)
    assert_same_clients(resumed, full)
    fresh_clients = run_inprocess_sync(algorithm, data, rounds=5, resume=tmp_path / "ck")
    assert fresh_clients.client_states[0].scalars["sent"] < full.client_states[0].scalars["sent"]


def test_async_resume_resends_the_outstanding_requests(tmp_path):
    data = toy_data(4)
    full = run_inprocess_async(NoisyMean(), data, stagger=STAGGER, ticks=12, seed=6)
    run_inprocess_async(NoisyMean(), data, stagger=STAGGER, ticks=7, seed=6,
                        checkpoint=tmp_path / "ck", state_dir=tmp_path / "clients")
    resumed = run_inprocess_async(NoisyMean(), data, stagger=STAGGER, ticks=12,
                                  resume=tmp_path / "ck", state_dir=tmp_path / "clients")
    assert [r.accepted for r in resumed.history] == [r.accepted for r in full.history]
    # a client had answered its outstanding request before the checkpoint; answering it again
    # from its later state is a new release with noise of its own (keyed by the client's
    # input), counted as such, so the model agrees with the straight run only up to the noise
    assert (resumed.releases() > full.releases()).all()
    np.testing.assert_allclose(resumed.model["mean"], full.model["mean"], atol=NoisyMean().noise)
    with pytest.raises(ParameterError, match="not a synchronous"):
        run_inprocess_sync(NoisyMean(), data, rounds=3, resume=tmp_path / "ck")


def test_client_state_files_round_trip(tmp_path):
    assert load_client_state(tmp_path / "none").empty
    state = ClientState({"c": np.array([[1.0, 2.0]])}, {"dp_releases": 3, "tag": "a"})
    save_client_state(tmp_path / "c0", state)
    back = load_client_state(tmp_path / "c0")
    np.testing.assert_array_equal(back.arrays["c"], state.arrays["c"])
    assert back.scalars == state.scalars


# ------------------------------------------------------------------------ handshake, errors
def test_discovery_maps_partitions_to_arbitrary_node_ids_and_refuses_conflicts():
    data = toy_data(3)
    grid = InProcessGrid(make_client_app(NoisyMean(), data), num_clients=3)
    mapping = discover_clients(grid, 3)
    assert sorted(mapping) == [0, 1, 2] and mapping[0] != 0
    assert {grid.contexts[n].node_config["partition-id"] for n in mapping.values()} == {0, 1, 2}
    with pytest.raises(ParameterError, match="only 3 Flower nodes"):
        discover_clients(grid, 4, timeout=3)
    first = grid.contexts[mapping[0]]
    first.node_config["partition-id"] = 1
    with pytest.raises(ParameterError, match="both claim partition-id 1"):
        discover_clients(grid, 3)
    first.node_config["partition-id"] = 7
    with pytest.raises(ParameterError, match="partition-id 7"):
        discover_clients(grid, 3)


def test_bad_arguments_are_refused_with_clear_errors():
    data = toy_data(2)
    with pytest.raises(ParameterError, match="client_data must"):
        make_client_app(NoisyMean(), 3)
    with pytest.raises(ParameterError, match="algorithm must"):
        make_client_app(42, data)
    grid = InProcessGrid(make_client_app(NoisyMean(), data), num_clients=2)
    with pytest.raises(DimensionError, match="stagger"):
        run_async_grid(NoisyMean(), grid, num_clients=2, ticks=3, stagger=[1, 2, 3])
    with pytest.raises(DimensionError, match="delays"):
        InProcessGrid(make_client_app(NoisyMean(), data), num_clients=2, delays=[1.0])
    with pytest.raises(ParameterError, match="rounds"):
        run_inprocess_sync(NoisyMean(), data, rounds=-1)


def test_task_identity_is_set_only_when_flower_has_not_set_it():
    code = (
        "from flwr.app import Message, RecordDict\n"
        "try:\n    Message(RecordDict(), 5, 'train')\nexcept RuntimeError as e:\n"
        "    print('unset:', e)\n"
        "from flwr.supercore.task_identity import TaskIdentity\n"
        "TaskIdentity.run_id = 42\n"
        "from privacy.federated.flower import ensure_task_identity\n"
        "ensure_task_identity(7)\n"
        "print('run', Message(RecordDict(), 5, 'train').metadata.run_id)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "unset: TaskIdentity.run_id is not set." in out
    assert "run 42" in out


@pytest.mark.parametrize("module", ["app", "inprocess", "sync"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"privacy.federated.flower.{module}"))
    assert result.attempted > 0 and result.failed == 0


def test_server_release_counts_bound_what_clients_released():
    """Late replies never reach the server, but their releases happened: the server's count
    (from reports plus messages in flight) still covers them."""
    from privacy.federated.flower import run_sync_grid

    algorithm, data = build("fedinfer-gaussian"), classification_data()
    grid = InProcessGrid(make_client_app(algorithm, data), num_clients=4,
                         delays=[0.0, 0.0, 0.0, 20.0])
    result = run_sync_grid(algorithm, grid, num_clients=4, rounds=3, timeout=5.0)
    truth = [s.scalars["dp_releases"] for s in grid.client_states()]
    assert truth == [3, 3, 3, 3] and result.releases().tolist() == truth
    assert all(r.missing == (3,) for r in result.history)
    assert np.all(result.final_epsilon() > 0)


def test_privacy_imports_without_flower_and_the_adapter_says_what_to_install():
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'flwr' or name.startswith('flwr.'):\n"
        "            raise ImportError('no flwr here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import privacy, privacy.federated, simulations.studies.federated_experiments\n"
        "print('federated ok')\n"
        "try:\n    import privacy.federated.flower\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "federated ok" in out and "pip install 'dmdidc[federated]'" in out
