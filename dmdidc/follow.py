"""Live sources: follow a growing CSV file (like ``tail -f``) and track a live estimator.

:func:`follow_csv` reads a CSV file while a logger writes it and yields :class:`Chunk` s in the
chunk convention of :meth:`~dmdidc.OnlineDMDidc.update` (``X[:, 0]`` is the previous chunk's
last state).  The file has the format of :mod:`dmdidc.data_io` (a header line naming the
columns, row ``k`` holding ``x_k`` and ``u_k``, an empty cell or ``nan`` a lost sample).
:func:`track` feeds any iterable of chunks (this one, a socket, a queue) to an
:class:`~dmdidc.OnlineDMDidc` and yields a :class:`Snapshot` (samples, delay and interval, new
change events) every ``every`` samples.

The rules, for a writer that misbehaves:

* **Torn last line.**  Only lines ended by a newline are read; a partial last line waits for
  the rest of it (it is never parsed in halves).
* **Restart of the writer.**  A file that was replaced (another inode), truncated (it shrank) or
  rewritten (the bytes already read changed), or a header line repeated further down (a writer
  that appends after a restart), starts a *new stream*: a message says so, the header is read
  again (it must name the same columns), and the rows are read from the new stream's first.
  The first chunk of a new stream has ``restart=True`` and starts at its own first state, so
  the chunk continuity restarts; :func:`track` bridges the break by two lost samples (NaN), so
  no regression row joins the two files and no complete sample of either is lost or counted
  twice.  Lines that the writer wrote and truncated before they were read are gone (the
  message gives the sizes).
* **Stalled file.**  After ``idle_timeout`` seconds without a new complete line the generator
  says so (and what torn line it leaves) and ends; a file that disappears (while a writer
  replaces it) counts as stalled until it is back.
* **Malformed line** (a cell that is not a number, a wrong number of cells, a time stamp that
  is missing, goes back, falls off the grid or is out of place, a duplicated row):
  ``bad_lines="error"`` raises a :class:`~dmdidc.errors.ParameterError` or
  :class:`~dmdidc.errors.DimensionError` naming the file, the line and its content;
  ``"lost"`` reports it and goes on (a message at the end gives the counts).  Without a time
  column the line is one lost sample (all NaN), as a garbled packet.  With one the stamps
  place the rows, so a line takes no period: a line without a readable stamp (``ERROR sensor
  timeout``) is left out, and a row it replaced shows as a gap at the next stamp (a lost
  sample there); a row with a good stamp and a cell that is not a number is a lost sample at
  its stamp; a row that repeats the last stamp is a duplicated row, dropped (the first is
  kept).  Every later row is read.
* **Excel and logger habits.**  The text of a line is read by the rules of every reader of a
  data file (:mod:`dmdidc.table_text`: encoding, ``#`` comment lines, separator, quoted
  cells), and a header that ends in its delimiter (every line ends in ``,``, ``;`` or a
  tab: the header's last name is empty) has no column after it: the empty cell after the
  last delimiter of a row is left out (a value there is a cell the header does not name: a
  malformed line).

With a ``time`` column (in the unit of its header, ``time [ms]``; found and read by the rules of
:mod:`dmdidc.time_column`, as :func:`~dmdidc.read_data` and the command line find it), the
first :data:`DECIDING_ROWS` + 1 rows are read together (the first chunk waits for them): the
first row is a stamp out of place if it is ahead of the two after it, and the sampling period
is first the largest of their steps that every step is a whole number of (at least a quarter
of the median step; else the median, as :func:`~dmdidc.time_column.time_grid` takes it), so a
lost or garbled row among them is a gap, not the period, even when every other one is lost;
then the period is the span of the stamps over the periods they cover (or ``dt``, which it
must match).  A gap of ``j`` whole periods is ``j - 1`` lost samples (NaN rows); a stamp that
goes back or falls off the grid (more than ``time_tolerance`` periods from a whole number of
periods: jitter is accepted within it) or repeats is a malformed line.  The rows after a gap
wait for a row that goes on from the last of them (a gap) or from the row before them: then
the jumped stamps are out of place (``199.5`` written for ``99.5``, or ``1e12``, one or
several in a row), malformed lines, instead of a gap that would make every row up to them a
lost sample and every later one go back.  A gap longer than the record so far is never
filled with lost samples unless a row confirms it: as the last line of the stream it is left
out; confirmed by the next row, a gap longer than the record and than 10 000 periods (an
outage early in the record is a gap) is a jump of the clock, and the follow stops (whatever
``bad_lines``) naming ``time='ignore'``.  Rows off the grid wait for the next row
(``bad_lines="lost"``): one back on the grid makes them malformed lines; three on a grid of
their own are a clock that stepped, and the follow stops with one message naming
``time='ignore'`` (the batch readers refuse such a file too).

Without a choice (``time="auto"``) the time column is decided, once for the whole follow, from
the header and the first :data:`DECIDING_ROWS` complete lines (the rest of the file is not
written yet): a ``t`` / ``T`` is the time if its unit is a time unit and its first stamps
increase (a temperature that rises in those rows is taken as the time, and its first fall is
then refused as a malformed line naming ``time``: name the column, ``time=None``); an unnamed
first column that grows by one step in those rows is a row index (as pandas' ``to_csv``
writes), left out with a message.  A column named in ``inputs`` / ``states`` is never taken as
the time.  The first chunk waits for those rows (or the end of the follow).  With
``time="ignore"`` (``--time ignore``) the column so decided is left out unread: its stamps
are never checked nor read (a clock that is reset, jumps or jitters, or ISO stamps), and the
rows are samples ``dt`` apart (a lost row is then not seen as a gap: only an empty cell is a
lost sample).

Only the states, the inputs and the time of a line are read.  A time column of ISO 8601 stamps
(:mod:`dmdidc.time_column`) is read as seconds on the clock of the first stamp, a line at a
time (:func:`~dmdidc.time_column.iso_stamp`): offsets are converted to UTC, and a stamp without
an offset among ones with (or the other way round) is a malformed line.  Without ``states`` a
column holding text in the first rows (a status flag) is no state: it is left out unread, with
a message naming it.
"""

from __future__ import annotations

import os
import time as _time
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.validation import check_integer, check_positive
from dmdidc.data_io import cell_error, parse_columns, parse_row, text_columns_note
from dmdidc.errors import DimensionError, ParameterError
from dmdidc.table_text import (
    commented_header,
    commented_header_note,
    decode_text,
    empty_columns_note,
    is_comment,
    is_missing,
    missing_cells,
    parse_header,
    separators,
    split_cells,
)
from dmdidc.time_column import (
    TIME_UNITS,
    IsoStamps,
    check_tolerance,
    find_time_column,
    is_time_name,
    iso_seconds,
    iso_stamp,
    name_unit,
    named_reason,
    nothing_to_ignore,
    time_unit,
)

__all__ = ["Chunk", "Snapshot", "StreamWarning", "follow_csv", "track", "DECIDING_ROWS"]

#: Complete lines read before an undecided time column is decided (module notes).
DECIDING_ROWS = 5

