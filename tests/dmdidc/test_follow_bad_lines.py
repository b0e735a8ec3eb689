"""follow_csv with ``bad_lines="lost"`` on a logger that writes extra lines (dmdidc/follow.py).

A duplicated row, a garbage line, a line in place of a row or a row with a cell that is not a
number: with a time column the stamps place every row (an extra line takes no period, a replaced
row is a gap at the next stamp); without one each refused line stands for one lost sample.  The
followed record must be the clean one, every later row kept, and its fit the batch fit.
"""

import re

import numpy as np
import pytest

from dmdidc import DMDidc, OnlineDMDidc, read_data, track
from dmdidc.statistics import SufficientStatistics
from tests.dmdidc.test_follow import DT, R, _follow, _joined, _pieces, _record, _text

GARBAGE = "ERROR sensor timeout"


def _spoil(X, U, changes, *, time):
    """The lines of the record's table with ``changes`` (kind, sample) made, the record the
    follower must read (NaN: a lost sample) and the messages it must give (line: phrase).

    Kinds: ``duplicate`` (the row written twice), ``garbage`` (a line after the row),
    ``replaced`` (a garbage line in place of the row), ``cell`` (a cell of the row garbled),
    ``(jumped, j)`` (its stamp ``j`` periods ahead: a stamp out of place), ``gap`` (the row
    not written: a time-stamp gap).
    """
    lines = ["time,x1,x2,x3,u1,u2"[0 if time else 5:]] + _text(
        X, U, header=False, time=time).splitlines()
    out, columns, messages = [lines[0]], [], {}
    inputs = np.column_stack([U, np.full((U.shape[0], 1), np.nan)])
    record = np.vstack([X, inputs])
    lost = np.full(record.shape[0], np.nan)
    kinds = {k: kind for kind, k in changes}
    for k, line in enumerate(lines[1:]):
        kind = kinds.get(k)
        if kind == "gap":
            columns.append(lost)
            continue
        if isinstance(kind, tuple):                         # ("jumped", j)
            out.append(",".join([repr((k + kind[1]) * DT)] + line.split(",")[1:]))
            messages[len(out)] = "a stamp out of place"
            columns.append(lost)
            continue
        if kind == "replaced":
            out.append(GARBAGE)
            messages[len(out)] = "left out" if time else "counted as a lost sample"
            columns.append(lost)
            continue
        if kind == "cell":
            cells = line.split(",")
            cells[-3] = "abc"                               # a state cell
            out.append(",".join(cells))
            messages[len(out)] = "counted as a lost sample"
            columns.append(lost)
            continue
        out.append(line)
        columns.append(record[:, k])
        if kind == "duplicate":
            out.append(line)
            messages[len(out)] = f"a duplicated row: it repeats the time {k * DT:g} s of line " \
                                 f"{len(out) - 1}; dropped"
        elif kind == "garbage":
            out.append(GARBAGE)
            if time:
                messages[len(out)] = "left out"
            else:                                   # there a bad line is a lost sample
                messages[len(out)] = "counted as a lost sample"
                columns.append(lost)
    table = np.column_stack(columns)
    n = X.shape[0]
    return "\n".join(out) + "\n", table[:n], table[n:, :-1], messages


def _counts(messages_expected):
    """The closing message's counts."""
    phrases = list(messages_expected.values())
    duplicates = sum("duplicated" in p for p in phrases)
    lost = sum("counted as a lost sample" in p for p in phrases)
    left = sum(p in ("left out", "a stamp out of place") for p in phrases)
    parts = [f"{count} {noun}{'' if count == 1 else 's'} {what}" for count, noun, what in (
        (duplicates, "duplicated row", "dropped"),
        (lost, "malformed line", "counted as lost samples"),
        (left, "malformed line", "left out")) if count]
    return "in all " + ", ".join(parts)


def _changes(kinds, samples, rng, *, early):
    """``(kind, sample)`` for each kind, at distinct samples; with ``early`` the first lies in
    the first rows (read before the period is known)."""
    rows = rng.choice(np.arange(8, samples - 2, 3), len(kinds), replace=False)  # apart
    if early:
        rows[0] = rng.integers(1, 5)
    return [(kind, int(k)) for kind, k in zip(kinds, rows, strict=True)]


