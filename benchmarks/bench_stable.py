"""Benchmark privacy.stable against scipy.stats.levy_stable (not part of the test suite).

Run: ``.venv/bin/python benchmarks/bench_stable.py``.  Prints a table of per-call times for
300 points, the speed ratio, the accuracy of both against a 40-digit mpmath reference at a few
points, and the time of ``sas_logpdf`` / ``sas_cdf`` on 1e6 points.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from _common import best_time
from scipy import stats

from privacy.stable import _table, sas_cdf, sas_logpdf, sas_pdf

ROOT = Path(__file__).resolve().parents[1]


def _reference_module():
    path = ROOT / "tests" / "privacy" / "data" / "make_stable_reference.py"
    spec = importlib.util.spec_from_file_location("make_stable_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    x = np.linspace(-30.0, 30.0, 300)
    print(f"{'alpha':>7} {'build [ms]':>11} {'sas_pdf [ms]':>13} {'scipy [ms]':>11} "
          f"{'ratio':>9}")
    for alpha in (1.5, 1.9, 1.999):
        _table.cache_clear()
        build = best_time(lambda a=alpha: sas_pdf(x[:1], a), 1)[0]
        ours = best_time(lambda a=alpha: sas_pdf(x, a), 7, number=20)[0]
        theirs = best_time(lambda a=alpha: stats.levy_stable.pdf(x, a, 0.0), 2)[0]
        print(f"{alpha:>7} {1e3 * build:>11.1f} {1e3 * ours:>13.3f} {1e3 * theirs:>11.1f} "
              f"{theirs / ours:>9.0f}x")

    print(f"\n{'alpha':>7} {'grid (1e6 points)':>22} {'logpdf [ms]':>12} {'cdf [ms]':>9}")
    for lo_hi in (20.0, 1e3, 1e6):
        big = np.linspace(-lo_hi, lo_hi, 1_000_000)
        for alpha in (1.5, 1.999):
            sas_logpdf(big[:1], alpha)
            t_lp = best_time(lambda a=alpha, g=big: sas_logpdf(g, a), 3)[0]
            t_cdf = best_time(lambda a=alpha, g=big: sas_cdf(g, a), 3)[0]
            grid = f"[-{lo_hi:g}, {lo_hi:g}]"
            print(f"{alpha:>7} {grid:>22} {1e3 * t_lp:>12.0f} {1e3 * t_cdf:>9.0f}")

    ref = _reference_module()
    print("\nrelative error vs mpmath (40 digits), scale = 1.7:")
    print(f"{'alpha':>7} {'x':>6} {'sas_pdf':>10} {'scipy':>10}")
    for alpha, xx in ((1.999, 30.0), (1.999, 10.0), (1.9, 30.0), (1.5, 5.0)):
        exact = float(ref.zolotarev_pdf(xx / 1.7, alpha)) / 1.7
        ours = float(sas_pdf(xx, alpha, scale=1.7))
        theirs = float(stats.levy_stable.pdf(xx, alpha, 0.0, scale=1.7))
        print(f"{alpha:>7} {xx:>6} {abs(ours / exact - 1):>10.1e} {abs(theirs / exact - 1):>10.1e}")


if __name__ == "__main__":
    main()