#: Fewest periods of a confirmed gap refused as a jump of the clock (module notes): one when it
#: is longer than the record so far and than this (an outage early in the record is a gap;
#: 1e4 lost samples are a few hundred kB).
_LONG_GAP = 10_000
#: Bytes before the read position compared at every poll to see a rewritten file.
_TAIL_BYTES = 64
#: Bytes read at a time (a long backlog is parsed and yielded block by block).
_BLOCK = 1 << 20


class StreamWarning(UserWarning):
    """A live source restarted, stalled or skipped a malformed line (the default report)."""


@dataclass(frozen=True)
class Chunk:
    """Samples of a live source in the chunk convention of :meth:`~dmdidc.OnlineDMDidc.update`.

    Attributes
    ----------
    X : ndarray, shape (n, L + 1)
        States; ``X[:, 0]`` is the previous chunk's last state (the stream's first state in a
        stream's first chunk).  NaN: a lost sample.
    U : ndarray, shape (m, L)
    restart : bool
        The first chunk of a new stream (the writer restarted): it does not continue the
        previous chunk.
    line : int
        The file line of the chunk's last sample.
    dt : float or None
        The sampling period (given, or the time column's step; None without either).
    state_names, input_names : tuple of str
    state_units, input_units : tuple of str
        From the header (``T_room [K]``); ``""`` where a column has none.
    """

    X: np.ndarray
    U: np.ndarray
    restart: bool = False
    line: int = 0
    dt: float | None = None
    state_names: tuple[str, ...] = ()
    input_names: tuple[str, ...] = ()
    state_units: tuple[str, ...] = ()
    input_units: tuple[str, ...] = ()


@dataclass(frozen=True)
class Snapshot:
    """The state of a tracked estimator after a chunk (:func:`track`).

    Attributes
    ----------
    samples : int
        Samples received (lost ones and restart bridges included: ``samples_seen_``).
    delay, low, high : ndarray, shape (m,), or None
        Delay estimate (s) of each input and its interval at ``level`` (None while the fit is
        not defined: then ``note`` says why).
    events : tuple of ChangeEvent
        Changes detected since the previous snapshot.
    dropped : int
        Lost samples so far.
    restarts : int
        Restarts of the source so far.
    note : str
        Why there is no delay yet ("" when there is one).
    warnings : tuple of str
        The warnings of the current fit (its failed diagnostics; and, after a detected
        change, that the model rests only on the samples since its onset), kept out of the
        warning system so a live loop does not repeat them.
    outliers : tuple of Outlier
        Samples read as outliers since the previous snapshot (``OnlineDMDidc.outliers_``):
        down-weighted, not taken for a change.  One inside the detector's open CUSUM excursion
        (``OnlineDMDidc.excursion_start_``) is held back until the excursion closes (or the
        source ends): a change detected in it would claim the excursion's rows as its own
        (before, outliers were printed as "not a change" and the change then began before
        them).
    """

    samples: int
    delay: np.ndarray | None
    low: np.ndarray | None
    high: np.ndarray | None
    events: tuple
    dropped: int
    restarts: int
    note: str = ""
    warnings: tuple[str, ...] = ()
    outliers: tuple = ()


def follow_csv(path: str | Path, *, inputs: Any, states: Any = None, time: Any = "auto",
               dt: float | None = None, poll: float = 0.2, idle_timeout: float | None = None,
               chunk: int = 1000, bad_lines: str = "error",
               report: Callable[[str], None] | None = None,
               first_column: int = 0, time_tolerance: float | None = None) -> Iterator[Chunk]:
    """Follow a CSV file as it grows and yield its samples in chunks (module notes).

    Parameters
    ----------
    path : str or Path
        The file; it must exist (an empty file waits for its header line).
    inputs : str, int or sequence of them
        The input columns: header names, or column numbers (0-based; see ``first_column``).
    states : str, int or sequence of them, optional
        The state columns (default: every column but the inputs and the time).
    time : str, int or None, default "auto"
        A column of sample times (module notes); None: none; ``"auto"``: decided as
        :func:`~dmdidc.read_data` decides it (:mod:`dmdidc.time_column`), from the header and
        the first :data:`DECIDING_ROWS` lines (module notes); ``"ignore"``: the column
        ``"auto"`` would take (named like a time, or a first column that grows by one step)
        is left out unread and the samples are taken as evenly spaced by ``dt`` (required; a
        table without such a column is refused).
    dt : float, optional
        Sampling period (s); with ``time`` it must agree with the column's step.
    poll : float, default 0.2
        Seconds between looks at a file that has no new complete line.
    idle_timeout : float or None, default None
        End after this many seconds without a new complete line (None: wait for ever).
    chunk : int, default 1000
        Most samples per chunk; a chunk holds what was written since the last one.
    bad_lines : {"error", "lost"}, default "error"
        A malformed line (a duplicated row included) raises, or is reported and passed over:
        without a time column it counts as one lost sample, with one the time stamps place
        the rows around it (module notes).
    report : callable, optional
        Receives the messages (restart, stall, lost lines); default: a :class:`StreamWarning`.
    first_column : {0, 1}, default 0
        The number of the first column in ``inputs``, ``states`` and ``time`` (1: a command
        line's numbering, as ``dmdidc identify --follow``; messages use the same).
    time_tolerance : float, optional
        Largest deviation of a time step from whole periods, in periods (default
        :data:`~dmdidc.time_column.TIME_TOLERANCE`); refused where no time column is read
        (``time=None`` or ``"ignore"``, or none found), as the batch readers refuse it.

    Returns
    -------
    iterator of Chunk
        A generator: the file is read as it is iterated.

    Raises
    ------
    ParameterError, DimensionError
        Bad arguments here; while iterating: unknown columns, a restarted file with other
        columns, a malformed line (with ``bad_lines="error"``).
    FileNotFoundError
        ``path`` does not exist at the start.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "log.csv"
    >>> _ = path.write_text("time,x,u\\n0,1.0,0.5\\n0.5,0.9,-1\\n1.0,0.7,0\\n2.0,0.4,1\\n1.")
    >>> messages = []
    >>> [(c.X.tolist(), c.U.tolist(), c.dt) for c in follow_csv(
    ...     path, inputs="u", time="time", poll=0.01, idle_timeout=0.05, report=messages.append)]
    [([[1.0, 0.9, 0.7, nan, 0.4]], [[0.5, -1.0, 0.0, nan]], 0.5)]
    >>> "stopped" in messages[0], "'1.' has no newline" in messages[0]
    (True, True)
    """
    path = Path(path)
    if bad_lines not in ("error", "lost"):
        raise ParameterError(f"bad_lines must be 'error' or 'lost'; got {bad_lines!r}")
    check_positive("poll", poll)
    if idle_timeout is not None:
        check_positive("idle_timeout", idle_timeout)
    chunk = check_integer("chunk", chunk, minimum=1)
    dt = None if dt is None else check_positive("dt", dt)
    say = report or (lambda message: warnings.warn(message, StreamWarning, stacklevel=3))
    if first_column not in (0, 1) or isinstance(first_column, bool):
        raise ParameterError(f"first_column must be 0 or 1; got {first_column!r}")
    tolerance = check_tolerance(time_tolerance, cli=first_column == 1)
    if isinstance(time, str) and time == "ignore" and dt is None:
        raise ParameterError(("--time ignore needs --dt" if first_column == 1 else
                              "time='ignore' needs dt=") + ", the sampling period T in "
                             "seconds: the time column is left out unread")
    if time_tolerance is not None and (time is None or isinstance(time, str)
                                       and time == "ignore"):
        raise _idle_tolerance(path.name, tolerance, first_column == 1)
    columns = _Columns(path.name, inputs, states, time, first_column, say,
                       given_tolerance=None if time_tolerance is None else tolerance)
    # (checked and opened here, not at the first chunk: a bad call fails where it is made)
    return _chunks(_Tail(path, poll, idle_timeout, say), columns, path.name, dt, chunk,
                   bad_lines, say, tolerance)