def _close(live, reference):
    """The live fit equals the reference's: statistics within the rounding of their sums
    (``2 K eps sqrt(G_ii G_jj)``, Cauchy-Schwarz on each entry), the model within that times
    the condition number of the Gram matrix."""
    mine, theirs = live.statistics(), reference.statistics()
    assert mine.layout == theirs.layout and mine.n_samples == theirs.n_samples
    assert live.rows_used_ == reference.rows_used_
    assert live.dropped_samples_ == reference.dropped_samples_
    gram = theirs.gram
    scale = np.sqrt(np.outer(np.diag(gram), np.diag(gram)))
    rounding = 2 * theirs.n_samples * np.finfo(float).eps
    assert (np.abs(mine.gram - gram) <= rounding * scale).all()
    bound = 10 * rounding * np.linalg.cond(gram)
    for a, b in ((live.model_.A_d, reference.model_.A_d),
                 (live.model_.B_blocks, reference.model_.B_blocks)):
        assert np.abs(a - b).max() <= bound * max(np.abs(b).max(), 1.0)
    assert np.abs(live.delay - reference.delay).max() <= bound * (R + 1) * DT


CASES = [("duplicate",), ("garbage",), ("duplicate", "garbage"),
         ("duplicate", "garbage", "duplicate", "garbage", "replaced", "cell", "duplicate"),
         ("jumped", "gap", "jumped", "duplicate", "garbage", "gap", "jumped")]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kinds", CASES,
                         ids=["duplicate", "garbage", "both", "several", "stamps"])
@pytest.mark.parametrize("time", [True, False], ids=["time", "no-time"])
def test_extra_lines_lose_no_later_row_and_give_the_clean_fit(seed, kinds, time, tmp_path,
                                                               monkeypatch):
    if not time:
        # without stamps a repeated row is one more sample and a row not written is not seen:
        # nothing in the file tells them
        kinds = tuple({"duplicate": "garbage", "jumped": "replaced"}.get(kind, kind)
                      for kind in kinds if kind != "gap")
    rng = np.random.default_rng(100 + seed)
    _, X, U = _record(seed, samples=400, lost=0.0)
    changes = [(kind, k) if kind != "jumped" else (("jumped", int(rng.integers(2, 1000))), k)
               for kind, k in _changes(kinds, U.shape[1], rng, early=seed % 2 == 0)]
    text, X_clean, U_clean, expected = _spoil(X, U, changes, time=time)
    path = tmp_path / "log.csv"
    path.write_text("")
    options = dict(bad_lines="lost") | ({} if time else dict(time=None, dt=DT))
    chunks, messages = _follow(monkeypatch, path, _pieces(path, text, rng), **options)
    Xf, Uf = _joined(chunks)
    np.testing.assert_array_equal(Xf, X_clean)      # every row kept, in its place
    np.testing.assert_array_equal(Uf, U_clean)
    assert chunks[-1].dt == DT
    # one message per spoiled line, naming it (rows read before the period is known are
    # placed, and reported, a few lines later), then the stop and the counts
    reported = {int(m.split()[2]): m for m in messages if m.startswith("log.csv line ")}
    assert len(reported) == len(expected) == len(messages) - 2
    for line, phrase in expected.items():
        assert phrase in reported[line]
    assert "stopped" in messages[-2] and messages[-1] == f"log.csv: {_counts(expected)}"
    live = OnlineDMDidc(max_delay=R, dt=DT, detect=False)
    list(track(chunks, live, every=100))
    reference = OnlineDMDidc(max_delay=R, dt=DT, detect=False).update(X_clean, U_clean)
    _close(live, reference)


