"""Flower in one process, without Ray: a Grid that hands each message to the ClientApp.

:class:`InProcessGrid` implements :class:`flwr.serverapp.Grid`: ``push_messages`` runs
``client_app(message, context)`` for the destination node (one
:class:`flwr.app.Context` per node, kept between messages as a SuperNode keeps it) and
``pull_messages`` returns the replies that are due.  Time is virtual (:class:`VirtualClock`):
the loops sleep on the grid's clock, so a node that never answers costs a round its timeout in
virtual seconds and no real waiting.  Faults for tests: per-client ``delays`` (late replies),
``silent`` clients (drop-outs) and a ``tamper`` hook (corrupted or duplicated replies); a
ClientApp that raises gives an error reply, as a SuperNode sends.

:func:`run_inprocess_sync` / :func:`run_inprocess_async` are the Flower counterparts of
:func:`privacy.federated.runner.run_sync` / :func:`~privacy.federated.runner.run_async`:
same arguments, same numbers for the same seed: their nodes are simulated (node config
``simulation-seed``: each node's noise secret derives from the run seed, so whoever knows the
seed knows the noise; ``RunResult.seeded_noise``).

Flower internals.  A :class:`flwr.app.Message` built outside a Flower process needs the
process's task identity (``flwr.supercore.task_identity.TaskIdentity``: run, node and task
ids), which Flower sets when it starts a ServerApp; otherwise the constructor raises
"TaskIdentity.run_id is not set".  :func:`ensure_task_identity` sets it when unset (never
overriding a real one); this is internal Flower API, hence the ``flwr>=1.41,<1.42`` pin.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from flwr.app import Context, Error, RecordDict
from flwr.app import Message as FlowerMessage
from flwr.common.constant import ErrorCode
from flwr.serverapp import Grid
from flwr.supercore.run import Run

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer, check_nonnegative
from privacy.federated.flower.asynchronous import run_async_grid
from privacy.federated.flower.client import (
    NUM_PARTITIONS,
    PARTITION_ID,
    SIMULATION_SEED,
    STATE_DIR,
    TRAIN,
    make_client_app,
)
from privacy.federated.flower.records import load_context_state
from privacy.federated.flower.resume import check_client_states
from privacy.federated.flower.sync import run_sync_grid
from privacy.federated.protocol import (
    DP_RELEASES,
    ClientData,
    ClientState,
    load_server_state,
    logger,
)
from privacy.federated.results import RunResult, release_counts
from privacy.federated.server_step import Evaluate

__all__ = ["VirtualClock", "InProcessGrid", "ensure_task_identity", "run_inprocess_sync",
           "run_inprocess_async"]

#: Node id Flower gives the SuperLink (the sender of instructions).
_SERVER_NODE = 1
FlowerTamper = Callable[[int, FlowerMessage], Sequence[FlowerMessage]]


def ensure_task_identity(run_id: int) -> None:
    """Give this process a Flower task identity if it has none (see the module docstring).

    Raises
    ------
    ImportError
        The installed flwr moved its internal ``TaskIdentity`` (dmdidc pins flwr 1.41).
    """
    try:
        from flwr.supercore.task_identity import TaskIdentity
    except ImportError as exc:  # pragma: no cover - depends on the installed flwr
        raise ImportError("flwr.supercore.task_identity.TaskIdentity is missing: this flwr is "
                          "not the 1.41 series dmdidc pins (pip install 'flwr>=1.41,<1.42')"
                          ) from exc
    for name, value in (("run_id", run_id), ("node_id", _SERVER_NODE), ("task_id", 1)):
        try:
            getattr(TaskIdentity, name)
        except RuntimeError:
            setattr(TaskIdentity, name, value)


class VirtualClock:
    """Virtual seconds: ``sleep`` advances ``now`` instantly."""

    def __init__(self) -> None:
        self.time = 0.0

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.time += max(0.0, float(seconds))


class InProcessGrid(Grid):
    """A Flower ``Grid`` whose nodes are ClientApp calls in this process.

    Parameters
    ----------
    client_app : callable (Message, Context) -> Message
        A :class:`flwr.clientapp.ClientApp` (e.g. from :func:`make_client_app`).
    num_clients : int
        Nodes with ``partition-id`` 0 .. ``num_clients - 1``.  Their node ids are arbitrary
        (``100 + num_clients - partition``), as in Flower: the server learns the mapping from
        the ``query.identify`` handshake.
    node_config : mapping, optional
        Extra node config shared by every node (e.g. ``{"state-dir": ...}``).
    run_config : mapping, optional
        The run config every Context carries.
    delays : float or sequence of float, default 0
        Virtual seconds between a message and its reply, per client.
    silent : iterable of int, optional
        Clients that dropped out after joining: they answer the ``query.identify`` handshake
        but no ``train`` message.
    tamper : callable (client_id, reply) -> sequence of Message, optional
        Replaces a client's reply by what arrives (none, a corrupted copy, duplicates...).
    run_id : int, default 1

    Attributes
    ----------
    clock : VirtualClock
    contexts : dict int -> flwr.app.Context
        One Context per node id.
    """

    def __init__(self, client_app: Callable[[FlowerMessage, Context], FlowerMessage], *,
                 num_clients: int, node_config: Mapping[str, Any] | None = None,
                 run_config: Mapping[str, Any] | None = None,
                 delays: float | Sequence[float] = 0.0, silent: Iterable[int] = (),
                 tamper: FlowerTamper | None = None, run_id: int = 1) -> None:
        num_clients = check_integer("num_clients", num_clients, minimum=1)
        self.client_app, self.tamper = client_app, tamper
        self.clock = VirtualClock()
        if isinstance(delays, (int, float)):
            delays = [delays] * num_clients
        if len(delays) != num_clients:
            raise DimensionError(f"delays has {len(delays)} entries; expected {num_clients} "
                                 f"(one per client)")
        self.silent = {check_integer("silent client", k, minimum=0) for k in silent}
        ensure_task_identity(run_id)
        self._run = Run.create_empty(run_id=run_id)
        self.contexts: dict[int, Context] = {}
        self._delay: dict[int, float] = {}
        self._client: dict[int, int] = {}
        for k in range(num_clients):
            node = 100 + num_clients - k
            config = {**(node_config or {}), PARTITION_ID: k, NUM_PARTITIONS: num_clients}
            self.contexts[node] = Context(run_id, node, config, RecordDict(),
                                          dict(run_config or {}))
            self._delay[node] = check_nonnegative(f"delays[{k}]", delays[k])
            self._client[node] = k
        self._replies: dict[str, list[tuple[float, FlowerMessage]]] = {}

    # ------------------------------------------------------------------ Grid API
    def set_run(self, run: Run) -> None:
        self._run = run

    @property
    def run(self) -> Run:
        return self._run

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int,
                       group_id: str, ttl: float | None = None) -> FlowerMessage:
        return FlowerMessage(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self) -> list[int]:
        return sorted(self.contexts)

    def push_messages(self, messages: Iterable[FlowerMessage]) -> list[str]:
        """Deliver each message to its node now; its reply becomes due after the delay."""
        ids = []
        for message in messages:
            node = message.metadata.dst_node_id
            if node not in self.contexts:
                raise ParameterError(f"message to unknown node {node}; nodes are "
                                     f"{self.get_node_ids()}")
            message_id = uuid.uuid4().hex
            message.metadata.__dict__["_message_id"] = message_id
            ids.append(message_id)
            if self._client[node] in self.silent and message.metadata.message_type == TRAIN:
                continue
            reply = self._call(message, node)
            arrivals = [reply] if self.tamper is None else \
                list(self.tamper(self._client[node], reply))
            due = self.clock.now() + self._delay[node]
            self._replies[message_id] = [(due, r) for r in arrivals]
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> list[FlowerMessage]:
        """The due replies to these messages (each returned once)."""
        now, out = self.clock.now(), []
        for message_id in message_ids:
            pending = self._replies.get(message_id, [])
            out += [reply for due, reply in pending if due <= now]
            rest = [(due, reply) for due, reply in pending if due > now]
            if rest:
                self._replies[message_id] = rest
            else:
                self._replies.pop(message_id, None)
        return out

    def send_and_receive(self, messages: Iterable[FlowerMessage], *,
                         timeout: float | None = None) -> list[FlowerMessage]:
        """Push, then pull every virtual second until all replied or ``timeout`` passed."""
        waiting = set(self.push_messages(messages))
        start, replies = self.clock.now(), []
        while True:
            got = self.pull_messages(sorted(waiting))
            waiting -= {m.metadata.reply_to_message_id for m in got}
            replies += got
            if not waiting or not self._replies.keys() & waiting or (
                    timeout is not None and self.clock.now() - start >= timeout):
                return replies
            self.clock.sleep(1.0)

    # ------------------------------------------------------------------ helpers
    def _call(self, message: FlowerMessage, node: int) -> FlowerMessage:
        try:
            reply = self.client_app(message, self.contexts[node])
        except Exception as exc:  # a SuperNode turns a raising ClientApp into an error reply
            logger.info("client %d raised %s: %s", self._client[node], type(exc).__name__, exc)
            reply = FlowerMessage(Error(ErrorCode.CLIENT_APP_RAISED_EXCEPTION,
                                        f"{type(exc).__name__}: {exc}"), reply_to=message)
        reply.metadata.__dict__["_message_id"] = uuid.uuid4().hex
        return reply

    def client_states(self) -> tuple[ClientState, ...]:
        """Each client's protocol state, indexed by client id."""
        by_client = {self._client[node]: c for node, c in self.contexts.items()}
        return tuple(load_context_state(by_client[k]) for k in range(len(by_client)))


