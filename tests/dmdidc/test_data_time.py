"""The time column of a data file, decided once (dmdidc.time_column) for read_data, the command
line's reader and follow_csv: which column, its unit, its jitter (walkthrough findings 2, 7, 8,
9, 18)."""

import warnings

import numpy as np
import pytest

from _toolbox.errors import ParameterError
from dmdidc import DelayedPlant, follow_csv, random_excitation, read_data
from dmdidc.time_column import TIME_TOLERANCE, TimeColumnWarning, check_tolerance
from simulations.data_preparation import read_identification_data

SEEDS = range(8)
UNITS = {"s": 1.0, "ms": 1e-3, "min": 60.0}


def plc_log(path, seed, *, unit="s", jitter=0.0, T=0.5, samples=120, time_name="timestamp",
            temperature="T_tank [degC]"):
    """A random stable 2-state, 2-input plant logged like a PLC: ';'-separated, an input
    first, states around an operating point, stamps in ``unit`` with Gaussian ``jitter``
    (fraction of T).  Returns the path, X, U and the stamps in seconds."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2)) - 2.0 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)), [0.3, 0.7], T)
    U = random_excitation(2, samples, rng=rng) + np.array([[45.0], [8.0]])
    X = plant.simulate(np.zeros(2), U) + np.array([[60.0], [1.2]])
    stamps = T * np.arange(samples + 1) + jitter * T * rng.standard_normal(samples + 1)
    lines = [f"{time_name} [{unit}];valve [%];{temperature};level [m];heater [kW]"]
    for k in range(samples + 1):
        u = U[:, k] if k < samples else (np.nan, np.nan)
        cells = [stamps[k] / UNITS[unit], u[0], X[0, k], X[1, k], u[1]]
        lines.append(";".join("" if np.isnan(c) else repr(float(c)) for c in cells))
    path.write_text("\n".join(lines) + "\n")
    return path, X, U, stamps


def quietly(function, *args, **kwargs):
    """``function(...)`` with every warning an error: a good case raises no false alarm."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return function(*args, **kwargs)


@pytest.mark.parametrize("seed", SEEDS)
def test_python_and_command_line_read_the_same_period_in_the_units_of_the_header(tmp_path,
                                                                                 seed):
    unit = list(UNITS)[seed % 3]
    jitter = [0.0, 0.006, 0.02][seed % 3]
    path, X, U, stamps = plc_log(tmp_path / "plc.csv", seed, unit=unit, jitter=jitter)
    if jitter:                                  # the jitter is said, the name needs no word
        with pytest.warns(TimeColumnWarning, match="jitter"):
            python = read_data(path, inputs=["valve", "heater"])
    else:
        python = quietly(read_data, path, inputs=["valve", "heater"])
    cli = read_identification_data(path, inputs="valve,heater")
    assert python.dt == cli.dt                      # one decision, the same number
    assert abs(python.dt - 0.5) <= 4 * jitter * 0.5 / 120 + 1e-9    # the span, not one step
    np.testing.assert_array_equal(python.X[0], X)
    np.testing.assert_array_equal(cli.X[0], X)
    np.testing.assert_array_equal(python.U[0], U)
    assert python.state_names == ("T_tank", "level")    # the time is never a state
    jittery = [n for n in cli.notes if "jitter" in n]
    assert bool(jittery) == (jitter > 0)
    if jitter:
        measured = np.max(np.abs(np.diff(stamps) - python.dt))
        assert f"{100 * measured / python.dt:.2g} % of T" in jittery[0]
        assert f"tolerance of {100 * TIME_TOLERANCE:g} % of T" in jittery[0]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_named_clean_time_column_reads_without_a_warning(tmp_path, seed):
    path, X, _, _ = plc_log(tmp_path / "plc.csv", seed, unit="ms")
    data = quietly(read_data, path, inputs=["valve [%]", "heater [kW]"], time="timestamp [ms]")
    assert data.dt == pytest.approx(0.5, rel=1e-12)         # ms read as ms, not seconds
    np.testing.assert_array_equal(data.X[0], X)
    assert data.input_units == ("%", "kW")
    kept = read_data(path, inputs=["valve", "heater"], time=None, dt=0.5)
    assert kept.state_names[0] == "timestamp"               # time=None: a signal, as asked


