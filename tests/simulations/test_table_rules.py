"""Every reader of a data file reads the same messy files (tests/messy_tables.py) to the same
numbers and decisions: read_data (the Python API), the command line's table reader and, where
it applies, the follower (one set of rules: dmdidc.table_text, dmdidc.missing)."""

import gc
import warnings

import numpy as np
import pytest

from _toolbox.errors import ToolboxError
from dmdidc import read_data
from dmdidc.data_io import read_fields
from dmdidc.follow import follow_csv
from dmdidc.table_text import read_table_text
from simulations.data_preparation import read_identification_data
from tests.messy_tables import RECORD, cases

CASES = cases()


def _read(read):
    """What a reader gives: (X pieces, U pieces, dt, state names), or the class it raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return read()
    except ToolboxError as exc:
        return type(exc)


def _api(path, case):
    data = read_data(path, inputs=list(case.inputs), states=case.states, missing=case.missing)
    return list(data.X), list(data.U), data.dt, tuple(data.state_names)


def _cli(path, case):
    data = read_identification_data(path, inputs=",".join(case.inputs), missing=case.missing,
                                    states=None if case.states is None else
                                    ",".join(case.states))
    return list(data.X), list(data.U), data.dt, data.state_names


def _assert_same(first, second):
    if isinstance(first, type) or isinstance(second, type):
        assert first == second                            # the same refusal
        return
    (X1, U1, dt1, names1), (X2, U2, dt2, names2) = first, second
    assert (dt1, tuple(names1)) == (dt2, tuple(names2))
    assert [x.shape for x in X1] == [x.shape for x in X2]
    for a, b in zip(X1 + U1, X2 + U2, strict=True):
        np.testing.assert_array_equal(a, b)               # the same numbers, not close ones


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_read_data_and_the_command_line_read_a_file_alike(tmp_path, case):
    path = tmp_path / "log.csv"
    path.write_bytes(case.data)
    api, cli = _read(lambda: _api(path, case)), _read(lambda: _cli(path, case))
    _assert_same(api, cli)
    assert isinstance(api, type) == case.refused          # well-posed files raise no alarm
    if case.clean and not case.refused:                   # and read to the record written
        X, U, dt = RECORD
        np.testing.assert_array_equal(api[0][0], X)
        np.testing.assert_array_equal(api[1][0], U)
        assert api[2] == dt and len(api[0]) == 1


FOLLOWED = [c for c in CASES if c.follow and c.missing != "drop"]


@pytest.mark.parametrize("case", FOLLOWED, ids=[c.name for c in FOLLOWED])
def test_the_follower_reads_a_file_as_the_batch_reader(tmp_path, case):
    """The follower yields lost samples as NaN: it matches read_fields before the policy
    (missing='interpolate' inserts a lost row's NaN without filling it)."""
    path = tmp_path / "log.csv"
    path.write_bytes(case.data)

    def follow():
        chunks = list(follow_csv(path, inputs=list(case.inputs), states=case.states,
                                 idle_timeout=0.05, poll=0.01, report=lambda _: None))
        X = np.concatenate([chunks[0].X] + [c.X[:, 1:] for c in chunks[1:]], axis=1)
        return [X], [np.concatenate([c.U for c in chunks], axis=1)], chunks[0].dt, \
            chunks[0].state_names

    def batch():
        fields = read_fields(path, inputs=list(case.inputs), states=case.states,
                             missing="interpolate")
        return fields["X"], fields["U"], fields["dt"], fields["state_names"]

    _assert_same(_read(batch), _read(follow))


def test_a_stray_byte_in_a_utf8_file_is_named_and_read_alone(tmp_path):
    """A byte that is not UTF-8 (a comment appended in Windows-1252) is read as Windows-1252
    alone, not the whole file (Excel's byte-order mark joined the first name, 'ï»¿time', and
    the UTF-8 degree sign read as 'Â°'); the note names that byte and its place in the
    file."""
    path = tmp_path / "log.csv"
    data = b"\xef\xbb\xbftime,T [\xc2\xb0C],heater\n0,20.5,1\n1,21,0\n# ambient 23\xb0C\n"
    path.write_bytes(data)
    with pytest.warns(UserWarning) as caught:
        loaded = read_data(path, inputs=["heater"])
    assert loaded.state_names == ("T",) and loaded.state_units == ("°C",)
    note = " ".join(str(w.message) for w in caught)
    assert f"byte 0xb0 at {data.rindex(bytes([0xB0]))}" in note


@pytest.mark.parametrize(("cell", "said"), [("", "every cell empty"),
                                             ("nan", "missing-value marks only")])
def test_a_column_without_a_name_or_a_value_is_said_as_it_is(tmp_path, cell, said):
    """A column of 'nan' was said to have every cell empty, by the batch readers and the
    follower alike: the note says what the cells hold."""
    path = tmp_path / "log.csv"
    path.write_text("time,,T,heater\n" + "".join(f"{k},{cell},{20 + k},{k % 2}\n"
                                                  for k in range(6)))
    with pytest.warns(UserWarning) as caught:
        read_data(path, inputs=["heater"])
    messages = []
    list(follow_csv(path, inputs=["heater"], idle_timeout=0.05, poll=0.01,
                    report=messages.append))
    for notes in (" ".join(str(w.message) for w in caught), " ".join(messages)):
        assert f"column 2 has no name and {'no value (' if cell else ''}{said}" in notes


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_a_table_leaves_the_collector_as_it_was(tmp_path, enabled):
    """read_table_text turns the cyclic collector off while it makes the rows (40 % of the
    time of a million rows): on after a read and after a refusal if it was on, off if off."""
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("t,x\n0,1\n1,2\n")
    bad.write_text("t,x\n0,1\n1,2,3\n")
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert read_table_text(good).cells.shape == (2, 2)
        assert gc.isenabled() == enabled
        with pytest.raises(ToolboxError):
            read_table_text(bad)
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("text, header, hint", [
    # a title above the header, with and without a number in it (the command line's tables
    # may have no header: there the title is a first row)
    ("Logger export site A\ntime,x,u\n0,1,2\n", True, r"header \(line 1: .* title or note"),
    ("Pump test run 3\ntime;x;u\n0;1;2\n", None, r"is line 1 .*'Pump test run 3'.* title"),
    # logging's decimal comma between ',' (with an offset too)
    ("time,x,u\n2026-11-28 00:47:19,500,0.1,1\n", True, r"'2026-11-28 00:47:19,500' may have"),
    ("time,x,u\n2026-11-28 00:47:19,500+01:00,0.1,1\n", True, r"19,500\+01:00' may have a"),
])
def test_a_row_that_differs_from_the_first_line_says_the_likely_cause(tmp_path, text,
                                                                       header, hint):
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(ToolboxError, match=hint):
        read_table_text(path, header=header)


@pytest.mark.parametrize("text", [
    "0,1,2\n0.5,1,2,3\n",                                # numbers only: no title
    "time,x,u\n2026-11-28 00:47:19,500,0.1,\n",           # a trailing separator, named as such
])
def test_no_likely_cause_is_guessed_where_none_fits(tmp_path, text):
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(ToolboxError) as refusal:
        read_table_text(path, header=None)
    assert "title" not in str(refusal.value) and "decimal comma" not in str(refusal.value)


def _table_or_refusal(path, header):
    try:
        table = read_table_text(path, header=header)
    except ToolboxError as exc:
        return type(exc), str(exc)
    return (table.header, table.cells.tolist(), table.lines.tolist(), table.delimiter,
            table.notes)


_ODD = [b"time,x,u\r0,1,2\r1,2,3\r",                      # an old Mac's '\r' line breaks
        b"time,x,u\r\n# note\r\n0,1,2\r\n\r\n1,2,3\r\n",    # Windows' '\r\n', a comment
        b"# run 3\n# time,x,u\n0,1,2\n1,NA,3\n2,,\n,,\n",   # savetxt's header, empty rows
        b"Logger export site A\ntime,x,u\n0,1,2\n",        # a title above the header
        b"0,1,2,\n0.5,1,2\n1,2,3,\n",                     # a first row's trailing separator
        b"time;x;u\n0;20,5;1\n"]                          # decimal commas between ';'


@pytest.mark.parametrize("data", [c.data for c in CASES] + _ODD,
                         ids=[c.name for c in CASES] + [f"odd{i}" for i in range(len(_ODD))])
def test_a_table_read_in_pieces_reads_as_one_read_whole(tmp_path, monkeypatch, data):
    """The rows are split and stored a few thousand lines at a time (memory): pieces of one
    line and a few characters give the same cells, line numbers, notes and refusals."""
    import dmdidc.table_text as table_text

    path = tmp_path / "log.csv"
    path.write_bytes(data)
    for header in (True, None):
        whole = _table_or_refusal(path, header)
        monkeypatch.setattr(table_text, "_PIECE_LINES", 1)
        monkeypatch.setattr(table_text, "_PIECE_CHARS", 3)
        assert _table_or_refusal(path, header) == whole
        monkeypatch.undo()


@pytest.mark.parametrize("seed", range(3))
def test_random_tables_read_in_pieces_read_the_numbers_written(tmp_path, monkeypatch, seed):
    """Random numbers with comments, blank lines and missing cells between, across many
    pieces: every number and line number as written, whatever the piece size."""
    import dmdidc.table_text as table_text

    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rng.integers(50, 400), 4))
    lines, written, numbers = ["time,x1,x2,u"], [], []
    for row in values:
        if rng.random() < 0.1:
            lines.append("# a note" if rng.random() < 0.5 else "")
        cells = [repr(float(v)) if rng.random() > 0.05 else "" for v in row]
        lines.append(",".join(cells))
        written.append(len(lines))
        numbers.append([float(c) if c else np.nan for c in cells])
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    for piece_lines, piece_chars in ((1, 1), (7, 100), (10_000, 1 << 20)):
        monkeypatch.setattr(table_text, "_PIECE_LINES", piece_lines)
        monkeypatch.setattr(table_text, "_PIECE_CHARS", piece_chars)
        table = read_table_text(path)
        assert table.lines.tolist() == written
        cells = table.cells
        got = np.where(cells == "", "nan", cells).astype(float)
        np.testing.assert_array_equal(got, np.array(numbers))
