"""What the synchronous and the asynchronous Flower loops share.

* the clock (wall time; :class:`~privacy.federated.flower.inprocess.InProcessGrid` brings a
  virtual one so that timeouts cost no real waiting in tests),
* the handshake that maps protocol client ids to Flower node ids (:func:`discover_clients`),
* building a Flower message from a protocol message, with the group id ``"<round>/<version>"``
  (the synchronous round or asynchronous request index, and the model version the message was
  built from): Flower copies the group id into the reply, so even an error reply can be
  attributed to its request and staleness is ``state.version - version``,
* the release bookkeeping behind each client's composed epsilon (:class:`ReleaseBook`),
* the JSON form of the per-round history used by checkpoints and results (defined in
  :mod:`privacy.federated.results`, re-exported here).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, Protocol

from flwr.app import Message as FlowerMessage
from flwr.app import RecordDict
from flwr.serverapp import Grid

from _toolbox.errors import ParameterError
from privacy.federated.algorithm import logger
from privacy.federated.flower.client import IDENTIFY, NUM_PARTITIONS, PARTITION_ID, TRAIN
from privacy.federated.flower.records import (
    message_content,
    released_from_flower,
    releases_from_flower,
)
from privacy.federated.results import history_from_json, history_to_json
from privacy.federated.values import DP_RELEASES, ClientState, Message

__all__ = ["Clock", "WallClock", "discover_clients", "flower_message", "group_of",
           "ReleaseBook", "history_to_json", "history_from_json"]


class Clock(Protocol):
    """Time source of a loop: ``now()`` in seconds and ``sleep(seconds)``."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class WallClock:
    """Real time (``time.monotonic`` / ``time.sleep``): the clock of real deployments."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


def clock_of(grid: Grid) -> Clock:
    """The grid's own clock when it has one (in-process: virtual time), else wall time."""
    return getattr(grid, "clock", None) or WallClock()


def flower_message(message: Message, node_id: int, *, ttl: float | None) -> FlowerMessage:
    """The Flower ``train`` message carrying a protocol message to one node."""
    group = f"{message.round}/{message.model_version}"
    return FlowerMessage(message_content(message), node_id, TRAIN, ttl=ttl, group_id=group)


def group_of(reply: FlowerMessage) -> tuple[int, int] | None:
    """(round, model version) from a reply's group id, or ``None`` when it is not ours."""
    round_, _, version = reply.metadata.group_id.partition("/")
    if not (round_.isdigit() and version.isdigit()):
        return None
    return int(round_), int(version)


def push(grid: Grid, messages: Sequence[FlowerMessage]) -> list[str | None]:
    """Push messages; one id per message (``None`` where the SuperLink refused it)."""
    if not messages:
        return []
    ids = list(grid.push_messages(messages))
    if len(ids) != len(messages):
        raise RuntimeError(f"the grid returned {len(ids)} message ids for {len(messages)} "
                           f"messages")
    return [str(i) if i else None for i in ids]


def discover_clients(grid: Grid, num_clients: int, *, timeout: float = 120.0,
                     poll_interval: float = 0.5) -> dict[int, int]:
    """Map protocol client ids to Flower node ids by asking every node its ``partition-id``.

    Waits until at least ``num_clients`` nodes are connected, sends each a
    ``query.identify`` message and collects the replies.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
    num_clients : int
        The run's clients are the partitions ``0 .. num_clients - 1``.
    timeout : float, default 120
        Seconds to wait for the nodes to connect and then to answer.
    poll_interval : float, default 0.5

    Returns
    -------
    dict int -> int
        ``client_id -> node_id``.

    Raises
    ------
    ParameterError
        Fewer than ``num_clients`` nodes connected or answered within ``timeout``, two nodes
        claim the same partition, or a node's partition is outside the run.
    """
    clock = clock_of(grid)
    deadline = clock.now() + timeout
    nodes = sorted(grid.get_node_ids())
    while len(nodes) < num_clients and clock.now() < deadline:
        clock.sleep(poll_interval)
        nodes = sorted(grid.get_node_ids())
    if len(nodes) < num_clients:
        raise ParameterError(f"only {len(nodes)} Flower nodes connected within {timeout} s; "
                             f"the run needs num_clients={num_clients}")
    queries = [FlowerMessage(RecordDict(), node, IDENTIFY, ttl=timeout, group_id="identify")
               for node in nodes]
    outstanding = {i for i in push(grid, queries) if i is not None}
    replies: list[FlowerMessage] = []
    while outstanding and clock.now() < deadline:
        got = list(grid.pull_messages(sorted(outstanding)))
        replies += got
        outstanding -= {m.metadata.reply_to_message_id for m in got}
        if outstanding:
            clock.sleep(poll_interval)
    mapping: dict[int, int] = {}
    for reply in replies:
        node = reply.metadata.src_node_id
        if reply.has_error() or "node" not in reply.content.config_records:
            reason = reply.error.reason if reply.has_error() else "no 'node' record"
            logger.warning("node %d did not identify itself: %s", node, reason)
            continue
        record = reply.content.config_records["node"]
        k, total = record[PARTITION_ID], record[NUM_PARTITIONS]
        if not 0 <= k < num_clients:
            raise ParameterError(f"node {node} has partition-id {k}; the run has "
                                 f"num_clients={num_clients} (partitions 0..{num_clients - 1})")
        if total not in (-1, num_clients):
            raise ParameterError(f"node {node} was started with {NUM_PARTITIONS}={total}; the "
                                 f"run has num_clients={num_clients}")
        if k in mapping:
            raise ParameterError(f"nodes {mapping[k]} and {node} both claim partition-id {k}")
        mapping[k] = node
    missing = sorted(set(range(num_clients)) - set(mapping))
    if missing:
        raise ParameterError(f"no node identified itself as partition(s) {missing} within "
                             f"{timeout} s")
    return dict(sorted(mapping.items()))