@pytest.mark.parametrize("seed", SEEDS)
def test_a_temperature_named_t_is_a_signal_in_both_readers(tmp_path, seed):
    # 'T [degC]' is no time unit; a bare 'T' that goes up and down does not increase
    header = ["T [degC]", "T"][seed % 2]
    path, X, _, _ = plc_log(tmp_path / "plc.csv", seed, temperature=header)
    rows = path.read_text().splitlines()
    path.write_text("\n".join(";".join(r.split(";")[1:]) for r in rows) + "\n")  # no stamps
    with pytest.warns(TimeColumnWarning, match="'T' is named like a time column but is a "
                                               "signal"):
        python = read_data(path, inputs=["valve", "heater"], dt=0.5)
    cli = read_identification_data(path, inputs="valve,heater", dt=0.5)
    assert python.state_names == ("T", "level") and cli.state_names == ("T", "level")
    np.testing.assert_array_equal(python.X[0], X)
    np.testing.assert_array_equal(cli.X[0], X)
    assert any("named like a time column but is a signal" in n for n in cli.notes)


def test_an_increasing_t_off_the_grid_is_refused_saying_why_it_was_taken(tmp_path):
    path = tmp_path / "heat.csv"
    path.write_text("T,level,u\n20,1,1\n21,1.1,0\n23.5,1.3,1\n24,1.2,0\n")  # T warms up
    with pytest.raises(ParameterError, match=r"taken as the time because it is named 'T'.*"
                                             r"--time none.*--time COL"):
        read_identification_data(path, inputs="u")
    with pytest.raises(ParameterError, match=r"named 'T'.*time=None"):
        read_data(path, inputs="u")
    data = read_identification_data(path, inputs="u", time="none", dt=1.0)
    assert data.state_names == ("T", "level")


@pytest.mark.parametrize("seed", SEEDS)
def test_jitter_beyond_the_tolerance_is_refused_naming_the_option(tmp_path, seed):
    path, X, _, _ = plc_log(tmp_path / "plc.csv", seed, jitter=0.08)
    # how many steps are off, the first and the largest: a typo or a clock
    with pytest.raises(ParameterError, match=r"\d+ of \d+ time steps are more than 0.1 periods "
                                             r"off a whole number of periods.*(the first at "
                                             r"line \d+.*the largest at|at) line \d+.*tolerance "
                                             r"is 0.1 periods \(--time-tolerance"):
        read_identification_data(path, inputs="valve,heater")
    with pytest.raises(ParameterError, match=r"time_tolerance="):
        read_data(path, inputs="valve", time="timestamp")
    wide = read_identification_data(path, inputs="valve,heater", time_tolerance=0.45)
    assert abs(wide.dt - 0.5) < 0.01
    np.testing.assert_array_equal(wide.X[0], X)
    ignored = read_identification_data(path, inputs="valve,heater", time="ignore", dt=0.5)
    assert ignored.dt == 0.5 and ignored.state_names == ("T_tank", "level")
    assert any("--time ignore" in note for note in ignored.notes)


def test_a_gap_of_whole_periods_is_refused_by_default_with_the_policies_that_take_it(
        tmp_path):
    path, _, _, _ = plc_log(tmp_path / "plc.csv", 0, jitter=0.005)
    rows = path.read_text().splitlines()
    path.write_text("\n".join(rows[:40] + rows[43:]) + "\n")       # three rows lost
    with pytest.raises(ParameterError, match="line 41.*skips 3 sample.*--missing drop"):
        read_identification_data(path, inputs="valve,heater")
    with pytest.raises(ParameterError, match="skips 3 sample.*missing='drop'"):
        read_data(path, inputs="valve", time="timestamp")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("missing", ["drop", "interpolate"])
