"""``dmdidc privacy identify`` / ``dmdidc privacy sweep`` and the interval output of
``dmdidc identify``."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from dmdidc import DelayedPlant
from simulations.cli import main


@pytest.fixture(scope="module")
def damped_data(tmp_path_factory):
    plant = DelayedPlant.from_continuous([[-0.2, 1.0], [-1.0, -0.2]], [[1.0], [0.5]], 1.4, 1.0)
    rng = np.random.default_rng(0)
    U = rng.uniform(-1.0, 1.0, (1, 60_000))
    X = plant.simulate(np.zeros(2), U) + 0.02 * rng.standard_normal((2, 60_001))
    path = tmp_path_factory.mktemp("data") / "data.npz"
    np.savez(path, X=X, U=U)
    return path


def test_privacy_identify_prints_the_guarantee_and_writes_model_and_json(damped_data, tmp_path,
                                                                          capsys):
    out, summary = tmp_path / "model.json", tmp_path / "summary.json"
    code = main(["privacy", "identify", str(damped_data), "--dt", "1", "--max-delay", "3",
                 "--state-bound", "4", "--input-bound", "1", "--epsilon", "10", "--delta",
                 "1e-5", "--seed", "0", "--out", str(out), "--json", str(summary)])
    printed = capsys.readouterr().out
    assert code == 0
    # n = 2, m = 1, R = 3: v_k has 8 entries, 36 distinct Gram entries and 8 sums
    assert re.search(r"released: 44 statistics, \(\d+(\.\d+)?, 1e-05\)-DP for one time step "
                     r"replaced \(GaussianMechanism", printed)
    assert "95 % confidence intervals (asymptotic)" in printed
    written = json.loads(summary.read_text())
    assert written["privacy"]["unit"] == "sample" and written["privacy"]["epsilon"] <= 10.0
    assert written["delay_low"][0] < 1.4 < written["delay_high"][0]
    assert DelayedPlant.load(out).delay_steps.tolist() == [1]


def test_a_public_operating_point_centres_the_bounds_and_stays_with_the_model(tmp_path,
                                                                             capsys):
    """Walkthrough finding 14: absolute data (x around 60) needed --state-bound 65, most of
    the unit box wasted; the docs say to subtract a public operating point first."""
    plant = DelayedPlant.from_continuous([[-0.2, 1.0], [-1.0, -0.2]], [[1.0], [0.5]], 1.4, 1.0)
    rng = np.random.default_rng(1)
    x_op, u_op = np.array([60.0, -3.0]), np.array([45.0])
    U = rng.uniform(-1.0, 1.0, (1, 60_000))
    X = plant.simulate(np.zeros(2), U) + 0.02 * rng.standard_normal((2, 60_001))
    path = tmp_path / "absolute.npz"
    np.savez(path, X=X + x_op[:, None], U=U + u_op[:, None])
    common = ["privacy", "identify", str(path), "--dt", "1", "--max-delay", "3",
              "--state-bound", "4", "--input-bound", "1", "--epsilon", "10", "--delta", "1e-5",
              "--seed", "0", "--out", str(tmp_path / "model.json")]
    assert main([*common, "--state-operating-point", "60,-3",
                 "--input-operating-point", "45"]) == 0
    captured = capsys.readouterr()
    assert "clipped" not in captured.err and "operating point: x_op" in captured.out
    model = DelayedPlant.load(tmp_path / "model.json")
    assert model.delay_steps.tolist() == [1] and abs(model.delay[0] - 1.4) < 0.1
    # the model's operating point is the public one (plus what the fit found, a few noise
    # standard errors of the unit box: the data are centred on it)
    assert np.all(np.abs(model.operating_point.state - x_op) < 0.2)
    assert np.all(np.abs(model.operating_point.input - u_op) < 0.2)
    # without it the same bounds clip nearly everything, and the command says so
    main(common)
    err = capsys.readouterr().err
    assert "check 'clipping' failed" in err and "% of the state values (up to" in err
    assert "times --state-bound" in err
    with pytest.raises(SystemExit):
        main([*common, "--state-operating-point", "60,nan"])
    assert "argument --state-operating-point: must be a finite number" in \
        capsys.readouterr().err


@pytest.mark.parametrize("option, value", [("--epsilon", "-1"), ("--epsilon", "inf"),
                                           ("--delta", "0"), ("--alpha", "2.5"),
                                           ("--window", "0"), ("--max-delay", "-1")])
def test_privacy_identify_bad_numbers_are_refused_by_the_parser(tmp_path, capsys, option,
                                                                value):
    # before the data are read: an error names the flag, not the library's argument
    args = {"--max-delay": "3", "--state-bound": "4", "--input-bound": "1", "--epsilon": "1",
            option: value}
    with pytest.raises(SystemExit):
        main(["privacy", "identify", str(tmp_path / "missing.npz"),
              *[word for pair in args.items() for word in pair]])
    err = capsys.readouterr().err
    assert f"argument {option}: must be" in err and "missing.npz" not in err


@pytest.mark.parametrize("extra, message", [
    (["--mechanism", "gaussian"], "needs delta"),
    # a delta not given is said so, not shown as the flag's placeholder (--delta DELTA)
    (["--mechanism", "gaussian"], "got no --delta;"),
    # Laplace noise does not depend on delta: refused as federated identify does
    (["--mechanism", "laplace", "--delta", "1e-5"],
     "--delta applies to --mechanism gaussian or sas; got --delta 1e-05 with --mechanism "
     "laplace"),
    (["--mechanism", "laplace", "--alpha", "1.5"], "--alpha needs --mechanism sas"),
    (["--mechanism", "laplace", "--window", "5"], "--window needs --unit window"),
    (["--mechanism", "laplace", "--unit", "window"], "needs --window STEPS"),
    (["--mechanism", "laplace", "--state-bound", "1,2,3"],
     "--state-bound has 3 values; give one, or 2 (one per state)"),
])
def test_privacy_identify_refuses_inconsistent_options(damped_data, tmp_path, capsys, extra,
                                                       message):
    args = ["privacy", "identify", str(damped_data), "--dt", "1", "--max-delay", "3",
            "--state-bound", "4", "--input-bound", "1", "--epsilon", "1",
            "--out", str(tmp_path / "m.json")]
    bound = extra.index("--state-bound") if "--state-bound" in extra else None
    if bound is not None:
        args[args.index("--state-bound") + 1] = extra[bound + 1]
        extra = extra[:bound] + extra[bound + 2:]
    assert main(args + extra) == 2
    assert message in capsys.readouterr().err


def test_privacy_identify_refuses_interpolated_gaps_and_names_drop(tmp_path, capsys):
    path = tmp_path / "gaps.csv"
    rows = ["time,x,u"] + [f"{k},{'' if 20 < k < 30 else np.sin(k)},{np.cos(k)}"
                           for k in range(60)]
    path.write_text("\n".join(rows) + "\n")
    common = ["privacy", "identify", str(path), "--inputs", "u", "--states", "x",
              "--max-delay", "2", "--state-bound", "1", "--input-bound", "1", "--epsilon", "1",
              "--mechanism", "laplace", "--out", str(tmp_path / "m.json")]
    assert main(common + ["--missing", "interpolate"]) == 2
    err = capsys.readouterr().err
    assert "--missing interpolate is refused with a private release" in err
    assert "Use --missing drop" in err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("extra, message", [
    (["--mechanisms", "gaussian", "--alpha", "1.2"], "--alpha 1.2 has no effect here: it needs "
                                                     "sas among --mechanisms"),
    (["--mechanisms", "sas", "laplace", "--delta", "1e-6"], "--delta 1e-06 has no effect"),
    (["--units", "sample", "--window", "5"], "--window 5 has no effect here: it needs window"),
    # given at its default value: still given, still refused (not compared with the default)
    (["--mechanisms", "gaussian", "--alpha", "1.5"], "--alpha 1.5 has no effect here"),
    (["--units", "sample", "--window", "12"], "--window 12 has no effect here"),
])
def test_privacy_sweep_refuses_options_its_mechanisms_and_units_ignore(tmp_path, capsys, extra,
                                                                       message):
    assert main(["privacy", "sweep", *extra, "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not (tmp_path / "s").exists()


def test_privacy_sweep_writes_table_csv_json_and_figure(tmp_path, capsys):
    out = tmp_path / "study"
    code = main(["privacy", "sweep", "--out", str(out), "--epsilons", "2", "8", "--units",
                 "sample", "--samples", "3000", "--mechanisms", "gaussian", "--seeds", "2"])
    printed = capsys.readouterr().out
    assert code == 0
    assert re.search(r"sample +gaussian +3000 +2 \|", printed) and "ratio" in printed
    rows = list(csv.DictReader((out / "privacy_study.csv").open()))
    assert len(rows) == 2 * 2 * 2                     # epsilons x seeds x approaches
    summary = json.loads((out / "privacy_study.json").read_text())["summary"]
    stats = [e for e in summary if e["approach"] == "statistics" and e["epsilon"] == 8.0][0]
    errors = sorted(float(r["delay_error_T"]) for r in rows
                    if r["approach"] == "statistics" and float(r["epsilon"]) == 8.0)
    assert float(stats["delay_median"]) in errors
    assert (out / "privacy_study.png").stat().st_size > 10_000


def test_sweep_options_are_checked(tmp_path, capsys):
    assert main(["privacy", "sweep", "--out", str(tmp_path), "--samples", "1000"]) == 2
    assert "multiples of length=300" in capsys.readouterr().err


def test_identify_with_an_estimator_and_a_chosen_bound_prints_intervals(damped_data, tmp_path,
                                                                        capsys):
    code = main(["identify", str(damped_data), "--dt", "1", "--max-delay", "auto",
                 "--estimator", "iv", "--level", "0.9", "--out", str(tmp_path / "m.json")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "--max-delay chosen: 3" in printed          # the flag, as the CLI names it
    found = re.search(r"90 % confidence intervals \(asymptotic\):\n  r\[0\] = (1\.\d+) \+/- "
                      r"(0\.\d+) s", printed)
    assert found and abs(float(found.group(1)) - 1.4) < 0.01 and float(found.group(2)) < 0.01


def test_privacy_identify_seed_is_warned_as_a_secret_and_written_nowhere(damped_data, tmp_path,
                                                                          capsys):
    def run(name, *extra):
        out, summary = tmp_path / name / "model.json", tmp_path / name / "summary.json"
        (tmp_path / name).mkdir()
        assert main(["privacy", "identify", str(damped_data), "--dt", "1", "--max-delay", "3",
                     "--state-bound", "4", "--input-bound", "1", "--epsilon", "10", "--delta",
                     "1e-5", *extra, "--out", str(out), "--json", str(summary)]) == 0
        return DelayedPlant.load(out), tmp_path / name, capsys.readouterr().err

    fresh, _, err = run("fresh")
    again, _, _ = run("again")
    assert not np.allclose(fresh.A_d, again.A_d)
    assert "can remove the noise" not in err
    seeded, folder, err = run("seeded", "--seed", "987654")
    repeat, _, _ = run("repeat", "--seed", "987654")
    np.testing.assert_array_equal(seeded.A_d, repeat.A_d)
    assert "--seed 987654 seeds the release's noise: anyone with this seed can remove" in err
    assert "keep it secret like a key" in err
    assert all("987654" not in path.read_text() for path in folder.iterdir()
               if path.suffix in (".json", ".md"))


def test_unit_trajectory_on_a_record_of_several_segments_says_what_it_protects(tmp_path,
                                                                             capsys):
    """--missing drop splits a record at its gaps: --unit trajectory protects each segment,
    not the file (a review: 2-5 segments changed 1-2.5x the declared l1 for the whole file)."""
    rng = np.random.default_rng(0)
    u = rng.choice([-1.0, 1.0], 3000)
    x = np.zeros(3001)
    for k in range(3000):
        x[k + 1] = 0.8 * x[k] + 0.3 * u[k - 1] if k else 0.0
    rows = ["time,x,u"] + [f"{0.5 * k},{'' if 1500 <= k < 1505 else x[k]},"
                           f"{u[k] if k < 3000 else ''}" for k in range(3001)]
    path = tmp_path / "gaps.csv"
    path.write_text("\n".join(rows) + "\n")
    argv = ["privacy", "identify", str(path), "--inputs", "u", "--states", "x",
            "--max-delay", "2", "--state-bound", "2", "--input-bound", "1", "--epsilon", "1e4",
            "--mechanism", "laplace", "--missing", "drop", "--unit", "trajectory",
            "--seed", "0", "--out", str(tmp_path / "m.json")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert re.search(r"--unit trajectory protects each of the 2 trajectories .* not the file",
                     err)


def test_privacy_identify_keeps_a_model_whose_intervals_the_delta_method_cannot_give(
        damped_data, tmp_path, capsys, monkeypatch):
    # as 'dmdidc identify' does: the model and its delays written, the summary marks the
    # intervals missing and why, a warning names the cause (before: exit 2, nothing written)
    from dmdidc import DMDidc
    from dmdidc.errors import LogarithmError

    def no_intervals(self, level=0.95, **kwargs):
        raise LogarithmError("the intervals span the block structure with the block before "
                             "each delay fitted too, which has no continuous model (...)")

    monkeypatch.setattr(DMDidc, "confidence_intervals", no_intervals)
    out, summary = tmp_path / "model.json", tmp_path / "summary.json"
    assert main(["privacy", "identify", str(damped_data), "--dt", "1", "--max-delay", "3",
                 "--state-bound", "4", "--input-bound", "1", "--epsilon", "10", "--delta",
                 "1e-5", "--seed", "0", "--out", str(out), "--json", str(summary)]) == 0
    model = DelayedPlant.load(out)
    assert model.has_continuous and not model.signal_info.intervals
    written = json.loads(summary.read_text())
    assert written["delay_low"] is None and written["delay_s"] == model.delay.tolist()
    assert "block before each delay" in written["missing"]["intervals"]
    captured = capsys.readouterr()
    assert "no confidence intervals (the warning below says why)" in captured.out
    assert re.search(r"warning: the model is kept without confidence intervals: .*block "
                     r"before each delay", captured.err)
