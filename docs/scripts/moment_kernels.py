"""Do the residual moment checks give the same verdicts under two OpenBLAS kernels?

Each data kind of ``simulations.studies.data_kinds`` (random plants, 20 dB) is fitted by a
default ``DMDidc(max_delay=4)`` in two interpreters, one with ``OPENBLAS_CORETYPE=Haswell``, one
with ``Prescott``; the verdicts (pass / FAIL / n/a) of ``input_correlation``, ``feedback`` and
``state_completeness`` are compared data set by data set, and tallied per kind ("Residual moment
checks on periodic inputs" on the "Noisy data" page).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/moment_kernels.py \
          [--seeds 6] [--samples 3000 30000] [--kinds multisine white ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

CHECKS = ("input_correlation", "feedback", "state_completeness")


def verdicts(kinds: list[str], seeds: int, samples: list[int]) -> dict[str, list]:
    """``{"kind/seed/K": [verdict per check]}`` in this interpreter."""
    from dmdidc import DMDidc
    from simulations.studies.data_kinds import make_data, random_plant

    out = {}
    for kind in kinds:
        for seed in range(seeds):
            for K in samples:
                data = make_data(kind, random_plant(seed), samples=K, snr_db=20.0, rng=seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        est = DMDidc(max_delay=4).fit(data.X, data.U, dt=0.5,
                                                      reference=data.reference)
                    except ValueError as exc:           # toolbox errors: the same either way
                        out[f"{kind}/{seed}/{K}"] = [type(exc).__name__]
                        continue
                found = {c.name: c for c in est.diagnostics_.checks}
                out[f"{kind}/{seed}/{K}"] = [found[name].passed for name in CHECKS]
                out[f"{kind}/{seed}/{K}/statistics"] = [found[name].statistic
                                                        for name in CHECKS]
    return out


def main() -> None:
    from simulations.studies.data_kinds import DATA_KINDS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--samples", type=int, nargs="+", default=[3000, 30000])
    parser.add_argument("--kinds", nargs="+", default=list(DATA_KINDS))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(verdicts(args.kinds, args.seeds, args.samples)))
        return
    root = str(Path(__file__).resolve().parents[2])
    command = [sys.executable, __file__, "--worker", "--seeds", str(args.seeds),
               "--samples", *map(str, args.samples), "--kinds", *args.kinds]
    runs = {core: subprocess.Popen(command, stdout=subprocess.PIPE, text=True,
                                   env=dict(os.environ, OPENBLAS_CORETYPE=core,
                                            PYTHONPATH=root))
            for core in ("Haswell", "Prescott")}
    results = {core: json.loads(run.communicate()[0].strip().splitlines()[-1])
               for core, run in runs.items()}
    first, second = results["Haswell"], results["Prescott"]
    spread = {case: max((abs(a - b) / max(abs(a), abs(b), 1e-300)
                         for a, b in zip(first[case], second[case], strict=True)
                         if a == a and b == b), default=0.0)            # nan: not computed
              for case in list(first) if case.endswith("/statistics")}
    for case in spread:
        del first[case], second[case]
    worst = max(spread, key=spread.get)
    print(f"largest relative difference of a statistic between the kernels: "
          f"{spread[worst]:.2g} ({worst.removesuffix('/statistics')})")
    differ = [case for case in first if first[case] != second[case]]
    for case in differ:
        print(f"differs: {case}  Haswell {first[case]}  Prescott {second[case]}")
    names = {True: "pass", False: "FAIL", None: "n/a"}
    for kind in args.kinds:
        rows = [row for case, row in first.items() if case.startswith(kind + "/")]
        tally = Counter(f"{name} {names.get(v, v)}" for row in rows
                        for name, v in zip(CHECKS, row, strict=False))
        print(f"{kind:16s} " + ", ".join(f"{k}: {n}" for k, n in sorted(tally.items())))
    print(f"{len(differ)} of {len(first)} data sets differ between the kernels")


if __name__ == "__main__":
    main()