def _chunks(tail: _Tail, columns: _Columns, name: str, dt: float | None, chunk: int,
            bad_lines: str, say: Callable[[str], None], tolerance: float) -> Iterator[Chunk]:
    """The chunks of the lines of ``tail`` (:func:`follow_csv`)."""
    stream, restart, tally, comment = None, False, Counter(), None
    header = None                      # a header of two separators, until its first row

    def ready_chunks() -> Iterator[Chunk]:
        nonlocal restart
        while stream is not None and stream.ready():
            yield stream.take(chunk, restart)
            restart = False

    for batch in tail.batches():
        if isinstance(batch, str):                       # the writer restarted
            if stream is not None:
                stream.finish()                          # the old stream's rows first
                yield from ready_chunks()
            say(f"{name}: {batch}; reading it as a new stream from its first line")
            stream, restart, header = None, True, None
            continue
        for number, text in batch:
            if is_comment(text):                         # as the batch readers skip them
                comment = ((number, text) if stream is None and header is None else None)
                continue                                 # (numpy.savetxt's header)
            if stream is None and comment and (found := commented_header([comment[1]], text)):
                say(f"{name}: {commented_header_note(comment[0])}")
                stream = _Stream(columns, columns.resolve(found[1], comment[0], text),
                                 found[1], name, dt, bad_lines, say, tolerance, tally)
            elif stream is None and header is not None:  # its first row tells the separator
                stream = _Stream(columns, columns.resolve(header[1], header[0], text),
                                 header[1].strip(), name, dt, bad_lines, say, tolerance, tally)
                header = None
            comment = None
            if stream is not None and text.strip() == stream.header:
                stream.finish()
                yield from ready_chunks()                # the old stream's rows first
                say(f"{name} line {number} repeats the header: the writer restarted; "
                    f"reading a new stream from there")
                stream, restart = None, True
            if stream is None and len(separators(text)) > 1:
                header = (number, text)                  # as the batch readers decide it
                continue
            if stream is None:
                stream = _Stream(columns, columns.resolve(text, number), text.strip(), name,
                                 dt, bad_lines, say, tolerance, tally)
                continue
            try:
                stream.add(number, text)
            except ValueError as error:
                # the rows before the line that stops the stream are the data's: hand them on
                # first (a model of them is still a model), then the error
                try:
                    stream.finish()
                except ValueError:
                    raise error from None
                yield from ready_chunks()
                raise
        if stream is not None and stream.time is not None and dt is None:
            dt = stream.dt                               # kept for the streams after a restart
        yield from ready_chunks()
    if stream is None and header is not None:            # a header and no row
        stream = _Stream(columns, columns.resolve(header[1], header[0]), header[1].strip(),
                         name, dt, bad_lines, say, tolerance, tally)
    if stream is not None:                               # fewer lines than it waited for
        stream.finish()
        yield from ready_chunks()
    if tally:                                            # (each was reported as it came)
        say(f"{name}: in all " + ", ".join(
            f"{count} {noun}{'' if count == 1 else 's'} {what}" for count, noun, what in (
                (tally["duplicates"], "duplicated row", "dropped"),
                (tally["lost"], "malformed line", "counted as lost samples"),
                (tally["left out"], "malformed line", "left out")) if count))


