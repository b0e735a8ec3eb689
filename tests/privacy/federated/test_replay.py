"""A round number answered twice: new input, new noise; identical input, identical reply.

A client's noise is keyed by (secret, client, round) and by a digest of its input (message and
state, release counter aside).  Keyed by the round alone, a curious server sending one round
number with two models, or a resumed SCAFFOLD client whose ``c_k`` moved on, got two replies
with the same noise: their difference was noise-free (6e-17 left of a 0.3-norm noise) while
the counter counted two releases.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from flwr.app import Context, RecordDict

from privacy.errors import ParameterError
from privacy.federated.algorithm import _input_digest, derive_rng
from privacy.federated.flower import STATE_DIR, ensure_task_identity, make_client_app
from privacy.federated.flower.records import reply_from_flower
from privacy.federated.flower.transport import flower_message
from privacy.federated.gradient import FedAvg, Scaffold
from privacy.federated.protocol import (
    DP_RELEASES,
    ClientState,
    Message,
    RoundPlan,
    new_client_secret,
    run_client,
)

from .test_gradient import _dps, _make, _setup


def _message(w, round=5, **config):
    return RoundPlan((0,), {"w": w}, config).message_for(0, round=round, model_version=round,
                                                         seed=0)


def _models(model):
    return np.zeros(model.weight_shape), np.random.default_rng(1).normal(size=model.weight_shape)


def _assert_independent_noise(noisy, exact):
    """Both replies carry noise of the same size, and their difference still carries noise:
    with the same noise the difference would equal the exact one to rounding (6e-17)."""
    noise = [np.linalg.norm(n["u"] - e["u"]) for n, e in zip(noisy, exact, strict=True)]
    assert min(noise) > 0.1
    left = np.linalg.norm((noisy[0]["u"] - noisy[1]["u"]) - (exact[0]["u"] - exact[1]["u"]))
    # two independent draws: the difference's norm is about sqrt(2) times one noise's
    assert left > 0.5 * min(noise)


def test_same_round_two_models_draws_independent_noise():
    model, data = _setup()
    algo = _make(FedAvg, model, _dps(model, FedAvg), clip=1.0)
    clean = _make(FedAvg, model, None, clip=1.0)
    secret = new_client_secret()
    messages = [_message(w) for w in _models(model)]
    r0, state = run_client(algo, 0, data[0], ClientState(), messages[0], secret=secret)
    r1, state = run_client(algo, 0, data[0], state, messages[1], secret=secret)
    exact = [run_client(clean, 0, data[0], ClientState(), m, secret=1)[0].arrays
             for m in messages]
    _assert_independent_noise([r0.arrays, r1.arrays], exact)
    assert state.scalars[DP_RELEASES] == 2


def test_resumed_scaffold_round_with_moved_state_draws_independent_noise():
    """The server dies after client 0 answered round 0 and re-sends it; the client's c_k has
    moved on (the resume check accepts a client state ahead of the checkpoint)."""
    model, data = _setup()
    algo = _make(Scaffold, model, _dps(model, Scaffold), clip=1.0)
    clean = _make(Scaffold, model, None, clip=1.0)
    secret = new_client_secret()
    plan = algo.configure_round(algo.init_server_state(3, 0), 0, np.random.default_rng(0))
    message = plan.message_for(0, round=0, model_version=0, seed=0)
    s0 = algo.init_client_state(data[0])
    r1, s1 = run_client(algo, 0, data[0], s0, message, secret=secret)
    r2, s2 = run_client(algo, 0, data[0], s1, message, secret=secret)
    assert np.linalg.norm(s1.arrays["c_k"] - s0.arrays["c_k"]) > 0
    exact = [run_client(clean, 0, data[0], s, message, secret=1)[0].arrays for s in (s0, s1)]
    _assert_independent_noise([r1.arrays, r2.arrays], exact)
    assert s2.scalars[DP_RELEASES] == 2


def test_flower_node_answering_one_round_twice_draws_independent_noise(tmp_path):
    model, data = _setup()
    app = make_client_app(_make(FedAvg, model, _dps(model, FedAvg), clip=1.0), data)
    clean = _make(FedAvg, model, None, clip=1.0)
    context = Context(1, 100, {"partition-id": 0, "num-partitions": 3,
                               STATE_DIR: str(tmp_path)}, RecordDict(), {})
    ensure_task_identity(1)
    messages = [_message(w, round=4) for w in _models(model)]
    replies = [reply_from_flower(app(flower_message(m, 100, ttl=None), context)).arrays
               for m in messages]
    exact = [run_client(clean, 0, data[0], ClientState(), m, secret=1)[0].arrays
             for m in messages]
    _assert_independent_noise(replies, exact)


@pytest.mark.parametrize("cls", [FedAvg, Scaffold])
def test_identical_replay_repeats_the_reply_bit_for_bit(cls):
    """Same message, same state (the release counter may have moved on): the same reply, so
    the replay releases nothing new; what resuming a checkpoint twice relies on."""
    model, data = _setup()
    algo = _make(cls, model, _dps(model, cls), clip=1.0)
    secret = new_client_secret()
    plan = algo.configure_round(algo.init_server_state(3, 0), 0, np.random.default_rng(0))
    message = plan.message_for(0, round=5, model_version=5, seed=0)
    state = algo.init_client_state(data[0])
    first, after = run_client(algo, 0, data[0], state, message, secret=secret)
    counted = state.replace(scalars={DP_RELEASES: after.scalars[DP_RELEASES]})
    for again in (state, counted):
        reply, _ = run_client(algo, 0, data[0], again, message, secret=secret)
        for name, value in first.arrays.items():
            np.testing.assert_array_equal(reply.arrays[name], value)


def test_input_digest_is_canonical():
    w = np.arange(6.0).reshape(2, 3)
    data = {"X": np.ones((4, 2)), "y": np.arange(4)}
    base = _input_digest(Message({"w": w, "c": w[0]}, {"a": 1, "b": "x"}),
                         ClientState({"k": w}, {DP_RELEASES: 0}), data)
    # layout, insertion order and the release counter do not matter
    same = _input_digest(Message({"c": w[0].copy(), "w": np.asfortranarray(w)},
                                 {"b": "x", "a": 1}),
                         ClientState({"k": w.T.copy().T}, {DP_RELEASES: 7}),
                         {"y": np.arange(8)[::2] // 2, "X": np.ones((2, 4)).T})
    assert same == base
    changed = [
        Message({"w": w.reshape(3, 2), "c": w[0]}, {"a": 1, "b": "x"}),   # shape
        Message({"w": w, "c": w[0]}, {"a": 1.0, "b": "x"}),               # scalar type
        Message({"w": w, "c": w[0]}, {"a": True, "b": "x"}),
        Message({"w": w, "c": -w[0]}, {"a": 1, "b": "x"}),                # values
        Message({"w": w, "c2": w[0]}, {"a": 1, "b": "x"}),                # name
    ]
    state = ClientState({"k": w}, {DP_RELEASES: 0})
    digests = {_input_digest(m, state, data) for m in changed}
    assert base not in digests and len(digests) == len(changed)
    # the data are in: one record fewer, or one value changed, is another input
    fewer = _input_digest(Message({"w": w, "c": w[0]}, {"a": 1, "b": "x"}), state,
                          {"X": np.ones((3, 2)), "y": np.arange(3)})
    moved = _input_digest(Message({"w": w, "c": w[0]}, {"a": 1, "b": "x"}), state,
                          {"X": np.ones((4, 2)), "y": np.arange(4) + [0, 0, 0, 1]})
    # integers hash exactly, not through float64 (2**53 and 2**53 + 1 met there), and apart
    # from floats of the same values
    big = [_input_digest(Message({"w": w, "c": w[0]}, {"a": 1, "b": "x"}), state,
                         {"X": np.ones((4, 2)), "y": np.array([2 ** 53 + k])}) for k in (0, 1)]
    floats = _input_digest(Message({"w": w, "c": w[0]}, {"a": 1, "b": "x"}), state,
                           {"X": np.ones((4, 2)), "y": np.arange(4.0)})
    assert len({base, fewer, moved, floats, *big}) == 6
    with pytest.raises(ParameterError, match=r"data\['z'\] holds complex128"):
        _input_digest(changed[0], state, {"z": np.ones(2) + 1j})
    assert _input_digest(changed[0], ClientState({"k": w + 1}, {}), data) not in digests


def test_input_digest_is_the_same_in_another_process():
    code = ("import numpy as np\n"
            "from privacy.federated.algorithm import _input_digest\n"
            "from privacy.federated.protocol import ClientState, Message\n"
            "w = np.linspace(-1, 1, 12).reshape(3, 4)\n"
            "print(_input_digest(Message({'w': w}, {'lr': 0.1, 'n': 3}),"
            " ClientState({'c': w.T}, {'t': 'a'}), {'X': [w, w[:1]]}).hex())\n")
    w = np.linspace(-1, 1, 12).reshape(3, 4)
    here = _input_digest(Message({"w": w}, {"lr": 0.1, "n": 3}),
                         ClientState({"c": w.T}, {"t": "a"}), {"X": [w, w[:1]]}).hex()
    env = {"PYTHONPATH": str(Path(__file__).parents[3]), "PYTHONHASHSEED": "123",
           "OPENBLAS_NUM_THREADS": "1"}
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env=env).stdout.strip()
    assert there == here


@pytest.mark.parametrize("digest", [b"abc", "abcd", None])
def test_a_bad_digest_is_refused_by_name(digest):
    with pytest.raises(ParameterError, match="digest must be bytes of a length divisible by 4"):
        derive_rng(1, "client", 0, 0, digest=digest)


def test_a_replay_after_the_data_changed_draws_new_noise():
    """Trial: a message replayed on the client's data less one record drew the same noise, so
    the replies' difference was the noise-free difference of the updates (to 7e-18): one
    record's clipped contribution revealed while two releases were accounted."""
    model, data = _setup()
    algo = _make(FedAvg, model, _dps(model, FedAvg), clip=1.0)
    plan = algo.configure_round(algo.init_server_state(3, 0), 0, None)
    message = plan.message_for(0, round=0, model_version=0, seed=0)
    secret = new_client_secret()
    full = data[0]
    fewer = {"X": full["X"][:-1], "y": full["y"][:-1]}
    first, state = run_client(algo, 0, full, ClientState(), message, secret=secret)
    second, _ = run_client(algo, 0, fewer, state, message, secret=secret)
    zero = np.zeros(model.weight_shape)
    true = (algo._local_descent(full, algo._w(message.arrays), zero, 0)
            - algo._local_descent(fewer, algo._w(message.arrays), zero, 0))
    released = first.arrays["u"] - second.arrays["u"]
    scale = algo.dps[0].scale
    assert np.max(np.abs(released - true)) > 0.1 * scale     # independent noise, not cancelled
    again, _ = run_client(algo, 0, full, ClientState(), message, secret=secret)
    np.testing.assert_array_equal(again.arrays["u"], first.arrays["u"])   # identical replay
