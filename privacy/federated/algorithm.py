"""What an algorithm implements, and how every runtime runs its client half.

A federated *algorithm* (FedInfer, the FedAvg family, ...) is one immutable object holding only
static hyperparameters; it implements the structural types :class:`FederatedAlgorithm` (and,
for asynchronous runs, :class:`AsyncAlgorithm`) as pure functions of the values in
:mod:`privacy.federated.values`. Runtimes run the client half only through :func:`run_client`,
and derive every random generator with :func:`derive_rng`, so the numbers depend only on (key,
client, round) and, for a client, on a digest of its input (message and state), never on the
runtime, the process or the order of arrival. The key of the server's and the network's
generators is the run seed; the key of a client's generator, which draws its privacy noise, is
the client's *secret* (:func:`new_client_secret`), which the server never sees: the run seed
travels in every message, so noise drawn from it could be regenerated and subtracted by the
very party local DP protects against. Simulations, where one experimenter plays every party,
derive the secrets from the run seed (:func:`simulation_secret`) to keep "same seed, same
numbers"; there the experimenter knows the noise. The server half is run by
:class:`privacy.federated.server_step.ServerStep`.

See :mod:`privacy.federated.protocol` for the whole contract.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer
from privacy.federated.values import (
    CLIENT,
    DP_RELEASES,
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

__all__ = ["FederatedAlgorithm", "AsyncAlgorithm", "derive_rng", "run_client", "logger",
           "SECRET_BITS", "new_client_secret", "simulation_secret", "check_secret"]

_ROLES = {"client": 0, "server": 1, "network": 2}
# spawn-key code of simulated client secrets: no derive_rng role uses it, so a secret is never
# the state of a generator the run seed gives any party
_SECRET_ROLE = 3
#: Bits of a client secret (the entropy of a client's noise generator).
SECRET_BITS = 128

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


def derive_rng(seed: int, role: str, client_id: int, round: int, *, digest: bytes = b""
               ) -> np.random.Generator:
    """The generator of one (role, client, round): identical in every runtime and process.

    Parameters
    ----------
    seed : int
        Key ``>= 0``: the run seed for roles ``"server"`` and ``"network"``, the client's
        secret for role ``"client"`` (see :func:`run_client`).
    role : {"client", "server", "network"}
    client_id : int
        Client id ``>= 0`` (0 for the server).
    round : int
        Round (sync) or request index (async), ``>= 0``.
    digest : bytes, default b""
        Further key material, a multiple of 4 bytes; :func:`run_client` passes the SHA-256 of
        the client's input (message and state), so that two different inputs under one round
        number never share noise.

    Returns
    -------
    numpy.random.Generator
        ``default_rng(SeedSequence(seed, spawn_key=(role code, client_id, round, *words)))``,
        ``words`` the little-endian 32-bit words of ``digest`` (none by default).

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
    if not isinstance(digest, bytes) or len(digest) % 4:
        raise ParameterError(f"digest must be bytes of a length divisible by 4; got "
                             f"{type(digest).__name__} {digest!r:.60}")
    words = tuple(int(w) for w in np.frombuffer(digest, dtype="<u4"))
    sequence = np.random.SeedSequence(seed, spawn_key=(_ROLES[role], client_id, round, *words))
    return np.random.default_rng(sequence)


def _canonical_scalars(values: Mapping[str, Any]) -> list[list[str]]:
    # typed and exact (float.hex), so that equal values give equal text in every process and
    # 1, 1.0 and True stay distinct
    out = []
    for name in sorted(values):
        value = values[name]
        if isinstance(value, bool):
            out.append([name, "b", str(int(value))])
        elif isinstance(value, int):
            out.append([name, "i", str(value)])
        elif isinstance(value, float):
            out.append([name, "f", value.hex()])
        else:
            out.append([name, "s", str(value)])
    return out


def _input_digest(message: Message, state: ClientState, data: Any) -> bytes:
    """SHA-256 of what ``client_update`` computes from: the message, the state before it and
    the client's data.

    The state's release counter is left out: it only counts releases, and leaving it out lets
    an identical message replayed on an identical state and identical data (a resumed round)
    regenerate the same reply bit for bit instead of a second noisy copy.  The data are in:
    a message replayed after the data changed (a record added or removed, a node restarted on
    new data with its old state) drew the same noise, and the two replies' difference was the
    noise-free difference of the updates (a trial: to 7e-18, one record's clipped
    contribution revealed, while two releases were accounted).  Names are sorted, arrays
    hashed as C-ordered little-endian float64 with their shape in a JSON header, scalars
    typed and exact, so equal content gives an equal digest in every process.
    """
    parts = {"message": (message.arrays, message.config),
             "state": (state.arrays, {k: v for k, v in state.scalars.items()
                                      if k != DP_RELEASES}),
             "data": ({}, {"sha256": _data_digest(data)})}
    header, blobs = {}, []
    for part, (arrays, scalars) in parts.items():
        names = sorted(arrays)
        flat = [np.ascontiguousarray(arrays[n], dtype="<f8") for n in names]
        header[part] = {"arrays": [[n, a.dtype.str, list(a.shape)]
                                   for n, a in zip(names, flat, strict=True)],
                        "scalars": _canonical_scalars(scalars)}
        blobs.extend(a.tobytes() for a in flat)
    text = json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    sha = hashlib.sha256(b"privacy.federated client input 1\0")
    sha.update(len(text).to_bytes(8, "little"))
    sha.update(text)
    for blob in blobs:
        sha.update(blob)
    return sha.digest()


#: How each kind of numeric array is hashed: exactly, little-endian (booleans as integers).
_DATA_KINDS = {"b": "<i8", "i": "<i8", "u": "<u8", "f": "<f8"}


