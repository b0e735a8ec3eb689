"""Figure of the "Live identification" page: the delay estimate of OnlineDMDidc against the truth
over time, with the detected change and the lost samples.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/online_figures.py [--out docs/figures]
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from _toolbox.plotting import new_figure, save_figure
from dmdidc import OnlineDMDidc
from simulations.studies.live_stream import delay_step_stream

CHUNK = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "figures"))
    out = Path(parser.parse_args().out)
    s = delay_step_stream(1, before=5000, after=3000)       # 30 dB, 3 % lost
    live = OnlineDMDidc(max_delay=s.max_delay, dt=s.dt, forgetting=0.999)
    times, estimates = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # diagnostics of the fits during the warmup
        for a in range(0, s.U.shape[1], CHUNK):
            live.update(s.X[:, a:a + CHUNK + 1], s.U[:, a:a + CHUNK])
            try:
                estimates.append(np.asarray(live.delay) / s.dt)
            except ValueError:                   # no continuous model yet: leave a gap
                estimates.append(np.full(s.U.shape[0], np.nan))
            times.append(a + CHUNK)
    estimates = np.array(estimates)
    fig = new_figure((7.0, 3.8))
    ax = fig.add_subplot()
    K = s.U.shape[1]
    for i in range(estimates.shape[1]):
        line, = ax.plot(times, estimates[:, i], lw=1.5, label=f"estimate, input {i}")
        truth = np.where(np.arange(K) < s.step, s.old_delay[i], s.new_delay[i]) / s.dt
        ax.plot(np.arange(K), truth, "--", color=line.get_color(), lw=1,
                label=f"truth, input {i}")
    for event in live.events_:
        ax.axvline(event.sample, color="k", lw=0.8)
        ax.annotate(f"change detected at k = {event.sample}", (event.sample, 0.2),
                    xytext=(8, 0), textcoords="offset points", fontsize=8)
    lost = np.flatnonzero(s.lost)
    ax.plot(lost, np.full(lost.size, 0.05), "|", color="0.6", ms=4, label="lost samples")
    ax.set_xlabel("sample k")
    ax.set_ylabel("delay / T")
    ax.set_ylim(0, s.max_delay)
    ax.set_title("OnlineDMDidc: 30 dB noise, 3 % lost samples, delay step at k = "
                 f"{s.step}", fontsize=10)
    ax.legend(fontsize=7, ncol=3, loc="upper left")
    save_figure(fig, out / "online_delay_tracking.png")
    print(f"wrote {out / 'online_delay_tracking.png'}: events "
          f"{[(e.sample, e.onset) for e in live.events_]}, lost {live.dropped_samples_}")


if __name__ == "__main__":
    main()