class ReleaseBook:
    """Each client's release count as known to the server: an upper bound on its privacy loss.

    Every reply carries the client's release count (its ``dp_releases``) and the releases it
    made for that very message.  The server adds up the latter itself (``counted``), once per
    message, so a client that lost its state (a node restarted without its ``state-dir``) and
    counts from zero again cannot lower the count; the count survives a checkpoint
    (:meth:`to_json`), so the epsilon of a resumed run composes every release since the run
    began.  A reply that does not say what it released (malformed, or from an older client)
    counts as ``releases_per_update``.

    A message the client has not answered yet (lost, late, in flight) is counted as
    ``releases_per_update`` more releases (the algorithm's attribute, default 1: FedLin
    releases up to two per update), so the bound holds whatever the network does.  With every
    reply in, the count equals the client's own, and so do the epsilons the result derives
    from it (``RunResult.epsilon_history``).

    Attributes
    ----------
    known : list of int
        The largest count each client reported.
    counted : list of int
        The server's sum of the releases each answered message reported.
    unknown : list of int
        Answered messages that did not say what they released.
    unanswered : list of set of int
        Rounds of the messages sent to each client and not answered yet.
    """

    def __init__(self, num_clients: int, known: Sequence[int] | None = None,
                 unanswered: Sequence[Sequence[int]] | None = None,
                 counted: Sequence[int] | None = None,
                 unknown: Sequence[int] | None = None) -> None:
        self.known = [int(k) for k in (known or [0] * num_clients)]
        self.unanswered = [set(map(int, u)) for u in (unanswered or [()] * num_clients)]
        # checkpoints written before the server counted releases hold only ``known``
        self.counted = [int(c) for c in (counted or self.known)]
        self.unknown = [int(u) for u in (unknown or [0] * num_clients)]

    def sent(self, client_id: int, round: int) -> None:
        self.unanswered[client_id].add(round)

    def received(self, client_id: int, reply: FlowerMessage) -> None:
        group = group_of(reply)
        count = releases_from_flower(reply)
        if count is not None:
            self.known[client_id] = max(self.known[client_id], count)
        if group is None or group[0] not in self.unanswered[client_id]:
            return   # not ours, or a second reply to a message already counted
        self.unanswered[client_id].discard(group[0])
        if reply.has_error():
            return   # the client raised: it kept no new state and released nothing
        made = released_from_flower(reply)
        if made is None:
            self.unknown[client_id] += 1
        else:
            self.counted[client_id] += made

    def counts(self, algorithm: Any) -> tuple[int, ...]:
        """Each client's releases: the larger of the server's count and the client's, plus
        ``releases_per_update`` per message in flight or of unknown release (none for a client
        whose ``client_dp`` is ``None``: it releases nothing)."""
        per_update = int(getattr(algorithm, "releases_per_update", 1))
        lookup = getattr(algorithm, "client_dp", None)
        counts = []
        for k, known in enumerate(self.known):
            each = 0 if lookup is not None and lookup(k) is None else per_update
            counts.append(max(known, self.counted[k] + each * self.unknown[k])
                          + each * len(self.unanswered[k]))
        return tuple(counts)

    def client_states(self, algorithm: Any) -> tuple[ClientState, ...]:
        """The server's view of the clients' states: only their release counts (so that
        ``RunResult.releases`` / ``final_epsilon`` work where client states stay on nodes)."""
        return tuple(ClientState(scalars={DP_RELEASES: n}) for n in self.counts(algorithm))

    def to_json(self) -> dict[str, Any]:
        return {"known": self.known, "unanswered": [sorted(u) for u in self.unanswered],
                "counted": self.counted, "unknown": self.unknown}


def finite_or_none(value: float | None) -> float | None:
    """``None`` for an infinite timeout (Flower's TTL must be finite)."""
    return None if value is None or math.isinf(value) else float(value)

