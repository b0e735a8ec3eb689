"""Asynchronous federated learning on Flower (seed Algorithm 2), which Flower itself lacks.

The loop keeps one request outstanding per client on the grid's non-blocking
``push_messages`` / ``pull_messages``; the server step
(:class:`~privacy.federated.server_step.ServerStep`, shared with the numpy runner) judges each
reply and applies a valid one at once with the algorithm's ``apply_reply``, and the client
immediately gets its next request, built from the current state.  Each message's group id
carries ``"<request>/<model version>"``, so the staleness of a reply is
``state.version - version`` (and ``max_staleness`` rejects replies computed from too old a
model).

Time runs in ticks of ``tick`` seconds of the grid's clock (virtual in-process, wall time in a
deployment).  Stagger rates gamma_k (seed Sec. 7.3.4) are emulated on the server: a reply to a
request sent at tick s is *due* at tick ``s + gamma_k`` and is held until then, so client k
answers once per gamma_k ticks whatever the real speed of its node, and the arrival order — and
therefore every number — equals :func:`privacy.federated.runner.run_async`'s.  A reply that
arrives after its due tick (a tick shorter than the real round trip) is applied when it
arrives and logged.  Without ``stagger`` replies are applied at the first tick after they
arrive, in client-id order.

A request unanswered ``timeout`` ticks after it was sent is given up and re-issued; its reply,
if it still comes, is rejected as stale.  Checkpoints hold the server state, the history, the
request counters and the outstanding requests; a resumed run re-sends those requests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flwr.app import DEFAULT_TTL
from flwr.serverapp import Grid

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer, check_positive
from privacy.federated.algorithm import logger
from privacy.federated.flower.records import reply_from_flower
from privacy.federated.flower.transport import (
    ReleaseBook,
    clock_of,
    discover_clients,
    finite_or_none,
    flower_message,
    push,
)
from privacy.federated.results import RunResult, history_from_json, history_to_json
from privacy.federated.server_step import Evaluate, ServerStep, Verdict, check_stagger
from privacy.federated.state_io import (
    load_array_groups,
    load_server_state,
    save_array_groups,
    save_server_state,
)
from privacy.federated.values import Message, ServerState

__all__ = ["run_async_grid"]


@dataclass
class _Request:
    round: int
    sent: int
    message: Message
    message_id: str | None = None


def _save(path: Path, step: ServerStep, book: ReleaseBook, next_tick: int,
          in_flight: Sequence[_Request | None]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    requests = [[k, r.round, r.sent, dict(r.message.config)]
                for k, r in enumerate(in_flight) if r is not None]
    save_array_groups(path / "requests.npz", {k: r.message.arrays
                                              for k, r in enumerate(in_flight) if r is not None})
    position = {"next_tick": next_tick, "requests": step.requests,
                "retired": sorted(step.retired), "outstanding": requests}
    save_server_state(path / "server", step.state, extra={
        "mode": "async", "history": history_to_json(step.history), "releases": book.to_json(),
        "position": position})


def _load(path: Path) -> tuple[ServerState, dict[str, Any], list[_Request | None]]:
    state, extra = load_server_state(path / "server")
    if extra.get("mode") != "async":
        raise ParameterError(f"checkpoint {path} is not an asynchronous Flower run (mode "
                             f"{extra.get('mode')!r})")
    arrays = load_array_groups(path / "requests.npz")
    in_flight: list[_Request | None] = [None] * state.num_clients
    for k, round_, sent, config in extra["position"]["outstanding"]:
        in_flight[k] = _Request(round_, sent, Message(arrays.get(str(k), {}), config))
    return state, extra, in_flight


def run_async_grid(algorithm: Any, grid: Grid, *, num_clients: int, ticks: int,
                   tick: float = 1.0, stagger: Sequence[int] | None = None, seed: int = 0,
                   timeout: float | None = None, max_staleness: int | None = None,
                   evaluate: Evaluate | None = None, checkpoint: str | Path | None = None,
                   checkpoint_every: int = 1, resume: str | Path | None = None,
                   progress: Callable[[int], None] | None = None,
                   discovery_timeout: float = 120.0, ttl: float | None = None) -> RunResult:
    """Run an asynchronous protocol algorithm for ``ticks`` ticks on a Flower grid.

    Parameters
    ----------
    algorithm : AsyncAlgorithm
        Needs ``configure_client`` and ``apply_reply``.
    grid : flwr.serverapp.Grid
    num_clients : int
    ticks : int
        Total ticks (a resumed run continues up to this total).
    tick : float, default 1
        Length of a tick in seconds of the grid's clock.  In a real deployment choose it
        longer than a message round trip (~10 s with Flower 1.41's polling SuperNodes).
    stagger : sequence of int, optional
        ``gamma_k >= 1``: client k answers once per ``gamma_k`` ticks (emulated; see the
        module docstring).  Default: replies count when they arrive.
    seed : int, default 0
    timeout : float, optional
        Ticks after which an unanswered request is re-issued (default: never).
    max_staleness : int, optional
        Reject replies computed from a model more than this many versions old.
    evaluate, checkpoint, checkpoint_every, resume, progress, discovery_timeout, ttl
        As in :func:`~privacy.federated.flower.run_sync_grid`.

    Returns
    -------
    RunResult
        One record per tick, as :func:`privacy.federated.runner.run_async` (``client_states``
        hold only the release counts: the states stay on the nodes).
    """
    num_clients = check_integer("num_clients", num_clients, minimum=1)
    ticks = check_integer("ticks", ticks, minimum=0)
    tick = check_positive("tick", tick)
    checkpoint_every = check_integer("checkpoint_every", checkpoint_every, minimum=1)
    if stagger is not None:
        stagger = check_stagger(stagger, num_clients)
    if timeout is not None:
        timeout = check_positive("timeout", timeout)
    ttl = finite_or_none(ttl)
    lifetime = (ttl or DEFAULT_TTL) / tick

    options = {"max_staleness": max_staleness, "evaluate": evaluate}
    if resume is not None:
        state, extra, in_flight = _load(Path(resume))
        step = ServerStep.resume(algorithm, state, history_from_json(extra["history"]),
                                 num_clients=num_clients, source=resume, **options)
        book = ReleaseBook(num_clients, **extra["releases"])
        position = extra["position"]
        step.requests, step.retired = list(position["requests"]), set(position["retired"])
        step.outstanding = [None if r is None else r.round for r in in_flight]
        next_tick = int(position["next_tick"])
    else:
        step = ServerStep.start(algorithm, num_clients=num_clients, seed=seed, **options)
        book, in_flight, next_tick = ReleaseBook(num_clients), [None] * num_clients, 1
    nodes = discover_clients(grid, num_clients, timeout=discovery_timeout)
    client_of = {node: k for k, node in nodes.items()}
    clock = clock_of(grid)
    origin = clock.now() - (next_tick - 1) * tick
    sent_to: dict[str, tuple[int, int]] = {}   # message id -> (client, tick sent)
    late: dict[str, float] = {}                # ids of given-up requests -> expiry tick
    held: list[tuple[int, int, int, Any]] = []  # (due tick, client, arrival, reply)
    arrivals = 0

    def transmit(k: int, request: _Request) -> None:
        [request.message_id] = push(grid, [flower_message(request.message, nodes[k], ttl=ttl)])
        in_flight[k] = request
        book.sent(k, request.round)
        if request.message_id is None:
            logger.warning("client %d: request %d could not be pushed", k, request.round)
        else:
            sent_to[request.message_id] = (k, request.sent)

    def send(message: Message, now: int) -> None:
        transmit(message.client_id, _Request(message.round, now, message))

    for k, request in enumerate(in_flight):
        if request is not None:
            transmit(k, request)
    if resume is None:
        for k in range(num_clients):
            send(step.request(k), 0)
    for tau in range(next_tick, ticks + 1):
        clock.sleep(origin + tau * tick - clock.now())
        wanted = sorted(set(sent_to) & ({r.message_id for r in in_flight if r} | set(late)))
        for message in grid.pull_messages(wanted) if wanted else []:
            k = client_of.get(message.metadata.src_node_id)
            if k is None:
                logger.warning("tick %d: rejected reply from unknown node %d", tau,
                               message.metadata.src_node_id)
                continue
            # a second reply to the same message is due at once (and rejected as duplicate)
            entry = sent_to.pop(message.metadata.reply_to_message_id, None)
            late.pop(message.metadata.reply_to_message_id, None)
            due = tau if entry is None or stagger is None else entry[1] + stagger[k]
            if due < tau:
                logger.warning("tick %d: reply of client %d was due at tick %d; the stagger "
                               "emulation lags (choose a longer tick)", tau, k, due)
            held.append((max(due, tau), k, arrivals, message))
            arrivals += 1
        held.sort(key=lambda item: item[:3])
        ready = [h for h in held if h[0] <= tau]
        held = [h for h in held if h[0] > tau]
        step.open_tick(tau)
        for _, k, _, message in ready:
            book.received(k, message)
            verdict = step.receive(k, reply_from_flower(message))
            if verdict is not Verdict.REJECTED:
                in_flight[k] = None
            if verdict in (Verdict.APPLIED, Verdict.RETRY):
                send(step.request(k), tau)
        for k, request in enumerate(in_flight):
            if (timeout is not None and request is not None and k not in step.retired
                    and tau - request.sent >= timeout):
                if request.message_id is not None:
                    late[request.message_id] = tau + lifetime
                send(step.reissue(k, tau), tau)
        late = {i: e for i, e in late.items() if e > tau}
        step.close_tick(time=clock.now() - origin, releases=book.counts(algorithm))
        if checkpoint is not None and (tau % checkpoint_every == 0 or tau == ticks):
            _save(Path(checkpoint), step, book, tau + 1, in_flight)
        if progress is not None:
            progress(tau)
    return step.result(book.client_states(algorithm))
