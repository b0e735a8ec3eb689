"""Benchmark: import cost of the packages (a fresh interpreter per measurement, best of N).

``import dmdidc`` loads the errors only (PEP 562 lazy exports below the public names): none of
scipy.stats, privacy.federated, cvxpy or dp_accounting, and not even numpy.  The goal of issue
21 is at most 2x ``import numpy, scipy.linalg`` (what any numerical user pays anyway).  Two
measures, each the best of N rounds in which every statement runs once (round robin: the
machine's load varies):

* ``importtime``: the cumulative ``-X importtime`` readings of the statement's top-level
  imports (interpreter start-up excluded);
* ``wall``: the wall time of ``python -c statement`` minus that of ``python -c pass`` (what a
  user waits for).

``--json`` (the row of ``make bench``'s table) measures the CPU time of the child process
instead (start-up subtracted), which a loaded machine's other processes do not inflate.

The former cost of ``import dmdidc`` (when ``privacy/__init__`` imported scipy.stats eagerly)
is reproduced by importing what that path loaded with ``dmdidc``.

Run:  .venv/bin/python benchmarks/bench_import.py [--repeat 7] [--json]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import emit_summary, summary_row

ROOT = Path(__file__).resolve().parents[1]


def _importtime(statement: str) -> float:
    """Sum of the top-level cumulative ``-X importtime`` readings of ``statement``."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    rows = [row.split("|") for row in result.stderr.splitlines()[1:]]
    after_site = [i for i, (_, _, name) in enumerate(rows) if name.strip() == "site"][-1]
    top = [int(cumulative) for _, cumulative, name in rows[after_site + 1:]
           if not name.startswith("  ")]          # top level: one space after the bar
    return sum(top) * 1e-6


def _wall(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], cwd=ROOT, check=True)
    return time.perf_counter() - start


def _cpu(statement: str) -> float:
    """CPU seconds (user + system) of ``python -c statement``: unlike the wall clock, what the
    other processes of a loaded machine do not add to."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", statement], cwd=ROOT, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _summary(repeat: int) -> int:
    """The CPU time (start-up subtracted) of the two headline imports against the baseline."""
    statements = {"base": "import numpy, scipy.linalg", "import dmdidc": "import dmdidc",
                  "from dmdidc import DMDidc": "from dmdidc import DMDidc"}
    cpu, bare = dict.fromkeys(statements, float("inf")), float("inf")
    for _ in range(repeat):      # round robin: the machine's load varies
        bare = min(bare, _cpu("pass"))
        for name, code in statements.items():
            cpu[name] = min(cpu[name], _cpu(code))
    base = cpu.pop("base") - bare
    emit_summary([summary_row(f"`{name}` (CPU)", cpu[name] - bare, base,
                              "import numpy, scipy.linalg", "<= 2", cpu[name] - bare <= 2 * base)
                  for name in cpu])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", action="store_true",
                        help="only the headline rows (import dmdidc, from dmdidc import DMDidc "
                             "against numpy + scipy.linalg, wall time) for run_all.py's table")
    args = parser.parse_args(argv)
    if args.json:
        return _summary(args.repeat)
    statements = {"numpy, scipy.linalg": "import numpy, scipy.linalg",
                  "dmdidc": "import dmdidc",
                  "privacy.errors": "import privacy.errors", "privacy": "import privacy",
                  "controllers": "import controllers",
                  "controllers.DelayedMPC": "from controllers import DelayedMPC",
                  "dmdidc.DMDidc": "from dmdidc import DMDidc",
                  "scipy.stats": "import scipy.stats",
                  "dmdidc + eager privacy": "from scipy import optimize, special, stats; "
                                            "import dmdidc"}
    importtime = dict.fromkeys(statements, float("inf"))
    wall = dict.fromkeys(statements, float("inf"))
    bare = float("inf")
    for _ in range(args.repeat):
        bare = min(bare, _wall("pass"))
        for name, code in statements.items():
            importtime[name] = min(importtime[name], _importtime(code))
            wall[name] = min(wall[name], _wall(code))
    base_i, base_w = importtime["numpy, scipy.linalg"], wall["numpy, scipy.linalg"] - bare
    print(f"{'import':<26}{'importtime s':>13}{'wall s':>9}{'/ numpy+scipy.linalg':>22}")
    for name in statements:
        seconds = wall[name] - bare
        print(f"{name:<26}{importtime[name]:>13.3f}{seconds:>9.3f}"
              f"{importtime[name] / base_i:>11.2f} / {seconds / base_w:<8.2f}")
    print(f"(interpreter start-up, subtracted from wall: {bare:.3f} s; ratios: importtime / "
          f"wall)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
