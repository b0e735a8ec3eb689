"""A server one client cannot ruin: declared reply bounds, dtype screening, robust aggregation,
re-asking rejected asynchronous clients (issue 20 item 4), and vectorized validation (issue 21)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from privacy.errors import ParameterError
from privacy.federated.fedinfer import FedInfer
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
from privacy.federated.poisoning import poison, poisoning_tamper
from privacy.federated.protocol import CLIENT, ROUND, VERSION, Reply
from privacy.federated.robust import combine
from privacy.federated.runner import Network, run_async, run_sync
from privacy.federated.validation import ReplyBound, validate_replies, validate_reply


@pytest.fixture(autouse=True)
def _quiet(caplog):
    caplog.set_level(logging.ERROR, logger="privacy.federated")


def _problem(clients: int, seed: int):
    rng = np.random.default_rng(seed)
    shift = rng.uniform(0.5, 1.5)
    X = np.vstack([rng.normal(-shift, 1, (90, 2)), rng.normal(shift, 1, (90, 2))])
    y = np.repeat([0, 1], 90)
    parts = np.array_split(rng.permutation(len(y)), clients)
    features = KernelFeatures.random(low=[-3, -3], high=[3, 3], count=3, rng=seed + 1)
    model = LeastSquaresModel(features, num_classes=2, feature_bound=3.0, total_samples=len(y),
                              ridge=0.05)
    return [{"X": X[p], "y": y[p]} for p in parts], model, [len(p) for p in parts]


def _fedavg(model, samples, dp=None, **options):
    return FedAvg(model, dp, samples=samples, lr=0.1, local_steps=3, **options)


def _rejections(result):
    return [reason for record in result.history for _, reason in record.rejected]


def _relative(w, honest):
    return np.linalg.norm(w - honest) / np.linalg.norm(honest)


# ----------------------------------------------------------------------- the reported failures
@pytest.mark.parametrize("attack", ["x1e200", "huge"])
def test_huge_finite_replies_are_rejected_and_the_model_stays_finite(attack):
    data, model, samples = _problem(3, 0)

    def tamper(client, round, reply):
        if client != 1:
            return [reply]
        if attack == "huge":
            return [Reply({"u": np.full(model.weight_shape, 1e308)}, reply.metrics)]
        return [poison(reply, attack)]
    result = run_sync(_fedavg(model, samples), data, rounds=3, network=Network(tamper=tamper))
    assert np.all(np.isfinite(result.model["w"]))
    assert [r.accepted for r in result.history] == [(0, 2)] * 3
    assert all("declared bound" in reason for reason in _rejections(result))


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16, bool])
def test_integer_and_boolean_replies_are_rejected_with_their_dtype(dtype):
    data, model, samples = _problem(3, 1)
    def tamper(k, t, r):
        return ([Reply({"u": np.ones(model.weight_shape, dtype=dtype)}, r.metrics)]
                  if k == 0 else [r])
    result = run_sync(_fedavg(model, samples), data, rounds=2, network=Network(tamper=tamper))
    reasons = _rejections(result)
    assert len(reasons) == 2 and all("floating point" in r and "dtype" in r for r in reasons)


def test_the_undefended_server_is_ruined_and_the_screened_one_is_not():
    data, model, samples = _problem(3, 2)
    network = Network(tamper=poisoning_tamper("x1e200", [0]))
    honest = run_sync(_fedavg(model, samples), data, rounds=3).model["w"]
    with np.errstate(all="ignore"):
        ruined = run_sync(_fedavg(model, samples), data, rounds=3, network=network, screen=False)
        assert not _relative(ruined.model["w"], honest) < 1e100   # what issue 20 reported
    kept = run_sync(_fedavg(model, samples), data, rounds=3, network=network)
    assert np.all(np.isfinite(kept.model["w"])) and _relative(kept.model["w"], honest) < 1.0


def test_async_fedinfer_rejects_a_block_times_1000():
    data, model, _ = _problem(3, 3)
    honest = run_async(FedInfer(model, None, num_clients=3), data, stagger=[1, 1, 1], ticks=6)
    attacked = run_async(FedInfer(model, None, num_clients=3), data, stagger=[1, 1, 1], ticks=6,
                         network=Network(tamper=poisoning_tamper("x1000", [0])))
    assert all("declared box" in r for r in _rejections(attacked)) and _rejections(attacked)
    assert _relative(attacked.model["w"], honest.model["w"]) < 1.0


def test_a_rejected_async_client_is_asked_again_without_a_timeout():
    data, model, samples = _problem(3, 4)
    def first(k, t, r):
        return ([Reply({"u": np.full(model.weight_shape, np.nan)}, r.metrics)]
                 if (k, t) == (0, 0) else [r])
    result = run_async(_fedavg(model, samples), data, stagger=[1, 1, 1], ticks=4,
                       network=Network(tamper=first))   # default timeout: infinite
    assert result.history[0].rejected[0][0] == 0
    assert [r.accepted.count(0) for r in result.history[1:]] == [1, 1, 1]


# ----------------------------------------------------------------------- acceptance (issue 20)
@pytest.mark.parametrize("attack", ["x1000", "x1e200", "integer"])
@pytest.mark.parametrize("seed", range(3))
def test_one_client_in_three_cannot_move_fedavg_or_fedinfer_far(attack, seed):
    data, model, samples = _problem(3, seed)
    network = Network(tamper=poisoning_tamper(attack, [seed % 3]))
    runs = {
        "fedavg": lambda net: run_sync(_fedavg(model, samples), data, rounds=6, network=net),
        "fedinfer": lambda net: run_sync(FedInfer(model, None, num_clients=3, partial="cycle"),
                                         data, rounds=6, network=net),
        "fedinfer-async": lambda net: run_async(FedInfer(model, None, num_clients=3), data,
                                                stagger=[1, 1, 1], ticks=6, network=net)}
    for name, run in runs.items():
        honest, attacked = run(Network()).model["w"], run(network).model["w"]
        assert np.all(np.isfinite(attacked)), name
        assert _relative(attacked, honest) < 1.0, name


def test_fedinfer_skip_stalls_but_is_never_moved():
    data, model, _ = _problem(3, 5)
    fed = FedInfer(model, None, num_clients=3)
    attacked = run_sync(fed, data, rounds=3, network=Network(tamper=poisoning_tamper("x1000",
                                                                                     [2])))
    prior = fed.model(fed.init_server_state(3, 0))["w"]
    np.testing.assert_array_equal(attacked.model["w"], prior)


# ----------------------------------------------------------------------- no false alarms
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("seed", range(4))
def test_honest_private_runs_raise_no_false_alarm(noise, seed):
    data, model, samples = _problem(4, 10 + seed)
    d = model.weight_shape[0] * model.weight_shape[1]
    norm = "l2" if noise == "gaussian" else "l1"
    dps = [LocalDP(noise, 0.05, update_sensitivity(model, 1.0, n, norm), dimension=d)
           for n in samples]
    for algorithm in (_fedavg(model, samples, dps), FedProx(model, dps, samples=samples, lr=0.1),
                      FedNova(model, dps, samples=samples, lr=0.1, local_steps=[1, 2, 3, 4]),
                      FedLin(model, dps, samples=samples, lr=0.05, local_steps=2)):
        assert _rejections(run_sync(algorithm, data, rounds=4, seed=seed)) == []
    block = LocalDP(noise, 0.01, model.block_sensitivity(norm), dimension=model.block_dimension)
    fed = FedInfer(model, block, num_clients=4)
    assert _rejections(run_sync(fed, data, rounds=4, seed=seed)) == []
    assert _rejections(run_async(fed, data, stagger=[1, 2, 1, 2], ticks=4, seed=seed)) == []


def test_declared_bounds_hold_the_clean_values_tightly():
    """Honest noise-free replies lie inside their bound, and x1000 of them outside it."""
    data, model, samples = _problem(3, 6)
    for algorithm in (_fedavg(model, samples), FedProx(model, None, samples=samples, lr=0.1,
                                                       mu=0.5, local_steps=4)):
        result = run_sync(algorithm, data, rounds=3)
        state = result.state
        for k in range(3):
            radius = algorithm.reply_bounds(state, k)["u"].radius
            assert np.isfinite(radius) and radius < 1e3 * 0.9 * model.feature_bound


# ----------------------------------------------------------------------- robust aggregation
@pytest.mark.parametrize(("robust", "attack"), [("median", "flip"), ("trimmed", "flip"),
                                               ("norm", "x1000")])
def test_robust_rules_resist_attacks_inside_the_screen_and_agree_when_honest(robust, attack):
    """Median and trimmed mean against flipped updates (which pass every bound); norm bounding
    against scaled updates on an unscreened server."""
    closer = 0
    for seed in range(4):
        data, model, samples = _problem(10, 20 + seed)
        honest = run_sync(_fedavg(model, samples), data, rounds=6).model["w"]
        robust_honest = run_sync(_fedavg(model, samples, robust=robust), data, rounds=6)
        assert _relative(robust_honest.model["w"], honest) < 0.3   # no attack: near the mean
        net = Network(tamper=poisoning_tamper(attack, [0, 1]))
        mean = run_sync(_fedavg(model, samples), data, rounds=6, network=net,
                        screen=False).model["w"]
        rob = run_sync(_fedavg(model, samples, robust=robust, trim=0.2), data, rounds=6,
                       network=net, screen=False).model["w"]
        closer += _relative(rob, honest) < _relative(mean, honest)
    assert closer >= 3


def test_combine_mean_equals_the_weighted_average_and_median_ignores_outliers():
    rng = np.random.default_rng(0)
    for _ in range(20):
        values = rng.normal(size=(7, 3, 2))
        weights = rng.dirichlet(np.ones(7))
        np.testing.assert_allclose(combine(values, weights, None),
                                   np.einsum("k,kij->ij", weights, values))
        bad = values.copy()
        bad[:3] = 1e12
        assert np.all(np.abs(combine(bad, weights, "median")) < 1e3)
        assert np.all(np.abs(combine(bad, weights, "trimmed", trim=0.45)) < 1e3)


def test_refused_combinations_are_loud():
    data, model, samples = _problem(3, 7)
    for robust in ("median", "trimmed", "norm"):
        with pytest.raises(ParameterError, match="posterior"):
            FedInfer(model, None, num_clients=3, robust=robust)
        with pytest.raises(ParameterError, match="asynchronous"):
            run_async(_fedavg(model, samples, robust=robust), data, stagger=[1, 1, 1], ticks=1)
    with pytest.raises(ParameterError, match="robust must be"):
        _fedavg(model, samples, robust="mean")
    with pytest.raises(ParameterError, match="trim"):
        Scaffold(model, None, samples=samples, lr=0.1, robust="trimmed", trim=0.5)
    with pytest.raises(ParameterError, match="partial"):
        FedInfer(model, None, num_clients=3, partial="drop")
    with pytest.raises(ParameterError, match="attack"):
        poisoning_tamper("x10", [0])


# ----------------------------------------------------------------------- vectorized validation
def _random_reply(rng, k):
    metrics = {CLIENT: k, ROUND: 1, VERSION: 1}
    kind = rng.integers(10)
    value = rng.normal(size=(2, 3))
    if kind == 0:
        value[rng.integers(2), rng.integers(3)] = np.nan
    elif kind == 1:
        value = value * 1e200
    elif kind == 2:
        value = value.astype(np.int32)
    elif kind == 3:
        value = value[:1]
    elif kind == 4:
        metrics[ROUND] = 0
    elif kind == 5:
        return Reply({"v": value}, metrics)
    elif kind == 6:
        return "unreadable"
    elif kind == 7:
        value = value * 3.0
    return Reply({"u": value}, metrics)


@pytest.mark.parametrize("seed", range(10))
def test_vectorized_validation_equals_judging_one_by_one(seed):
    rng = np.random.default_rng(seed)
    n = 40
    clients = rng.integers(0, 30, size=n)
    replies = [(int(k), _random_reply(rng, int(k))) for k in clients]
    replies += [replies[i] for i in rng.integers(0, n, size=5)]   # duplicates
    bounds = {k: {"u": ReplyBound(-4.0, 4.0, radius=float(rng.uniform(3, 8)))} for k in
              range(30)}
    seen_batch, seen_one = set(), set()
    batch = validate_replies(replies, lambda k: {"u": (2, 3)}, bounds.get, expected_round=1,
                             seen=seen_batch)
    one = [validate_reply(r, {"u": (2, 3)}, client_id=k, expected_round=1, seen=seen_one,
                          bounds=bounds[k]) for k, r in replies]
    assert batch == one and seen_batch == seen_one
    assert any(r is None for r in one) and any(r is not None for r in one)


@pytest.mark.parametrize("box", ["finite", "upper only", "none"])
@pytest.mark.parametrize("seed", range(6))
def test_one_bad_reply_in_an_honest_round_is_found_as_one_by_one(seed, box):
    # the whole-round passes skip the finiteness pass when a finite box is declared (the box
    # test fails on NaN and infinity) and read the arrays by name: one spoiled reply among
    # honest ones (a non-finite entry, an array under another name) must still be rejected
    # with the reason of judging it alone, and the honest ones accepted
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    replies = [(k, Reply({"u": rng.normal(size=(2, 3))}, {CLIENT: k, ROUND: 1, VERSION: 0}))
               for k in range(n)]
    spec = {"u": (2, 3)}
    bound = {"finite": {"u": ReplyBound(-10.0, 10.0)}, "none": None,
             "upper only": {"u": ReplyBound(high=10.0)}}[box]
    bad = int(rng.integers(n))
    metrics = replies[bad][1].metrics
    for spoiled in (np.nan, np.inf, -np.inf, "name"):
        if spoiled == "name":
            reply = Reply({"v": np.zeros((2, 3))}, metrics)
        else:
            value = replies[bad][1].arrays["u"].copy()
            value[rng.integers(2), rng.integers(3)] = spoiled
            reply = Reply({"u": value}, metrics)
        round_ = replies[:bad] + [(bad, reply)] + replies[bad + 1:]
        stacks = {}
        batch = validate_replies(round_, lambda k: spec, lambda k: bound, expected_round=1,
                                 stacks=stacks)
        one = [validate_reply(r, spec, client_id=k, expected_round=1, bounds=bound)
               for k, r in round_]
        assert batch == one and stacks == {}
        assert batch[bad] is not None and batch.count(None) == n - 1
    assert validate_replies(replies, lambda k: spec, lambda k: bound,
                            expected_round=1) == [None] * n


@pytest.mark.parametrize("seed", range(10))
def test_bound_holds_exactly_when_no_row_breaks_it(seed):
    # the honest round's fast test (column extremes) agrees with the per-row reasons
    rng = np.random.default_rng(seed)
    stack = rng.normal(size=(int(rng.integers(1, 50)), 2, 3))
    low = -rng.uniform(2.0, 4.0, size=(2, 3)) if seed % 2 else -3.0
    bound = ReplyBound(low, rng.uniform(2.0, 4.0), radius=float(rng.uniform(3.0, 6.0))
                       if seed % 3 else np.inf)
    for rows in (stack, stack[:1], stack * 0.1):
        assert bound.holds(rows) == (not any(bound.reasons("u", rows)))
    assert bound.holds(stack[:0])


def test_an_all_valid_round_hands_its_stacks_on():
    rng = np.random.default_rng(3)
    replies = [(k, Reply({"u": rng.normal(size=(2, 3))}, {CLIENT: k, ROUND: 1, VERSION: 0}))
               for k in range(20)]
    spec, bound = {"u": (2, 3)}, {"u": ReplyBound(-10.0, 10.0)}
    stacks = {}
    assert validate_replies(replies, lambda k: spec, lambda k: bound, expected_round=1,
                            stacks=stacks) == [None] * 20
    np.testing.assert_array_equal(stacks["u"], [r.arrays["u"] for _, r in replies])
    bad = replies[:5] + [(5, Reply({"u": np.full((2, 3), 11.0)}, replies[5][1].metrics))]
    stacks = {}
    reasons = validate_replies(bad, lambda k: spec, lambda k: bound, expected_round=1,
                               stacks=stacks)
    assert reasons[:5] == [None] * 5 and "declared box" in reasons[5] and stacks == {}
    ragged = replies[:2] + [(2, Reply({"u": np.zeros((3, 2))}, replies[2][1].metrics))]
    stacks = {}
    reasons = validate_replies(ragged, lambda k: spec, expected_round=1, stacks=stacks)
    assert reasons[:2] == [None] * 2 and "shape" in reasons[2] and stacks == {}


def _spoiled(kind, reply, rng):
    """``reply`` (client k, round 1) spoiled one way; the second value: a reply to add after it."""
    arrays, metrics = reply.arrays, reply.metrics
    value = arrays["u"].copy()
    if kind in ("nan", "inf"):
        value[rng.integers(2), rng.integers(3)] = np.nan if kind == "nan" else -np.inf
        return Reply({"u": value}, metrics), None
    if kind == "outside box":
        value[rng.integers(2), rng.integers(3)] = 10.5 * rng.choice([-1, 1])
        return Reply({"u": value}, metrics), None
    if kind == "outside ball":   # inside the box, outside the l2 ball
        return Reply({"u": np.full((2, 3), 4.0)}, metrics), None
    if kind in ("stale round", "future round"):
        return Reply(arrays, {**metrics, ROUND: 0 if kind == "stale round" else 2}), None
    if kind == "duplicate":
        return reply, reply
    if kind in ("int32", "bool"):
        return Reply({"u": value.astype(kind)}, metrics), None
    if kind == "abstain with arrays":
        return Reply(arrays, {**metrics, "abstain": 1}), None
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["nan", "inf", "outside box", "outside ball", "stale round",
                                  "future round", "duplicate", "int32", "bool",
                                  "abstain with arrays"])
@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_one_bad_reply_anywhere_gets_the_reasons_of_judging_one_by_one(kind, shared, seed):
    # the whole-round test (one spec and bound for the round, or one per client; the box
    # and finiteness on the column extremes) must hand a round with one bad reply, wherever it
    # is, to the reply-by-reply judgement: exactly the verdicts of judging each reply alone
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    replies = [(k, Reply({"u": rng.normal(size=(2, 3))}, {CLIENT: k, ROUND: 1, VERSION: 0}))
               for k in range(n)]
    spec, bound = {"u": (2, 3)}, {"u": ReplyBound(-10.0, 10.0, radius=9.0)}
    for bad in sorted({0, n - 1, int(rng.integers(n))}):
        reply, extra = _spoiled(kind, replies[bad][1], rng)
        round_ = replies[:bad] + [(bad, reply)] + ([(bad, extra)] if extra else [])
        round_ += replies[bad + 1:]
        stacks = {}
        batch = validate_replies(round_, spec if shared else (lambda k: spec),
                                 bound if shared else (lambda k: bound), expected_round=1,
                                 stacks=stacks)
        seen = set()
        one = [validate_reply(r, spec, client_id=k, expected_round=1, bounds=bound, seen=seen)
               for k, r in round_]
        assert batch == one and stacks == {}
        assert batch.count(None) == len(round_) - 1
        assert batch[bad + (extra is not None)] is not None
    stacks = {}
    assert validate_replies(replies, spec, bound, expected_round=1, stacks=stacks) == [None] * n
    np.testing.assert_array_equal(stacks["u"], [r.arrays["u"] for _, r in replies])


@pytest.mark.parametrize("n", [1, 2, 19, 20, 21, 1000, 1001])
@pytest.mark.parametrize("shape", [(), (1,), (3, 4), (100,), (3000,)])
def test_column_extremes_are_numpys_and_show_nan(n, shape):
    from privacy.federated.validation import _column_extremes
    rng = np.random.default_rng(n)
    stack = rng.normal(size=(n, *shape))
    low, high = _column_extremes(stack)
    assert np.array_equal(low, stack.min(axis=0)) and np.array_equal(high, stack.max(axis=0))
    if stack.size:
        spoiled = stack.copy()
        spoiled.reshape(-1)[rng.integers(stack.size)] = np.nan
        low, high = _column_extremes(spoiled)
        assert np.isnan(low).sum() == np.isnan(high).sum() == 1
        assert not ReplyBound().holds(spoiled)


def test_fedinfer_shares_its_reply_spec_and_bounds():
    _, model, _ = _problem(3, 0)
    algorithm = FedInfer(model, LocalDP("gaussian", 0.1, model.block_sensitivity("l2"),
                                        dimension=model.block_dimension), num_clients=3)
    state = algorithm.init_server_state(3, 0)
    for k in range(3):
        assert algorithm.shared_reply_spec(state) == algorithm.reply_spec(state, k)
        assert algorithm.shared_reply_bounds(state) == algorithm.reply_bounds(state, k)
