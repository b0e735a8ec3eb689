"""Parameter sweeps in parallel with Dask (``dask.distributed``), serially for comparison.

A sweep runs ``task(config, rng) -> dict`` for every configuration of a grid.  Task ``i`` gets
its own generator from ``numpy.random.SeedSequence(seed, spawn_key=(i,))`` (the ``i``-th child
of ``SeedSequence(seed).spawn``), so a row's numbers depend only on the seed and the task's
position, never on the engine, the number of workers or the completion order: the Dask path and
the serial path return identical tables (tested).

The default engine starts a ``distributed.LocalCluster`` with ``n_workers`` single-threaded
worker processes; ``scheduler="tcp://host:8786"`` runs the same sweep on an existing cluster
instead (its workers must be able to import the task), and ``client=`` reuses a running
``distributed.Client``.  Progress is shown with tqdm as tasks complete.
"""

from __future__ import annotations

import csv
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer

__all__ = ["SweepResult", "parameter_grid", "run_sweep", "task_rng"]

Task = Callable[[dict[str, Any], np.random.Generator], Mapping[str, Any]]


def parameter_grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """All combinations of the given axes, the last axis varying fastest.

    Examples
    --------
    >>> parameter_grid(epsilon=[1, 3], alpha=[1.9, 2.0])
    [{'epsilon': 1, 'alpha': 1.9}, {'epsilon': 1, 'alpha': 2.0}, {'epsilon': 3, 'alpha': 1.9}, \
{'epsilon': 3, 'alpha': 2.0}]
    """
    for name, values in axes.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ParameterError(f"axis {name!r} must be a non-empty list of values; got "
                                 f"{values!r}")
    names = list(axes)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes.values())]


def task_rng(seed: int, index: int) -> np.random.Generator:
    """The generator of task ``index`` in a sweep with ``seed`` (same on every engine)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))


@dataclass(frozen=True)
class SweepResult:
    """Rows of a sweep, in the order of the configurations.

    Attributes
    ----------
    rows : tuple of dict
        ``{"task": i, **config, **result}`` per task.
    engine : str
        ``"serial"`` or the Dask scheduler address.
    """

    rows: tuple[dict[str, Any], ...]
    engine: str

    def column(self, name: str) -> list[Any]:
        """Values of one column, in row order."""
        try:
            return [row[name] for row in self.rows]
        except KeyError as exc:
            raise ParameterError(f"no column {name!r}; columns: {sorted(self.rows[0])}") from exc

    def to_csv(self, path: str | Path) -> Path:
        """Write the table as CSV (columns: the union over rows, in first-seen order)."""
        path = Path(path)
        columns = list(dict.fromkeys(key for row in self.rows for key in row))
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(self.rows)
        return path


def _call(task: Task, index: int, config: dict[str, Any], seed: int) -> dict[str, Any]:
    result = task(dict(config), task_rng(seed, index))
    if not isinstance(result, Mapping):
        raise TypeError(f"the sweep task must return a mapping of results; task {index} "
                        f"({config}) returned {type(result).__name__}")
    clash = set(result) & ({"task"} | set(config))
    if clash:
        raise ParameterError(f"task {index} returned keys {sorted(clash)} that clash with the "
                             f"configuration; rename them")
    return {"task": index, **config, **result}


def run_sweep(task: Task, configs: Sequence[Mapping[str, Any]], *, seed: int = 0,
              engine: str = "dask", n_workers: int = 2, processes: bool = True,
              scheduler: str | None = None, client: Any = None,
              progress: bool = True) -> SweepResult:
    """Run ``task(config, rng)`` for every configuration, in parallel with Dask or serially.

    Parameters
    ----------
    task : callable
        ``task(config: dict, rng: numpy.random.Generator) -> Mapping`` of result columns.  With
        worker processes or a remote scheduler it must be importable (a module-level function).
    configs : sequence of mapping
        One configuration per task (e.g. from :func:`parameter_grid`).
    seed : int, default 0
        Root of the per-task seeds (:func:`task_rng`).
    engine : {"dask", "serial"}, default "dask"
    n_workers : int, default 2
        Workers of the ``LocalCluster`` started when no scheduler or client is given.
    processes : bool, default True
        Worker processes (True) or threads in this process (False) for the ``LocalCluster``.
    scheduler : str, optional
        Address of an existing Dask scheduler (``"tcp://host:8786"``).
    client : distributed.Client, optional
        A running client to submit to (not closed afterwards).
    progress : bool, default True
        tqdm progress bar over completed tasks.

    Returns
    -------
    SweepResult

    Raises
    ------
    ParameterError
        For an empty grid, an unknown engine, or both ``scheduler`` and ``client``.
    Exception
        The first exception raised by a task (from Python 3.11 with the task's configuration
        in its notes).

    Examples
    --------
    >>> def task(config, rng):
    ...     return {"draw": float(rng.normal()) * config["scale"]}
    >>> serial = run_sweep(task, parameter_grid(scale=[1.0, 2.0]), engine="serial",
    ...                    progress=False)
    >>> [round(v, 4) for v in serial.column("draw")]
    [1.4437, 1.6102]
    """
    configs = [dict(c) for c in configs]
    if not configs:
        raise ParameterError("configs must hold at least one configuration")
    if engine not in ("dask", "serial"):
        raise ParameterError(f"engine must be 'dask' or 'serial'; got {engine!r}")
    if scheduler is not None and client is not None:
        raise ParameterError("give either scheduler (an address) or client, not both")
    seed = check_integer("seed", seed, minimum=0)
    if engine == "serial":
        rows = []
        for i, config in enumerate(tqdm(configs, disable=not progress, desc="sweep")):
            rows.append(_annotated(task, i, config, seed))
        return SweepResult(tuple(rows), "serial")
    return _run_dask(task, configs, seed, check_integer("n_workers", n_workers, minimum=1),
                     processes, scheduler, client, progress)


def _annotated(task: Task, index: int, config: dict[str, Any], seed: int) -> dict[str, Any]:
    try:
        return _call(task, index, config, seed)
    except Exception as exc:
        _note(exc, index, config)
        raise


def _note(exc: BaseException, index: int, config: dict[str, Any]) -> None:
    """Say which task failed (exception notes exist from Python 3.11 on)."""
    if hasattr(exc, "add_note"):
        exc.add_note(f"in sweep task {index} with configuration {config}")


def _run_dask(task: Task, configs: list[dict[str, Any]], seed: int, n_workers: int,
              processes: bool, scheduler: str | None, client: Any,
              progress: bool) -> SweepResult:
    from distributed import Client, LocalCluster, as_completed

    cluster = own_client = None
    try:
        if client is None:
            if scheduler is None:
                cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=processes, dashboard_address=None)
                own_client = Client(cluster)
            else:
                own_client = Client(scheduler)
            client = own_client
        futures = {client.submit(_call, task, i, config, seed, pure=False): i
                   for i, config in enumerate(configs)}
        rows: list[dict[str, Any] | None] = [None] * len(configs)
        bar = tqdm(total=len(configs), disable=not progress, desc="sweep")
        for future in as_completed(futures):
            i = futures[future]
            try:
                rows[i] = future.result()
            except Exception as exc:
                _note(exc, i, configs[i])
                raise
            bar.update()
        bar.close()
        return SweepResult(tuple(rows), str(client.scheduler.address))
    finally:
        if own_client is not None:
            own_client.close()
        if cluster is not None:
            cluster.close()
