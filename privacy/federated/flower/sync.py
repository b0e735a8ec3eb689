"""Synchronous rounds on Flower: a ``Strategy`` running any protocol algorithm, and its loop.

:class:`ProtocolStrategy` is a :class:`flwr.serverapp.strategy.Strategy`: ``configure_train``
has the server step (:class:`~privacy.federated.server_step.ServerStep`, shared with the numpy
runner) plan the round and builds one Flower message per selected client; ``aggregate_train``
reads every reply and hands them to the server step, which rejects (and logs) what
:func:`~privacy.federated.validation.validate_reply` rejects and aggregates the rest with the
algorithm's ``aggregate``.  It can be driven by Flower's own ``Strategy.start``; the loop
:func:`run_sync_grid` drives it with what ``Strategy.start`` lacks: replies that arrive after
their round's timeout are still pulled and rejected as stale (never averaged into a later
round), the server state is checkpointed and a run resumes from its checkpoint, and the result
is the numpy runner's :class:`~privacy.federated.runner.RunResult`.

With the same seed and simulated nodes (node config ``simulation-seed``, as the in-process
runners set it) the numbers equal :func:`privacy.federated.runner.run_sync`'s: messages, rngs
and the order of aggregation depend only on (seed, client secrets, client, round).  Nodes with
secrets of their own draw noise the seed does not determine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flwr.app import DEFAULT_TTL, ArrayRecord, ConfigRecord, MetricRecord
from flwr.app import Message as FlowerMessage
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer, check_positive
from privacy.federated.algorithm import logger
from privacy.federated.flower.records import array_record, reply_from_flower
from privacy.federated.flower.transport import (
    ReleaseBook,
    clock_of,
    discover_clients,
    finite_or_none,
    flower_message,
    group_of,
    push,
)
from privacy.federated.results import RoundRecord, RunResult, history_from_json, history_to_json
from privacy.federated.server_step import Evaluate, Received, ServerStep
from privacy.federated.state_io import load_server_state, save_server_state
from privacy.federated.values import ServerState

__all__ = ["ProtocolStrategy", "run_sync_grid"]


class ProtocolStrategy(Strategy):
    """A Flower ``Strategy`` running the server half of a protocol algorithm synchronously.

    Parameters
    ----------
    algorithm : FederatedAlgorithm
    num_clients : int
        Clients are the nodes with ``partition-id`` 0 .. ``num_clients - 1`` (found by the
        ``query.identify`` handshake on the first round).
    seed : int, default 0
        Run seed.
    min_replies : int, default 1
        Fewer valid replies leave the state unchanged for that round (logged).
    evaluate : callable model -> metrics, optional
        Called on ``algorithm.model(state)`` after every round.
    ttl : float, optional
        Time-to-live of each message in seconds (Flower's default: 12 h).
    discovery_timeout : float, default 120
        Seconds to wait for the nodes to connect and identify themselves.

    Attributes
    ----------
    server : ServerStep
        The server half (state, history, every decision on replies).
    state : ServerState
    history : list of RoundRecord
        One record per finished round (``releases``: each client's reported release count plus
        its unanswered messages — an upper bound, see ``ReleaseBook``).
    nodes : dict int -> int or None
        ``client_id -> node_id`` once discovered.

    Notes
    -----
    The protocol round is ``len(history)``, not Flower's ``server_round`` (which restarts at 1
    when ``Strategy.start`` is called on a resumed strategy); ``configure_train`` and
    ``aggregate_train`` must alternate, as ``Strategy.start`` calls them.
    """

    def __init__(self, algorithm: Any, *, num_clients: int, seed: int = 0, min_replies: int = 1,
                 evaluate: Evaluate | None = None, ttl: float | None = None,
                 discovery_timeout: float = 120.0) -> None:
        self.algorithm = algorithm
        self.num_clients = check_integer("num_clients", num_clients, minimum=1)
        self.ttl = None if ttl is None else check_positive("ttl", ttl)
        self.discovery_timeout = check_positive("discovery_timeout", discovery_timeout)
        self.server = ServerStep.start(algorithm, num_clients=self.num_clients, seed=seed,
                                       min_replies=min_replies, evaluate=evaluate)
        self.releases = ReleaseBook(self.num_clients)
        self.nodes: dict[int, int] | None = None
        self._clock: Any = None
        self._started = 0.0

    @property
    def state(self) -> ServerState:
        """The server state (``server.state``)."""
        return self.server.state

    @property
    def history(self) -> list[RoundRecord]:
        """One record per finished round (``server.history``)."""
        return self.server.history

    @property
    def min_replies(self) -> int:
        """Fewer valid replies leave a round's state unchanged."""
        return self.server.min_replies

    @property
    def evaluate(self) -> Evaluate | None:
        """Called on the model after every round (or ``None``)."""
        return self.server.evaluate

    @property
    def next_round(self) -> int:
        """The protocol round the next ``configure_train`` opens."""
        return len(self.history)

    # -------------------------------------------------------------------- Strategy API
    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[FlowerMessage]:
        """Messages of the next protocol round (``arrays`` / ``config`` are not used: the
        algorithm's ``configure_round`` builds the broadcast from the server state)."""
        if self.nodes is None:
            self.nodes = discover_clients(grid, self.num_clients,
                                          timeout=self.discovery_timeout)
        if self._clock is None:
            self._clock = clock_of(grid)
            self._started = self._clock.now() - (self.history[-1].time if self.history else 0.0)
        t = self.next_round
        messages = []
        for k, message in self.server.open_round(t):
            messages.append(flower_message(message, self.nodes[k], ttl=self.ttl))
            self.releases.sent(k, t)
        return messages

    def aggregate_train(self, server_round: int, replies: Iterable[FlowerMessage]
                        ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Read the replies of the open round and let the server step judge and aggregate."""
        t = self.next_round
        client_of = {node: k for k, node in (self.nodes or {}).items()}
        received = []
        for message in replies:
            k = client_of.get(message.metadata.src_node_id, -1)
            received.append((k, group_of(message) or (-1, -1), message))
        received.sort(key=lambda item: item[:2])
        judged: list[Received] = []
        arrived = set()
        for k, (round_, _), message in received:
            if k < 0:
                judged.append((k, f"reply from unknown node {message.metadata.src_node_id}"))
                continue
            self.releases.received(k, message)
            if round_ == t:
                arrived.add(k)
            judged.append((k, reply_from_flower(message)))
        missing = tuple(sorted(set(self.server.selected) - arrived))
        record = self.server.close_round(judged, missing=missing,
                                         time=self._clock.now() - self._started,
                                         releases=self.releases.counts(self.algorithm))
        summary = {"accepted": len(record.accepted), "rejected": len(record.rejected),
                   "missing": len(record.missing), "version": record.version,
                   **{k: float(v) for k, v in record.metrics.items()}}
        return array_record(self.server.model()), MetricRecord(summary)

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> Iterable[FlowerMessage]:
        """No client-side evaluation: the server evaluates the model (``evaluate``)."""
        return []

    def aggregate_evaluate(self, server_round: int, replies: Iterable[FlowerMessage]
                           ) -> MetricRecord | None:
        return None

    def summary(self) -> None:
        logger.info("ProtocolStrategy(%s): %d clients, seed %d, min_replies %d",
                    getattr(self.algorithm, "name", type(self.algorithm).__name__),
                    self.num_clients, self.state.seed, self.min_replies)

    # -------------------------------------------------------------------- checkpoints
    def save(self, path: str | Path) -> None:
        """Checkpoint the server state, the history and the release book (overwrites)."""
        save_server_state(Path(path) / "server", self.state,
                          extra={"mode": "sync", "history": history_to_json(self.history),
                                 "releases": self.releases.to_json()})

    def restore(self, path: str | Path) -> None:
        """Continue from a checkpoint written by :meth:`save`."""
        state, extra = load_server_state(Path(path) / "server")
        if extra.get("mode") != "sync":
            raise ParameterError(f"checkpoint {path} is not a synchronous Flower run "
                                 f"(mode {extra.get('mode')!r})")
        self.server = ServerStep.resume(self.algorithm, state, history_from_json(extra["history"]),
                                        num_clients=self.num_clients, source=path,
                                        min_replies=self.min_replies, evaluate=self.evaluate)
        self.releases = ReleaseBook(self.num_clients, **extra["releases"])

    def result(self) -> RunResult:
        """The run so far; ``client_states`` hold only the release counts the server knows
        (the states themselves stay on the nodes)."""
        return self.server.result(self.releases.client_states(self.algorithm))


def run_sync_grid(algorithm: Any, grid: Grid, *, num_clients: int, rounds: int, seed: int = 0,
                  timeout: float = 600.0, min_replies: int = 1,
                  evaluate: Evaluate | None = None, checkpoint: str | Path | None = None,
                  checkpoint_every: int = 1, resume: str | Path | None = None,
                  progress: Callable[[int], None] | None = None, poll_interval: float = 0.5,
                  discovery_timeout: float = 120.0, ttl: float | None = None) -> RunResult:
    """Run ``rounds`` synchronous rounds of a protocol algorithm on a Flower grid.

    Each round: :meth:`ProtocolStrategy.configure_train`, ``push_messages``, then
    ``pull_messages`` every ``poll_interval`` until every selected client answered or
    ``timeout`` seconds passed (a node that dropped out costs the round its timeout, never
    more), then :meth:`ProtocolStrategy.aggregate_train`.  Messages left unanswered stay
    pulled: their replies, when they come, are rejected as stale in the round they arrive in.

    Parameters
    ----------
    algorithm : FederatedAlgorithm
    grid : flwr.serverapp.Grid
        The ServerApp's grid, or an :class:`~privacy.federated.flower.InProcessGrid`.
    num_clients : int
    rounds : int
        Total rounds (a resumed run continues up to this total).
    seed : int, default 0
        Run seed (ignored when resuming: the checkpoint holds it).
    timeout : float, default 600
        Seconds a round waits for its replies (on the grid's clock: virtual in-process).
    min_replies, evaluate
        As in :class:`ProtocolStrategy`.
    checkpoint : path, optional
        Directory the server state and history are saved in every ``checkpoint_every`` rounds.
    resume : path, optional
        Continue the run saved there.  Client states live on the nodes (``state-dir``: see
        :mod:`privacy.federated.flower.client`).
    progress : callable round -> None, optional
    poll_interval, discovery_timeout, ttl : float
        Seconds between pulls; to wait for the nodes; message time-to-live (default 12 h).

    Returns
    -------
    RunResult
        As :func:`privacy.federated.runner.run_sync` (``time`` in seconds of the grid's clock;
        ``client_states`` hold only the release counts: the states stay on the nodes).

    Examples
    --------
    Noise-free FedInfer on a Flower grid gives the centralized solution in one round.

    >>> import numpy as np
    >>> from privacy.federated.fedinfer import FedInfer
    >>> from privacy.federated.flower import InProcessGrid, make_client_app, run_sync_grid
    >>> from privacy.federated.models import KernelFeatures, LeastSquaresModel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2)); y = (X[:, 0] > X[:, 1]).astype(int)
    >>> features = KernelFeatures.random(low=[-2, -2], high=[2, 2], count=4, rng=1)
    >>> model = LeastSquaresModel(features, num_classes=2, feature_bound=10.0,
    ...                           total_samples=60)
    >>> data = [{"X": X[:30], "y": y[:30]}, {"X": X[30:], "y": y[30:]}]
    >>> algorithm = FedInfer(model, None, num_clients=2)
    >>> grid = InProcessGrid(make_client_app(algorithm, data), num_clients=2)
    >>> result = run_sync_grid(algorithm, grid, num_clients=2, rounds=1)
    >>> bool(np.allclose(result.model["w"], model.centralized(X, y)))
    True
    """
    rounds = check_integer("rounds", rounds, minimum=0)
    timeout = check_positive("timeout", timeout)
    poll_interval = check_positive("poll_interval", poll_interval)
    checkpoint_every = check_integer("checkpoint_every", checkpoint_every, minimum=1)
    strategy = ProtocolStrategy(algorithm, num_clients=num_clients, seed=seed,
                                min_replies=min_replies, evaluate=evaluate,
                                ttl=finite_or_none(ttl), discovery_timeout=discovery_timeout)
    if resume is not None:
        strategy.restore(resume)
    clock = clock_of(grid)
    lifetime = finite_or_none(ttl) or DEFAULT_TTL
    late: dict[str, float] = {}   # unanswered message ids of closed rounds -> expiry
    for t in range(strategy.next_round, rounds):
        messages = list(strategy.configure_train(t + 1, ArrayRecord(), ConfigRecord(), grid))
        ids = push(grid, messages)
        for message, message_id in zip(messages, ids, strict=True):
            if message_id is None:
                logger.warning("round %d: the message to node %d could not be pushed", t,
                               message.metadata.dst_node_id)
        outstanding = {i for i in ids if i is not None}
        opened, replies = clock.now(), []
        while True:
            wanted = sorted(outstanding | set(late))
            got = list(grid.pull_messages(wanted)) if wanted else []
            for reply in got:
                outstanding.discard(reply.metadata.reply_to_message_id)
                late.pop(reply.metadata.reply_to_message_id, None)
            replies += got
            left = timeout - (clock.now() - opened)
            if not outstanding or left <= 0:
                break
            clock.sleep(min(poll_interval, left))
        now = clock.now()
        late = {i: e for i, e in late.items() if e > now}
        late.update({i: opened + lifetime for i in outstanding})
        strategy.aggregate_train(t + 1, replies)
        if checkpoint is not None and ((t + 1) % checkpoint_every == 0 or t + 1 == rounds):
            strategy.save(checkpoint)
        if progress is not None:
            progress(t)
    return strategy.result()
