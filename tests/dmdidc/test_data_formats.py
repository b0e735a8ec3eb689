"""What real loggers and spreadsheets write into a CSV file, read by every batch reader
(``read_data`` and the command line's ``read_identification_data``) as the same numbers as the
clean file, with a note saying what was decided: a time unit in the name, a UTF-8 BOM, an
empty last column, quoted header cells, ``#N/A`` and ``-`` cells, tabs with decimal commas."""

import warnings

import numpy as np
import pytest

from _toolbox.errors import NonFiniteError, ParameterError
from dmdidc import DelayedPlant, random_excitation, read_data
from dmdidc.time_column import TimeColumnWarning
from simulations.data_preparation import read_identification_data

SEEDS = range(6)
HEADER = ["time", "x1", "x2", "u1", "u2"]


def record(seed, samples=80, T=0.5):
    """A random stable 2-state, 2-input plant's record: stamps in seconds, X (2, K+1), U (2, K)."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2)) - 2.0 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)), [0.3, 0.7], T)
    U = random_excitation(2, samples, rng=rng)
    X = plant.simulate(np.zeros(2), U) + np.array([[20.0], [1.5]])
    return T * np.arange(samples + 1), X, U


def cells(t, X, U, scale=1.0):
    """The rows of the table as text cells (the last row's inputs empty)."""
    rows = []
    for k in range(X.shape[1]):
        u = [repr(float(v)) for v in U[:, k]] if k < U.shape[1] else ["", ""]
        rows.append([repr(float(t[k] / scale)), *(repr(float(v)) for v in X[:, k]), *u])
    return rows


def write(path, header, rows, delimiter=",", end="", prefix=""):
    lines = [delimiter.join(header) + end] + [delimiter.join(r) + end for r in rows]
    path.write_text(prefix + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def both(path, cli=None, **options):
    """The record as read by read_data (``options``; with its warnings' text) and by the
    command line's reader (``cli`` options; with its notes): ``(X, U, dt, said)`` of each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        python = read_data(path, inputs=["u1", "u2"], **options)
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, TimeColumnWarning))
    cli = read_identification_data(path, inputs="u1,u2", **(cli or {}))
    return ((python.X[0], python.U[0], python.dt, said),
            (cli.X[0], cli.U[0], cli.dt, " ".join(cli.notes)))


def assert_same(read, X, U, T):
    got_X, got_U, dt, _ = read
    np.testing.assert_array_equal(got_X, X)
    np.testing.assert_array_equal(got_U, U)
    assert dt == pytest.approx(T, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("name", "unit", "scale"), [
    ("Time (ms)", "ms", 1e-3), ("time_ms", "ms", 1e-3), ("timestamp_us", "us", 1e-6),
    ("time (min)", "min", 60.0), ("time_d", "d", 86400.0)])
def test_a_time_unit_in_the_name_is_read_with_a_note(tmp_path, seed, name, unit, scale):
    t, X, U = record(seed)
    path = write(tmp_path / "log.csv", [name, *HEADER[1:]], cells(t, X, U, scale))
    for read in both(path):
        assert_same(read, X, U, 0.5)                 # not 1000x (ms read as seconds)
        assert f"{name!r} of " in read[3] and f"is read in {unit} from its name" in read[3]
    data = read_identification_data(path, inputs="u1,u2", time=name)      # named: the same
    assert data.dt == pytest.approx(0.5, rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_a_unit_in_brackets_wins_and_a_temperature_suffix_is_no_time(tmp_path, seed):
    t, X, U = record(seed)
    path = write(tmp_path / "log.csv", ["time_ms [s]", *HEADER[1:]], cells(t, X, U))
    for read in both(path, {"time": "time_ms"}, time="time_ms"):
        assert_same(read, X, U, 0.5)
        assert "from its name" not in read[3]
    # T_s (a surface temperature) that happens to increase is a signal, not the time in s
    path = write(tmp_path / "ts.csv", ["time", "T_s", "x2", "u1", "u2"],
                 [[r[0], repr(k + 1.0), *r[2:]] for k, r in enumerate(cells(t, X, U))])
    data = read_identification_data(path, inputs="u1,u2")
    assert data.state_names == ("T_s", "x2") and data.dt == pytest.approx(0.5, rel=1e-12)


def test_a_time_unit_in_parentheses_that_is_no_time_unit_is_refused(tmp_path):
    t, X, U = record(0)
    path = write(tmp_path / "log.csv", ["Time (ticks)", *HEADER[1:]], cells(t, X, U))
    with pytest.raises(ParameterError, match=r"'ticks' \(from its name; a unit in brackets"):
        read_identification_data(path, inputs="u1,u2")
    with pytest.raises(ParameterError, match="accepted time units: s, ms, us, min, h, d"):
        read_data(path, inputs=["u1", "u2"])


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize(("name", "unit", "scale"), [
    ("Time (sec)", "s", 1.0), ("Time (seconds)", "s", 1.0), ("TIME_MS", "ms", 1e-3),
    ("time (Hours)", "h", 3600.0), ("Timestamp (msec)", "ms", 1e-3), ("time_MIN", "min", 60.0)])
def test_a_time_unit_in_any_case_or_usual_spelling_is_read(tmp_path, seed, name, unit, scale):
    """A review: 'Time (sec)' and 'Time (seconds)' were refused (they read before the unit was
    taken from names), and time='TIME_MS' read as seconds (dt 500 s)."""
    t, X, U = record(seed)
    path = write(tmp_path / "log.csv", [name, *HEADER[1:]], cells(t, X, U, scale))
    for read in both(path):
        assert_same(read, X, U, 0.5)
        assert f"is read in {unit} from its name" in read[3]
    for data in (read_identification_data(path, inputs="u1,u2", time=name),
                 read_data(path, inputs=["u1", "u2"], time=name)):
        assert data.dt == pytest.approx(0.5, rel=1e-12)


def clean_and(tmp_path, seed, name, **write_options):
    """The clean record and a file of it written with ``write_options``."""
    t, X, U = record(seed)
    header = write_options.pop("header", HEADER)
    rows = write_options.pop("rows", cells(t, X, U))
    return X, U, write(tmp_path / name, header, rows, **write_options)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_utf8_byte_order_mark_is_skipped(tmp_path, seed):
    X, U, path = clean_and(tmp_path, seed, "bom.csv", prefix="\ufeff")   # Excel "CSV UTF-8"
    assert path.read_bytes()[:3] == b"\xef\xbb\xbf"
    for read in both(path):
        assert_same(read, X, U, 0.5)
        assert "\ufeff" not in read[3]
    data = read_identification_data(path, inputs="u1,u2", time="time")    # named as it reads
    assert data.state_names == ("x1", "x2")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("delimiter", [",", ";"])
def test_an_empty_last_column_without_a_name_is_left_out_with_a_note(tmp_path, seed, delimiter):
    X, U, path = clean_and(tmp_path, seed, "trailing.csv", delimiter=delimiter, end=delimiter)
    for read in both(path):
        assert_same(read, X, U, 0.5)                    # not 81 missing values of ''
        assert f"the last column has no name and every cell empty (each line ends in " \
               f"{delimiter!r}" in read[3]


def test_an_unnamed_column_with_values_is_still_read(tmp_path):
    t, X, U = record(0)
    rows = [[*r, repr(k + 0.5) if k % 2 else ""] for k, r in enumerate(cells(t, X, U))]
    path = write(tmp_path / "half.csv", [*HEADER, ""], rows)
    with pytest.raises(NonFiniteError, match="41 missing values \\('' at samples 0, 2"):
        read_identification_data(path, inputs="u1,u2")


@pytest.mark.parametrize("seed", SEEDS)
def test_quoted_header_cells_are_the_names(tmp_path, seed):
    X, U, path = clean_and(tmp_path, seed, "quoted.csv",
                           header=[f'"{n}"' for n in ("time [s]", *HEADER[1:])])
    for read in both(path):
        assert_same(read, X, U, 0.5)
    data = read_identification_data(path, inputs="u1,u2", states="x2,x1")
    np.testing.assert_array_equal(data.X[0], X[::-1])
    assert data.state_names == ("x2", "x1")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("token", ["#N/A", "-", "NA", "nan", "", "n/a", "NULL"])
def test_spreadsheet_missing_cells_are_missing_in_both_readers(tmp_path, seed, token):
    rng = np.random.default_rng(100 + seed)
    t, X, U = record(seed)
    rows = cells(t, X, U)
    lost = rng.choice(np.arange(5, 70), size=3, replace=False)
    column = int(rng.integers(1, 5))                    # a state or an input, never the time
    for k in lost:
        rows[k][column] = token
    path = write(tmp_path / "gaps.csv", HEADER, rows)
    expected = (X, U)[column > 2].copy()
    expected[(column - 1) % 2, lost] = np.nan
    python = read_data(path, inputs=["u1", "u2"], missing="interpolate")
    assert python.missing_report.n_missing == 3
    # placed where they were lost: the filled row is the linear interpolation over them
    row = expected[(column - 1) % 2]
    known = ~np.isnan(row)
    filled = np.interp(np.arange(row.size), np.flatnonzero(known), row[known])
    got = (python.X[0], python.U[0])[column > 2][(column - 1) % 2]
    np.testing.assert_allclose(got, filled, rtol=1e-12, atol=1e-12)
    cli = read_identification_data(path, inputs="u1,u2", missing="drop")
    assert f"dropped 3 missing values ('{HEADER[column]}' at samples " \
           f"{', '.join(map(str, sorted(lost)))} " in " ".join(cli.notes)
    with pytest.raises(NonFiniteError, match="3 missing values"):
        read_identification_data(path, inputs="u1,u2")


def test_a_row_starting_with_n_a_is_no_comment(tmp_path):
    t, X, U = record(1)
    rows = cells(t, X, U)
    header = ["x1", "x2", "u1", "u2"]                   # no time column: a row lost would hide
    rows = [r[1:] for r in rows]
    rows[10][0] = "#N/A"
    path = write(tmp_path / "first.csv", header, rows)
    data = read_identification_data(path, inputs="u1,u2", missing="interpolate", dt=0.5)
    assert data.X[0].shape == X.shape                   # the row is read, its gap filled
    assert "'x1' at sample 10" in data.notes[-1]


@pytest.mark.parametrize("delimiter", ["\t", ";"])
def test_decimal_commas_are_refused_naming_the_separator(tmp_path, delimiter):
    t, X, U = record(2)
    rows = [[c.replace(".", ",") for c in r] for r in cells(t, X, U)]
    path = write(tmp_path / "comma.csv", HEADER, rows, delimiter=delimiter)
    name = "tabs" if delimiter == "\t" else "';'"
    for read in (lambda: read_identification_data(path, inputs="u1,u2"),
                 lambda: read_data(path, inputs=["u1", "u2"])):      # one rule, one refusal
        with pytest.raises(ParameterError, match=f"uses {name} between values and ',' as "
                                                 f"decimal mark .*write '.' decimals"):
            read()


def test_read_data_names_the_files_own_line_after_blank_lines(tmp_path):
    """Blank lines are skipped, but read_data numbered the rows after them (a review: 'line 12'
    for the file's line 13); the command line's reader was right."""
    t, X, U = record(0)
    rows = cells(t, X, U)
    rows[10][1] = "oops"                            # file line 13 once two blank lines precede
    lines = [",".join(HEADER)] + [",".join(r) for r in rows]
    lines[3:3] = ["", "   "]
    path = tmp_path / "blank.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ParameterError, match="blank.csv line 14"):
        read_data(path, inputs=["u1", "u2"])
    with pytest.raises(ParameterError, match="line 14"):
        read_identification_data(path, inputs="u1,u2")


def test_a_stamp_far_ahead_is_refused_not_filled_with_terabytes(tmp_path):
    """The last stamp 1e12 s: read as lost rows it asked for 58 TiB (MemoryError, a review);
    interpolation refuses such a gap, drop splits the record there (below)."""
    t, X, U = record(1)
    rows = cells(t, X, U)
    rows[-1][0] = "1e12"
    path = write(tmp_path / "far.csv", HEADER, rows)
    with pytest.raises(ParameterError, match="a wrong stamp, or an outage no interpolation"):
        read_data(path, inputs=["u1", "u2"], missing="interpolate")
    with pytest.raises(ParameterError, match="a wrong stamp, or an outage no interpolation"):
        read_identification_data(path, inputs="u1,u2", missing="interpolate")


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_an_outage_longer_than_the_record_splits_it_with_drop(tmp_path, seed):
    """A logger off overnight (a gap of 5000 periods after 41 rows) is an outage, not a wrong
    stamp: missing='drop' splits the record there as for a short gap (a review: it was refused)
    without building 5000 empty rows."""
    t, X, U = record(seed)
    rows = cells(t, X, U)
    for row in rows[41:]:
        row[0] = repr(float(row[0]) + 5000 * 0.5)
    path = write(tmp_path / "night.csv", HEADER, rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        python = read_data(path, inputs=["u1", "u2"], missing="drop")
    assert any("skips 5000 sample(s)" in str(w.message) for w in caught)
    cli = read_identification_data(path, inputs="u1,u2", missing="drop")
    assert any("skips 5000 sample(s)" in note for note in cli.notes)
    for data in (python, cli):
        assert data.dt == pytest.approx(0.5, rel=1e-9)
        np.testing.assert_array_equal(data.X[0], X[:, :41])
        np.testing.assert_array_equal(data.X[1], X[:, 41:])
        np.testing.assert_array_equal(data.U[1], U[:, 41:])


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_pandas_index_with_gaps_and_a_t_clock_with_a_repeated_row_are_no_states(tmp_path,
                                                                                    seed):
    """A review: after df.dropna().to_csv() the unnamed index skips where the time skips and
    was fitted as a state (a ramp, an eigenvalue at 1); a 't' column with one row written
    twice was no longer 'strictly increasing' and became a state with --dt."""
    t, X, U = record(seed)
    body = cells(t, X, U)
    lost = {20, 21, 40}
    rows = [[str(k), *row] for k, row in enumerate(body) if k not in lost]
    path = write(tmp_path / "index.csv", ["", *HEADER], rows)
    for read in both(path, {"missing": "interpolate"}, missing="interpolate"):
        assert read[0].shape == X.shape and "a row index" in read[3]
        np.testing.assert_allclose(read[0][:, :20], X[:, :20], rtol=1e-12)
    rows = [[*row] for row in body]
    rows.insert(11, list(rows[10]))
    path = write(tmp_path / "t.csv", ["t", *HEADER[1:]], rows)
    for read in (lambda: read_data(path, inputs=["u1", "u2"], dt=0.5),
                 lambda: read_identification_data(path, inputs="u1,u2", dt=0.5)):
        with pytest.raises(ParameterError, match="line 13 repeats the time .* written twice"):
            read()


@pytest.mark.parametrize("name", ["T - T0", "NA", "Na", "null"])
def test_a_header_whose_names_hold_missing_marks_is_a_header(tmp_path, name):
    """A review: the command line took 'time,T - T0,x2,u1,u2' (a '-' among its words) for a row
    of data and refused 'time' as no number; read_data and follow read it."""
    t, X, U = record(2)
    path = write(tmp_path / "named.csv", ["time", name, *HEADER[2:]], cells(t, X, U))
    data = read_identification_data(path, inputs="u1,u2")
    assert data.state_names == (name, "x2")
    np.testing.assert_array_equal(data.X[0], X)
