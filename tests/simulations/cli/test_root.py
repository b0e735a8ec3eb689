"""The ``dmdidc`` command line (run in-process through ``main``)."""

import json

import numpy as np
import pytest

from dmdidc import DelayedPlant, random_excitation
from simulations.cli import main


@pytest.fixture
def data_file(tmp_path):
    plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 2.5, 2.0)
    U = random_excitation(2, 120, rng=3)
    X = plant.simulate(np.zeros(2), U)
    path = tmp_path / "data.npz"
    np.savez(path, X=X, U=U)
    return path, X, U


def test_identify_npz_writes_model(data_file, tmp_path, capsys):
    path, _, _ = data_file
    out = tmp_path / "model.json"
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(out)]) == 0
    model = DelayedPlant.load(out)
    assert np.allclose(model.delay, 2.5, atol=1e-9)
    assert "delay [s]" in capsys.readouterr().out


@pytest.mark.parametrize("delimiter", [",", ";"])
def test_identify_csv_rows_are_samples(data_file, tmp_path, delimiter):
    _, X, U = data_file
    np.savetxt(tmp_path / "x.csv", X.T, delimiter=delimiter, header=f"x1{delimiter}x2",
               comments="")
    np.savetxt(tmp_path / "u.csv", U.T, delimiter=delimiter)
    out = tmp_path / "model.npz"
    assert main(["identify", "--states", str(tmp_path / "x.csv"), "--inputs",
                 str(tmp_path / "u.csv"), "--dt", "2", "--max-delay", "3",
                 "--out", str(out)]) == 0
    assert np.allclose(DelayedPlant.load(out).delay, 2.5, atol=1e-9)


def test_identify_unreadable_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_text("not an archive")
    assert main(["identify", str(bad), "--dt", "2", "--max-delay", "3"]) == 2
    assert "not an .npz archive (it is a text file" in capsys.readouterr().err


def test_identify_missing_arrays(tmp_path, capsys):
    # without U the record is autonomous (m = 0); without X there is nothing to identify
    path = tmp_path / "d.npz"
    np.savez(path, U=np.zeros((1, 5)))
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "1"]) == 2
    assert "lacks the array X" in capsys.readouterr().err


