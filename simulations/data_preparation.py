"""Turn a user's data files into DMDidc's ``X``, ``U``: columns by name, the time column,
missing samples.

Three forms of data (read by :mod:`simulations.data_files`):

* an ``.npz`` archive with ``X`` (n, K+1) and ``U`` (m, K);
* two CSV files, ``states`` (K+1 rows) and ``inputs`` (K rows);
* one CSV table (``.csv``, ``.tsv``, ``.txt``, ``.dat``) with a row per sample ``t_k, x_k, u_k``:
  ``inputs`` and ``states`` then name its columns (header names or 1-based numbers); the
  states are every row, the inputs every row but the last (its input acts after the record).

A time column is never fitted as a state.  Which column is the time, its unit and its
jitter are decided by :mod:`dmdidc.time_column` (as for :func:`dmdidc.read_data`); ``time``
decides (a column, ``"none"``: no time column, ``"ignore"``: leave the one named like a time,
or a first column that grows by one step, out unread).  A time column may hold ISO 8601 stamps
(read as seconds after the first, :func:`dmdidc.time_column.iso_seconds`).  Only the columns
read must be numbers: a column of text (a status flag, an operator's name) that no option names
is left out unread with a note, never taken as a state; a text cell in a column that is read is
refused with its line and column.
Timestamps must increase by one sampling period per row (within ``time_tolerance`` periods: a
PLC's jitter): a repeated, decreasing or off-grid timestamp is refused with its line, and a
step of several periods is lost rows: missing samples, one per skipped period.  Missing samples
(empty fields, ``nan``, ``NA``, ``#N/A``, ``-``, lost rows; NaN in an ``.npz``) are refused,
dropped (the record splits into segments at the gaps, used as separate experiments) or
interpolated (linearly in time between their neighbours; rows before the first or after the
last complete sample are trimmed), and every note says how many and where.
"""

from __future__ import annotations

import dataclasses
import math
import zipfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from dmdidc.data_io import missing_cells, split_unit, text_columns_note
from dmdidc.missing import MISSING_POLICIES, handle_missing, support
from dmdidc.time_column import (
    IsoStamps,
    TimeGrid,
    check_tolerance,
    find_time_column,
    is_time_name,
    iso_seconds,
    named_reason,
    nothing_to_ignore,
    refuse_gaps,
    skipped_note,
    time_grid,
    time_unit,
    with_skipped_rows,
)
from dmdidc.trajectories import held_input_error, held_inputs
from simulations.data_files import (
    CsvTable,
    _check_pair,
    _check_samples,
    read_csv_table,
    read_npz_data,
)

__all__ = ["IdentificationData", "read_identification_data", "merged", "is_table",
           "MISSING_POLICIES", "name_held_input", "refuse_idle_tolerance"]

_TABLE_SUFFIXES = frozenset({".csv", ".tsv", ".txt", ".dat"})
_SHOWN = 5                            # locations listed in a note before "..."


@dataclass(frozen=True)
class IdentificationData:
    """Data ready for :meth:`dmdidc.DMDidc.fit`: one or more segments (experiments).

    Attributes
    ----------
    X : tuple of ndarray, each (n, K_i + 1)
    U : tuple of ndarray, each (m, K_i)
    dt : float or None
        The sampling period read from a time column (None without one).
    notes : tuple of str
        What was decided about the files (time column, missing samples), for the user.
    state_names, input_names : tuple of str, or None
        The signals' names as the file gives them (a CSV header, without the unit in brackets;
        an IdData archive's metadata); ``None`` where the file names none (an ``.npz`` of
        arrays, a CSV without a header line).
    state_units, input_units : tuple of str, or None
        Their units (``""`` where a name has none); ``None`` with the names.
    source : str
        The file(s) read, for the model's provenance.
    interpolated_inputs : int
        Input values filled in by ``missing="interpolate"`` (not what the plant received:
        ``identify --outputs`` warns, :func:`dmdidc.missing.interpolated_inputs_warning`).
    time_column : str
        The time column whose stamps were read, for messages (``""`` when none was: an
        ``.npz``, no time column, ``time="ignore"``).
    """

    X: tuple[np.ndarray, ...]
    U: tuple[np.ndarray, ...]
    dt: float | None
    notes: tuple[str, ...]
    state_names: tuple[str, ...] | None = None
    input_names: tuple[str, ...] | None = None
    state_units: tuple[str, ...] | None = None
    input_units: tuple[str, ...] | None = None
    source: str = ""
    interpolated_inputs: int = 0
    time_column: str = ""

    @property
    def arrays(self) -> tuple[np.ndarray | list[np.ndarray], np.ndarray | list[np.ndarray]]:
        """``X, U`` as :meth:`dmdidc.DMDidc.fit` takes them: arrays, or lists of segments."""
        if len(self.X) == 1:
            return self.X[0], self.U[0]
        return list(self.X), list(self.U)


