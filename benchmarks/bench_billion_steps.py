"""Time ``privacy.accounting.guarantee`` for ``steps = 10**9`` subsampled releases (README).

Two accountants that answer where dp_accounting's PLD self-composition cannot: RDP for a
Poisson-subsampled Gaussian (sigma = 1, q = 0.01) and, for SaS (alpha = 1.95, scale 1,
q = 1e-3), the dense FFT composition of its PLD (:mod:`privacy.dense`; it fits in memory
here, the optimal pure-DP composition answered before), both at delta = 1e-5.  Each runs in
a fresh process (so the first call pays the cold caches), then ``--repeat`` more times;
wall clock *and* CPU time are printed with the load average, because on a shared machine the
wall clock mostly measures the other processes.

Run:  .venv/bin/python benchmarks/bench_billion_steps.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _measure(which: str, repeat: int) -> None:
    sys.path.insert(0, str(ROOT))
    from privacy import GaussianMechanism, SaSMechanism, accounting

    mechanism, q = ((GaussianMechanism(sigma=1.0), 0.01) if which == "gaussian" else
                    (SaSMechanism(alpha=1.95, scale=1.0), 1e-3))
    wall, cpu = [], []
    for _ in range(1 + repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = accounting.guarantee(mechanism, delta=1e-5, steps=10 ** 9, sampling_rate=q)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    print(f"{which:<9} q={q:<6g} eps={result.epsilon:<10.6g} ({result.method:<7}) "
          f"first call: wall {wall[0]:.2f} s, CPU {cpu[0]:.2f} s; repeated (best): wall "
          f"{min(wall[1:]):.2f} s, CPU {min(cpu[1:]):.2f} s; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=("gaussian", "sas"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _measure(args.child, args.repeat)
        return 0
    for which in ("sas", "gaussian"):
        subprocess.run([sys.executable, __file__, "--child", which, "--repeat",
                        str(args.repeat)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
