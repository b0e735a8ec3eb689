"""Protocol values <-> Flower records, one to one (see :mod:`privacy.federated.protocol`).

========================  =====================================================================
protocol value            Flower content (``RecordDict``)
========================  =====================================================================
``protocol.Message``      ``{"arrays": ArrayRecord, "config": ConfigRecord}``
``protocol.Reply``        ``{"arrays": ArrayRecord, "metrics": MetricRecord,
                          "runtime": MetricRecord({"dp_releases": n})}``
``ClientState``           ``context.state["dmdidc.arrays"]`` (ArrayRecord) +
                          ``context.state["dmdidc.scalars"]`` (ConfigRecord)
========================  =====================================================================

``runtime`` carries what the client runtime (not the algorithm) reports: the client's count of
noisy releases, so the server can report each client's composed epsilon without seeing the
client's state.  It is kept apart from the algorithm's metrics so the server hands
``aggregate`` exactly the reply the numpy runner would.

A received Flower message is parsed defensively (:func:`reply_from_flower`): whatever a node
sends, the result is a :class:`~privacy.federated.protocol.Reply` for
:func:`~privacy.federated.protocol.validate_reply` to judge, or a rejection reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, MetricRecord, RecordDict
from flwr.app import Message as FlowerMessage

from privacy.federated.protocol import DP_RELEASES, ClientState, Message, Reply

__all__ = [
    "ARRAYS",
    "array_record",
    "CONFIG",
    "METRICS",
    "RUNTIME",
    "RELEASED",
    "message_content",
    "message_from_content",
    "reply_content",
    "reply_from_flower",
    "releases_from_flower",
    "released_from_flower",
    "load_context_state",
    "store_context_state",
]

ARRAYS, CONFIG, METRICS, RUNTIME = "arrays", "config", "metrics", "runtime"
#: Runtime metric of a reply: the releases the client made for this message.
RELEASED = "dp_released"
_STATE_ARRAYS, _STATE_SCALARS = "dmdidc.arrays", "dmdidc.scalars"


def array_record(arrays: Any) -> ArrayRecord:
    return ArrayRecord({name: Array(np.asarray(value)) for name, value in arrays.items()})


def _numpy(record: ArrayRecord) -> dict[str, np.ndarray]:
    return {name: array.numpy() for name, array in record.items()}


def message_content(message: Message) -> RecordDict:
    """Flower content of a protocol message (server -> client)."""
    return RecordDict({ARRAYS: array_record(message.arrays),
                       CONFIG: ConfigRecord(dict(message.config))})


def message_from_content(content: RecordDict) -> Message:
    """Inverse of :func:`message_content` (on the client)."""
    return Message(_numpy(content.array_records[ARRAYS]), dict(content.config_records[CONFIG]))


def reply_content(reply: Reply, releases: int, released: int) -> RecordDict:
    """Flower content of a protocol reply (client -> server), the client's release count and
    the releases it made for this message."""
    return RecordDict({ARRAYS: array_record(reply.arrays),
                       METRICS: MetricRecord(dict(reply.metrics)),
                       RUNTIME: MetricRecord({DP_RELEASES: int(releases),
                                              RELEASED: int(released)})})


def reply_from_flower(message: FlowerMessage) -> Reply | str:
    """The protocol reply inside a received Flower message, or why it cannot be read.

    An error message (the ClientApp raised, the node vanished) and content that lacks the
    expected records give a reason string; anything else gives a :class:`Reply` even when its
    arrays are NaN or of the wrong shape, for ``validate_reply`` to reject with its reason.
    """
    if message.has_error():
        error = message.error
        return f"client error (Flower code {error.code}): {error.reason}"
    # (each records view is rebuilt by Flower on access: take it once)
    content = message.content
    arrays, metrics = content.array_records.get(ARRAYS), content.metric_records.get(METRICS)
    if arrays is None or metrics is None:
        return (f"content holds records {sorted(content.keys())}; expected {ARRAYS!r} "
                f"(ArrayRecord) and {METRICS!r} (MetricRecord)")
    try:
        decoded = _numpy(arrays)
    except (ValueError, TypeError, OSError) as exc:
        return f"arrays cannot be decoded: {exc}"
    return Reply(decoded, dict(metrics))


def _runtime_count(message: FlowerMessage, key: str) -> int | None:
    runtime = None if message.has_error() else message.content.metric_records.get(RUNTIME)
    value = None if runtime is None else runtime.get(key)
    return int(value) if isinstance(value, int) and value >= 0 else None


def releases_from_flower(message: FlowerMessage) -> int | None:
    """The client's reported release count, or ``None`` when absent or malformed."""
    return _runtime_count(message, DP_RELEASES)


def released_from_flower(message: FlowerMessage) -> int | None:
    """The releases the client reports making for this message, or ``None`` when absent or
    malformed."""
    return _runtime_count(message, RELEASED)


def load_context_state(context: Context) -> ClientState:
    """The client's protocol state kept in ``context.state`` (empty before its first message)."""
    arrays = context.state.array_records.get(_STATE_ARRAYS)
    if arrays is None:
        return ClientState()
    return ClientState(_numpy(arrays), dict(context.state.config_records[_STATE_SCALARS]))


def store_context_state(context: Context, state: ClientState) -> None:
    """Keep the client's protocol state in ``context.state`` for its next message."""
    context.state[_STATE_ARRAYS] = array_record(state.arrays)
    context.state[_STATE_SCALARS] = ConfigRecord(dict(state.scalars))
