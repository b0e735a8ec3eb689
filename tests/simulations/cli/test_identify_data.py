"""``dmdidc identify`` on a user's tables: columns by name, the time column, missing samples,
a delay at the bound, resource limits and atomic model files (issues 18 and 20)."""

import re

import numpy as np
import pytest

from _toolbox.errors import ParameterError
from dmdidc import DelayedPlant, random_excitation
from simulations.cli import main


def table(tmp_path, seed, samples=400, delay=2.5, name="log.csv"):
    """A random stable plant's record as one CSV table ``time, x1, x2, u1, u2``."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2))
    A_c -= (np.linalg.eigvals(A_c).real.max() + rng.uniform(0.1, 0.6)) * np.eye(2)   # stable
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)) + 2 * np.eye(2),
                                         delay, 2.0)
    U = random_excitation(2, samples, rng=rng)
    X = plant.simulate(np.zeros(2), U)
    X = X + 1e-4 * rng.standard_normal(X.shape)
    t = 100.0 + 2.0 * np.arange(samples + 1)
    inputs = np.vstack([U.T, np.full((1, 2), np.nan)])
    path = tmp_path / name
    np.savetxt(path, np.column_stack([t, X.T, inputs]), delimiter=",",
               header="time,x1,x2,u1,u2", comments="", fmt="%.17g")
    return path, plant, X, U


def identify(tmp_path, *argv, out="model.json"):
    return main(["identify", *map(str, argv), "--out", str(tmp_path / out)])


@pytest.mark.parametrize("seed", range(3))
def test_a_time_column_is_never_fitted_as_a_state(tmp_path, capsys, seed):
    """The reported failure: ``x.csv`` with a time column was fitted as a third state."""
    path, plant, X, U = table(tmp_path, seed)
    np.savetxt(tmp_path / "x.csv", np.column_stack([100 + 2.0 * np.arange(X.shape[1]), X.T]),
               delimiter=",", header="t,x1,x2", comments="", fmt="%.17g")
    np.savetxt(tmp_path / "u.csv", U.T, delimiter=",", fmt="%.17g")
    assert identify(tmp_path, "--states", tmp_path / "x.csv", "--inputs", tmp_path / "u.csv",
                    "--max-delay", 3) == 0
    model = DelayedPlant.load(tmp_path / "model.json")
    assert model.n_states == 2 and model.dt == 2.0
    np.testing.assert_array_equal(model.delay_steps, [1, 1])
    assert "data: 't' of" in capsys.readouterr().out


@pytest.mark.parametrize("seed", range(3))
def test_one_table_with_columns_by_name(tmp_path, seed):
    path, plant, _, _ = table(tmp_path, seed)
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--states", "x1,x2",
                    "--max-delay", 3) == 0
    model = DelayedPlant.load(tmp_path / "model.json")
    assert np.all(np.abs(model.delay - 2.5) < 0.1)
    assert np.allclose(model.A_d, plant.A_d, atol=1e-2)


@pytest.mark.parametrize("missing", ["drop", "interpolate"])
def test_missing_samples_are_handled_and_reported(tmp_path, capsys, missing):
    path, _, _, _ = table(tmp_path, 7)
    lines = path.read_text().splitlines()
    for row in (50, 51, 200):
        fields = lines[row].split(",")
        fields[2] = ""
        lines[row] = ",".join(fields)
    path.write_text("\n".join(lines) + "\n")
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 3) == 2
    err = capsys.readouterr().err
    assert "3 missing values ('x2' at samples 49, 50, 199" in err and "--missing" in err
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 3,
                    "--missing", missing) == 0
    out = capsys.readouterr().out
    assert f"data: {'dropped' if missing == 'drop' else 'interpolated'} 3 missing values" in out
    model = DelayedPlant.load(tmp_path / "model.json")
    assert np.all(np.abs(model.delay - 2.5) < 0.2)


def test_a_delay_at_the_bound_is_an_error_that_names_it(tmp_path, capsys):
    path, _, _, _ = table(tmp_path, 3, delay=5.0)               # 2.5 periods
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 2) == 2
    err = capsys.readouterr().err
    assert "--max-delay 2 is too small" in err and "refit with --max-delay 3" in err
    assert not (tmp_path / "model.json").exists()
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 4) == 0


@pytest.mark.parametrize("seed", range(3))
def test_a_delay_hidden_beyond_max_delay_0_is_refused_as_at_the_bound(tmp_path, capsys, seed):
    """Walkthrough finding 6: ``--max-delay 0`` on delayed data wrote a zero-delay model with
    ``delay_bound`` passing, while ``--max-delay 1`` was refused."""
    path, _, _, _ = table(tmp_path, seed, delay=1.2)                # 0.6 periods
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 0) == 2
    err = capsys.readouterr().err
    assert "--max-delay 0 may be too small" in err and "raise --max-delay to at least" in err
    assert not (tmp_path / "model.json").exists()
    path, _, _, _ = table(tmp_path, seed, delay=0.0, name="undelayed.csv")
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 0) == 0
    assert DelayedPlant.load(tmp_path / "model.json").max_delay == 0


def test_a_bound_beyond_the_data_or_the_memory_is_refused_before_fitting(tmp_path, capsys,
                                                                        monkeypatch):
    path, _, _, _ = table(tmp_path, 4)
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 1000000) == 2
    assert "accepted --max-delay 0 .. 398" in capsys.readouterr().err
    from simulations.cli import resources

    monkeypatch.setattr(resources, "memory_budget", lambda: 2**20)      # a 1 MiB machine
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 300) == 2
    err = capsys.readouterr().err
    assert "--max-delay 300 needs about" in err and "the budget is 1 MiB" in err
    accepted = int(err.split("accepted --max-delay 0 .. ")[1].split()[0])
    assert 0 < accepted < 300
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", accepted) in (0, 2)


def test_a_failing_identify_keeps_the_previous_model(tmp_path):
    path, _, _, _ = table(tmp_path, 5)
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 3) == 0
    model = tmp_path / "model.json"
    before = (model.read_bytes(), model.stat().st_mtime_ns)
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 1) == 2   # at the bound
    assert identify(tmp_path, path, "--inputs", "u1,u9", "--max-delay", 3) == 2   # no column
    assert (model.read_bytes(), model.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.csv", "model.json"]


def test_outputs_identify_from_one_measured_signal(tmp_path, capsys):
    """``--outputs``: OutputDMDidc on the named columns (here one sensor of a 2-state plant)."""
    from dmdidc import OutputDMDidc

    path, plant, X, U = table(tmp_path, 0, samples=1500)     # seed 6 is aliased at T = 2 s
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1",
                    "--max-delay", 3) == 0
    out = capsys.readouterr().out
    assert "output identification (OutputDMDidc): order 2" in out
    assert "95 % interval" in out and "95% interval" not in out    # as every other line
    est = OutputDMDidc.load(tmp_path / "model.json")
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.02 * 2.0)
    np.testing.assert_allclose(np.sort_complex(est.eigenvalues_),
                               np.sort_complex(np.linalg.eigvals(plant.A_c)), rtol=0.02)


def test_outputs_with_dropped_samples_leave_out_short_segments(tmp_path, capsys):
    """``--outputs --missing drop`` with close gaps: a 1-step segment was refused as
    transposed data; the segments go to the fit as an IdData, which leaves out those shorter
    than one window (as the library's fit(IdData))."""
    from dmdidc import OutputDMDidc

    path, plant, _, _ = table(tmp_path, 0, samples=1500)
    rows = np.loadtxt(path, delimiter=",", skiprows=1)
    rows[[700, 703, 705, 1100], 1] = np.nan          # x1 lost: segments of 2 and 1 steps
    np.savetxt(path, rows, delimiter=",", header="time,x1,x2,u1,u2", comments="", fmt="%.17g")
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3,
                    "--missing", "drop") == 0
    assert "segments of 699, 1, 393, 399 steps" in capsys.readouterr().out
    est = OutputDMDidc.load(tmp_path / "model.json")
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.02 * 2.0)


