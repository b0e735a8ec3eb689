"""follow_csv and track (dmdidc/follow.py): a CSV file read while it is written.

The writer runs inside the follower's waits: the module's clock is replaced by one whose
``sleep`` performs the writer's next step (a piece of text cut anywhere, a truncation, a
replacement) and then advances a fake time, so the tests are exact and do not sleep.  One test
uses a real writer thread.
"""

import os
import threading
import time
import warnings

import numpy as np
import pytest

import dmdidc.follow as follow_module
from dmdidc import (
    Chunk,
    DimensionError,
    OnlineDMDidc,
    ParameterError,
    StreamWarning,
    follow_csv,
    read_data,
    track,
)
from simulations.studies.data_kinds import random_plant
from simulations.studies.live_stream import delay_step_stream

DT, R = 0.5, 4


def _record(seed, samples=600, lost=0.02):
    """A random plant's noisy states and inputs, with lost samples (NaN)."""
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, max_delay=R, dt=DT)
    U = rng.standard_normal((2, samples))
    X = plant.simulate(np.zeros(3), U)
    X = X + 0.01 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    X[:, rng.random(samples + 1) < lost] = np.nan
    return plant, X, U


def _text(X, U, *, header=True, time=True):
    """The CSV table of a record (row k: t_k, x_k, u_k; the last row's inputs empty)."""
    inputs = np.column_stack([U, np.full((U.shape[0], 1), np.nan)])
    lines = ["time,x1,x2,x3,u1,u2"] if header else []
    for k in range(X.shape[1]):
        cells = [repr(k * DT)] if time else []
        cells += ["" if np.isnan(v) else repr(float(v)) for v in (*X[:, k], *inputs[:, k])]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


class _Writer:
    """The module clock: ``sleep`` runs the writer's next step, then time advances."""

    def __init__(self, steps):
        self.steps, self.now = list(steps), 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        if self.steps:
            self.steps.pop(0)()
        self.now += seconds


def _append(path, text):
    def step():
        with open(path, "a") as handle:
            handle.write(text)
    return step


