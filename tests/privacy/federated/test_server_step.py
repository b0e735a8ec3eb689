"""The one server step every runtime runs: planning, judging, aggregation, records."""

from __future__ import annotations

import doctest
import logging

import numpy as np
import pytest

from privacy.errors import DimensionError, ParameterError
from privacy.federated import results, server_step
from privacy.federated.protocol import (
    ABSTAIN,
    CLIENT,
    ROUND,
    VERSION,
    Reply,
    run_client,
    simulation_secret,
)
from privacy.federated.server_step import ServerStep, Verdict, check_stagger
from privacy.federated.validation import ReplyBound
from privacy.federated.values import ClientState, RoundPlan
from tests.privacy.federated.toy import NoisyMean, toy_data


@pytest.mark.parametrize("module", [server_step, results])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def _replies(step, messages, data):
    return {k: run_client(step.algorithm, k, data[k], ClientState(), m,
                         secret=simulation_secret(0, k))[0] for k, m in messages}


def test_sync_round_judges_aggregates_and_records(caplog):
    data = toy_data(3)
    step = ServerStep.start(NoisyMean(noise=0.0), num_clients=3, seed=1)
    messages = step.open_round(0)
    assert [k for k, _ in messages] == [0, 1, 2] == list(step.selected)
    assert all(m.round == 0 and m.model_version == 0 and m.seed == 1 for _, m in messages)
    replies = _replies(step, messages, data)
    abstain = Reply({}, {CLIENT: 2, ROUND: 0, VERSION: 0, ABSTAIN: 1})
    received = [(1, replies[1]), (0, replies[0]), (0, replies[0]), (2, abstain),
                (-1, "reply from unknown node 9")]
    with caplog.at_level(logging.WARNING, logger="privacy.federated"):
        record = step.close_round(received, missing=(), time=2.5, releases=(1, 1, 0))
    assert record.accepted == (0, 1) and record.version == 1 and record.time == 2.5
    assert [k for k, _ in record.rejected] == [0, -1]
    assert "duplicate" in record.rejected[0][1] and record.releases == (1, 1, 0)
    assert sum("rejected reply" in m for m in caplog.messages) == 2
    expected = np.mean([data[0]["x"].mean(axis=0), data[1]["x"].mean(axis=0)], axis=0)
    np.testing.assert_allclose(step.model()["mean"], expected)
    assert step.model() is step.model() and step.history == [record]


def test_sync_round_below_min_replies_keeps_the_state(caplog):
    data = toy_data(3)
    step = ServerStep.start(NoisyMean(), num_clients=3, seed=0, min_replies=2,
                            evaluate=lambda model: {"norm": float(np.abs(model["mean"]).sum())})
    messages = step.open_round(0)
    replies = _replies(step, messages, data)
    before = step.state
    with caplog.at_level(logging.WARNING, logger="privacy.federated"):
        record = step.close_round([(0, replies[0])], missing=(1, 2), time=1.0, releases=())
    assert step.state is before and record.accepted == (0,) and record.missing == (1, 2)
    assert record.metrics == {"norm": 0.0}
    assert "min_replies=2" in caplog.text and "no reply within the timeout" in caplog.text


def test_sync_rejects_replies_of_clients_not_asked():
    class Half(NoisyMean):
        def configure_round(self, state, round, rng):
            return RoundPlan((0,), {"mean": state.arrays["mean"]})
    data = toy_data(2)
    step = ServerStep.start(Half(), num_clients=2, seed=0)
    step.open_round(0)
    plan = RoundPlan((1,), {"mean": np.zeros(2)})
    intruder, _ = run_client(step.algorithm, 1, data[1], ClientState(),
                             plan.message_for(1, round=0, model_version=0, seed=0),
                             secret=simulation_secret(0, 1))
    record = step.close_round([(1, intruder)], missing=(0,), time=1.0, releases=())
    assert record.rejected == ((1, "client 1 was not selected in round 0"),)


def test_async_replies_are_applied_in_order_with_their_staleness():
    data = toy_data(2)
    step = ServerStep.start(NoisyMean(noise=0.0), num_clients=2, seed=0, max_staleness=1)
    first = {k: step.request(k) for k in range(2)}
    assert step.requests == [1, 1] and step.outstanding == [0, 0]
    replies = {k: run_client(step.algorithm, k, data[k], ClientState(), m,
                             secret=simulation_secret(0, k))[0] for k, m in first.items()}
    step.open_tick(1)
    assert step.receive(0, replies[0]) is Verdict.APPLIED
    assert step.outstanding == [None, 0]
    assert step.receive(0, replies[0]) is Verdict.REJECTED          # nothing outstanding
    assert step.receive(1, "client error (Flower code 0): boom") is Verdict.REJECTED
    assert step.receive(1, replies[1]) is Verdict.APPLIED           # one version old
    record = step.close_tick(time=1.0, releases=(1, 1))
    assert record.accepted == (0, 1) and record.staleness == (0, 1) and record.version == 2
    assert "unsolicited" in record.rejected[0][1] and "boom" in record.rejected[1][1]
    message = step.request(1)
    assert message.round == 1 and message.model_version == 2
    assert step.awaits(1, 1) and not step.awaits(1, 0)


