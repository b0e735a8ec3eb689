"""``dmdidc smartgrid run``: a tiny case end to end, the summary's keys and guarantee, refusals."""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
import pytest
from matplotlib.image import imread

from privacy import GaussianMechanism, accounting
from simulations.cli import main
from simulations.cli.smartgrid import _CURVE, _FIELDS, DEFAULTS, _epsilons, add_smartgrid_parser
from simulations.smartgrid import ScenarioConfig
from simulations.smartgrid.case_study import CURVE_EPSILONS


def test_help_defaults_are_the_scenarios():
    config = ScenarioConfig()
    for name, value in DEFAULTS.items():
        assert getattr(config, name) == value, name
    fields = {f.name for f in dataclasses.fields(ScenarioConfig)}
    assert set(_FIELDS.values()) <= fields
    assert _epsilons(_CURVE) == CURVE_EPSILONS


def test_group_is_extensible():
    parser = argparse.ArgumentParser()
    actions = add_smartgrid_parser(parser.add_subparsers(dest="command", required=True))
    actions.add_parser("echo").set_defaults(handler=lambda args: 5)
    args = parser.parse_args(["smartgrid", "echo"])
    assert args.handler(args) == 5


@pytest.mark.parametrize("argv, message", [
    (["--mechanism", "gaussian", "--alpha", "1.5"], "--alpha only applies"),
    (["--window", "12"], "--window is only used with --unit window; got --window 12"),
    (["--unit", "window"], "--unit window needs --window (the steps one window protects)"),
    (["--households", "0"], "households must be"),
    (["--epsilon", "-1"], "epsilon must be > 0"),
    (["--households", "3"], "households=3: run more households, or --no-attacks\n"),
    # trial 13 finding 10: these were refused after ~9.5 s of work, --delta not named
    (["--alpha", "2"], "--alpha must lie in [0.1, 2.0); got 2.0"),
    (["--delta", "0", "--mechanism", "gaussian"], "needs delta in (0, 1), e.g. --delta 1e-5 "
                                                  "(it is never pure epsilon-DP); got --delta"),
    (["--delta", "0", "--mechanism", "laplace"], "the privacy-utility curve's Gaussian points "
                                                 "need delta > 0"),
])
def test_bad_arguments_are_refused(tmp_path, capsys, monkeypatch, argv, message):
    import simulations.smartgrid.case_study as case_study

    def no_work(*args, **kwargs):
        raise AssertionError("the fleet was simulated before the refusal")

    monkeypatch.setattr(case_study, "simulate_fleet", no_work)     # refused before any work
    code = main(["smartgrid", "run", *argv, "--out", str(tmp_path / "o")])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o" / "summary.json").exists()


