"""The contract between federated algorithms and the runtimes that carry their messages.

An *algorithm* (FedInfer, FedAvg, ...) is one immutable object holding only static
hyperparameters.  It implements a client half and a server half as pure functions of named float
arrays and flat scalars; a *runtime* (the numpy reference runner :mod:`privacy.federated.runner`,
an in-process Flower grid, real Flower processes) only moves these values around.  Because every
value is a named array or a flat scalar, the mapping to Flower's records is one to one:

=========================  ======================================  ============================
protocol value             Flower record                           where
=========================  ======================================  ============================
``Message.arrays``         ``ArrayRecord`` (name -> ndarray)       server -> client content
``Message.config``         ``ConfigRecord`` (name -> scalar/str)   server -> client content
``Reply.arrays``           ``ArrayRecord``                         client -> server content
``Reply.metrics``          ``MetricRecord`` (name -> int/float)    client -> server content
``ClientState``            ``context.state``: ``ArrayRecord`` +    kept by the node between
                           ``ConfigRecord``                        messages
``ServerState``            ``.npz`` (arrays) + ``.json`` (scalars) :func:`save_server_state`
=========================  ======================================  ============================

Client half (a pure function; Flower's deployed ClientApp runs in a fresh process per message
and keeps state only in ``context.state``, so nothing may live in globals)::

    algorithm.init_client_state(data) -> ClientState
    algorithm.client_update(data, state, message, rng) -> ClientResult(arrays, metrics, state)

Runtimes do not call ``client_update`` directly but :func:`run_client`, which starts from
``init_client_state`` when the stored state is empty, derives the rng with :func:`derive_rng`
from the message's reserved keys, and stamps the reserved reply metrics.

Server half::

    algorithm.init_server_state(num_clients, seed) -> ServerState     # seed stored in the state
    algorithm.configure_round(state, round, rng) -> RoundPlan         # sampling + broadcast
    algorithm.reply_spec(state, client_id) -> {name: shape}           # what a valid reply holds
    algorithm.aggregate(state, round, replies) -> ServerState         # replies: {id: Reply}
    algorithm.model(state) -> {name: ndarray}                         # current global estimate

and, for algorithms that run asynchronously (:class:`AsyncAlgorithm`)::

    algorithm.configure_client(state, client_id, request, rng) -> RoundPlan  # one client's request
    algorithm.apply_reply(state, client_id, reply) -> ServerState     # async hook, one reply

``apply_reply`` receives replies in arrival order; each carries the ``model_version`` it was
computed from, so staleness is ``state.version - reply.metrics['model_version']``.  With all
clients answering every round, applying the replies of a round one by one gives the same state
as ``aggregate`` (tested for every algorithm).

Privacy.  An algorithm that releases noisy values has a method ``client_dp(client_id)``
returning that client's release description (a :class:`privacy.federated.local_dp.LocalDP`, or
``None``); its clients count their releases in the client-state scalar ``dp_releases``
(:data:`DP_RELEASES`), from which runtimes report each client's composed epsilon after every
round (``RunResult.epsilon_history``; exact final values ``RunResult.final_epsilon``).

:func:`validate_reply` rejects malformed, non-finite, wrong-shape, duplicate and stale replies
with a reason string before any of them reaches ``aggregate`` / ``apply_reply``; the runtime logs
the reason (``logging.getLogger("privacy.federated")``) and never aggregates the reply.

Reserved keys.  Every message config carries ``round`` (int; the synchronous round, or for an
asynchronous request the index of the request to that client), ``model_version`` (int; the server
version the message was built from), ``seed`` (int; the run seed) and ``client_id`` (int; the
addressee); :meth:`RoundPlan.message_for` stamps them and algorithms must not set them.
:func:`run_client` stamps ``client_id``, ``round`` and ``model_version`` into the reply
metrics.

Randomness.  A client's generator is ``derive_rng(seed, "client", client_id, round)``
(``numpy.random.SeedSequence(seed, spawn_key=(role, client_id, round))``); the server's
generator for synchronous round ``t`` is ``derive_rng(seed, "server", 0, t)`` and for the
asynchronous request ``j`` to client ``k`` it is ``derive_rng(seed, "server", k + 1, j)``; the
reference runner's simulated network uses role ``"network"``.  The numbers therefore depend
only on (seed, client, round), never on the process, the order of arrival or the runtime.

References
----------
Seed Ch. 5 (eqs. 5.8-5.23) and Ch. 7 (Algorithms 1-2, eqs. 7.15-7.26).  Flower 1.41 Message API
(``flwr.app.ArrayRecord``, ``ConfigRecord``, ``MetricRecord``; ``Context.state``).

Examples
--------
A toy algorithm: every client reports the mean of its data, the server averages them.

>>> import numpy as np
>>> from privacy.federated.protocol import (ClientResult, ClientState, RoundPlan, ServerState,
...                                         run_client)
>>> from privacy.federated.runner import run_sync
>>> class Mean:
...     name = "mean"
...     def init_client_state(self, data):
...         return ClientState()
...     def client_update(self, data, state, message, rng):
...         return ClientResult({"mean": data["x"].mean(axis=0)}, {"n": len(data["x"])}, state)
...     def init_server_state(self, num_clients, seed):
...         return ServerState.new({"mean": np.zeros(2)}, num_clients=num_clients, seed=seed)
...     def configure_round(self, state, round, rng):
...         return RoundPlan(clients=tuple(range(state.num_clients)))
...     def reply_spec(self, state, client_id):
...         return {"mean": (2,)}
...     def aggregate(self, state, round, replies):
...         mean = np.mean([r.arrays["mean"] for r in replies.values()], axis=0)
...         return state.replace(arrays={"mean": mean}, version=state.version + 1)
...     def model(self, state):
...         return dict(state.arrays)
>>> data = [{"x": np.full((3, 2), float(k))} for k in range(4)]
>>> result = run_sync(Mean(), data, rounds=2, seed=0)
>>> result.model["mean"]
array([1.5, 1.5])
>>> result.state.version
2
"""