@pytest.mark.parametrize("controller", ["fractional", "truncated", "exact", "naive"])
def test_simulate_saved_model(data_file, tmp_path, controller):
    path, _, _ = data_file
    model = tmp_path / "model.json"
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    out = tmp_path / controller
    assert main(["simulate", str(model), "--controller", controller, "--steps", "20",
                 "--x0", "1,0.5", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 20
    assert (out / "trajectory.png").exists() and (out / "trajectory.csv").exists()
    if controller == "fractional":
        assert summary["final_state_norm"] < 1e-6
    if controller == "exact":
        assert summary["final_state_norm"] < 0.01 * np.sqrt(1.25)


def test_simulate_mpc_respects_bound(data_file, tmp_path):
    path, _, _ = data_file
    model = tmp_path / "model.json"
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    out = tmp_path / "mpc"
    assert main(["simulate", str(model), "--controller", "mpc", "--steps", "15",
                 "--u-max", "0.2", "--horizon", "8", "--out", str(out)]) == 0
    table = np.genfromtxt(out / "trajectory.csv", delimiter=",", names=True)
    inputs = np.stack([table["u_1"], table["u_2"]])[:, :-1]   # the final state has no input
    assert inputs.shape == (2, 15)
    assert np.all(np.abs(inputs) <= 0.2 + 1e-6)
    assert np.any(np.abs(inputs) > 0.199)                     # the bound is active
    # inf leaves an input free (as DelayedMPC takes it), and summary.json stays valid JSON
    free = tmp_path / "mpc_free"
    assert main(["simulate", str(model), "--controller", "mpc", "--steps", "15",
                 "--u-max", "0.2,inf", "--horizon", "8", "--out", str(free)]) == 0
    table = np.genfromtxt(free / "trajectory.csv", delimiter=",", names=True)
    assert np.all(np.abs(table["u_1"][:-1]) <= 0.2 + 1e-6)
    assert np.abs(table["u_2"][:-1]).max() > 0.2                # the second input is free
    summary = json.loads((free / "summary.json").read_text(), parse_constant=_no_constant)
    assert summary["u_max"] == [0.2, "inf"]
    assert summary["u_min"] == [-0.2, "-inf"]


def _no_constant(name):
    raise AssertionError(f"summary.json holds {name}, which is not JSON")


def test_simulate_dimension_mismatch(tmp_path, capsys):
    a = DelayedPlant.from_continuous([[-1.0]], [[1.0]], 0.5, 1.0)
    b = DelayedPlant.from_continuous(-np.eye(2), np.eye(2), 0.5, 1.0)
    a.save(tmp_path / "a.json")
    b.save(tmp_path / "b.json")
    assert main(["simulate", str(tmp_path / "a.json"), "--plant", str(tmp_path / "b.json")]) == 2
    assert "states" in capsys.readouterr().err


def test_demo_writes_figures(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--steps", "10"]) == 0
    for name in ("figure_9_1.png", "delay_mismatch.png", "summary.json", "summary.csv",
                 "output_control.png", "output_control.json"):
        assert (tmp_path / name).exists()
    printed = capsys.readouterr().out
    assert "fractional" in printed and "identify from outputs" in printed


def test_simulate_discrete_only_model(tmp_path):
    """A model without a continuous part (no real logarithm) still simulates, without the fine
    inter-sample curve."""
    plant = DelayedPlant(np.array([[-0.5]]), np.array([[[0.0]], [[1.0]]]), 1.0)
    plant.save(tmp_path / "m.json")
    out = tmp_path / "sim"
    assert main(["simulate", str(tmp_path / "m.json"), "--controller", "truncated",
                 "--steps", "20", "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["final_state_norm"] < 1e-6


def test_simulate_with_heavy_tailed_noise_is_reproducible(data_file, tmp_path):
    path, _, _ = data_file
    model = tmp_path / "model.json"
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["simulate", str(model), "--steps", "15", "--process-noise", "0.01",
                     "--measurement-noise", "0.01", "--noise", "sas", "--alpha", "1.7",
                     "--seed", "4", "--out", str(out)]) == 0
        runs.append((out / "trajectory.csv").read_text())
    assert runs[0] == runs[1]


def test_bad_x0_names_the_option(data_file, tmp_path, capsys):
    path, _, _ = data_file
    model = tmp_path / "sub" / "model.json"             # parent folder is created
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    assert main(["simulate", str(model), "--x0", "a,b", "--out", str(tmp_path / "s")]) == 2
    assert "--x0" in capsys.readouterr().err


# ------------------------------------------------------------------ every flag works or is refused
@pytest.fixture
def model_file(tmp_path):
    """A small saved model (the seed plant of eq. 9.76, T = 2 s, r = 1.25 T)."""
    path = tmp_path / "model.json"
    DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 2.5, 2.0).save(path)
    return path


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err     # one clear line
    return err


@pytest.mark.parametrize(("options", "message"), [
    (["--u-max", "1"], "--u-max applies only to --controller mpc; got --controller fractional"),
    (["--horizon", "5", "--controller", "exact"], "--horizon applies only to --controller mpc"),
    (["--horizon", "5", "--u-max", "1", "--controller", "naive"],
     "--horizon and --u-max apply only to --controller mpc"),
    (["--alpha", "1.2", "--process-noise", "0.1"],
     "--alpha is the stability index of SaS noise: it needs --noise sas (got --noise normal)"),
    (["--alpha", "1.2", "--noise", "laplace", "--measurement-noise", "0.1"], "got --noise laplace"),
    (["--noise", "sas"], "--noise acts only on noise draws: give --process-noise or"),
    (["--alpha", "1.2", "--noise", "sas"], "--noise and --alpha act only on noise draws"),
    (["--seed", "3"], "--seed acts only on noise draws"),
    (["--process-noise", "0", "--measurement-noise", "0", "--noise", "laplace"],
     "--noise acts only on noise draws"),
    (["--process-noise", "0.1", "--noise", "sas", "--alpha", "3"],
     r"alpha must lie in (0.0, 2.0]; got 3.0"),
    (["--x0", "1,2,3"], "--x0 has 3 values; the model has 2 states"),
])
def test_simulate_refuses_options_that_would_be_ignored(model_file, tmp_path, capsys, options,
                                                        message):
    out = tmp_path / "sim"
    assert main(["simulate", str(model_file), "--out", str(out), *options]) == 2
    assert message in _error_line(capsys)
    assert not out.exists()                              # refused before any work


@pytest.mark.parametrize(("argv", "message"), [
    (["simulate", "M", "--steps", "0"], "argument --steps: must be an integer >= 1; got '0'"),
    (["simulate", "M", "--steps", "2.5"], "argument --steps: must be an integer >= 1"),
    (["simulate", "M", "--process-noise", "-1"], "argument --process-noise: must be a number >= 0"),
    (["simulate", "M", "--measurement-noise", "nan"], "must be a number >= 0; got 'nan'"),
    (["simulate", "M", "--controller", "mpc", "--u-max", "nan"],
     "argument --u-max: must be a finite number or comma-separated ones, inf for a channel"),
    (["simulate", "M", "--controller", "mpc", "--u-max", "1,-inf"],
     "argument --u-max: must be a finite number or comma-separated ones, inf for a channel"),
    (["simulate", "M", "--controller", "mpc", "--u-min=inf"],
     "argument --u-min: must be a finite number or comma-separated ones, -inf for a channel"),
    (["simulate", "M", "--controller", "mpc", "--horizon", "0"],
     "argument --horizon: must be an integer >= 1"),
    (["simulate", "M", "--seed", "-1"], "argument --seed: must be an integer >= 0"),
    (["demo", "--steps", "-3"], "argument --steps: must be an integer >= 1; got '-3'"),
])
def test_out_of_range_values_are_refused_by_the_parser(model_file, capsys, argv, message):
    argv = [str(model_file) if a == "M" else a for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def _trajectory(model_file, out, *options) -> np.ndarray:
    assert main(["simulate", str(model_file), "--steps", "12", "--out", str(out), *options]) == 0
    return np.genfromtxt(out / "trajectory.csv", delimiter=",", skip_header=1)[:, 1:3]


def test_noise_options_take_effect(model_file, tmp_path):
    """--seed, --noise and --alpha each change the noisy run."""
    base = ["--process-noise", "0.05", "--noise", "sas", "--alpha", "1.5", "--seed", "1"]
    reference = _trajectory(model_file, tmp_path / "ref", *base)
    for name, options in (("seed", base[:-1] + ["2"]),
                          ("alpha", base[:5] + ["1.1"] + base[6:]),
                          ("noise", base[:3] + ["laplace"] + base[6:])):
        assert not np.allclose(_trajectory(model_file, tmp_path / name, *options), reference), name


def test_noise_defaults_are_those_of_the_help(model_file):
    from simulations.cli import build_parser
    from simulations.cli.simulate import _sampler

    def sampler(*options):
        args = build_parser().parse_args(["simulate", str(model_file), *options])
        return _sampler(args, args.process_noise)

    assert sampler("--process-noise", "0") is None
    normal = sampler("--process-noise", "0.05")
    assert (normal.name, normal.scale, normal.params) == ("normal", 0.05, {})
    sas = sampler("--process-noise", "0.05", "--noise", "sas")
    assert (sas.name, sas.params) == ("sas", {"alpha": 1.5})


@pytest.mark.parametrize(("options", "horizon", "bound"), [
    ([], 10, None), (["--horizon", "3", "--u-max", "0.2"], 3, 0.2)])
def test_mpc_options_reach_the_controller(model_file, options, horizon, bound):
    """--horizon and --u-max set the MPC (defaults as the help says); their effect on the loop
    is tested in tests/controllers/test_mpc.py and by test_simulate_mpc_respects_bound."""
    from simulations.cli import build_parser
    from simulations.cli.simulate import _make_controller
    args = build_parser().parse_args(["simulate", str(model_file), "--controller", "mpc",
                                      *options])
    model = DelayedPlant.load(model_file)
    mpc = _make_controller(args, model, None, None)
    assert mpc.horizon == horizon
    if bound is None:
        assert mpc.u_min is None and mpc.u_max is None
    else:
        np.testing.assert_array_equal(mpc.u_max, [bound, bound])
        np.testing.assert_array_equal(mpc.u_min, [-bound, -bound])


# ------------------------------------------------------------------ --plant must match the model
def test_simulate_refuses_a_plant_with_another_sampling_period(model_file, tmp_path, capsys):
    plant = tmp_path / "fast.json"
    DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 0.25, 0.5).save(plant)
    assert main(["simulate", str(model_file), "--plant", str(plant),
                 "--out", str(tmp_path / "s")]) == 2
    err = _error_line(capsys)
    assert "has sampling period T = 0.5 s" in err and "has T = 2 s" in err


def test_simulate_refuses_a_plant_with_other_dimensions(model_file, tmp_path, capsys):
    plant = tmp_path / "three.json"
    DelayedPlant.from_continuous(-np.eye(3), np.ones((3, 1)), 2.5, 2.0).save(plant)
    assert main(["simulate", str(model_file), "--plant", str(plant),
                 "--out", str(tmp_path / "s")]) == 2
    err = _error_line(capsys)
    assert "has 3 states and 1 inputs" in err and "has 2 states and 2 inputs" in err


def test_simulate_on_a_matching_plant(model_file, tmp_path):
    """The check lets a plant with the same T and sizes through (delay and A_c may differ)."""
    plant = tmp_path / "true.json"
    DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 3.0, 2.0).save(plant)
    out = tmp_path / "s"
    assert main(["simulate", str(model_file), "--plant", str(plant), "--controller", "truncated",
                 "--steps", "20", "--out", str(out)]) == 0
    # truncated prediction on a 1.5 T plant is unstable (spectral radius 1.014, README table)
    assert json.loads((out / "summary.json").read_text())["final_state_norm"] > 1.0


# ------------------------------------------------------------------ malformed files
@pytest.mark.parametrize(("name", "content", "message"), [
    ("list.json", "[1, 2, 3]", "is not a valid plant"),
    ("empty.json", "{}", "is not a valid plant"),
    ("keys.json", '{"dt": 2.0, "A_d": [[1.0]]}', "is not a valid plant"),
    ("shape.json", '{"dt": 2.0, "A_d": [1.0, 2.0], "B_blocks": [[1.0]]}', "A_d"),
    ("text.json", '{"dt": 2.0, "A_d": "abc", "B_blocks": [[1.0]]}', "A_d"),
    ("broken.json", "{not json", "is not a valid plant"),
    ("model.txt", "hello", "is not a valid plant"),
])
@pytest.mark.parametrize("role", ["model", "--plant"])
def test_malformed_plant_files_give_one_line_errors(model_file, tmp_path, capsys, name, content,
                                                   message, role):
    bad = tmp_path / name
    bad.write_text(content)
    argv = (["simulate", str(bad)] if role == "model" else
            ["simulate", str(model_file), "--plant", str(bad)])
    assert main([*argv, "--out", str(tmp_path / "s")]) == 2
    err = _error_line(capsys)
    assert err.startswith("dmdidc simulate: error: ") and name in err and message in err
    assert f"{role} file" in err


def test_malformed_npz_model(tmp_path, capsys):
    bad = tmp_path / "model.npz"
    np.savez(bad, dt=2.0)
    assert main(["simulate", str(bad)]) == 2
    err = _error_line(capsys)
    assert "model file" in err and "model.npz' is not a valid plant" in err


def test_missing_model_file(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "nothere.json")]) == 2
    err = _error_line(capsys)
    assert "model file" in err and "nothere.json" in err and "does not exist" in err


