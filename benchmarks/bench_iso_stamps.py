"""Reading a log whose time column holds ISO 8601 stamps against the same log with numeric
stamps, in every reader.

Two files of the same random record (2 states, 1 input, a ``status`` text column left out
unread): stamps in seconds (``0.5``), and ISO stamps with milliseconds and an offset
(``2026-11-28T00:47:19.500+01:00``).  Best CPU seconds (``process_time``) of ``--repeat``
runs, one core, for ``read_data``, the command line's reader (``read_identification_data``)
and, with ``--follow``, ``follow_csv`` (line by line); the goal: the ISO file within about 2x
the numeric file's time.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=.:benchmarks python benchmarks/bench_iso_stamps.py \
        [--rows 1000000] [--repeat 2] [--follow]

Measured (1e6 rows, 2 shared cores, best of 2): read_data 4.81 s numeric, 6.81 s ISO (1.41x);
read_identification_data 6.19 / 8.30 s (1.34x); follow_csv 10.09 / 15.63 s (1.55x).

Traced peak memory (2026-11-28, 5e5 rows, ``--rows 500000``): read_data 519 MB numeric, 584 MB
ISO before the rows were split a piece at a time (:mod:`dmdidc.table_text`), 144 / 219 MB
after; read_identification_data 519 / 584 -> 141 / 219 MB; CPU unchanged (2.5-2.6 s numeric,
3.5 s ISO, best of 2, both runs on the loaded machine).
"""

from __future__ import annotations

import argparse
import tempfile
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from _common import cpu_best_time

from dmdidc import follow_csv, read_data
from simulations.data_preparation import read_identification_data

T = 0.5


def write(path: Path, stamps: list[str], X: np.ndarray, U: np.ndarray) -> Path:
    """The record as ``timestamp,x1,x2,u,status`` (the last input empty)."""
    u = [repr(float(v)) for v in U[0]] + [""]
    x1, x2 = ([repr(float(v)) for v in row] for row in X)
    rows = (f"{t},{a},{b},{c},OK\n" for t, a, b, c in zip(stamps, x1, x2, u, strict=True))
    path.write_text("timestamp,x1,x2,u,status\n" + "".join(rows))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--follow", action="store_true", help="also time follow_csv")
    options = parser.parse_args()
    rows, rng = options.rows, np.random.default_rng(0)
    X = np.cumsum(rng.standard_normal((2, rows)), axis=1) * 0.01
    U = rng.standard_normal((1, rows - 1))
    folder = Path(tempfile.mkdtemp())
    start = np.datetime64("2026-11-28T00:47:19", "ms")
    moments = start + (np.arange(rows) * 500).astype("timedelta64[ms]")
    iso = [f"{m}+01:00" for m in moments.astype(str)]
    files = {"numeric": write(folder / "numeric.csv", [repr(T * k) for k in range(rows)], X, U),
             "ISO": write(folder / "iso.csv", iso, X, U)}
    readers = {
        "read_data": lambda path: read_data(path, inputs=["u"]),
        "read_identification_data": lambda path: read_identification_data(path, inputs="u"),
    }
    if options.follow:
        readers["follow_csv"] = lambda path: list(follow_csv(
            path, inputs="u", poll=0.01, idle_timeout=0.01, report=lambda message: None,
            chunk=100_000))
    print(f"{rows} rows; best CPU seconds of {options.repeat} runs; traced peak memory of "
          f"one more (tracemalloc: Python and numpy allocations, the file's text included)")
    for name, reader in readers.items():
        seconds, peak = {}, {}
        for kind, path in files.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                seconds[kind], _ = cpu_best_time(
                    lambda path=path, reader=reader: reader(path), options.repeat)
                tracemalloc.start()
                reader(path)
                peak[kind] = tracemalloc.get_traced_memory()[1] / 1e6
                tracemalloc.stop()
        print(f"{name:26s} numeric {seconds['numeric']:6.2f} s  ISO {seconds['ISO']:6.2f} s  "
              f"ratio {seconds['ISO'] / seconds['numeric']:.2f}  peak {peak['numeric']:5.0f} / "
              f"{peak['ISO']:5.0f} MB")


if __name__ == "__main__":
    main()