def test_outputs_refuse_what_configures_the_state_fit(tmp_path, capsys):
    path, _, X, U = table(tmp_path, 6)
    assert identify(tmp_path, path, "--inputs", "u1", "--outputs", "x1", "--states", "x2",
                    "--max-delay", 3) == 2
    assert "not both" in capsys.readouterr().err
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3,
                    "--estimator", "ls") == 2
    assert "does not take --estimator" in capsys.readouterr().err
    # found in review: --check-level was silently ignored (OutputDMDidc has no such level)
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3,
                    "--check-level", "0.2") == 2
    assert "does not take --check-level" in capsys.readouterr().err
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1",
                    "--max-delay", "auto") == 2
    assert "integer --max-delay" in capsys.readouterr().err
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1") == 2
    assert "--outputs needs --max-delay" in capsys.readouterr().err
    # an option given at its default value is given: refused as any other value
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3,
                    "--estimator", "auto") == 2
    assert "does not take --estimator" in capsys.readouterr().err
    assert main(["privacy", "identify", str(path), "--inputs", "u1,u2", "--outputs", "x1",
                 "--max-delay", "3", "--epsilon", "1", "--state-bound", "5", "--input-bound",
                 "5", "--out", str(tmp_path / "p.json")]) == 2
    assert "dmdidc identify --outputs" in capsys.readouterr().err


def test_dt_must_come_from_somewhere(tmp_path, capsys):
    path, _, X, U = table(tmp_path, 6)
    np.savez(tmp_path / "d.npz", X=X, U=U)
    assert identify(tmp_path, tmp_path / "d.npz", "--max-delay", 3) == 2
    assert "give --dt" in capsys.readouterr().err


