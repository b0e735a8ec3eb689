"""Asynchronous federated learning on Flower (seed Algorithm 2), which Flower itself lacks.

The loop keeps one request outstanding per client on the grid's non-blocking
``push_messages`` / ``pull_messages``: a valid reply is applied at once with the algorithm's
``apply_reply`` and the client immediately gets its next request, built from the current
state.  Each message's group id carries ``"<request>/<model version>"``, so the staleness of a
reply is ``state.version - version`` (and ``max_staleness`` rejects replies computed from too
old a model).

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

import numpy as np
from flwr.app import DEFAULT_TTL
from flwr.serverapp import Grid

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer, check_positive
from privacy.federated.flower.records import reply_from_flower
from privacy.federated.flower.transport import (
    ReleaseBook,
    clock_of,
    discover_clients,
    finite_or_none,
    flower_message,
    history_from_json,
    history_to_json,
    push,
)
from privacy.federated.protocol import (
    VERSION,
    Message,
    derive_rng,
    load_server_state,
    logger,
    save_server_state,
    validate_reply,
)
from privacy.federated.runner import Evaluate, RoundRecord, RunResult

__all__ = ["run_async_grid"]


@dataclass
class _Request:
    round: int
    sent: int
    message: Message
    message_id: str | None = None


def _save(path: Path, state: Any, history: Sequence[RoundRecord], book: ReleaseBook,
          position: dict[str, Any], outstanding: Sequence[_Request | None]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    requests = [[k, r.round, r.sent, dict(r.message.config)]
                for k, r in enumerate(outstanding) if r is not None]
    arrays = {f"{k}/{name}": np.asarray(v) for k, r in enumerate(outstanding) if r is not None
              for name, v in r.message.arrays.items()}
    np.savez(path / "requests.npz", **arrays)
    save_server_state(path / "server", state, extra={
        "mode": "async", "history": history_to_json(history), "releases": book.to_json(),
        "position": {**position, "outstanding": requests}})


def _load(path: Path) -> tuple[Any, dict[str, Any], list[_Request | None]]:
    state, extra = load_server_state(path / "server")
    if extra.get("mode") != "async":
        raise ParameterError(f"checkpoint {path} is not an asynchronous Flower run (mode "
                             f"{extra.get('mode')!r})")
    arrays: dict[int, dict[str, np.ndarray]] = {}
    with np.load(path / "requests.npz", allow_pickle=False) as npz:
        for key in npz.files:
            k, name = key.split("/", 1)
            arrays.setdefault(int(k), {})[name] = npz[key]
    outstanding: list[_Request | None] = [None] * state.num_clients
    for k, round_, sent, config in extra["position"]["outstanding"]:
        outstanding[k] = _Request(round_, sent, Message(arrays.get(k, {}), config))
    return state, extra, outstanding


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
        if np.ndim(stagger) != 1 or len(stagger) != num_clients:
            raise DimensionError(f"stagger must hold one integer rate per client "
                                 f"({num_clients}); got {stagger!r}")
        stagger = [check_integer(f"stagger[{k}]", g, minimum=1) for k, g in enumerate(stagger)]
    if timeout is not None:
        timeout = check_positive("timeout", timeout)
    ttl = finite_or_none(ttl)
    lifetime = (ttl or DEFAULT_TTL) / tick

    if resume is not None:
        state, extra, outstanding = _load(Path(resume))
        if state.num_clients != num_clients:
            raise DimensionError(f"checkpoint {resume} is for {state.num_clients} clients; "
                                 f"the run has num_clients={num_clients}")
        history = history_from_json(extra["history"])
        book = ReleaseBook(num_clients, **extra["releases"])
        position = extra["position"]
        requests, retired = list(position["requests"]), set(position["retired"])
        next_tick = int(position["next_tick"])
    else:
        state = algorithm.init_server_state(num_clients, check_integer("seed", seed, minimum=0))
        history, book, outstanding = [], ReleaseBook(num_clients), [None] * num_clients
        requests, retired, next_tick = [0] * num_clients, set(), 1
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
        outstanding[k] = request
        book.sent(k, request.round)
        if request.message_id is None:
            logger.warning("client %d: request %d could not be pushed", k, request.round)
        else:
            sent_to[request.message_id] = (k, request.sent)

    def send(k: int, now: int) -> None:
        j = requests[k]
        requests[k] += 1
        plan = algorithm.configure_client(state, k, j, derive_rng(state.seed, "server", k + 1, j))
        message = plan.message_for(k, round=j, model_version=state.version, seed=state.seed)
        transmit(k, _Request(j, now, message))

    for k, request in enumerate(outstanding):
        if request is not None:
            transmit(k, request)
    if resume is None:
        for k in range(num_clients):
            send(k, 0)
    for tau in range(next_tick, ticks + 1):
        clock.sleep(origin + tau * tick - clock.now())
        wanted = sorted(set(sent_to) & ({r.message_id for r in outstanding if r} | set(late)))
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
        accepted, rejected, staleness, seen = [], [], [], set()
        for _, k, _, message in ready:
            book.received(k, message)
            reply, request = reply_from_flower(message), outstanding[k]
            if isinstance(reply, str):
                reason = reply
            elif request is None:
                reason = "unsolicited reply: no request outstanding for this client"
            else:
                reason = validate_reply(reply, algorithm.reply_spec(state, k), client_id=k,
                                        expected_round=request.round, seen=seen,
                                        current_version=state.version,
                                        max_staleness=max_staleness)
            if reason is not None:
                logger.warning("tick %d: rejected reply from client %d: %s", tau, k, reason)
                rejected.append((k, reason))
                continue
            outstanding[k] = None
            if reply.abstained:
                retired.add(k)
                logger.info("tick %d: client %d abstained (privacy budget spent); no more "
                            "requests", tau, k)
                continue
            staleness.append(state.version - int(reply.metrics[VERSION]))
            state = algorithm.apply_reply(state, k, reply)
            accepted.append(k)
            send(k, tau)
        for k, request in enumerate(outstanding):
            if (timeout is not None and request is not None and k not in retired
                    and tau - request.sent >= timeout):
                logger.warning("tick %d: client %d did not answer request %d within the "
                               "timeout; re-issuing", tau, k, request.round)
                if request.message_id is not None:
                    late[request.message_id] = tau + lifetime
                send(k, tau)
        late = {i: e for i, e in late.items() if e > tau}
        metrics = dict(evaluate(algorithm.model(state))) if evaluate is not None else {}
        history.append(RoundRecord(tau, clock.now() - origin, tuple(accepted), tuple(rejected),
                                   (), state.version, tuple(staleness), metrics,
                                   book.counts(algorithm)))
        logger.info("tick %d: version %d, %d applied, %d rejected%s", tau, state.version,
                    len(accepted), len(rejected),
                    "".join(f", {k}={v:.6g}" for k, v in metrics.items()))
        if checkpoint is not None and (tau % checkpoint_every == 0 or tau == ticks):
            _save(Path(checkpoint), state, history, book,
                  {"next_tick": tau + 1, "requests": requests, "retired": sorted(retired)},
                  outstanding)
        if progress is not None:
            progress(tau)
    return RunResult(algorithm, state, book.client_states(algorithm), tuple(history))