def merged(items: Sequence[IdentificationData], files: Sequence[str]) -> IdentificationData:
    """The experiments of several files' data as one :class:`IdentificationData` (each
    file's segments are experiments of their own), their notes prefixed by the file.

    Raises
    ------
    ParameterError
        Files whose sampling period, signal names or units differ (named, with the remedy).

    Examples
    --------
    >>> import numpy as np
    >>> one = IdentificationData((np.zeros((1, 4)),), (np.ones((1, 3)),), 0.5, ("a note",))
    >>> both = merged([one, one], ["a.csv", "b.csv"])
    >>> len(both.X), both.notes[0], both.source
    (2, 'a.csv: a note', 'a.csv, b.csv')
    """
    first = items[0]
    for file, item in zip(files[1:], items[1:], strict=True):
        if (first.dt is None) != (item.dt is None) or (
                first.dt is not None and not math.isclose(first.dt, item.dt, rel_tol=1e-9)):
            raise ParameterError(f"{file!r} has sampling period {item.dt} s and {files[0]!r} "
                                 f"{first.dt} s: experiments fitted together share T (resample "
                                 f"one, or give --dt if the time columns only jitter)")
        for field in ("state_names", "input_names", "state_units", "input_units"):
            if getattr(item, field) != getattr(first, field):
                raise ParameterError(f"{file!r} has {field.replace('_', ' ')} "
                                     f"{getattr(item, field)} and {files[0]!r} "
                                     f"{getattr(first, field)}: experiments fitted together "
                                     f"measure the same signals in the same units")
    notes = tuple(f"{file}: {note}" for file, item in zip(files, items, strict=True)
                  for note in item.notes)
    return dataclasses.replace(
        first, X=tuple(x for item in items for x in item.X),
        U=tuple(u for item in items for u in item.U), notes=notes,
        source=", ".join(item.source or file for file, item in zip(files, items, strict=True)),
        interpolated_inputs=sum(item.interpolated_inputs for item in items))