def test_values_whose_squares_overflow_are_refused_with_the_cause(tmp_path, capsys):
    """The reported failure: a value of 1e308 in the data ended in 'Eigenvalues did not
    converge'."""
    path, _, X, U = table(tmp_path, 8)
    X[1, 17] = 1e308
    np.savez(tmp_path / "d.npz", X=X, U=U)
    assert identify(tmp_path, tmp_path / "d.npz", "--dt", 2, "--max-delay", 3) == 2
    err = capsys.readouterr().err
    assert "x2 reaches 1e+308 at sample 17" in err and "overflow" in err
    assert "Eigenvalues" not in err


def test_privacy_identify_reads_tables_and_refuses_a_delay_at_the_bound(tmp_path, capsys):
    path, _, _, _ = table(tmp_path, 9, samples=2000, delay=5.0)          # 2.5 periods
    private = ["privacy", "identify", str(path), "--inputs", "u1,u2", "--state-bound", "20",
               "--input-bound", "1", "--epsilon", "1e4", "--delta", "1e-5", "--seed", "0",
               "--out", str(tmp_path / "private.json")]
    assert main([*private, "--max-delay", "2"]) == 2
    assert "--max-delay 2 is too small" in capsys.readouterr().err
    assert main([*private, "--max-delay", "4", "--json", str(tmp_path / "s.json")]) == 0
    assert DelayedPlant.load(tmp_path / "private.json").delay_steps.tolist() == [2, 2]
    assert (tmp_path / "s.md").read_text().startswith("# dmdidc privacy identify")


@pytest.mark.parametrize("seed", range(3))
def test_autonomous_records_are_fitted_as_plain_dmd_from_every_form(tmp_path, capsys, seed):
    """m = 0 from the command line: ``--inputs none`` on a table or a states file, and an
    ``.npz`` without ``U``, give the same model as U with zero rows, with the same notes."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2))
    A_c -= (np.linalg.eigvals(A_c).real.max() + rng.uniform(0.1, 0.6)) * np.eye(2)
    A_d = DelayedPlant.from_continuous(A_c, np.zeros((2, 0)), [], 0.5).A_d
    X = np.zeros((2, 401))
    X[:, 0] = rng.standard_normal(2)
    for k in range(400):                       # a free response kept alive by process noise
        X[:, k + 1] = A_d @ X[:, k] + 0.1 * rng.standard_normal(2)
    np.savez(tmp_path / "zero_rows.npz", X=X, U=np.zeros((0, 400)))
    np.savez(tmp_path / "no_u.npz", X=X)
    np.savetxt(tmp_path / "x.csv", X.T, delimiter=",", fmt="%.17g")
    np.savetxt(tmp_path / "log.csv", np.column_stack([0.5 * np.arange(401), X.T]),
               delimiter=",", header="time,x1,x2", comments="", fmt="%.17g")
    models = {}
    for name, argv in {"zero_rows": ["zero_rows.npz", "--dt", 0.5],
                       "no_u": ["no_u.npz", "--dt", 0.5],
                       "states": ["--states", tmp_path / "x.csv", "--inputs", "none", "--dt",
                                  0.5],
                       "table": ["log.csv", "--inputs", "none"]}.items():
        argv = [tmp_path / a if str(a).endswith((".npz", "log.csv")) else a for a in argv]
        assert identify(tmp_path, *argv, "--max-delay", 0, out=f"{name}.json") == 0, name
        printed = capsys.readouterr().out
        assert "no inputs: plain DMD by least squares" in printed, name
        if name != "zero_rows":
            assert "data: no inputs (m = 0)" in printed, name
        models[name] = DelayedPlant.load(tmp_path / f"{name}.json")
    for name, model in models.items():
        assert model.n_inputs == 0 and model.dt == 0.5, name
        np.testing.assert_allclose(model.A_d, models["zero_rows"].A_d, rtol=1e-10, atol=1e-12)
    assert np.abs(models["table"].A_d - A_d).max() < 0.1      # 400 noisy steps
    if seed == 0:       # IV has no instruments without inputs: the remedy is a flag
        assert identify(tmp_path, tmp_path / "no_u.npz", "--dt", 0.5, "--max-delay", 0,
                        "--estimator", "iv", out="iv.json") == 2
        assert "or least squares (--estimator ls)" in capsys.readouterr().err


def test_outputs_as_long_as_the_inputs_are_accepted(tmp_path, capsys):
    """``identify --outputs`` on an .npz whose Y has as many samples as U (OutputDMDidc's own
    convention) gives the model of the same data with one output more."""
    from dmdidc import OutputDMDidc

    _, plant, X, U = table(tmp_path, 0, samples=1500)
    Y = X[:1]                                               # one sensor, K + 1 samples
    np.savez(tmp_path / "longer.npz", X=Y, U=U)
    np.savez(tmp_path / "same.npz", X=Y[:, :-1], U=U)
    np.savez(tmp_path / "named.npz", Y=Y, U=U)             # the outputs' usual name
    for name in ("longer", "same", "named"):
        assert identify(tmp_path, tmp_path / f"{name}.npz", "--outputs", "all", "--dt", 2.0,
                        "--max-delay", 3, out=f"{name}.json") == 0, capsys.readouterr().err
    longer, same, named = (OutputDMDidc.load(tmp_path / f"{n}.json")
                           for n in ("longer", "same", "named"))
    np.testing.assert_allclose(same.delay, longer.delay, rtol=1e-9)
    np.testing.assert_allclose(named.delay, longer.delay, rtol=1e-12)
    # the state fit takes X: a Y there is named as outputs, with the flag that reads it
    assert identify(tmp_path, tmp_path / "named.npz", "--dt", 2.0, "--max-delay", 3) == 2
    assert "give --outputs all" in capsys.readouterr().err
    np.testing.assert_allclose(same.delay, plant.delay, atol=0.02 * 2.0)


def test_outputs_from_two_files(tmp_path, capsys):
    """``--states y.csv --inputs u.csv --outputs all`` (the two-file form the help names) was
    refused as 'not both': it identifies the outputs file, as the .npz form does."""
    from dmdidc import OutputDMDidc

    _, plant, X, U = table(tmp_path, 0, samples=1500)
    np.savetxt(tmp_path / "y.csv", X[:1].T, delimiter=",", fmt="%.17g")
    np.savetxt(tmp_path / "u.csv", U.T, delimiter=",", fmt="%.17g")
    np.savez(tmp_path / "y.npz", X=X[:1], U=U)
    assert identify(tmp_path, "--states", tmp_path / "y.csv", "--inputs", tmp_path / "u.csv",
                    "--outputs", "all", "--dt", 2.0, "--max-delay", 3) == 0, \
        capsys.readouterr().err
    assert identify(tmp_path, tmp_path / "y.npz", "--outputs", "all", "--dt", 2.0,
                    "--max-delay", 3, out="npz.json") == 0
    files, archive = (OutputDMDidc.load(tmp_path / n) for n in ("model.json", "npz.json"))
    np.testing.assert_allclose(files.delay, archive.delay, rtol=1e-9)
    np.testing.assert_allclose(files.delay, plant.delay, atol=0.02 * 2.0)
    # naming columns is for a table: the two-file form takes only 'all'
    assert identify(tmp_path, "--states", tmp_path / "y.csv", "--inputs", tmp_path / "u.csv",
                    "--outputs", "x1", "--dt", 2.0, "--max-delay", 3) == 2
    assert "--outputs all reads" in capsys.readouterr().err


def test_named_units_reach_the_printed_and_saved_intervals(tmp_path, capsys):
    """A header 'T [K]' and 'q [kW]': B_c's intervals are in K/(kW s), not '1/s' (review)."""
    path, _, X, U = table(tmp_path, 1)
    rows = np.loadtxt(path, delimiter=",", skiprows=1)
    np.savetxt(path, rows, delimiter=",", header="time,T1 [K],T2 [K],q1 [kW],q2 [kW]",
               comments="", fmt="%.17g")
    assert identify(tmp_path, path, "--inputs", "q1,q2", "--max-delay", 3) == 0
    out = capsys.readouterr().out
    assert re.search(r"B_c\[1, 0\] = .* K/\(kW s\)", out) and "A_c[0, 1] = " in out
    assert not re.search(r"B_c\[.*1/s", out)
    saved = DelayedPlant.load(tmp_path / "model.json").info.intervals
    assert saved["B_c"]["unit"] == [["K/(kW s)"] * 2] * 2
    assert saved["A_c"]["unit"] == "1/s"