class _Tail:
    """The complete lines of a growing file, batch by batch, and its restarts."""

    def __init__(self, path: Path, poll: float, idle_timeout: float | None,
                 say: Callable[[str], None]) -> None:
        self.path, self.poll, self.idle_timeout, self.say = path, poll, idle_timeout, say
        self.handle = None
        if not self._open():
            raise FileNotFoundError(f"no such file to follow: {str(path)!r}")

    def _open(self) -> bool:
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return False
        if self.handle is not None:
            self.handle.close()
        stat = os.fstat(handle.fileno())
        self.handle, self.identity = handle, (stat.st_dev, stat.st_ino)
        self.offset, self.pending, self.tail, self.line = 0, b"", b"", 0
        self.decoded = False                       # the encoding's note, said once a file
        return True

    def batches(self) -> Iterator[list[tuple[int, str]] | str]:
        """Lists of (file line, text) of new complete lines, or a string saying why the file
        restarted; ends after ``idle_timeout`` seconds without a new line."""
        try:
            idle_since = _time.monotonic()
            while True:
                change = self._change()
                if change is not None:
                    if change.startswith("replaced"):    # the old file's last lines first
                        lines = self._read()
                        if lines:
                            yield lines
                    torn = self._torn()
                    if self._open():
                        yield change + (f" (its torn last line {torn} is not used)"
                                        if torn else "")
                        continue
                lines = self._read()
                if lines:
                    idle_since = _time.monotonic()
                    yield lines
                    continue
                idle = _time.monotonic() - idle_since
                if self.idle_timeout is not None and idle >= self.idle_timeout:
                    torn = self._torn()
                    self.say(f"{self.path.name}: no new complete line for {self.idle_timeout:g} "
                             f"s; stopped" + (f" (the last line {torn} has no newline yet: "
                                               f"not used)" if torn else ""))
                    return
                _time.sleep(self.poll)
        finally:
            self.handle.close()

    def _torn(self) -> str:
        return repr(self.pending.decode(errors="replace")[:80]) if self.pending.strip() else ""

    def _change(self) -> str | None:
        """Why the file is not the one being read any more (None: it is, or it is missing)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:                # being replaced: wait (a stall) until it is back
            return None
        if (stat.st_dev, stat.st_ino) != self.identity:
            return "replaced by a new file"
        if stat.st_size < self.offset:
            return f"truncated (it has {stat.st_size} bytes; {self.offset} were read)"
        start = self.offset - len(self.tail)
        if self.tail and os.pread(self.handle.fileno(), len(self.tail), start) != self.tail:
            return "rewritten (the bytes already read changed)"
        return None

    def _read(self) -> list[tuple[int, str]]:
        data = self.handle.read(_BLOCK)
        while data and b"\n" not in data:      # a long torn line: read on to its end or EOF
            more = self.handle.read(_BLOCK)
            if not more:
                break
            data += more
        if not data:
            return []
        self.offset += len(data)
        self.tail = (self.tail + data)[-_TAIL_BYTES:]
        self.pending += data
        end = self.pending.rfind(b"\n") + 1        # a torn last line waits for its newline
        complete, self.pending = self.pending[:end], self.pending[end:]
        lines = []
        # the batch readers' encoding rule, said at the first new lines that need it
        decoded, note = decode_text(complete, self.offset - len(self.pending) - len(complete))
        if note and not self.decoded:
            self.say(f"{self.path.name}: {note}")
            self.decoded = True
        for text in decoded.split("\n")[:-1]:
            self.line += 1
            if text.strip():                       # (comments are skipped by the reader)
                lines.append((self.line, text.rstrip("\r")))
        return lines


class _Columns:
    """The column choice, resolved against each stream's header and decided once (the same
    for every stream)."""

    def __init__(self, source: str, inputs: Any, states: Any, time: Any, first: int = 0,
                 say: Callable[[str], None] = print, given_tolerance: float | None = None
                 ) -> None:
        if inputs is None:
            raise ParameterError("follow_csv needs inputs=[...]: the input columns")
        self.source, self.names, self.first, self.say = source, None, first, say
        # "ignore" decides as "auto" does, then leaves the column found out unread
        self.ignore = isinstance(time, str) and time == "ignore"
        self.inputs, self.states = _specs(inputs), states
        self.time = "auto" if self.ignore else time
        self.decided: dict | None = None
        self.given_tolerance = given_tolerance    # refused if no time column is read
        self.trailing = False                     # the lines end in their delimiter
        self.clock: IsoStamps | None = None       # ISO 8601 stamps: their clock, once read
        self.numeric = False                      # numeric stamps were read

    def resolve(self, header: str, number: int, row: str | None = None) -> dict | None:
        """The columns of a stream with this header (None: the first rows decide them);
        ``row``: its first row, which decides between two separators of the header."""
        names, units, delimiter = parse_header(header, f"{self.source} line {number}", row)
        # a line that ends in its delimiter (Excel, loggers) has an empty last cell: no column.
        # The parsed header tells it (its last name empty), not the raw text: a trailing tab
        # is white space to str.rstrip, and was read as a column '' of lost samples
        self.trailing = len(names) > 1 and names[-1] == "" and units[-1] == ""
        if self.trailing:
            names, units = names[:-1], units[:-1]
            if self.names is None:
                self.say(f"{self.source}: the header ends in {delimiter!r}: the empty cell "
                         f"after the last {delimiter!r} of a line is no column")
        if self.names is not None and names != self.names:
            raise ParameterError(f"{self.source} restarted with the columns {names}; it had "
                                 f"{self.names} (a new stream must have the same signals)")
        self.names, self.units, self.delimiter = names, units, delimiter
        # without states named, the first rows tell the columns of text, which are no state
        # and a time column whose unit is no time unit ('time [UTC]') may hold ISO stamps
        if self.decided is None and self.states is not None and self._chosen() and (
                self.time is None or name_unit(*self._cell(self._index(self.time, "time")))[1]
                in TIME_UNITS):
            self.decided = self._columns(self.time)
        return self.decided

    def _cell(self, column: int) -> tuple[str, str]:
        return self.names[column], self.units[column]

    def _chosen(self) -> bool:
        """Whether the time column is chosen, not decided from the first rows."""
        return self.time != "auto" or "auto" in self.names

    def candidates(self) -> list[int]:
        """The columns that are the time if they hold ISO 8601 stamps: the one chosen, or
        those named like a time (not named as signals; none with ``time="ignore"``)."""
        if self._chosen():
            return [] if self.time is None else [self._index(self.time, "time")]
        signals = {self._index(spec, "inputs") for spec in self.inputs} | (
            set() if self.states is None else
            {self._index(spec, "states") for spec in _specs(self.states)})
        return [] if self.ignore else [c for c, (n, u) in enumerate(zip(
            self.names, self.units, strict=True)) if c not in signals and is_time_name(n, u)]

    def decide(self, values: np.ndarray, words: Collection[int] = (),
               examples: dict[int, str] | None = None, empty: tuple[int, ...] = ()) -> dict:
        """The columns with the time column found by its name and ``values`` (rows, columns),
        the first rows of the file (module notes); ``words``: the columns of text in them
        (no state unless named one), ``examples`` a cell of each; ``empty``: columns without
        a name or a value, left out."""
        if self.decided is not None:
            return self.decided
        if self._chosen():
            self.decided = self._columns(self.time, unread=empty, words=words,
                                         examples=examples)
            return self.decided
        names, cli = self.names, self.first == 1
        signals = [self._index(spec, "inputs") for spec in self.inputs] + (
            [] if self.states is None else [self._index(s, "states") for s in _specs(self.states)])
        notes: list[str] = []
        found = find_time_column(names, self.units, values, notes=notes,
                                 label=lambda c: repr(names[c]), cli=cli, announce=False,
                                 signals=set(signals), complete=self.states is not None,
                                 ignore=self.ignore)
        if found is None and self.ignore:
            raise nothing_to_ignore(self.source, ", ".join(map(repr, names)), cli=cli)
        if notes:
            self.say(f"{self.source}: {'; '.join(notes)}")
        if found is None or not found.read:
            if self.given_tolerance is not None:
                raise _idle_tolerance(self.source, self.given_tolerance, cli)
            self.decided = self._columns(None, unread=empty + (() if found is None else (
                found.column, *found.left_out)), words=words, examples=examples)
        else:
            name = names[found.column]
            self.decided = self._columns(found.column + self.first,
                                         named_reason(repr(name), name, cli=cli),
                                         unread=empty + found.left_out, words=words,
                                         examples=examples)
        return self.decided

    def _columns(self, time: Any, reason: str = "", unread: tuple[int, ...] = (),
                 words: Collection[int] = (), examples: dict[int, str] | None = None) -> dict:
        names, units = self.names, self.units
        special = [] if time is None else [self._index(time, "time")]
        inputs = [self._index(spec, "inputs") for spec in self.inputs]
        states = ([c for c in range(len(names))
                   if c not in inputs + special + list(unread) and c not in words]
                  if self.states is None else
                  [self._index(spec, "states") for spec in _specs(self.states)])
        left = [c for c in words if c not in states + inputs + special + list(unread)]
        if left and examples is not None:
            self.say(f"{self.source}: " + text_columns_note(
                [repr(names[c]) for c in left], [examples[c] for c in left],
                cli=self.first == 1))
        chosen = states + inputs + special
        if not states or len(set(chosen)) != len(chosen):
            raise ParameterError(f"{self.source}: states {[names[c] for c in states]}, inputs "
                                 f"{[names[c] for c in inputs]} and time "
                                 f"{[names[c] for c in special]} must be distinct columns, "
                                 f"with at least one state{reason}")
        # (ISO stamps, text in the first rows, are seconds whatever the header's unit says)
        seconds = 1.0 if not special or special[0] in words else time_unit(
            units[special[0]], f"{self.source} column {names[special[0]]!r}", reason=reason,
            name=names[special[0]], note=self.say)
        return dict(names=names, units=units, delimiter=self.delimiter, states=states,
                    inputs=inputs, time=special[0] if special else None, seconds=seconds,
                    reason=reason)

    def stamp(self, cell: str, number: int, where: str) -> float:
        """The time cell of line ``number`` in seconds: a number (NaN: missing) or an ISO
        8601 stamp on the clock of the first (module notes), never both in one follow."""
        cell, column = cell.strip(), self.decided["names"][self.decided["time"]]
        if self.clock is None:
            try:
                value = np.nan if is_missing(cell) else float(cell)
            except ValueError:
                pass
            else:
                self.numeric = self.numeric or np.isfinite(value)
                return value
            clock = None if self.numeric else iso_seconds(
                [cell], where=f"{self.source} column {column!r}", lines=[number])
            if clock is None:
                raise cell_error(cell, column, where, time=True)
            self.set_clock(clock)
        if is_missing(cell):
            return np.nan
        return iso_stamp(cell, self.clock, where=where)

    def set_clock(self, clock: IsoStamps) -> None:
        """Read the time column's stamps on ``clock`` (its unit is seconds; local stamps add
        the daylight-saving hint to every refusal)."""
        self.clock = clock
        self.decided["seconds"] = 1.0
        self.decided["reason"] += clock.hint
        if clock.note:
            self.say(f"{self.source}: {clock.note}")

    def _index(self, spec: Any, option: str) -> int:
        names = self.names
        if isinstance(spec, str) and spec in names:
            return names.index(spec)
        if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool) and \
                0 <= spec - self.first < len(names):
            return int(spec) - self.first
        raise ParameterError(f"{option}: {spec!r} is not a column of {self.source} (its columns "
                             f"are {names}; give names or numbers {self.first} to "
                             f"{len(names) - 1 + self.first})")


    def cells(self, text: str, delimiter: str) -> list[str]:
        """The cells of a row (its empty cell after a trailing delimiter left out)."""
        cells = split_cells(text, delimiter)
        if self.trailing and len(cells) == len(self.names) + 1 and not cells[-1].strip():
            cells.pop()
        return cells


def _idle_tolerance(source: str, tolerance: float, cli: bool) -> ParameterError:
    """The refusal of a time tolerance with no stamps to check (as the batch commands refuse
    it): an option that would not act is refused, not silently ignored."""
    option = f"--time-tolerance {tolerance:g}" if cli else f"time_tolerance={tolerance:g}"
    why = ("--time none or ignore" if cli else "time=None or 'ignore'")
    return ParameterError(f"{option} bounds the jitter of a time column's stamps, and {source} "
                          f"has none to check ({why}, or no column named time, timestamp or t); "
                          f"drop {option.split()[0].split('=')[0]} (an option that would not "
                          f"act is refused)")


def _common_period(steps: np.ndarray, tolerance: float) -> float:
    """The period of ``steps`` (> 0): the largest of them that every step is a whole number of,
    within ``tolerance`` periods, among those of at least a quarter of the median step (a tiny
    step between two jittered stamps is no period), refined as their span over the periods
    they cover; the median step if none is.  A logger's first rows may lose every other one:
    the median step was then twice the period."""
    median = float(np.median(steps))
    for period in sorted(set(steps[steps >= median / 4].tolist()), reverse=True):
        whole = np.round(steps / period)
        if (whole >= 1).all() and (np.abs(steps / period - whole) <= tolerance).all():
            return float(steps.sum() / whole.sum())     # their span: jitter averages out
    return median


def _specs(value: Any) -> list:
    return [value] if isinstance(value, (str, int, np.integer)) else list(value)


class _Stream:
    """The rows of one stream (one file, until a restart) and the chunks made of them.

    With a time column the stamps place the rows (module notes): a line that is refused
    (``bad_lines="lost"``) or repeats the last stamp (a duplicated row) takes no period, a row
    it stood for is a gap at the next stamp, and the row after a gap is held until the next
    row tells a gap from a stamp out of place.  Without one, each refused line stands for one
    lost sample."""

    def __init__(self, choice: _Columns, columns: dict | None, header: str, source: str,
                 dt: float | None, bad_lines: str, say: Callable[[str], None],
                 tolerance: float, tally: Counter) -> None:
        self.choice, self.columns = choice, columns     # None: the first lines decide them
        self.waiting: list[tuple[int, str]] = []        # lines read before the decision
        self.header, self.source, self.dt = header, source, dt
        self.bad_lines, self.say, self.tolerance = bad_lines, say, tolerance
        self.tally = tally                        # bad lines and duplicates of the follow
        self.estimate = dt is None                # the period is read from the stamps
        self.unplaced: list[tuple] = []           # the first rows, until they are settled
        self.settled = False
        self.first_time: float | None = None      # the stamps' span since the first
        self.periods = 0
        self.rows: list[np.ndarray] = []          # new rows (values of every column)
        self.lines: list[int] = []                # and their file lines
        self.last: np.ndarray | None = None       # the row whose state starts the next chunk
        self.last_time: float | None = None       # the last placed stamp
        self.last_row: tuple[int, np.ndarray] | None = None     # and its line and values
        self.held: list[tuple] = []               # rows after a jump, until a row tells
        self.off_grid: list[tuple] = []           # rows off the grid, until a row tells

    @property
    def time(self) -> int | None:
        return None if self.columns is None else self.columns["time"]

    def decide(self) -> None:
        """Decide the columns from the lines read so far (module notes) and read them."""
        if self.columns is not None:
            return
        names = self.choice.names
        cells = [self.choice.cells(text, self.choice.delimiter) for _, text in self.waiting]
        kept = [k for k, row in enumerate(cells) if len(row) == len(names)]
        cells = np.strings.strip(np.array([cells[k] for k in kept], dtype=str).reshape(
            len(kept), len(names)))
        values, bad, words = parse_columns(cells)
        numbers = [self.waiting[k][0] for k in kept]
        clocks = {}
        for c in self.choice.candidates():
            if c in words and (clock := iso_seconds(
                    cells[:, c], where=f"{self.source} column {names[c]!r}", lines=numbers,
                    missing=missing_cells(cells[:, c]))) is not None:
                values[:, c], clocks[c] = clock.seconds, clock
        # a row with a cell that is no number (where its column has numbers) is refused or
        # lost when it is read; a row written twice (every cell the same) would make a time
        # column look like a signal that does not strictly increase: it is dropped when read
        garbled = np.zeros(len(kept), dtype=bool)
        for c in bad:
            if c not in words:
                garbled |= np.isnan(values[:, c]) & ~missing_cells(cells[:, c])
        rows = [values[k] for k in range(len(kept)) if not garbled[k]]
        rows = [row for k, row in enumerate(rows)
                if k == 0 or not np.array_equal(row, rows[k - 1], equal_nan=True)]
        # a column without a name, empty in these rows, is no signal (the batch readers' rule)
        empty = tuple(c for c, name in enumerate(names)
                      if not name and len(kept) and missing_cells(cells[:, c]).all())
        if empty:
            self.say(f"{self.source}: " + empty_columns_note(
                list(empty), len(names), repr(self.choice.delimiter),
                bool((cells[:, list(empty)] == "").all())))
        self.columns = self.choice.decide(np.reshape(rows, (len(rows), len(names))),
                                          words, {c: str(cells[bad[c], c]) for c in words},
                                          empty=empty)
        if self.time in clocks and self.choice.clock is None:
            self.choice.set_clock(clocks[self.time])
        waiting, self.waiting = self.waiting, []
        for number, text in waiting:
            self.add(number, text)

    def finish(self) -> None:
        """The end of the stream: no later line will come to place the rows still held."""
        self.decide()
        self._settle()
        self._confirm(len(self.held), None)
        self._flush_off_grid()

    def add(self, number: int, text: str) -> None:
        if self.columns is None:
            self.waiting.append((number, text))
            if len(self.waiting) >= DECIDING_ROWS:
                self.decide()
            return
        where = f"{self.source} line {number} ({text.strip()[:80]!r})"
        bad = None                                # why a row kept for its stamp is lost
        try:
            cells = self.choice.cells(text, self.columns["delimiter"])
            try:
                values = self._parse(cells, number, where)
            except ParameterError as exc:
                if self.bad_lines == "error" or self.time is None:
                    raise
                values, bad = self._stamp_only(cells, exc), exc
        except (ParameterError, DimensionError) as exc:
            self._refuse(exc, number)
            return
        if self.time is not None and not self.settled:
            self.unplaced.append((number, where, values, bad))
            if len(self.unplaced) > DECIDING_ROWS:
                self._settle()
            return
        self._place(number, where, values, bad)

    def _parse(self, cells: list[str], number: int, where: str) -> np.ndarray:
        """The values of a row's cells: only the states, inputs and time are read (a column
        of text nobody reads is left out), the time as a number or an ISO 8601 stamp."""
        c = self.columns
        values = parse_row(cells, c["names"], where, columns=c["states"] + c["inputs"])
        if self.time is not None:
            values[self.time] = self.choice.stamp(cells[self.time], number, where)
        return values

    def _stamp_only(self, cells: list[str], exc: ParameterError) -> np.ndarray:
        """A lost sample (NaN) at the time stamp of a row with a cell that is not a number;
        ``exc`` is raised if the stamp is not one either (then nothing places the row)."""
        values = np.full(len(cells), np.nan)
        try:
            values[self.time] = self.choice.stamp(cells[self.time], 0, str(exc))
        except ParameterError:
            raise exc from None
        if not np.isfinite(values[self.time]):
            raise exc
        return values

    def _settle(self) -> None:
        """Place the first rows, read together: the first has no row before it to tell a
        stamp out of place, so it is one if it is ahead of the two after it (which go on from
        before it); without ``dt`` the period's first guess is the largest that every step
        is a whole number of (:func:`_common_period`), so rows lost among them are gaps."""
        if self.settled:
            return
        self.settled = True
        unplaced, self.unplaced = self.unplaced, []
        stamps = [self._stamp(row[2]) for row in unplaced]
        timed = [k for k, stamp in enumerate(stamps) if np.isfinite(stamp)]
        if len(timed) >= 3:
            a, b, c = timed[:3]
            if stamps[a] > stamps[c] > stamps[b]:
                self._refuse(ParameterError(
                    f"{unplaced[a][1]}: time {stamps[a]:g} s is ahead of the next rows (line "
                    f"{unplaced[b][0]} at {stamps[b]:g} s, line {unplaced[c][0]} at "
                    f"{stamps[c]:g} s), which go on from before it: a stamp out of place"
                    f"{self.columns['reason']}"), unplaced[a][0])
                del unplaced[a], stamps[a]
        steps = np.diff([stamp for stamp in stamps if np.isfinite(stamp)])
        if self.dt is None and (steps > 0).any():
            self.dt = _common_period(steps[steps > 0], self.tolerance)
        for row in unplaced:
            self._place(*row)

    def _stamp(self, values: np.ndarray) -> float:
        return float(values[self.time]) * self.columns["seconds"]

    def _place(self, number: int, where: str, values: np.ndarray,
               bad: ParameterError | None = None) -> None:
        """Place a row; rows whose stamps jump over periods wait for a row that tells a gap
        (it goes on from the last of them) from stamps out of place (it goes on from the row
        before them: ``199.5`` written for ``99.5`` would cost the rows up to 199.5 s), and
        rows off the grid wait for a row that tells a bad stamp (it is on the grid) from a
        clock that stepped (three rows on a grid of their own)."""
        row = number, where, values, bad
        if self.time is None:
            self._put(*row, hold=False)
            return
        stamp = self._stamp(values)
        if self.held and np.isfinite(stamp):
            first, end = self._stamp(self.held[0][2]), self._stamp(self.held[-1][2])
            if self.last_time < stamp < first and self._whole(stamp - self.last_time):
                self._out_of_place(len(self.held), number, stamp)
            elif first <= stamp < end:            # the held rows from ``stamp`` on
                later = sum(self._stamp(held[2]) >= stamp for held in self.held)
                self._out_of_place(later, number, stamp, last=True)
            if self.held and stamp == self._stamp(self.held[-1][2]):
                if np.array_equal(values, self.held[-1][2], equal_nan=True):
                    self._duplicate(values, where, stamp, self.held[-1][::2])
                    return
                # a jumped stamp that the next row repeats with other values: the jump, not
                # the row that goes on, is the stamp out of place (it was kept, and the real
                # row dropped as a duplicate)
                self._out_of_place(1, number, stamp, last=True, same=True)
            if self.held and stamp > self._stamp(self.held[-1][2]):
                # only a row one period on confirms them (one off the grid tells nothing)
                jump = self._whole(stamp - self._stamp(self.held[-1][2]))
                if jump is not None and jump > 1 and len(self.held) < DECIDING_ROWS:
                    self.held.append(row)         # another jump: the next row tells
                    return
                if jump is not None:
                    self._confirm(len(self.held), number)
        if self.off_grid and np.isfinite(stamp):
            anchor = self._stamp(self.off_grid[-1][2])
            if stamp > anchor and self._whole(stamp - anchor) and \
                    self._whole(stamp - self.last_time) is None:
                self.off_grid.append(row)         # on a grid of their own
                if len(self.off_grid) >= 3:
                    self._clock_stepped()
                return
            self._flush_off_grid()
        if self.bad_lines == "lost" and self.last_time is not None and not self.held and \
                stamp > self.last_time and self._whole(stamp - self.last_time) is None:
            self.off_grid.append(row)
            return
        self._put(*row, hold=True)

    def _whole(self, step: float) -> int | None:
        """The whole periods (at least one) that ``step`` seconds are, None if it is off the
        grid (more than the tolerance from a whole number of periods)."""
        dt = step if self.dt is None else self.dt
        periods = round(step / dt)
        return periods if periods >= 1 and abs(step - periods * dt) <= self.tolerance * dt \
            else None

    def _out_of_place(self, count: int, number: int, stamp: float, last: bool = False,
                      same: bool = False) -> None:
        """Refuse ``count`` held rows (the last ones with ``last``) as stamps out of place:
        the row of line ``number`` at ``stamp`` goes on from before them (``same``: it has
        the stamp of the one refused, with other values)."""
        if not count:
            return
        out = self.held[-count:] if last else self.held[:count]
        self.held = self.held[:-count] if last else self.held[count:]
        for held in out:
            self._refuse(ParameterError(
                f"{held[1]}: time {self._stamp(held[2]):g} s jumps ahead of "
                f"{self.last_time:g} s of line {self.last_row[0]}, and the next row (line "
                f"{number}) " + ("has that stamp with other values" if same else
                                 f"goes on from there at {stamp:g} s") +
                f": a stamp out of place{self.columns['reason']}"), held[0])

    def _confirm(self, count: int, number: int | None) -> None:
        """Place the first ``count`` held rows: the row of line ``number`` goes on from them
        (None: the stream ended, and nothing confirms them).  A gap longer than the record so
        far is not filled with lost samples: at the end the stamp is left out; confirmed (and
        longer than :data:`_LONG_GAP` periods) the clock jumped: the follow stops, naming the
        remedy."""
        confirmed, self.held = self.held[:count], self.held[count:]
        for held in confirmed:
            stamp = self._stamp(held[2])
            jump = self._whole(stamp - self.last_time)
            record = self.periods + 1
            if jump is None or jump - 1 <= (record if number is None else
                                            max(record, _LONG_GAP)):
                self._put(*held, hold=False)
                continue
            what = (f"{held[1]}: time {stamp:g} s jumps {jump} periods of {self.dt:g} s ahead "
                    f"of {self.last_time:g} s of line {self.last_row[0]}, more than the "
                    f"{record} samples so far")
            if number is None:
                self._refuse(ParameterError(
                    f"{what}, and no row after it confirms a gap that long: a stamp out of "
                    f"place{self.columns['reason']}"), held[0])
            else:
                self._clock_error(f"{what}, and the next row (line {number}) goes on from "
                                  f"there: the clock jumped (a gap that long is not filled "
                                  f"with lost samples)")

    def _flush_off_grid(self) -> None:
        """Refuse the rows held off the grid: a row back on it (or the end) says they were
        bad stamps, not a clock that stepped."""
        off_grid, self.off_grid = self.off_grid, []
        for row in off_grid:
            self._put(*row, hold=False)           # refused there, saying how far off

    def _clock_stepped(self) -> None:
        first, *rest = self.off_grid
        stamp = self._stamp(first[2])
        step = stamp - self.last_time
        self._clock_error(
            f"{first[1]}: time {stamp:g} s is {step:g} s after {self.last_time:g} s of line "
            f"{self.last_row[0]}, {abs(step / self.dt - round(step / self.dt)):.2g} periods off "
            f"the grid of T = {self.dt:g} s (the tolerance is {self.tolerance:g} periods), and "
            f"the next rows (lines {', '.join(str(row[0]) for row in rest)}) go on from there "
            f"on a grid of their own: the clock stepped")

    def _clock_error(self, what: str) -> None:
        """Stop the follow (whatever ``bad_lines``): every later row would be refused."""
        cli = self.choice.first == 1
        ignore = "--time ignore with --dt" if cli else "time='ignore' with dt="
        reason = self.columns["reason"]
        remedy = ("" if ("--time ignore" if cli else "time='ignore'") in reason else
                  f"; a clock that steps, jumps or is reset is left out unread by {ignore} (the "
                  f"rows then are samples T apart)")
        raise ParameterError(f"{what}{remedy}{reason}")

    def _put(self, number: int, where: str, values: np.ndarray, bad: ParameterError | None,
             hold: bool) -> None:
        try:
            periods = self._periods(values, where)
        except (ParameterError, DimensionError) as exc:
            self._refuse(bad or exc, number)
            return
        if periods is None:                       # a duplicated row, dropped
            return
        if hold and periods > 1:                  # a gap, or a stamp out of place
            self.held.append((number, where, values, bad))
            return
        if self.time is not None:
            stamp = self._stamp(values)
            clock = self.choice.clock
            if periods > 1 and clock is not None and clock.local and \
                    abs(stamp - self.last_time - 3600.0) <= self.dt:
                # lost samples of an hour between local stamps: most likely the clock
                self.say(f"{where}: the time jumps {stamp - self.last_time:g} s ahead of "
                         f"line {self.last_row[0]}, {periods - 1} lost samples{clock.hint}")
            if self.last_time is None:
                self.first_time = stamp if self.first_time is None else self.first_time
            else:
                self.dt = stamp - self.last_time if self.dt is None else self.dt
                self.periods += periods
                if self.estimate:                 # then the span: jitter averages out
                    self.dt = (stamp - self.first_time) / self.periods
            self.last_time = stamp
        gap = max(periods - 1, 0)
        self.rows.extend([np.full(values.size, np.nan)] * gap + [values])
        self.lines.extend([number] * (gap + 1))
        self.last_row = number, values
        if bad is not None:
            self.tally["lost"] += 1
            self.say(f"{bad}; counted as a lost sample at its time stamp")

    def _refuse(self, exc: Exception, number: int) -> None:
        if self.bad_lines == "error":
            raise exc
        if self.time is None:
            self.tally["lost"] += 1
            self.say(f"{exc}; counted as a lost sample")
            self.rows.append(np.full(len(self.columns["names"]), np.nan))
            self.lines.append(number)
        else:
            self.tally["left out"] += 1
            self.say(f"{exc}; left out (the time stamps place the rows: a sample it stood "
                     f"for is a gap at the next stamp)")

    def _periods(self, values: np.ndarray, where: str) -> int | None:
        """The periods from the last placed row to this one by its time stamp (1 without a
        time column, 0 for the first row; None: a duplicate of the last row, reported)."""
        if self.time is None:
            return 1
        stamp = self._stamp(values)
        reason = self.columns["reason"]
        if not np.isfinite(stamp):
            raise ParameterError(f"{where}: no time stamp{reason}")
        previous = self.last_time
        if previous is None:
            return 0
        step = stamp - previous
        if step == 0:
            return self._duplicate(values, where, previous)
        if step < 0:
            ignore = "--time ignore" if self.choice.first == 1 else "time='ignore'"
            remedy = "" if ignore in reason else (
                f": a clock that is reset or jumps is left out unread by {ignore} with "
                f"{'--dt' if self.choice.first == 1 else 'dt='}")
            raise ParameterError(f"{where}: time {stamp:g} s goes back from {previous:g} s "
                                 f"of line {self.last_row[0]} (time stamps must increase"
                                 f"{remedy}){reason}")
        dt = step if self.dt is None else self.dt   # (a single step before: the period)
        periods = round(step / dt)
        if periods < 1 or abs(step - periods * dt) > self.tolerance * dt:
            raise ParameterError(f"{where}: time {stamp:g} s after {previous:g} s is not a whole "
                                 f"number of periods of {dt:g} s later within the "
                                 f"tolerance of {self.tolerance:g} periods (time stamps grow by "
                                 f"whole sampling periods; --time-tolerance / time_tolerance= "
                                 f"widens it for jittery stamps){reason}")
        return periods

    def _duplicate(self, values: np.ndarray, where: str, previous: float,
                   kept_row: tuple[int, np.ndarray] | None = None) -> None:
        """Refuse or drop a row repeating the stamp of ``kept_row`` (default: the last placed
        row; a held row too: the pair is judged by the rows after it)."""
        line, kept = kept_row or self.last_row
        same = np.array_equal(values, kept, equal_nan=True)
        what = (f"a duplicated row: it repeats the time {previous:g} s of line {line}"
                + ("" if same else " with other values (the first is kept)"))
        if self.bad_lines == "error":
            lost = "--bad-lines lost" if self.choice.first == 1 else "bad_lines='lost'"
            raise ParameterError(f"{where} is {what}; time stamps must increase ({lost} drops "
                                 f"such rows){self.columns['reason']}")
        self.tally["duplicates"] += 1
        self.say(f"{where} is {what}; dropped")
        return None

    def ready(self) -> bool:
        if self.last is None and self.rows:
            self.last = self.rows.pop(0)
            self.lines.pop(0)
        return self.last is not None and bool(self.rows)

    def take(self, size: int, restart: bool) -> Chunk:
        rows, self.rows = self.rows[:size], self.rows[size:]
        line, self.lines = self.lines[len(rows) - 1], self.lines[size:]
        table = np.array([self.last] + rows)
        self.last = rows[-1]
        c = self.columns
        return Chunk(X=table[:, c["states"]].T, U=table[:-1, c["inputs"]].T, restart=restart,
                     line=line, dt=self.dt,
                     state_names=tuple(c["names"][i] for i in c["states"]),
                     input_names=tuple(c["names"][i] for i in c["inputs"]),
                     state_units=tuple(c["units"][i] for i in c["states"]),
                     input_units=tuple(c["units"][i] for i in c["inputs"]))


def track(source: Iterable, estimator: Any, *, every: int = 1, level: float = 0.95
          ) -> Iterator[Snapshot]:
    """Feed the chunks of ``source`` to ``estimator`` and yield what it knows.

    Parameters
    ----------
    source : iterable
        :class:`Chunk` s, or pairs ``(X, U)`` (or triples ``(X, U, restart)``) in the chunk
        convention of :meth:`~dmdidc.OnlineDMDidc.update`: a socket reader, a queue, a file.
    estimator : OnlineDMDidc
    every : int, default 1
        Samples between snapshots (a snapshot solves the fit, about 10 ms); a chunk with a new
        change event always gives one, and the end of the source gives the last one.
    level : float, default 0.95
        Level of the delay intervals.

    Yields
    ------
    Snapshot

    Notes
    -----
    A chunk marked ``restart`` starts a new stream: it is joined to the previous one by two
    lost samples (``[x_last, NaN, x_new]`` with NaN inputs), so no regression row spans the
    break (with ``lost_inputs="hold"`` the held inputs do span it: the actuator is assumed to
    hold its command while the writer restarts).

    Examples
    --------
    >>> from dmdidc import DelayedPlant, OnlineDMDidc, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 2000, rng=0)
    >>> X = plant.simulate([0.0], U)
    >>> chunks = ((X[:, a:a + 501], U[:, a:a + 500]) for a in range(0, 2000, 500))
    >>> live = OnlineDMDidc(max_delay=3, dt=1.0)
    >>> [(s.samples, round(float(s.delay[0]), 6)) for s in track(chunks, live, every=1000)]
    [(1000, 1.5), (2000, 1.5)]
    """
    every = check_integer("every", every, minimum=1)
    last_state, pending, restarts = None, 0, 0
    seen = len(getattr(estimator, "events_", ()))
    told = {o.sample for o in getattr(estimator, "outliers_", ())}
    for item in source:
        X, U, restart = _unpack(item)
        if restart and last_state is not None:
            restarts += 1
            bridge = np.column_stack([last_state, np.full_like(last_state, np.nan), X[:, 0]])
            estimator.update(bridge, np.full((U.shape[0], 2), np.nan))
            pending += 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # fits inside an update (an event's delays)
            estimator.update(X, U)
        last_state, pending = X[:, -1], pending + U.shape[1]
        events = estimator.events_[seen:]
        if pending >= every or events:
            seen += len(events)
            pending = 0
            yield _snapshot(estimator, tuple(events), restarts, level, told)
    held = any(o.sample not in told for o in getattr(estimator, "outliers_", ()))
    if pending or held:
        yield _snapshot(estimator, (), restarts, level, told, final=True)


def _unpack(item: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    if isinstance(item, Chunk):
        return item.X, item.U, item.restart
    X, U, *rest = item
    X = np.asarray(X, dtype=float)
    return X[None] if X.ndim == 1 else X, np.atleast_2d(np.asarray(U, dtype=float)), \
        bool(rest and rest[0])


def _snapshot(estimator: Any, events: tuple, restarts: int, level: float,
              told: set[int], final: bool = False) -> Snapshot:
    """The snapshot; the samples of the outliers it reports join ``told`` (those in the open
    CUSUM excursion wait for it to close, unless ``final``: :class:`Snapshot`)."""
    opened = None if final else getattr(estimator, "excursion_start_", None)
    outliers = tuple(o for o in getattr(estimator, "outliers_", ())
                     if o.sample not in told and (opened is None or o.sample <= opened))
    told.update(o.sample for o in outliers)
    delay = low = high = None
    note, failed = "", []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            interval = estimator.delay_ci(level)
            delay, low, high = (np.array(a, dtype=float) for a in (
                estimator.delay, interval.low, interval.high))
            # (the fit may be cached from an update, whose warnings were not kept)
            failed = [check.message() for check in estimator.estimator_.diagnostics_.failed]
        except (ValueError, np.linalg.LinAlgError) as exc:
            note = str(exc)
    return Snapshot(samples=estimator.samples_seen_, delay=delay, low=low, high=high,
                    events=events, dropped=estimator.dropped_samples_, restarts=restarts,
                    note=note, outliers=outliers,
                    warnings=tuple(dict.fromkeys(failed + [str(w.message) for w in caught]
                                                 + _since_change(estimator)
                                                 + _outlier_rate(estimator))))


def _outlier_rate(estimator: Any) -> list[str]:
    """That more samples were outliers than Gaussian noise explains
    (:meth:`~dmdidc.OnlineDMDidc.outlier_rate_warning`)."""
    check = getattr(estimator, "outlier_rate_warning", None)
    message = check() if check is not None else None
    return [] if message is None else [message]


def _since_change(estimator: Any) -> list[str]:
    """After a detected change, that the model rests only on the samples since its onset
    (the statistics before it were shrunk to the weight of ``p`` samples)."""
    events = getattr(estimator, "events_", ())
    if not events:
        return []
    last, seen = events[-1], estimator.samples_seen_
    kept = estimator.statistics().layout.n_regressors
    return [f"the model rests only on the {seen - last.onset} samples since the onset "
            f"({last.onset}) of the change detected at sample {last.sample} "
            f"({len(events)} change(s) detected): the {last.onset} samples before it were "
            f"dropped (shrunk to the weight of {kept} samples). If that change was not real "
            f"(a burst of outliers, a passing disturbance), fit the whole record in batch "
            f"(DMDidc, or dmdidc identify FILE)"]
