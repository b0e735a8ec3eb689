"""The deployed Flower app: ServerApp and ClientApp built from factory specifications.

A deployed app runs in processes that share nothing with the launcher but the installed code
and the app folder (FAB).  :func:`~privacy.federated.flower.deploy.write_app` therefore writes
a small Python module into the app folder that names the algorithm, the data and the
evaluation as :class:`FactorySpec` values and calls :func:`deployed_apps`; the code the nodes
run is thus part of the FAB (signed and verified like any Flower app), and the run config
(``[tool.flwr.app.config]``, overridable with ``flwr run -c``) holds only numbers and paths.

Run config keys
---------------
``mode`` ("sync" | "async"), ``num-clients``, ``seed``, ``rounds`` / ``timeout`` /
``min-replies`` (sync), ``ticks`` / ``tick`` / ``stagger`` ("1,2,5,10" or "") /
``request-timeout`` (ticks, -1: never) / ``max-staleness`` (-1: none) (async),
``discovery-timeout``, ``out`` (results folder, absolute), ``resume`` (checkpoint folder or
""), ``checkpoint-every``, ``cache-dir`` (built algorithms, or "").

Node config keys
----------------
``partition-id``, ``num-partitions`` (required), ``data-file`` (optional ``.npz`` holding the
node's own data instead of the run's data recipe), ``state-dir`` (optional; see
:mod:`privacy.federated.flower.client`), ``cache-dir`` (optional; see :func:`build_cached`).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import pickle
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Context
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer
from privacy.federated.flower.asynchronous import run_async_grid
from privacy.federated.flower.client import NUM_PARTITIONS, make_client_app, partition_id
from privacy.federated.flower.sync import run_sync_grid
from privacy.federated.protocol import (
    DP_RELEASES,
    ClientData,
    ClientState,
    load_server_state,
    logger,
)
from privacy.federated.results import RunResult, history_from_json, history_to_json

__all__ = ["FactorySpec", "DeployedApps", "deployed_apps", "build_cached", "RESULT_FILE",
           "load_result", "DATA_FILE", "CACHE_DIR", "CHECKPOINT"]

#: Summary written by the ServerApp into the ``out`` folder (the exact state is beside it).
RESULT_FILE = "result.json"
#: Node-config key of a node's own data file (``.npz``).
DATA_FILE = "data-file"
#: Node- and run-config key of the folder of built algorithms (see :func:`build_cached`).
CACHE_DIR = "cache-dir"
#: Folder of the checkpoint inside a deployed run's ``out`` folder.
CHECKPOINT = "checkpoint"


@dataclass(frozen=True)
class FactorySpec:
    """An importable callable and its JSON keyword arguments: ``target(*args, **kwargs)``.

    Parameters
    ----------
    target : str
        ``"package.module:attribute"``.
    kwargs : mapping, optional
        JSON-serializable keyword arguments.

    Raises
    ------
    ParameterError
        ``target`` is not ``module:attribute`` or ``kwargs`` is not JSON-serializable.

    Examples
    --------
    >>> spec = FactorySpec("numpy:linspace", {"num": 3})
    >>> spec.build(0.0, 1.0)
    array([0. , 0.5, 1. ])
    >>> spec
    FactorySpec('numpy:linspace', {'num': 3})
    """

    target: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        module, _, attribute = str(self.target).partition(":")
        if not module or not attribute:
            raise ParameterError(f"target must be 'module:attribute'; got {self.target!r}")
        try:
            kwargs = json.loads(json.dumps(dict(self.kwargs), allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"kwargs of {self.target} must be JSON-serializable; got "
                                 f"{self.kwargs!r} ({exc})") from exc
        object.__setattr__(self, "kwargs", kwargs)

    def resolve(self) -> Callable[..., Any]:
        """Import the target."""
        module, _, attribute = self.target.partition(":")
        value: Any = importlib.import_module(module)
        for part in attribute.split("."):
            value = getattr(value, part)
        return value

    def build(self, *args: Any) -> Any:
        """Call the target with ``args`` and the stored keyword arguments."""
        return self.resolve()(*args, **self.kwargs)

    def __repr__(self) -> str:
        return f"FactorySpec({self.target!r}, {self.kwargs!r})"


@dataclass(frozen=True)
class DeployedApps:
    """The two components a Flower app folder names."""

    server_app: ServerApp
    client_app: ClientApp


def build_cached(spec: FactorySpec, directory: str | Path | None) -> Any:
    """``spec.build()``, kept as a pickle in ``directory`` (keyed by the spec) for later calls.

    A deployed ClientApp runs in a fresh process per message; building an algorithm can mean
    calibrating its noise (seconds for Gaussian, minutes for vector SaS), so the launcher
    builds it once into the deployment's cache folder (node config / run config
    ``cache-dir``) and every process loads it.  The folder is the deployment's own (written by
    the launcher), never data received over the network.
    """
    if not directory:
        return spec.build()
    path = Path(str(directory)) / f"{hashlib.sha256(repr(spec).encode()).hexdigest()[:32]}.pkl"
    if path.exists():
        with open(path, "rb") as handle:
            return pickle.load(handle)
    value = spec.build()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        pickle.dump(value, handle)
    os.replace(tmp, path)
    return value


def _node_data(data: FactorySpec, context: Context) -> ClientData:
    path = context.node_config.get(DATA_FILE)
    if path:
        with np.load(str(path), allow_pickle=False) as npz:
            return {name: npz[name] for name in npz.files}
    if NUM_PARTITIONS not in context.node_config:
        raise ParameterError(f"node {context.node_id} has no {NUM_PARTITIONS!r} in its node "
                             f"config; the data recipe {data.target} needs it")
    return data.build(partition_id(context), int(context.node_config[NUM_PARTITIONS]))


def _optional(value: Any) -> int | None:
    return None if int(value) < 0 else int(value)


def run_from_config(grid: Grid, config: Mapping[str, Any], algorithm: Any,
                    evaluate: Callable | None) -> RunResult:
    """Run the loop a run config asks for and write its result into ``config["out"]``."""
    out = Path(str(config["out"]))
    common = {"num_clients": check_integer("num-clients", config["num-clients"], minimum=1),
              "seed": int(config["seed"]), "evaluate": evaluate,
              "checkpoint": out / CHECKPOINT,
              "checkpoint_every": int(config["checkpoint-every"]),
              "resume": str(config["resume"]) or None,
              "discovery_timeout": float(config["discovery-timeout"])}
    mode = str(config["mode"])
    if mode == "sync":
        result = run_sync_grid(algorithm, grid, rounds=int(config["rounds"]),
                               timeout=float(config["timeout"]),
                               min_replies=int(config["min-replies"]), **common)
    elif mode == "async":
        stagger = [int(g) for g in str(config["stagger"]).split(",") if g.strip()] or None
        timeout = float(config["request-timeout"])
        result = run_async_grid(algorithm, grid, ticks=int(config["ticks"]),
                                tick=float(config["tick"]), stagger=stagger,
                                timeout=None if timeout < 0 else timeout,
                                max_staleness=_optional(config["max-staleness"]), **common)
    else:
        raise ParameterError(f"run config mode must be 'sync' or 'async'; got {mode!r}")
    summary = {"algorithm": getattr(algorithm, "name", type(algorithm).__name__),
               "mode": mode, "model": {k: np.asarray(v).tolist()
                                       for k, v in algorithm.model(result.state).items()},
               "history": history_to_json(result.history)}
    (out / RESULT_FILE).write_text(json.dumps(summary, indent=1))
    return result


def load_result(out: str | Path, algorithm: Any) -> RunResult:
    """The result a deployed run wrote into ``out`` (exact arrays, from its checkpoint)."""
    state, extra = load_server_state(Path(out) / CHECKPOINT / "server")
    history = tuple(history_from_json(extra["history"]))
    releases = history[-1].releases if history else (0,) * state.num_clients
    return RunResult(algorithm, state,
                     tuple(ClientState(scalars={DP_RELEASES: n}) for n in releases), history)


def deployed_apps(*, algorithm: FactorySpec, data: FactorySpec,
                  evaluate: FactorySpec | None = None) -> DeployedApps:
    """ServerApp and ClientApp of a deployed run (called by the generated app module).

    Parameters
    ----------
    algorithm : FactorySpec
        ``build()`` returns the protocol algorithm (on the server and on every node).
    data : FactorySpec
        ``build(partition_id, num_partitions)`` returns a node's data (unless its node config
        names a ``data-file``).
    evaluate : FactorySpec, optional
        ``build()`` returns a callable model -> metrics, run on the server after every round.

    Returns
    -------
    DeployedApps
    """
    client_app = make_client_app(
        lambda context: build_cached(algorithm, context.node_config.get(CACHE_DIR)),
        lambda context: _node_data(data, context))
    server_app = ServerApp()

    @server_app.main()
    def main(grid: Grid, context: Context) -> None:
        # The ServerApp process is an application entry point: show our log in Flower's stream.
        if not any(getattr(h, "dmdidc_stream", False) for h in logger.handlers):
            handler = logging.StreamHandler(sys.stdout)
            handler.setFormatter(logging.Formatter("dmdidc %(levelname)s: %(message)s"))
            handler.dmdidc_stream = True
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        cache = context.run_config.get(CACHE_DIR)
        run_from_config(grid, context.run_config, build_cached(algorithm, cache),
                        None if evaluate is None else build_cached(evaluate, cache))

    return DeployedApps(server_app, client_app)