def test_a_reference_without_inputs_is_refused_by_its_reason(tmp_path, capsys):
    # found in review: it failed on 'slice step cannot be zero' / a row count
    rng = np.random.default_rng(3)
    X = np.cumsum(0.1 * rng.standard_normal((2, 301)), axis=1) * 0.5
    np.savez(tmp_path / "auto.npz", X=X)
    np.savetxt(tmp_path / "ref.csv", rng.standard_normal((300, 1)))
    assert identify(tmp_path, tmp_path / "auto.npz", "--dt", 1.0, "--reference",
                    tmp_path / "ref.csv") == 2
    err = capsys.readouterr().err
    assert "--reference" in err and "none" in err and len(err.splitlines()) == 1
    assert identify(tmp_path, tmp_path / "auto.npz", "--dt", 1.0) == 0    # no false alarm


def test_the_remedy_names_the_missing_flag():
    from simulations.cli.terms import in_cli_terms

    text = in_cli_terms("interpolate short gaps (IdData(..., missing='interpolate'))",
                        {"--missing": ("error", "drop", "interpolate")})
    assert "--missing interpolate" in text and "missing=" not in text


def test_outputs_report_names_offset_checks_and_the_outlier_samples(tmp_path, capsys):
    """Review finding: ``identify --outputs`` printed no checks, no offset and no signal
    names, and its outlier warning told the user to edit ``Y[:, est.outlier_samples_[0]]``
    and call ``IdData(...)`` without saying which samples.  Now the command lists them and
    gives its own remedy; a clean record lists none."""
    path, _, X, _ = table(tmp_path, 0, samples=1500)
    rows = path.read_text().splitlines()
    cells = rows[1 + 700].split(",")
    cells[1] = repr(float(cells[1]) + 0.5 * float(np.abs(X[0]).max()) + 3.0)
    rows[1 + 700] = ",".join(cells)                 # x1 at sample 700: a gross error
    (tmp_path / "outlier.csv").write_text("\n".join(rows) + "\n")
    assert identify(tmp_path, tmp_path / "outlier.csv", "--inputs", "u1,u2", "--outputs", "x1",
                    "--max-delay", 3) == 0
    captured = capsys.readouterr()
    assert "signals: outputs x1; inputs u1, u2" in captured.out
    assert "input 0 (u1): delay" in captured.out and "output offset" in captured.out
    assert re.search(r"FAIL\s+outliers", captured.out)
    listed = captured.out.split("outlier samples (")[1].split("\n")[0]
    assert "700" in listed.split(": ")[1].split(", ")
    assert "--missing drop" in captured.err
    assert "outlier_samples_[0]" not in captured.err and "IdData(" not in captured.err
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1",
                    "--max-delay", 3) == 0
    captured = capsys.readouterr()
    assert re.search(r"pass\s+outliers", captured.out) and "outlier samples" not in captured.out