def read_identification_data(data: str | Path | None = None, *, states: str | None = None,
                             inputs: str | None = None, time: str | None = None,
                             missing: str = "error", dt: float | None = None,
                             outputs: str | None = None,
                             time_tolerance: float | None = None) -> IdentificationData:
    """Read ``X``, ``U`` from an ``.npz`` file, two CSV files or one CSV table.

    Parameters
    ----------
    data : str or Path, optional
        An ``.npz`` archive, or a CSV table (by its suffix: ``.csv``, ``.tsv``, ``.txt``,
        ``.dat``).
    states, inputs : str, optional
        Without ``data``: the CSV files of states (K+1 rows) and inputs (K rows).  With a CSV
        table: its columns, comma separated (header names or 1-based numbers); ``inputs`` is
        required, ``states`` defaults to every other column but the time.
    time : str, optional
        The time column of the CSV file(s) (a name or 1-based number), or ``"none"`` (no time
        column: every column is a signal), or ``"ignore"`` (the column named like a time, or a
        first column that grows by one step, is left out unread; ``dt`` gives the period).
        Default: a column named time, timestamp or t, never a ``t`` or a first column that
        ``states`` / ``inputs`` name; an unnamed first column that counts rows (a row index)
        is left out (:mod:`dmdidc.time_column`).
    missing : {"error", "drop", "interpolate"}
        What to do with missing samples (see the module notes).
    dt : float, optional
        The sampling period; checked against the time column's, which it defaults to.
    outputs : str, optional
        Output identification (``y = C x``, fewer signals than states): the measured columns of
        a CSV table (or ``"all"``: every column but the time and the inputs; with an ``.npz``
        archive or two CSV files, ``"all"`` reads the states array or file as outputs).  They
        are returned where the states would be (``X``); with a data file not with ``states``
        (in the two-file form ``states`` is the outputs file).
    time_tolerance : float, optional
        Largest deviation of a time step from one period, in periods (time-stamp jitter;
        default :data:`~dmdidc.time_column.TIME_TOLERANCE`).

    Returns
    -------
    IdentificationData

    Raises
    ------
    ParameterError
        For a column that is not in the file, a column used twice, an ambiguous time-like
        column, bad timestamps (with the line), or a ``dt`` that disagrees with the time column.
    NonFiniteError
        For missing samples with ``missing="error"`` (how many and where).
    DimensionError
        For sample counts that do not match.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "log.csv"
    >>> rows = ["time,valve,temp"] + [f"{2 * k},{k % 2},{k * k}" for k in range(6)]
    >>> _ = path.write_text("\\n".join(rows).replace("4,0,4", "4,0,"))   # temp missing at t=4
    >>> data = read_identification_data(path, inputs="valve", missing="interpolate")
    >>> data.dt, data.X[0].tolist(), data.U[0].shape
    (2.0, [[0.0, 1.0, 5.0, 9.0, 16.0, 25.0]], (1, 5))
    >>> print(data.notes[-1])
    interpolated 1 missing value: 'temp' at sample 2 (t = 4)
    """
    if missing not in MISSING_POLICIES:
        raise ParameterError(f"missing must be one of {MISSING_POLICIES}; got {missing!r}")
    if outputs is not None:        # measured outputs y = C x: read where the states would be
        # in the two-file form --states is the file that holds the outputs, not a column list
        if states is not None and data is not None:
            raise ParameterError(f"give --outputs (measured signals y = C x, output "
                                 f"identification) or --states (every state measured), not "
                                 f"both; got --states {states!r} and --outputs {outputs!r} "
                                 f"(only the two-file form takes both: --states y.csv "
                                 f"--inputs u.csv --outputs all)")
        if data is None or not is_table(data):
            if outputs != "all":
                raise ParameterError(f"--outputs {outputs!r} names columns of a CSV table; with "
                                     f"an .npz archive or two CSV files, --outputs all reads "
                                     f"the state array or file as the measured outputs")
        else:
            states = None if outputs == "all" else outputs
    if dt is not None and not (math.isfinite(dt) and dt > 0):
        raise ParameterError(f"--dt must be a finite number > 0; got {dt!r}")
    tolerance = check_tolerance(time_tolerance, cli=True)
    if data is not None and _is_iddata_archive(data):
        return _from_iddata(Path(data), states, inputs, time, missing, dt)
    if data is not None and is_table(data):
        signals = _from_table(Path(data), states, inputs, time, tolerance, missing,
                              "--states" if outputs is None else "--outputs")
    else:
        signals = _from_files(data, states, inputs, time, tolerance, missing,
                              outputs=outputs is not None)
    if signals.U.shape[0] == 0:
        _no_inputs(signals, outputs)
    _refuse_constant(signals.X, signals.x_names)
    period = _sampling_period(signals, dt)
    if signals.grid is None and period is not None and signals.X.shape[1] > 1:
        # no stamps to check --dt against: a period in ms (--dt 500) shows here
        signals.notes.append(f"sampling period T = {period:g} s (--dt; no time column to "
                             f"check it against): the delays and modes are in its units")
    if signals.grid is not None:                            # a unit mistake shows here
        jitter = signals.grid.jitter_note
        signals.notes.append(f"sampling period T = {period:g} s, the step of "
                             f"{signals.time_source}{'; ' + jitter if jitter else ''}")
    X, U, notes, interpolated_inputs = _resolve_missing(signals, missing)
    (state_names, state_units), (input_names, input_units) = map(
        _split, (signals.x_header, signals.u_header))
    return IdentificationData(X, U, period, tuple(signals.notes + notes), state_names,
                              input_names, state_units, input_units,
                              str(data) if data is not None else f"{states}, {inputs}",
                              interpolated_inputs,
                              signals.time_source if signals.grid is not None else "")


def refuse_idle_tolerance(tolerance: float | None, datas: Sequence[IdentificationData]
                          ) -> None:
    """Refuse ``--time-tolerance`` when none of ``datas`` was read with time stamps: an option
    that would not act is refused, not silently ignored.

    Raises
    ------
    ParameterError
        A tolerance given for data without a time column read, saying why each has none.
    """
    if tolerance is None or any(data.time_column for data in datas):
        return
    why = "; ".join(
        f"{data.source!r} is a table without a time column read (--time none or ignore, or "
        f"no column named time, timestamp or t)" if is_table(data.source.split(", ")[0]) else
        f"{data.source!r} is an .npz archive (evenly spaced samples, no stamps)"
        for data in datas)
    raise ParameterError(f"--time-tolerance {tolerance:g} bounds the jitter of a time column's "
                         f"stamps, and there are none to check: {why}; drop --time-tolerance "
                         f"(an option that would not act is refused)")


def is_table(path: str | Path) -> bool:
    """Whether ``path`` is read as a CSV table (by its suffix, unless it is a zip archive)."""
    path = Path(path)
    return path.suffix.lower() in _TABLE_SUFFIXES and not (path.is_file()
                                                            and zipfile.is_zipfile(path))


def names_text(labels) -> str:
    """``labels`` joined by commas; more than ``2 _SHOWN`` shortened to the first and last
    ``_SHOWN`` and their count (a file of hundreds of sensors named each in a note)."""
    labels = list(labels)
    if len(labels) <= 2 * _SHOWN:
        return ", ".join(labels)
    return (f"{', '.join(labels[:_SHOWN])}, ... ({len(labels) - 2 * _SHOWN} more), "
            f"{', '.join(labels[-_SHOWN:])}")