@pytest.mark.parametrize("config, argv, refused", [
    ({"mechanism": "gaussian", "alpha": 1.5}, [], True),
    ({"alpha": 1.5}, ["--mechanism", "laplace"], True),
    ({"mechanism": "sas", "alpha": 1.5}, [], False),
    ({"mechanism": "gaussian", "alpha": 1.9}, [], False),      # a saved config's default
])
def test_a_config_alpha_without_sas_is_refused(tmp_path, capsys, config, argv, refused):
    import json

    from simulations.cli.smartgrid import DEFAULTS

    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({**config, "households": 3}))      # 3: refused after the check
    assert config["alpha"] != DEFAULTS["alpha"] or not refused
    assert main(["smartgrid", "run", "--config", str(path), *argv,
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    if refused:
        assert "alpha 1.5 of --config" in err and "only applies to mechanism sas" in err
    else:
        assert "the attacks need at least 5 households" in err


def test_out_file_and_bad_curve_are_refused(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["smartgrid", "run", "--out", str(target)]) == 2
    assert "is a file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["smartgrid", "run", "--curve-epsilons", "1,-2", "--out", str(tmp_path)])


@pytest.mark.slow
def test_tiny_case_end_to_end(tmp_path, capsys):
    scenario = ScenarioConfig(households=6, dt_s=900.0, delay_periods=(0.4, 0.6), max_delay=2,
                              identification_days=40, mpc_horizon_steps=4)
    path = scenario.save(tmp_path / "scenario.json")
    out = tmp_path / "run"
    out.mkdir()       # the summary of an earlier run: this run must say it overwrote it
    (out / "summary.json").write_text("{}")
    argv = ["smartgrid", "run", "--config", str(path), "--mechanism", "gaussian",
            "--epsilon", "50", "--curve-epsilons", "10,100", "--profiles", "extract",
            "--out", str(out)]
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    keys = {"households", "dt_s", "epsilon", "delta", "unit", "delay_true_s",
            "delay_identified_s", "delay_ci_s", "tracking_rmse", "comfort_violation_Kh",
            "voltage_min_pu", "voltage_max_pu", "attack_error_plain", "attack_error_private",
            "attack_accuracy_plain", "attack_accuracy_private"}
    assert keys <= set(summary)
    assert summary["households"] == 6 and summary["dt_s"] == 900.0
    assert summary["unit"] == "sample" and summary["mechanism"] == "gaussian"
    # the reported guarantee is the accountant's for the noise actually used
    g = summary["guarantee"]
    mech = GaussianMechanism(sigma=g["noise_scale"], sensitivity=g["sensitivity"])
    assert accounting.epsilon(mech, delta=1e-5) == pytest.approx(summary["epsilon"])
    assert summary["epsilon"] <= 50.0 + 1e-9
    assert set(summary["tracking_rmse_nonprivate"]) == {"fractional", "truncated", "naive",
                                                         "mpc"}
    # six households over 40 days leave the plain fit's fast mode undetermined (A_d's
    # eigenvalue -0.07 +/- 1.4 since the level-free closed-loop rule; before it, a delay 110 s
    # off with an interval excluding the truth): then no controller, and the note says why
    tracking = summary["tracking_rmse_nonprivate"].values()
    if summary["delay_identified_nonprivate_s"] is None:
        assert all(v is None for v in tracking)
        assert "no continuous part" in summary["control_notes"]["nonprivate"]
    else:
        assert all(np.isfinite(v) for v in tracking)
    assert set(summary["voltage_min_pu"]) == {"uncontrolled", "controlled"}
    for name in ("uncontrolled", "controlled"):
        assert 0.8 < summary["voltage_min_pu"][name] <= summary["voltage_max_pu"][name] < 1.2
    assert [r["epsilon"] for r in summary["privacy_utility"]] == [10.0, 100.0] * 3
    # "epsilon" is the main release's, and says so; every release of the run is listed and
    # the private ones composed for the household that released most
    assert summary["epsilon_scope"].startswith("the main release only")
    releases = summary["releases"]
    assert [r["what"].split(" (")[0].split(":")[0] for r in releases] == [
        "main release", *["privacy-utility curve"] * 6, "attack", "attack", "non-private fit"]
    assert releases[0]["epsilon"] == pytest.approx(summary["epsilon"])
    assert releases[-1]["private"] is False and releases[-1]["epsilon"] is None
    private = [r["epsilon"] for r in releases if r["private"]]
    assert max(private) <= 100.0 * (1 + 1e-6)
    assert summary["epsilon_total_private"] > max(private)
    assert summary["epsilon_total_delta"] == pytest.approx(1e-5)
    # attack (a) recovers the window from plain statistics, not from private ones
    assert summary["attack_error_plain"] < 1e-3 < 0.1 < summary["attack_error_private"]
    assert summary["attack_window"] == scenario.attack_window_steps
    for figure in ("privacy_utility", "tracking", "comfort", "voltages", "attacks"):
        assert imread(out / f"{figure}.png").shape[1] > 500
    printed = capsys.readouterr()
    assert "wrote" in printed.out and "fleet delay" in printed.out
    # one run, not a second one for the note (the run is the costliest test, 15-30 s CPU)
    assert "overwrote" in printed.err and "summary.json" in printed.err


def _summary(rng):
    """A case-study summary with every number present, then some of them missing (NaN)."""
    names = ("fractional", "truncated", "naive", "mpc")
    summary = {"households": 6, "epsilon": 1.0, "delta": 1e-5, "unit": "sample",
               "mechanism": "gaussian", "dt_s": 900.0, "delay_true_s": 450.0,
               "delay_identified_s": 455.0, "delay_error_T": 0.006,
               "delay_note": "rank-deficient moments", "delay_identified_nonprivate_s": 451.0,
               "attack_window": 8, "attack_error_plain": 1e-6, "attack_error_private": 0.4,
               "attack_accuracy_plain": 0.9, "attack_accuracy_private": 0.5,
               "voltage_min_pu": {"uncontrolled": 0.95, "controlled": 0.97},
               "voltage_max_pu": {"uncontrolled": 1.02, "controlled": 1.01},
               "timings_s": {"total": 12.0}, "control_notes": {},
               "grid_controlled_by": "fractional (private model)"}
    for suffix in ("", "_nonprivate"):
        summary["tracking_rmse" + suffix] = {name: float(rng.uniform(0.1, 1)) for name in names}
        summary["comfort_violation_Kh" + suffix] = {name: 0.1 for name in names}
    if rng.random() < 0.5:                       # no private model: its delay and controllers
        summary["delay_identified_s"] = summary["delay_error_T"] = float("nan")
        summary["tracking_rmse"] = dict.fromkeys(names, float("nan"))
        summary["comfort_violation_Kh"] = dict.fromkeys(names, float("nan"))
        summary["control_notes"]["private"] = "no controller: no continuous part"
        summary["grid_controlled_by"] = "fractional (nonprivate model)"
        if rng.random() < 0.5:                   # nor a non-private one
            del summary["voltage_min_pu"]["controlled"], summary["voltage_max_pu"]["controlled"]
    if rng.random() < 0.5:
        summary["attack_error_private"] = float("nan")
    return summary


@pytest.mark.parametrize("seed", range(8))
def test_the_console_explains_every_missing_number(seed):
    """The reported failure: the smart-grid console printed a bare ``nan``."""
    from simulations.cli.smartgrid import console_lines

    rng = np.random.default_rng(seed)
    summary = _summary(rng)
    grid, attacks = bool(rng.random() < 0.7), bool(rng.random() < 0.7)
    if not attacks:
        for key in [k for k in summary if k.startswith("attack")]:
            del summary[key]
    if not grid:
        summary["voltage_min_pu"], summary["voltage_max_pu"] = {}, {}
    lines = console_lines(summary, grid=grid, attacks=attacks)
    text = "\n".join(lines)
    assert "nan" not in text.lower().replace("n/a", "")
    for line in lines:
        if "n/a" in line and "n/a (" not in line:
            # a bare n/a in the controller table: the model's note follows the table
            assert "model: n/a: no controller" in text
    if not attacks:
        assert "attacks: n/a (skipped: --no-attacks)" in text
    if not grid:
        assert "grid: n/a (skipped: --no-grid)" in text
    if grid and "controlled" not in summary["voltage_min_pu"]:
        assert "grid controlled: n/a (no controller ran on either model)" in text
    elif grid:                                   # the line names the model that controls
        assert f"grid controlled by {summary['grid_controlled_by']}: voltage" in text


def test_a_failed_private_fit_is_told_once_and_the_controlling_model_named():
    """Walkthrough finding: the long failure note printed twice, and 'grid controlled' did
    not say the non-private model controlled the grid."""
    from simulations.cli.smartgrid import console_lines

    summary = _summary(np.random.default_rng(0))
    failure = ("failed: the heat pump's channel shows no significant effect (check 'effect' "
               "failed (statistic 2.65 <= threshold 16.6) ...; see confidence_intervals())")
    names = list(summary["tracking_rmse"])
    summary.update(delay_identified_s=float("nan"), delay_error_T=float("nan"),
                   delay_note=failure, grid_controlled_by="fractional (nonprivate model)",
                   tracking_rmse=dict.fromkeys(names, float("nan")),
                   comfort_violation_Kh=dict.fromkeys(names, float("nan")),
                   control_notes={"private": "no controller: the identified model has no "
                                             f"continuous part ({failure})"})
    text = "\n".join(console_lines(summary))
    assert text.count(failure) == 1 and f"private n/a ({failure})" in text
    assert "private model: n/a: no controller: the identified model has no continuous part " \
           "(the failure on the delay line above)" in text
    assert "grid controlled by fractional (nonprivate model): voltage 0.970-1.010 pu" in text
    assert "grid uncontrolled: voltage 0.950-1.020 pu" in text


def test_a_failing_mpc_keeps_the_other_controllers(tmp_path, capsys, monkeypatch):
    """Trial 13 finding 2: the fleet MPC's SolverError made all four controllers n/a."""
    from _toolbox.errors import SolverError
    from simulations.smartgrid import fleet_mpc

    def fail(self, *args, **kwargs):
        raise SolverError("the fleet MPC's interior point did not converge (test)")

    monkeypatch.setattr(fleet_mpc.FleetMPC, "__call__", fail)
    scenario = ScenarioConfig(households=3, dt_s=900.0, delay_periods=(0.4, 0.6), max_delay=2,
                              identification_days=14, mpc_horizon_steps=4, epsilon=100.0,
                              mechanism="gaussian", profile_source="extract")
    path = scenario.save(tmp_path / "scenario.json")
    out = tmp_path / "run"
    assert main(["smartgrid", "run", "--config", str(path), "--curve-epsilons", "none",
                 "--no-attacks", "--no-grid", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    for suffix in ("", "_nonprivate"):
        rmse = summary["tracking_rmse" + suffix]
        assert rmse["mpc"] is None
        assert all(np.isfinite(rmse[name]) for name in ("fractional", "truncated", "naive"))
    note = "mpc failed: the fleet MPC's interior point did not converge (test)"
    assert summary["controller_notes"] == {"private": {"mpc": note}, "nonprivate": {"mpc": note}}
    printed = capsys.readouterr()
    # trial 13 finding 9: "...and the figures" whatever was written; now the files themselves
    wrote = printed.out.splitlines()[-1]
    assert wrote == f"wrote {out}/: " + ", ".join(sorted(p.name for p in out.iterdir()))
    assert "tracking.png" in wrote and "comfort.png" in wrote
    assert f"mpc on the private model: n/a: {note}" in printed.out
    assert f"mpc on the non-private model: n/a: {note}" in printed.out
    assert "RuntimeWarning" not in printed.err         # said once, in the summary


@pytest.mark.parametrize("setting, message", [
    ({"households": 0}, "households must be an integer >= 1; got 0"),
    ({"unit": "window"}, "unit='window' needs window_steps"),
    ({"grid": "1-MV-rural--0-sw"}, "grid must be a SimBench LV grid"),
])
def test_config_errors_name_the_file_and_its_keys(tmp_path, capsys, setting, message):
    """Trial 13 finding 10: a bad --config setting was named as a flag (--households,
    --window) the user had not given."""
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(setting))
    assert main(["smartgrid", "run", "--config", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"error: --config {path}: {message}" in err
    assert "--households" not in err and "--window" not in err and "--grid" not in err


def test_the_wrote_line_says_when_no_figure_was_written(tmp_path, capsys, monkeypatch):
    """Trial 13 finding 9: '... and the figures' was printed with no PNG written."""
    import simulations.smartgrid.case_study as case_study

    def no_figures(config, out, **options):
        (out / "summary.json").write_text("{}")
        return _summary(np.random.default_rng(0))

    monkeypatch.setattr(case_study, "run_case_study", no_figures)
    out = tmp_path / "run"
    assert main(["smartgrid", "run", "--no-attacks", "--no-grid", "--curve-epsilons", "none",
                 "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"wrote {out}/: summary.json, summary.md (no figure: no curve, no controller ran and no "
        f"power flows to plot)")
