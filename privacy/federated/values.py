"""The values federated algorithms and runtimes exchange: messages, replies, states, plans.

Every value is a set of named float arrays plus flat scalars, so that it maps one to one onto
Flower's records (see :mod:`privacy.federated.protocol` for the table and the contract):
:class:`Message` (server -> client), :class:`Reply` (client -> server), :class:`ClientState`
(kept by a client between messages), :class:`ClientResult` (what ``client_update`` returns),
:class:`ServerState` (the whole, checkpointable server state) and :class:`RoundPlan` (what the
server sends in one round or asynchronous request).  The reserved config / metric keys every
runtime stamps are defined here too.

Arrays are stored as read-only float64 copies; scalars as ``bool``/``int``/``float``/``str``
(numpy scalars converted).  A :class:`Reply` is deliberately not checked on construction: the
server must be able to receive a malformed one and reject it with a reason
(:func:`privacy.federated.validation.validate_reply`).

Examples
--------
>>> import numpy as np
>>> plan = RoundPlan((0, 2), {"w": [1.0, 2.0]}, {"lr": 0.1})
>>> message = plan.message_for(2, round=4, model_version=3, seed=9)
>>> message.round, message.model_version, message.client_id, message.config["lr"]
(4, 3, 2, 0.1)
>>> message.arrays["w"].flags.writeable
False
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
]

#: Reserved config / metric keys (see :mod:`privacy.federated.protocol`).
ROUND = "round"
VERSION = "model_version"
SEED = "seed"
CLIENT = "client_id"
#: Client-state scalar: number of noisy releases this client has made so far.
DP_RELEASES = "dp_releases"
#: Metric a client sets to 1 when it declines to release (e.g. its privacy budget is spent);
#: such a reply carries no arrays and is neither aggregated nor counted as malformed.
ABSTAIN = "abstain"
#: The config keys runtimes stamp into every message (algorithms must not set them).
RESERVED_CONFIG = (ROUND, VERSION, SEED, CLIENT)

Scalar = bool | int | float | str
ClientData = Mapping[str, np.ndarray]

def _check_name(kind: str, name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterError(f"{kind} names must be non-empty strings; got {name!r}")
    return name


def float_arrays(kind: str, arrays: Mapping[str, Any] | None) -> dict[str, np.ndarray]:
    """Read-only float64 copies of named arrays (NaN allowed: validation is the server's job).

    Parameters
    ----------
    kind : str
        What the arrays are, for error messages (e.g. ``"Message.arrays"``).
    arrays : mapping str -> array_like, optional

    Returns
    -------
    dict str -> ndarray
        Arrays that already are read-only float64 copies are shared, not copied again.

    Raises
    ------
    ParameterError
        ``arrays`` is not a mapping or a name is not a non-empty string.
    DimensionError
        A value is not numeric.
    """
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


def flat_scalars(kind: str, values: Mapping[str, Any] | None, *, strings: bool = True
                 ) -> dict[str, Scalar]:
    """Flat scalars: bool/int/float (and str when ``strings``), numpy scalars converted.

    Parameters
    ----------
    kind : str
        What the scalars are, for error messages (e.g. ``"Message.config"``).
    values : mapping str -> scalar, optional
    strings : bool, default True
        Accept strings; when False (Flower's ``MetricRecord``) booleans become 0 / 1.

    Raises
    ------
    ParameterError
        Not a mapping, a bad name, or a value that is not a flat scalar.
    """
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


def _reserved_key(key: str, doc: str) -> property:
    """A read-only ``int`` property of a message: the reserved config key ``key``."""
    def get(message: Message) -> int:
        if key not in message.config:
            raise ParameterError(f"message config lacks the reserved key {key!r}; runtimes "
                                 f"must build messages with RoundPlan.message_for")
        return check_integer(f"message config[{key!r}]", message.config[key], minimum=0)
    return property(get, doc=doc)


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
        object.__setattr__(self, "arrays", float_arrays("Message.arrays", self.arrays))
        object.__setattr__(self, "config", flat_scalars("Message.config", self.config))

    round = _reserved_key(ROUND, "Synchronous round, or the index of an asynchronous request "
                                 "to this client.")
    model_version = _reserved_key(VERSION, "Server version the message was built from.")
    seed = _reserved_key(SEED, "Run seed (the server's and the network's randomness; never the "
                               "client's noise, which its own secret keys).")
    client_id = _reserved_key(CLIENT, "The client this message is addressed to.")


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
        object.__setattr__(self, "arrays", float_arrays("ClientState.arrays", self.arrays))
        object.__setattr__(self, "scalars", flat_scalars("ClientState.scalars", self.scalars))

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
        object.__setattr__(self, "arrays", float_arrays("ServerState.arrays", self.arrays))
        scalars = flat_scalars("ServerState.scalars", self.scalars)
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
        object.__setattr__(self, "arrays", float_arrays("RoundPlan.arrays", self.arrays))
        config = flat_scalars("RoundPlan.config", self.config)
        per_client = {int(c): flat_scalars(f"RoundPlan.client_config[{c}]", v)
                      for c, v in (self.client_config or {}).items()}
        for name, values in [("config", config)] + [
                (f"client_config[{c}]", v) for c, v in per_client.items()]:
            clash = set(values) & set(RESERVED_CONFIG)
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


