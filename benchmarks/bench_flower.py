"""Benchmark: what Flower costs per round, next to the numpy reference runner.

Same algorithm, data and seed on three runtimes (the results are identical; asserted here):

* ``numpy``: :func:`privacy.federated.runner.run_sync` / ``run_async``;
* ``in-process``: :func:`privacy.federated.flower.run_inprocess_sync` / ``..._async`` (Flower
  records, ClientApp, Grid, no processes);
* ``deployment``: one ``flower-superlink`` + ``--clients`` ``flower-supernode`` processes on
  127.0.0.1 and ``flwr run`` (:func:`privacy.federated.flower.run_deployment`), timed once:
  start-up, the first round (which includes the node handshake), each later round, shutdown.

Algorithms: FedAvg (kernel least squares, 2 local steps) and synchronous / asynchronous
FedInfer (Gaussian posterior), without local DP so that the privacy accountant (identical in
every runtime) does not hide the transport cost.

Run:  .venv/bin/python benchmarks/bench_flower.py [--clients 4] [--rounds 20] [--no-deploy]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from _common import best_time  # noqa: E402

from privacy.federated.fedinfer import FedInfer  # noqa: E402
from privacy.federated.flower import (  # noqa: E402
    FactorySpec,
    run_deployment,
    run_inprocess_async,
    run_inprocess_sync,
)
from privacy.federated.gradient import FedAvg  # noqa: E402
from privacy.federated.models import KernelFeatures, LeastSquaresModel  # noqa: E402
from privacy.federated.runner import run_async, run_sync  # noqa: E402

SAMPLES = 40


def partition(partition_id: int, num_partitions: int, *, seed: int = 0) -> dict:
    """One client's share of a seeded two-class problem (the same recipe on every node)."""
    rng = np.random.default_rng([seed, partition_id])
    X = rng.normal(size=(SAMPLES, 2)) + 0.3 * partition_id
    y = (X[:, 0] + X[:, 1] + 0.5 * rng.standard_t(3, size=SAMPLES) > 0).astype(int)
    return {"X": X, "y": y}


def _model(num_clients: int) -> LeastSquaresModel:
    features = KernelFeatures.random(low=[-3, -3], high=[3, 3], count=6, rng=1)
    return LeastSquaresModel(features, num_classes=2, feature_bound=3.0,
                             total_samples=SAMPLES * num_clients)


def fedavg(num_clients: int) -> FedAvg:
    return FedAvg(_model(num_clients), None, samples=[SAMPLES] * num_clients, lr=0.05,
                  local_steps=2)


def fedinfer(num_clients: int, stagger: list[int] | None = None) -> FedInfer:
    return FedInfer(_model(num_clients), None, num_clients=num_clients, stagger=stagger)


def _same(a, b) -> None:
    for name, value in a.state.arrays.items():
        if not np.array_equal(value, b.state.arrays[name]):
            raise AssertionError(f"runtimes disagree on {name}")


def in_process(clients: int, rounds: int, repeat: int) -> None:
    data = [partition(k, clients) for k in range(clients)]
    stagger = [1 + k % 4 for k in range(clients)]
    cases = [
        ("FedAvg sync", fedavg(clients),
         lambda a: run_sync(a, data, rounds=rounds, seed=1),
         lambda a: run_inprocess_sync(a, data, rounds=rounds, seed=1), rounds),
        ("FedInfer sync", fedinfer(clients),
         lambda a: run_sync(a, data, rounds=rounds, seed=1),
         lambda a: run_inprocess_sync(a, data, rounds=rounds, seed=1), rounds),
        ("FedInfer async", fedinfer(clients, stagger),
         lambda a: run_async(a, data, stagger=stagger, ticks=rounds, seed=1),
         lambda a: run_inprocess_async(a, data, stagger=stagger, ticks=rounds, seed=1),
         rounds),
    ]
    print(f"{'case':16s} {'clients':>7s} {'numpy ms/round':>15s} {'Flower ms/round':>16s} "
          f"{'ratio':>6s} {'Flower ms/message':>18s}")
    for name, algorithm, numpy_run, flower_run, count in cases:
        t_numpy, reference = best_time(partial(numpy_run, algorithm), repeat)
        t_flower, result = best_time(partial(flower_run, algorithm), repeat)
        _same(result, reference)
        messages = sum(len(r.accepted) for r in result.history) or 1
        print(f"{name:16s} {clients:7d} {1e3 * t_numpy / count:15.2f} "
              f"{1e3 * t_flower / count:16.2f} {t_flower / t_numpy:6.1f} "
              f"{1e3 * (t_flower - t_numpy) / messages:18.3f}")


def deployment(clients: int, rounds: int) -> None:
    algorithm = FactorySpec("benchmarks.bench_flower:fedavg", {"num_clients": clients})
    data = FactorySpec("benchmarks.bench_flower:partition", {"seed": 0})
    stamps: list[tuple[float, str]] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        result = run_deployment(
            algorithm=algorithm, data=data, num_clients=clients, out=Path(tmp) / "out",
            run_config={"rounds": rounds, "seed": 1},
            on_line=lambda line: stamps.append((time.perf_counter() - start, line)))
    total = time.perf_counter() - start
    reference = run_sync(fedavg(clients), [partition(k, clients) for k in range(clients)],
                         rounds=rounds, seed=1)
    _same(result, reference)
    submitted = next(t for t, line in stamps if "Successfully started run" in line)
    ends = [t for t, line in stamps if line.startswith("dmdidc INFO: round")]
    last_line = stamps[-1][0]
    later = np.diff(ends)
    print(f"deployment ({clients} SuperNodes, FedAvg, {rounds} rounds; same numbers as numpy):")
    print(f"  processes up + app submitted   {submitted:7.1f} s")
    print(f"  first round (with handshake)  {ends[0] - submitted:7.1f} s")
    print(f"  later rounds                  {later.mean():7.1f} s/round "
          f"(min {later.min():.1f}, max {later.max():.1f})" if len(later) else "")
    print(f"  shutdown (after the last line) {total - last_line:6.1f} s")
    print(f"  total                          {total:6.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[4, 32])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--deploy-clients", type=int, default=3)
    parser.add_argument("--deploy-rounds", type=int, default=3)
    parser.add_argument("--no-deploy", action="store_true", help="skip the real processes")
    args = parser.parse_args(argv)
    for clients in args.clients:
        in_process(clients, args.rounds, args.repeat)
    if not args.no_deploy:
        deployment(args.deploy_clients, args.deploy_rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
