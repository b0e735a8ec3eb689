"""Plain numpy reference runtime: synchronous rounds and asynchronous stagger on virtual time.

The runner is only transport: the server step (:class:`~privacy.federated.server_step.ServerStep`,
shared with the Flower runtimes) plans each round, judges every reply (rejections are logged to
the ``privacy.federated`` logger) and aggregates; the runner calls
:func:`~privacy.federated.protocol.run_client` for each selected client and passes the replies
through a simulated :class:`Network` (latency, jitter, drop-outs, a timeout, and a ``tamper``
hook that tests use to inject malformed, NaN, duplicate or late replies).  Time is simulated,
so a dropped client costs a synchronous round exactly its ``timeout`` and no wall-clock waiting.

Every random number comes from :func:`~privacy.federated.protocol.derive_rng` keyed by (seed,
client, round), the clients' noise by (client secret, client, round): a run resumed from a
checkpoint continues bit-identically, and other runtimes (Flower in-process or as real
processes) reproduce the same numbers.  The runner is a simulation: unless the caller gives the
clients' ``secrets``, they derive from the run seed
(:func:`~privacy.federated.algorithm.simulation_secret`), so whoever knows the seed knows the
noise (``RunResult.seeded_noise``).  The secrets are never written to a checkpoint.

References
----------
Seed Algorithms 1-2 and Sec. 7.3.4 (stagger rates gamma_k; client k answers once per gamma_k
answers of the fastest client), Sec. 8.5 (stagger [1, 2, 5, 10]).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer, check_nonnegative, check_probability
from privacy.federated.algorithm import check_secret, derive_rng, run_client, simulation_secret
from privacy.federated.results import (
    RoundRecord,
    RunResult,
    history_from_json,
    history_to_json,
    release_counts,
)
from privacy.federated.server_step import Evaluate, ServerStep, Verdict, check_stagger
from privacy.federated.state_io import (
    load_array_groups,
    load_server_state,
    save_array_groups,
    save_server_state,
)
from privacy.federated.values import ClientData, ClientState, Message, Reply, ServerState

__all__ = ["Network", "RoundRecord", "RunResult", "run_sync", "run_async", "stagger_schedule"]

Tamper = Callable[[int, int, Reply], Sequence[Reply]]


def _per_client(values: Any, n: int, name: str, check: Callable[[str, Any], float]) -> np.ndarray:
    if np.ndim(values) == 0:
        return np.full(n, check(name, values))
    values = list(values)
    if len(values) != n:
        raise DimensionError(f"{name} has {len(values)} entries; expected {n} (one per client)")
    return np.array([check(f"{name}[{k}]", v) for k, v in enumerate(values)])


@dataclass(frozen=True)
class Network:
    """The simulated network between the server and its clients (virtual time).

    Parameters
    ----------
    latency : float or sequence of float, default 0
        Delay of a reply after the client received its message (per client), in the same unit
        as ``timeout`` (rounds are one unit long in the asynchronous runner: ticks).
    jitter : float, default 0
        Mean of an exponential extra delay added to every reply.
    drop : float or sequence of float, default 0
        Probability that a reply is lost (per client).
    timeout : float, default inf
        Synchronous: a round closes at ``timeout`` even if replies are missing (they are then
        late and rejected as stale when they arrive).  Asynchronous: a request unanswered after
        ``timeout`` is given up and re-issued.
    tamper : callable (client_id, round, reply) -> sequence of Reply, optional
        Replaces a client's reply by what actually arrives (none, a corrupted copy,
        duplicates, ...); tests use it to check that bad replies are rejected.
    """

    latency: float | Sequence[float] = 0.0
    jitter: float = 0.0
    drop: float | Sequence[float] = 0.0
    timeout: float = math.inf
    tamper: Tamper | None = None

    def __post_init__(self) -> None:
        check_nonnegative("jitter", self.jitter)
        if not (isinstance(self.timeout, (int, float)) and self.timeout > 0):
            raise ParameterError(f"timeout must be a positive number (inf allowed); got "
                                 f"{self.timeout!r}")

    def _arrays(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        return (_per_client(self.latency, n, "latency", check_nonnegative),
                _per_client(self.drop, n, "drop", check_probability))

    def deliveries(self, client_id: int, round: int, reply: Reply, start: float,
                   latency: float, drop: float, rng: np.random.Generator
                   ) -> list[tuple[float, Reply]]:
        """(arrival time, reply) pairs for one sent reply (possibly none)."""
        lost = rng.random() < drop
        extra = rng.exponential(self.jitter) if self.jitter > 0 else 0.0
        if lost:
            return []
        replies = [reply] if self.tamper is None else list(self.tamper(client_id, round, reply))
        return [(start + latency + extra, r) for r in replies]


def _secrets(secrets: Sequence[int] | None, n: int, seed: int) -> tuple[list[int], bool]:
    """Each client's noise secret and whether they derive from the run seed."""
    if secrets is None:
        return [simulation_secret(seed, k) for k in range(n)], True
    if isinstance(secrets, (str, bytes)) or not isinstance(secrets, Sequence):
        raise ParameterError(f"secrets must be a sequence of {n} client secrets (one per "
                             f"client) or None (derived from the run seed); got "
                             f"{type(secrets).__name__}")
    if len(secrets) != n:
        raise DimensionError(f"secrets has {len(secrets)} entries; expected {n} (one per "
                             f"client)")
    return [check_secret(s, f"secrets[{k}]") for k, s in enumerate(secrets)], False