from __future__ import annotations

import json
import logging
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer

__all__ = [
    "ROUND",
    "VERSION",
    "SEED",
    "CLIENT",
    "ABSTAIN",
    "DP_RELEASES",
    "Scalar",
    "ClientData",
    "Message",
    "Reply",
    "ClientState",
    "ClientResult",
    "ServerState",
    "RoundPlan",
    "FederatedAlgorithm",
    "AsyncAlgorithm",
    "derive_rng",
    "run_client",
    "validate_reply",
    "save_server_state",
    "load_server_state",
    "logger",
]

#: Reserved config / metric keys (see the module docstring).
ROUND = "round"
VERSION = "model_version"
SEED = "seed"
CLIENT = "client_id"
#: Client-state scalar: number of noisy releases this client has made so far.
DP_RELEASES = "dp_releases"
#: Metric a client sets to 1 when it declines to release (e.g. its privacy budget is spent);
#: such a reply carries no arrays and is neither aggregated nor counted as malformed.
ABSTAIN = "abstain"

_RESERVED_CONFIG = (ROUND, VERSION, SEED, CLIENT)
_ROLES = {"client": 0, "server": 1, "network": 2}

#: The logger every runtime reports rejected replies and dropped clients to.
logger = logging.getLogger("privacy.federated")

Scalar = bool | int | float | str
ClientData = Mapping[str, np.ndarray]


def _check_name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterError(f"{kind} names must be non-empty strings; got {name!r}")
    return name


