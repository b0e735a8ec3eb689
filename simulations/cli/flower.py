"""``dmdidc federated serve``: one federated run on real Flower processes on 127.0.0.1.

Starts a ``flower-superlink`` and one ``flower-supernode`` per client, runs the algorithm on the
clients' data with ``flwr run``, streams progress, writes the results and stops every process
(descendants included) on exit, on error, on Ctrl-C (exit code 130) and on SIGTERM/SIGHUP
(exit code 143/129) before it reports (:mod:`privacy.federated.flower.deploy`).  A client
that never had a reply accepted (its node failed every round) is named on stderr with the
reason, and the exit code is 3 (the results are still written).

Register with ``add_serve_action(actions)`` on the ``federated`` group's subparsers.

Examples
--------
``dmdidc federated serve --dataset iris --partition expert --algorithm scaffold --rounds 5
--out out/serve``
``dmdidc federated serve --dataset breast_cancer --algorithm fedinfer --stagger 1,2,5,10
--rounds 20 --tick 30 --out out/async``  (Algorithm 2, asynchronous)
``dmdidc federated serve --algorithm mypkg.algos:make --data mypkg.data:partition --clients 3
--out out/own``
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any

from _toolbox.errors import ParameterError
from simulations.cli.atomic import staged_folder
from simulations.cli.common import output_path

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
                    "loopback ports, run one algorithm with 'flwr run', stream progress, write "
                    "OUT/result.json, OUT/history.csv and OUT/checkpoint/, stop everything. "
                    "Either a Ch. 8 experiment (--dataset, --algorithm NAME) or your own "
                    "factories (--algorithm module:attr --data module:attr --clients N).")
    serve.add_argument("--algorithm", required=True,
                       help="with --dataset: one of fedinfer, fedavg, fedprox, scaffold, "
                            "fednova, fedlin; otherwise a factory module:attr returning the "
                            "protocol algorithm")
    exp = serve.add_argument_group("Ch. 8 experiment (simulations.studies.federated_experiments)")
    exp.add_argument("--dataset", choices=("synthetic", "iris", "breast_cancer"),
                     help="data set, split over the clients as in 'federated experiment'")
    exp.add_argument("--partition", choices=("iid", "expert"), default="iid",
                     help="how the data set is split over the clients")
    exp.add_argument("--noise", choices=("gaussian", "laplace", "sas"), default="gaussian",
                     help="local-DP noise law of the client releases")
    exp.add_argument("--epsilon", type=float, help="per-update epsilon (default: the seed's)")
    exp.add_argument("--delta", type=float, help="delta (default: the seed's)")
    exp.add_argument("--no-privacy", action="store_true", help="no noise at all")
    own = serve.add_argument_group("your own factories")
    own.add_argument("--algorithm-kwargs", type=_json, default=None,
                     help="JSON object of the algorithm factory's keyword arguments")
    own.add_argument("--data", help="factory module:attr, called (partition_id, "
                                    "num_partitions, **kwargs) on each node")
    own.add_argument("--data-kwargs", type=_json, default={},
                     help="JSON object of the data factory's keyword arguments")
    own.add_argument("--evaluate", help="factory module:attr returning model -> metrics")
    own.add_argument("--evaluate-kwargs", type=_json, default={},
                     help="JSON object of the evaluate factory's keyword arguments")
    own.add_argument("--mode", choices=("sync", "async"), default=None,
                     help="sync (default) or async (with --dataset: from the schedule)")
    own.add_argument("--ticks", type=int, default=None,
                     help="async: ticks (with --dataset: --rounds counts ticks)")
    run = serve.add_argument_group("run")
    run.add_argument("--clients", type=int, default=None,
                     help="number of SuperNodes (with --dataset: default the seed's)")
    run.add_argument("--seed", type=int, default=0,
                     help="run seed (and trial seed): the data split and the server's "
                          "sampling, never the clients' noise (each SuperNode keys it with a "
                          "secret of its own, drawn from OS entropy)")
    run.add_argument("--rounds", type=int, default=5, help="rounds (ticks under --stagger)")
    run.add_argument("--stagger", default="",
                     help="comma-separated rates gamma_k, one per client (asynchronous runs)")
    run.add_argument("--timeout", type=float, default=600.0,
                     help="sync: seconds a round waits for replies")
    run.add_argument("--min-replies", type=int, default=1,
                     help="sync: fewer valid replies leave the model unchanged")
    run.add_argument("--tick", type=float, default=30.0,
                     help="async: seconds per tick (longer than a message round trip)")
    run.add_argument("--request-timeout", type=float, default=None,
                     help="async: ticks before an unanswered request is re-issued")
    run.add_argument("--max-staleness", type=int, default=None,
                     help="async: reject replies more model versions old than this")
    run.add_argument("--resume", help="continue the run checkpointed in this folder "
                                      "(OUT/checkpoint of an earlier run, in its mode: "
                                      "synchronous or asynchronous)")
    run.add_argument("--logs", action="store_true",
                     help="keep the Flower processes' logs in OUT/logs")
    run.add_argument("--verbose", action="store_true", help="print Flower's own output too")
    run.add_argument("--out", required=True,
                     help="output folder; a new run refuses one that holds a previous run's "
                          "checkpoint or client states (continue that run with --resume "
                          "OUT/checkpoint, or give a new folder)")
    serve.set_defaults(handler=run_serve)
    return serve


def _stagger(args: argparse.Namespace) -> tuple[int, ...]:
    parts = [s.strip() for s in args.stagger.split(",") if s.strip()]
    if not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise ParameterError(f"--stagger must list integers >= 1; got {args.stagger!r}")
    return tuple(int(p) for p in parts)


def _experiment(args: argparse.Namespace) -> dict[str, Any]:
    """Specs and schedule of a Ch. 8 experiment run (``--dataset``)."""
    from simulations.studies.federated_experiments import (
        ALGORITHMS,
        ExperimentConfig,
        delta_note,
    )
    from simulations.studies.federated_flower import experiment_specs

    refused = [flag for flag, value in (("--data", args.data), ("--evaluate", args.evaluate),
                                        ("--algorithm-kwargs", args.algorithm_kwargs),
                                        ("--mode", args.mode), ("--ticks", args.ticks))
               if value is not None]
    if refused:
        raise ParameterError(f"{', '.join(refused)} cannot be combined with --dataset (the "
                             f"experiment defines them)")
    if args.no_privacy:
        from simulations.cli.common import refuse_without_privacy

        refuse_without_privacy(args, {"noise": "gaussian", "epsilon": None, "delta": None})
    if args.algorithm not in ALGORITHMS:
        raise ParameterError(f"with --dataset, --algorithm must be one of {ALGORITHMS}; got "
                             f"{args.algorithm!r}")
    config = ExperimentConfig(args.dataset, partition=args.partition, num_clients=args.clients,
                              stagger=_stagger(args) or None, rounds=args.rounds,
                              privacy=not args.no_privacy, noise=args.noise,
                              epsilon=args.epsilon, delta=args.delta)
    # warned by _plan once every option is checked: a mistake's error comes first
    return {**experiment_specs(args.algorithm, config, seed=args.seed),
            "delta_note": delta_note(config, args.seed)}


def _own(args: argparse.Namespace) -> dict[str, Any]:
    """Specs and schedule of a run of the user's own factories."""

    if args.data is None or args.clients is None:
        raise ParameterError("without --dataset, give --data module:attr and --clients N")
    stagger = _stagger(args)
    mode = args.mode or "sync"
    if stagger and (mode != "async" or len(stagger) != args.clients):
        raise ParameterError(f"--stagger needs --mode async and {args.clients} rates (one per "
                             f"client); got {args.stagger!r} with mode {mode}")
    return {"algorithm": _factory("--algorithm", args.algorithm, args.algorithm_kwargs or {}),
            "data": _factory("--data", args.data, args.data_kwargs, (0, args.clients)),
            "evaluate": _factory("--evaluate", args.evaluate, args.evaluate_kwargs)
            if args.evaluate else None,
            "num_clients": args.clients, "mode": mode, "rounds": args.rounds,
            "ticks": args.ticks if args.ticks is not None else 10,
            "stagger": ",".join(map(str, stagger))}


