"""One server step for every runtime: plan, judge the replies, aggregate, record.

The numpy reference runner (:mod:`privacy.federated.runner`) and the Flower runtimes
(:mod:`privacy.federated.flower`) differ only in how messages travel: who is asked, what comes
back, and when.  Everything the server *decides* is here, once:

* **planning**: the server rng of each round (``derive_rng(seed, "server", 0, t)``) or
  asynchronous request (``derive_rng(seed, "server", k + 1, j)``), the algorithm's
  ``configure_round`` / ``configure_client`` and the messages with their reserved keys;
* **judging**: the replies of a round go through
  :func:`~privacy.federated.validation.validate_replies` at once, an asynchronous reply through
  :func:`~privacy.federated.validation.validate_reply` (plus "not selected" in a synchronous
  round, "unsolicited" when no request is outstanding), screened against the algorithm's
  declared ``reply_bounds`` (when it has them) and its ``screen_reply`` (when it has one:
  checks that need the whole reply); each rejection is logged to the
  ``privacy.federated`` logger with its reason and kept in the round's record; abstaining
  clients are never aggregated (asynchronously: never asked again); an asynchronous client
  whose answer to its request was rejected is asked again (:attr:`Verdict.RETRY`);
* **the strategy**: the algorithm's ``aggregate`` (FedInfer's posterior, the FedAvg family,
  robust rules: whatever the algorithm is) on the valid replies, in client-id order, when at
  least ``min_replies`` arrived; asynchronously ``apply_reply`` on each valid reply in arrival
  order, with its staleness;
* **bookkeeping**: the model version, the asynchronous request counters, the evaluation after
  every round and one :class:`~privacy.federated.results.RoundRecord` per round or tick, with
  the clients' release counts that the run's composed epsilons are computed from.

A runtime calls, per synchronous round ``t``::

    messages = step.open_round(t)                        # [(client_id, Message)]
    ... deliver them, collect what comes back ...
    record = step.close_round(received, missing=..., time=..., releases=...)

and asynchronously::

    message = step.request(k)                            # k's next request (also on re-issue)
    step.open_tick(tick)
    verdict = step.receive(k, reply)                     # APPLIED or RETRY -> send k its next
                                                         # request
    record = step.close_tick(time=..., releases=...)

Examples
--------
An asynchronous algorithm that adds up what its clients send; both replies of the tick were
computed from version 0, so the second one, applied after the first, is one version stale.

>>> import numpy as np
>>> from privacy.federated.values import CLIENT, ROUND, VERSION, Reply, RoundPlan, ServerState
>>> class Total:
...     def init_server_state(self, num_clients, seed):
...         return ServerState.new({"total": np.zeros(1)}, num_clients=num_clients, seed=seed)
...     def configure_client(self, state, client_id, request, rng):
...         return RoundPlan((client_id,), {"total": state.arrays["total"]})
...     def reply_spec(self, state, client_id):
...         return {"value": (1,)}
...     def apply_reply(self, state, client_id, reply):
...         total = state.arrays["total"] + reply.arrays["value"]
...         return state.replace(arrays={"total": total}, version=state.version + 1)
...     def model(self, state):
...         return dict(state.arrays)
>>> step = ServerStep.start(Total(), num_clients=2, seed=0)
>>> requests = [step.request(k) for k in range(2)]
>>> step.open_tick(1)
>>> for m in requests:
...     header = {CLIENT: m.client_id, ROUND: m.round, VERSION: m.model_version}
...     print(step.receive(m.client_id, Reply({"value": [m.client_id + 1.0]}, header)).name)
APPLIED
APPLIED
>>> print(step.receive(0, "client error (Flower code 0): sensor offline").name)
REJECTED
>>> record = step.close_tick(time=1.0, releases=(0, 0))
>>> record.accepted, record.staleness, step.model()["total"]
((0, 1), (0, 1), array([3.]))
"""

from __future__ import annotations