def test_outputs_name_why_an_npz_model_file_is_refused(tmp_path, capsys):
    """Review finding: '--out m.npz' with --outputs said "must end in .json" while the help
    said ".json or .npz"; the error now says an output model is JSON only."""
    path, _, _, _ = table(tmp_path, 0, samples=600)
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3,
                    out="m.npz") == 2
    err = capsys.readouterr().err
    assert "output model (--outputs) is written as JSON only" in err
    assert not (tmp_path / "m.npz").exists()


def test_outputs_order_and_feedthrough_flags_act_and_remedies_name_them(tmp_path, capsys):
    """Review finding: the output fit's remedies say order=, max_order= and
    OutputDMDidc(feedthrough=True), which the command had no flag for.  --order,
    --max-order and --feedthrough now set them (refused without --outputs), and the
    remedies name the flags."""
    from dmdidc import OutputDMDidc

    path, plant, X, U = table(tmp_path, 0, samples=1500)
    rows = path.read_text().splitlines()
    for k in range(1, len(rows) - 1):              # x1 reacts to u1 of the same sample
        cells = rows[k].split(",")
        cells[1] = repr(float(cells[1]) + 0.5 * float(cells[3]))
        rows[k] = ",".join(cells)
    (tmp_path / "direct.csv").write_text("\n".join(rows) + "\n")
    argv = [tmp_path / "direct.csv", "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3]
    assert identify(tmp_path, *argv) == 0
    err = capsys.readouterr().err
    assert "--feedthrough" in err and "feedthrough=True" not in err
    assert identify(tmp_path, *argv, "--feedthrough") == 0
    capsys.readouterr()
    est = OutputDMDidc.load(tmp_path / "model.json")
    assert est.feedthrough and abs(est.D[0, 0] - 0.5) < 0.05
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.05 * 2.0)
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3,
                    "--order", 3) == 0
    assert OutputDMDidc.load(tmp_path / "model.json").order_ == 3
    assert "order 3: fixed by the user" in capsys.readouterr().out
    for flag in (["--order", "2"], ["--feedthrough"], ["--max-order", "4"]):
        assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 3, *flag) == 2
        assert "configure output identification (--outputs)" in capsys.readouterr().err


