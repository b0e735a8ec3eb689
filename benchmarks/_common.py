"""Timing helpers the benchmark scripts share.

The scripts run as ``python benchmarks/bench_*.py``, so this folder is on ``sys.path`` and they
import ``from _common import ...``.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any


def best_time(fn: Callable[[], Any], repeat: int, *, number: int = 1) -> tuple[float, Any]:
    """Best wall time (``perf_counter``) of ``repeat`` runs of ``number`` calls of ``fn``, per
    call, and the value of the last call."""
    best, value = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            value = fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best, value


def cpu_best_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best CPU time (``process_time``) of ``repeat`` calls of ``fn`` and the last value, with
    the garbage collector run before and paused during each call (as ``timeit`` does): on a
    shared, loaded machine wall clock also measures the other processes."""
    best, value = math.inf, None
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            value = fn()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best, value


def timed(function: Callable[[], Any], repeats: int) -> tuple[float, float, float, Any]:
    """Best and median wall time of ``repeats`` runs (garbage collected before each), the
    tracemalloc peak (MB) of the first run and the last result.

    tracemalloc costs ~microseconds per allocation; the benchmarked steps allocate few, large
    arrays.
    """
    times, peak, result = [], 0.0, None
    for i in range(repeats):
        gc.collect()
        if i == 0:
            tracemalloc.start()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
        if i == 0:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return min(times), statistics.median(times), peak, result


#: The line prefix of a script's ``--json`` rows on stdout, read by ``run_all.py``.
SUMMARY_MARK = "SUMMARY-JSON "


def summary_row(row: str, ours: float, peer: float, peer_name: str, goal: str, met: bool,
                note: str = "") -> dict[str, Any]:
    """One row of ``make bench``'s table: our time and the peer's (seconds), the ratio
    ``ours / peer`` (below 1: ours is faster), the issue's goal and whether it holds."""
    return {"row": row, "ours": ours, "peer": peer, "peer_name": peer_name,
            "ratio": ours / peer, "goal": goal, "met": bool(met), "note": note}


def emit_summary(rows: list[dict[str, Any]]) -> None:
    """Print the rows as one JSON line after :data:`SUMMARY_MARK` (and each one readably)."""
    import json

    for r in rows:
        print(f"{r['row']}: ours {r['ours']:.4g} s, {r['peer_name']} {r['peer']:.4g} s, "
              f"ratio {r['ratio']:.3g} (goal {r['goal']}: {'met' if r['met'] else 'MISSED'})")
    print(SUMMARY_MARK + json.dumps(rows), flush=True)