def test_async_abstaining_clients_are_retired_and_timeouts_reissue(caplog):
    step = ServerStep.start(NoisyMean(), num_clients=2, seed=0)
    step.request(0)
    step.request(1)
    step.open_tick(1)
    abstain = Reply({}, {CLIENT: 0, ROUND: 0, VERSION: 0, ABSTAIN: 1})
    assert step.receive(0, abstain) is Verdict.ABSTAINED
    assert step.retired == {0} and not step.awaits(0, 0)
    with caplog.at_level(logging.WARNING, logger="privacy.federated"):
        again = step.reissue(1, 1)
    assert again.round == 1 and step.outstanding[1] == 1 and "re-issuing" in caplog.text
    assert step.close_tick(time=1.0, releases=()).accepted == ()


def test_misuse_and_bad_arguments_are_refused():
    step = ServerStep.start(NoisyMean(), num_clients=2, seed=0)
    with pytest.raises(ParameterError, match="open_round"):
        step.close_round([], missing=(), time=0.0, releases=())
    with pytest.raises(ParameterError, match="open_tick"):
        step.receive(0, "junk")

    class Wild(NoisyMean):
        def configure_round(self, state, round, rng):
            return RoundPlan((0, 5))
    with pytest.raises(ParameterError, match="selected clients \\[5\\]"):
        ServerStep.start(Wild(), num_clients=2, seed=0).open_round(0)
    with pytest.raises(DimensionError, match="is for 2 clients"):
        ServerStep.resume(NoisyMean(), step.state, [], num_clients=3, source="ck")
    with pytest.raises(ParameterError, match="min_replies"):
        ServerStep.start(NoisyMean(), num_clients=2, seed=0, min_replies=0)
    assert check_stagger([1, 2], 2) == [1, 2]
    with pytest.raises(DimensionError, match="one integer rate per client"):
        check_stagger([1, 2], 3)
    with pytest.raises(ParameterError, match="stagger\\[1\\]"):
        check_stagger([1, 0], 2)


class _Screened(NoisyMean):
    """Rejects, through its own screen, every reply whose first coordinate is negative."""

    def screen_reply(self, state, client_id, reply):
        value = reply.arrays["mean"][0]
        return f"first coordinate {value:.3g} < 0" if value < 0 else None


def test_the_algorithms_own_screen_rejects_valid_replies_sync_and_async():
    """``screen_reply`` is asked about every reply that passed the form checks (sync round,
    the whole-round fast path included, and async receive); a reason rejects it with a record
    and the aggregate is that of the others; ``screen=False`` skips it."""
    data = toy_data(4)
    data[2]["x"] = -np.abs(data[2]["x"]) - 1.0            # client 2's mean is negative
    for screen in (True, False):
        step = ServerStep.start(_Screened(noise=0.0), num_clients=4, seed=0, screen=screen)
        replies = _replies(step, step.open_round(0), data)
        record = step.close_round(sorted(replies.items()), missing=(), time=1.0, releases=())
        kept = [0, 1, 3] if screen else [0, 1, 2, 3]
        assert record.accepted == tuple(kept)
        assert ([k for k, _ in record.rejected] == [2]) == screen
        expected = np.mean([data[k]["x"].mean(axis=0) for k in kept], axis=0)
        np.testing.assert_allclose(step.model()["mean"], expected)
    step = ServerStep.start(_Screened(noise=0.0), num_clients=4, seed=0)
    messages = {k: step.request(k) for k in (1, 2)}
    step.open_tick(1)
    answers = {k: run_client(step.algorithm, k, data[k], ClientState(), m,
                             secret=simulation_secret(0, k))[0] for k, m in messages.items()}
    assert step.receive(2, answers[2]) is Verdict.RETRY     # rejected: asked again
    assert step.receive(1, answers[1]) is Verdict.APPLIED
    record = step.close_tick(time=1.0, releases=())
    assert record.accepted == (1,) and "first coordinate" in record.rejected[0][1]


class _Declared(NoisyMean):
    """Client 1's bound is tighter than the others' unless the round-wide bound is declared."""

    def __init__(self, shared, **options):
        super().__init__(**options)
        self.shared = shared

    def reply_bounds(self, state, client_id):
        return {"mean": ReplyBound(-1e-3, 1e-3) if client_id == 1 else ReplyBound()}

    def shared_reply_spec(self, state):
        return self.reply_spec(state, 0)

    def shared_reply_bounds(self, state):
        return {"mean": ReplyBound(-1e6, 1e6)} if self.shared else None


def test_round_wide_declarations_replace_the_per_client_calls_unless_none():
    """``shared_reply_bounds`` (when not ``None``) is the bound of every reply of the round;
    ``None`` leaves each client's ``reply_bounds``, which the round still applies."""
    data = toy_data(3)
    for shared in (True, False):
        step = ServerStep.start(_Declared(shared, noise=0.0), num_clients=3, seed=0)
        replies = _replies(step, step.open_round(0), data)
        record = step.close_round(sorted(replies.items()), missing=(), time=1.0, releases=())
        assert record.accepted == ((0, 1, 2) if shared else (0, 2))
        assert shared or "declared box" in record.rejected[0][1]
