"""What an algorithm implements, and how every runtime runs its client half.

A federated *algorithm* (FedInfer, the FedAvg family, ...) is one immutable object holding only
static hyperparameters; it implements the structural types :class:`FederatedAlgorithm` (and,
for asynchronous runs, :class:`AsyncAlgorithm`) as pure functions of the values in
:mod:`privacy.federated.values`.  Runtimes run the client half only through
:func:`run_client`, and derive every random generator with :func:`derive_rng`, so the numbers
depend only on (seed, client, round), never on the runtime, the process or the order of
arrival.  The server half is run by :class:`privacy.federated.server_step.ServerStep`.

See :mod:`privacy.federated.protocol` for the whole contract.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer
from privacy.federated.values import (
    CLIENT,
    ROUND,
    VERSION,
    ClientData,
    ClientResult,
    ClientState,
    Message,
    Reply,
    RoundPlan,
    ServerState,
    flat_scalars,
    float_arrays,
)

__all__ = ["FederatedAlgorithm", "AsyncAlgorithm", "derive_rng", "run_client", "logger"]

_ROLES = {"client": 0, "server": 1, "network": 2}

#: The logger every runtime reports rejected replies and dropped clients to.
logger = logging.getLogger("privacy.federated")


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
    metrics = flat_scalars("reply metrics", result.metrics, strings=False)
    metrics.update({CLIENT: client_id, ROUND: message.round, VERSION: message.model_version})
    return Reply(float_arrays("reply arrays", result.arrays), metrics), result.state
