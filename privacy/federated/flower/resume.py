"""Resuming a Flower run: the clients' states must continue with the server's.

A client's state (its release counter, SCAFFOLD's control variate, ...) and its noise secret
live on its node, in ``<state-dir>/client-<k>.{npz,json,secret}``
(:mod:`privacy.federated.flower.client`).  The secret must come back with the state: a resumed
client that drew a new one would answer a replayed request with new noise, a second release of
the same round.  A resumed run
is only the continuation of the checkpointed one when every node starts from the state it had
when the server's checkpoint was written; a node that starts from scratch would train from a
wrong state and count its releases from zero.  :func:`check_client_states` compares the
clients' saved release counts with the server's release book and refuses a resume whose client
states are missing or inconsistent; :func:`copy_client_states` carries a checkpoint's client
states into a new run's folder, so that the checkpoint itself stays a valid starting point.
Two checks need no algorithm and run before anything is built or started:
:func:`check_resume_mode` refuses to resume a synchronous checkpoint asynchronously (or the
reverse), and :func:`refuse_previous_run` refuses a new run into a folder that holds a previous
run's checkpoint or client states (a new run would delete the clients' release counters).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from _toolbox.errors import ParameterError
from privacy.federated.flower.client import SECRET_SUFFIX, load_client_secret, load_client_state
from privacy.federated.flower.transport import ReleaseBook
from privacy.federated.results import history_from_json
from privacy.federated.state_io import load_server_state
from privacy.federated.values import DP_RELEASES

__all__ = ["CLIENTS", "SERVER", "check_client_states", "check_resume_mode",
           "copy_client_states", "refuse_previous_run"]

#: Folder of the clients' states inside a deployed run's checkpoint (node config ``state-dir``).
CLIENTS = "clients"
#: Base name of the server's state inside a checkpoint (``server.{npz,json}``).
SERVER = "server"
_MODES = {"sync": "synchronous", "async": "asynchronous"}


def check_resume_mode(checkpoint: str | Path, mode: str) -> None:
    """Refuse to resume ``checkpoint`` in another mode than the run that wrote it.

    A synchronous checkpoint holds rounds, an asynchronous one ticks and the requests in
    flight: neither loop can continue the other's.  Read from ``server.json`` alone, so the
    refusal comes before any algorithm is built or process started.

    Parameters
    ----------
    checkpoint : path
        The checkpoint folder (``OUT/checkpoint``).
    mode : {"sync", "async"}
        The mode of the run that would resume it.

    Raises
    ------
    ParameterError
        No server checkpoint in the folder, or one written in the other mode (the message
        names both modes and how to choose the checkpoint's).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "server.json").write_text(json.dumps({"extra": {"mode": "sync"}}))
    >>> check_resume_mode(folder, "sync")
    >>> check_resume_mode(folder, "async")
    Traceback (most recent call last):
    ...
    _toolbox.errors.ParameterError: cannot resume ... written by a synchronous run (mode 'sync') ...
    """
    path = Path(checkpoint) / f"{SERVER}.json"
    try:
        saved = json.loads(path.read_text()).get("extra", {}).get("mode")
    except FileNotFoundError:
        raise ParameterError(f"cannot resume from {checkpoint}: it holds no server checkpoint "
                             f"({path} is missing); give a run's checkpoint folder "
                             f"(OUT/checkpoint of 'dmdidc federated serve --out OUT')") from None
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot resume from {checkpoint}: {path} cannot be read "
                             f"({exc})") from exc
    if saved not in _MODES or mode not in _MODES:
        raise ParameterError(f"cannot resume from {checkpoint}: its mode is {saved!r} and the "
                             f"run's {mode!r}; accepted: 'sync', 'async'")
    if saved != mode:
        raise ParameterError(
            f"cannot resume from {checkpoint}: it was written by "
            f"{'an' if saved == 'async' else 'a'} {_MODES[saved]} run (mode "
            f"{saved!r}) and this run is {_MODES[mode]} (mode {mode!r}); one loop cannot "
            f"continue the other's (rounds against ticks and requests in flight). Resume it "
            f"{_MODES[saved]}ly ('dmdidc federated serve': --mode {saved} with your own "
            f"factories; with --dataset, --stagger makes the run asynchronous), or start a "
            f"new run")


def refuse_previous_run(checkpoint: str | Path, state_dir: str | Path | None = None) -> None:
    """Refuse a new run (not a resume) whose checkpoint folder already holds a run.

    A new run starts every node afresh, so it would delete the client states there (their
    release counters: the privacy state of the previous run) and then overwrite the server's
    checkpoint.  That run could no longer be resumed, and a later resume of a copy of its
    server checkpoint would find client states that under-count the releases.

    Parameters
    ----------
    checkpoint : path
        The new run's checkpoint folder (``OUT/checkpoint``).
    state_dir : path, optional
        Where its nodes keep their states (default ``checkpoint/clients``).

    Raises
    ------
    ParameterError
        The folder holds a server checkpoint or client states; the message names them and
        offers ``--resume`` or a new ``--out``.
    """
    folder = Path(checkpoint)
    states = folder / CLIENTS if state_dir is None else Path(state_dir)
    server = folder / f"{SERVER}.json"
    clients = sorted(states.glob("client-*")) if states.is_dir() else []
    if not server.exists() and not clients:
        return
    count = len({path.stem for path in clients})
    held = ([f"a server checkpoint ({server})"] if server.exists() else []) + (
        [f"the states of {count} client(s) in {states} (their release counters)"]
        if clients else [])
    raise ParameterError(
        f"{folder.parent} holds a previous run: {' and '.join(held)}, its privacy state. A new "
        f"run there would delete the client states, and that run could then neither be "
        f"resumed nor count its releases. Continue it with --resume {folder} (Python: "
        f"run_config={{'resume': ...}}), or write the new run to another folder (a new --out)")


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
    (it released, or a reply of it was accepted) must have a saved state, and a client with a
    saved state its saved secret.

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
        elif not state.empty and load_client_secret(path) is None:
            problem = (f"client {k}'s noise secret ({path}{SECRET_SUFFIX}) is missing beside "
                       f"its state; a new secret would answer a replayed request with other "
                       f"noise, a second release of that round")
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
