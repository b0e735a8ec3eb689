"""``dmdidc federated serve``: one federated run on real Flower processes on 127.0.0.1.

Starts a ``flower-superlink`` and one ``flower-supernode`` per client, runs the algorithm on the
clients' data with ``flwr run``, streams progress, writes the results and stops every process
on exit, on error and on Ctrl-C (:mod:`privacy.federated.flower.deploy`).

Register with ``add_serve_action(actions)`` on the ``federated`` group's subparsers.

Examples
--------
``dmdidc federated serve --algorithm mypkg.algos:make_fedavg --data mypkg.data:partition
--clients 3 --rounds 5 --out out/serve``
``dmdidc federated serve ... --mode async --stagger 1,2,5 --ticks 12 --tick 30``
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path
from typing import Any

from privacy.errors import ParameterError

__all__ = ["add_serve_action", "run_serve"]

_PROGRESS = re.compile(r"^dmdidc INFO: (round|tick) (\d+)")


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def add_serve_action(actions: Any) -> argparse.ArgumentParser:
    """Register ``serve`` on the subparsers of the ``federated`` command group."""
    serve = actions.add_parser(
        "serve", help="run an algorithm on real Flower processes on 127.0.0.1",
        description="Start flower-superlink and one flower-supernode per client on free "
                    "loopback ports, run the algorithm with 'flwr run', stream progress, write "
                    "OUT/result.json, OUT/history.csv and OUT/checkpoint/, stop everything.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    serve.add_argument("--algorithm", required=True,
                       help="factory module:attr returning the protocol algorithm")
    serve.add_argument("--algorithm-kwargs", type=_json, default={},
                       help="JSON object of the algorithm factory's keyword arguments")
    serve.add_argument("--data", required=True,
                       help="factory module:attr, called (partition_id, num_partitions, "
                            "**kwargs) on each node, returning its data")
    serve.add_argument("--data-kwargs", type=_json, default={},
                       help="JSON object of the data factory's keyword arguments")
    serve.add_argument("--evaluate", help="factory module:attr returning model -> metrics")
    serve.add_argument("--evaluate-kwargs", type=_json, default={},
                       help="JSON object of the evaluate factory's keyword arguments")
    serve.add_argument("--clients", type=int, required=True, help="number of SuperNodes")
    serve.add_argument("--mode", choices=("sync", "async"), default="sync")
    serve.add_argument("--seed", type=int, default=0, help="run seed")
    serve.add_argument("--rounds", type=int, default=5, help="sync: rounds")
    serve.add_argument("--timeout", type=float, default=600.0,
                       help="sync: seconds a round waits for replies")
    serve.add_argument("--min-replies", type=int, default=1,
                       help="sync: fewer valid replies leave the model unchanged")
    serve.add_argument("--ticks", type=int, default=10, help="async: ticks")
    serve.add_argument("--tick", type=float, default=30.0,
                       help="async: seconds per tick (longer than a message round trip)")
    serve.add_argument("--stagger", default="",
                       help="async: comma-separated rates gamma_k, one per client")
    serve.add_argument("--request-timeout", type=float, default=None,
                       help="async: ticks before an unanswered request is re-issued")
    serve.add_argument("--max-staleness", type=int, default=None,
                       help="async: reject replies more model versions old than this")
    serve.add_argument("--resume", help="continue the run checkpointed in this folder")
    serve.add_argument("--logs", action="store_true",
                       help="keep the Flower processes' logs in OUT/logs")
    serve.add_argument("--verbose", action="store_true", help="print Flower's own output too")
    serve.add_argument("--out", required=True, help="output folder")
    serve.set_defaults(handler=run_serve)
    return serve


def _run_config(args: argparse.Namespace) -> dict[str, Any]:
    for name in ("clients", "rounds", "ticks", "min_replies"):
        if getattr(args, name) < (1 if name != "rounds" else 0):
            raise ParameterError(f"--{name.replace('_', '-')} must be >= 1; got "
                                 f"{getattr(args, name)}")
    stagger = [s.strip() for s in args.stagger.split(",") if s.strip()]
    if stagger and (len(stagger) != args.clients or not all(s.isdigit() and int(s) >= 1
                                                            for s in stagger)):
        raise ParameterError(f"--stagger must list {args.clients} integers >= 1 (one per "
                             f"client); got {args.stagger!r}")
    if stagger and args.mode != "async":
        raise ParameterError("--stagger applies to --mode async only")
    return {"mode": args.mode, "seed": args.seed, "rounds": args.rounds,
            "timeout": args.timeout, "min-replies": args.min_replies, "ticks": args.ticks,
            "tick": args.tick, "stagger": ",".join(stagger),
            "request-timeout": -1.0 if args.request_timeout is None else args.request_timeout,
            "max-staleness": -1 if args.max_staleness is None else args.max_staleness,
            "resume": str(Path(args.resume).resolve()) if args.resume else ""}


def _write_history(path: Path, result: Any) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        names = sorted({k for r in result.history for k in r.metrics})
        writer.writerow(["round", "time_s", "version", "accepted", "rejected", "missing",
                         "max_staleness", *names])
        for r in result.history:
            writer.writerow([r.round, f"{r.time:.3f}", r.version, len(r.accepted),
                             len(r.rejected), len(r.missing), max(r.staleness, default=0),
                             *[r.metrics.get(n, "") for n in names]])


def run_serve(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated serve``."""
    from tqdm import tqdm

    from privacy.federated.flower import FactorySpec, run_deployment

    config = _run_config(args)
    specs = {"algorithm": FactorySpec(args.algorithm, args.algorithm_kwargs),
             "data": FactorySpec(args.data, args.data_kwargs),
             "evaluate": FactorySpec(args.evaluate, args.evaluate_kwargs) if args.evaluate
             else None}
    out = Path(args.out)
    for name in ("result.json", "history.csv"):
        if (out / name).exists():
            print(f"overwriting {out / name}", file=sys.stderr)
    total = args.rounds if args.mode == "sync" else args.ticks
    unit = "round" if args.mode == "sync" else "tick"
    with tqdm(total=total, desc=f"Flower {args.mode} ({args.clients} SuperNodes)", unit=unit,
              file=sys.stderr) as bar:
        def on_line(line: str) -> None:
            match = _PROGRESS.match(line)
            if match:
                bar.update(int(match.group(2)) + (1 if unit == "round" else 0) - bar.n)
                bar.set_postfix_str(line.split(": ", 2)[-1][:60])
            elif args.verbose or "ERROR" in line or "Traceback" in line:
                bar.write(line, file=sys.stderr)

        try:
            result = run_deployment(num_clients=args.clients, out=out, run_config=config,
                                    on_line=on_line, workdir=out / "logs" if args.logs else None,
                                    **specs)
        except RuntimeError as exc:
            print(f"dmdidc federated serve: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("dmdidc federated serve: interrupted; every Flower process was stopped",
                  file=sys.stderr)
            return 130
    _write_history(out / "history.csv", result)
    last = result.history[-1] if result.history else None
    print(f"{args.mode} run of {args.algorithm} on {args.clients} SuperNodes: "
          f"{len(result.history)} {unit}s, model version {result.state.version}"
          + (f", last {unit}: {len(last.accepted)} accepted, {len(last.rejected)} rejected"
             if last else ""))
    print(f"wrote {out / 'result.json'}, {out / 'history.csv'}, {out / 'checkpoint'}")
    return 0