def _grid(algorithm: Any, client_data: Sequence[ClientData], state_dir: str | Path | None,
          grid_options: Mapping[str, Any], resume: str | Path | None, seed: int
          ) -> InProcessGrid:
    data = list(client_data)
    if not data:
        raise ParameterError("client_data must hold at least one client's data")
    if resume is not None and state_dir is not None:
        check_client_states(resume, state_dir, algorithm, len(data))
    if resume is not None:
        # the server continues with the checkpoint's seed (it ignores ``seed``): so do the
        # simulated nodes' secrets, or a resumed round would release other noise
        seed = load_server_state(Path(resume) / "server")[0].seed
    node_config = {SIMULATION_SEED: int(seed)}
    if state_dir is not None:
        node_config[STATE_DIR] = str(state_dir)
    return InProcessGrid(make_client_app(algorithm, data), num_clients=len(data),
                         node_config=node_config, **grid_options)


def _with_server_counts(grid: InProcessGrid, result: RunResult) -> tuple[ClientState, ...]:
    """The nodes' states, each release count raised to the server's (a node that started
    afresh on a resume counts only its own new releases; the server counts them all)."""
    return tuple(state.replace(scalars={DP_RELEASES: max(own, server)})
                 for state, own, server in zip(grid.client_states(),
                                               release_counts(grid.client_states()),
                                               result.releases(), strict=True))


