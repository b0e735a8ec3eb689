"""Reading a CSV log live (``follow_csv``) against reading it whole (``read_data``).

One log of a random plant (3 states, 2 inputs, a time column, 3 % lost samples), written in
full before the reader starts: the reader's backlog, the worst case for a follower (a live
logger writes far slower).  Best CPU seconds of 3 runs (``process_time``), one core
(``OPENBLAS_NUM_THREADS=1``), rows per second:

* ``read_data`` (:mod:`dmdidc.data_io`: the whole file parsed at once, the batch reader);
* ``follow_csv`` (the same line parser, run line by line, chunks of 1000, ``idle_timeout``
  0.01 s: the end of the backlog costs one poll);
* ``follow_csv`` + ``track`` (``OnlineDMDidc``, ``R = 4``, a snapshot every 5000 samples: what
  ``dmdidc identify --follow`` does).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_follow.py [--rows 50000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from _common import cpu_best_time

from dmdidc import OnlineDMDidc, follow_csv, read_data, track
from simulations.studies.live_stream import delay_step_stream


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    rows = parser.parse_args().rows
    s = delay_step_stream(0, before=rows - 1, after=0)
    path = Path(tempfile.mkdtemp()) / "log.csv"
    _write(path, s)

    def follow():
        return list(follow_csv(path, inputs=["u1", "u2"], time="time", poll=0.01,
                               idle_timeout=0.01, report=lambda message: None))

    def tracked():
        live = OnlineDMDidc(max_delay=s.max_delay, dt=s.dt, forgetting=0.999)
        return list(track(follow_csv(path, inputs=["u1", "u2"], time="time", poll=0.01,
                                     idle_timeout=0.01, report=lambda message: None),
                          live, every=5000))

    batch, _ = cpu_best_time(lambda: read_data(path, inputs=["u1", "u2"], time="time",
                                               missing="interpolate"), 3)
    print(f"{rows} rows, {path.stat().st_size / 1e6:.1f} MB; best CPU time of 3 runs")
    print(f"{'reader':34} {'rows/s':>10} {'vs read_data':>13}")
    for name, seconds in (("read_data (whole file)", batch),
                          ("follow_csv (backlog)", cpu_best_time(follow, 3)[0]),
                          ("follow_csv + track (OnlineDMDidc)", cpu_best_time(tracked, 3)[0])):
        print(f"{name:34} {rows / seconds:10.3g} {batch / seconds:13.2f}")


def _write(path: Path, s) -> None:
    """The log as a logger writes it: time, states, inputs; an empty cell for a lost value."""
    inputs = np.column_stack([s.U, np.full((s.U.shape[0], 1), np.nan)])
    table = np.column_stack([s.dt * np.arange(s.X.shape[1]), s.X.T, inputs.T])
    lines = ["time,x1,x2,x3,u1,u2"] + [",".join("" if np.isnan(v) else repr(float(v))
                                                 for v in row) for row in table]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
