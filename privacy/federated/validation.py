"""Reply validation: why a reply from a client must be rejected, before it reaches the algorithm.

Every runtime passes every reply through :func:`validate_replies` (a whole synchronous round at
once) or :func:`validate_reply` (one asynchronous reply), via
:class:`privacy.federated.server_step.ServerStep`, and never hands a rejected one to
``aggregate`` / ``apply_reply``; the reason is logged to the ``privacy.federated`` logger and
kept in the round's record.

Besides the form of a reply (header, names, shapes, finiteness) the server *screens* its
values: an array must be floating point (an integer or boolean array is no noisy release) and
lie within the :class:`ReplyBound` its algorithm declares (``algorithm.reply_bounds(state,
client_id)``): what an honest client's clipped value can be, widened by what its release noise
exceeds only with probability :data:`FALSE_ALARM` per reply.  A reply outside it is rejected,
not clipped, so an honest round is never altered and a poisoned value never enters the model.
(:func:`noise_allowance` is that widening for one release's noise law.)  An algorithm whose
honest values depend on what the reply itself reports (e.g. its public sample counts) or obey
a structure no box can state (a Gram matrix is positive semidefinite) also screens each reply
that passed with its ``screen_reply(state, client_id, reply)`` (reason or ``None``).
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privacy.federated.values import ABSTAIN, CLIENT, ROUND, VERSION, Reply

__all__ = ["FALSE_ALARM", "ReplyBound", "StackedReplies", "noise_allowance", "stacked",
           "validate_reply", "validate_replies"]

#: Probability that an honest reply's noise carries it outside its declared bound (per reply).
FALSE_ALARM = 1e-12

Spec = Mapping[str, tuple[int, ...]]
Bounds = Mapping[str, "ReplyBound"]


def noise_allowance(law: Any, dimension: int, false_alarm: float = FALSE_ALARM) -> float:
    """How far one release's noise reaches on any of its ``dimension`` coordinates, except with
    probability ``false_alarm``: the tail bound of its per-coordinate law ``law`` (a
    :class:`privacy.noise.NoiseLaw`, ``mechanism.noise``) at ``false_alarm / (2 dimension)``
    (a union bound over the coordinates and both signs).

    Examples
    --------
    >>> from privacy.noise import GaussianNoise
    >>> t = noise_allowance(GaussianNoise(scale=1.0), dimension=100)
    >>> 7.0 < t < 9.0
    True
    """
    return law.tail_bound(false_alarm / (2 * dimension))


@dataclass(frozen=True)
class ReplyBound:
    """What one reply array of an honest client can hold: a box and an l2 (Frobenius) ball.

    Parameters
    ----------
    low, high : float or ndarray
        Per-coordinate box ``low <= x <= high`` (broadcast to the array's shape).
    radius : float
        ``||x||_2 <= radius`` over all entries.

    Examples
    --------
    >>> bound = ReplyBound(low=-1.0, high=1.0, radius=1.2)
    >>> for reason in bound.reasons("u", np.array([[0.5, 0.5], [1.0, 1.0], [3.0, 0.0]])):
    ...     print(reason)
    None
    array 'u' has l2 norm 1.41 > its declared bound 1.2
    array 'u' has 1 entries outside its declared box (by up to 2)
    """

    low: float | np.ndarray = -np.inf
    high: float | np.ndarray = np.inf
    radius: float = np.inf

    def holds(self, stack: np.ndarray) -> bool:
        """Whether every entry of ``stack`` (replies stacked along axis 0) is finite and every
        row keeps the bound.

        Decided on the column extremes (NaN and infinity show in them) and, for a finite
        radius, the row norms: the honest round's test, with :meth:`reasons` left for a round
        that fails it.
        """
        if len(stack) == 0:
            return True
        low, high = _column_extremes(stack)
        if not (np.isfinite(low).all() and np.isfinite(high).all()
                and (low >= self.low).all() and (high <= self.high).all()):
            return False
        if np.isfinite(self.radius):
            flat = stack.reshape(len(stack), -1)
            with np.errstate(over="ignore"):
                return bool(np.einsum("ij,ij->i", flat, flat).max() <= self.radius ** 2)
        return True

    def finite_box(self) -> bool:
        """Whether both sides of the box are finite everywhere (then :meth:`holds` also says
        that every entry is finite: NaN and infinity fail it)."""
        return bool(np.isfinite(self.low).all() and np.isfinite(self.high).all())

    def reasons(self, name: str, stack: np.ndarray) -> list[str | None]:
        """Why each row of ``stack`` (finite replies stacked along axis 0) breaks the bound."""
        n = len(stack)
        flat = stack.reshape(n, -1)
        out: list[str | None] = [None] * n
        low = np.broadcast_to(np.asarray(self.low, dtype=float), stack.shape[1:]).ravel()
        high = np.broadcast_to(np.asarray(self.high, dtype=float), stack.shape[1:]).ravel()
        if np.isfinite(low).any() or np.isfinite(high).any():
            outside = flat > high
            outside |= flat < low
            for i in np.flatnonzero(outside.any(axis=1)):   # the reasons of the few bad rows
                excess = np.maximum(flat[i] - high, low - flat[i]).max()
                out[i] = (f"array {name!r} has {np.count_nonzero(outside[i])} entries outside "
                          f"its declared box (by up to {excess:.3g})")
        if np.isfinite(self.radius):
            with np.errstate(over="ignore"):
                norms = np.sqrt(np.einsum("ij,ij->i", flat, flat))
            for i in np.flatnonzero(norms > self.radius):
                if out[i] is None:
                    out[i] = (f"array {name!r} has l2 norm {norms[i]:.3g} > its declared bound "
                              f"{self.radius:.3g}")
        return out


class StackedReplies(dict):
    """A round's valid replies by client id (increasing), with the stacks its validation built.

    ``stacks[name]`` holds every reply's array ``name`` stacked along axis 0 in the order of
    the client ids: :func:`stacked` returns it instead of copying the round a second time.
    """

    def __init__(self, replies: Mapping[int, Any], stacks: Mapping[str, np.ndarray]) -> None:
        super().__init__(replies)
        self.stacks = dict(stacks)


def stacked(replies: Mapping[int, Any], name: str) -> np.ndarray:
    """The arrays ``name`` of ``replies`` stacked along axis 0, in increasing client id order.

    Examples
    --------
    >>> replies = {1: Reply({"z": [3.0, 4.0]}, {}), 0: Reply({"z": [1.0, 2.0]}, {})}
    >>> stacked(replies, "z")
    array([[1., 2.],
           [3., 4.]])
    """
    stacks = getattr(replies, "stacks", None)
    if stacks is not None and name in stacks:
        return stacks[name]
    return np.array([replies[k].arrays[name] for k in sorted(replies)])


def validate_reply(reply: Any, spec: Spec, *, client_id: int, expected_round: int | None = None,
                   seen: set | None = None, current_version: int | None = None,
                   max_staleness: int | None = None, bounds: Bounds | None = None,
                   screen: bool = True) -> str | None:
    """Why a reply must be rejected, or ``None`` when it may be aggregated.

    Checks, in order: it is a :class:`Reply`; it names this client and carries integer
    ``round`` / ``model_version``; it is not a duplicate of a (client, round) in ``seen``; its
    round equals ``expected_round`` (a late reply from an earlier round is stale); its staleness
    ``current_version - model_version`` is within ``max_staleness``; an abstaining reply carries
    no arrays; otherwise the array names are exactly those of ``spec``, each array is floating
    point (real when ``screen`` is off), of the spec's shape, finite and, when ``screen``,
    within its :class:`ReplyBound` in ``bounds``.  A reply that passes is added to ``seen``.

    Parameters
    ----------
    reply : Reply
    spec : mapping str -> tuple of int
        Expected array names and shapes (``algorithm.reply_spec(state, client_id)``).
    client_id : int
        The client the runtime received the reply from.
    expected_round : int, optional
        The round being aggregated (synchronous) or the request index (asynchronous).
    seen : set, optional
        (client_id, round) pairs already accepted; updated in place.
    current_version, max_staleness : int, optional
        Reject replies computed from a model more than ``max_staleness`` versions old.
    bounds : mapping str -> ReplyBound, optional
        The declared bound of each array (``algorithm.reply_bounds(state, client_id)``).
    screen : bool, default True
        Reject integer / boolean arrays and arrays outside ``bounds``; ``False`` only checks
        the form (the undefended server of the trust study).

    Returns
    -------
    str or None
        The rejection reason, to be logged by the runtime.

    Examples
    --------
    >>> ok = Reply({"w": np.ones(2)}, {CLIENT: 0, ROUND: 1, VERSION: 1})
    >>> validate_reply(ok, {"w": (2,)}, client_id=0, expected_round=1) is None
    True
    >>> validate_reply(Reply({"w": [1.0, np.nan]}, ok.metrics), {"w": (2,)}, client_id=0)
    "array 'w' has 1 non-finite entries"
    >>> print(validate_reply(Reply({"w": [1, 2]}, ok.metrics), {"w": (2,)}, client_id=0))
    array 'w' has dtype int64; replies must be floating point (an integer or boolean array ...
    >>> validate_reply(Reply({"w": [3.0, 4.0]}, ok.metrics), {"w": (2,)}, client_id=0,
    ...                bounds={"w": ReplyBound(radius=1.0)})
    "array 'w' has l2 norm 5 > its declared bound 1"
    """
    return validate_replies([(client_id, reply)], spec, bounds,
                            expected_round=expected_round, seen=seen,
                            current_version=current_version, max_staleness=max_staleness,
                            screen=screen)[0]


def validate_replies(replies: Sequence[tuple[int, Any]], spec: Spec | Callable[[int], Spec],
                     bounds: Bounds | Callable[[int], Bounds | None] | None = None, *,
                     expected_round: int | None = None, seen: set | None = None,
                     current_version: int | None = None, max_staleness: int | None = None,
                     screen: bool = True, stacks: dict[str, np.ndarray] | None = None
                     ) -> list[str | None]:
    """:func:`validate_reply` on every reply of a round, the arrays checked as one array each.

    A round whose replies are all valid (the common case) is decided by a few passes over the
    headers and one stacked array per array name (finiteness and the declared bounds checked on
    the stack); a round with a bad reply is then judged reply by reply for the reasons, its
    arrays still checked one stack per array name and spec.  The verdicts are those of judging
    the replies one by one in order (a duplicate is a second reply for the (client, round) of
    a valid one).

    Parameters
    ----------
    replies : sequence of (int, Reply)
        ``(client id the reply arrived from, reply)``, in the order received.
    spec : mapping str -> tuple of int, or callable client_id -> such a mapping
        The spec every client's reply shares (a mapping: nothing is asked per client), or
        each client's (``algorithm.reply_spec`` with the state bound).
    bounds : mapping str -> ReplyBound, or callable client_id -> such a mapping, optional
        Likewise: the bounds every client's reply shares, or each client's.
    expected_round, seen, current_version, max_staleness, screen
        As in :func:`validate_reply`.
    stacks : dict, optional
        Filled, when every reply is valid and decided by the whole-round passes, with each
        array name's replies stacked along axis 0 in the order of ``replies`` (the arrays the
        checks ran on: an aggregate can reuse them instead of stacking the round again).

    Returns
    -------
    list of str or None
        The rejection reason of each reply (``None``: valid), in the order of ``replies``.

    Examples
    --------
    >>> good = [Reply({"w": np.full(2, k + 0.5)}, {CLIENT: k, ROUND: 0, VERSION: 0})
    ...         for k in range(3)]
    >>> huge = Reply({"w": np.full(2, 1e308)}, {CLIENT: 3, ROUND: 0, VERSION: 0})
    >>> validate_replies([*enumerate(good), (3, huge)], lambda k: {"w": (2,)},
    ...                  lambda k: {"w": ReplyBound(-10.0, 10.0)}, expected_round=0)
    [None, None, None, "array 'w' has 2 entries outside its declared box (by up to 1e+308)"]
    """
    if max_staleness is None and _all_valid(replies, spec, bounds if screen else None,
                                            expected_round, seen, "f" if screen else "biuf",
                                            {} if stacks is None else stacks):
        return [None] * len(replies)
    seen = set() if seen is None else seen
    spec = _per_client(spec)
    bounds = None if bounds is None else _per_client(bounds)
    reasons: list[str | None] = [None] * len(replies)
    keys: list[tuple[int, int] | None] = [None] * len(replies)
    groups: dict[tuple, list[int]] = {}     # spec -> positions of replies with arrays to check
    last: Spec | None = None
    group: list[int] = []
    for i, (k, reply) in enumerate(replies):
        reasons[i], keys[i] = _header_reason(reply, k, expected_round, current_version,
                                             max_staleness)
        if reasons[i] is not None:
            continue
        arrays = reply.arrays
        if reply.metrics.get(ABSTAIN, 0):
            if arrays:
                reasons[i] = "abstaining reply carries arrays"
            continue
        expected = spec(k)
        if arrays.keys() != expected.keys():
            reasons[i] = (f"array names {sorted(map(str, arrays))} differ from the expected "
                          f"{sorted(expected)}")
            continue
        if expected != last:   # (clients mostly share one spec: one dict comparison each)
            last = expected
            group = groups.setdefault(tuple(sorted((n, tuple(s)) for n, s in last.items())),
                                      [])
        group.append(i)
    kinds = "f" if screen else "biuf"
    for key, positions in groups.items():
        for name, shape in key:
            live, rows = [], []
            for i in positions:
                if reasons[i] is None:
                    reasons[i], array = _form_reason(name, replies[i][1].arrays[name], shape,
                                                     kinds)
                    if reasons[i] is None:
                        live.append(i)
                        rows.append(array)
            if not live:
                continue
            stack = np.array(rows)
            finite = np.isfinite(stack.reshape(len(live), -1))
            ok = finite.all(axis=1)
            for j in np.flatnonzero(~ok):
                reasons[live[j]] = (f"array {name!r} has {finite[j].size - finite[j].sum()} "
                                    f"non-finite entries")
            if screen and bounds is not None:
                _bound_reasons(name, stack, live, ok, bounds, replies, reasons)
    for i, key in enumerate(keys):   # in order, as if judged one by one: duplicates of valid ones
        if key is None:
            continue
        if key in seen:
            reasons[i] = f"duplicate reply for round {key[1]}"
        elif reasons[i] is None:
            seen.add(key)
    return reasons


def _all_valid(replies: Sequence[tuple[int, Any]], spec: Spec | Callable[[int], Spec],
               bounds: Bounds | Callable[[int], Bounds | None] | None,
               expected_round: int | None,
               seen: set | None, kinds: str, stacks: dict[str, np.ndarray]) -> bool:
    """Whether every reply is valid, decided with whole-round passes (``seen`` updated and
    ``stacks`` filled if so).

    False means "not shown here", and the caller judges the replies one by one.  The passes
    are ``map`` / ``set`` over the round (C loops): ``set(map(type, xs)) == {int}`` says every
    ``x`` is an ``int`` (not a ``bool``), and so on.
    """
    n = len(replies)
    if not n or expected_round is None:
        return False
    ids, got = list(map(_FIRST, replies)), list(map(_SECOND, replies))
    if set(map(type, got)) != {Reply}:
        return False
    metrics, arrays = list(map(_METRICS, got)), list(map(_ARRAYS, got))
    if set(map(type, metrics)) != {dict} or set(map(type, arrays)) != {dict}:
        return False
    try:   # one pass per field (a header tuple per reply, transposed, took 40 % longer)
        clients, rounds, versions = (list(map(field, metrics)) for field in _HEADER)
    except KeyError:
        return False
    if (set(map(type, clients)) != {int} or set(map(type, rounds)) != {int}
            or set(map(type, versions)) != {int} or clients != ids or min(versions) < 0
            or rounds.count(expected_round) != n or len(set(ids)) != n
            # three metrics are the header itself: no abstention (a C pass, not a lookup each)
            or set(map(len, metrics)) != {3} and any(map(_ABSTAINED, metrics))):
        return False
    keys = () if seen is None else list(zip(ids, rounds, strict=True))
    if seen and not seen.isdisjoint(keys):
        return False
    if callable(spec):
        specs = list(map(spec, ids))
        first = specs[0]
        if len(set(map(id, specs))) != 1 and not all(s == first for s in specs):
            return False
    else:   # one spec for the round: no call per client
        first = spec
    if set(map(len, arrays)) != {len(first)}:   # with every spec name present: equal names
        return False
    shared = bounds
    if callable(bounds):
        declared = list(map(bounds, ids))
        if len(set(map(id, declared))) != 1:
            return False   # per-client bounds: the general path groups them
        shared = declared[0]
    stacked = {}
    for name, shape in first.items():
        try:   # (an item getter: a third of ``get``'s time)
            values = list(map(operator.itemgetter(name), arrays))
        except KeyError:
            return False
        dtypes = set(map(_DTYPE, values)) if set(map(type, values)) == {np.ndarray} else ()
        if len(dtypes) != 1 or next(iter(dtypes)).kind not in kinds:
            return False
        try:   # equal shapes: one C-level copy (faster than np.stack); unequal ones raise
            stack = np.array(values)
        except ValueError:
            return False
        if stack.shape != (n, *shape):
            return False   # (the stack's shape is every value's: no shape tuple per reply)
        bound = (shared or {}).get(name)
        # finiteness and the box in one test on the column extremes (NaN and infinity show);
        # without a bound one isfinite pass (fewer calls: one reply at a time is common)
        if not (np.isfinite(stack).all() if bound is None else bound.holds(stack)):
            return False
        stacked[name] = stack
    stacks.update(stacked)
    if seen is not None:
        seen.update(keys)
    return True


def _per_client(declared: Any) -> Callable[[int], Any]:
    """A declaration shared by every client as the per-client callable of the general path."""
    return declared if callable(declared) else (lambda client_id: declared)


#: Rows folded into one before a column reduction: inner loops of about this many entries.
_FOLD = 2048


def _column_extremes(stack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least and the greatest entry of each column of ``stack`` (over axis 0).

    numpy reduces a C-contiguous ``(n, d)`` array over axis 0 in inner loops of one row
    (``d`` entries); folding ``m`` rows into one (``n // m`` rows of ``m d`` entries) makes them
    ``m`` times longer, and the ``m`` partial extremes are reduced after (at ``n = 1e4``,
    ``d = 100``: the time of one reduction of the flat array, a third less than row by row).
    ``np.minimum`` / ``np.maximum`` propagate NaN: a NaN entry makes its column's extremes NaN.
    """
    n = len(stack)
    flat = stack.reshape(n, -1)
    d = flat.shape[1]
    m = min(n, _FOLD // max(d, 1))
    if m <= 1:   # (few or long rows: no fold, and fewer calls for one reply)
        return flat.min(axis=0).reshape(stack.shape[1:]), flat.max(axis=0).reshape(stack.shape[1:])
    q = n // m
    folded = flat[:q * m].reshape(q, m * d)
    low = np.minimum.reduce(folded, axis=0).reshape(m, d).min(axis=0)
    high = np.maximum.reduce(folded, axis=0).reshape(m, d).max(axis=0)
    if q * m < n:
        np.minimum(low, flat[q * m:].min(axis=0), out=low)
        np.maximum(high, flat[q * m:].max(axis=0), out=high)
    return low.reshape(stack.shape[1:]), high.reshape(stack.shape[1:])


_METRICS, _ARRAYS = operator.attrgetter("metrics"), operator.attrgetter("arrays")
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)
_HEADER = tuple(map(operator.itemgetter, (CLIENT, ROUND, VERSION)))
_ABSTAINED = operator.methodcaller("get", ABSTAIN, 0)
_DTYPE = operator.attrgetter("dtype")


def _header_reason(reply: Any, client_id: int, expected_round: int | None,
                   current_version: int | None, max_staleness: int | None
                   ) -> tuple[str | None, tuple[int, int] | None]:
    """Why a reply's header is wrong, or its (client, round) key (checked for duplicates last)."""
    reason = None
    if not isinstance(reply, Reply):
        return f"not a Reply but {type(reply).__name__}", None
    metrics = reply.metrics
    if type(metrics) is dict and type(reply.arrays) is dict and max_staleness is None:
        # the common case, decided without building the header (type(x) is int excludes bool)
        c, r, v = metrics.get(CLIENT), metrics.get(ROUND), metrics.get(VERSION)
        if (type(c) is int and type(r) is int and type(v) is int and c == client_id
                and v >= 0 and r >= 0 and (expected_round is None or r == expected_round)):
            return None, (c, r)
    metrics = reply.metrics if _is_mapping(reply.metrics) else {}
    header = {}
    for key in (CLIENT, ROUND, VERSION):
        value = metrics.get(key)
        if type(value) is not int and (isinstance(value, bool)
                                       or not isinstance(value, numbers.Integral)) or value < 0:
            return f"metric {key!r} missing or not a non-negative integer (got {value!r})", None
        header[key] = int(value)
    if header[CLIENT] != client_id:
        return f"reply claims client {header[CLIENT]} but arrived from client {client_id}", None
    if expected_round is not None and header[ROUND] != expected_round:
        kind = "stale" if header[ROUND] < expected_round else "future"
        reason = f"{kind} reply: round {header[ROUND]}, expected {expected_round}"
    elif current_version is not None and max_staleness is not None:
        staleness = current_version - header[VERSION]
        if staleness < 0:
            reason = (f"model_version {header[VERSION]} is newer than the server's "
                      f"{current_version}")
        elif staleness > max_staleness:
            reason = f"stale reply: {staleness} versions old (max_staleness={max_staleness})"
    if reason is None and not _is_mapping(reply.arrays):
        reason = f"arrays is {type(reply.arrays).__name__}, not a mapping"
    return reason, (client_id, header[ROUND])


def _form_reason(name: str, array: Any, shape: tuple[int, ...], kinds: str
                 ) -> tuple[str | None, Any]:
    """Why one array is not of the accepted dtype kinds and shape (and the array)."""
    if type(array) is not np.ndarray:
        try:
            array = np.asarray(array)
        except (TypeError, ValueError):
            return f"array {name!r} is not numeric", None
    if array.dtype.kind not in kinds:
        if array.dtype.kind in "biu":
            return (f"array {name!r} has dtype {array.dtype}; replies must be floating point "
                    f"(an integer or boolean array is no noisy release)"), None
        return f"array {name!r} has dtype {array.dtype}, not real", None
    if array.shape != shape:
        return f"array {name!r} has shape {array.shape}, expected {shape}", None
    return None, array


def _bound_reasons(name: str, stack: np.ndarray, live: Sequence[int], ok: np.ndarray,
                   bounds: Callable[[int], Bounds | None], replies: Sequence[tuple[int, Any]],
                   reasons: list[str | None]) -> None:
    """Check the finite rows of ``stack`` against their clients' bounds, one stack per bound."""
    rows = np.flatnonzero(ok).tolist()
    declared = [(bounds(replies[live[j]][0]) or {}).get(name) for j in rows]
    by_bound: dict[int, tuple[ReplyBound, list[int]]] = {}
    for j, bound in zip(rows, declared, strict=True):
        if bound is not None:
            by_bound.setdefault(id(bound), (bound, []))[1].append(j)
    for bound, rows in by_bound.values():
        for j, reason in zip(rows, bound.reasons(name, stack[rows]), strict=True):
            if reason is not None:
                reasons[live[j]] = reason


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)
