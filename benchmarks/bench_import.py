"""Benchmark: import cost of the packages (a fresh interpreter per measurement, best of N).

``import privacy`` and ``import privacy.errors`` load no scipy, and ``import dmdidc`` no longer
pays for ``scipy.stats``, which ``privacy/__init__`` used to pull in eagerly (through
``privacy.mechanisms``, which also no longer imports it).  The former cost is reproduced in the
same run by importing what that path loaded (``scipy.optimize``, ``scipy.stats``) with
``dmdidc``.  Times are the cumulative ``-X importtime`` readings of the statement's top-level
imports (interpreter start-up excluded), best of N rounds in which every statement runs once.

Run:  .venv/bin/python benchmarks/bench_import.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _seconds(statement: str) -> float:
    """Sum of the top-level cumulative ``-X importtime`` readings of ``statement``."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    rows = [row.split("|") for row in result.stderr.splitlines()[1:]]
    after_site = [i for i, (_, _, name) in enumerate(rows) if name.strip() == "site"][-1]
    top = [int(cumulative) for _, cumulative, name in rows[after_site + 1:]
           if not name.startswith("  ")]          # top level: one space after the bar
    return sum(top) * 1e-6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    statements = {"privacy.errors": "import privacy.errors", "privacy": "import privacy",
                  "dmdidc": "import dmdidc", "scipy.stats": "import scipy.stats",
                  "privacy.mechanisms": "import privacy.mechanisms",
                  "dmdidc + eager privacy": "from scipy import optimize, special, stats; "
                                            "import dmdidc"}
    times = dict.fromkeys(statements, float("inf"))
    for _ in range(args.repeat):      # round robin, best of N: the machine's load varies
        for name, code in statements.items():
            times[name] = min(times[name], _seconds(code))
    for name, seconds in times.items():
        print(f"import {name:<24}{seconds:>8.3f} s")
    ratio = times["dmdidc + eager privacy"] / times["dmdidc"]
    print(f"import dmdidc: {times['dmdidc']:.3f} s now, {times['dmdidc + eager privacy']:.3f} s "
          f"with the former eager privacy import (ratio {ratio:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