def _float_arrays(kind: str, arrays: Mapping[str, Any] | None) -> dict[str, np.ndarray]:
    """Read-only float64 copies of named arrays (NaN allowed: validation is the server's job)."""
    if arrays is None:
        return {}
    if not isinstance(arrays, Mapping):
        raise ParameterError(f"{kind} must be a mapping of name -> array; got "
                             f"{type(arrays).__name__}")
    out = {}
    for name, value in arrays.items():
        if (type(value) is np.ndarray and value.dtype == np.float64
                and not value.flags.writeable and value.base is None):
            out[_check_name(kind, name)] = value   # already an immutable copy: share it
            continue
        try:
            array = np.array(value, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as exc:
            raise DimensionError(f"{kind}[{name!r}] must be a numeric array; got "
                                 f"{type(value).__name__} ({exc})") from exc
        array.flags.writeable = False
        out[_check_name(kind, name)] = array
    return out


def _scalars(kind: str, values: Mapping[str, Any] | None, *, strings: bool = True
             ) -> dict[str, Scalar]:
    """Flat scalars: bool/int/float (and str when ``strings``), numpy scalars converted."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ParameterError(f"{kind} must be a mapping of name -> scalar; got "
                             f"{type(values).__name__}")
    out: dict[str, Scalar] = {}
    for name, value in values.items():
        _check_name(kind, name)
        if isinstance(value, (bool, np.bool_)):
            out[name] = bool(value) if strings else int(value)
        elif isinstance(value, numbers.Integral):
            out[name] = int(value)
        elif isinstance(value, numbers.Real):
            out[name] = float(value)
        elif strings and isinstance(value, str):
            out[name] = value
        else:
            accepted = "bool, int, float or str" if strings else "int or float"
            raise ParameterError(f"{kind}[{name!r}] must be a {accepted} scalar; got "
                                 f"{value!r} of type {type(value).__name__}")
    return out


# ------------------------------------------------------------------------------- values
@dataclass(frozen=True)
class Message:
    """Server -> client: named float arrays plus a flat config (with the reserved keys).

    Parameters
    ----------
    arrays : mapping str -> array_like
        Broadcast arrays (e.g. the global model ``w``); stored as read-only float64 copies.
    config : mapping str -> bool | int | float | str
        Flat configuration.  Runtimes build messages with :meth:`RoundPlan.message_for`, which
        adds ``round``, ``model_version`` and ``seed``.
    """

    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    config: Mapping[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrays", _float_arrays("Message.arrays", self.arrays))
        object.__setattr__(self, "config", _scalars("Message.config", self.config))

    def _reserved(self, key: str) -> int:
        if key not in self.config:
            raise ParameterError(f"message config lacks the reserved key {key!r}; runtimes "
                                 f"must build messages with RoundPlan.message_for")
        return check_integer(f"message config[{key!r}]", self.config[key], minimum=0)

    @property
    def round(self) -> int:
        """Synchronous round, or the index of an asynchronous request to this client."""
        return self._reserved(ROUND)

    @property
    def model_version(self) -> int:
        """Server version the message was built from."""
        return self._reserved(VERSION)

    @property
    def seed(self) -> int:
        """Run seed (with client id and round it determines the client's rng)."""
        return self._reserved(SEED)

    @property
    def client_id(self) -> int:
        """The client this message is addressed to."""
        return self._reserved(CLIENT)


@dataclass(frozen=True)
class Reply:
    """Client -> server: named float arrays plus numeric metrics.

    Deliberately *not* validated on construction: a server must be able to receive a malformed
    reply and reject it with a reason (:func:`validate_reply`).  Replies built by
    :func:`run_client` carry the reserved metrics ``client_id``, ``round``, ``model_version``.
    """

    arrays: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)

    @property
    def abstained(self) -> bool:
        """True when the client declined to release (``metrics['abstain'] == 1``)."""
        return bool(self.metrics.get(ABSTAIN, 0))


@dataclass(frozen=True)
class ClientState:
    """What a client keeps between messages: named float arrays and flat scalars.

    Empty (``ClientState()``) before the first message; :func:`run_client` then starts from the
    algorithm's ``init_client_state``.  Maps to Flower's ``context.state`` (an ``ArrayRecord``
    and a ``ConfigRecord``).
    """

    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    scalars: Mapping[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrays", _float_arrays("ClientState.arrays", self.arrays))
        object.__setattr__(self, "scalars", _scalars("ClientState.scalars", self.scalars))

    @property
    def empty(self) -> bool:
        """True before the client has processed any message."""
        return not self.arrays and not self.scalars

    def replace(self, *, arrays: Mapping[str, Any] | None = None,
                scalars: Mapping[str, Any] | None = None) -> ClientState:
        """A copy with some arrays / scalars replaced (others kept)."""
        return ClientState({**self.arrays, **(arrays or {})}, {**self.scalars, **(scalars or {})})


@dataclass(frozen=True)
class ClientResult:
    """What ``client_update`` returns: reply arrays, reply metrics and the new client state."""

    arrays: Mapping[str, Any]
    metrics: Mapping[str, Any]
    state: ClientState


@dataclass(frozen=True)
class ServerState:
    """The server's whole state: named float arrays and JSON scalars (checkpointable).

    ``scalars`` always holds ``num_clients``, ``seed`` and ``version`` (the model version,
    incremented by every aggregation / applied asynchronous reply that changes the model);
    algorithms add their own (flat bool/int/float/str values).
    """

    arrays: Mapping[str, np.ndarray]
    scalars: Mapping[str, Scalar]

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrays", _float_arrays("ServerState.arrays", self.arrays))
        scalars = _scalars("ServerState.scalars", self.scalars)
        for key in ("num_clients", "seed", "version"):
            if key not in scalars:
                raise ParameterError(f"ServerState.scalars must hold {key!r}; use "
                                     f"ServerState.new(...)")
        check_integer("num_clients", scalars["num_clients"], minimum=1)
        check_integer("seed", scalars["seed"], minimum=0)
        check_integer("version", scalars["version"], minimum=0)
        object.__setattr__(self, "scalars", scalars)

    @classmethod
    def new(cls, arrays: Mapping[str, Any], *, num_clients: int, seed: int,
            **scalars: Scalar) -> ServerState:
        """Initial state (version 0)."""
        return cls(arrays, {"num_clients": num_clients, "seed": seed, "version": 0, **scalars})

    @property
    def num_clients(self) -> int:
        return int(self.scalars["num_clients"])

    @property
    def seed(self) -> int:
        return int(self.scalars["seed"])

    @property
    def version(self) -> int:
        return int(self.scalars["version"])

    def replace(self, *, arrays: Mapping[str, Any] | None = None,
                **scalars: Scalar) -> ServerState:
        """A copy with some arrays and scalars replaced (others kept)."""
        return ServerState({**self.arrays, **(arrays or {})}, {**self.scalars, **scalars})


@dataclass(frozen=True)
class RoundPlan:
    """What the server sends in one round (or one asynchronous request).

    Parameters
    ----------
    clients : tuple of int
        Selected client ids (client sampling happens in ``configure_round``).
    arrays : mapping, optional
        Broadcast arrays, identical for every selected client.
    config : mapping, optional
        Config shared by every selected client.
    client_config : mapping int -> mapping, optional
        Per-client config overrides (e.g. a straggler's number of local steps).
    """

    clients: tuple[int, ...]
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    config: Mapping[str, Scalar] = field(default_factory=dict)
    client_config: Mapping[int, Mapping[str, Scalar]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clients = tuple(check_integer("client id", c, minimum=0) for c in self.clients)
        if len(set(clients)) != len(clients):
            raise ParameterError(f"RoundPlan.clients has duplicate ids: {list(clients)}")
        object.__setattr__(self, "clients", clients)
        object.__setattr__(self, "arrays", _float_arrays("RoundPlan.arrays", self.arrays))
        config = _scalars("RoundPlan.config", self.config)
        per_client = {int(c): _scalars(f"RoundPlan.client_config[{c}]", v)
                      for c, v in (self.client_config or {}).items()}
        for name, values in [("config", config)] + [
                (f"client_config[{c}]", v) for c, v in per_client.items()]:
            clash = set(values) & set(_RESERVED_CONFIG)
            if clash:
                raise ParameterError(f"RoundPlan.{name} must not set the reserved keys "
                                     f"{sorted(clash)}; the runtime stamps them")
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "client_config", per_client)

    def message_for(self, client_id: int, *, round: int, model_version: int, seed: int
                    ) -> Message:
        """The message for one selected client, with the reserved keys stamped."""
        config = {**self.config, **self.client_config.get(client_id, {}),
                  ROUND: int(round), VERSION: int(model_version), SEED: int(seed),
                  CLIENT: int(client_id)}
        return Message(self.arrays, config)


@runtime_checkable
class FederatedAlgorithm(Protocol):
    """Structural type of an algorithm (client half + server half); see the module docstring."""

    name: str

    def init_client_state(self, data: ClientData) -> ClientState: ...

    def client_update(self, data: ClientData, state: ClientState, message: Message,
                      rng: np.random.Generator) -> ClientResult: ...

    def init_server_state(self, num_clients: int, seed: int) -> ServerState: ...

    def configure_round(self, state: ServerState, round: int,
                        rng: np.random.Generator) -> RoundPlan: ...

    def reply_spec(self, state: ServerState, client_id: int) -> Mapping[str, tuple[int, ...]]: ...

    def aggregate(self, state: ServerState, round: int,
                  replies: Mapping[int, Reply]) -> ServerState: ...

    def model(self, state: ServerState) -> Mapping[str, np.ndarray]: ...


@runtime_checkable
class AsyncAlgorithm(FederatedAlgorithm, Protocol):
    """An algorithm that also runs asynchronously (Algorithm 2; stagger rates)."""

    def configure_client(self, state: ServerState, client_id: int, request: int,
                         rng: np.random.Generator) -> RoundPlan: ...

    def apply_reply(self, state: ServerState, client_id: int, reply: Reply) -> ServerState: ...


# ------------------------------------------------------------------------------- functions
def derive_rng(seed: int, role: str, client_id: int, round: int) -> np.random.Generator:
    """The generator of one (role, client, round): identical in every runtime and process.

    Parameters
    ----------
    seed : int
        Run seed ``>= 0``.
    role : {"client", "server", "network"}
    client_id : int
        Client id ``>= 0`` (0 for the server).
    round : int
        Round (sync) or request index (async), ``>= 0``.

    Returns
    -------
    numpy.random.Generator
        ``default_rng(SeedSequence(seed, spawn_key=(role code, client_id, round)))``.

    Examples
    --------
    >>> a = derive_rng(7, "client", 3, 10).normal()
    >>> b = derive_rng(7, "client", 3, 10).normal()
    >>> a == b, a == derive_rng(7, "client", 3, 11).normal()
    (True, False)
    """
    seed = check_integer("seed", seed, minimum=0)
    if role not in _ROLES:
        raise ParameterError(f"role must be one of {sorted(_ROLES)}; got {role!r}")
    client_id = check_integer("client_id", client_id, minimum=0)
    round = check_integer("round", round, minimum=0)
    sequence = np.random.SeedSequence(seed, spawn_key=(_ROLES[role], client_id, round))
    return np.random.default_rng(sequence)


def run_client(algorithm: Any, client_id: int, data: ClientData, state: ClientState,
               message: Message) -> tuple[Reply, ClientState]:
    """Run the client half on one message, as every runtime must.

    Starts from ``algorithm.init_client_state(data)`` when ``state`` is empty, derives the rng
    from (message seed, ``client_id``, message round) and stamps ``client_id``, ``round`` and
    ``model_version`` into the reply metrics.

    Parameters
    ----------
    algorithm : FederatedAlgorithm
    client_id : int
    data : mapping str -> ndarray
        The client's local data (never leaves the client).
    state : ClientState
        Persistent state from the previous message (empty at first).
    message : Message
        Built with :meth:`RoundPlan.message_for`.

    Returns
    -------
    reply : Reply
    new_state : ClientState
    """
    client_id = check_integer("client_id", client_id, minimum=0)
    if CLIENT in message.config and message.client_id != client_id:
        raise ParameterError(f"message is addressed to client {message.client_id}, not to "
                             f"client {client_id}")
    if state.empty:
        state = algorithm.init_client_state(data)
    rng = derive_rng(message.seed, "client", client_id, message.round)
    result = algorithm.client_update(data, state, message, rng)
    metrics = _scalars("reply metrics", result.metrics, strings=False)
    metrics.update({CLIENT: client_id, ROUND: message.round, VERSION: message.model_version})
    return Reply(_float_arrays("reply arrays", result.arrays), metrics), result.state


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


def save_server_state(path: str | Path, state: ServerState, *,
                      extra: Mapping[str, Any] | None = None) -> tuple[Path, Path]:
    """Checkpoint a server state as ``<path>.npz`` (arrays) and ``<path>.json`` (scalars).

    ``extra`` is JSON-serializable runtime data stored beside the scalars (e.g. the runner's
    round counter and client states).  Existing files are overwritten.

    Returns
    -------
    (npz_path, json_path)
    """
    base = Path(path)
    npz, js = base.with_suffix(".npz"), base.with_suffix(".json")
    base.parent.mkdir(parents=True, exist_ok=True)
    np.savez(npz, **{k: np.asarray(v) for k, v in state.arrays.items()})
    payload = {"scalars": dict(state.scalars), "extra": dict(extra or {})}
    js.write_text(json.dumps(payload, indent=1, allow_nan=False, default=_json_default))
    return npz, js


def load_server_state(path: str | Path) -> tuple[ServerState, dict[str, Any]]:
    """Inverse of :func:`save_server_state`: ``(state, extra)``, bit-identical arrays."""
    base = Path(path)
    with np.load(base.with_suffix(".npz"), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    payload = json.loads(base.with_suffix(".json").read_text())
    return ServerState(arrays, payload["scalars"]), payload.get("extra", {})


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating) and math.isfinite(value):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
