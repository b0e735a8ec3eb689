"""``dmdidc smartgrid sweep``: its parser on a subparsers object, the handler, bad flags."""

from __future__ import annotations

import argparse
import csv
import json

import pytest

from privacy.errors import ParameterError
from simulations.cli.smartgrid_sweep import add_sweep_action, run_sweep_action

TINY = ["--epsilons", "4", "40", "--households", "3", "--days", "1", "--repeats", "2",
        "--mechanisms", "gaussian", "laplace", "--profiles", "extract", "--no-progress"]


def _parse(argv):
    parser = argparse.ArgumentParser(prog="dmdidc smartgrid")
    add_sweep_action(parser.add_subparsers(dest="action", required=True))
    return parser, parser.parse_args(["sweep", *argv])


def test_serial_sweep_writes_table_json_and_figure(tmp_path, capsys):
    out = tmp_path / "study"
    # through the console entry point: main adds its own attributes (handler, flags, prog,
    # the set of options given), none of which may reach sweep.json (a frozenset crashed it)
    from simulations.cli.root import main

    assert main(["smartgrid", "sweep", *TINY, "--serial", "--seed", "3", "--chunk", "2",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "8 tasks on serial" in printed.err
    with (out / "sweep.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 2 * 2                        # epsilons x mechanisms x repeats
    assert {r["mechanism"] for r in rows} == {"gaussian", "laplace"}
    assert {r["chunk"] for r in rows} == {"2"} and {r["days"] for r in rows} == {"1"}
    for row in rows:                                     # each household within its budget
        assert float(row["epsilon_household"]) <= float(row["epsilon"]) * (1 + 1e-9)
    written = json.loads((out / "sweep.json").read_text(),       # strict JSON: no NaN/inf
                         parse_constant=lambda name: pytest.fail(f"non-JSON {name}"))
    assert written["engine"] == "serial" and written["settings"]["seed"] == 3
    assert not {"handler", "flags", "prog", "given"} & set(written["settings"])
    assert written["settings"]["epsilons"] == [4, 40] and written["settings"]["days"] == 1
    assert len(written["summary"]) == 4 and all(s["repeats"] == 2 for s in written["summary"])
    assert [r["delay_true_T"] for r in written["rows"]] == \
        pytest.approx([float(r["delay_true_T"]) for r in rows])
    from matplotlib.image import imread

    image = imread(out / "sweep.png")
    assert image.ndim == 3 and image.shape[0] > 200
    assert "laplace" in printed.out and "wrote" in printed.out


def test_existing_scheduler_is_used(tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        _, args = _parse(["--epsilons", "40", "--households", "2", "--days", "1",
                          "--repeats", "1", "--mechanisms", "gaussian", "--profiles",
                          "extract", "--no-progress", "--scheduler", cluster.scheduler_address,
                          "--out", str(tmp_path)])
        assert run_sweep_action(args) == 0
    written = json.loads((tmp_path / "sweep.json").read_text())
    assert written["engine"] == cluster.scheduler_address


@pytest.mark.parametrize("extra, message", [
    (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "at most one of"),
    (["--serial", "--workers", "2"], "at most one of"),
    (["--serial", "--scheduler", "tcp://127.0.0.1:1"], "at most one of"),
    (["--serial", "--alphas", "1.5"], "alphas apply to mechanism 'sas' only"),
    (["--serial", "--window", "12"], "unit='window'"),
    (["--serial", "--unit", "window"], "window"),
    (["--serial", "--delays", "0.1"], "delay_spread"),
    (["--serial", "--excitation", "1.5"], "excitation"),
    (["--serial", "--mechanisms", "laplace", "--delta", "1e-6"],
     "--delta 1e-06 has no effect here: it needs gaussian or sas among --mechanisms"),
])
def test_inconsistent_flags_are_refused_before_any_work(tmp_path, extra, message):
    _, args = _parse([*TINY, *extra, "--out", str(tmp_path / "out")])
    with pytest.raises(ParameterError, match=message):
        run_sweep_action(args)
    assert not (tmp_path / "out").exists()


def test_out_naming_a_file_is_refused(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("x")
    _, args = _parse([*TINY, "--serial", "--out", str(target)])
    with pytest.raises(ParameterError, match="is a file"):
        run_sweep_action(args)


@pytest.mark.parametrize("argv", [["--epsilons", "0"], ["--households", "0"],
                                  ["--mechanisms", "exponential"], ["--days", "1.5"],
                                  ["--workers", "0"], ["--alphas", "-1"]])
def test_malformed_values_are_parse_errors(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        _parse(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_help_shows_the_defaults():
    parser, _ = _parse([])
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = " ".join(action.choices["sweep"].format_help().split())
    for default in ("(default: 1 10 100)", "(default: sas gaussian)", "(default: 1.9)",
                    "(default: 100 1000)", "(default: 2)", "(default: 14)", "(default: 500)",
                    "(default: out/smartgrid_sweep)", "(default: 3)"):
        assert default in text, default


def test_dmdidc_smartgrid_group_registers_sweep():
    from simulations.cli import build_parser

    args = build_parser().parse_args(["smartgrid", "sweep", *TINY, "--serial"])
    assert args.handler is run_sweep_action and args.serial


def test_the_sweep_table_explains_missing_numbers():
    from simulations.cli.smartgrid_sweep import _table

    row = {"mechanism": "sas", "alpha": 1.9, "households": 10, "delay_T": 0.5, "epsilon": 1.0,
           "abs_error_median_T": float("nan"), "abs_error_q10_T": float("nan"),
           "abs_error_q90_T": float("nan"), "failed": 3, "repeats": 3,
           "plain_abs_error_median_T": 0.01, "coverage": float("nan"),
           "epsilon_household_max": 1.0, "time_median_s": 0.5}
    text = _table([row, {**row, "abs_error_median_T": 0.1, "abs_error_q10_T": 0.05,
                         "abs_error_q90_T": 0.2, "failed": 0, "coverage": 0.9}])
    assert "nan" not in text.replace("n/a", "")
    assert text.splitlines()[-1].startswith("n/a: no repeat of that row gave the number")
    assert "n/a" not in _table([{**row, "abs_error_median_T": 0.1, "abs_error_q10_T": 0.05,
                                 "abs_error_q90_T": 0.2, "failed": 0, "coverage": 0.9}])
    # trial 13 finding 9: one failed repeat of 3 makes q90 a failure (summarize_study counts it
    # as an infinite error), which the legend called "no repeat gave the number"
    one_failed = _table([{**row, "abs_error_median_T": 0.1, "abs_error_q10_T": 0.05,
                          "abs_error_q90_T": float("inf"), "failed": 1, "coverage": 0.9}])
    assert "n/a" not in one_failed and " inf " not in one_failed
    assert one_failed.splitlines()[1].split()[6:10] == ["0.1", "0.05", "failed", "1/3"]
    assert one_failed.splitlines()[-1].startswith("failed: that quantile of |err| is a failed "
                                                  "fit")


def test_a_piped_sweep_writes_no_progress_frames(tmp_path, capsys):
    # without --no-progress: stderr is captured (not a terminal), so no bar may draw on it
    _, args = _parse(["--epsilons", "40", "--households", "2", "--days", "1", "--repeats", "1",
                      "--mechanisms", "gaussian", "--profiles", "extract", "--serial",
                      "--out", str(tmp_path)])
    assert run_sweep_action(args) == 0
    err = capsys.readouterr().err
    assert "1 tasks on serial" in err and "\r" not in err


def test_delta_acts_on_the_sas_releases(tmp_path):
    # SaS is calibrated with the household's delta (vector-SaS GDP bound): --delta with sas
    # alone was refused as doing nothing, so SaS ran at 1e-5 whatever the user wanted
    from simulations.cli.root import main

    assert main(["smartgrid", "sweep", "--epsilons", "40", "--households", "3", "--days", "1",
                 "--repeats", "1", "--mechanisms", "sas", "--alphas", "1.9", "--delta", "1e-6",
                 "--profiles", "extract", "--no-progress", "--serial",
                 "--out", str(tmp_path)]) == 0
    with (tmp_path / "sweep.csv").open() as handle:
        (row,) = list(csv.DictReader(handle))
    assert float(row["delta_household"]) == pytest.approx(1e-6)
    assert float(row["epsilon_household"]) <= 40 * (1 + 1e-9)
