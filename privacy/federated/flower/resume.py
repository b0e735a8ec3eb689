"""Resuming a Flower run: the clients' states must continue with the server's.

A client's state (its release counter, SCAFFOLD's control variate, ...) lives on its node, in
``<state-dir>/client-<k>.{npz,json}`` (:mod:`privacy.federated.flower.client`).  A resumed run
is only the continuation of the checkpointed one when every node starts from the state it had
when the server's checkpoint was written; a node that starts from scratch would train from a
wrong state and count its releases from zero.  :func:`check_client_states` compares the
clients' saved release counts with the server's release book and refuses a resume whose client
states are missing or inconsistent; :func:`copy_client_states` carries a checkpoint's client
states into a new run's folder, so that the checkpoint itself stays a valid starting point.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from _toolbox.errors import ParameterError
from privacy.federated.flower.client import load_client_state
from privacy.federated.flower.transport import ReleaseBook
from privacy.federated.results import history_from_json
from privacy.federated.state_io import load_server_state
from privacy.federated.values import DP_RELEASES

__all__ = ["CLIENTS", "check_client_states", "copy_client_states"]

#: Folder of the clients' states inside a deployed run's checkpoint (node config ``state-dir``).
CLIENTS = "clients"


def copy_client_states(checkpoint: str | Path | None, state_dir: str | Path) -> None:
    """Replace the client states in ``state_dir`` by those of ``checkpoint/clients``.

    ``checkpoint=None`` (a new run) only removes the old states, so that no node of a new run
    continues a previous run's state.  Nothing happens when both are the same folder; a
    checkpoint without client states copies nothing (:func:`check_client_states` then refuses
    the resume).
    """
    target = Path(state_dir)
    source = None if checkpoint is None else Path(checkpoint) / CLIENTS
    if source is not None and source.resolve() == target.resolve():
        return
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("client-*"):
        old.unlink()
    for path in sorted(source.glob("client-*")) if source is not None and source.is_dir() \
            else []:
        shutil.copy2(path, target / path.name)


def check_client_states(checkpoint: str | Path, state_dir: str | Path, algorithm: Any,
                        num_clients: int) -> None:
    """Refuse a resume whose client states do not continue the server's checkpoint.

    Client ``k``'s saved release count must lie between the count it last reported to the
    server and the server's upper bound for it (:meth:`ReleaseBook.counts`: replies still in
    flight may have been answered after the checkpoint); a client that took part in the run
    (it released, or a reply of it was accepted) must have a saved state.

    Parameters
    ----------
    checkpoint : path
        A synchronous or asynchronous Flower checkpoint (``server.{npz,json}``).
    state_dir : path
        Where the nodes of the resumed run read their states (node config ``state-dir``).
    algorithm : FederatedAlgorithm
        For ``releases_per_update`` and ``client_dp``.
    num_clients : int

    Raises
    ------
    ParameterError
        A client state is missing or its release count is outside the server's range; the
        message names the client, the file, both counts and what to do.

    Examples
    --------
    Two rounds of private FedAvg, checkpointed with the clients' states beside the server's:

    >>> import tempfile
    >>> from privacy.federated.flower import run_inprocess_sync
    >>> from simulations.studies.federated_experiments import ExperimentConfig, build_trial
    >>> trial = build_trial(ExperimentConfig("iris", rounds=2), 0, ("fedavg",))
    >>> fedavg, clients = trial.algorithms["fedavg"], trial.data.clients
    >>> folder = tempfile.mkdtemp()
    >>> _ = run_inprocess_sync(fedavg, clients, rounds=2, checkpoint=f"{folder}/ck",
    ...                        state_dir=f"{folder}/ck/clients")
    >>> check_client_states(f"{folder}/ck", f"{folder}/ck/clients", fedavg, len(clients))
    >>> check_client_states(f"{folder}/ck", f"{folder}/empty", fedavg, len(clients))
    Traceback (most recent call last):
    ...
    _toolbox.errors.ParameterError: cannot resume from ...
    """
    _, extra = load_server_state(Path(checkpoint) / "server")
    saved_clients = len(extra.get("releases", {}).get("known") or [])
    if saved_clients and saved_clients != num_clients:
        raise ParameterError(f"cannot resume from {checkpoint}: it was written for "
                             f"{saved_clients} clients and the resumed run has {num_clients}; "
                             f"resume with the checkpoint's {saved_clients} clients (--clients "
                             f"{saved_clients}), or start a new run")
    book = ReleaseBook(num_clients, **extra.get("releases", {}))
    bounds = book.counts(algorithm)
    took_part = {k for record in history_from_json(extra.get("history", []))
                 for k in record.accepted}
    for k in range(num_clients):
        path = Path(state_dir) / f"client-{k}"
        state = load_client_state(path)
        saved = int(state.scalars.get(DP_RELEASES, 0))
        if state.empty and (book.known[k] > 0 or k in took_part):
            problem = f"client {k} has no saved state ({path}.json is missing)"
        elif saved > bounds[k]:
            # the clients save after every message, the server every checkpoint_every rounds
            raise ParameterError(
                f"cannot resume from {checkpoint}: client {k}'s saved state ({path}.json) "
                f"counts {saved} releases, more than the server's checkpoint expects "
                f"({book.known[k]}..{bounds[k]}): the run stopped after the clients answered "
                f"rounds the server had not checkpointed (a stop between checkpoints, or in "
                f"the middle of a round). Those releases happened, and the checkpoint's model "
                f"does not include them, so the run cannot be continued from it: start a new "
                f"run (checkpoint every round to make a stop after a round resumable)")
        elif saved < book.known[k]:
            problem = (f"client {k}'s saved state ({path}.json) counts {saved} releases where "
                       f"the server's checkpoint expects {book.known[k]}..{bounds[k]}")
        else:
            continue
        raise ParameterError(
            f"cannot resume from {checkpoint}: {problem}; a resumed client that starts from "
            f"another state would neither continue the run nor count its releases. Resume "
            f"from a checkpoint written with the client states beside it "
            f"({Path(checkpoint) / CLIENTS}), or start a new run")