# ------------------------------------------------------------------ identify's data files
def test_identify_a_csv_given_as_data_is_a_table_that_needs_its_input_columns(
        data_file, tmp_path, capsys):
    _, X, _ = data_file
    np.savetxt(tmp_path / "x.csv", X.T, delimiter=",")
    assert main(["identify", str(tmp_path / "x.csv"), "--dt", "2", "--max-delay", "3"]) == 2
    err = _error_line(capsys)
    assert "is a CSV table: give --inputs COLUMNS" in err and "--states x.csv --inputs u.csv" in err
    assert "pickle" not in err


def test_identify_refuses_npz_and_csv_together(data_file, tmp_path, capsys):
    path, X, U = data_file
    np.savetxt(tmp_path / "x.csv", X.T, delimiter=",")
    np.savetxt(tmp_path / "u.csv", U.T, delimiter=",")
    out = tmp_path / "m.json"
    assert main(["identify", str(path), "--states", str(tmp_path / "x.csv"), "--inputs",
                 str(tmp_path / "u.csv"), "--dt", "2", "--max-delay", "3",
                 "--out", str(out)]) == 2
    assert "not both" in _error_line(capsys)
    assert not out.exists()


def test_identify_hints_at_transposed_npz(data_file, tmp_path, capsys):
    _, X, U = data_file
    np.savez(tmp_path / "t.npz", X=X.T, U=U.T)
    assert main(["identify", str(tmp_path / "t.npz"), "--dt", "2", "--max-delay", "3"]) == 2
    err = _error_line(capsys)
    assert "look transposed" in err and "X has 2 columns of 121 values" in err
    assert "save X.T and U.T" in err


