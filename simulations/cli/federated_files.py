"""``dmdidc federated identify FILE [FILE ...]``: federated DMDidc on the users' own data, one
file per client.

Each file is read as ``dmdidc identify`` reads its data file (an ``.npz`` with ``X`` and ``U``,
or a CSV table with ``--inputs`` / ``--states`` / ``--time`` columns and ``--missing``, where
``interpolate`` is refused: it would break the per-sample guarantee); every
client privatizes its DMDidc statistics once with the federation's public bounds
(``--state-bound``, ``--input-bound``), the server combines the releases with FedInfer
(:class:`dmdidc.federated.identification.FederatedIdentification` on the numpy runner) and
identifies the plant from the combination.  Writes the model file (``--model``, in ``--out``),
``summary.json`` and ``summary.md``.

Example
-------
``dmdidc federated identify site1.csv site2.csv site3.csv --inputs u1,u2 --max-delay 3
--state-bound 5 --input-bound 1 --epsilon 1 --delta 1e-5 --out out/fed``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["run_on_files", "STUDY_OPTIONS"]

#: Options of the built-in study (their flags), refused beside data files.
STUDY_OPTIONS = {"clients": "--clients", "experiments": "--experiments", "length": "--length",
                 "noise_db": "--noise-db", "seeds": "--seeds", "baselines": "--baselines"}
#: Options that only act on data files, refused in the built-in study.
FILE_OPTIONS = {"states": "--states", "inputs": "--inputs", "outputs": "--outputs",
                "time": "--time", "dt": "--dt", "max_delay": "--max-delay",
                "state_bound": "--state-bound", "input_bound": "--input-bound",
                "model": "--model", "unit": "--unit", "window": "--window"}


def run_on_files(args: argparse.Namespace) -> int:
    """Handler of ``dmdidc federated identify`` with data files."""
    from _toolbox.errors import ParameterError
    from dmdidc import DMDidc
    from dmdidc.federated.identification import FederatedIdentification
    from dmdidc.inference.clipping import clipping_check
    from privacy.federated import new_client_secret, run_sync, simulation_secret
    from simulations.cli.atomic import staged_folder
    from simulations.cli.common import (
        MODEL_SUFFIXES,
        check_unit_window,
        output_path,
        per_channel,
        refuse_interpolation,
        seed_warning,
        summary_table,
        write_summary,
    )
    from simulations.cli.identify import (
        check_delay_memory,
        delay_record,
        refuse_delay_at_bound,
        signals_record,
        with_signals,
    )
    from simulations.cli.terms import warn

    given = [flag for name, flag in STUDY_OPTIONS.items() if getattr(args, name) is not None]
    if given:
        raise ParameterError(f"{', '.join(given)} {'set' if len(given) > 1 else 'sets'} the "
                             f"built-in study's simulated clients; "
                             f"with data files every file is one client (leave them out)")
    if args.engine != "numpy":
        raise ParameterError("--engine flower runs the built-in study; data files run on the "
                             "numpy runner (deploy real nodes with 'dmdidc federated serve')")
    unit = "sample" if args.unit is None else args.unit
    check_unit_window(unit, args.window)
    out = output_path(args.out, folder=True)
    output_path(args.model, folder=False, suffixes=MODEL_SUFFIXES, option="--model")
    refuse_interpolation(args)
    # read first: input-free data are refused with what fits them, not asked for input bounds
    clients, dt, first = _read_clients(args)
    missing = [flag for name, flag in (("max_delay", "--max-delay"),
                                       ("state_bound", "--state-bound"),
                                       ("input_bound", "--input-bound"))
               if getattr(args, name) is None]
    if missing:
        raise ParameterError(f"federated identification on data files needs {', '.join(missing)}"
                             f" (the bounds are public: they must not come from the data)")
    n, m = clients[0]["X"].shape[1], clients[0]["U"].shape[1]
    state_bound = per_channel("--state-bound", args.state_bound, n, "state")
    input_bound = per_channel("--input-bound", args.input_bound, m, "input")
    for client in clients:
        check_delay_memory(args.max_delay, _AsData(client))
    algo = FederatedIdentification(
        num_clients=len(clients), n_states=n, n_inputs=m, max_delay=args.max_delay,
        state_bound=state_bound, input_bound=input_bound, mechanism=args.mechanism,
        epsilon=args.epsilon,
        delta=None if args.mechanism == "laplace" else (1e-5 if args.delta is None
                                                        else args.delta),
        alpha=(1.5 if args.alpha is None else args.alpha) if args.mechanism == "sas" else None,
        unit=unit, window=args.window, instruments="inputs")
    for path, client in zip(args.files, clients, strict=True):
        stats = algo.client_statistics(client)
        # each client's clipping, said with its file here (its release does not carry it)
        clipping = clipping_check(stats)
        if clipping.failed:
            warn(f"{path}: {clipping.message()}", args)
        if stats.n_samples == 0:
            # else its release would be calibrated on a zero sensitivity, far from the file
            raise ParameterError(
                f"{path!r} is too short for --max-delay {args.max_delay}: its "
                f"{client['X'].shape[2]} samples per record leave no regression sample once "
                f"the delay and the inputs' lags (the instruments) are taken; give a longer "
                f"record or a smaller --max-delay")
    if args.seed is None:
        # real releases: each client's noise keyed by a secret drawn here and never written
        secrets = [new_client_secret() for _ in clients]
    else:
        warn(seed_warning(args.seed, "the clients' noise", str(out)), args)
        secrets = [simulation_secret(args.seed, k) for k in range(len(clients))]
    with warnings.catch_warnings():
        # said above with each file's name; a client's release would say it again unnamed
        warnings.filterwarnings("ignore", message="check 'clipping' failed")
        run = run_sync(algo, clients, rounds=1, seed=0, secrets=secrets)
    estimator = DMDidc(max_delay=args.max_delay, estimator="iv")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit_statistics(algo.statistics(run.state), dt=dt)
        refuse_delay_at_bound(estimator, "--max-delay")
        # (its warning when the intervals cannot be given is the command's, not a traceback's)
        model = with_signals(estimator.annotated_model(0.95), first,
                             files=", ".join(args.files))
    epsilons = run.final_epsilon()
    summary: dict[str, Any] = {
        "clients": len(clients), "files": list(args.files), "dt": dt,
        "signals": signals_record(model.signal_info),
        "mechanism": args.mechanism, "epsilon_per_client_max": float(epsilons.max()),
        "delta": algo.delta, "unit": unit, "window": args.window,
        "noise": ("seeded with --seed (not written here): anyone with that seed can remove the "
                  "noise" if args.seed is not None else "each client's noise keyed by a secret "
                  "of its own, drawn from OS entropy and not kept")}
    summary.update(delay_record(estimator, model, 0.95)[1])
    model_name = Path(args.model or "model.json").name
    with staged_folder(out) as stage:
        model.save(stage / model_name)
        write_summary(stage / "summary.json", summary,
                      title=f"dmdidc federated identify ({len(clients)} clients)")
    print(summary_table(summary))
    for warning in caught:
        warn(warning.message, args)
    print(f"wrote {out / model_name}, {out / 'summary.json'}, {out / 'summary.md'}")
    return 0


class _AsData:
    """A client's arrays in the shape :func:`~simulations.cli.identify.check_delay_memory`
    reads (tuples of segments)."""

    def __init__(self, client: dict[str, np.ndarray]) -> None:
        self.X, self.U = tuple(client["X"]), tuple(client["U"])


def _read_clients(args: argparse.Namespace) -> tuple[list[dict[str, np.ndarray]], float, Any]:
    """Every file as ``{"X": (E, n, K + 1), "U": (E, m, K)}``, the common sampling period and
    the first file's data (its signal names, which the others' must match)."""
    import math

    from _toolbox.errors import DimensionError, ParameterError
    from simulations.cli.identify import refuse_outputs
    from simulations.data_preparation import (
        is_table,
        read_identification_data,
        refuse_idle_tolerance,
    )

    if len(args.files) < 1:
        raise ParameterError("give one data file per client")
    for k, path in enumerate(args.files):
        twice = [j for j in range(k) if _same_file(path, args.files[j])]
        if twice:
            # two clients with one data set: the model would count it twice, and each release
            # of the same records spends its privacy again
            raise ParameterError(f"{path!r} is given twice (clients {twice[0]} and {k}, "
                                 f"{args.files[twice[0]]!r}); every file is one client's "
                                 f"data: give each once")
    refuse_outputs(args)
    clients, periods, datas = [], [], []
    for path in args.files:
        table = is_table(path)
        data = read_identification_data(
            path, states=args.states if table else None, inputs=args.inputs if table else None,
            time=args.time if table else None, missing=args.missing, dt=args.dt,
            outputs=args.outputs, time_tolerance=args.time_tolerance)
        if data.dt is None:
            raise ParameterError(f"{path!r}: give --dt, the sampling period in seconds (the "
                                 f"file has no time column to read it from)")
        lengths = {U.shape[1] for U in data.U}
        if len(lengths) > 1:
            # not --missing interpolate: interpolated gaps break the per-sample guarantee
            raise ParameterError(f"{path!r}: --missing drop split the record into segments of "
                                 f"different lengths ({sorted(lengths)}); a client's "
                                 f"experiments must have one length: cut the file into "
                                 f"experiments of one length (e.g. leave out the rows of the "
                                 f"shorter pieces) before the run")
        if data.U[0].shape[0] == 0:        # the federated IV uses the inputs as instruments
            raise DimensionError(f"{path!r} has no inputs (U has 0 rows): federated "
                                 f"identification needs at least one input; fit input-free "
                                 f"data (plain DMD) with 'dmdidc identify' or 'dmdidc privacy "
                                 f"identify'")
        for note in data.notes:
            print(f"data ({path}): {note}")
        clients.append({"X": np.stack(data.X), "U": np.stack(data.U)})
        periods.append(data.dt)
        datas.append(data)
    refuse_idle_tolerance(args.time_tolerance, datas)    # it acts if any client has stamps
    first = clients[0]
    for path, client, period in zip(args.files, clients, periods, strict=True):
        if client["X"].shape[1] != first["X"].shape[1] or \
                client["U"].shape[1] != first["U"].shape[1]:
            raise DimensionError(f"{path!r} has {client['X'].shape[1]} states and "
                                 f"{client['U'].shape[1]} inputs; {args.files[0]!r} has "
                                 f"{first['X'].shape[1]} and {first['U'].shape[1]}: every "
                                 f"client measures the same plant")
        if not math.isclose(period, periods[0], rel_tol=1e-6):
            raise ParameterError(f"{path!r} is sampled every {period:g} s; {args.files[0]!r} "
                                 f"every {periods[0]:g} s: every client needs the same period "
                                 f"(time stamps that jitter give each file the period of its "
                                 f"span: give the nominal one with --dt)")
    for path, data in zip(args.files, datas, strict=True):
        for kind, option in (("state", "--states"), ("input", "--inputs")):
            names, expected = getattr(data, f"{kind}_names"), getattr(datas[0], f"{kind}_names")
            if None not in (names, expected) and names != expected:
                raise ParameterError(f"{path!r} has the {kind}s {', '.join(names)}; "
                                     f"{args.files[0]!r} has {', '.join(expected)}: every "
                                     f"client's signals must be the same, in the same order "
                                     f"(select them by name with {option})")
            # the same names in other units (K against degC, W against kW) would be summed
            # into one model as if they were the same signal; a file without a signal's unit
            # does not contradict one with it
            units, first = getattr(data, f"{kind}_units"), getattr(datas[0], f"{kind}_units")
            if None not in (units, first) and any(
                    a and b and a != b for a, b in zip(units, first, strict=True)):
                raise ParameterError(f"{path!r} measures its {kind}s in {_units(units)}; "
                                     f"{args.files[0]!r} in {_units(first)}: every client "
                                     f"needs the same units (convert the file first)")
    return clients, periods[0], datas[0]


def _same_file(a: str, b: str) -> bool:
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:                 # a missing file is reported when it is read
        return False


def _units(units) -> str:
    """``K, kW`` (a signal without a unit: ``-``)."""
    return ", ".join(unit or "-" for unit in units)