def test_outputs_detrend_none_on_data_with_an_offset_is_loud(tmp_path, capsys):
    """Review finding: '--outputs --detrend none' on outputs with a sensor offset fitted the
    offset as a mode at 0 (order 3 for a 2-state plant) in silence; it warns in flag terms."""
    path, _, _, _ = table(tmp_path, 0, samples=1500)
    rows = path.read_text().splitlines()
    for k in range(1, len(rows)):
        cells = rows[k].split(",")
        cells[1] = repr(float(cells[1]) + 40.0)          # x1 read with a 40-unit offset
        rows[k] = ",".join(cells)
    (tmp_path / "offset.csv").write_text("\n".join(rows) + "\n")
    argv = [tmp_path / "offset.csv", "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3]
    assert identify(tmp_path, *argv, "--detrend", "none") == 0
    err = capsys.readouterr().err
    assert "with --detrend none a constant output offset" in err and "--detrend auto" in err
    assert identify(tmp_path, *argv) == 0
    assert "constant output offset is fitted as" not in capsys.readouterr().err


def test_outputs_detrend_linear_fits_a_drifting_sensor(tmp_path, capsys):
    """Issue 19: '--outputs --detrend linear' on a sensor drifting by 2 x its rms: the default
    warns that the drift looks like a state; linear fits each experiment's line with the plant
    (no warning, the delays right) and the model file says so."""
    from dmdidc import OutputDMDidc

    path, plant, X, _ = table(tmp_path, 0, samples=1500)
    drift = 2.0 * X[0].std() * np.linspace(0.0, 1.0, X.shape[1])
    rows = path.read_text().splitlines()
    for k in range(1, len(rows)):
        cells = rows[k].split(",")
        cells[1] = repr(float(cells[1]) + float(drift[k - 1]))
        rows[k] = ",".join(cells)
    (tmp_path / "drift.csv").write_text("\n".join(rows) + "\n")
    argv = [tmp_path / "drift.csv", "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3]
    assert identify(tmp_path, *argv) == 0
    assert "a drift of the outputs" in capsys.readouterr().err
    assert identify(tmp_path, *argv, "--detrend", "linear") == 0
    out, err = capsys.readouterr()
    assert "drift" not in err and "output trend: each experiment's line" in out
    est = OutputDMDidc.load(tmp_path / "model.json")
    assert est.detrend == "linear" and est.order_ == 2
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.1 * 2.0)


def test_outputs_with_interpolated_inputs_warn_and_name_drop(tmp_path, capsys):
    """Issue 19: '--outputs --missing interpolate' filled lost input cells with straight lines
    the plant never received, and only the residual checks hinted at it; the command now
    says how many and names --missing drop, which splits there (and says nothing of it)."""
    path, _, _, _ = table(tmp_path, 1, samples=1200)
    rows = path.read_text().splitlines()
    for k in (301, 302, 303, 801):                      # data rows (row 0 is the header)
        cells = rows[k].split(",")
        cells[3] = ""                                   # u1 lost
        rows[k] = ",".join(cells)
    (tmp_path / "lost.csv").write_text("\n".join(rows) + "\n")
    argv = [tmp_path / "lost.csv", "--inputs", "u1,u2", "--outputs", "x1", "--max-delay", 3]
    assert identify(tmp_path, *argv, "--missing", "interpolate") == 0
    err = capsys.readouterr().err
    assert "4 input value(s) were interpolated (--missing interpolate)" in err
    assert "Remedy: --missing drop" in err
    assert identify(tmp_path, *argv, "--missing", "drop") == 0
    assert "were interpolated" not in capsys.readouterr().err


def test_states_with_interpolated_inputs_warn_and_name_drop(tmp_path, capsys):
    # The state fit (no --outputs) says it too: the regression reads the straight lines as
    # state noise.
    path, _, _, _ = table(tmp_path, 1, samples=1200)
    rows = path.read_text().splitlines()
    for k in (301, 302, 303, 801):
        cells = rows[k].split(",")
        cells[3] = ""
        rows[k] = ",".join(cells)
    (tmp_path / "lost.csv").write_text("\n".join(rows) + "\n")
    argv = [tmp_path / "lost.csv", "--inputs", "u1,u2", "--max-delay", 3]
    assert identify(tmp_path, *argv, "--missing", "interpolate") == 0
    err = capsys.readouterr().err
    assert "4 input value(s) were interpolated (--missing interpolate)" in err
    assert "state noise" in err and "Remedy: --missing drop" in err
    assert identify(tmp_path, *argv, "--missing", "drop") == 0
    assert "were interpolated" not in capsys.readouterr().err


def test_outliers_are_placed_by_the_data_segment_after_short_ones_are_left_out(tmp_path,
                                                                               capsys):
    """The outlier list with --missing drop names the data's segments (as the 'dropped'
    note counts them), not the fit's: a first segment shorter than one window is left out
    of the fit and must not shift the numbering."""
    path, _, X, _ = table(tmp_path, 0, samples=1500)
    rows = path.read_text().splitlines()
    for k, column in ((10, 1), (1000, 1)):          # gaps: segments 0-9, 11-999, 1001-1500
        cells = rows[1 + k].split(",")
        cells[column] = ""
        rows[1 + k] = ",".join(cells)
    cells = rows[1 + 1500 - 200].split(",")         # sample 1300: 299 of the third segment
    cells[1] = repr(float(cells[1]) + 0.5 * float(np.abs(X[0]).max()) + 3.0)
    rows[1 + 1300] = ",".join(cells)
    (tmp_path / "gaps.csv").write_text("\n".join(rows) + "\n")
    assert identify(tmp_path, tmp_path / "gaps.csv", "--inputs", "u1,u2", "--outputs", "x1",
                    "--max-delay", 3, "--missing", "drop") == 0
    out = capsys.readouterr().out
    listed = out.split("outlier samples (")[1].split("\n")[0].split(": ")[1].split(", ")
    assert "2:299" in listed, out


def test_outputs_model_file_keeps_the_signal_names(tmp_path):
    """Review finding: the output model JSON had no signal names or units (the state fit's
    model file has them); now OutputDMDidc.save(signals=) records the CSV header's."""
    from dmdidc import OutputDMDidc
    from dmdidc.errors import DimensionError

    path, _, _, _ = table(tmp_path, 0, samples=1500)
    text = path.read_text().replace("time,x1,x2,u1,u2", "time,x1 [degC],x2,u1 [kW],u2", 1)
    (tmp_path / "units.csv").write_text(text)
    assert identify(tmp_path, tmp_path / "units.csv", "--inputs", "u1,u2", "--outputs", "x1",
                    "--max-delay", 3) == 0
    est = OutputDMDidc.load(tmp_path / "model.json")
    assert est.signals_ == {"outputs": ["x1"], "output_units": ["degC"],
                            "inputs": ["u1", "u2"], "input_units": ["kW", ""]}
    with pytest.raises(DimensionError, match="signals"):
        est.save(tmp_path / "bad.json", signals={"inputs": ["u1"]})


@pytest.mark.parametrize("seed", range(3))
def test_a_pandas_index_column_is_left_out_and_the_plant_identified(tmp_path, capsys, seed):
    """Review finding 2: ``DataFrame.to_csv``'s unnamed index (0, 1, 2, ...) was refused as an
    ambiguous time column, with --states and with --time ignore too."""
    path, plant, X, U = table(tmp_path, seed)
    rows = path.read_text().splitlines()
    indexed = [",".join(["", *rows[0].split(",")[1:]])]
    indexed += [",".join([str(k), *row.split(",")[1:]]) for k, row in enumerate(rows[1:])]
    path.write_text("\n".join(indexed) + "\n")          # time -> pandas' index column
    for extra in ([], ["--states", "x1,x2"], ["--time", "ignore"]):
        assert identify(tmp_path, path, "--inputs", "u1,u2", "--dt", 2.0, "--max-delay", 3,
                        *extra) == 0
        model = DelayedPlant.load(tmp_path / "model.json")
        assert model.n_states == 2 and model.dt == 2.0
        np.testing.assert_array_equal(model.delay_steps, plant.delay_steps)
        printed = capsys.readouterr().out
        assert "states: '', " not in printed and ("a row index" in printed) == (extra == [])
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 3) == 2   # no --dt
    printed = capsys.readouterr()
    assert "a row index" in printed.out and "give --dt" in printed.err


