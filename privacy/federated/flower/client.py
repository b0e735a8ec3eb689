"""The Flower ClientApp of any protocol algorithm.

The ClientApp answers two message types:

* ``query.identify`` — the handshake: it replies with the node's ``partition-id`` (its client
  id in the protocol) and ``num-partitions``, so the server can map protocol client ids to
  Flower node ids (which Flower draws at random);
* ``train`` — one protocol message: it runs :func:`~privacy.federated.protocol.run_client`
  (the same function every runtime calls: state initialisation, the derived rng, the reserved
  reply metrics) and keeps the client's :class:`~privacy.federated.protocol.ClientState` in
  ``context.state`` for its next message.

Noise and clipping are *not* Flower mods here: every algorithm of the protocol clips and
privatises inside its ``client_update`` with the rng derived from (client secret, client,
round), so the numpy runner, in-process Flower and real processes add the same noise exactly
once.  A mod
would add it a second time.  Flower's own ``LocalDpMod`` and ``DifferentialPrivacy*`` wrappers
are not used either: they add Gaussian noise only, drawn from numpy's global unseeded generator
(not reproducible, not SaS or Laplace), and their accountant knows Gaussian FedAvg only.
``mods`` are passed through for Flower's non-privacy mods (e.g. ``message_size_mod``).

Client state survives a restart of the node when its ``node_config`` holds ``state-dir``: the
state is then also written to ``<state-dir>/client-<partition-id>.{npz,json}`` after every
message and read back when ``context.state`` is empty (a new run, a restarted SuperNode), so a
client's release counter — and hence its privacy budget — is never reset by the runtime.

The client's secret. The node keys its noise generator with a secret of its own
(:func:`~privacy.federated.algorithm.new_client_secret`, 128 bits of OS entropy), drawn at its
first message and kept beside its state: in ``context.state`` and, with ``state-dir``, in
``<state-dir>/client-<partition-id>.secret`` (written, owner-readable only, before the first
reply leaves). It never leaves the node, so the server, which knows the run seed, cannot
regenerate the noise; and an identical message on an identical state (release counter aside)
and identical data, e.g. a resumed round, regenerates the same reply, so that replay releases
nothing new. The noise is keyed by the message, the state and the data too
(:func:`~privacy.federated.algorithm.run_client`): a round number answered again with another
model, from a later state or on changed data draws independent noise, which the release
counter counts as a release of its own. Whoever holds the secret file can remove the node's
noise: it is the node's key. Simulations and tests set the node config ``simulation-seed``
instead: the node's secret is then :func:`~privacy.federated.algorithm.simulation_secret` of
that seed, the same numbers as the numpy runner with that seed, and whoever knows the seed knows
the noise. That choice is
the node's own (its node config); nothing the server sends can make a node's noise derivable.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Context, RecordDict
from flwr.app import Message as FlowerMessage
from flwr.clientapp import ClientApp

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer
from privacy.federated.algorithm import check_secret, new_client_secret, simulation_secret
from privacy.federated.flower.records import (
    load_context_state,
    message_from_content,
    reply_content,
    store_context_state,
)
from privacy.federated.protocol import (
    DP_RELEASES,
    ClientData,
    ClientState,
    FederatedAlgorithm,
    run_client,
)

__all__ = [
    "IDENTIFY",
    "TRAIN",
    "PARTITION_ID",
    "NUM_PARTITIONS",
    "STATE_DIR",
    "SIMULATION_SEED",
    "SECRET_SUFFIX",
    "make_client_app",
    "partition_id",
    "save_client_state",
    "load_client_state",
    "save_client_secret",
    "load_client_secret",
    "node_secret",
]

#: Message types of the handshake and of a protocol message.
IDENTIFY, TRAIN = "query.identify", "train"
#: Node-config keys (``flower-supernode --node-config "partition-id=0 num-partitions=3"``).
PARTITION_ID, NUM_PARTITIONS, STATE_DIR = "partition-id", "num-partitions", "state-dir"
#: Node-config key of a simulated node: its secret derives from this seed (see the module
#: docstring; whoever knows the seed can remove the node's noise).
SIMULATION_SEED = "simulation-seed"
#: Suffix of the file holding a node's secret beside its state (``client-<k>.secret``).
SECRET_SUFFIX = ".secret"
_SECRET_RECORD, _SECRET_KEY = "dmdidc.secret", "secret"

AlgorithmSource = Any | Callable[[Context], Any]
DataSource = Sequence[ClientData] | Callable[[Context], ClientData]


def partition_id(context: Context) -> int:
    """The node's protocol client id: its ``partition-id`` node config (an integer >= 0)."""
    if PARTITION_ID not in context.node_config:
        raise ParameterError(f"node {context.node_id} has no {PARTITION_ID!r} in its node "
                             f"config {dict(context.node_config)}; start the SuperNode with "
                             f"--node-config \"{PARTITION_ID}=<k> {NUM_PARTITIONS}=<N>\"")
    return check_integer(f"node config {PARTITION_ID!r}", context.node_config[PARTITION_ID],
                         minimum=0)


