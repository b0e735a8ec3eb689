"""Columns by name, the time column and missing samples (issue 18 item 4, issue 20 CLI)."""

import numpy as np
import pytest

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from dmdidc import DelayedPlant, random_excitation
from simulations.data_preparation import read_identification_data

SEEDS = range(6)


def record(seed, samples=60):
    """A random stable 2-state, 2-input plant's record (t, X, U), delay 2.5 s, T = 2 s."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2)) - 1.5 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)), 2.5, 2.0)
    U = random_excitation(2, samples, rng=rng)
    X = plant.simulate(np.zeros(2), U) + 300.0                 # absolute units
    return 2.0 * np.arange(samples + 1) + 1000.0, X, U


def write_table(path, t, X, U, header="time,x1,x2,u1,u2"):
    inputs = np.vstack([U.T, np.full((1, U.shape[0]), np.nan)])   # no input after the record
    rows = np.column_stack([t, X.T, inputs]) if t is not None else np.column_stack([X.T, inputs])
    np.savetxt(path, rows, delimiter=",", header=header, comments="", fmt="%.17g")
    return path


@pytest.mark.parametrize("seed", SEEDS)
def test_a_named_time_column_is_the_time_never_a_state(tmp_path, seed):
    t, X, U = record(seed)
    path = write_table(tmp_path / "log.csv", t, X, U)
    data = read_identification_data(path, inputs="u1,u2")
    np.testing.assert_array_equal(data.X[0], X)
    np.testing.assert_array_equal(data.U[0], U)
    assert data.dt == pytest.approx(2.0, rel=1e-12)
    assert any("'time' of" in note and "is the time" in note for note in data.notes)


@pytest.mark.parametrize("seed", SEEDS)
def test_columns_by_name_in_any_order_and_by_number(tmp_path, seed):
    t, X, U = record(seed)
    path = write_table(tmp_path / "log.csv", t, X, U)
    data = read_identification_data(path, inputs="u2,u1", states="x2", dt=2.0)
    np.testing.assert_array_equal(data.X[0], X[1:])
    np.testing.assert_array_equal(data.U[0], U[::-1])
    numbered = read_identification_data(path, inputs="4,5", states="2,3")
    np.testing.assert_array_equal(numbered.X[0], X)


def test_time_columns_in_two_files_are_dropped_and_must_agree(tmp_path):
    t, X, U = record(0)
    np.savetxt(tmp_path / "x.csv", np.column_stack([t, X.T]), delimiter=",", header="t,a,b",
               comments="", fmt="%.17g")
    np.savetxt(tmp_path / "u.csv", np.column_stack([t[:-1], U.T]), delimiter=",",
               header="timestamp,u1,u2", comments="", fmt="%.17g")
    data = read_identification_data(states=tmp_path / "x.csv", inputs=tmp_path / "u.csv")
    assert data.X[0].shape == X.shape and data.U[0].shape == U.shape and data.dt == 2.0
    np.savetxt(tmp_path / "u.csv", np.column_stack([t[:-1] + 1.0, U.T]), delimiter=",",
               header="timestamp,u1,u2", comments="", fmt="%.17g")
    with pytest.raises(ParameterError, match="must share their time stamps"):
        read_identification_data(states=tmp_path / "x.csv", inputs=tmp_path / "u.csv")


def test_an_unnamed_clock_column_is_refused_as_ambiguous_and_time_decides(tmp_path):
    t, X, U = record(1)
    np.savetxt(tmp_path / "x.csv", np.column_stack([t, X.T]), delimiter=",", fmt="%.17g")
    np.savetxt(tmp_path / "u.csv", U.T, delimiter=",", fmt="%.17g")
    pair = {"states": tmp_path / "x.csv", "inputs": tmp_path / "u.csv"}
    with pytest.raises(ParameterError, match=r"column 1 of .*x.csv' increases by the same step.*"
                                             r"--time 1 to read it as the time, --time ignore "
                                             r"to leave it out unread \(with --dt\), or --time "
                                             r"none if it is a signal"):
        read_identification_data(**pair, dt=2.0)
    assert read_identification_data(**pair, time="1").X[0].shape == X.shape
    assert read_identification_data(**pair, time="none", dt=2.0).X[0].shape == (3, X.shape[1])


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.__setitem__(7, t[6]), r"line 9 repeats the time 1012 s of line 8"),
    (lambda t: t.__setitem__(7, t[6] - 1), r"line 9 goes back from the time 1012 s of line 8"),
    (lambda t: t.__setitem__(slice(7, None), t[7:] + 0.5), r"line 9 \(the time advances by 2.5 s"),
])
def test_bad_timestamps_are_refused_naming_the_line(tmp_path, change, message):
    t, X, U = record(2)
    change(t)
    path = write_table(tmp_path / "log.csv", t, X, U)
    with pytest.raises(ParameterError, match=message):
        read_identification_data(path, inputs="u1,u2")


@pytest.mark.parametrize(("unit", "factor"), [("ms", 1e3), ("min", 1 / 60)])
def test_times_in_a_column_unit_are_quoted_in_seconds_with_their_unit(tmp_path, unit, factor):
    """Found in review: a 'time [ms]' column's times were quoted converted to seconds without
    a unit ('--dt 500 disagrees ..., which advances by 0.5 per row' of a column stepping by
    500)."""
    t, X, U = record(4)
    path = write_table(tmp_path / "log.csv", t * factor, X, U,
                       header=f"time [{unit}],x1,x2,u1,u2")
    with pytest.raises(ParameterError, match=r"which advances by 2 s per row"):
        read_identification_data(path, inputs="u1,u2", dt=500)
    t[7] = t[6]
    path = write_table(tmp_path / "log.csv", t * factor, X, U,
                       header=f"time [{unit}],x1,x2,u1,u2")
    with pytest.raises(ParameterError, match=r"repeats the time 1012 s of line 8 \(got 1012 s\)"):
        read_identification_data(path, inputs="u1,u2")


def test_dt_must_agree_with_the_time_column(tmp_path):
    t, X, U = record(3)
    path = write_table(tmp_path / "log.csv", t, X, U)
    with pytest.raises(ParameterError, match="--dt 0.5 disagrees with 'time'"):
        read_identification_data(path, inputs="u1,u2", dt=0.5)


@pytest.mark.parametrize(("options", "message"), [
    ({"inputs": "u1,valve"}, r"'valve' is not a column of .* \(it has columns time, x1, x2"),
    ({"inputs": "u1,u1"}, "names 'u1' twice"),
    ({"inputs": "u1", "states": "x1,u1"}, "column 'u1' of .* is in both --states and --inputs"),
    ({"inputs": "u1", "states": "time,x1"}, "includes the time column 'time'"),
    ({}, "is a CSV table: give --inputs COLUMNS .* or --inputs none for a record without"),
    ({"inputs": "none", "outputs": "x1"}, "--outputs 'x1' with no inputs: output identification"),
    ({"inputs": "u1", "outputs": "x1", "states": "x2"}, "give --outputs .* or --states"),
    ({"inputs": "u1", "missing": "guess"}, "missing must be one of"),
])
def test_column_mistakes_name_the_column_and_what_the_file_has(tmp_path, options, message):
    t, X, U = record(4)
    path = write_table(tmp_path / "log.csv", t, X, U)
    with pytest.raises(ParameterError, match=message):
        read_identification_data(path, **options)


def test_boolean_inputs_are_refused_in_csv_and_npz(tmp_path):
    (tmp_path / "log.csv").write_text("time,x,valve\n0,1,true\n1,2,false\n2,3,true\n")
    with pytest.raises(ParameterError, match="line 2: 'true' is a boolean; write on/off"):
        read_identification_data(tmp_path / "log.csv", inputs="valve")
    np.savez(tmp_path / "d.npz", X=np.zeros((1, 4)), U=np.array([[True, False, True]]))
    with pytest.raises(ParameterError, match=r"U is boolean; .*U.astype\(float\)"):
        read_identification_data(tmp_path / "d.npz")


def with_gaps(tmp_path, seed, gaps):
    t, X, U = record(seed)
    X_missing = X.copy()
    for row, sample in gaps:
        X_missing[row, sample] = np.nan
    return write_table(tmp_path / "log.csv", t, X_missing, U), t, X, U


@pytest.mark.parametrize("seed", SEEDS)
def test_missing_samples_are_refused_by_default_with_how_many_and_where(tmp_path, seed):
    path, t, _, _ = with_gaps(tmp_path, seed, [(1, 10), (1, 11), (0, 30)])
    with pytest.raises(NonFiniteError) as info:
        read_identification_data(path, inputs="u1,u2")
    message = str(info.value)
    assert message.startswith("3 missing values")
    assert "'x1' at sample 30 (t = 1060)" in message
    assert "'x2' at samples 10, 11 (t = 1020, 1022)" in message
    assert "--missing drop" in message and "--missing interpolate" in message


@pytest.mark.parametrize("seed", SEEDS)
def test_interpolation_fills_interior_gaps_linearly_and_reports_them(tmp_path, seed):
    path, t, X, U = with_gaps(tmp_path, seed, [(1, 10), (1, 11), (0, 30)])
    data = read_identification_data(path, inputs="u1,u2", missing="interpolate")
    filled = data.X[0]
    assert filled.shape == X.shape and np.isfinite(filled).all()
    np.testing.assert_allclose(filled[1, 10:12], X[1, 9] + (X[1, 12] - X[1, 9]) * np.array(
        [1, 2]) / 3, rtol=1e-12)
    np.testing.assert_array_equal(np.delete(filled, [10, 11, 30], axis=1),
                                  np.delete(X, [10, 11, 30], axis=1))
    assert data.notes[-1].startswith("interpolated 3 missing values")


def test_interpolation_trims_edges_without_data(tmp_path):
    path, _, X, U = with_gaps(tmp_path, 0, [(0, 0), (0, 1), (1, 60)])
    data = read_identification_data(path, inputs="u1,u2", missing="interpolate")
    np.testing.assert_array_equal(data.X[0], X[:, 2:60])
    np.testing.assert_array_equal(data.U[0], U[:, 2:59])
    assert "trimmed 2 sample(s) at the start and 1 at the end" in data.notes[-1]


@pytest.mark.parametrize("seed", SEEDS)
def test_drop_splits_the_record_into_experiments_at_the_gaps(tmp_path, seed):
    path, _, X, U = with_gaps(tmp_path, seed, [(1, 20), (0, 40), (1, 41)])
    data = read_identification_data(path, inputs="u1,u2", missing="drop")
    assert [x.shape[1] - 1 for x in data.X] == [19, 18, 18]
    for x, u in zip(data.X, data.U, strict=True):
        assert x.shape[1] == u.shape[1] + 1 and np.isfinite(x).all() and np.isfinite(u).all()
    np.testing.assert_array_equal(data.X[1], X[:, 21:40])
    np.testing.assert_array_equal(data.U[1], U[:, 21:39])
    assert "3 segments of 19, 18, 18 steps" in data.notes[-1]


def test_drop_says_the_samples_of_a_piece_too_short_to_keep(tmp_path):
    """Three states, two inputs: two snapshots between close gaps have the shape of transposed
    data and are left out (dmdidc.missing's rule); the note counts the samples in no segment
    (it listed the segments kept only, and the piece was gone without a word)."""
    rng = np.random.default_rng(0)
    X, U = rng.standard_normal((3, 61)), rng.standard_normal((2, 61))
    X[0, [20, 23]] = np.nan
    rows = ["x1,x2,x3,u1,u2"] + [",".join("" if np.isnan(v) else repr(float(v)) for v in
                                          (*X[:, k], *U[:, k])) for k in range(61)]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n")
    data = read_identification_data(path, inputs="u1,u2", missing="drop", dt=1.0, time="none")
    assert [x.shape[1] for x in data.X] == [20, 37]
    kept = sum(x.shape[1] for x in data.X)
    assert f"({61 - kept} of 61 samples in none)" in data.notes[-1]


def test_a_missing_input_ends_a_segment_but_keeps_its_state(tmp_path):
    t, X, U = record(0, samples=20)
    U_missing = U.copy()
    U_missing[0, 9] = np.nan
    path = write_table(tmp_path / "log.csv", t, X, U_missing)
    data = read_identification_data(path, inputs="u1,u2", missing="drop")
    np.testing.assert_array_equal(data.X[0], X[:, :10])
    np.testing.assert_array_equal(data.X[1], X[:, 10:])


def test_npz_nan_is_missing_but_inf_is_never(tmp_path):
    _, X, U = record(5)
    X[0, 5] = np.nan
    np.savez(tmp_path / "d.npz", X=X, U=U)
    with pytest.raises(NonFiniteError, match="1 missing value"):
        read_identification_data(tmp_path / "d.npz", dt=2.0)
    assert len(read_identification_data(tmp_path / "d.npz", dt=2.0, missing="drop").X) == 2
    X[0, 5] = np.inf
    np.savez(tmp_path / "d.npz", X=X, U=U)
    with pytest.raises(NonFiniteError, match="NaN or infinite"):
        read_identification_data(tmp_path / "d.npz", dt=2.0, missing="interpolate")


def test_nothing_left_is_loud(tmp_path):
    t, X, U = record(0, samples=4)
    X[:, 1::2] = np.nan
    path = write_table(tmp_path / "log.csv", t, X, U)
    with pytest.raises(NonFiniteError, match="leaves no two consecutive samples"):
        read_identification_data(path, inputs="u1,u2", missing="drop")
    (tmp_path / "one.csv").write_text("time,x,u\n0,1,2\n")
    with pytest.raises(DimensionError, match="at least two samples"):
        read_identification_data(tmp_path / "one.csv", inputs="u")


AUTONOMOUS_NOTE = "no inputs (m = 0): an autonomous record, fitted as plain DMD"


@pytest.mark.parametrize("form", ["table", "two files", "npz"])
def test_a_record_without_inputs_is_read_in_every_form(tmp_path, form):
    # m = 0: --inputs none (a table or the states file alone), or an .npz without U
    t, X, _ = record(1)
    if form == "table":
        np.savetxt(tmp_path / "log.csv", np.column_stack([t, X.T]), delimiter=",",
                   header="time,x1,x2", comments="", fmt="%.17g")
        data = read_identification_data(tmp_path / "log.csv", inputs="none")
    elif form == "two files":
        np.savetxt(tmp_path / "x.csv", X.T, delimiter=",", fmt="%.17g")
        data = read_identification_data(states=str(tmp_path / "x.csv"), inputs="None", dt=2.0)
    else:
        np.savez(tmp_path / "d.npz", X=X)
        data = read_identification_data(tmp_path / "d.npz", dt=2.0)
    np.testing.assert_array_equal(data.X[0], X)
    assert data.U[0].shape == (0, X.shape[1] - 1)
    assert data.dt == pytest.approx(2.0, rel=1e-12)
    assert any(AUTONOMOUS_NOTE in note for note in data.notes)


def test_records_with_inputs_get_no_autonomous_note(tmp_path):
    t, X, U = record(2)
    data = read_identification_data(write_table(tmp_path / "log.csv", t, X, U), inputs="u1,u2")
    assert not any("no inputs" in note for note in data.notes)
    np.savez(tmp_path / "d.npz", X=X)
    with pytest.raises(ParameterError, match="--outputs 'all' with no inputs"):
        read_identification_data(tmp_path / "d.npz", outputs="all", dt=2.0)


@pytest.mark.parametrize("missing", ["drop", "interpolate"])
def test_outputs_as_long_as_the_inputs_with_missing_samples(tmp_path, missing):
    # Y (l, K) with U (m, K), a gap in the outputs: resolved into pieces OutputDMDidc takes
    _, X, U = record(3)
    Y = X[:1, :-1].copy()
    Y[0, 20] = np.nan
    np.savez(tmp_path / "d.npz", X=Y, U=U)
    data = read_identification_data(tmp_path / "d.npz", outputs="all", dt=2.0, missing=missing)
    for Yi, Ui in zip(data.X, data.U, strict=True):
        assert Yi.shape[1] in (Ui.shape[1], Ui.shape[1] + 1)
        assert np.all(np.isfinite(Yi)) and np.all(np.isfinite(Ui))


@pytest.mark.parametrize("seed", SEEDS)
def test_identify_names_a_constant_input_by_its_column(tmp_path, seed, capsys):
    from simulations.cli import main

    t, X, U = record(seed)
    U[seed % 2] = 8.0                                     # a heater held at 8 kW
    path = write_table(tmp_path / "log.csv", t, X, U, header="time,x1,x2,valve,heater")
    code = main(["identify", str(path), "--inputs", "valve,heater", "--max-delay", "3",
                 "--out", str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert code != 0 and not (tmp_path / "m.json").exists()
    name = ["valve", "heater"][seed % 2]
    assert f"input '{name}' is constant (8 in every sample)" in err and "--inputs" in err