def test_identify_hints_at_transposed_csv(data_file, tmp_path, capsys):
    _, X, U = data_file
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")         # one column per sample: wrong
    np.savetxt(tmp_path / "u.csv", U, delimiter=",")
    assert main(["identify", "--states", str(tmp_path / "x.csv"), "--inputs",
                 str(tmp_path / "u.csv"), "--dt", "2", "--max-delay", "3"]) == 2
    err = _error_line(capsys)
    assert "look transposed" in err and "x.csv' has 2 rows of 121 values" in err
    assert "one row per sample" in err


def test_identify_refuses_decimal_commas(data_file, tmp_path, capsys):
    _, X, U = data_file
    rows = [";".join(f"{v:.8f}".replace(".", ",") for v in row) for row in X.T]
    (tmp_path / "x.csv").write_text("\n".join(rows))
    np.savetxt(tmp_path / "u.csv", U.T, delimiter=";")
    assert main(["identify", "--states", str(tmp_path / "x.csv"), "--inputs",
                 str(tmp_path / "u.csv"), "--dt", "2", "--max-delay", "3"]) == 2
    assert "',' as decimal mark" in _error_line(capsys)


# ------------------------------------------------------------------ outputs, help, version
def test_overwritten_outputs_are_announced(model_file, data_file, tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", str(model_file), "--steps", "5", "--out", str(out)]) == 0
    assert "overwrote" not in capsys.readouterr().err
    (out / "unrelated.txt").write_text("keep")
    assert main(["simulate", str(model_file), "--steps", "5", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dmdidc simulate: note: overwrote" in err
    for name in ("summary.json", "trajectory.csv", "trajectory.png"):
        assert str(out / name) in err
    assert "unrelated" not in err
    path, _, _ = data_file
    model = tmp_path / "identified.json"
    for expected in (False, True):
        assert main(["identify", str(path), "--dt", "2", "--max-delay", "3",
                     "--out", str(model)]) == 0
        assert (f"note: overwrote {model}" in capsys.readouterr().err) is expected


def _parsers(parser):
    """The parser and every subcommand parser under it."""
    import argparse
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _parsers(sub)


def test_every_help_shows_the_defaults():
    from simulations.cli import build_parser
    checked = 0
    for parser in _parsers(build_parser()):
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if not action.option_strings or action.default in (None, False, "==SUPPRESS=="):
                continue
            default = action.default

            def show(value):
                return f"{value:g}" if isinstance(value, float) else str(value)
            # a list default may be shown as the values one would type: "1 10 100"
            shown = (" ".join(show(v) for v in default) if isinstance(default, (list, tuple))
                     else show(default))
            assert f"default: {default}" in text or f"default: {shown}" in text, \
                (parser.prog, action.dest)
            checked += 1
    assert checked >= 15


def test_version(capsys):
    import importlib.metadata

    import dmdidc
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"dmdidc {dmdidc.__version__}\n"
    assert dmdidc.__version__ == importlib.metadata.version("dmdidc")


def test_help_does_not_import_heavy_packages():
    """Building and formatting every parser (what --help does) loads no solver, plotting or
    statistics package, and of the toolbox only the light modules (names, errors, lazy
    package attributes)."""
    import inspect
    import subprocess
    import sys
    from pathlib import Path
    code = (inspect.getsource(_parsers) +
            "import sys\n"
            "from simulations.cli import build_parser\n"
            "[p.format_help() for p in _parsers(build_parser())]\n"
            "heavy = {'cvxpy', 'matplotlib', 'scipy', 'dmdidc'}\n"
            "light = {'controllers', 'controllers.names', 'privacy', 'privacy.errors',\n"
            "         'privacy.lazy'}\n"
            "ours = {m for m in sys.modules if m.split('.')[0] in ('controllers', 'privacy')}\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & heavy | (ours - light)))\n")
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_simulate_summary_of_a_diverging_loop_is_strict_json(tmp_path):
    # The delay-naive controller at 1.5 T (radius ~1.39): after 1200 steps the states are
    # ~1e171, finite, but the cost is beyond the float range.  The summary says "inf" (as the
    # privacy commands do), never the non-JSON token Infinity, and numpy stays quiet.
    import warnings

    model = tmp_path / "seed.json"
    DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 3.0, 2.0).save(model)
    out = tmp_path / "naive"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["simulate", str(model), "--controller", "naive", "--steps", "1200",
                     "--out", str(out)]) == 0

    def refuse(token):
        raise AssertionError(f"non-JSON number {token}")

    summary = json.loads((out / "summary.json").read_text(), parse_constant=refuse)
    assert summary["cost"] == "inf"
    assert 1e100 < summary["final_state_norm"] < 1e300


@pytest.mark.parametrize("argv, kind", [
    (["demo"], "folder"),
    (["simulate", "MODEL"], "folder"),
    (["privacy", "figures", "--which", "3.7"], "folder"),
    (["privacy", "compare", "--epsilons", "1", "--alphas", "2", "--steps", "10"], "file"),
])
def test_out_of_the_wrong_kind_is_refused_before_any_work(tmp_path, capsys, argv, kind):
    model = tmp_path / "model.json"
    DelayedPlant.from_continuous([[-1.0]], [[1.0]], 0.5, 1.0).save(model)
    out = tmp_path / ("folder" if kind == "file" else "file.txt")
    out.mkdir() if kind == "file" else out.write_text("keep me")
    argv = [str(model) if a == "MODEL" else a for a in argv]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    expected = "is a folder; it must name a file" if kind == "file" else \
        "is a file; it must name a folder"
    assert f"--out {str(out)!r} {expected}" in err, err
    assert "Errno" not in err
    if kind == "folder":
        assert out.read_text() == "keep me"


def test_demo_defaults_are_the_studys_own():
    # the parser must not carry its own copy of the study's seed and step count
    from simulations.cli import build_parser
    from simulations.studies.fractional_delay import StudyConfig

    args = build_parser().parse_args(["demo"])
    assert (args.seed, args.steps) == (StudyConfig().seed, StudyConfig().steps)