def _pieces(path, text, rng, count=40):
    """Steps appending ``text`` in ``count`` pieces cut at random places (torn lines)."""
    cuts = np.sort(rng.choice(np.arange(1, len(text)), count - 1, replace=False))
    bounds = [0, *cuts.tolist(), len(text)]
    return [_append(path, text[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _follow(monkeypatch, path, steps, **options):
    """The chunks and messages of following ``path`` while ``steps`` run."""
    monkeypatch.setattr(follow_module, "_time", _Writer(steps))
    messages = []
    kwargs = dict(inputs=["u1", "u2"], time="time", poll=0.01, idle_timeout=0.05,
                  report=messages.append) | options
    return list(follow_csv(path, **kwargs)), messages


def _joined(chunks):
    """The record the chunks describe (each chunk's first state is the previous last)."""
    X = np.concatenate([chunks[0].X[:, :1]] + [c.X[:, 1:] for c in chunks], axis=1)
    return X, np.concatenate([c.U for c in chunks], axis=1)


def _fed(X, U):
    live = OnlineDMDidc(max_delay=R, dt=DT, detect=False)
    return live.update(X, U)


@pytest.mark.parametrize("seed", range(6))
def test_a_file_written_in_torn_pieces_gives_every_sample_and_the_batch_statistics(
        seed, tmp_path, monkeypatch):
    _, X, U = _record(seed)
    path = tmp_path / "log.csv"
    path.write_text("")
    chunks, messages = _follow(monkeypatch, path, _pieces(path, _text(X, U),
                                                          np.random.default_rng(seed)),
                               chunk=int(np.random.default_rng(seed).integers(5, 200)))
    Xf, Uf = _joined(chunks)
    np.testing.assert_array_equal(Xf, X)           # repr round-trips: exactly the record
    np.testing.assert_array_equal(Uf, U)
    assert len(chunks) > 5 and not any(c.restart for c in chunks)
    assert chunks[-1].dt == DT and chunks[-1].input_names == ("u1", "u2")
    assert chunks[-1].state_names == ("x1", "x2", "x3")
    last = np.cumsum([c.U.shape[1] for c in chunks])      # each chunk's last sample
    assert [c.line for c in chunks] == (last + 2).tolist()  # after the header, from line 2
    assert len(messages) == 1 and "stopped" in messages[0]   # no false alarm before the end
    live = OnlineDMDidc(max_delay=R, dt=DT, detect=False)
    snapshots = list(track(chunks, live, every=100))
    batch = _fed(X, U)
    assert live.samples_seen_ == batch.samples_seen_ == U.shape[1] == snapshots[-1].samples
    assert live.rows_used_ == batch.rows_used_ and live.dropped_samples_ == batch.dropped_samples_
    np.testing.assert_allclose(live.statistics().gram, batch.statistics().gram, rtol=1e-10,
                               atol=1e-10 * np.abs(batch.statistics().gram).max())


def test_a_real_writer_thread(tmp_path):
    """A writer thread appends torn pieces while the follower polls."""
    plant, X, U = _record(11, samples=1500, lost=0.0)
    path = tmp_path / "log.csv"
    path.write_text("")
    text = _text(X, U)

    def write():
        rng = np.random.default_rng(0)
        a = 0
        while a < len(text):
            b = min(len(text), a + int(rng.integers(1, 8000)))
            with open(path, "a") as handle:
                handle.write(text[a:b])
            a = b
            time.sleep(0.002)

    def until_the_last_line(chunks):
        for chunk in chunks:
            yield chunk
            if chunk.line == X.shape[1] + 1:
                return

    writer = threading.Thread(target=write)
    writer.start()
    live = OnlineDMDidc(max_delay=R, dt=DT)
    # (the timeout only ends a failing test: a loaded machine may pause the writer a while)
    source = follow_csv(path, inputs=["u1", "u2"], time="time", poll=0.002, idle_timeout=20,
                        report=lambda message: None)
    snapshots = list(track(until_the_last_line(source), live, every=500))
    writer.join()
    assert snapshots[-1].samples == U.shape[1]
    assert np.abs(snapshots[-1].delay - plant.delay).max() < 0.1 * DT
    assert np.all((snapshots[-1].low <= snapshots[-1].delay)
                  & (snapshots[-1].delay <= snapshots[-1].high))


def _truncate(path):
    def step():
        with open(path, "w"):
            pass
    return step


def _replace(path, text):
    def step():
        fresh = path.with_name("fresh.csv")
        fresh.write_text(text)
        os.replace(fresh, path)
    return step


def _rewrite(path, text):
    def step():
        path.write_text(text)                  # same inode, longer than what was read
    return step


@pytest.mark.parametrize("how, word", [("truncate", "truncated"), ("replace", "replaced"),
                                       ("rewrite", "rewritten"), ("delete", "replaced"),
                                       ("append", "repeats the header")])
def test_a_restarted_writer_is_a_new_stream_and_no_sample_is_lost_or_doubled(
        how, word, tmp_path, monkeypatch):
    _, XA, UA = _record(1, samples=400)
    _, XB, UB = _record(2, samples=500 if how == "rewrite" else 300)
    path = tmp_path / "log.csv"
    path.write_text("")
    rng = np.random.default_rng(3)
    first = _pieces(path, _text(XA, UA), rng, count=10)
    second = {"truncate": [_truncate(path)] + _pieces(path, _text(XB, UB), rng, count=10),
              "replace": [_replace(path, _text(XB, UB))],
              "rewrite": [_rewrite(path, _text(XB, UB))],
              "delete": [path.unlink, lambda: None] + _pieces(path, _text(XB, UB), rng,
                                                             count=10),
              "append": [_append(path, _text(XB, UB))]}[how]
    chunks, messages = _follow(monkeypatch, path, first + second, chunk=97)
    starts = [i for i, c in enumerate(chunks) if c.restart]
    assert len(starts) == 1
    for part, (X, U) in zip((chunks[:starts[0]], chunks[starts[0]:]), ((XA, UA), (XB, UB)),
                            strict=True):
        Xf, Uf = _joined(part)
        np.testing.assert_array_equal(Xf, X)
        np.testing.assert_array_equal(Uf, U)
    assert len(messages) == 2 and word in messages[0] and "new stream" in messages[0]
    live = OnlineDMDidc(max_delay=R, dt=DT, detect=False)
    snapshots = list(track(chunks, live, every=10_000))
    assert snapshots[-1].restarts == 1
    A, B = _fed(XA, UA), _fed(XB, UB)
    # two bridging lost samples; no regression row joins the files
    assert live.samples_seen_ == UA.shape[1] + UB.shape[1] + 2
    assert live.rows_used_ == A.rows_used_ + B.rows_used_
    gram = A.statistics().gram + B.statistics().gram
    np.testing.assert_allclose(live.statistics().gram, gram, rtol=1e-10,
                               atol=1e-10 * np.abs(gram).max())


def test_a_restart_with_other_columns_is_refused(tmp_path, monkeypatch):
    _, X, U = _record(4, samples=50)
    path = tmp_path / "log.csv"
    path.write_text(_text(X, U))
    other = _text(X, U).replace("u2", "valve", 1)
    with pytest.raises(ParameterError, match=r"restarted with the columns .*valve"):
        _follow(monkeypatch, path, [_replace(path, other)])


def test_a_stalled_file_ends_cleanly_and_leaves_the_torn_line(tmp_path, monkeypatch):
    _, X, U = _record(5, samples=80)
    text = _text(X, U)
    path = tmp_path / "log.csv"
    path.write_text(text + "40.5,0.25,0.1")           # a torn last line
    chunks, messages = _follow(monkeypatch, path, [], idle_timeout=2.0)
    np.testing.assert_array_equal(_joined(chunks)[0], X)
    assert len(messages) == 1
    assert "no new complete line for 2 s; stopped" in messages[0]
    assert "'40.5,0.25,0.1' has no newline yet: not used" in messages[0]


def test_an_empty_file_waits_for_its_header_and_a_missing_one_is_refused(tmp_path,
                                                                         monkeypatch):
    path = tmp_path / "log.csv"
    path.write_text("")
    chunks, messages = _follow(monkeypatch, path, [])
    assert chunks == [] and "stopped" in messages[0]
    with pytest.raises(FileNotFoundError, match="no such file to follow"):
        follow_csv(tmp_path / "none.csv", inputs="u")          # at the call, not later
    with pytest.raises(ParameterError, match="bad_lines"):
        follow_csv(path, inputs="u", bad_lines="skip")


@pytest.mark.parametrize("line, error, match", [
    ("2.0,0.1,abc,0.3,1,2", ParameterError, r"line 6 .*'abc' is not a number"),
    ("2.0,0.1,0.2", DimensionError, r"line 6 \('2.0,0.1,0.2'\) has 3 cells; the header has 6"),
    ("2.2,0.1,0.2,0.3,1,2", ParameterError, r"line 6 .*not a whole number of periods of 0.5"),
    ("1.5,0.1,0.2,0.3,1,2", ParameterError,
     r"line 6 .*a duplicated row: it repeats the time 1.5 s of line 5 with other values"),
    ("1.7,0.1,0.2,0.3,1,2", ParameterError, r"line 6 .*not a whole number of periods of 0.5"),
    ("0.9,0.1,0.2,0.3,1,2", ParameterError, r"line 6 .*time 0.9 s goes back from 1.5 s"),
    (",0.1,0.2,0.3,1,2", ParameterError, r"line 6 .*no time stamp")])
def test_a_malformed_line_is_an_error_naming_it_or_a_lost_sample(line, error, match, tmp_path,
                                                                  monkeypatch):
    _, X, U = _record(6, samples=10, lost=0.0)
    lines = _text(X, U).splitlines(keepends=True)
    path = tmp_path / "log.csv"
    path.write_text("".join(lines[:5]) + line + "\n" + "".join(lines[6:]))  # replaces t = 2.0
    with pytest.raises(error, match=match):
        _follow(monkeypatch, path, [])
    chunks, messages = _follow(monkeypatch, path, [], bad_lines="lost")
    Xf, Uf = _joined(chunks)
    expected_X, expected_U = X.copy(), U.copy()
    # the stamps place the rows: the refused line takes no period, and the next stamp shows
    # the sample it replaced as a lost one, where it was
    expected_X[:, 4], expected_U[:, 4] = np.nan, np.nan
    np.testing.assert_array_equal(Xf, expected_X)
    np.testing.assert_array_equal(Uf, expected_U)
    assert "line 6" in messages[0] and any(
        what in messages[0] for what in ("left out", "dropped", "a lost sample at its time"))


@pytest.mark.parametrize("bad", [[1], [2], [1, 2], [4, 7, 8]])
def test_lost_lines_keep_their_periods_even_before_the_period_is_known(bad, tmp_path,
                                                                       monkeypatch):
    """Garbled lines in place of rows (the first ones included: the period is not known yet)
    are lost samples in their places, shown by the stamps after them."""
    _, X, U = _record(10, samples=12, lost=0.0)
    lines = _text(X, U).splitlines(keepends=True)
    for k in bad:
        lines[k + 1] = "garbled\n"                          # sample k (after the header)
    path = tmp_path / "log.csv"
    path.write_text("".join(lines))
    chunks, messages = _follow(monkeypatch, path, [], bad_lines="lost")
    Xf, _ = _joined(chunks)
    expected = X.copy()
    expected[:, bad] = np.nan
    np.testing.assert_array_equal(Xf, expected)
    assert chunks[-1].dt == DT and len(messages) == len(bad) + 2
    assert messages[-1].endswith(f"in all {len(bad)} malformed line{'s' * (len(bad) > 1)} "
                                 f"left out")


def test_time_gaps_are_lost_samples_and_dt_must_agree(tmp_path, monkeypatch):
    _, X, U = _record(7, samples=30, lost=0.0)
    lines = _text(X, U).splitlines(keepends=True)
    path = tmp_path / "log.csv"
    path.write_text("".join(lines[:8] + lines[11:]))        # rows of t = 3.5, 4, 4.5 missing
    chunks, _ = _follow(monkeypatch, path, [])
    Xf, Uf = _joined(chunks)
    assert np.isnan(Xf[:, 7:10]).all() and np.isnan(Uf[:, 7:10]).all()
    np.testing.assert_array_equal(Xf[:, 10:], X[:, 10:])
    assert Xf.shape == X.shape
    with pytest.raises(ParameterError, match="line 3 .*not a whole number of periods of 0.75 s"):
        _follow(monkeypatch, path, [], dt=0.25 * 3)
    chunks, _ = _follow(monkeypatch, path, [], dt=DT)
    np.testing.assert_array_equal(_joined(chunks)[0], Xf)


def test_columns_by_name_or_number_and_clear_refusals(tmp_path, monkeypatch):
    _, X, U = _record(8, samples=20, lost=0.0)
    path = tmp_path / "log.csv"
    path.write_text(_text(X, U))
    chunks, _ = _follow(monkeypatch, path, [], inputs=[4, "u2"], states=["x2", 1], time="auto")
    np.testing.assert_array_equal(_joined(chunks)[0], X[[1, 0]])
    assert chunks[0].state_names == ("x2", "x1")
    with pytest.raises(ParameterError, match=r"inputs: 'valve' is not a column of log.csv "
                                             r"\(its columns are \['time', 'x1'"):
        _follow(monkeypatch, path, [], inputs="valve")
    # numbered from 1 (a command line's columns): the same columns, and messages in its terms
    chunks, _ = _follow(monkeypatch, path, [], inputs=[5, "u2"], states=["x2", 2],
                        time="auto", first_column=1)
    np.testing.assert_array_equal(_joined(chunks)[0], X[[1, 0]])
    with pytest.raises(ParameterError, match=r"inputs: 0 is not a column .*numbers 1 to 6\)"):
        _follow(monkeypatch, path, [], inputs=0, first_column=1)
    with pytest.raises(ParameterError, match="first_column must be 0 or 1; got 2"):
        _follow(monkeypatch, path, [], first_column=2)
    for bad in (dict(states=["u1"]), dict(inputs=["u1", "u1"]), dict(states=["time"])):
        with pytest.raises(ParameterError, match="must be distinct columns"):
            _follow(monkeypatch, path, [], **bad)
    for bad, match in ((dict(bad_lines="skip"), "bad_lines"), (dict(poll=0), "poll"),
                       (dict(chunk=0), "chunk"), (dict(inputs=None), "needs inputs")):
        with pytest.raises(ParameterError, match=match):
            _follow(monkeypatch, path, [], **bad)


def test_the_default_report_is_a_warning(tmp_path, monkeypatch):
    path = tmp_path / "log.csv"
    path.write_text("time,x,u\n0,1,1\n")
    monkeypatch.setattr(follow_module, "_time", _Writer([]))
    with pytest.warns(StreamWarning, match="stopped"):
        assert list(follow_csv(path, inputs="u", idle_timeout=0.05, poll=0.01)) == []


@pytest.mark.parametrize("seed", range(3))
def test_track_takes_any_iterable_and_reports_delays_and_events(seed):
    """Pairs of arrays from a 'socket': delay within 0.1 T, the event reported once."""
    s = delay_step_stream(seed, before=3000, after=1500)
    rng = np.random.default_rng(seed)
    edges = np.unique(np.concatenate([[0, s.U.shape[1]],
                                      rng.integers(1, s.U.shape[1], 40)]))
    pairs = ((s.X[:, a:b + 1], s.U[:, a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True))
    live = OnlineDMDidc(max_delay=s.max_delay, dt=s.dt, forgetting=0.999)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # track keeps the fits' warnings inside
        snapshots = list(track(pairs, live, every=500))
    events = [e for snap in snapshots for e in snap.events]
    assert len(events) == 1 and s.step <= events[0].sample < s.step + 100
    assert snapshots[-1].samples == s.U.shape[1] and snapshots[-1].dropped == s.lost.sum()
    assert np.abs(snapshots[-1].delay - s.new_delay).max() < 0.1 * s.dt
    quiet = [snap for snap in snapshots if not snap.events]
    assert all(np.diff([snap.samples for snap in quiet])[:-1] >= 500)


@pytest.mark.parametrize("seed", range(2))
def test_track_names_outliers_once_and_says_when_the_model_rests_on_the_samples_after_a_change(
        seed):
    """Spikes in a stationary stream are reported once each in the snapshots, no change, no
    warning of dropped data; after a real change the last snapshot warns that the model rests
    only on the samples since its onset, and how many."""
    s = delay_step_stream(seed, before=3000, after=1500, lost=0.0)
    X = s.X.copy()
    spikes = [900, 1700, 2400]
    X[0, spikes] += 20 * np.nanstd(X[0])

    def pairs(X, end):
        return ((X[:, a:a + 301], s.U[:, a:a + 300]) for a in range(0, end, 300))

    live = OnlineDMDidc(max_delay=s.max_delay, dt=s.dt, forgetting=0.999)
    snapshots = list(track(pairs(X, s.step), live, every=600))
    assert [o.sample for snap in snapshots for o in snap.outliers] == spikes
    assert not any("rests only" in w for w in snapshots[-1].warnings)
    live = OnlineDMDidc(max_delay=s.max_delay, dt=s.dt, forgetting=0.999)
    snapshots = list(track(pairs(X, s.U.shape[1]), live, every=600))
    (event,) = live.events_
    told = [w for w in snapshots[-1].warnings if "rests only" in w]
    assert len(told) == 1 and f"the {s.U.shape[1] - event.onset} samples since" in told[0]
    assert f"the {event.onset} samples before it were dropped" in told[0]


@pytest.mark.parametrize("every, chunk", [(1, 1), (500, 500), (250, 100)])
def test_track_reports_no_outlier_that_a_later_change_claims(every, chunk):
    """A delay step without spikes on several plants: every outlier a snapshot reports lies
    before the onset of the changes detected after it (before, the change's first rows were
    reported as outliers, "not read as a change", 1-4 of them per step at chunks of 1 and
    500), and every reported outlier is reported once.  (At ``every=1`` the estimator is fed
    up to 100 samples before the step first: a snapshot solves a fit, about 10 ms.)"""
    for seed, step in [(5, 4000), (5, 3997), (5, 3999), (6, 3001), (7, 3500)]:
        s = delay_step_stream(seed, before=step, after=100 if every == 1 else 300, lost=0.0)
        live = OnlineDMDidc(max_delay=s.max_delay, dt=s.dt, forgetting=0.999)
        start = step - 100 if every == 1 else 0
        for a in range(0, start, 300):
            b = min(a + 300, start)
            live.update(s.X[:, a:b + 1], s.U[:, a:b])
        chunks = ((s.X[:, a:a + chunk + 1], s.U[:, a:a + chunk])
                  for a in range(start, s.U.shape[1], chunk))
        reported = []                            # (sample, events detected by then)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # (the fit's diagnostics)
            for snap in track(chunks, live, every=every):
                reported += [(o.sample, len(live.events_)) for o in snap.outliers]
        assert live.events_
        for sample, known in reported:
            assert all(sample <= e.onset for e in live.events_[known:])
        assert len({sample for sample, _ in reported}) == len(reported)


def test_track_says_why_there_is_no_delay_yet_and_takes_chunks():
    _, X, U = _record(9, samples=8, lost=0.0)
    live = OnlineDMDidc(max_delay=R, dt=DT)
    (snapshot,) = track([Chunk(X=X, U=U)], live)
    assert snapshot.delay is None and snapshot.note and snapshot.samples == 8
    with pytest.raises(ParameterError, match="every"):
        list(track([], live, every=0))


def _plc(path, X, U, header, first=None, stamps=None):
    """A PLC's log written line by line: ``header``, an optional first column, X and U."""
    with open(path, "w") as handle:
        handle.write(header + "\n")
        for k in range(X.shape[1]):
            cells = [] if first is None else [repr(float(first[k]))]
            cells += [repr(float(v)) for v in X[:, k]]
            cells += [repr(float(v)) if k < U.shape[1] else "" for v in U[:, k if k < U.shape[1]
                                                                           else 0]]
            handle.write(",".join(cells) + "\n")
            handle.flush()


@pytest.mark.parametrize("seed", range(4))
def test_a_pandas_index_beside_a_time_column_is_left_out_and_a_named_ramp_refused(
        seed, tmp_path, monkeypatch):
    """Audit finding: ``,time,x1,x2,u`` (``DataFrame.to_csv`` of a frame with a time column)
    made the index a state; the first column's rules hold beside a time column, as in
    read_data."""
    _, X, U = _record(seed, samples=40, lost=0.0)
    X, U = X[:2], U[:1]
    period = [0.5, 0.25][seed % 2]
    stamps = 100.0 + period * np.arange(X.shape[1])
    path = tmp_path / "log.csv"
    for header, first in ((",time,x1,x2,u", np.arange(X.shape[1])),
                          ("k,time,x1,x2,u", 3.0 * np.arange(X.shape[1]))):
        # the time stamps ride in front of the states (_plc writes one first column)
        _plc(path, np.vstack([stamps, X]), U, header, first=first)
        if header.startswith("k"):
            with pytest.raises(ParameterError, match=r"'k' increases by the same step .* "
                                                     r"\(beside the time column 'time'\)"):
                _follow(monkeypatch, path, [], inputs="u", time="auto")
            chunks, _ = _follow(monkeypatch, path, [], inputs="u", states=["x1", "x2"],
                                time="auto")
        else:
            chunks, messages = _follow(monkeypatch, path, [], inputs="u", time="auto")
            assert any("row index" in m for m in messages)
        assert chunks[0].state_names == ("x1", "x2")
        assert abs(chunks[-1].dt - period) <= 1e-12 * period
        np.testing.assert_array_equal(_joined(chunks)[0], X)


@pytest.mark.parametrize("seed", range(4))
def test_time_columns_are_decided_as_read_data_decides_them(seed, tmp_path, monkeypatch):
    rng = np.random.default_rng(seed)
    _, X, U = _record(seed, samples=40, lost=0.0)
    X, U = X[:2], U[:1]
    path = tmp_path / "log.csv"
    # a pandas index: left out with a message, not a state
    _plc(path, X, U, ",x1,x2,u", first=np.arange(X.shape[1]))
    chunks, messages = _follow(monkeypatch, path, [], inputs="u", time="auto", dt=DT)
    np.testing.assert_array_equal(_joined(chunks)[0], X)
    assert any("row index" in m for m in messages)
    # a temperature T [degC]: a state, never the time
    _plc(path, X, U, "T [degC],x2,u")
    chunks, messages = _follow(monkeypatch, path, [], inputs="u", time="auto", dt=DT)
    assert chunks[0].state_names == ("T", "x2") and any("degC" in m for m in messages)
    # a 't' named as an input is an input, not a clashing time
    _plc(path, X[:1], np.vstack([U, X[1:, :-1]]), "x1,u,t")
    chunks, _ = _follow(monkeypatch, path, [], inputs=["u", "t"], time="auto", dt=DT)
    assert chunks[0].input_names == ("u", "t")
    # jittery stamps in ms: the time, the period from their span
    stamps = 1e3 * DT * (np.arange(X.shape[1]) + 0.01 * rng.standard_normal(X.shape[1]))
    _plc(path, X, U, "time [ms],x1,x2,u", first=stamps)
    chunks, _ = _follow(monkeypatch, path, [], inputs="u", time="auto")
    np.testing.assert_array_equal(_joined(chunks)[0], X)
    assert abs(chunks[-1].dt - DT) < 0.04 * DT
    # a named first column growing by one step: ambiguous, refused unless the states are named
    _plc(path, X, U, "k,x1,x2,u", first=np.arange(X.shape[1]))
    with pytest.raises(ParameterError, match="'k' increases by the same step"):
        _follow(monkeypatch, path, [], inputs="u", time="auto", dt=DT)
    chunks, _ = _follow(monkeypatch, path, [], inputs="u", states=["x1", "x2"], time="auto",
                        dt=DT)
    np.testing.assert_array_equal(_joined(chunks)[0], X)
    # or left out on request (time="ignore"), which needs dt: the rows are dt apart
    chunks, messages = _follow(monkeypatch, path, [], inputs="u", time="ignore", dt=DT)
    np.testing.assert_array_equal(_joined(chunks)[0], X)
    assert chunks[0].state_names == ("x1", "x2") and chunks[-1].dt == DT
    assert any("'k' is left out (time=ignore)" in m for m in messages)
    with pytest.raises(ParameterError, match="time='ignore' needs dt="):
        follow_csv(path, inputs="u", time="ignore")


def _append_bytes(path, data):
    def step():
        with open(path, "ab") as handle:
            handle.write(data)
    return step


@pytest.mark.parametrize("mark", [b"", b"\xef\xbb\xbf"])
def test_a_byte_not_utf8_in_later_lines_is_said_once_at_its_place(monkeypatch, tmp_path, mark):
    """A byte that is not UTF-8 in lines written later (a comment in Windows-1252): the note
    the batch readers give, once, naming the byte at its place in the file (it was said only
    when the first lines held it, and at its place in those lines); the UTF-8 header reads
    as the batch readers read it (which read the whole file as Windows-1252: 'Â°C')."""
    path = tmp_path / "log.csv"
    first = mark + "time,T [°C],u1,u2\n0,20,1,0\n0.5,20.5,0,1\n".encode()
    later = b"# ambient 23\xb0C\n1,21,1,1\n# \xb0\n1.5,21.5,0,0\n"
    path.write_bytes(first)
    chunks, messages = _follow(monkeypatch, path, [_append_bytes(path, later)], states=["T"])
    notes = [m for m in messages if "UTF-8" in m]
    place = len(first) + later.index(bytes([0xB0]))
    assert len(notes) == 1 and f"byte 0xb0 at {place}" in notes[0]
    assert "Windows-1252" in notes[0]
    X, U = _joined(chunks)
    np.testing.assert_array_equal(X, [[20, 20.5, 21, 21.5]])
    np.testing.assert_array_equal(U, [[1, 0, 1], [0, 1, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = read_data(path, inputs=["u1", "u2"], states=["T"])
    assert data.state_units == ("°C",)                 # the batch reader reads it alike
    np.testing.assert_array_equal(data.X[0], X)


def test_a_header_of_two_separators_waits_for_its_first_row(monkeypatch, tmp_path):
    """A tab-separated header with a ',' in a name, written before any row: the first row,
    written later, tells the separator (the batch readers' rule), and a repeated header is
    still a restart."""
    path = tmp_path / "log.csv"
    header = "time\tT, inside\tu1\tu2\n"
    path.write_text(header)
    rows = "".join(f"{k * DT}\t{20 + k}\t{k % 2}\t{k % 3}\n" for k in range(5))
    chunks, messages = _follow(monkeypatch, path, [_append(path, rows),
                                                   _append(path, header + rows)])
    assert [c.state_names for c in chunks] == [("T, inside",)] * len(chunks)
    assert sum(c.restart for c in chunks) == 1
    X, _ = _joined([c for c in chunks if not c.restart])
    np.testing.assert_array_equal(X, [[20, 21, 22, 23, 24]])
    assert any("repeats the header" in m for m in messages)