def test_lost_rows_are_read_as_rows_of_empty_cells(tmp_path, seed, missing):
    """A log that skips rows (its stamps jump by whole periods) reads as the same log with
    those rows written as empty cells, by both readers: the same samples, the same split or
    filling, the same period; the note says how many were lost and where."""
    path, X, U, stamps = plc_log(tmp_path / "plc.csv", seed, jitter=0.004 * (seed % 2))
    rows = path.read_text().splitlines()
    rng = np.random.default_rng(seed)
    first = int(rng.integers(20, 50))
    lost = sorted({first, first + 1, int(rng.integers(60, 100))})   # two gaps, 3 rows
    header, body = rows[0], rows[1:]
    empty = [";".join([row.split(";")[0]] + [""] * 4) if k in lost else row
             for k, row in enumerate(body)]
    skipped = [row for k, row in enumerate(body) if k not in lost]
    (tmp_path / "empty.csv").write_text("\n".join([header] + empty) + "\n")
    (tmp_path / "lost.csv").write_text("\n".join([header] + skipped) + "\n")
    for reader in ("python", "cli"):
        read = {}
        for name in ("empty", "lost"):
            file = tmp_path / f"{name}.csv"
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if reader == "python":
                    data = read_data(file, inputs=["valve", "heater"], missing=missing)
                    notes = [str(w.message) for w in caught]
                else:
                    data = read_identification_data(file, inputs="valve,heater",
                                                    missing=missing)
                    notes = list(data.notes)
            read[name] = data, notes
        (empty_data, _), (lost_data, notes) = read["empty"], read["lost"]
        assert abs(lost_data.dt - empty_data.dt) <= 1e-9 * empty_data.dt
        assert len(lost_data.X) == len(empty_data.X)
        for a, b in zip(lost_data.X + lost_data.U, empty_data.X + empty_data.U, strict=True):
            np.testing.assert_array_equal(a, b)
        assert any(f"skips {len(lost)} sample(s)" in note for note in notes), notes


def test_dt_must_agree_with_the_stamps_within_their_jitter(tmp_path):
    path, _, _, _ = plc_log(tmp_path / "plc.csv", 1, jitter=0.01)
    assert read_identification_data(path, inputs="valve,heater", dt=0.5).dt == 0.5
    with pytest.raises(ParameterError, match="--dt 0.51 disagrees"):
        read_identification_data(path, inputs="valve,heater", dt=0.51)
    with pytest.raises(ParameterError, match="dt=0.51 disagrees"):
        read_data(path, inputs="valve", time="timestamp", dt=0.51)


@pytest.mark.parametrize("bad", [0.0, 0.5, -0.1, float("nan"), "wide"])
def test_a_tolerance_outside_zero_to_half_a_period_is_refused(bad):
    with pytest.raises(ParameterError, match=r"time_tolerance=.*\(0, 0.5\)"):
        check_tolerance(bad)
    assert check_tolerance(None) == TIME_TOLERANCE


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_follow_reads_jittery_stamps_in_their_unit_and_the_period_from_their_span(tmp_path,
                                                                                 seed):
    path, X, U, _ = plc_log(tmp_path / "plc.csv", seed, unit="ms", jitter=0.01)
    chunks = list(follow_csv(path, inputs=["valve", "heater"], time="auto", poll=0.01,
                             idle_timeout=0.05, chunk=1000, report=lambda message: None))
    assert abs(chunks[-1].dt - 0.5) <= 4 * 0.01 * 0.5 / 120 + 1e-9
    np.testing.assert_array_equal(np.concatenate([c.X for c in chunks], axis=1)[:, -1],
                                  X[:, -1])
    assert sum(c.U.shape[1] for c in chunks) == U.shape[1]      # no stamp refused, none lost
    path.write_text(path.read_text().replace("timestamp [ms]", "timestamp [degC]"))
    with pytest.raises(ParameterError, match="unit 'degC'.*named 'timestamp'"):
        list(follow_csv(path, inputs=["valve", "heater"], time="auto", poll=0.01,
                        idle_timeout=0.05, report=lambda message: None))