def _check_data(client_data: Sequence[ClientData]) -> list[ClientData]:
    data = list(client_data)
    if not data:
        raise ParameterError("client_data must hold at least one client's data")
    for k, d in enumerate(data):
        if not isinstance(d, Mapping):
            raise ParameterError(f"client_data[{k}] must be a mapping name -> array; got "
                                 f"{type(d).__name__}")
    return data


# ------------------------------------------------------------------------------- checkpoints
# An in-flight event is (time, kind, client, seq, payload): kind 0 = a reply arriving (payload a
# Reply), kind 1 = the timeout of asynchronous request ``payload`` (an int).
Event = tuple[float, int, int, int, Any]


def _save(path: Path, step: ServerStep, client_states: Sequence[ClientState],
          position: Mapping[str, Any], events: Sequence[Event]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    groups: dict[str, Mapping[str, Any]] = {f"c{k}": c.arrays for k, c in enumerate(client_states)}
    headers = []
    for i, (when, kind, k, seq, payload) in enumerate(events):
        if kind == 0:
            groups[f"e{i}"] = payload.arrays
            headers.append([when, kind, k, seq, dict(payload.metrics)])
        else:
            headers.append([when, kind, k, seq, payload])
    save_array_groups(path / "run.npz", groups)
    extra = {"client_scalars": [dict(s.scalars) for s in client_states],
             "history": history_to_json(step.history), "position": dict(position),
             "events": headers}
    save_server_state(path / "server", step.state, extra=extra)


def _load(path: Path) -> tuple[ServerState, list[ClientState], list[RoundRecord], dict,
                               list[Event]]:
    state, extra = load_server_state(Path(path) / "server")
    groups = load_array_groups(Path(path) / "run.npz")
    clients = [ClientState(groups.get(f"c{k}", {}), scalars)
               for k, scalars in enumerate(extra["client_scalars"])]
    events = [(when, kind, k, seq, Reply(groups.get(f"e{i}", {}), payload) if kind == 0
               else payload) for i, (when, kind, k, seq, payload) in enumerate(extra["events"])]
    return state, clients, history_from_json(extra["history"]), extra["position"], events


def _start(algorithm: Any, data: Sequence[ClientData], seed: int,
           resume: str | Path | None, **options: Any
           ) -> tuple[ServerStep, list[ClientState], dict, list[Event]]:
    if resume is not None:
        state, clients, history, position, events = _load(Path(resume))
        step = ServerStep.resume(algorithm, state, history, num_clients=len(data),
                                 source=resume, **options)
        return step, clients, position, events
    step = ServerStep.start(algorithm, num_clients=len(data), seed=seed, **options)
    return step, [ClientState() for _ in data], {}, []


# ------------------------------------------------------------------------------- synchronous
def run_sync(algorithm: Any, client_data: Sequence[ClientData], *, rounds: int, seed: int = 0,
             network: Network | None = None, min_replies: int = 1,
             evaluate: Evaluate | None = None, checkpoint: str | Path | None = None,
             checkpoint_every: int = 1, resume: str | Path | None = None,
             progress: Callable[[int], None] | None = None, screen: bool = True,
             secrets: Sequence[int] | None = None) -> RunResult:
    """Run ``rounds`` synchronous rounds of an algorithm on simulated clients.

    Each round: ``configure_round`` (server rng ``derive_rng(seed, "server", 0, t)``) selects
    clients; each selected client runs :func:`run_client`; the network delivers its reply at
    ``latency`` (+ jitter) unless it is dropped; the round closes when every selected reply has
    arrived or at ``timeout``, whichever is first; replies arriving after that are rejected as
    stale in the round they arrive in.  Valid replies go to ``aggregate`` (when at least
    ``min_replies`` arrived; otherwise the round leaves the state unchanged).

    Parameters
    ----------
    algorithm : FederatedAlgorithm
    client_data : sequence of mapping
        Client ``k``'s data is ``client_data[k]``.
    rounds : int
        Total number of rounds (a resumed run continues up to this total).
    seed : int, default 0
        Run seed (ignored when resuming: the checkpoint holds it).
    network : Network, optional
        Default: instant, lossless delivery.
    min_replies : int, default 1
    evaluate : callable model -> metrics, optional
        Called after every round with ``algorithm.model(state)``.
    checkpoint : path, optional
        Directory to save the run in after every ``checkpoint_every`` rounds (overwritten).
    resume : path, optional
        Continue a run saved with ``checkpoint`` (bit-identical to an uninterrupted run).
    progress : callable round -> None, optional
    screen : bool, default True
        Screen replies against the algorithm's declared bounds and reject integer / boolean
        arrays (:class:`~privacy.federated.server_step.ServerStep`); ``False``: the
        undefended server of the trust study.
    secrets : sequence of int, optional
        Each client's noise secret (:func:`~privacy.federated.algorithm.new_client_secret`):
        the noise is then not derivable from the seed.  Default: derived from the run seed
        (:func:`~privacy.federated.algorithm.simulation_secret`), a simulation whose noise
        whoever knows the seed can remove.  A resumed run needs the same secrets again (they
        are not in the checkpoint).

    Returns
    -------
    RunResult
        ``seeded_noise`` says whether the secrets came from the seed.
        ``history[t].releases`` counts each client's noisy releases after round ``t``;
        ``epsilon_history()`` turns them into composed epsilons (upper bounds from the
        accountant) and ``final_epsilon()`` gives the exact final values.

    Examples
    --------
    See :mod:`privacy.federated.protocol`.
    """
    data = _check_data(client_data)
    rounds = check_integer("rounds", rounds, minimum=0)
    checkpoint_every = check_integer("checkpoint_every", checkpoint_every, minimum=1)
    network = network or Network()
    latency, drop = network._arrays(len(data))
    step, clients, position, pending = _start(algorithm, data, seed, resume,
                                              min_replies=min_replies, evaluate=evaluate,
                                              screen=screen)
    keys, seeded = _secrets(secrets, len(data), step.state.seed)
    time = float(position.get("time", 0.0))
    sequence = int(position.get("sequence", 0))
    for t in range(int(position.get("next_round", 0)), rounds):
        net_rng = derive_rng(step.state.seed, "network", 0, t)
        fresh: list[Event] = []
        selected = []
        for k, message in step.open_round(t):
            selected.append(k)
            reply, clients[k] = run_client(algorithm, k, data[k], clients[k], message,
                                           secret=keys[k])
            for when, r in network.deliveries(k, t, reply, time, latency[k], drop[k], net_rng):
                fresh.append((when, 0, k, sequence, r))
                sequence += 1
        closes = time + network.timeout
        arrived = [a for a in fresh if a[0] <= closes]
        missing = tuple(sorted(set(selected) - {a[2] for a in arrived}))
        if missing and not math.isfinite(network.timeout):
            raise ParameterError(f"round {t}: the replies of clients {list(missing)} were lost "
                                 f"and the network has no timeout, so the synchronous round "
                                 f"would never close; set Network(timeout=...)")
        end = closes if missing else max((a[0] for a in arrived), default=time)
        on_time = sorted([a for a in pending + fresh if a[0] <= end], key=lambda a: a[:4])
        pending = [a for a in pending + fresh if a[0] > end]  # late replies still in flight
        time = end
        step.close_round([(k, reply) for _, _, k, _, reply in on_time], missing=missing,
                         time=time, releases=release_counts(clients))
        if checkpoint is not None and ((t + 1) % checkpoint_every == 0 or t + 1 == rounds):
            position = {"next_round": t + 1, "time": time, "sequence": sequence}
            _save(Path(checkpoint), step, clients, position, pending)
        if progress is not None:
            progress(t)
    return dataclasses.replace(step.result(clients), seeded_noise=seeded)


# ------------------------------------------------------------------------------- asynchronous
def stagger_schedule(stagger: Sequence[int], ticks: int) -> list[tuple[int, int]]:
    """(tick, client) arrivals of a lossless stagger: client k answers at gamma_k, 2 gamma_k, ...

    Within a tick clients arrive in increasing id order.  After ``Gamma = lcm(gamma)`` ticks
    client k has answered ``Gamma / gamma_k`` times (seed Sec. 7.3.4).

    Examples
    --------
    >>> stagger_schedule([1, 2], 4)
    [(1, 0), (2, 0), (2, 1), (3, 0), (4, 0), (4, 1)]
    """
    rates = [check_integer(f"stagger[{k}]", g, minimum=1) for k, g in enumerate(stagger)]
    ticks = check_integer("ticks", ticks, minimum=0)
    return [(t, k) for t in range(1, ticks + 1) for k, g in enumerate(rates) if t % g == 0]


def run_async(algorithm: Any, client_data: Sequence[ClientData], *, stagger: Sequence[int],
              ticks: int, seed: int = 0, network: Network | None = None,
              max_staleness: int | None = None, evaluate: Evaluate | None = None,
              checkpoint: str | Path | None = None, checkpoint_every: int = 1,
              resume: str | Path | None = None,
              progress: Callable[[int], None] | None = None, screen: bool = True,
              secrets: Sequence[int] | None = None) -> RunResult:
    """Run an asynchronous algorithm for ``ticks`` ticks with stagger rates ``gamma_k``.

    At time 0 every client gets a request (``configure_client``, request index 0).  Client
    ``k`` needs ``stagger[k]`` ticks to answer, plus the network's latency and jitter; the
    server applies each valid reply on arrival (``apply_reply``, ordered by arrival time and
    client id) and immediately sends that client its next request, built from the current
    state (so ``model_version`` measures staleness).  A lost reply is noticed at ``timeout``
    and the request is re-issued; a reply that arrives after its request was given up is
    rejected as stale.  Records are kept per tick (after all arrivals up to that tick).

    Parameters
    ----------
    algorithm : AsyncAlgorithm
    client_data : sequence of mapping
    stagger : sequence of int
        ``gamma_k >= 1``: client ``k`` answers once per ``gamma_k`` ticks.
    ticks : int
        Total ticks (a resumed run continues up to this total).
    max_staleness : int, optional
        Reject replies computed from a model more than this many versions old.
    seed, network, evaluate, checkpoint, checkpoint_every, resume, progress, screen, secrets
        As in :func:`run_sync`.  A client whose answer to its request is rejected is sent a
        new request at once (:attr:`Verdict.RETRY <privacy.federated.server_step.Verdict>`).

    Returns
    -------
    RunResult
        One :class:`RoundRecord` per tick (``round`` = tick; ``staleness`` of each accepted
        reply).
    """
    data = _check_data(client_data)
    n = len(data)
    rates = check_stagger(stagger, n)
    ticks = check_integer("ticks", ticks, minimum=0)
    checkpoint_every = check_integer("checkpoint_every", checkpoint_every, minimum=1)
    network = network or Network()
    latency, drop = network._arrays(n)
    step, clients, position, events = _start(algorithm, data, seed, resume,
                                             max_staleness=max_staleness, evaluate=evaluate,
                                             screen=screen)
    keys, seeded = _secrets(secrets, n, step.state.seed)
    step.requests = [int(r) for r in position.get("requests", [0] * n)]
    step.outstanding = [None if r < 0 else int(r) for r in position.get("outstanding", [-1] * n)]
    step.retired = set(position.get("retired", []))
    sequence = int(position.get("sequence", 0))
    heapq.heapify(events)

    def send(message: Message, now: float) -> None:
        nonlocal sequence
        k, j = message.client_id, message.round
        reply, clients[k] = run_client(algorithm, k, data[k], clients[k], message,
                                       secret=keys[k])
        net_rng = derive_rng(step.state.seed, "network", k, j)
        arrivals = network.deliveries(k, j, reply, now + rates[k], latency[k], drop[k], net_rng)
        timeouts = [(now + network.timeout, 1, j)] if math.isfinite(network.timeout) else []
        for when, r in arrivals:
            sequence += 1
            heapq.heappush(events, (when, 0, k, sequence, r))
        for when, kind, payload in timeouts:
            sequence += 1
            heapq.heappush(events, (when, kind, k, sequence, payload))

    if not position:
        for k in range(n):
            send(step.request(k), 0.0)
    for tick in range(int(position.get("next_tick", 1)), ticks + 1):
        step.open_tick(tick)
        while events and events[0][0] <= tick:
            when, kind, k, _, payload = heapq.heappop(events)
            if kind == 1:  # timeout of request `payload`
                if step.awaits(k, payload):
                    send(step.reissue(k, tick), when)
            elif step.receive(k, payload) in (Verdict.APPLIED, Verdict.RETRY):
                send(step.request(k), when)
        step.close_tick(time=float(tick), releases=release_counts(clients))
        if checkpoint is not None and (tick % checkpoint_every == 0 or tick == ticks):
            outstanding = [-1 if j is None else j for j in step.outstanding]
            _save(Path(checkpoint), step, clients,
                  {"next_tick": tick + 1, "requests": step.requests, "outstanding": outstanding,
                   "retired": sorted(step.retired), "sequence": sequence}, sorted(events))
        if progress is not None:
            progress(tick)
    return dataclasses.replace(step.result(clients), seeded_noise=seeded)