def _refuse_constant(X: np.ndarray, names: list[str]) -> None:
    """A state that never changes has no dynamics to identify: its mode and its row of ``A``
    would be whatever the rounding makes them."""
    for name, row in zip(names, X, strict=True):
        known = row[~np.isnan(row)]
        if known.size > 1 and np.all(known == known[0]):
            raise ParameterError(f"state {name} is constant ({known[0]:g} in every sample): it "
                                 f"carries no dynamics, so the data do not determine its mode; "
                                 f"leave it out (--states without it) or excite it")


def name_held_input(data: IdentificationData, exc: Exception) -> None:
    """After a rank-deficient fit: raise its cause by the column's name when an input is held
    at one value (as :meth:`dmdidc.DMDidc.fit` does by row; a constant state is refused
    before, :func:`_refuse_constant`)."""
    held = held_inputs(list(data.U))
    if held:
        i, value = next(iter(held.items()))
        name = repr(data.input_names[i]) if data.input_names else f"u{i + 1}"
        raise held_input_error(name, value, len(held), "--inputs without it") from exc


def _is_iddata_archive(path: str | Path) -> bool:
    """Whether ``path`` is an ``.npz`` written by :meth:`dmdidc.IdData.save` (``X_0``, ``U_0``,
    ..., and its ``metadata``)."""
    path = Path(path)
    if not (path.is_file() and zipfile.is_zipfile(path)):
        return False
    with zipfile.ZipFile(path) as archive:
        return {"metadata.npy", "X_0.npy", "U_0.npy"} <= set(archive.namelist())


def _from_iddata(path: Path, states, inputs, time, missing: str, dt: float | None
                 ) -> IdentificationData:
    """An :class:`~dmdidc.IdData` archive: its experiments, sampling period and names."""
    from dmdidc import IdData

    if states is not None or inputs is not None or time is not None:
        raise ParameterError(f"{str(path)!r} is an IdData archive: it names its own states, "
                             f"inputs and sampling period (--states, --inputs and --time are "
                             f"for CSV files)")
    data = IdData.load(path, missing=missing)
    if dt is not None and not math.isclose(dt, data.dt, rel_tol=1e-9):
        raise ParameterError(f"--dt {dt:g} disagrees with the sampling period of {str(path)!r}, "
                             f"{data.dt:g} s (from its metadata); drop --dt")
    _refuse_constant(np.concatenate(data.X, axis=1), [repr(n) for n in data.state_names])
    if data.operating_point is not None:
        raise ParameterError(f"{str(path)!r} carries an operating point, which the command "
                             f"line would not use: fit it in Python (DMDidc(...).fit(IdData."
                             f"load(path)) keeps it), or save the IdData without it")
    notes = [f"{str(path)!r} is an IdData archive: {data.n_experiments} experiment(s), states "
             f"{names_text(data.state_names)}, inputs {names_text(data.input_names)}, sampling "
             f"period T = {data.dt:g} s (from the file)"]
    if data.missing_report.n_missing:
        notes.append(str(data.missing_report))
    return IdentificationData(tuple(data.X), tuple(data.U), data.dt, tuple(notes),
                              tuple(data.state_names), tuple(data.input_names),
                              tuple(data.state_units), tuple(data.input_units),
                              data.source or str(path),
                              data.missing_report.interpolated_inputs)


@dataclass
class _Signals:
    """One record before the missing samples are resolved (NaN where missing)."""

    X: np.ndarray                    # (n, K+1)
    U: np.ndarray                    # (m, K)
    x_names: list[str]
    u_names: list[str]
    times: np.ndarray | None         # (K+1,) or (K,)
    time_source: str                 # the time column, for messages
    notes: list[str]
    x_header: list[str] | None = None  # the header cells ('T_room [K]'); None: no header
    u_header: list[str] | None = None
    grid: TimeGrid | None = None        # the time column's sampling grid


def _no_inputs(signals: _Signals, outputs: str | None) -> None:
    """A record without inputs (m = 0) is fitted as the Python API fits it: plain DMD of the
    states. Output identification needs inputs (it finds how they act)."""
    if outputs is not None:
        raise ParameterError(f"--outputs {outputs!r} with no inputs: output identification "
                             f"(OutputDMDidc) finds how inputs act on the outputs. Output-only "
                             f"data as states (--states, or an .npz without --outputs) give "
                             f"plain DMD, right only when the signals are the whole state; "
                             f"with fewer sensors than states it finds too few modes: stack "
                             f"delayed outputs as states (Hankel DMD) and fit them in Python "
                             f"with DMDidc(max_delay=0, svd_rank=order)")
    signals.notes.append("no inputs (m = 0): an autonomous record, fitted as plain DMD of the "
                         "states (as DMDidc.fit does with U of zero rows)")