def run_inprocess_sync(algorithm: Any, client_data: Sequence[ClientData], *, rounds: int,
                       seed: int = 0, timeout: float = 600.0, min_replies: int = 1,
                       evaluate: Evaluate | None = None, checkpoint: str | Path | None = None,
                       checkpoint_every: int = 1, resume: str | Path | None = None,
                       state_dir: str | Path | None = None,
                       progress: Callable[[int], None] | None = None,
                       **grid_options: Any) -> RunResult:
    """:func:`privacy.federated.runner.run_sync` on Flower, in this process.

    Builds :func:`make_client_app` and an :class:`InProcessGrid` (``grid_options``:
    ``delays``, ``silent``, ``tamper``) and runs :func:`run_sync_grid` on it.

    Parameters
    ----------
    algorithm, client_data, rounds, seed, min_replies, evaluate, checkpoint,
    checkpoint_every, resume, progress
        As in :func:`privacy.federated.runner.run_sync`.
    timeout : float, default 600
        Virtual seconds a round waits for replies.
    state_dir : path, optional
        Where clients also keep their state (``state-dir`` node config): a resumed run then
        continues the clients' states too, and is refused when they do not match the
        checkpoint (:func:`~privacy.federated.flower.resume.check_client_states`).  Without
        it a resumed run's clients start afresh (a different run; the reported releases still
        count every release the server received, so the epsilon is never under-reported).

    Returns
    -------
    RunResult
        With ``client_states`` read from the nodes' contexts.

    Examples
    --------
    Private FedAvg on the seed's non-IID Iris split: the numbers of the numpy runner.

    >>> import numpy as np
    >>> from privacy.federated import run_sync
    >>> from simulations.studies.federated_experiments import ExperimentConfig, build_trial
    >>> from privacy.federated.flower import run_inprocess_sync
    >>> config = ExperimentConfig("iris", partition="expert", rounds=3)
    >>> trial = build_trial(config, 0, ("fedavg",))
    >>> fedavg, clients = trial.algorithms["fedavg"], trial.data.clients
    >>> flower = run_inprocess_sync(fedavg, clients, rounds=3, seed=1)
    >>> reference = run_sync(fedavg, clients, rounds=3, seed=1)
    >>> bool(np.array_equal(flower.model["w"], reference.model["w"]))
    True
    >>> bool(np.array_equal(flower.epsilon_history(), reference.epsilon_history()))
    True
    """
    grid = _grid(algorithm, client_data, state_dir, grid_options, resume, seed)
    result = run_sync_grid(algorithm, grid, num_clients=len(grid.contexts), rounds=rounds,
                           seed=seed, timeout=timeout, min_replies=min_replies,
                           evaluate=evaluate, checkpoint=checkpoint,
                           checkpoint_every=checkpoint_every, resume=resume, progress=progress,
                           poll_interval=1.0)
    return RunResult(algorithm, result.state, _with_server_counts(grid, result), result.history,
                     seeded_noise=True)


