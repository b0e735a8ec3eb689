"""A bounded fuzz of the ``dmdidc`` command line (issue 20 item 2): random and odd arguments and
odd data files for every command.  Each call ends with exit code 0, or 2 and one error line
(argparse: its usage line, then one error line), never a traceback, never a hang.

Calls run in-process through :func:`simulations.cli.main`; an alarm turns a call that runs
longer than :data:`LIMIT_S` into a failure.  The heavy commands (studies, figures, the case
study) get argument lists with at least one bad value, so they must refuse before any work.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmdidc import DelayedPlant, random_excitation
from simulations.cli import main

LIMIT_S = 20
FUZZ = settings(max_examples=int(os.environ.get("DMDIDC_FUZZ_EXAMPLES", 8)), deadline=None,
                derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Hang(Exception):
    """A call ran longer than LIMIT_S."""


def run(argv: list[str]) -> tuple[int, str]:
    """``main(argv)``: the exit code and stderr, checked against the contract."""
    err, out = io.StringIO(), io.StringIO()

    def alarm(signum, frame):
        raise Hang(f"dmdidc {' '.join(argv)} ran longer than {LIMIT_S} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(LIMIT_S)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main(argv)
            except SystemExit as exc:                      # argparse: usage + one error line
                code = exc.code
                lines = err.getvalue().strip().splitlines()
                assert code == 0 or (code == 2 and ": error: " in lines[-1]), (argv, lines)
                return code, err.getvalue()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    text = err.getvalue()
    assert "Traceback" not in text, (argv, text)
    assert code in (0, 2), (argv, code, text)
    if code == 2:
        errors = [line for line in text.splitlines() if ": error: " in line]
        assert len(errors) == 1 and errors[0].startswith("dmdidc "), (argv, text)
    return code, text


# ------------------------------------------------------------------ odd values and data files
ODD_NUMBERS = ["0", "-1", "1e308", "-1e308", "nan", "inf", "-inf", "1e-320", "2.5", "x", "",
               "1,2", "3", "1e6", "100000000000", "0x10", "True"]
TOKENS = ["1", "-2.5", "0", "1e308", "-1e308", "1e-310", "", "nan", "NA", "inf", "true",
          "False", "abc", "1,5", " 3 ", "7e2"]


@st.composite
def odd_table(draw) -> str:
    """A CSV text: a header or none, random widths, random tokens (mostly numbers)."""
    columns = draw(st.integers(1, 5))
    rows = draw(st.integers(0, 25))
    delimiter = draw(st.sampled_from([",", ";", "\t", " "]))
    names = draw(st.lists(st.sampled_from(["time", "t", "x1", "x2", "u1", "u2", "a", "x1"]),
                          min_size=columns, max_size=columns))
    lines = [delimiter.join(names)] if draw(st.booleans()) else []
    increasing = draw(st.booleans())
    for k in range(rows):
        width = columns if draw(st.integers(0, 9)) else draw(st.integers(1, columns + 1))
        cells = [str(2.0 * k) if increasing and c == 0 else
                 draw(st.sampled_from(TOKENS)) if draw(st.integers(0, 4)) == 0 else
                 repr(draw(st.floats(-10, 10, allow_nan=False)))
                 for c in range(width)]
        lines.append(delimiter.join(cells))
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@pytest.fixture(scope="module")
def files():
    """A valid model, a valid .npz and CSV table, in a folder kept for the module."""
    folder = Path(tempfile.mkdtemp(prefix="dmdidc-fuzz-"))
    plant = DelayedPlant.from_continuous([[-0.3, 1.1], [-1.1, -0.3]], [[1, -1], [-1, 2]], 2.5,
                                         2.0)
    plant.save(folder / "model.json")
    U = random_excitation(2, 120, rng=0)
    X = plant.simulate(np.zeros(2), U)
    np.savez(folder / "data.npz", X=X, U=U)
    t = 2.0 * np.arange(121)
    np.savetxt(folder / "log.csv", np.column_stack([t, X.T, np.vstack([U.T, [0, 0]])]),
               delimiter=",", header="time,x1,x2,u1,u2", comments="")
    return folder


# ------------------------------------------------------------------ identify
@FUZZ
@given(table=odd_table(),
       inputs=st.sampled_from([None, "u1", "u1,u2", "2", "9", "x1,x1", "", "time"]),
       states=st.sampled_from([None, "x1", "x1,x2", "1", "zz"]),
       time=st.sampled_from([None, "none", "time", "1", "t", "7"]),
       missing=st.sampled_from(["error", "drop", "interpolate"]),
       dt=st.sampled_from([None, "2", "0", "-1", "nan", "1e308", "1e-300"]),
       max_delay=st.sampled_from(["0", "1", "3", "auto", "-1", "1000000", "x"]))
def test_identify_on_odd_tables(files, table, inputs, states, time, missing, dt, max_delay):
    path = files / "odd.csv"
    path.write_text(table)
    argv = ["identify", str(path), "--max-delay", max_delay, "--missing", missing,
            "--out", str(files / "odd_model.json")]
    for flag, value in (("--inputs", inputs), ("--states", states), ("--time", time),
                        ("--dt", dt)):
        if value is not None:
            argv += [flag, value]
    run(argv)


@FUZZ
@given(X=st.sampled_from(["ok", "bool", "nan", "huge", "complex", "3d", "short", "empty"]),
       options=st.lists(st.sampled_from([["--dt", "2"], ["--dt", "0"], ["--max-delay", "3"],
                                         ["--max-delay", "0"], ["--missing", "drop"],
                                         ["--time", "t"], ["--estimator", "huber"],
                                         ["--detrend", "linear"], ["--level", "1.5"],
                                         ["--significance", "0"], ["--block-rtol", "-1"]]),
                        max_size=4))
def test_identify_on_odd_npz(files, X, options):
    base = np.load(files / "data.npz")
    arrays = {"X": base["X"], "U": base["U"]}
    if X == "bool":
        arrays["U"] = arrays["U"] > 0
    elif X == "nan":
        arrays["X"] = arrays["X"].copy()
        arrays["X"][0, 5] = np.nan
    elif X == "huge":
        arrays["X"] = arrays["X"] * 1e305
    elif X == "complex":
        arrays["X"] = arrays["X"] * 1j
    elif X == "3d":
        arrays["X"] = arrays["X"][None]
    elif X == "short":
        arrays = {"X": arrays["X"][:, :3], "U": arrays["U"][:, :2]}
    elif X == "empty":
        arrays = {"X": arrays["X"][:, :1], "U": arrays["U"][:, :0]}
    path = files / "odd.npz"
    np.savez(path, **arrays)
    argv = ["identify", str(path), "--out", str(files / "odd_model.json")]
    argv += [item for option in options for item in option]
    if "--max-delay" not in argv:
        argv += ["--max-delay", "2"]
    run(argv)


# ------------------------------------------------------------------ simulate
@FUZZ
@given(options=st.lists(st.sampled_from([
    ["--controller", "none"], ["--controller", "mpc"], ["--controller", "naive"],
    ["--steps", "5"], ["--steps", "0"], ["--steps", "100000000000"],
    ["--x0", "1e308,1e308"], ["--x0", "1,2,3"], ["--x0", "nan,1"], ["--x0", "1e149,0"],
    ["--q", "1,10"], ["--q", "0"], ["--r", "1e-300"], ["--r", "1e300,1"],
    ["--u-max", "0.1,5"], ["--u-max", "-1"], ["--horizon", "3"], ["--horizon", "1000000"],
    ["--process-noise", "0.1"], ["--noise", "sas"], ["--alpha", "0.5"], ["--seed", "3"],
    ["--measurement-noise", "1e308"]]), min_size=1, max_size=4))
def test_simulate_with_odd_options(files, options):
    argv = ["simulate", str(files / "model.json"), "--out", str(files / "sim")]
    argv += [item for option in options for item in option]
    if not any(option[0] == "--steps" for option in options):
        argv += ["--steps", "8"]
    run(argv)


# ------------------------------------------------------------------ privacy accounting
@FUZZ
@given(action=st.sampled_from(["epsilon", "calibrate"]),
       values=st.fixed_dictionaries({}, optional={
           "--alpha": st.sampled_from(["2", "1.5", "1", "0.5", "0", "3", "nan", "1e-12"]),
           "--delta": st.sampled_from(["0", "1e-5", "1", "-1", "nan"]),
           "--steps": st.sampled_from(["1", "10", "0", "-3", "1e3"]),
           "--sampling-rate": st.sampled_from(["1", "0.01", "0", "2", "nan"]),
           "--sensitivity": st.sampled_from(["1", "0", "-1", "1e308"]),
           "--dimension": st.sampled_from(["1", "3", "0"])}),
       scale=st.sampled_from(["2", "-1", "0", "1e-8", "1e300", "nan"]))
def test_privacy_accounting_with_odd_values(action, values, scale):
    argv = ["privacy", action, "--json"]
    argv += ["--scale", scale] if action == "epsilon" else ["--epsilon", scale]
    argv += [item for pair in values.items() for item in pair]
    run(argv)


# ------------------------------------------------------------------ every numeric option
def _numeric_options() -> list[tuple[tuple[str, ...], str]]:
    """(command words, option) for every option of every command that takes a number."""
    import argparse

    from simulations.cli import build_parser

    def leaves(parser, prefix=()):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or not subs[0].required:     # a command that also runs on its own
            yield prefix, parser
        if not subs:
            return
        for name, sub in subs[0].choices.items():
            yield from leaves(sub, prefix + (name,))

    found = []
    for prefix, parser in leaves(build_parser()):
        for action in parser._actions:
            if action.option_strings and action.nargs != 0 and not action.choices \
                    and action.type not in (None, str) and action.dest != "help":
                found.append((prefix, action.option_strings[-1]))
    return found


NUMERIC = _numeric_options()
#: Values no numeric option accepts.
BAD = ["-1", "nan", "inf", "-inf", "x", ""]


def test_the_numeric_options_are_many():
    assert len(NUMERIC) > 100
    assert {prefix[0] for prefix, _ in NUMERIC} == {"demo", "identify", "simulate", "privacy",
                                                     "federated", "smartgrid"}


@settings(max_examples=2 * FUZZ.max_examples, deadline=None, derandomize=True)
@given(option=st.sampled_from(NUMERIC), bad=st.sampled_from(BAD))
def test_every_numeric_option_refuses_a_bad_value_before_any_work(files, option, bad):
    """A bad number is refused by its option (or the handler's first check): exit code 2 at
    once, whatever the command (the studies would otherwise run for minutes)."""
    prefix, flag = option
    argv = [*prefix]
    if prefix in (("identify",), ("privacy", "identify")):
        argv.append(str(files / "data.npz"))
    elif prefix == ("simulate",):
        argv.append(str(files / "model.json"))
    argv += [flag, bad]
    if flag != "--out":
        argv += ["--out", str(files / "numeric")]
    if prefix == ("federated", "serve"):
        argv += ["--algorithm", "fedavg"]
    code, _ = run(argv)
    assert code == 2, argv
