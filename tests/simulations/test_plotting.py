"""Plotting from the toolbox leaves the caller's matplotlib backend and pyplot alone."""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys, tempfile
from pathlib import Path
import matplotlib
before = matplotlib.get_backend()
out = Path(tempfile.mkdtemp())

from controllers.analysis import delay_mismatch_study, plot_delay_mismatch
from simulations.cli import main
from simulations.studies.fractional_delay import (StudyConfig, plot_study,
                                                run_fractional_delay_study)
from dmdidc import DelayedPlant

study = delay_mismatch_study([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 2.0, 2.5,
                             offsets=[-0.2, 0.0, 0.2])
plot_delay_mismatch(study, out / "mismatch.png")
_, runs = run_fractional_delay_study(StudyConfig(delays_in_periods=(1.25,), steps=5,
                                                 excitation_steps=40))
plot_study(runs, out / "study.png")
DelayedPlant.from_continuous([[-1.0]], [[1.0]], 0.5, 1.0).save(out / "m.json")
assert main(["simulate", str(out / "m.json"), "--steps", "5", "--out", str(out / "sim")]) == 0
written = sorted(p.name for p in out.rglob("*.png"))
pyplot = sys.modules.get("matplotlib.pyplot")    # python-control imports it, unused
print(before, matplotlib.get_backend(), len(pyplot.get_fignums()) if pyplot else 0, written)
"""


def test_plotting_keeps_the_callers_backend():
    """A caller with a non-Agg backend (svg here; inline in Jupyter) keeps it, and pyplot holds
    no figure of ours, through every plotting function of simulations and controllers."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "MPLBACKEND": "svg"}, check=False)
    assert done.returncode == 0, done.stderr
    before, after, open_figures, written = done.stdout.splitlines()[-1].split(" ", 3)
    assert (before, after, open_figures) == ("svg", "svg", "0")
    assert written.strip() == "['mismatch.png', 'study.png', 'trajectory.png']"
