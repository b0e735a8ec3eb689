"""The time column of a data file, decided once for every reader (``read_data``, the
``dmdidc`` command line, ``follow_csv``).

* **Which column.**  Without a choice, a column named ``time``, ``timestamp`` or ``t`` (any
  case; the unit in brackets aside) is the time.  ``t`` is also the usual name of a
  temperature, so a column named ``t`` / ``T`` whose unit is not a time unit or whose values
  do not strictly increase is a signal (with a note).  A column the user named as a signal
  (``states=``, ``inputs=``) is never taken or refused as the time, unless it is named ``time``
  or ``timestamp`` (then the clash is refused).  A first column that grows by the same step in
  every row is a row index when its header is empty (pandas' ``to_csv`` writes one): it is
  left out unread, with a note.  Named, or in a file without a header, it may be a time or a
  signal and is refused as ambiguous, unless ``states`` name every state (then it is simply
  not read).  Both hold whether or not another column is the time (``,time,a,b,u`` is what
  ``DataFrame.to_csv`` writes for a frame with a time column).
* **Unit.**  The header's unit (``time [ms]``) converts the stamps to seconds
  (:data:`TIME_UNITS`); no unit is seconds.  Loggers write the unit into the name too: the
  time column's unit is also read from parentheses (``Time (ms)``) or from a ``_unit`` suffix
  that is a time unit (``time_ms``), with a note saying so (:func:`name_unit`); a unit in
  brackets wins.  Units are read in any case and in their usual spellings (``sec``,
  ``seconds``, ``msec``, ``hr``, ``hours``, ``minutes``, ``days``, ...: ``Time (sec)``).  So
  a column named ``Time (ms)`` or ``timestamp_us`` is named like a time, but ``T_s`` or
  ``T_h`` (a surface or hot temperature) is not: a suffix makes only ``time`` and
  ``timestamp`` a time by name (the column named as the time reads its suffix).  Signal
  columns keep their names (``Flow (l/min)``).
* **Period and jitter.**  Stamps must strictly increase, each step a whole number of periods
  within ``tolerance`` periods (:data:`TIME_TOLERANCE`, 10 % of T: a PLC log jitters by a few
  milliseconds).  The period is the span of the stamps over the periods they cover (more
  accurate than any one step); the largest deviation from whole periods is reported as the
  jitter.  A step of several periods is a gap: lost rows.  With the missing-sample policy
  ``"error"`` the reader refuses it, naming its line; with ``"drop"`` or ``"interpolate"``
  each skipped period becomes a row of missing values (:func:`with_skipped_rows`), which the
  policy then drops (the record splits there) or fills, as it does empty cells.
* **ISO 8601 stamps.**  A time column may hold calendar stamps as loggers write them
  (``2026-11-28T00:47:19``, ``2026-11-28 00:47:19.250``, ``2026-11-28 00:47:19,250`` as
  Python's ``logging`` writes them, with or without ``Z`` / ``+01:00``):
  :func:`iso_seconds` reads them as seconds after the first stamp (numpy ``datetime64``,
  vectorized), and the grid, jitter and gap rules above apply to those seconds.  Stamps with
  offsets are converted to one clock (UTC), so ``+01:00`` and ``Z`` may mix; a stamp without
  an offset among ones with is refused by its line (its clock is unknown).  Local stamps
  without an offset jump at a daylight-saving change: every refusal and note of a gap or a
  step back then says so (:attr:`IsoStamps.hint`).  A column holding such stamps is the time
  when it is named like one (or named as the time); their unit is always seconds (a header
  unit such as ``[UTC]`` is not read).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

import numpy as np

from _toolbox.errors import ParameterError

__all__ = ["TIME_NAMES", "TIME_UNITS", "TIME_TOLERANCE", "TimeGrid", "time_unit", "name_unit",
           "named_time_column", "FoundColumn", "find_time_column", "time_grid", "refuse_gaps",
           "with_skipped_rows", "skipped_note", "check_tolerance", "nothing_to_ignore",
           "named_reason", "TimeColumnWarning", "IsoStamps", "iso_seconds", "iso_stamp",
           "is_time_name"]

#: Header names (any case) that make a column the time without a choice.
TIME_NAMES = ("time", "timestamp", "t")
#: Seconds per unit of a time column's header (``time [ms]``); no unit: seconds.
TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "min": 60.0, "h": 3600.0,
              "d": 86400.0}
#: Default largest deviation of a step from a whole number of periods, in periods.
TIME_TOLERANCE = 0.1
#: Deviations below this fraction of T are the rounding of written stamps, not jitter.
_ROUNDING = 1e-6
_AMBIGUOUS = "t"                      # also a temperature: a time only if it looks like one
_PARENTHESES = re.compile(r"^(.*?)\s*\(\s*([^()]*?)\s*\)$")
_SUFFIX = re.compile(r"^(.*?)_([A-Za-z]+)$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?"
                  r"(?:Z|[+-]\d{2}(?::?\d{2})?)?$")

#: Other spellings of the time units (any case): a header writes ``Time (sec)`` or
#: ``time_MS`` as often as ``time [s]``.
_UNIT_ALIASES = {
    **{spelling: "s" for spelling in ("sec", "secs", "second", "seconds")},
    **{spelling: "ms" for spelling in ("msec", "msecs", "millisecond", "milliseconds")},
    **{spelling: "us" for spelling in ("\u00b5s", "\u03bcs", "usec", "usecs", "microsecond",
                                       "microseconds")},
    **{spelling: "min" for spelling in ("mins", "minute", "minutes")},
    **{spelling: "h" for spelling in ("hr", "hrs", "hour", "hours")},
    **{spelling: "d" for spelling in ("day", "days")},
}


def _canonical_unit(text: str) -> str | None:
    """The key of :data:`TIME_UNITS` that ``text`` spells (any case, or an alias), or None."""
    text = text.strip()
    if text in TIME_UNITS:
        return text
    lower = text.lower()
    return lower if lower in TIME_UNITS else _UNIT_ALIASES.get(lower)


class TimeColumnWarning(UserWarning):
    """What a reader decided about the time column without being told (which column, the
    jitter of its stamps, a unit read from its name): name the column (``time=``) to decide it
    yourself.  ``read_data`` also says with it what it left out of the file (an empty column
    without a name)."""


def _spell(cli: bool, option: str, value: str) -> str:
    """An option as the user gives it: ``--time none`` or ``time=None``."""
    if cli:
        return f"--{option.replace('_', '-')} {value}"
    return f"{option}={'None' if value == 'none' else value}"


def named_reason(label: str, name: str, *, cli: bool = False) -> str:
    """The tail of a refusal of a column taken as the time by its name (not by a choice).

    Examples
    --------
    >>> print(named_reason("'T'", "T", cli=True))  # doctest: +NORMALIZE_WHITESPACE
    ; 'T' was taken as the time because it is named 'T': give --time none to fit it as a
    signal, --time ignore to leave it out unread (with --dt), or --time COL to name the time
    column
    """
    column = "COL" if cli else "'<column>'"
    # (read_data has no time="ignore": the command line's readers and --follow have)
    ignore = (f"{_spell(cli, 'time', 'ignore')} to leave it out unread (with --dt), " if cli
              else "")
    return (f"; {label} was taken as the time because it is named {name!r}: give "
            f"{_spell(cli, 'time', 'none')} to fit it as a signal, {ignore}or "
            f"{_spell(cli, 'time', column)} to name the time column")


def check_tolerance(tolerance: float | None, *, cli: bool = False) -> float:
    """``tolerance`` as a float in (0, 0.5) (a deviation of half a period is ambiguous); None:
    :data:`TIME_TOLERANCE`.

    Examples
    --------
    >>> check_tolerance(0.25)
    0.25
    """
    if tolerance is None:
        return TIME_TOLERANCE
    try:
        value = float(tolerance)
    except (TypeError, ValueError):
        value = float("nan")
    if not 0 < value < 0.5:
        raise ParameterError(f"{_spell(cli, 'time_tolerance', repr(tolerance))}: the largest "
                             f"deviation of a time step from whole periods, as a fraction of the "
                             f"period, must be in (0, 0.5); default {TIME_TOLERANCE}")
    return value


def name_unit(name: str, unit: str = "") -> tuple[str, str, str]:
    """The bare name and the unit of a time column: ``unit`` (the header's, in brackets) when
    there is one, else the unit its name carries in parentheses (``Time (ms)``: any text,
    which :func:`time_unit` then accepts or refuses) or as a ``_unit`` suffix that is one of
    :data:`TIME_UNITS` (``time_ms``; ``time_stamp`` has none); and where in the name the unit
    was read (``"parentheses"``, ``"suffix"``; ``""``: not from the name).

    Examples
    --------
    >>> name_unit("Time (ms)"), name_unit("time_us"), name_unit("time_stamp")
    (('Time', 'ms', 'parentheses'), ('time', 'us', 'suffix'), ('time_stamp', '', ''))
    >>> name_unit("time_ms", "s")                 # the bracket unit wins
    ('time_ms', 's', '')
    """
    name = name.strip()
    if unit:
        return name, unit, ""
    if found := _PARENTHESES.match(name):
        return found[1], found[2], "parentheses"
    found = _SUFFIX.match(name)
    if found and _canonical_unit(found[2]) is not None:
        return found[1], found[2], "suffix"
    return name, "", ""


def time_unit(unit: str, where: str, *, reason: str = "", name: str | None = None,
              note: Callable[[str], None] | None = None) -> float:
    """Seconds per ``unit`` of the time column ``where`` (message: ``reason`` says why it is
    the time column).

    ``name``: the column's bare name, whose parentheses or ``_unit`` suffix give the unit when
    ``unit`` (in brackets) is empty (:func:`name_unit`); ``note`` then receives a note saying
    so, since a unit read from a name is a decision the user should see.

    Examples
    --------
    >>> time_unit("ms", "'time [ms]'")
    0.001
    >>> time_unit("", "'time_ms'", name="time_ms", note=print)
    'time_ms' is read in ms from its name (a unit in brackets would win)
    0.001
    """
    from_name = ""
    if name is not None:
        _, unit, from_name = name_unit(name, unit)
    unit = _canonical_unit(unit) or unit
    if unit not in TIME_UNITS:
        told = (" (from its name; a unit in brackets wins: 'time [s]' if it is seconds)"
                if from_name else "")
        raise ParameterError(f"{where} has the unit {unit!r}{told}; accepted time units: "
                             f"{', '.join(u for u in TIME_UNITS if u)} (or none: seconds)"
                             f"{reason}")
    if from_name and note is not None:
        note(f"{where} is read in {unit} from its name (a unit in brackets would win)")
    return TIME_UNITS[unit]


def is_time_name(name: str, unit: str = "") -> bool:
    """Whether a header cell (bare ``name``, ``unit`` in brackets) is named like a time
    (:data:`TIME_NAMES`, a unit in the name aside; ``T_s`` is a temperature).

    Examples
    --------
    >>> [is_time_name(n) for n in ("Time (ms)", "timestamp", "T_s", "x")]
    [True, True, False, False]
    """
    bare, _, from_name = name_unit(name, unit)
    return bare.lower() in TIME_NAMES and not (bare.lower() == _AMBIGUOUS
                                               and from_name == "suffix")


def named_time_column(names: Sequence[str], units: Sequence[str],
                      increasing: Callable[[int], bool] | None = None,
                      notes: list[str] | None = None,
                      label: Callable[[int], str] | None = None,
                      signals: Collection[int] = ()) -> int | None:
    """The first column named like a time (module notes), or None; a ``t`` among ``signals``
    (the columns the user named as signals) is one.

    ``names`` are bare names (``"T"`` of ``"T [degC]"``), ``units`` their units;
    ``increasing(c)`` says whether column ``c`` strictly increases (None: not known yet, as
    for a file being followed); skipped ``t`` columns are noted in ``notes`` (``label(c)``
    names column ``c``; default: its name).

    Examples
    --------
    >>> notes = []
    >>> named_time_column(["T", "time", "u"], ["degC", "ms", ""], notes=notes)
    1
    >>> print(notes[0])
    'T' is named like a time column but is a signal: its unit 'degC' is not a time unit
    """
    for c, (full, given) in enumerate(zip(names, units, strict=True)):
        name, unit, from_name = name_unit(full, given)
        if name.lower() not in TIME_NAMES:
            continue
        if name.lower() != _AMBIGUOUS:
            return c                   # named as a signal too: the caller refuses the clash
        if from_name == "suffix":
            continue                   # T_s, T_h: a surface or hot temperature, not the time
        if c in signals:
            continue                   # a 't' the user named as a signal: a temperature
        why = (f"its unit {unit!r} is not a time unit" if _canonical_unit(unit) is None else
               "its values do not strictly increase"
               if increasing is not None and not increasing(c) else "")
        if not why:
            return c
        if notes is not None:
            notes.append(f"{label(c) if label else repr(full)} is named like a time column "
                         f"but is a signal: {why}")
    return None


@dataclass(frozen=True)
class FoundColumn:
    """A column :func:`find_time_column` decided about: ``read`` the time stamps of column
    ``column``, or leave it out unread (a row index, ``--time ignore``); ``left_out``: other
    columns left out unread (a row index beside the time column)."""

    column: int
    read: bool = True
    left_out: tuple[int, ...] = ()


def find_time_column(names: Sequence[str] | None, units: Sequence[str] | None,
                     values: np.ndarray, *, notes: list[str], label: Callable[[int], str],
                     cli: bool = False, announce: bool = True, signals: Collection[int] = (),
                     complete: bool = False, ignore: bool = False) -> FoundColumn | None:
    """The time column of a table without a choice (module notes), or a row index to leave
    out, or None.

    ``values`` (rows, columns); ``label(c)`` names column ``c`` in messages; ``notes``
    receives what was decided (``announce=False``: not a column named ``time`` or
    ``timestamp`` taken as the time, which is what its name says; only the ambiguous ``t``,
    the columns refused and a row index left out).  ``signals`` are the columns the user
    named as signals (a ``t`` or a first column among them is one); ``complete``: the user
    named every state, so a column named nowhere is not read anyway; ``ignore`` (``--time
    ignore``, ``time="ignore"``): the column found is left out unread (``read=False``), named
    like a time or a first column that grows by one step, with a note saying so; None when
    there is none (the caller refuses it: :func:`nothing_to_ignore`).  The first column's
    rules (a row index left out, a named one refused) hold whether or not another column is
    the time: pandas' ``to_csv`` writes its index before a ``time`` column too.

    Raises
    ------
    ParameterError
        A first column with a header (or in a file without one) that grows by one step in
        every row, named nowhere: a time column or a signal (ambiguous).

    Examples
    --------
    >>> values = np.array([[60.1, 0.0, 1.0], [60.3, 0.5, 0.0], [60.2, 1.0, 1.0]])
    >>> notes = []
    >>> find_time_column(["T", "t", "u"], ["", "s", ""], values, notes=notes, label=str)
    FoundColumn(column=1, read=True, left_out=())
    >>> for note in notes:  # doctest: +NORMALIZE_WHITESPACE
    ...     print(note)
    0 is named like a time column but is a signal: its values do not strictly increase
    1 is the time (named like one; a time column is never a signal: time=None reads it as a
    signal instead)
    >>> index = np.column_stack([np.arange(4.0), [0.3, 0.1, 0.4, 0.1]])
    >>> find_time_column(["", "x"], ["", ""], index, notes=notes, label=repr)
    FoundColumn(column=0, read=False, left_out=())
    >>> both = np.column_stack([np.arange(4.0), 0.5 * np.arange(4.0), [0.3, 0.1, 0.4, 0.1]])
    >>> find_time_column(["", "time", "x"], ["", "", ""], both, notes=notes, label=repr)
    FoundColumn(column=1, read=True, left_out=(0,))
    """
    time = None
    if names:
        # a row written twice (every cell the same) does not make a clock a signal: the
        # reader refuses or drops it by its line (as the follower decides, a review found a
        # 't' column fitted as a state for one repeated row)
        repeated = np.concatenate([[False], np.all(
            (values[1:] == values[:-1]) | (np.isnan(values[1:]) & np.isnan(values[:-1])),
            axis=1)])

        def increasing(c: int) -> bool:
            column = values[~repeated, c]
            return bool(np.all(np.isfinite(column)) and np.all(np.diff(column) > 0))

        found = named_time_column(names, units, increasing, notes, label, signals)
        if found is not None:
            if ignore:
                notes.append(_ignored(label(found), cli))
            elif announce or name_unit(names[found], units[found])[0].lower() == _AMBIGUOUS:
                notes.append(f"{label(found)} is the time (named like one; a time column is "
                             f"never a signal: {_spell(cli, 'time', 'none')} reads it as a "
                             f"signal instead)")
            time = FoundColumn(found, read=not ignore)
            if found == 0:
                return time
    first = values[:, 0]
    unnamed = bool(names) and not names[0].strip()
    # complete: a first column named nowhere is not read anyway; with --time ignore and no
    # time column found it is still the one to leave out, but beside a found one it is neither.
    # An unnamed one of increasing whole numbers is pandas' index of rows left after dropna():
    # it skips where the time skips (read as a state, it was a ramp, a review found)
    if (0 in signals or (complete and (time is not None or not ignore)) or values.shape[1] < 2
            or not (_steady(first) or (unnamed and time is not None and _row_index(first)))):
        return time
    counts = f"({first[0]:g}, {first[1]:g}, {first[2]:g}, ...)"
    column = "1" if cli else repr(names[0]) if names else "0"
    if ignore and time is None:
        notes.append(_ignored(label(0), cli))
        return FoundColumn(0, read=False)
    if unnamed:
        grows = ("grows by the same step in every row" if _steady(first) else
                 "counts rows, skipping some")
        notes.append(f"{label(0)} has no name and {grows} {counts}: a row index (as pandas' "
                     f"to_csv writes), left out unread; {_spell(cli, 'time', column)} reads "
                     f"it as the time")
        return FoundColumn(0, read=False) if time is None else FoundColumn(
            time.column, time.read, left_out=(0,))
    beside = "" if time is None else f" (beside the time column {label(time.column)})"
    dt = "" if time is not None else " (with dt=)"
    if cli and time is None:
        remedy = ("give --time 1 to read it as the time, --time ignore to leave it out unread "
                  "(with --dt), or --time none if it is a signal (or name it in --states / "
                  "--inputs)")
    elif cli:
        remedy = ("give --time 1 to read it as the time, --states naming every state to leave "
                  "it out unread, or name it in --states / --inputs if it is a signal")
    else:
        remedy = (f"give time={column} to read it as the time, states=[...] naming every state "
                  f"to leave it out unread{dt}, or name it in inputs= / states= if it "
                  f"is a signal")
    raise ParameterError(f"{label(0)} increases by the same step {first[1] - first[0]:g} in "
                         f"every row {counts}{beside}: a time column, a row index or a ramp "
                         f"signal; {remedy}")


def _ignored(where: str, cli: bool) -> str:
    """The note of a time column left out unread on request."""
    return (f"{where} is left out ({_spell(cli, 'time', 'ignore')}): its stamps are not read; "
            f"the samples are taken as evenly spaced by {'--dt' if cli else 'dt='}")


def nothing_to_ignore(source: str, columns: str, *, cli: bool = False) -> ParameterError:
    """The refusal of ``--time ignore`` (``time="ignore"``) in a table without a time column
    to leave out: ``source`` names the file, ``columns`` its columns.

    Examples
    --------
    >>> print(nothing_to_ignore("'log.csv'", "'x', 'u'", cli=True))
    ... # doctest: +NORMALIZE_WHITESPACE
    --time ignore: 'log.csv' has no column named time, timestamp or t, nor a first column that
    grows by one step (it has 'x', 'u'); name the columns to read with --states / --inputs
    """
    return ParameterError(
        f"{_spell(cli, 'time', 'ignore')}: {source} has no column named time, timestamp or t, "
        f"nor a first column that grows by one step (it has {columns}); name the columns to "
        f"read with {'--states / --inputs' if cli else 'states= / inputs='}")


def _row_index(column: np.ndarray) -> bool:
    """Whether ``column`` holds strictly increasing whole numbers (row numbers, some skipped)."""
    return bool(column.size >= 3 and np.all(np.isfinite(column))
                and np.all(column == np.round(column)) and np.all(np.diff(column) > 0))


def _steady(column: np.ndarray) -> bool:
    """Whether ``column`` grows by the same step in every row (a clock or a row index)."""
    steps = np.diff(column)
    return bool(column.size >= 3 and np.all(np.isfinite(column)) and np.all(steps > 0)
                and np.ptp(steps) <= _ROUNDING * np.median(steps))


@dataclass(frozen=True)
class TimeGrid:
    """The sampling grid read from time stamps.

    Attributes
    ----------
    period : float
        The sampling period T in seconds.
    periods : tuple of ndarray
        Per segment, the whole periods of each step (1, or more at a gap).
    jitter : float
        The largest deviation of a step from whole periods, in seconds.
    """

    period: float
    periods: tuple[np.ndarray, ...]
    jitter: float
    tolerance: float = TIME_TOLERANCE

    @property
    def jittery(self) -> bool:
        """Whether the stamps deviate from the grid by more than their rounding."""
        return self.jitter > _ROUNDING * self.period

    def agrees(self, dt: float) -> bool:
        """Whether a given period ``dt`` is this grid's, within what the jitter leaves of the
        period over the span of the stamps (and 1e-4 of it)."""
        periods = sum(int(p.sum()) for p in self.periods)
        return abs(dt - self.period) <= 1e-4 * self.period + 2 * self.jitter / periods

    @property
    def jitter_note(self) -> str:
        """The jitter measured (``""`` when there is no more than rounding)."""
        if not self.jittery:
            return ""
        return (f"the time steps jitter by up to {_duration(self.jitter)} "
                f"({100 * self.jitter / self.period:.2g} % of T), within the tolerance of "
                f"{100 * self.tolerance:g} % of T; T = {self.period:g} s from the span of the "
                f"stamps")


def _duration(seconds: float) -> str:
    """``4.8 ms``, ``780 ms``, ``2.5 s`` (``:g`` wrote 780 ms as ``7.8e+02 ms``).

    Examples
    --------
    >>> [_duration(s) for s in (0.0048, 0.78, 0.9996, 2.5)]
    ['4.8 ms', '780 ms', '1 s', '2.5 s']
    """
    if seconds < 0.9995:
        milliseconds = float(f"{seconds * 1e3:.2g}")
        return f"{milliseconds:.0f} ms" if milliseconds >= 10 else f"{milliseconds:g} ms"
    return f"{seconds:.3g} s"


def time_grid(segments: Sequence[np.ndarray], *, where: str, tolerance: float = TIME_TOLERANCE,
              lines: Sequence[Sequence[int]] | None = None, reason: str = "",
              cli: bool = False) -> TimeGrid:
    """The grid of time stamps in seconds (module notes), one array per segment (experiment).

    ``where`` names the column, ``lines[s][k]`` the file line of stamp ``k`` of segment ``s``
    (default: rows from 1), ``reason`` is appended to refusals (why this column is the time).

    Raises
    ------
    ParameterError
        A missing stamp, a stamp that repeats or goes back, a step that is no whole number of
        periods within the tolerance (the message names the tolerance option), fewer than two
        stamps.

    Examples
    --------
    >>> grid = time_grid([np.array([0.0, 0.5031, 0.9987, 1.5012])], where="'time'")
    >>> round(grid.period, 6), grid.periods[0].tolist()
    (0.5004, [1, 1, 1])
    >>> print(grid.jitter_note)  # doctest: +NORMALIZE_WHITESPACE
    the time steps jitter by up to 4.8 ms (0.96 % of T), within the tolerance of 10 % of T;
    T = 0.5004 s from the span of the stamps
    """
    lines = lines or [range(1, t.size + 1) for t in segments]
    for times, rows in zip(segments, lines, strict=True):
        if np.isnan(times).any():
            row = int(np.argmax(np.isnan(times)))
            raise ParameterError(f"{where} has no time at line {rows[row]}; every row needs "
                                 f"its time stamp{reason}")
        for k in np.flatnonzero(np.diff(times) <= 0)[:1] + 1:
            kind = "repeats" if times[k] == times[k - 1] else "goes back from"
            restart = (" (a table of several experiments, whose time restarts at each: "
                       "give them as separate experiments, e.g. the .npz archive of "
                       "IdData.save)" if kind != "repeats" and times[k] <= times[0] else
                       " (a row or a stamp written twice: delete the extra line)"
                       if kind == "repeats" else "")
            raise ParameterError(f"{where} line {rows[k]} {kind} the time {times[k - 1]:g} s "
                                 f"of line {rows[k - 1]} (got {times[k]:g} s); time stamps must "
                                 f"strictly increase{restart}{reason}")
    steps = [np.diff(t) for t in segments]
    every = np.concatenate(steps)
    if every.size == 0:
        raise ParameterError(f"{where} needs at least two time stamps per segment{reason}")
    median = float(np.median(every))
    periods = [np.maximum(np.round(s / median), 1).astype(int) for s in steps]
    total = sum(int(p.sum()) for p in periods)
    period = sum(float(t[-1] - t[0]) for t in segments if t.size > 1) / total
    deviation = [np.abs(s - p * period) for s, p in zip(steps, periods, strict=True)]
    jitter = max(float(d.max(initial=0.0)) for d in deviation)
    if jitter > tolerance * period:
        # the count and the first step as well as the largest: one bad stamp is a typo to fix,
        # thousands are a clock (or irregular sampling) to widen the tolerance for or resample
        beyond = [np.flatnonzero(d > tolerance * period) for d in deviation]
        count = sum(b.size for b in beyond)

        def step(s: int, k: int) -> str:
            return (f"line {lines[s][k]} (the time advances by {steps[s][k - 1]:g} s from line "
                    f"{lines[s][k - 1]}, {deviation[s][k - 1] / period:.2g} periods off)")

        s = next(i for i, d in enumerate(deviation) if d.size and d.max() == jitter)
        worst = step(s, int(np.argmax(deviation[s])) + 1)
        f = next(i for i, b in enumerate(beyond) if b.size)
        first = step(f, int(beyond[f][0]) + 1)
        where_steps = (f"at {worst}" if count == 1 else
                       f"the first at {first}, the largest at {worst}")
        raise ParameterError(
            f"{where}: {count} of {every.size} time steps are more than {tolerance:g} periods "
            f"off a whole number of periods of T = {period:g} s, {where_steps}; the tolerance "
            f"is {tolerance:g} periods ({_spell(cli, 'time_tolerance', 'F')} widens it for "
            f"jittery stamps; resample uneven data){reason}")
    return TimeGrid(period, tuple(periods), jitter, tolerance)


def refuse_gaps(grid: TimeGrid, segments: Sequence[np.ndarray], *, where: str,
                lines: Sequence[Sequence[int]], reason: str = "", cli: bool = False) -> None:
    """Refuse a step of several periods in ``grid`` (a gap of whole periods is lost rows),
    naming its line and the missing-sample policies that take them (the default ``"error"``
    refuses them, as it refuses empty cells).

    Raises
    ------
    ParameterError
        The first such step, with the option that handles lost rows.
    """
    for times, periods, rows in zip(segments, grid.periods, lines, strict=True):
        gaps = np.flatnonzero(periods > 1)
        if gaps.size:
            k = int(gaps[0]) + 1
            policies = ("--missing drop (the record splits at the gap) or --missing "
                        "interpolate" if cli else "missing='drop' (the record splits at the "
                        "gap) or missing='interpolate'")
            raise ParameterError(f"{where} line {rows[k]}: the time advances by "
                                 f"{times[k] - times[k - 1]:g} s from line {rows[k - 1]}, "
                                 f"{periods[k - 1]} periods of {grid.period:g} s (it skips "
                                 f"{periods[k - 1] - 1} sample(s)): lost rows are missing "
                                 f"samples; give {policies}{reason}")


def with_skipped_rows(times: np.ndarray, values: np.ndarray, periods: np.ndarray, *,
                      longest: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of one segment with a row of NaN for every period its steps skip (one row for
    a gap of more than ``longest`` skipped samples: enough for ``missing="drop"`` to split
    the record there, without building an outage's worth of empty rows).

    Parameters
    ----------
    times : ndarray, shape (K,)
        The segment's stamps in seconds.
    values : ndarray, shape (K, c)
        Its rows (every column, the time column included).
    periods : ndarray of int, shape (K - 1,)
        The whole periods of each step (:attr:`TimeGrid.periods`).

    Returns
    -------
    times : ndarray, shape (K',)
        The stamps with those of the skipped samples, evenly spaced over each gap.
    values : ndarray, shape (K', c)
        The rows with NaN rows at the skipped samples (a copy; ``values`` itself when nothing
        is skipped).
    kept : ndarray of int, shape (K,)
        The new index of each given row.

    Examples
    --------
    >>> times = np.array([0.0, 1.0, 4.0, 5.0])
    >>> t, v, kept = with_skipped_rows(times, np.arange(4.0)[:, None], np.array([1, 3, 1]))
    >>> t, v[:, 0], kept
    (array([0., 1., 2., 3., 4., 5.]), array([ 0.,  1., nan, nan,  2.,  3.]), array([0, 1, 4, 5]))
    """
    steps = np.asarray(periods, dtype=int)
    if longest is not None:
        steps = np.where(steps - 1 > longest, 2, steps)
    kept = np.concatenate([[0], np.cumsum(steps)]).astype(int)
    if kept[-1] == len(times) - 1:
        return times, values, kept
    filled = np.full((kept[-1] + 1, values.shape[1]), np.nan)
    filled[kept] = values
    # a skipped sample j periods after the row before its gap sits j periods (of that gap's
    # own step) later: the grid read again from these stamps is the data's
    index = np.arange(kept[-1] + 1)
    before = np.searchsorted(kept, index, side="right") - 1
    gap = np.minimum(before, len(periods) - 1)
    period = np.diff(times)[gap] / np.asarray(periods)[gap] if len(periods) else 0.0
    stamps = times[before] + (index - kept[before]) * period
    return stamps, filled, kept


def skipped_note(grid: TimeGrid, where: str, lines: Sequence[Sequence[int]], *,
                 split: bool = False) -> str:
    """What :func:`with_skipped_rows` inserted, for the reader's notes: how many samples the
    stamps skip, at how many places, the first of them by its line ("" when none).

    ``split``: the record is split at the gaps (``missing="drop"``), so a gap of any length
    is an outage between two pieces (:func:`with_skipped_rows` with ``longest``); otherwise
    its samples are filled.

    Raises
    ------
    ParameterError
        Without ``split``, a gap longer than the rows the segment holds: no interpolation
        spans it, and a mistyped stamp (``1e12``) jumps that far (filling it asked for
        terabytes).
    """
    places = [(rows[k + 1], int(p[k]) - 1) for p, rows in zip(grid.periods, lines, strict=True)
              for k in np.flatnonzero(p > 1)]
    for p, rows in zip(grid.periods, lines, strict=True):
        if not split and p.size and int(p.max()) - 1 > len(rows):
            k = int(np.argmax(p))
            raise ParameterError(
                f"{where} line {rows[k + 1]}: the time jumps {int(p[k])} periods of "
                f"{grid.period:g} s from line {rows[k]}, more samples than the "
                f"{len(rows)} rows it has: a wrong stamp, or an outage no interpolation "
                f"spans (correct the stamp, or split the record there: missing='drop')")
    if not places:
        return ""
    count = sum(n for _, n in places)
    first, skipped = places[0]
    return (f"{where} skips {count} sample(s) at {len(places)} place(s) (the first: "
            f"{skipped} before line {first}): lost rows, taken as missing samples")


@dataclass(frozen=True)
class IsoStamps:
    """The ISO 8601 stamps of a time column read as seconds (:func:`iso_seconds`).

    Attributes
    ----------
    seconds : ndarray, shape (K,)
        Seconds after ``origin`` (NaN: a missing cell).
    origin : numpy.datetime64
        The stamp of second 0 (UTC when the stamps carry offsets).
    local : bool
        The stamps carry no offset: local time, which jumps at a daylight-saving change.
    offsets : tuple of str
        The distinct offsets written (``"Z"``, ``"+01:00"``; none when ``local``).
    first : str
        The first stamp as written (for messages).
    """

    seconds: np.ndarray
    origin: np.datetime64
    local: bool
    offsets: tuple[str, ...] = ()
    first: str = ""

    @cached_property
    def start(self) -> datetime:
        """``origin`` as a naive ``datetime`` (microseconds)."""
        return self.origin.astype("datetime64[us]").item()

    @property
    def hint(self) -> str:
        """The tail of a refusal or note of a gap or a step back in local stamps ("" with
        offsets, whose clock does not jump)."""
        if not self.local:
            return ""
        return ("; the stamps are local times without a UTC offset: a daylight-saving change "
                "shows as a gap or a step back of an hour (write them in UTC or with their "
                "offset, e.g. +01:00)")

    @property
    def note(self) -> str:
        """What the reader says of stamps whose offsets differ ("" when they do not)."""
        if len(self.offsets) < 2:
            return ""
        return (f"the time stamps carry the offsets {', '.join(self.offsets)}: read on one "
                f"clock (UTC)")


def iso_seconds(cells: Sequence[str] | np.ndarray, *, where: str, lines: Sequence[int],
                missing: np.ndarray | None = None, origin: np.datetime64 | None = None,
                local: bool | None = None) -> IsoStamps | None:
    """ISO 8601 stamps as seconds after the first (module notes), or None when the first
    present cell is no such stamp (then the column is text, not a time).

    Parameters
    ----------
    cells : sequence of str, shape (K,)
        The column's cells, stripped.
    where : str
        The column and file, for messages; ``lines[k]`` is the file line of cell ``k``.
    missing : ndarray of bool, shape (K,), optional
        Missing cells (NaN in ``seconds``; default: the empty ones).
    origin, local : optional
        The clock of stamps read before (a followed file's later lines): seconds count from
        ``origin``, and stamps with an offset (``local=False``) or without one (``True``)
        must go on as they started.

    Returns
    -------
    IsoStamps or None

    Raises
    ------
    ParameterError
        A cell that is no stamp after a first that is one, or a stamp without an offset among
        ones with (or the other way round), naming its line.

    Examples
    --------
    >>> stamps = iso_seconds(["2026-11-28T00:47:19.5+01:00", "2026-11-27T23:47:20Z"],
    ...                      where="'time'", lines=[2, 3])
    >>> stamps.seconds.tolist(), str(stamps.origin), stamps.local
    ([0.0, 0.5], '2026-11-27T23:47:19.500000000', False)
    """
    cells = np.asarray(cells)
    cells = np.strings.strip(cells if cells.dtype.kind in "UT" else cells.astype(str))
    missing = cells == "" if missing is None else np.asarray(missing, dtype=bool)
    present = np.flatnonzero(~missing)
    if present.size == 0 or not _ISO.match(str(cells[present[0]])):
        return None
    first = int(present[0])
    rest = np.strings.slice(cells, 10, None)           # after the date: the sign of an offset
    sign = np.maximum(np.strings.rfind(rest, "+"), np.strings.rfind(rest, "-"))
    zulu = np.strings.endswith(cells, "Z")
    offset = ((sign >= 0) | zulu) & ~missing
    expected = bool(offset[first]) if local is None else not local
    odd = np.flatnonzero(~missing & (offset != expected))
    if odd.size:
        k = int(odd[0])
        raise _clock_refusal(f"{where} line {lines[k]}", str(cells[k]), str(cells[first]),
                             expected)
    end = np.where(sign >= 0, sign + 10, np.strings.str_len(cells) - zulu)
    core = np.where(missing, "NaT", np.strings.slice(cells, 0, end))
    # ISO 8601's decimal comma (Python's logging writes '00:47:19,500'); numpy reads only '.'
    core = np.strings.replace(core, ",", ".")
    # numpy also reads 'now' and 'today': a stamp starts with its year
    dated = np.strings.isdigit(np.strings.slice(core, 0, 4)) | missing
    try:
        if not dated.all():
            raise ValueError
        times = core.astype("datetime64[ns]")
    except ValueError:
        k = next(k for k in present if not _ISO.match(str(cells[k])))
        raise _stamp_refusal(f"{where} line {lines[k]}", str(cells[k]),
                             str(cells[first])) from None
    written: tuple[str, ...] = ()
    if expected:
        suffix = np.where(zulu, "Z", np.strings.slice(rest, np.maximum(sign, 0), None))
        suffix = np.where(missing, suffix[first], suffix)
        if (suffix == suffix[first]).all():       # one offset: no sort of a million strings
            written, shift = (str(suffix[first]),), np.int64(_offset_ns(str(suffix[first])))
        else:
            distinct, inverse = np.unique(suffix, return_inverse=True)
            written = tuple(str(o) for o in distinct)
            shift = np.array([_offset_ns(o) for o in written], dtype="int64")[inverse]
        times = times - shift.astype("timedelta64[ns]")
    origin = times[first] if origin is None else np.datetime64(origin, "ns")
    seconds = (times - origin).astype("int64") / 1e9
    seconds[missing] = np.nan
    return IsoStamps(seconds, origin, not expected, written, str(cells[first]))


def iso_stamp(cell: str, clock: IsoStamps, *, where: str) -> float:
    """One ISO 8601 stamp as seconds on the ``clock`` of the stamps before it (a followed
    file's line; :func:`iso_seconds` reads a column, this a cell at a time with
    ``datetime.fromisoformat``); ``where`` names the file and line.

    Raises
    ------
    ParameterError
        No stamp, or an offset where the clock's stamps have none (or the other way round).

    Examples
    --------
    >>> clock = iso_seconds(["2026-11-28T00:47:19+01:00"], where="'time'", lines=[2])
    >>> iso_stamp("2026-11-27T23:47:21.5Z", clock, where="line 9")
    2.5
    """
    text = cell.strip()
    if not _ISO.match(text):
        raise _stamp_refusal(where, text, clock.first)
    stamp = datetime.fromisoformat(text)
    offset = stamp.utcoffset()
    if (offset is None) != clock.local:
        raise _clock_refusal(where, text, clock.first, not clock.local)
    if offset is not None:
        stamp = stamp.replace(tzinfo=None) - offset
    # (datetime arithmetic, not datetime64: a third of the time per line of a followed file;
    # both divide the exact microseconds once, so they give the same seconds)
    return (stamp - clock.start).total_seconds()


def _stamp_refusal(where: str, cell: str, first: str) -> ParameterError:
    return ParameterError(f"{where}: {cell!r} is no ISO 8601 time stamp, as the column's "
                          f"others are (the first: {first!r}); every row needs its stamp")


def _clock_refusal(where: str, cell: str, first: str, offsets: bool) -> ParameterError:
    """The refusal of a stamp on another clock than the first's (an offset or none)."""
    has = "has no UTC offset" if offsets else "has a UTC offset"
    others = "carry one" if offsets else "carry none"
    return ParameterError(f"{where}: the stamp {cell!r} {has}, while the stamps before it "
                          f"{others} (as {first!r}): its clock is unknown; write every stamp "
                          f"with its offset (or Z), or none")


def _offset_ns(offset: str) -> int:
    """A UTC offset (``Z``, ``+01:00``, ``-0530``, ``+02``) in nanoseconds."""
    if offset == "Z":
        return 0
    digits = offset[1:].replace(":", "")
    minutes = 60 * int(digits[:2]) + (int(digits[2:4]) if len(digits) > 2 else 0)
    return (-1 if offset[0] == "-" else 1) * minutes * 60 * 10**9