def _from_files(data, states, inputs, time, tolerance: float, missing: str, *,
                outputs: bool = False) -> _Signals:
    """The ``.npz`` form or the two-CSV form (``--inputs none``: no inputs file, m = 0);
    ``outputs``: the states are measured outputs, which may have as many samples as the
    inputs."""
    if data is not None:
        if states is not None or inputs is not None:
            raise ParameterError(f"give either a data file ({str(data)!r}, an .npz archive "
                                 f"holding X and U) or --states and --inputs CSV files, not "
                                 f"both (--states and --inputs name columns only of a CSV "
                                 f"table)")
        if time is not None:
            raise ParameterError(f"--time names a CSV column; {str(data)!r} is an .npz archive "
                                 f"(its samples are evenly spaced by --dt)")
        X, U = read_npz_data(data, allow_missing=True, outputs=outputs)
        return _Signals(X, U, _default_names("x", X), _default_names("u", U), None, "", [])
    if _none(inputs) and states is not None:
        return _states_only(states, time, tolerance, missing)
    _check_pair(states, inputs)
    notes: list[str] = []
    x_table, u_table = (_read_table(path, notes) for path in (states, inputs))
    x_time = _time_column(x_table, time, notes, required=False)
    # a column number names the states file's column; the inputs file's is found by name
    u_spec = None if time is not None and time.strip().isdigit() else time
    u_time = _time_column(u_table, u_spec, notes, required=False)
    if time not in (None, "none") and x_time is None and u_time is None:
        raise ParameterError(f"--time {time!r}: neither {str(states)!r} nor {str(inputs)!r} has "
                             f"that column")
    x_cols = _read_columns(x_table, None, x_time, notes)
    u_cols = _read_columns(u_table, None, u_time, notes)
    x_table, times, grid, source = _timed(x_table, x_time, tolerance, missing, notes)
    u_table, u_times, u_grid, u_source = _timed(u_table, u_time, tolerance, missing, notes)
    X, U = x_table.values[:, x_cols].T, u_table.values[:, u_cols].T
    _check_samples(X, U, f"{str(states)!r} has", f"{str(inputs)!r} has", csv=True,
                   outputs=outputs)
    if u_times is not None:
        if times is not None and not np.allclose(u_times, times[:-1], rtol=1e-9, atol=0):
            row = int(np.argmax(~np.isclose(u_times, times[:-1], rtol=1e-9, atol=0)))
            raise ParameterError(f"{str(inputs)!r} line {u_table.lines[row]} has time "
                                 f"{u_times[row]:g} s; {str(states)!r} has {times[row]:g} s in "
                                 f"that row: the files must share their time stamps")
        if times is None:
            times, grid, source = u_times, u_grid, u_source
    return _Signals(X, U, _names(x_table, x_cols, "x"), _names(u_table, u_cols, "u"), times,
                    source, notes, _header(x_table, x_cols), _header(u_table, u_cols), grid)


def _none(inputs: str | Path | None) -> bool:
    """``--inputs none``: the record has no inputs (m = 0)."""
    return isinstance(inputs, str) and inputs.strip().lower() == "none"


def _states_only(states, time, tolerance: float, missing: str) -> _Signals:
    """The states CSV alone (``--inputs none``): K+1 rows of states, no inputs."""
    notes: list[str] = []
    table = _read_table(states, notes)
    time_col = _time_column(table, time, notes, required=True)
    cols = _read_columns(table, None, time_col, notes)
    table, times, grid, source = _timed(table, time_col, tolerance, missing, notes)
    X = table.values[:, cols].T
    U = np.zeros((0, max(X.shape[1] - 1, 0)))
    _check_samples(X, U, f"{str(states)!r} has", "--inputs none:", csv=True)
    return _Signals(X, U, _names(table, cols, "x"), [], times, source, notes, grid=grid)