def test_a_period_given_without_stamps_is_stated_and_ignore_works_for_two_files(tmp_path):
    path, X, U, _ = plc_log(tmp_path / "plc.csv", 2)
    rows = [r.split(";") for r in path.read_text().splitlines()]
    (tmp_path / "x.csv").write_text("\n".join(",".join([r[0], r[2], r[3]]) for r in rows))
    (tmp_path / "u.csv").write_text("\n".join(",".join([r[1], r[4]]) for r in rows[:-1]))
    data = read_identification_data(states=tmp_path / "x.csv", inputs=tmp_path / "u.csv",
                                    time="ignore", dt=500.0)      # a period in ms, by mistake
    np.testing.assert_array_equal(data.X[0], X)
    assert any("T = 500 s (--dt; no time column" in note for note in data.notes)
    with pytest.raises(ParameterError, match="--time ignore: .* has no column named time"):
        read_identification_data(states=tmp_path / "u.csv", inputs="none", time="ignore",
                                 dt=0.5)


def test_the_time_column_is_never_also_a_signal(tmp_path):
    path, _, _, _ = plc_log(tmp_path / "plc.csv", 3)
    with pytest.raises(ParameterError, match="is the time column and a signal.*time=None"):
        read_data(path, inputs=["valve"], states=["timestamp [s]", "level"], time="timestamp")
    data = read_data(path, inputs=["valve"], states=["timestamp", "level"], time=None, dt=0.5)
    assert data.state_units == ("s", "m")