@pytest.mark.parametrize("seed", range(3))
def test_a_pandas_index_beside_the_time_column_is_left_out(tmp_path, capsys, seed):
    """Audit finding: ``,time,x1,x2,u1,u2`` (``DataFrame.to_csv`` of a frame with a time
    column) printed ``states: '', 'x1', 'x2'`` and fitted the index as a state."""
    path, plant, X, U = table(tmp_path, seed)
    rows = path.read_text().splitlines()
    indexed = ["," + rows[0]] + [f"{k},{row}" for k, row in enumerate(rows[1:])]
    path.write_text("\n".join(indexed) + "\n")          # pandas' index before the time
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 3) == 0
    model = DelayedPlant.load(tmp_path / "model.json")
    assert model.n_states == 2 and model.dt == 2.0           # the period from 'time'
    np.testing.assert_array_equal(model.delay_steps, plant.delay_steps)
    printed = capsys.readouterr().out
    assert "states: 'x1', 'x2'" in printed and "a row index" in printed
    # a named ramp first column beside the time is refused, as without one
    ramp = ["k" + line if n == 0 else f"{3 * (n - 1)}{line[line.index(','):]}"
            for n, line in enumerate(indexed)]
    path.write_text("\n".join(ramp) + "\n")
    assert identify(tmp_path, path, "--inputs", "u1,u2", "--max-delay", 3) == 2
    assert "beside the time column" in capsys.readouterr().err


def test_time_ignore_with_the_states_named_leaves_a_counter_beside_the_time_out(tmp_path,
                                                                             capsys):
    """Review finding: ``idx,time,...`` (a counter from 100, a clock that jumps 0.3 s once)
    with --states and --time ignore was refused, the remedy given the one applied; batch and
    --follow now give the model of the file without both columns."""
    path, plant, X, U = table(tmp_path, 4)
    rows = path.read_text().splitlines()
    half = len(rows) // 2
    stamped = ["idx," + rows[0]] + [
        f"{100 + k},{float(row.split(',', 1)[0]) + 0.3 * (k >= half)!r},{row.split(',', 1)[1]}"
        for k, row in enumerate(rows[1:])]
    path.write_text("\n".join(stamped) + "\n")
    (tmp_path / "plain.csv").write_text("\n".join(row.split(",", 1)[1] for row in rows) + "\n")
    named = ["--states", "x1,x2", "--inputs", "u1,u2", "--max-delay", 3, "--dt", 2.0]
    assert identify(tmp_path, path, *named[:4], "--max-delay", 3) == 2      # the clock jumps
    capsys.readouterr()
    assert identify(tmp_path, path, *named, "--time", "ignore") == 0
    assert "'time' of" in capsys.readouterr().out
    assert identify(tmp_path, tmp_path / "plain.csv", *named, "--time", "none",
                    out="plain.json") == 0
    for source, time, out in ((path, "ignore", "follow.json"),
                              (tmp_path / "plain.csv", "none", "plain_follow.json")):
        assert main(["identify", "--follow", str(source), *map(str, named), "--time", time,
                     "--idle-timeout", "0.05", "--poll", "0.01",
                     "--out", str(tmp_path / out)]) == 0
    capsys.readouterr()
    for ours, theirs in (("model.json", "plain.json"), ("follow.json", "plain_follow.json")):
        model, plain = (DelayedPlant.load(tmp_path / name) for name in (ours, theirs))
        np.testing.assert_array_equal(model.delay_steps, plain.delay_steps)
        np.testing.assert_array_equal(model.A_d, plain.A_d)