import enum
import functools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer
from privacy.federated.algorithm import derive_rng, logger
from privacy.federated.results import RoundRecord, RunResult
from privacy.federated.validation import StackedReplies, validate_replies, validate_reply
from privacy.federated.values import (
    ABSTAIN,
    ROUND,
    VERSION,
    ClientState,
    Message,
    Reply,
    ServerState,
)

__all__ = ["Evaluate", "Received", "Verdict", "ServerStep", "check_stagger"]

Evaluate = Callable[[Mapping[str, np.ndarray]], Mapping[str, float]]
#: One received reply: (client id, the reply, or why the runtime could not read it).
Received = tuple[int, "Reply | str"]


class Verdict(enum.Enum):
    """What became of one asynchronous reply."""

    APPLIED = "applied"
    ABSTAINED = "abstained"
    #: Rejected; the client's request stays outstanding (a stale, duplicate or unsolicited reply).
    REJECTED = "rejected"
    #: The client's answer to its outstanding request was rejected: ask it again.
    RETRY = "retry"


@dataclass
class _Tally:
    """The replies judged so far in the open round or tick."""

    index: int
    selected: tuple[int, ...] = ()
    accepted: list[int] = field(default_factory=list)
    valid: dict[int, Reply] = field(default_factory=dict)
    rejected: list[tuple[int, str]] = field(default_factory=list)
    staleness: list[int] = field(default_factory=list)
    seen: set = field(default_factory=set)