@pytest.mark.parametrize("seed", range(3))
def test_a_followed_log_with_extra_lines_fits_as_the_batch_reader_reads_the_clean_file(
        seed, tmp_path, monkeypatch):
    """The repro of the report: one duplicated row, one garbage line, in a file read whole;
    the batch fit of the clean file (read_data, DMDidc) is the followed model."""
    rng = np.random.default_rng(seed)
    _, X, U = _record(seed, samples=400, lost=0.0)
    text, X_clean, U_clean, _ = _spoil(X, U, [("duplicate", 200), ("garbage", 300)], time=True)
    (tmp_path / "clean.csv").write_text(_text(X, U))
    (tmp_path / "log.csv").write_text(text)
    data = read_data(tmp_path / "clean.csv", inputs=["u1", "u2"])
    np.testing.assert_array_equal(data.X[0], X_clean)
    chunks, _ = _follow(monkeypatch, tmp_path / "log.csv", [], bad_lines="lost",
                        chunk=int(rng.integers(20, 200)))
    live = OnlineDMDidc(max_delay=R, dt=DT, detect=False)
    snapshots = list(track(chunks, live, every=100))
    assert snapshots[-1].samples == U.shape[1] and snapshots[-1].dropped == 0
    batch = DMDidc(max_delay=R, estimator="iv").fit_statistics(
        SufficientStatistics.from_data(data.X[0], data.U[0], max_delay=R, instruments="inputs"),
        dt=data.dt)
    reference = OnlineDMDidc(max_delay=R, dt=DT, detect=False).update(X_clean, U_clean)
    _close(live, reference)
    bound = 10 * 2 * U.shape[1] * np.finfo(float).eps * np.linalg.cond(
        reference.statistics().gram)
    for a, b in ((live.model_.A_d, batch.model_.A_d),
                 (live.model_.B_blocks, batch.model_.B_blocks)):
        assert np.abs(a - b).max() <= bound * max(np.abs(b).max(), 1.0)
    assert np.abs(live.delay - batch.delay).max() <= bound * (R + 1) * DT


def test_a_duplicated_row_is_refused_by_default_naming_the_remedy(tmp_path, monkeypatch):
    _, X, U = _record(3, samples=20, lost=0.0)
    text, *_ = _spoil(X, U, [("duplicate", 8)], time=True)
    (tmp_path / "log.csv").write_text(text)
    with pytest.raises(ValueError, match=r"line 11 .* a duplicated row: it repeats the time 4 s "
                                         r"of line 10; time stamps must increase "
                                         r"\(bad_lines='lost' drops such rows\)"):
        _follow(monkeypatch, tmp_path / "log.csv", [])