def _from_table(path: Path, states, inputs, time, tolerance: float, missing: str,
                state_option: str = "--states") -> _Signals:
    """The one-table form: a row per sample, columns chosen by name (``states`` given as
    ``state_option``: ``--outputs`` names the measured outputs' columns)."""
    notes: list[str] = []
    table = _read_table(path, notes)
    if inputs is None:
        raise ParameterError(f"{str(path)!r} is a CSV table: give --inputs COLUMNS (header names "
                             f"or 1-based numbers, comma separated; it has "
                             f"{_columns_text(table)}), or --inputs none for a record without "
                             f"inputs, and optionally --states COLUMNS; separate files go in "
                             f"--states x.csv --inputs u.csv without a data file")
    u_cols = [] if _none(inputs) else _columns(table, inputs, "--inputs")
    chosen = None if states is None else _columns(table, states, state_option)
    time_col = _time_column(table, time, notes, required=True,
                            signals=set(u_cols) | set(chosen or ()), complete=chosen is not None)
    time_set = set() if time_col is None else {time_col.column}
    taken = set(u_cols) | _unread(time_col)
    if chosen is None:
        x_cols = [c for c in range(table.values.shape[1])
                  if c not in taken and c not in table.text]
        if not x_cols:
            words = [table.label(c) for c in sorted(table.text) if c not in taken]
            also = (f"; {', '.join(words)} {'holds' if len(words) == 1 else 'hold'} text, "
                    f"never a state" if words else "")
            raise ParameterError(f"{str(path)!r} has no column left for the states (it has "
                                 f"{_columns_text(table)}{also}); give --states COLUMNS")
        notes.append(f"states: {names_text(table.label(c) for c in x_cols)} (every column but "
                     f"the time and the inputs; --states selects)")
    else:
        x_cols = chosen
    for option, cols in (("--states", x_cols), ("--inputs", u_cols)):
        clash = sorted(set(cols) & time_set)
        if clash:
            raise ParameterError(f"{option} includes the time column {table.label(clash[0])}; "
                                 f"a time column is never a signal (--time none if it is one)")
    both = sorted(set(x_cols) & set(u_cols))
    if both:
        raise ParameterError(f"column {table.label(both[0])} of {str(path)!r} is in both "
                             f"--states and --inputs; each column is one signal")
    _read_columns(table, x_cols + u_cols, time_col, notes)
    if table.values.shape[0] < 2:
        raise DimensionError(f"{str(path)!r} has {table.values.shape[0]} row; a record needs at "
                             f"least two samples")
    table, times, grid, source = _timed(table, time_col, tolerance, missing, notes)
    X, U = table.values[:, x_cols].T, table.values[:-1, u_cols].T
    return _Signals(X, U, _names(table, x_cols, "x"), _names(table, u_cols, "u"), times,
                    source, notes, _header(table, x_cols), _header(table, u_cols), grid)


def _read_table(path, notes: list[str]) -> CsvTable:
    """A CSV table with missing values and text allowed (only the columns read must be
    numbers: :func:`_read_columns`); what its reader decided goes to ``notes``."""
    table = read_csv_table(path, allow_missing=True, text=True)
    notes.extend(table.notes)
    return table


def _time_column(table: CsvTable, time: str | None, notes: list[str], *, required: bool,
                 signals: Collection[int] = (), complete: bool = False) -> _Time | None:
    """The time column of ``table`` (None: no time column; :mod:`dmdidc.time_column`);
    ``signals``, ``complete``: the columns named as signals, whether every state is named."""
    if time == "none":
        return None
    if time is not None and time != "ignore":
        found = _find_column(table, time)
        if found is None and required:
            raise ParameterError(f"--time {time!r} is not a column of {str(table.path)!r} (it has "
                                 f"{_columns_text(table)}); --time none: no time column")
        return None if found is None else _Time(found, clock=_stamps(table, [found]).get(found))
    names, units = _split(table.names) if table.names else (None, None)
    ignore = time == "ignore"
    # ISO 8601 stamps are the time in a column named like one (left out unread by ignore)
    stamps = {} if ignore or not names else _stamps(table, [
        c for c in table.text if c not in signals and is_time_name(names[c], units[c])])
    found = find_time_column(names, units, table.values, notes=notes, cli=True,
                             label=lambda c: _where(table, c), signals=signals,
                             complete=complete, ignore=ignore)
    if ignore and found is None:
        if not required:
            return None                       # the other file of two may hold it
        raise nothing_to_ignore(repr(str(table.path)), _columns_text(table), cli=True)
    if found is None:
        return None
    if not found.read:
        return _Time(found.column, ignored=True, left_out=found.left_out)  # a row index
    where = _where(table, found.column)
    return _Time(found.column, named_reason(where, names[found.column], cli=True),
                 left_out=found.left_out, clock=stamps.get(found.column))


def _stamps(table: CsvTable, columns: list[int]) -> dict[int, IsoStamps]:
    """The columns of text among ``columns`` that hold ISO 8601 stamps, read as seconds into
    the table's values (:func:`dmdidc.time_column.iso_seconds`)."""
    stamps = {}
    for c in columns:
        if c in table.text:
            cells = table.cells[:, c]
            found = iso_seconds(cells, where=_where(table, c), lines=table.lines,
                                missing=missing_cells(cells))
            if found is not None:
                stamps[c] = found
                table.values[:, c] = found.seconds
    return stamps