def first_column_log(path, seed, *, first, header=""):
    """A random plant's record written with ``first`` as its first column under ``header``
    (``""`` and a row count: what pandas' ``DataFrame.to_csv`` writes), then the states
    x0..x2 and the inputs u0, u1 (a step hold: the last row's inputs repeat).  Returns the
    path, X and U."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((3, 3)) - 2.5 * np.eye(3)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((3, 2)), [0.2, 0.6], 0.5)
    U = random_excitation(2, 150, rng=rng)
    X = plant.simulate(np.zeros(3), U)
    held = np.column_stack([U, U[:, -1]])
    np.savetxt(path, np.column_stack([first(X.shape[1]), X.T, held.T]), delimiter=",",
               header=f"{header},x0,x1,x2,u0,u1", comments="", fmt="%.17g")
    return path, X, U


def row_index(rows):
    return np.arange(rows, dtype=float)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_pandas_row_index_is_left_out_in_both_readers(tmp_path, seed):
    path, X, U = first_column_log(tmp_path / "pandas.csv", seed, first=row_index)
    with pytest.warns(TimeColumnWarning, match="'' has no name .* a row index .* left out"):
        python = read_data(path, inputs=["u0", "u1"], dt=0.5)
    cli = read_identification_data(path, inputs="u0,u1", dt=0.5)
    for data in (python, cli):
        assert data.state_names == ("x0", "x1", "x2") and data.dt == 0.5
        np.testing.assert_array_equal(data.X[0], X)
        np.testing.assert_array_equal(data.U[0], U)
    assert any("a row index" in note for note in cli.notes)
    with pytest.raises(ParameterError, match=r"give dt=.*'', a row index, was left out; "
                                             r"time='' reads it as the time"):
        read_data(path, inputs=["u0", "u1"])
    # the states named: the index is simply not read, and nothing needs saying
    named = quietly(read_data, path, inputs=["u0", "u1"], states=["x0", "x1", "x2"], dt=0.5)
    np.testing.assert_array_equal(named.X[0], X)
    cli = read_identification_data(path, inputs="u0,u1", states="x0,x1,x2", dt=0.5)
    assert cli.state_names == ("x0", "x1", "x2")
    assert not any("index" in note for note in cli.notes)
    ignored = read_identification_data(path, inputs="u0,u1", time="ignore", dt=0.5)
    assert ignored.state_names == ("x0", "x1", "x2")
    assert any("left out (--time ignore)" in note for note in ignored.notes)


def timed_first_column_log(path, seed, *, header, first, period=0.5, unit=""):
    """:func:`first_column_log` with a time column ``time`` (stamps ``period`` apart, from
    100 s, in ``unit``) after the first column: what ``DataFrame.to_csv`` writes for a frame
    with a time column.  Returns the path, X and U."""
    first_column_log(path, seed, first=first, header=header)
    lines = path.read_text().splitlines()
    scale = {"": 1.0, "ms": 1e3}[unit]
    column = "time" + (f" [{unit}]" if unit else "")
    rows = [lines[0].replace(",", f",{column},", 1)]
    for k, line in enumerate(lines[1:]):
        cell, rest = line.split(",", 1)
        rows.append(f"{cell},{(100.0 + period * k) * scale!r},{rest}")
    path.write_text("\n".join(rows) + "\n")
    _, X, U = first_column_log(path.with_name("plain.csv"), seed, first=first, header=header)
    return path, X, U


@pytest.mark.parametrize("seed", SEEDS)
def test_a_pandas_row_index_beside_a_time_column_is_left_out_in_both_readers(tmp_path, seed):
    """Audit finding: header ``,time,x0,..`` (``DataFrame.to_csv`` of a frame with a time
    column) read the index as a state '' without a word; the index rule now holds whether or
    not a time column exists."""
    period, unit = [(0.5, ""), (0.25, "ms"), (2.0, "")][seed % 3]
    path, X, U = timed_first_column_log(tmp_path / "pandas.csv", seed, header="",
                                        first=row_index, period=period, unit=unit)
    with pytest.warns(TimeColumnWarning, match="'' has no name .* a row index .* left out"):
        python = read_data(path, inputs=["u0", "u1"])
    cli = read_identification_data(path, inputs="u0,u1")
    for data in (python, cli):
        assert data.state_names == ("x0", "x1", "x2")
        assert abs(data.dt - period) <= 1e-12 * period          # from the time column
        np.testing.assert_array_equal(data.X[0], X)
        np.testing.assert_array_equal(data.U[0], U)
    assert any("a row index" in note for note in cli.notes)
    # named as a state, the index is one (the rule is for columns named nowhere)
    named = quietly(read_data, path, inputs=["u0", "u1"], states=["", "x0"])
    np.testing.assert_array_equal(named.X[0][0], row_index(X.shape[1]))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_named_ramp_first_column_beside_a_time_column_is_refused(tmp_path, seed):
    """docs/workflow.md: a named first column that grows by one step and is named nowhere is
    refused as ambiguous, also when another column is the time; named as a signal it is one,
    and with every state named it is not read."""
    step = [0.1, 1.0, 2.5][seed % 3]
    path, X, U = timed_first_column_log(tmp_path / "ramp.csv", seed, header="ramp",
                                        first=lambda rows: step * np.arange(rows))
    with pytest.raises(ParameterError, match=r"'ramp' increases by the same step .* \(beside "
                                             r"the time column 'time'\): .* give time='ramp' .*"
                                             r"states=\[\.\.\.\] naming every state to leave "
                                             r"it out unread, or name it"):
        read_data(path, inputs=["u0", "u1"])
    with pytest.raises(ParameterError, match=r"beside the time column .* --time 1 to read it "
                                             r"as the time, --states naming every state"):
        read_identification_data(path, inputs="u0,u1")
    python = quietly(read_data, path, inputs=["ramp", "u0"])
    cli = read_identification_data(path, inputs="ramp,u0")
    for data in (python, cli):
        assert data.input_names == ("ramp", "u0") and data.dt == 0.5
        np.testing.assert_array_equal(data.U[0][0], step * np.arange(U.shape[1]))
    python = quietly(read_data, path, inputs=["u0", "u1"], states=["x0", "x1", "x2"])
    cli = read_identification_data(path, inputs="u0,u1", states="x0,x1,x2")
    for data in (python, cli):
        assert data.state_names == ("x0", "x1", "x2") and data.dt == 0.5
        np.testing.assert_array_equal(data.X[0], X)


@pytest.mark.parametrize("seed", SEEDS)
def test_time_ignore_with_every_state_named_leaves_a_steady_first_column_beside_the_time(
        tmp_path, seed):
    """Review finding: ``idx,time,x,u`` with a broken clock, every state named and the time
    ignored was refused as an ambiguous first column, its remedy the one already applied:
    with every state named the first column is not read, whether the time is ignored or not."""
    step = [1.0, 0.1, 2.5][seed % 3]
    path, X, U = timed_first_column_log(tmp_path / "idx.csv", seed, header="idx",
                                        first=lambda rows: 100.0 + step * np.arange(rows))
    lines = path.read_text().splitlines()
    jump = 1 + len(lines) // 2                       # the clock jumps 0.3 s once
    lines[jump:] = [f"{cell},{float(stamp) + 0.3!r},{rest}" for cell, stamp, rest in
                    (line.split(",", 2) for line in lines[jump:])]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParameterError, match="--time-tolerance|off the grid|jump|gap"):
        read_identification_data(path, inputs="u0,u1", states="x0,x1,x2")
    cli = read_identification_data(path, inputs="u0,u1", states="x0,x1,x2", time="ignore",
                                   dt=0.5)
    chunks = list(follow_csv(path, inputs=["u0", "u1"], states=["x0", "x1", "x2"],
                             time="ignore", dt=0.5, poll=0.01, idle_timeout=0.05,
                             report=lambda message: None))
    followed = np.concatenate([chunks[0].X[:, :1]] + [c.X[:, 1:] for c in chunks], axis=1)
    for data_X in (cli.X[0], followed):
        np.testing.assert_array_equal(data_X, X)
    assert cli.dt == chunks[-1].dt == 0.5
    assert any("'time' of" in n and "left out (--time ignore)" in n for n in cli.notes)
    # named nowhere, the first column would be read as a state: still refused
    with pytest.raises(ParameterError, match=r"'idx' of .*\(beside the time column .* --states "
                                             r"naming every state"):
        read_identification_data(path, inputs="u0,u1", time="ignore", dt=0.5)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_ramp_first_column_named_as_a_signal_is_one_and_unnamed_is_refused(tmp_path, seed):
    step = [0.1, 1.0, 2.5][seed % 3]
    path, X, U = first_column_log(tmp_path / "ramp.csv", seed, header="ramp",
                                  first=lambda rows: step * np.arange(rows))
    python = quietly(read_data, path, inputs=["ramp", "u0"], dt=0.5)
    cli = read_identification_data(path, inputs="ramp,u0", dt=0.5)
    for data in (python, cli):
        assert data.input_names == ("ramp", "u0")
        np.testing.assert_array_equal(data.U[0][0], step * np.arange(U.shape[1]))
        np.testing.assert_array_equal(data.X[0][:3], X)     # and u1, unnamed, a state
    state = quietly(read_data, path, inputs=["u0", "u1"], states=["ramp", "x0"], dt=0.5)
    assert state.state_names == ("ramp", "x0")
    with pytest.raises(ParameterError, match=r"'ramp' increases by the same step .* give "
                                             r"time='ramp' to read it as the time, "
                                             r"states=\[\.\.\.\] naming every state to leave "
                                             r"it out"):
        read_data(path, inputs=["u0", "u1"], dt=0.5)
    with pytest.raises(ParameterError, match=r"--time 1 to read it as the time, --time ignore "
                                             r"to leave it out unread"):
        read_identification_data(path, inputs="u0,u1", dt=0.5)
    ignored = read_identification_data(path, inputs="u0,u1", time="ignore", dt=0.5)
    assert ignored.state_names == ("x0", "x1", "x2")


def test_a_t_named_as_a_signal_is_one_and_a_named_time_column_is_still_found(tmp_path):
    path, X, U = first_column_log(tmp_path / "t.csv", 1, header="t",
                                  first=lambda rows: 20.0 + 0.5 * np.arange(rows))
    data = quietly(read_data, path, inputs=["u0", "u1"], states=["t", "x0"], dt=0.5)
    assert data.state_names == ("t", "x0")
    cli = read_identification_data(path, inputs="u0,u1", states="t,x0", dt=0.5)
    assert cli.state_names == ("t", "x0")
    # a genuine time column: found with the states named, in both readers, its period read
    path, X, U = first_column_log(tmp_path / "log.csv", 2, header="time [ms]",
                                  first=lambda rows: 500.0 * np.arange(rows))
    for kwargs in ({}, {"states": ["x0", "x1", "x2"]}):
        data = quietly(read_data, path, inputs=["u0", "u1"], **kwargs)
        assert data.dt == 0.5 and data.state_names == ("x0", "x1", "x2")
    cli = read_identification_data(path, inputs="u0,u1", states="x0,x1,x2")
    assert cli.dt == 0.5
    np.testing.assert_array_equal(cli.X[0], X)