class ServerStep:
    """The server half of a federated run: its state, its history and every decision on replies.

    Parameters
    ----------
    algorithm : FederatedAlgorithm
        :class:`~privacy.federated.algorithm.AsyncAlgorithm` for the asynchronous methods.
    state : ServerState
        The current server state (``algorithm.init_server_state`` or a checkpoint's).
    history : sequence of RoundRecord, optional
        The records of the rounds already run (when resuming).
    min_replies : int, default 1
        Synchronous: fewer valid replies leave the state unchanged for that round (logged).
    max_staleness : int, optional
        Asynchronous: reject replies computed from a model more than this many versions old.
    evaluate : callable model -> metrics, optional
        Called on ``algorithm.model(state)`` after every round or tick.
    screen : bool, default True
        Reject integer / boolean reply arrays and arrays outside the algorithm's
        ``reply_bounds(state, client_id)`` (:class:`~privacy.federated.validation.ReplyBound`;
        an algorithm without the method declares none), and the replies that pass but that
        the algorithm's ``screen_reply(state, client_id, reply)`` gives a reason to reject
        (checks that need the whole reply, e.g. its reported counts; optional).  ``False`` is
        the undefended server of the trust study: it checks only the form of a reply.

    Attributes
    ----------
    state : ServerState
    history : list of RoundRecord
    requests : list of int
        Asynchronous: each client's next request index.
    outstanding : list of int or None
        Asynchronous: the request each client is expected to answer (``None``: none).
    retired : set of int
        Asynchronous: clients that abstained (their budget is spent) and are not asked again.
    """

    def __init__(self, algorithm: Any, state: ServerState, *,
                 history: Sequence[RoundRecord] = (), min_replies: int = 1,
                 max_staleness: int | None = None, evaluate: Evaluate | None = None,
                 screen: bool = True) -> None:
        self.algorithm = algorithm
        self.state = state
        self.history: list[RoundRecord] = list(history)
        self.min_replies = check_integer("min_replies", min_replies, minimum=1)
        self.max_staleness = max_staleness
        self.evaluate = evaluate
        self.screen = bool(screen)
        n = state.num_clients
        self.requests: list[int] = [0] * n
        self.outstanding: list[int | None] = [None] * n
        self.retired: set[int] = set()
        self._tally: _Tally | None = None
        self._model: tuple[ServerState, Mapping[str, np.ndarray]] | None = None

    @classmethod
    def start(cls, algorithm: Any, *, num_clients: int, seed: int, **options: Any
              ) -> ServerStep:
        """A fresh run: ``algorithm.init_server_state(num_clients, seed)`` and no history."""
        num_clients = check_integer("num_clients", num_clients, minimum=1)
        state = algorithm.init_server_state(num_clients, check_integer("seed", seed, minimum=0))
        return cls(algorithm, state, **options)

    @classmethod
    def resume(cls, algorithm: Any, state: ServerState, history: Sequence[RoundRecord], *,
               num_clients: int, source: str | Path, **options: Any) -> ServerStep:
        """Continue from a checkpoint's state and history (``source`` names it in errors).

        Raises
        ------
        DimensionError
            The checkpoint is for another number of clients.
        """
        if state.num_clients != num_clients:
            raise DimensionError(f"checkpoint {source} is for {state.num_clients} clients; "
                                 f"the run has {num_clients}")
        return cls(algorithm, state, history=history, **options)

    @property
    def num_clients(self) -> int:
        return self.state.num_clients

    @property
    def selected(self) -> tuple[int, ...]:
        """The clients asked in the open synchronous round."""
        return self._open("round").selected

    def model(self) -> Mapping[str, np.ndarray]:
        """``algorithm.model(state)`` (computed once per state)."""
        if self._model is None or self._model[0] is not self.state:
            self._model = (self.state, self.algorithm.model(self.state))
        return self._model[1]

    def result(self, client_states: Sequence[ClientState]) -> RunResult:
        """The run so far, with the client states the runtime knows."""
        return RunResult(self.algorithm, self.state, tuple(client_states), tuple(self.history))

    # ------------------------------------------------------------------ synchronous
    def open_round(self, round: int) -> list[tuple[int, Message]]:
        """Plan synchronous round ``round``: the selected clients and their messages.

        Raises
        ------
        ParameterError
            ``configure_round`` selected a client that does not exist.
        """
        state = self.state
        plan = self.algorithm.configure_round(state, round,
                                              derive_rng(state.seed, "server", 0, round))
        unknown = [k for k in plan.clients if k >= state.num_clients]
        if unknown:
            raise ParameterError(f"configure_round selected clients {unknown}; only "
                                 f"{state.num_clients} clients exist")
        self._tally = _Tally(round, plan.clients)
        return [(k, plan.message_for(k, round=round, model_version=state.version,
                                     seed=state.seed)) for k in plan.clients]

    def close_round(self, received: Iterable[Received], *, missing: Sequence[int], time: float,
                    releases: Sequence[int]) -> RoundRecord:
        """Judge the round's replies, aggregate the valid ones and record the round.

        Parameters
        ----------
        received : iterable of (int, Reply or str)
            What arrived before the round closed, in the runtime's order (a client id that is
            not one of the run's, e.g. ``-1``, with the reason it was not read).
        missing : sequence of int
            Selected clients whose reply did not arrive in time.
        time : float
            When the round closed.
        releases : sequence of int
            Each client's release count after the round (as far as the runtime knows).

        Returns
        -------
        RoundRecord
            Also appended to :attr:`history`.
        """
        tally = self._open("round")
        t = tally.index
        received = list(received)
        spec, bounds = self._declared()
        # The common case first: every reply a valid Reply of a selected client, none abstaining
        # (the whole-round passes show all of it); its stacked arrays go on to the aggregate.
        stacks: dict[str, np.ndarray] = {}
        # (tally.seen is not passed: a round is judged in this one call)
        reasons = validate_replies(received, spec, bounds, expected_round=t, screen=self.screen,
                                   stacks=stacks)
        # (every selected client, in the order asked: one comparison instead of a set)
        if stacks and (tuple(map(_ID, received)) == tally.selected
                       or set(tally.selected).issuperset(map(_ID, received))):
            tally.valid.update(received)
            received, reasons = [], []
        else:
            stacks = {}
        selected = set(tally.selected) if received else set()
        for (k, reply), reason in zip(received, reasons, strict=True):
            if type(reply) is str:       # what the runtime could not read, with its reason
                reason = reply
            elif reason is None and k not in selected:
                reason = f"client {k} was not selected in round {t}"
            if reason is not None:
                self._reject(tally, "round", k, reason)
            elif not reply.metrics.get(ABSTAIN, 0):
                tally.valid[k] = reply
        screen = self._screen_reply()
        for k in list(tally.valid) if screen is not None else ():
            reason = screen(self.state, k, tally.valid[k])
            if reason is not None:
                del tally.valid[k]
                self._reject(tally, "round", k, reason)
                stacks = {}          # (their rows no longer match the valid replies)
        if missing:
            logger.warning("round %d: no reply within the timeout from clients %s", t,
                           list(missing))
        tally.accepted = sorted(tally.valid)
        if len(tally.valid) >= self.min_replies:
            if tally.accepted != list(tally.valid):
                in_order = {k: tally.valid[k] for k in tally.accepted}
            else:   # the stacks' rows are in the order received: here the clients' order
                in_order = StackedReplies(tally.valid, stacks) if stacks else tally.valid
            self.state = self.algorithm.aggregate(self.state, t, in_order)
        else:
            logger.warning("round %d: %d valid replies < min_replies=%d; state unchanged", t,
                           len(tally.valid), self.min_replies)
        record = self._close(time, tuple(missing), releases)
        logger.info("round %d: version %d, %d accepted, %d rejected, %d missing%s", t,
                    record.version, len(record.accepted), len(record.rejected),
                    len(record.missing), _metrics_text(record.metrics))
        return record

    # ------------------------------------------------------------------ asynchronous
    def request(self, client_id: int) -> Message:
        """Client ``client_id``'s next asynchronous request, built from the current state."""
        k, state = client_id, self.state
        j = self.requests[k]
        self.requests[k] += 1
        plan = self.algorithm.configure_client(state, k, j,
                                               derive_rng(state.seed, "server", k + 1, j))
        self.outstanding[k] = j
        return plan.message_for(k, round=j, model_version=state.version, seed=state.seed)

    def awaits(self, client_id: int, request: int) -> bool:
        """Whether ``request`` is still the one ``client_id`` is expected to answer."""
        return self.outstanding[client_id] == request and client_id not in self.retired

    def reissue(self, client_id: int, tick: int) -> Message:
        """Give up the client's outstanding request (logged) and build its next one."""
        logger.warning("tick %d: client %d did not answer request %d within the timeout; "
                       "re-issuing", tick, client_id, self.outstanding[client_id])
        return self.request(client_id)

    def open_tick(self, tick: int) -> None:
        """Start collecting the replies of one asynchronous tick."""
        self._tally = _Tally(tick)

    def receive(self, client_id: int, reply: Reply | str) -> Verdict:
        """Judge one asynchronous reply and apply it at once when valid.

        On ``APPLIED`` and ``RETRY`` the runtime sends the client its next :meth:`request`
        (on ``RETRY`` the client's answer to its outstanding request was rejected, so without a
        new request it would never be heard again under an infinite timeout); on ``ABSTAINED``
        the client is retired; on ``REJECTED`` its request stays outstanding.
        """
        tally, k = self._open("tick"), client_id
        request = self.outstanding[k]
        if request is None and not isinstance(reply, str):
            reason = "unsolicited reply: no request outstanding for this client"
        else:
            reason = self._check(k, reply, expected_round=request, seen=tally.seen,
                                 current_version=self.state.version,
                                 max_staleness=self.max_staleness)
        if reason is not None:
            self._reject(tally, "tick", k, reason)
            if request is not None and not isinstance(reply, str) and _answers(reply, request):
                self.outstanding[k] = None
                return Verdict.RETRY
            return Verdict.REJECTED
        self.outstanding[k] = None
        if reply.abstained:
            self.retired.add(k)
            logger.info("tick %d: client %d abstained (privacy budget spent); no more "
                        "requests", tally.index, k)
            return Verdict.ABSTAINED
        tally.staleness.append(self.state.version - int(reply.metrics[VERSION]))
        self.state = self.algorithm.apply_reply(self.state, k, reply)
        tally.accepted.append(k)
        return Verdict.APPLIED

    def close_tick(self, *, time: float, releases: Sequence[int]) -> RoundRecord:
        """Record the tick (after every reply that arrived in it)."""
        tick = self._open("tick").index
        record = self._close(time, (), releases)
        logger.info("tick %d: version %d, %d applied, %d rejected%s", tick, record.version,
                    len(record.accepted), len(record.rejected), _metrics_text(record.metrics))
        return record

    # ------------------------------------------------------------------ shared
    def _open(self, kind: str) -> _Tally:
        if self._tally is None:
            raise ParameterError(f"no {kind} is open: call open_{kind} first")
        return self._tally

    def _check(self, client_id: int, reply: Reply | str, **checks: Any) -> str | None:
        if isinstance(reply, str):
            return reply
        declared = getattr(self.algorithm, "reply_bounds", None)
        reason = validate_reply(reply, self.algorithm.reply_spec(self.state, client_id),
                                client_id=client_id, screen=self.screen,
                                bounds=None if declared is None else declared(self.state,
                                                                              client_id),
                                **checks)
        screen = self._screen_reply()
        if reason is None and screen is not None and not reply.abstained:
            reason = screen(self.state, client_id, reply)
        return reason

    def _declared(self) -> tuple[Any, Any]:
        """The reply spec and bounds of a round, as :func:`validate_replies` takes them: the
        algorithm's round-wide ``shared_reply_spec(state)`` / ``shared_reply_bounds(state)``
        when it has them and they are not ``None`` (no call per client), else its per-client
        ``reply_spec`` / ``reply_bounds`` with the state bound (bounds ``None``: none)."""
        declared = []
        for each in ("reply_spec", "reply_bounds"):
            shared = getattr(self.algorithm, "shared_" + each, None)
            value = None if shared is None else shared(self.state)
            if value is None and hasattr(self.algorithm, each):
                value = functools.partial(getattr(self.algorithm, each), self.state)
            declared.append(value)
        return declared[0], declared[1]

    def _screen_reply(self) -> Callable[[ServerState, int, Reply], str | None] | None:
        """The algorithm's own screen of a valid reply (``screen_reply``), when screening."""
        return getattr(self.algorithm, "screen_reply", None) if self.screen else None

    @staticmethod
    def _reject(tally: _Tally, kind: str, client_id: int, reason: str) -> None:
        logger.warning("%s %d: rejected reply from client %d: %s", kind, tally.index, client_id,
                       reason)
        tally.rejected.append((client_id, reason))

    def _close(self, time: float, missing: tuple[int, ...], releases: Sequence[int]
               ) -> RoundRecord:
        tally, self._tally = self._tally, None
        metrics = dict(self.evaluate(self.model())) if self.evaluate is not None else {}
        record = RoundRecord(tally.index, time, tuple(tally.accepted), tuple(tally.rejected),
                             missing, self.state.version, tuple(tally.staleness), metrics,
                             tuple(releases))
        self.history.append(record)
        return record


_ID = operator.itemgetter(0)


def _answers(reply: Reply, request: int) -> bool:
    """Whether a (rejected) reply claims to answer ``request``: its round header says so."""
    metrics = reply.metrics if isinstance(reply.metrics, Mapping) else {}
    return type(metrics.get(ROUND)) is int and metrics[ROUND] == request


def _metrics_text(metrics: Mapping[str, float]) -> str:
    return "".join(f", {k}={v:.6g}" for k, v in metrics.items())


def check_stagger(stagger: Any, num_clients: int) -> list[int]:
    """Stagger rates ``gamma_k >= 1``, one per client (seed Sec. 7.3.4).

    Raises
    ------
    DimensionError
        Not one rate per client.
    ParameterError
        A rate that is not an integer ``>= 1``.
    """
    if np.ndim(stagger) != 1 or len(stagger) != num_clients:
        raise DimensionError(f"stagger must hold one integer rate per client ({num_clients}); "
                             f"got {stagger!r}")
    return [check_integer(f"stagger[{k}]", g, minimum=1) for k, g in enumerate(stagger)]