def _read_columns(table: CsvTable, columns: list[int] | None, time: _Time | None,
                  notes: list[str]) -> list[int]:
    """The signal columns of ``table``: ``columns`` (None: every column but the time, a row
    index and the columns of text, noted), each refused at its first cell that is no number;
    a column of text read by no option is left out with a note."""
    unread = _unread(time)
    if columns is None:
        columns = [c for c in range(table.values.shape[1])
                   if c not in unread and c not in table.text]
    for c in columns:
        if c in table.bad:
            raise table.refuse(c)
    left = [c for c in table.bad if c not in columns and c not in unread]
    if left:
        notes.append(f"{str(table.path)!r}: " + text_columns_note(
            [table.label(c) for c in left], [str(table.cells[table.bad[c], c]) for c in left],
            cli=True))
    return columns


def _unread(time: _Time | None) -> set[int]:
    """The columns that are no signal: the time column and any row index beside it."""
    return set() if time is None else {time.column, *time.left_out}


def _timed(table: CsvTable, time: _Time | None, tolerance: float, missing: str,
           notes: list[str]) -> tuple[CsvTable, np.ndarray | None, TimeGrid | None, str]:
    """The table (with a row of missing values for each sample its stamps skip, unless
    ``missing="error"`` refuses them), the stamps in seconds, their grid and the column's name
    (the table, None, None, "" without a time column or with ``--time ignore``)."""
    if time is None or time.ignored:
        return table, None, None, ""
    where = _where(table, time.column)
    times, grid = _checked_times(table, time, tolerance, missing, notes)
    drop = missing == "drop"
    note = skipped_note(grid, where, [table.lines], split=drop)
    if note:
        notes.append(f"{note} (--missing {missing}){time.clock.hint if time.clock else ''}")
        times, values, kept = with_skipped_rows(times, table.values, grid.periods[0],
                                                longest=len(table.values) if drop else None)
        lines = _lost_row_lines(table.lines, kept, len(times))
        table = dataclasses.replace(table, values=values, lines=lines)
        grid = time_grid([times], where=where, tolerance=tolerance, lines=[lines],
                         reason=time.reason, cli=True)
    return table, times, grid, where


def _lost_row_lines(lines: np.ndarray, kept: np.ndarray, size: int) -> np.ndarray:
    """The file line of each row once lost rows are inserted: a lost row takes the line of
    the first row kept after it (its messages say where the gap ends)."""
    following = np.searchsorted(kept, np.arange(size))
    return lines[following]


@dataclass(frozen=True)
class _Time:
    """A time column: its index, why it was taken (for refusals), whether it is left out
    unread (``--time ignore``), and the columns left out unread beside it (a row index)."""

    column: int
    reason: str = ""
    ignored: bool = False
    left_out: tuple[int, ...] = ()
    clock: IsoStamps | None = None     # ISO 8601 stamps (already seconds in the values)


def _checked_times(table: CsvTable, time: _Time, tolerance: float, missing: str,
                   notes: list[str]) -> tuple[np.ndarray, TimeGrid]:
    """The time column in seconds and its grid, refused with its line unless each step is a
    whole number of periods (within the tolerance: jitter); a gap (lost rows) too with
    ``missing="error"``; a unit read from the column's name is noted in ``notes``."""
    where = _where(table, time.column)
    clock, reason = time.clock, time.reason + (time.clock.hint if time.clock else "")
    if clock is None and time.column in table.bad:
        raise table.refuse(time.column, time=True)
    if clock is not None and clock.note:
        notes.append(f"{where}: {clock.note}")
    name, unit = split_unit(table.names[time.column]) if table.names else (None, "")
    seconds = 1.0 if clock is not None else time_unit(unit, where, reason=reason, name=name,
                                                      note=notes.append)
    times = table.values[:, time.column] * seconds
    grid = time_grid([times], where=where, tolerance=tolerance, lines=[table.lines],
                     reason=reason, cli=True)
    if missing == "error":
        refuse_gaps(grid, [times], where=where, lines=[table.lines], reason=reason, cli=True)
    return times, grid


def _sampling_period(signals: _Signals, dt: float | None) -> float | None:
    grid = signals.grid
    if grid is None:
        return dt
    if dt is not None and not grid.agrees(dt):
        raise ParameterError(f"--dt {dt:g} disagrees with {signals.time_source}, which advances "
                             f"by {grid.period:g} s per row; drop --dt to use the time column's")
    return grid.period if dt is None else dt