@pytest.mark.parametrize("seed", range(3))
def test_a_byte_order_mark_and_a_trailing_delimiter_read_as_the_clean_file(seed, tmp_path,
                                                                           monkeypatch):
    """Excel's "CSV UTF-8" starts with a BOM, and a logger may end every line in ','."""
    _, X, U = _record(seed, samples=60, lost=0.02)
    text = _text(X, U)
    (tmp_path / "clean.csv").write_text(text)
    (tmp_path / "bom.csv").write_text("\ufeff" + text, encoding="utf-8")
    (tmp_path / "trailing.csv").write_text("".join(line + ",\n" for line in text.splitlines()))
    # a tab is white space: a trailing one was read as a column '' of lost samples
    (tmp_path / "trailing.tsv").write_text("".join(line.replace(",", "\t") + "\t\n"
                                                   for line in text.splitlines()))
    clean, _ = _follow(monkeypatch, tmp_path / "clean.csv", [])
    for name in ("bom.csv", "trailing.csv", "trailing.tsv"):
        text_of = (tmp_path / name).read_text(encoding="utf-8")
        steps = _pieces(tmp_path / "torn.csv", text_of, np.random.default_rng(seed))
        (tmp_path / "torn.csv").write_text("")
        chunks, messages = _follow(monkeypatch, tmp_path / "torn.csv", steps)
        for got, want in zip(_joined(chunks), _joined(clean), strict=True):
            np.testing.assert_array_equal(got, want)
        assert chunks[-1].input_names == ("u1", "u2") and chunks[-1].dt == DT
        assert chunks[-1].state_names == ("x1", "x2", "x3")
        delimiter = {"bom.csv": None, "trailing.csv": "','", "trailing.tsv": "'\\t'"}[name]
        assert ("header ends in" in messages[0]) == (delimiter is not None)
        assert delimiter is None or f"header ends in {delimiter}" in messages[0]
    # a value after the trailing ',' is a cell the header does not name: refused
    lines = (tmp_path / "trailing.csv").read_text().splitlines()
    lines[5] += "7"
    (tmp_path / "trailing.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"line 6 .* has 7 cells; the header has 6$"):
        _follow(monkeypatch, tmp_path / "trailing.csv", [])
    # and the time column found by its name behind a BOM ("auto")
    chunks, _ = _follow(monkeypatch, tmp_path / "bom.csv", [], time="auto")
    assert chunks[-1].dt == DT and chunks[-1].state_names == ("x1", "x2", "x3")


@pytest.mark.parametrize("stamp", ["1e12", "9999999.5"])
def test_a_stamp_far_ahead_is_out_of_place_and_a_gap_at_the_end_is_a_gap(stamp, tmp_path,
                                                                          monkeypatch):
    """A row after a jump waits for the next: one going on from the row before makes the
    jumped stamp the bad line (no rows of NaN up to it, no later row refused as going back);
    at the end nothing comes after it, and a real gap stays a gap."""
    _, X, U = _record(5, samples=30, lost=0.0)
    lines = _text(X, U).splitlines()
    lines[11] = ",".join([stamp] + lines[11].split(",")[1:])        # sample 10
    del lines[-4:-1]                                                # samples 27-29 not written
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    jumped = re.escape(f"{float(stamp):g}")
    with pytest.raises(ValueError, match=rf"line 12 \('{stamp},.*time {jumped} s jumps ahead "
                                         rf"of 4.5 s of line 11, and the next row \(line 13\) "
                                         rf"goes on from there at 5.5 s: a stamp out of place"):
        _follow(monkeypatch, tmp_path / "log.csv", [])
    chunks, messages = _follow(monkeypatch, tmp_path / "log.csv", [], bad_lines="lost")
    Xf, Uf = _joined(chunks)
    expected_X, expected_U = X.copy(), U.copy()
    expected_X[:, [10, 27, 28, 29]], expected_U[:, [10, 27, 28, 29]] = np.nan, np.nan
    np.testing.assert_array_equal(Xf, expected_X)
    np.testing.assert_array_equal(Uf, expected_U)
    assert messages[-1] == "log.csv: in all 1 malformed line left out"


@pytest.mark.parametrize("name", ["time", "t", "t [s]"])
@pytest.mark.parametrize("seed", range(2))
def test_a_row_written_twice_in_the_first_lines_does_not_hide_the_time_column(name, seed,
                                                                              tmp_path,
                                                                              monkeypatch):
    """time="auto" decides from the first lines; a repeated row there made a ``t`` look like a
    signal that does not strictly increase (then no time, and the repeat read as a sample)."""
    _, X, U = _record(seed, samples=40, lost=0.0)
    rng = np.random.default_rng(seed)
    text, X_clean, U_clean, expected = _spoil(X, U, [("duplicate", int(rng.integers(0, 4)))],
                                              time=True)
    (tmp_path / "log.csv").write_text(text.replace("time", name, 1))
    chunks, messages = _follow(monkeypatch, tmp_path / "log.csv", [], time="auto",
                               bad_lines="lost")
    np.testing.assert_array_equal(_joined(chunks)[0], X_clean)
    np.testing.assert_array_equal(_joined(chunks)[1], U_clean)
    assert chunks[-1].dt == DT and chunks[-1].state_names == ("x1", "x2", "x3")
    assert messages[-1] == "log.csv: in all 1 duplicated row dropped"


def test_a_time_tolerance_without_stamps_to_check_is_refused(tmp_path, monkeypatch):
    """As the batch readers refuse it: with time=None, 'ignore', or no time column found."""
    _, X, U = _record(0, samples=20, lost=0.0)
    (tmp_path / "log.csv").write_text(_text(X, U))
    (tmp_path / "plain.csv").write_text("x1,x2,x3,u1,u2\n" + _text(X, U, header=False,
                                                                 time=False))
    for path, time in (("log.csv", None), ("log.csv", "ignore"), ("plain.csv", "auto")):
        with pytest.raises(ValueError, match=r"time_tolerance=0.2 bounds the jitter of a time "
                                             r"column's stamps, and .* has none to check"):
            _follow(monkeypatch, tmp_path / path, [], time=time, dt=DT, time_tolerance=0.2)
    chunks, _ = _follow(monkeypatch, tmp_path / "log.csv", [], time="auto", time_tolerance=0.2)
    assert chunks[-1].dt == DT


def _follow_torn(monkeypatch, tmp_path, text, seed, **options):
    """Follow ``text`` written in torn pieces (``bad_lines="lost"`` unless given)."""
    path = tmp_path / "log.csv"
    path.write_text("")
    steps = _pieces(path, text, np.random.default_rng(seed))
    return _follow(monkeypatch, path, steps, **({"bad_lines": "lost"} | options))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dt", [None, DT], ids=["no-dt", "dt"])
def test_stamps_out_of_place_in_a_row_or_in_the_first_row_cost_no_real_row(seed, dt, tmp_path,
                                                                           monkeypatch):
    """Two or three stamps far ahead in a row (each checked against the row after the run, not
    one row ahead only), the first row's stamp far ahead (no row before it: the two after it go
    on from before it), and one a period ahead. Every real row keeps its place."""
    rng = np.random.default_rng(seed)
    _, X, U = _record(seed, samples=80, lost=0.0)
    run = int(rng.integers(2, 4))
    start = int(rng.integers(10, 60))
    changes = [(("jumped", int(rng.integers(2, 1000))), start + i) for i in range(run)]
    changes.append((("jumped", int(rng.integers(2, 1000))), 0))
    # a stamp one period ahead, which the next row repeats with other values: the jumped row
    # was kept and the real one dropped as a duplicate
    changes.append((("jumped", 1), start + run + 5))
    text, X_clean, U_clean, expected = _spoil(X, U, changes, time=True)
    chunks, messages = _follow_torn(monkeypatch, tmp_path, text, seed, dt=dt)
    Xf, Uf = _joined(chunks)
    # the first row's sample has no stamp to place it: the record starts at the second row
    np.testing.assert_array_equal(Xf, X_clean[:, 1:])
    np.testing.assert_array_equal(Uf, U_clean[:, 1:])
    assert chunks[-1].dt == DT
    reported = {int(m.split()[2]): m for m in messages if m.startswith("log.csv line ")}
    assert sorted(reported) == sorted(expected)
    assert all("a stamp out of place" in m for m in reported.values())
    assert messages[-1] == f"log.csv: in all {run + 2} malformed lines left out"


@pytest.mark.parametrize("seed", range(4))
def test_every_other_row_lost_at_the_start_is_gaps_not_the_period(seed, tmp_path, monkeypatch):
    """The first 6 stamps 1 s apart, then 0.5 s: the median step of those (1 s) was taken as
    the period and every other later row refused for the whole follow."""
    rng = np.random.default_rng(seed)
    _, X, U = _record(seed, samples=60, lost=0.0)
    lost = [1, 3, 5] + sorted(rng.choice(np.arange(10, 55), 3, replace=False).tolist())
    text, X_clean, U_clean, expected = _spoil(X, U, [("gap", k) for k in lost], time=True)
    assert not expected
    chunks, messages = _follow_torn(monkeypatch, tmp_path, text, seed)
    Xf, Uf = _joined(chunks)
    np.testing.assert_array_equal(Xf, X_clean)
    np.testing.assert_array_equal(Uf, U_clean)
    assert all(c.dt == DT for c in chunks)
    assert len(messages) == 1 and "stopped" in messages[0]


def _stamped(X, U, stamps):
    """The table of a record with the time column ``stamps``."""
    lines = _text(X, U).splitlines()
    return "\n".join([lines[0]] + [",".join([repr(float(t))] + line.split(",")[1:])
                                   for t, line in zip(stamps, lines[1:], strict=True)]) + "\n"


@pytest.mark.parametrize("seed", range(4))
def test_a_clock_that_steps_stops_the_follow_once_and_a_lone_bad_stamp_does_not(
        seed, tmp_path, monkeypatch):
    """A clock stepping off the grid cost every later row, each with a message; now three rows
    on a grid of their own stop the follow with one message naming time='ignore'."""
    rng = np.random.default_rng(seed)
    _, X, U = _record(seed, samples=50, lost=0.0)
    stamps = DT * np.arange(X.shape[1])
    k = int(rng.integers(10, 40))
    shift = DT * rng.uniform(0.2, 0.8) + DT * int(rng.integers(0, 3))
    stepped = stamps + np.where(np.arange(stamps.size) >= k, shift, 0.0)
    text = _stamped(X, U, stepped)
    for bad_lines in ("lost", "error"):
        with pytest.raises(ValueError, match=rf"line {k + 2} .*" + (
                rf"the next rows \(lines {k + 3}, {k + 4}\) go on from there on a grid of their "
                rf"own: the clock stepped; .* time='ignore' with dt=" if bad_lines == "lost" else
                r"not a whole number of periods")) as caught:
            _follow_torn(monkeypatch, tmp_path, text, seed, bad_lines=bad_lines)
        assert "Traceback" not in str(caught.value)
    # the remedy it names reads every row
    chunks, _ = _follow_torn(monkeypatch, tmp_path, text, seed, time="ignore", dt=DT)
    Xf, Uf = _joined(chunks)
    np.testing.assert_array_equal(Xf, X)
    np.testing.assert_array_equal(Uf, U)
    # one or two stamps off the grid, then back on it: malformed lines, no false alarm
    for count in (1, 2):
        spoiled = stamps.copy()
        spoiled[k:k + count] += DT * rng.uniform(0.2, 0.8) * np.array([1.0, 0.5])[:count]
        chunks, messages = _follow_torn(monkeypatch, tmp_path, _stamped(X, U, spoiled), seed)
        expected_X, expected_U = X.copy(), U.copy()
        expected_X[:, k:k + count], expected_U[:, k:k + count] = np.nan, np.nan
        Xf, Uf = _joined(chunks)
        np.testing.assert_array_equal(Xf, expected_X)
        np.testing.assert_array_equal(Uf, expected_U)
        assert messages[-1] == ("log.csv: in all " + ("1 malformed line" if count == 1 else
                                                      "2 malformed lines") + " left out")


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("stamp", [1e6, 1e12])
def test_a_gap_longer_than_the_record_is_never_allocated(seed, stamp, tmp_path, monkeypatch):
    """A stamp far ahead as the last line was a gap of 2e6 samples (15 s), or a MemoryError;
    two in a row in the middle too. The last is left out (nothing confirms it), two in a row
    are out of place, and one confirmed by the rows after it is a jump of the clock: the
    follow stops at once, naming time='ignore'."""
    rng = np.random.default_rng(seed)
    _, X, U = _record(seed, samples=40, lost=0.0)
    stamps = DT * np.arange(X.shape[1])
    last = stamps.copy()
    last[-1] = stamp
    chunks, messages = _follow_torn(monkeypatch, tmp_path, _stamped(X, U, last), seed)
    Xf, Uf = _joined(chunks)
    np.testing.assert_array_equal(Xf, X[:, :-1])
    np.testing.assert_array_equal(Uf, U[:, :-1])
    assert f"line {X.shape[1] + 1} " in messages[-2] and "no row after it confirms" in \
        messages[-2] and messages[-1] == "log.csv: in all 1 malformed line left out"
    k = int(rng.integers(10, 30))
    twice = stamps.copy()
    twice[k], twice[k + 1] = stamp, 2 * stamp
    chunks, messages = _follow_torn(monkeypatch, tmp_path, _stamped(X, U, twice), seed)
    expected_X, expected_U = X.copy(), U.copy()
    expected_X[:, [k, k + 1]], expected_U[:, [k, k + 1]] = np.nan, np.nan
    Xf, Uf = _joined(chunks)
    np.testing.assert_array_equal(Xf, expected_X)
    np.testing.assert_array_equal(Uf, expected_U)
    assert messages[-1] == "log.csv: in all 2 malformed lines left out"
    jumped = stamps + np.where(np.arange(stamps.size) >= k, stamp, 0.0)
    for bad_lines in ("lost", "error"):
        with pytest.raises(ValueError, match=rf"line {k + 2} .* periods of 0.5 s ahead of "
                                             rf".* and the next row \(line {k + 3}\) goes on "
                                             rf"from there: the clock jumped .*time='ignore'"):
            _follow_torn(monkeypatch, tmp_path, _stamped(X, U, jumped), seed,
                         bad_lines=bad_lines)
    # an outage early in the record, longer than it but confirmed, is a gap: no false alarm
    outage = int(rng.integers(100, 3000))
    late = stamps + np.where(np.arange(stamps.size) >= k, outage * DT, 0.0)
    chunks, messages = _follow_torn(monkeypatch, tmp_path, _stamped(X, U, late), seed)
    Xf, Uf = _joined(chunks)
    assert Xf.shape[1] == X.shape[1] + outage and len(messages) == 1
    np.testing.assert_array_equal(Xf[:, :k], X[:, :k])
    np.testing.assert_array_equal(Xf[:, k + outage:], X[:, k:])
    assert np.isnan(Xf[:, k:k + outage]).all() and np.isnan(Uf[:, k:k + outage]).all()


def test_a_row_with_a_trailing_separator_the_header_lacks_is_named_so(tmp_path):
    """The followed file's refusal names the trailing separator, as read_data's does."""
    from dmdidc import follow_csv, read_data
    path = tmp_path / "log.csv"
    path.write_text("time,x1,u\n" + "".join(f"{0.5 * k},{k % 3},{k % 2}.5,\n"
                                            for k in range(40)))
    for read in (lambda: read_data(path, inputs=["u"], time="time"),
                 lambda: list(follow_csv(path, inputs=["u"], time="time", poll=0.01,
                                         idle_timeout=0.05, report=lambda m: None))):
        with pytest.raises(ValueError, match=r"has 4 cells; the header.* has 3.*trailing"):
            read()
