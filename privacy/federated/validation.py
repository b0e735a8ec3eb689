"""Reply validation: why a reply from a client must be rejected, before it reaches the algorithm.

Every runtime passes every reply through :func:`validate_reply` (via
:class:`privacy.federated.server_step.ServerStep`) and never hands a rejected one to
``aggregate`` / ``apply_reply``; the reason is logged to the ``privacy.federated`` logger and
kept in the round's record.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from privacy.federated.values import ABSTAIN, CLIENT, ROUND, VERSION, Reply

__all__ = ["validate_reply"]


def validate_reply(reply: Any, spec: Mapping[str, tuple[int, ...]], *, client_id: int,
                   expected_round: int | None = None, seen: set | None = None,
                   current_version: int | None = None, max_staleness: int | None = None
                   ) -> str | None:
    """Why a reply must be rejected, or ``None`` when it may be aggregated.

    Checks, in order: it is a :class:`Reply`; it names this client and carries integer
    ``round`` / ``model_version``; it is not a duplicate of a (client, round) in ``seen``; its
    round equals ``expected_round`` (a late reply from an earlier round is stale); its staleness
    ``current_version - model_version`` is within ``max_staleness``; an abstaining reply carries
    no arrays; otherwise the array names are exactly those of ``spec``, each array is real,
    of the spec's shape and finite.  A reply that passes is added to ``seen``.

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
    """
    if not isinstance(reply, Reply):
        return f"not a Reply but {type(reply).__name__}"
    metrics = reply.metrics if _is_mapping(reply.metrics) else {}
    header = {}
    for key in (CLIENT, ROUND, VERSION):
        value = metrics.get(key)
        if type(value) is not int and (isinstance(value, bool)
                                       or not isinstance(value, numbers.Integral)):
            return f"metric {key!r} missing or not a non-negative integer (got {value!r})"
        if value < 0:
            return f"metric {key!r} missing or not a non-negative integer (got {value!r})"
        header[key] = int(value)
    if header[CLIENT] != client_id:
        return f"reply claims client {header[CLIENT]} but arrived from client {client_id}"
    key = (client_id, header[ROUND])
    if seen is not None and key in seen:
        return f"duplicate reply for round {header[ROUND]}"
    if expected_round is not None and header[ROUND] != expected_round:
        kind = "stale" if header[ROUND] < expected_round else "future"
        return f"{kind} reply: round {header[ROUND]}, expected {expected_round}"
    if current_version is not None and max_staleness is not None:
        staleness = current_version - header[VERSION]
        if staleness < 0:
            return f"model_version {header[VERSION]} is newer than the server's {current_version}"
        if staleness > max_staleness:
            return f"stale reply: {staleness} versions old (max_staleness={max_staleness})"
    arrays = reply.arrays if _is_mapping(reply.arrays) else None
    if arrays is None:
        return f"arrays is {type(reply.arrays).__name__}, not a mapping"
    if metrics.get(ABSTAIN, 0):
        if arrays:
            return "abstaining reply carries arrays"
    else:
        if arrays.keys() != spec.keys():
            return (f"array names {sorted(map(str, arrays))} differ from the expected "
                    f"{sorted(spec)}")
        for name, shape in spec.items():
            array = arrays[name]
            if type(array) is not np.ndarray:
                try:
                    array = np.asarray(array)
                except (TypeError, ValueError):
                    return f"array {name!r} is not numeric"
            if array.dtype.kind not in "biuf":
                return f"array {name!r} has dtype {array.dtype}, not real"
            if array.shape != shape and array.shape != tuple(shape):
                return f"array {name!r} has shape {array.shape}, expected {tuple(shape)}"
            with np.errstate(over="ignore", invalid="ignore"):
                total = array.sum()   # finite iff no NaN / inf (unless it overflows)
            if not math.isfinite(total):
                bad = array.size - int(np.count_nonzero(np.isfinite(array)))
                if bad:
                    return f"array {name!r} has {bad} non-finite entries"
    if seen is not None:
        seen.add(key)
    return None


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)