@pytest.mark.parametrize("seed", range(2))
def test_a_time_tolerance_with_no_stamps_to_check_is_refused_saying_why(tmp_path, capsys, seed):
    """An option that would not act is refused: --time-tolerance on an .npz, or on a table
    whose time column is not read, was silently accepted."""
    path, _, X, U = table(tmp_path, seed)
    np.savez(tmp_path / "data.npz", X=X, U=U)
    argv = ["--max-delay", 3, "--time-tolerance", 0.3]
    for given, why in [([tmp_path / "data.npz", "--dt", 2], "is an .npz archive"),
                       ([path, "--inputs", "u1,u2", "--time", "ignore", "--dt", 2],
                        "without a time column"),
                       ([path, "--inputs", "u1,u2", "--time", "none", "--dt", 2],
                        "without a time column")]:
        assert identify(tmp_path, *given, *argv) != 0
        err = capsys.readouterr().err
        assert "--time-tolerance 0.3 bounds the jitter of a time column's stamps" in err
        assert why in err and "drop --time-tolerance" in err
    assert identify(tmp_path, path, "--inputs", "u1,u2", *argv) == 0      # stamps: it acts
    assert "error" not in capsys.readouterr().err


def test_a_time_tolerance_acts_if_any_client_file_has_stamps(tmp_path):
    from simulations.data_preparation import read_identification_data, refuse_idle_tolerance

    path, _, X, U = table(tmp_path, 0)
    np.savez(tmp_path / "data.npz", X=X, U=U)
    timed = read_identification_data(path, inputs="u1,u2", time_tolerance=0.3)
    even = read_identification_data(tmp_path / "data.npz", dt=2.0)
    assert timed.time_column.startswith("'time' of") and even.time_column == ""
    refuse_idle_tolerance(0.3, [even, timed])                  # acts on one: accepted
    refuse_idle_tolerance(None, [even])                        # not given: nothing to refuse
    with pytest.raises(ParameterError, match="is an .npz archive"):
        refuse_idle_tolerance(0.3, [even, even])


def test_the_missing_help_says_every_fit_warns_of_interpolated_inputs(capsys):
    with pytest.raises(SystemExit):
        main(["identify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the state fit and the --outputs fit alike" in text
    assert "(with --outputs it warns)" not in text
    assert "#N/A" in text and "'time_ms'" in text


@pytest.mark.parametrize("seed", range(2))
def test_several_data_files_are_experiments_fitted_together(tmp_path, capsys, seed):
    # a user with one file per experiment passes them all (argparse refused the second one)
    import json

    first, plant, _, _ = table(tmp_path, seed, samples=300, name="a.csv")
    rng = np.random.default_rng(100 + seed)
    U = random_excitation(2, 300, rng=rng)
    X = plant.simulate(rng.standard_normal(2), U) + 1e-4 * rng.standard_normal((2, 301))
    inputs = np.vstack([U.T, np.full((1, 2), np.nan)])
    np.savetxt(tmp_path / "b.csv", np.column_stack([2.0 * np.arange(301), X.T, inputs]),
               delimiter=",", header="time,x1,x2,u1,u2", comments="", fmt="%.17g")
    assert identify(tmp_path, first, tmp_path / "b.csv", "--inputs", "u1,u2",
                    "--max-delay", 3) == 0
    model = json.loads((tmp_path / "model.json").read_text())
    assert np.allclose(model["delay"], plant.delay, atol=0.05 * plant.dt)
    text = (tmp_path / "model.json").read_text()
    assert '"experiments": 2' in text and "b.csv" in text
    printed = capsys.readouterr().out
    assert "a.csv: " in printed and "b.csv: " in printed
    # files that measure other signals or units are refused, naming both
    np.savetxt(tmp_path / "c.csv", np.column_stack([2.0 * np.arange(301), X.T, inputs]),
               delimiter=",", header="time,x1 [K],x2,u1,u2", comments="", fmt="%.17g")
    assert identify(tmp_path, first, tmp_path / "c.csv", "--inputs", "u1,u2",
                    "--max-delay", 3, out="other.json") == 2
    assert re.search(r"c\.csv'.*state units.*same signals in the same units",
                     capsys.readouterr().err)
    # an error while reading one of them names that file
    text = (tmp_path / "b.csv").read_text().splitlines()
    text[50] = ",".join(text[50].split(",")[:2] + ["", *text[50].split(",")[3:]])
    (tmp_path / "d.csv").write_text("\n".join(text) + "\n")
    assert identify(tmp_path, first, tmp_path / "d.csv", "--inputs", "u1,u2",
                    "--max-delay", 3, out="gap.json") == 2
    assert re.search(r"error: \S*d\.csv: .*missing", capsys.readouterr().err)