def _data_digest(data: Any) -> str:
    """Hex SHA-256 of a client's data: a mapping of names to arrays, or to lists of arrays
    (trajectories of different lengths), each hashed with its kind and shape as C-ordered
    little-endian int64, uint64 or float64 (names sorted: equal content, equal digest in every
    process; integers exactly, not through float64, where 2**53 and 2**53 + 1 met).

    Raises
    ------
    ParameterError
        An array that is not real numbers (complex, strings, objects), named by its key.
    """
    sha = hashlib.sha256(b"privacy.federated client data 2\0")

    def add(name: str, value: Any) -> None:
        if isinstance(value, (list, tuple)):
            sha.update(f"[{len(value)}".encode("ascii"))
            for item in value:
                add(name, item)
            sha.update(b"]")
            return
        array = np.asarray(value)
        kind = _DATA_KINDS.get(array.dtype.kind)
        if kind is None:
            raise ParameterError(f"data[{name!r}] holds {array.dtype} values; a client's data "
                                 f"are real numbers (integers, floats or booleans)")
        array = np.ascontiguousarray(array, dtype=kind)
        sha.update(json.dumps([kind, list(array.shape)]).encode("ascii"))
        sha.update(array.tobytes())

    for name in sorted(data, key=str):
        sha.update(json.dumps(str(name)).encode("utf-8"))
        add(str(name), data[name])
    return sha.hexdigest()


def new_client_secret() -> int:
    """A fresh client secret: ``SECRET_BITS`` bits of OS entropy (:func:`secrets.randbits`).

    What a real client keys its noise generator with.  It must never leave the client, and it
    must be kept (a deployed node persists it in its state folder) so that a replayed or
    resumed round, the same message on the same state, regenerates the same reply instead of
    releasing a second noisy copy.
    """
    return secrets.randbits(SECRET_BITS)


def simulation_secret(seed: int, client_id: int) -> int:
    """The secret of simulated client ``client_id`` in a run with seed ``seed``.

    For simulations only (the numpy runner, in-process Flower, the studies): the run seed
    determines every client's secret, hence its noise, so the numbers are reproducible and
    whoever knows the seed can remove the noise.  Derived under a key of its own, so the noise
    is not the output of a generator the run seed gives the server or the network.

    Examples
    --------
    >>> simulation_secret(7, 3) == simulation_secret(7, 3) != simulation_secret(7, 4)
    True
    """
    seed = check_integer("seed", seed, minimum=0)
    client_id = check_integer("client_id", client_id, minimum=0)
    words = np.random.SeedSequence(seed, spawn_key=(_SECRET_ROLE, client_id)).generate_state(
        SECRET_BITS // 32, np.uint32)
    return sum(int(w) << (32 * i) for i, w in enumerate(words))


def check_secret(secret: Any, name: str = "secret") -> int:
    """``secret`` as an int in ``[0, 2**SECRET_BITS)``; a clear error otherwise.

    Raises
    ------
    ParameterError
        Not an integer (bool excluded), or outside ``[0, 2**SECRET_BITS)``.
    """
    if isinstance(secret, bool) or not isinstance(secret, (int, np.integer)) or \
            not 0 <= int(secret) < 2 ** SECRET_BITS:
        raise ParameterError(f"{name} must be an integer in [0, 2**{SECRET_BITS}) (a client "
                             f"secret: new_client_secret() or simulation_secret(seed, k)); got "
                             f"{secret!r}")
    return int(secret)


def run_client(algorithm: Any, client_id: int, data: ClientData, state: ClientState,
               message: Message, *, secret: int) -> tuple[Reply, ClientState]:
    """Run the client half on one message, as every runtime must.

    Starts from ``algorithm.init_client_state(data)`` when ``state`` is empty, derives the rng
    from (``secret``, ``client_id``, message round, SHA-256 of the message, of the state
    without its release counter and of the data) and stamps ``client_id``, ``round`` and
    ``model_version`` into the reply metrics.  The message's seed does not enter the client's
    rng: the server chose it and sends it, and local DP protects the client against the
    server.

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
    secret : int
        The client's secret, the key of its noise generator: :func:`new_client_secret` for a
        real client (kept by it, never sent), :func:`simulation_secret` in a simulation.  The
        same secret, message, state (release counter aside) and data give the same reply bit
        for bit, so an identical replay releases nothing new; any other message, state or
        data, even under a round number already answered, draws independent noise, and the
        algorithm's release counter counts that reply as a release of its own, along one line
        of states: a node restored from a state older than its last reply (a lost state-dir
        write) counts its next reply again from there, one release short per such rollback
        (keep the state with the secret, written before the reply leaves, as the Flower node
        does).

    Returns
    -------
    reply : Reply
    new_state : ClientState
    """
    client_id = check_integer("client_id", client_id, minimum=0)
    secret = check_secret(secret)
    if CLIENT in message.config and message.client_id != client_id:
        raise ParameterError(f"message is addressed to client {message.client_id}, not to "
                             f"client {client_id}")
    if state.empty:
        state = algorithm.init_client_state(data)
    # keyed by the input too: the same round number with another message or state (a curious
    # server's second model, a resumed SCAFFOLD client whose c_k moved on) must not reuse the
    # noise, or the difference of the two replies would be noise-free
    rng = derive_rng(secret, "client", client_id, message.round,
                     digest=_input_digest(message, state, data))
    result = algorithm.client_update(data, state, message, rng)
    metrics = flat_scalars("reply metrics", result.metrics, strings=False)
    metrics.update({CLIENT: client_id, ROUND: message.round, VERSION: message.model_version})
    return Reply(float_arrays("reply arrays", result.arrays), metrics), result.state