def _factory(option: str, target: str, kwargs: dict[str, Any], args: tuple[int, ...] = ()
             ) -> Any:
    """The factory spec of ``option``, refused here, before any Flower process starts, when
    its target cannot be imported or called with ``args`` (the data factory's partition id
    and number of partitions) and its ``--...-kwargs`` (else a traceback from a node)."""
    import inspect

    from privacy.federated.flower import FactorySpec

    how = (f"give {option} module:attr of an importable callable and its keyword arguments "
           f"as {option}-kwargs JSON")
    try:
        spec = FactorySpec(target, kwargs)
        factory = spec.resolve()
    except (ParameterError, ImportError, AttributeError) as exc:
        raise ParameterError(f"{option} {target!r} cannot be imported ({exc}); {how}") from exc
    try:
        inspect.signature(factory).bind(*args, **spec.kwargs)
    except TypeError as exc:
        called = ", ".join([*map(str, args), *(f"{k}={v!r}" for k, v in spec.kwargs.items())])
        raise ParameterError(f"{option} {target!r} cannot be called as {target}({called}): "
                             f"{exc}; {how}") from exc
    except ValueError:              # no signature to check (a builtin): the node will tell
        pass
    return spec


def _refuse_mode_options(args: argparse.Namespace, mode: str) -> None:
    """Refuse the options of the other mode: they would do nothing (``--tick`` of a
    synchronous run), as every command refuses an option that does not act."""
    from simulations.cli.common import refuse_unused

    sync, async_ = mode == "sync", "an asynchronous run (--stagger; with --data also --mode async)"
    refuse_unused(args, {
        "tick": (30.0, not sync, async_), "ticks": (None, not sync, async_),
        "request_timeout": (None, not sync, async_), "max_staleness": (None, not sync, async_),
        "timeout": (600.0, sync, "a synchronous run"),
        "min_replies": (1, sync, "a synchronous run")})


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    """Factory specs, number of clients and run config of a ``serve`` invocation."""
    for name in ("clients", "rounds", "ticks", "min_replies"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be >= 1; got {value}")
    plan = _experiment(args) if args.dataset else _own(args)
    _refuse_mode_options(args, plan["mode"])
    run_config = {key: plan.pop(key) for key in ("mode", "rounds", "ticks", "stagger")
                  if key in plan}
    run_config.update({
        "seed": args.seed, "timeout": args.timeout, "min-replies": args.min_replies,
        "tick": args.tick,
        "request-timeout": -1.0 if args.request_timeout is None else args.request_timeout,
        "max-staleness": -1 if args.max_staleness is None else args.max_staleness,
        "resume": str(Path(args.resume).resolve()) if args.resume else ""})
    _check_folders(args, run_config)
    note = plan.pop("delta_note", None)
    if note:
        from simulations.cli.terms import warn

        warn(note, args)
    return {**plan, "run_config": run_config}


def _check_folders(args: argparse.Namespace, run_config: dict[str, Any]) -> None:
    """The checkpoint checks that need nothing built, here before the progress bar and the
    deployment (which checks again for its Python callers): a resume in the checkpoint's mode,
    a new run not into a folder that holds a previous run's privacy state."""
    from privacy.federated.flower.app import CHECKPOINT
    from privacy.federated.flower.resume import check_resume_mode, refuse_previous_run

    if run_config["resume"]:
        check_resume_mode(run_config["resume"], run_config["mode"])
    else:
        refuse_previous_run(Path(args.out) / CHECKPOINT)


def _write_history(path: Path, result: Any) -> None:
    epsilon = result.epsilon_history()
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        names = sorted({k for r in result.history for k in r.metrics})
        writer.writerow(["round", "time_s", "version", "accepted", "rejected", "missing",
                         "max_staleness", "max_epsilon", *names])
        for t, r in enumerate(result.history):
            writer.writerow([r.round, f"{r.time:.3f}", r.version, len(r.accepted),
                             len(r.rejected), len(r.missing), max(r.staleness, default=0),
                             f"{epsilon[t].max():.6g}" if epsilon.shape[1] else "",
                             *[r.metrics.get(n, "") for n in names]])


def run_serve(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated serve``."""
    from privacy.federated.flower import Terminated, run_deployment
    from simulations.cli.common import progress_bar

    plan = _plan(args)
    config = plan["run_config"]
    out = output_path(args.out, folder=True)
    for name in ("result.json", "history.csv"):
        if (out / name).exists():
            print(f"overwriting {out / name}", file=sys.stderr)
    mode, clients = config["mode"], plan["num_clients"]
    total = config["rounds"] if mode == "sync" else config["ticks"]
    unit = "round" if mode == "sync" else "tick"
    with progress_bar(total=total, desc=f"Flower {mode} ({clients} SuperNodes)", unit=unit) as bar:
        def on_line(line: str) -> None:
            match = _PROGRESS.match(line)
            if match:
                bar.update(int(match.group(2)) + (1 if unit == "round" else 0) - bar.n)
                bar.set_postfix_str(line.split(": ", 2)[-1][:60])
            elif args.verbose or "ERROR" in line or "Traceback" in line:
                bar.write(line, file=sys.stderr)

        try:
            with warnings.catch_warnings():
                # said below, with the exit code, in the command's terms
                warnings.filterwarnings("ignore", "client .* contributed nothing",
                                        RuntimeWarning)
                result = run_deployment(algorithm=plan["algorithm"], data=plan["data"],
                                        evaluate=plan["evaluate"], num_clients=clients,
                                        out=out, run_config=config, on_line=on_line,
                                        workdir=out / "logs" if args.logs else None)
        except RuntimeError as exc:
            print(f"dmdidc federated serve: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("dmdidc federated serve: interrupted; every Flower process was stopped",
                  file=sys.stderr)
            return 130
        except Terminated as exc:
            print(f"dmdidc federated serve: {exc}; every Flower process was stopped",
                  file=sys.stderr)
            return exc.code
    # run_deployment writes result.json and the checkpoint itself (the checkpoint must
    # survive a failed run: it is what --resume continues from); the table is ours
    with staged_folder(out) as stage:
        _write_history(stage / "history.csv", result)
    last = result.history[-1] if result.history else None
    print(f"{mode} run of {args.algorithm} on {clients} SuperNodes: "
          f"{len(result.history)} {unit}s, model version {result.state.version}"
          + (f", last {unit}: {len(last.accepted)} accepted, {len(last.rejected)} rejected"
             if last else ""))
    if last is not None and last.metrics:
        print("last metrics: " + ", ".join(f"{k} {v:.4g}" for k, v in last.metrics.items()))
    epsilon = result.final_epsilon()
    if epsilon.size:
        print("composed epsilon per client (upper bound from the releases the server counted): "
              + ", ".join(f"{e:.4g}" for e in epsilon))
    print(f"noise: {result.noise_note()}")
    print(f"wrote {out / 'result.json'}, {out / 'history.csv'}, {out / 'checkpoint'}; "
          f"{out / 'checkpoint' / 'clients'} holds the clients' noise secrets (needed to "
          f"resume; whoever reads them can remove the noise: keep them from the server's "
          f"operator)")
    failing = result.failing_clients()
    for k, reason in failing.items():
        print(f"dmdidc federated serve: error: client {k} contributed nothing to the model: "
              f"{reason}; the model is the other clients' alone (exit code 3). Remedy: "
              f"rerun with --logs and read {out / 'logs' / f'supernode-{k}.log'}",
              file=sys.stderr)
    # the results are written, but a federation that lost a client is not the one asked for
    return 3 if failing else 0