def run_inprocess_async(algorithm: Any, client_data: Sequence[ClientData], *,
                        stagger: Sequence[int], ticks: int, seed: int = 0,
                        timeout: float | None = None, max_staleness: int | None = None,
                        evaluate: Evaluate | None = None, checkpoint: str | Path | None = None,
                        checkpoint_every: int = 1, resume: str | Path | None = None,
                        state_dir: str | Path | None = None,
                        progress: Callable[[int], None] | None = None,
                        **grid_options: Any) -> RunResult:
    """:func:`privacy.federated.runner.run_async` on Flower, in this process.

    One tick is one virtual second; ``timeout`` is in ticks.  Other arguments as in
    :func:`run_inprocess_sync` and :func:`~privacy.federated.flower.run_async_grid`.
    """
    grid = _grid(algorithm, client_data, state_dir, grid_options, resume, seed)
    result = run_async_grid(algorithm, grid, num_clients=len(grid.contexts), ticks=ticks,
                            tick=1.0, stagger=stagger, seed=seed, timeout=timeout,
                            max_staleness=max_staleness, evaluate=evaluate,
                            checkpoint=checkpoint, checkpoint_every=checkpoint_every,
                            resume=resume, progress=progress)
    return RunResult(algorithm, result.state, _with_server_counts(grid, result), result.history,
                     seeded_noise=True)