def _state_path(context: Context) -> Path | None:
    directory = context.node_config.get(STATE_DIR)
    return None if not directory else Path(str(directory)) / f"client-{partition_id(context)}"


def save_client_state(path: str | Path, state: ClientState) -> None:
    """Write a client state to ``<path>.npz`` + ``<path>.json``, each replaced atomically."""
    base = Path(path)
    base.parent.mkdir(parents=True, exist_ok=True)
    tmp = base.with_name(base.name + ".tmp")
    with open(tmp.with_suffix(".npz"), "wb") as handle:
        np.savez(handle, **{k: np.asarray(v) for k, v in state.arrays.items()})
    tmp.with_suffix(".json").write_text(json.dumps(dict(state.scalars)))
    os.replace(tmp.with_suffix(".npz"), base.with_suffix(".npz"))
    os.replace(tmp.with_suffix(".json"), base.with_suffix(".json"))


def load_client_state(path: str | Path) -> ClientState:
    """Inverse of :func:`save_client_state`; an empty state when nothing was saved yet."""
    base = Path(path)
    if not base.with_suffix(".json").exists():
        return ClientState()
    with np.load(base.with_suffix(".npz"), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return ClientState(arrays, json.loads(base.with_suffix(".json").read_text()))


def save_client_secret(path: str | Path, secret: int) -> None:
    """Write a client secret to ``<path>.secret`` (hex), readable by its owner only, atomically.

    The file is the node's key: whoever reads it can remove the node's noise.
    """
    secret = check_secret(secret)
    base = Path(path)
    base.parent.mkdir(parents=True, exist_ok=True)
    target = base.with_name(base.name + SECRET_SUFFIX)
    tmp = target.with_name(target.name + ".tmp")
    # the tmp name is predictable: a stale file or a planted symlink there must not be opened
    # (O_TRUNC would follow a link and write the key wherever it points, with the target's
    # mode). Remove what a crash left (unlink removes a link, not its target), then create
    # the file anew: O_EXCL fails on anything, a symlink included, that appears meanwhile
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(tmp, flags, 0o600)
    except FileExistsError as exc:
        raise FileExistsError(f"{tmp} was created by someone else while the client secret was "
                              f"being written: the secret was not saved; check who writes to "
                              f"{tmp.parent} and run again") from exc
    with os.fdopen(descriptor, "w") as handle:
        handle.write(f"{secret:x}\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)


def load_client_secret(path: str | Path) -> int | None:
    """The secret saved by :func:`save_client_secret` at ``path``, or ``None`` when none was.

    Raises
    ------
    ParameterError
        The file exists but does not hold a secret (the message names it).
    """
    target = Path(path).with_name(Path(path).name + SECRET_SUFFIX)
    if not target.exists():
        return None
    text = target.read_text().strip()
    try:
        return check_secret(int(text, 16), f"the secret in {target}")
    except ValueError as exc:
        raise ParameterError(f"{target} does not hold a client secret (hexadecimal digits); "
                             f"got {text[:20]!r}: restore the node's file, or start a new run "
                             f"with a new state folder") from exc


def node_secret(context: Context) -> int:
    """This node's secret: kept in ``context.state``, else in its state folder, else new.

    A new secret is :func:`~privacy.federated.algorithm.simulation_secret` of the node config
    ``simulation-seed`` when the node has one, 128 bits of OS entropy otherwise; it is stored
    in ``context.state`` and (with ``state-dir``) in ``client-<k>.secret`` before it is used,
    so no reply ever leaves under a secret the node could lose.
    """
    record = context.state.config_records.get(_SECRET_RECORD)
    if record is not None:
        return check_secret(int(str(record[_SECRET_KEY]), 16), "the secret in context.state")
    path = _state_path(context)
    secret = None if path is None else load_client_secret(path)
    if secret is None:
        seed = context.node_config.get(SIMULATION_SEED)
        secret = new_client_secret() if seed is None else simulation_secret(
            check_integer(f"node config {SIMULATION_SEED!r}", seed, minimum=0),
            partition_id(context))
        if path is not None:
            save_client_secret(path, secret)
    # a hex string: Flower's ConfigRecord holds 64-bit integers, a secret has 128 bits
    context.state[_SECRET_RECORD] = ConfigRecord({_SECRET_KEY: f"{secret:x}"})
    return secret


def make_client_app(algorithm: AlgorithmSource, client_data: DataSource, *,
                    mods: Sequence[Callable] | None = None) -> ClientApp:
    """A Flower ClientApp running the client half of a protocol algorithm.

    Parameters
    ----------
    algorithm : FederatedAlgorithm or callable Context -> FederatedAlgorithm
        The algorithm (immutable hyperparameters), or how to build it on the node (a deployed
        ClientApp runs in a fresh process per message).
    client_data : sequence of mapping, or callable Context -> mapping
        The clients' local data indexed by ``partition-id``, or how a node loads its own.
    mods : list of Flower mods, optional
        Passed to :class:`flwr.clientapp.ClientApp` (not for noise: see the module docstring).

    Returns
    -------
    flwr.clientapp.ClientApp
        Handles ``query.identify`` and ``train`` messages.

    Raises
    ------
    ParameterError
        ``algorithm`` is neither a protocol algorithm nor callable, or ``client_data`` is
        neither a sequence nor callable.

    """
    if isinstance(algorithm, FederatedAlgorithm):
        get_algorithm = lambda context: algorithm  # noqa: E731
    elif callable(algorithm):
        get_algorithm = algorithm
    else:
        raise ParameterError(f"algorithm must be a protocol algorithm or a callable "
                             f"Context -> algorithm; got {type(algorithm).__name__}")
    if callable(client_data):
        get_data = client_data
    elif isinstance(client_data, Sequence):
        data = list(client_data)
        get_data = lambda context: data[partition_id(context)]  # noqa: E731
    else:
        raise ParameterError(f"client_data must be a sequence of mappings (one per partition) "
                             f"or a callable Context -> mapping; got "
                             f"{type(client_data).__name__}")
    app = ClientApp(mods=list(mods or []))

    @app.query("identify")
    def identify(message: FlowerMessage, context: Context) -> FlowerMessage:
        node = ConfigRecord({PARTITION_ID: partition_id(context),
                             NUM_PARTITIONS: int(context.node_config.get(NUM_PARTITIONS, -1))})
        return FlowerMessage(RecordDict({"node": node}), reply_to=message)

    @app.train()
    def train(message: FlowerMessage, context: Context) -> FlowerMessage:
        client_id = partition_id(context)
        state = load_context_state(context)
        path = _state_path(context)
        if state.empty and path is not None:
            state = load_client_state(path)
        before = int(state.scalars.get(DP_RELEASES, 0))
        reply, state = run_client(get_algorithm(context), client_id, get_data(context), state,
                                  message_from_content(message.content),
                                  secret=node_secret(context))
        store_context_state(context, state)
        if path is not None:
            save_client_state(path, state)
        releases = int(state.scalars.get(DP_RELEASES, 0))
        # the server adds up what each message released: a restarted client cannot lower it
        return FlowerMessage(reply_content(reply, releases, releases - before),
                             reply_to=message)

    return app