def _resolve_missing(signals: _Signals, missing: str
                     ) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], list[str], int]:
    """The record's missing samples resolved by :func:`dmdidc.missing.handle_missing` (the
    rules of :func:`dmdidc.read_data`), noted and refused in the command line's words; and
    the input values interpolated (not what the plant received: ``identify --outputs`` warns,
    :func:`dmdidc.missing.interpolated_inputs_warning`)."""
    X, U = signals.X, signals.U
    x_gap, u_gap = np.isnan(X), np.isnan(U)
    count = int(x_gap.sum() + u_gap.sum())
    if count == 0:
        return (X,), (U,), [], 0
    places = _places(signals, x_gap, u_gap)
    plural = "s" if count > 1 else ""
    if missing == "error":
        raise NonFiniteError(f"{count} missing value{plural} ({places}); give --missing drop "
                             f"(split the record at the gaps) or --missing interpolate "
                             f"(linear in time)")
    try:
        pieces, report = handle_missing([(X, U)], signals.x_names + signals.u_names, missing)
    except NonFiniteError:
        remedy = ("leave fewer than two samples with data to interpolate between; complete the "
                  "data or give --missing drop" if missing == "interpolate" else
                  "leaves no two consecutive samples; use --missing interpolate or complete "
                  "the data")
        raise NonFiniteError(f"{'the' if missing == 'interpolate' else 'dropping the'} missing "
                             f"values ({places}) {remedy}") from None
    if missing == "interpolate":
        first, last = support(X, U)
        trimmed = X.shape[1] - (last - first + 1)
        note = (f"interpolated the missing values ({places}); trimmed {first} sample(s) at the "
                f"start and {trimmed - first} at the end, outside the known data" if trimmed
                else f"interpolated {count} missing value{plural}: {places}")
    else:
        lengths = ", ".join(str(x.shape[1] - 1) for x, _ in pieces)
        # the samples in no segment: the lost ones, and pieces too short to keep
        note = (f"dropped {count} missing value{plural} ({places}): {len(pieces)} segment"
                f"{'s' if len(pieces) > 1 else ''} of {lengths} steps, fitted as separate "
                f"experiments" + (f" ({report.removed} of {X.shape[1]} samples in none)"
                                  if report.removed else ""))
    return (tuple(x for x, _ in pieces), tuple(u for _, u in pieces), [note],
            report.interpolated_inputs)


def _places(signals: _Signals, x_gap: np.ndarray, u_gap: np.ndarray) -> str:
    """Where values are missing: ``'x2' at samples 4, 5 (t = 8, 10); ...``."""
    parts = []
    for names, gaps in ((signals.x_names, x_gap), (signals.u_names, u_gap)):
        for name, gap in zip(names, gaps, strict=True):
            samples = np.flatnonzero(gap)
            if samples.size == 0:
                continue
            shown = ", ".join(str(int(k)) for k in samples[:_SHOWN])
            more = f", ... ({samples.size} in all)" if samples.size > _SHOWN else ""
            when = ""
            if signals.times is not None:
                times = signals.times[samples[samples < signals.times.size][:_SHOWN]]
                when = f" (t = {', '.join(f'{t:g}' for t in times)}{', ...' if more else ''})"
            noun = "samples" if samples.size > 1 else "sample"
            parts.append(f"{name} at {noun} {shown}{more}{when}")
    return "; ".join(parts)


def _find_column(table: CsvTable, spec: str) -> int | None:
    spec = spec.strip()
    if table.names and spec in table.names:
        return table.names.index(spec)
    bare = [split_unit(name)[0] for name in table.names or ()]     # "heater" for "heater [kW]"
    if spec in bare:
        return bare.index(spec)
    if spec.isdigit() and 1 <= int(spec) <= table.values.shape[1]:
        return int(spec) - 1
    return None


def _columns(table: CsvTable, spec: str, option: str) -> list[int]:
    """Comma-separated names or 1-based numbers of columns of ``table``."""
    columns = []
    for part in spec.split(","):
        found = _find_column(table, part)
        if found is None:
            raise ParameterError(f"{option} {spec!r}: {part.strip()!r} is not a column of "
                                 f"{str(table.path)!r} (it has {_columns_text(table)})")
        if found in columns:
            raise ParameterError(f"{option} {spec!r} names {table.label(found)} twice")
        columns.append(found)
    return columns


def _columns_text(table: CsvTable) -> str:
    width = table.values.shape[1]
    if table.names:
        return f"columns {', '.join(table.names)}"
    return f"{width} unnamed columns, numbered 1 to {width}"


def _names(table: CsvTable, columns: list[int], prefix: str) -> list[str]:
    if table.names:
        return [repr(table.names[c]) for c in columns]
    return [f"{prefix}{i + 1}" for i in range(len(columns))]


def _header(table: CsvTable, columns: list[int]) -> list[str] | None:
    return [table.names[c] for c in columns] if table.names else None


def _split(header: list[str] | None) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """Names and units of header cells (``'T_room [K]'``), or ``(None, None)``."""
    if header is None:
        return None, None
    parsed = [split_unit(cell) for cell in header]
    return tuple(name for name, _ in parsed), tuple(unit for _, unit in parsed)


def _default_names(prefix: str, array: np.ndarray) -> list[str]:
    return [f"{prefix}{i + 1}" for i in range(array.shape[0])]


def _where(table: CsvTable, column: int) -> str:
    return f"{table.label(column)} of {str(table.path)!r}"
