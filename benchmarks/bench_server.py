"""Benchmark: one FedInfer server round (judge every reply, aggregate) next to Flower's aggregate.

``--clients`` (default 1e4) replies of ``--entries`` (default 100) numbers, Gaussian local DP,
the conjugate posterior.  Timed (best CPU time of ``--repeat``, garbage collector paused as in
``timeit``; single-threaded BLAS recommended), per round:

* ``server step``: :meth:`ServerStep.close_round` on the round's replies as the numpy runtime
  receives them -- :func:`validate_replies` (headers one by one, every array check, including
  the declared box, on one stacked array), then ``FedInfer.aggregate``;
* ``one by one``: what the server did before issue 21 -- ``validate_reply`` on each reply
  (without the box screen), then ``aggregate``;
* ``server step from Flower``: the Flower runtime's path: ``reply_from_flower`` (decode each
  ``ArrayRecord``) then ``close_round``;
* Flower's ``aggregate`` (``flwr.server.strategy.aggregate``: the weighted average of numpy
  arrays, no checks) on the same numbers as numpy arrays -- the peer of the server step, which
  also receives decoded arrays;
* Flower 1.41 ``FedAvg.aggregate_train`` on the same numbers as Flower messages (its reply
  checks, ``aggregate_arrayrecords`` and the metric average), and ``aggregate_arrayrecords``
  alone (the weighted in-place sum, decoding every ``Array``).

Ratios > 1 mean ours is faster.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_server.py [--clients 10000] [--json]
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from _common import cpu_best_time as best_time  # noqa: E402
from _common import emit_summary, summary_row  # noqa: E402
from flwr.app import Array, ArrayRecord, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.server.strategy.aggregate import aggregate  # noqa: E402
from flwr.serverapp.strategy import FedAvg  # noqa: E402
from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords  # noqa: E402

from privacy.federated.fedinfer import FedInfer  # noqa: E402
from privacy.federated.flower import ensure_task_identity  # noqa: E402
from privacy.federated.flower.records import reply_content, reply_from_flower  # noqa: E402
from privacy.federated.local_dp import LocalDP  # noqa: E402
from privacy.federated.models import SeparableLoss  # noqa: E402
from privacy.federated.protocol import CLIENT, ROUND, VERSION, Reply  # noqa: E402
from privacy.federated.server_step import ServerStep  # noqa: E402
from privacy.federated.validation import validate_reply  # noqa: E402


def _setup(clients: int, entries: int):
    loss = SeparableLoss(g=lambda w: np.zeros(entries), h=lambda d: d["z"], dimension=entries,
                         w0=np.zeros(1), total_samples=clients, sensitivity=1.0 / clients,
                         bounds=(-1.0, 1.0))
    dp = LocalDP("gaussian", 0.5 / clients, 1.0 / clients, dimension=entries)
    algorithm = FedInfer(loss, dp, num_clients=clients)
    rng = np.random.default_rng(0)
    noisy = (rng.uniform(-0.5, 0.5, entries) / clients
             + rng.normal(scale=0.5 / clients, size=(clients, entries)))
    replies = [Reply({"z": row}, {CLIENT: k, ROUND: 0, VERSION: 0})
               for k, row in enumerate(noisy)]
    return algorithm, replies


def _opened(algorithm, clients: int) -> ServerStep:
    step = ServerStep.start(algorithm, num_clients=clients, seed=0)
    step.open_round(0)
    return step


def _one_by_one(algorithm, state, replies):
    spec, seen, valid = algorithm.reply_spec(state, 0), set(), {}
    for k, reply in enumerate(replies):
        if validate_reply(reply, spec, client_id=k, expected_round=0, seen=seen,
                          screen=False) is None:
            valid[k] = reply
    return algorithm.aggregate(state, 0, valid)


def _flower_messages(replies, ours: bool) -> list[Message]:
    ensure_task_identity(1)
    request = Message(RecordDict(), 1, "train", group_id="0")
    if ours:
        contents = [reply_content(r, 1, 1) for r in replies]
    else:
        contents = [RecordDict({"arrays": ArrayRecord({"z": Array(r.arrays["z"])}),
                                "metrics": MetricRecord({"num-examples": 1})})
                    for r in replies]
    return [Message(c, reply_to=request) for c in contents]


def _headline(algorithm, replies, repeat: int) -> tuple[float, float]:
    """CPU seconds of our server step and of Flower's aggregate on the same round, interleaved
    (both see the same load of the shared machine)."""
    n, received = len(replies), list(enumerate(replies))
    results = [([r.arrays["z"]], 1) for r in replies]
    steps = [_opened(algorithm, n) for _ in range(repeat)]
    t_step, t_numpy = math.inf, math.inf
    for _ in range(repeat):
        t, record = best_time(lambda: steps.pop().close_round(received, missing=(), time=0.0,
                                                              releases=()), 1)
        t_step = min(t_step, t)
        t_numpy = min(t_numpy, best_time(lambda: aggregate(results), 1)[0])
    assert record.accepted == tuple(range(n)) and not record.rejected
    return t_step, t_numpy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true",
                        help="only the headline row (server step vs Flower's aggregate) for "
                             "run_all.py's table")
    args = parser.parse_args(argv)
    n, repeat = args.clients, args.repeat
    algorithm, replies = _setup(n, args.entries)
    t_step, t_numpy = _headline(algorithm, replies, repeat)
    if args.json:
        emit_summary([summary_row(
            f"FedInfer server round ({n} clients, d = {args.entries})", t_step, t_numpy,
            "Flower aggregate", "< 1 (faster)", t_step < t_numpy)])
        return 0
    ours_flower, theirs = _flower_messages(replies, True), _flower_messages(replies, False)
    state = algorithm.init_server_state(n, 0)
    t_one, _ = best_time(lambda: _one_by_one(algorithm, state, replies), repeat)
    steps = [_opened(algorithm, n) for _ in range(repeat)]
    t_from_flower, record = best_time(lambda: steps.pop().close_round(
        [(k, reply_from_flower(m)) for k, m in enumerate(ours_flower)], missing=(), time=0.0,
        releases=()), repeat)
    assert len(record.accepted) == n
    strategy = FedAvg()
    logging.getLogger("flwr").setLevel(logging.WARNING)   # one INFO line per call otherwise
    t_train, (arrays, _) = best_time(lambda: strategy.aggregate_train(1, theirs), repeat)
    contents = [m.content for m in theirs]
    t_arrays, _ = best_time(lambda: aggregate_arrayrecords(contents, "num-examples"), repeat)
    mean = np.mean([r.arrays["z"] for r in replies], axis=0)
    assert np.allclose(arrays["z"].numpy(), mean)

    print(f"FedInfer server round, {n} clients x {args.entries} entries (best of {repeat})")
    rows = [("server step (validate_replies + aggregate)", t_step),
            ("one by one (validate_reply each + aggregate)", t_one),
            ("Flower aggregate (numpy arrays, no checks)", t_numpy),
            ("server step from Flower messages (decode + step)", t_from_flower),
            ("Flower FedAvg.aggregate_train", t_train),
            ("Flower aggregate_arrayrecords", t_arrays)]
    for name, t in rows:
        print(f"  {name:<50} {t * 1e3:8.1f} ms  {n / t:9.3g} replies/s")
    print(f"  ratio Flower aggregate / server step:              {t_numpy / t_step:5.2f}x")
    print(f"  ratio Flower aggregate_arrayrecords / server step: {t_arrays / t_step:5.2f}x")
    print(f"  ratio Flower aggregate_train / server step:        {t_train / t_step:5.2f}x")
    print(f"  ratio Flower aggregate_train / step from Flower:   "
          f"{t_train / t_from_flower:5.2f}x")
    print(f"  ratio one by one / server step (vectorization):    {t_one / t_step:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
