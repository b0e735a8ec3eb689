"""Server-state checkpoints: a :class:`~privacy.federated.values.ServerState` on disk and back.

A checkpoint is ``<path>.npz`` (the state's arrays, bit-identical on reload) and
``<path>.json`` (its scalars and the runtime's JSON ``extra``: round counters, history, ...).
Runtimes that keep more arrays than the server state (the reference runner's client states
and replies in flight, the asynchronous Flower loop's outstanding requests) store them beside
it as named groups in one ``.npz`` (:func:`save_array_groups`, :func:`load_array_groups`).

Examples
--------
>>> import tempfile
>>> import numpy as np
>>> state = ServerState.new({"w": np.arange(3.0)}, num_clients=2, seed=7)
>>> with tempfile.TemporaryDirectory() as folder:
...     _ = save_server_state(Path(folder) / "server", state, extra={"next_round": 4})
...     loaded, extra = load_server_state(Path(folder) / "server")
>>> loaded.arrays["w"], loaded.seed, extra
(array([0., 1., 2.]), 7, {'next_round': 4})
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privacy.federated.values import ServerState

__all__ = ["save_server_state", "load_server_state", "save_array_groups", "load_array_groups"]


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


def save_array_groups(path: str | Path, groups: Mapping[Any, Mapping[str, Any]]) -> Path:
    """Save groups of named arrays in one ``.npz`` (key ``"<group>/<name>"``; overwrites).

    Parameters
    ----------
    path : path
        The ``.npz`` file.
    groups : mapping -> mapping str -> array_like
        Group keys are written with ``str`` (e.g. ``"c0"`` or a client id).

    Returns
    -------
    Path
    """
    path = Path(path)
    np.savez(path, **{f"{group}/{name}": np.asarray(value)
                      for group, arrays in groups.items() for name, value in arrays.items()})
    return path


def load_array_groups(path: str | Path) -> dict[str, dict[str, np.ndarray]]:
    """Inverse of :func:`save_array_groups`: ``{group: {name: array}}`` (group keys as str)."""
    groups: dict[str, dict[str, np.ndarray]] = {}
    with np.load(Path(path), allow_pickle=False) as npz:
        for key in npz.files:
            group, name = key.split("/", 1)
            groups.setdefault(group, {})[name] = npz[key]
    return groups
