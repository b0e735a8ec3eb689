"""Files of :class:`~dmdidc.IdData`, without pandas: CSV with a header, or NPZ with metadata.

**CSV.** One row per sample, one column per signal, a header line naming the columns, each name
optionally followed by its unit in brackets (``T_out [K]``).  The file's text (encoding,
comment lines, separator, decimal mark, missing-value cells, what spreadsheets add) is read by
the rules of :mod:`dmdidc.table_text`, the same for every reader of a data file.  Row
``k`` holds ``x_k`` and ``u_k``; the inputs of the last row of an experiment are not used (the
state after the last input), and may be empty.  Select columns by name or whole header cell
(``"valve"`` or ``"valve [%]"``): ``inputs`` (required), ``states`` (default: every other
column), ``time`` (a column of sample times, numbers or ISO 8601 stamps, from which ``dt`` is
read; default: a column named like a time, by the rules of :mod:`dmdidc.time_column`, shared
with the command line: its unit, a ``T [degC]`` that is a temperature, jitter within
``time_tolerance``), ``experiment`` (a column whose value, a number or a text label, changes
where a new experiment starts).  Only the columns read must be numbers: a column of text named
by none of these (a status flag, an operator's name) is left out unread with a
:class:`~dmdidc.time_column.TimeColumnWarning` naming it, and is never taken as a state.

**NPZ.**  Arrays ``X_0, U_0, X_1, ...`` and a ``metadata`` JSON string (names, units, dt,
operating point, source); read with ``allow_pickle=False``, so a data file never runs code.
"""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from dmdidc.table_text import (
    MISSING_CELLS,
    empty_columns_note,
    ends_in_trailing_separator,
    is_decimal_comma,
    is_missing,
    missing_cells,
    read_table_text,
    split_unit,
)
from dmdidc.time_column import (
    TIME_TOLERANCE,
    IsoStamps,
    TimeColumnWarning,
    check_tolerance,
    find_time_column,
    is_time_name,
    iso_seconds,
    named_reason,
    refuse_gaps,
    skipped_note,
    time_grid,
    time_unit,
    with_skipped_rows,
)

__all__ = ["read_fields", "write_data", "split_unit", "MISSING_CELLS", "is_missing",
           "is_decimal_comma", "empty_columns_note", "parse_columns", "missing_cells", "cell_error",
           "text_columns_note"]

def parse_columns(cells: np.ndarray) -> tuple[np.ndarray, dict[int, int], set[int]]:
    """The numbers of a table of stripped cells, column by column (vectorized).

    Parameters
    ----------
    cells : ndarray of str, shape (rows, columns)

    Returns
    -------
    values : ndarray, shape (rows, columns)
        NaN where a cell is missing (:data:`MISSING_CELLS`) or is no number.
    bad : dict
        Per column holding a cell that is no number (nor missing), the row of its first.
        Only the columns a reader reads must be numbers: it refuses that cell of those.
    text : set of int
        The columns among ``bad`` without a single number (a decimal comma counts as one):
        text such as a status flag or ISO time stamps, which a reader leaves out when it does
        not read them (a column of numbers with a stray cell is a signal with a bad cell).

    Examples
    --------
    >>> cells = np.array([["0.5", "OK", "1"], ["", "OK", "x"]])
    >>> values, bad, text = parse_columns(cells)
    >>> values.tolist(), bad, text
    ([[0.5, nan, 1.0], [nan, nan, nan]], {1: 0, 2: 1}, {1})
    """
    values = np.empty(cells.shape)
    bad: dict[int, int] = {}
    text: set[int] = set()
    for c in range(cells.shape[1]):
        column = cells[:, c]
        try:                                  # the usual column: every cell a number
            values[:, c] = column.astype(float)
            continue
        except ValueError:
            pass
        missing = missing_cells(column)
        try:
            values[:, c] = np.where(missing, "nan", column).astype(float)
            continue
        except ValueError:
            pass
        # a cell that starts with a date (ISO stamps) is no number; the others are parsed
        # once per distinct text (a status flag repeats a few words)
        rest = np.flatnonzero(~missing & ~_dated(column))
        distinct, inverse = np.unique(column[rest], return_inverse=True)
        parsed = np.array([_number(cell) for cell in distinct])
        numbers = np.full(column.shape, np.nan)
        numbers[rest] = parsed[inverse]
        values[:, c] = numbers
        bad[c] = int(np.argmax(np.isnan(numbers) & ~missing))
        if not any(not np.isnan(number) or is_decimal_comma(cell)
                   for number, cell in zip(parsed, distinct, strict=True)):
            text.add(c)
    return values, bad, text


def _dated(cells: np.ndarray) -> np.ndarray:
    """Which cells start with a date ``YYYY-``: ISO stamps, never numbers."""
    return (np.strings.isdigit(np.strings.slice(cells, 0, 4))
            & (np.strings.slice(cells, 4, 5) == "-"))


def _number(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return float("nan")


def text_columns_note(labels: list[str], examples: list[str], *, cli: bool = False) -> str:
    """The note of columns that hold text (``examples``: a cell of each) and are read by no
    option, left out unread."""
    holds = ", ".join(f"{label} ({example!r})" for label, example in
                      zip(labels, examples, strict=True))
    options = "--time, --states or --inputs" if cli else "time=, states= or inputs="
    return (f"{holds} {'holds' if len(labels) == 1 else 'hold'} text, not numbers: left out "
            f"unread (only the columns named by {options}, or taken as the states, are read)")


def write_data(data: Any, path: str | Path) -> Path:
    """Write an :class:`~dmdidc.IdData` as ``.csv`` or ``.npz`` (module notes); returns the path.

    Raises
    ------
    ParameterError
        Another suffix.
    """
    path = Path(path)
    if path.suffix == ".npz":
        meta = {"dt": data.dt, "state_names": data.state_names, "input_names": data.input_names,
                "state_units": data.state_units, "input_units": data.input_units,
                "source": data.source, "operating_point": None if data.operating_point is None
                else data.operating_point.to_dict()}
        arrays = {f"{kind}_{i}": a for kind, group in (("X", data.X), ("U", data.U))
                  for i, a in enumerate(group)}
        np.savez(path, metadata=np.array(json.dumps(meta)), **arrays)
        return path
    if path.suffix != ".csv":
        raise ParameterError(f"path must end in .csv or .npz; got {str(path)!r}")
    several = data.n_experiments > 1
    header = (["experiment"] if several else []) + ["time [s]"] + [
        f"{n} [{u}]" if u else n for n, u in zip(data.state_names + data.input_names,
                                                  data.state_units + data.input_units,
                                                  strict=True)]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for e, (X, U) in enumerate(zip(data.X, data.U, strict=True)):
            U = np.concatenate([U, np.full((U.shape[0], 1), np.nan)], axis=1)
            for k in range(X.shape[1]):
                row = [repr(float(v)) if np.isfinite(v) else "" for v in (*X[:, k], *U[:, k])]
                writer.writerow(([e] if several else []) + [repr(k * data.dt)] + row)
    return path


def read_fields(path: str | Path, *, inputs: Any = None, states: Any = None,
                time: str | None = "auto", experiment: str | None = None,
                dt: float | None = None, missing: str = "error",
                operating_point: Any = None,
                time_tolerance: float = TIME_TOLERANCE) -> dict[str, Any]:
    """The arguments of :class:`~dmdidc.IdData` read from ``.csv`` or ``.npz`` (module notes;
    :func:`dmdidc.read_data` builds the IdData).

    Parameters
    ----------
    path : str or Path
    inputs : sequence of str
        CSV: the input columns (required), by name (``"valve"``) or header cell
        (``"valve [%]"``).
    states : sequence of str, optional
        CSV: the state columns (default: all columns but the others named here, and those of
        text, which are left out with a :class:`TimeColumnWarning` naming them).
    time : str or None, default "auto"
        CSV: the column of sample times (then ``dt`` is read from it, in the unit of its
        header, or ISO 8601 stamps read as seconds, :mod:`dmdidc.time_column`); ``"auto"``:
        a column named ``time``, ``timestamp`` or ``t`` if there is one (``t``, which may be
        a temperature, with a :class:`TimeColumnWarning` saying what was decided; so are
        jittery stamps); a column named in ``inputs`` or ``states`` is a signal, never the
        time; a first column without a name that grows by one step (a row index, as pandas'
        ``to_csv`` writes) is left out, with the warning; ``None``: no time column (every
        column of numbers is a signal; a column of text, stamps included, is left out with
        the warning).
    experiment : str, optional
        CSV: a column that labels the experiment of each row.
    dt : float, optional
        Sampling period; required for a CSV without a time column.
    missing : {"error", "interpolate", "drop"}, default "error"
    operating_point : optional
        CSV: the operating point of the data (an NPZ file carries its own).
    time_tolerance : float, default 0.1
        Largest deviation of a time step from a whole number of periods, in periods (time
        stamps jitter).

    Returns
    -------
    dict
        ``X``, ``U`` and the keyword arguments of IdData, ``source`` the file name.

    Raises
    ------
    ParameterError
        Unknown columns, a missing ``dt``, time stamps off the grid, a cell that is not a
        number, another suffix.
    DimensionError, NonFiniteError
        As :class:`~dmdidc.IdData`.

    Warns
    -----
    TimeColumnWarning
        A time column found by its name, a ``t`` column taken as a signal, jittery stamps.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "rig.csv"
    >>> _ = path.write_text("t [ms],T_out [K],heater [kW]\\n0,300,1\\n500,301,0\\n1000,301.5,\\n")
    >>> from dmdidc import read_data
    >>> data = read_data(path, inputs=["heater [kW]"], time="t")
    >>> data.dt, data.state_units, data.U[0].shape
    (0.5, ('K',), (1, 2))
    """
    path = Path(path)
    if path.suffix == ".npz":
        if inputs is not None or states is not None or time not in (None, "auto") or \
                experiment is not None or operating_point is not None:
            raise ParameterError("an .npz data file carries its own signals and operating "
                                 "point; inputs, states, time, experiment and operating_point "
                                 "are for CSV files")
        return _read_npz(path, dt=dt, missing=missing)
    if path.suffix != ".csv":
        raise ParameterError(f"path must end in .csv or .npz; got {str(path)!r}")
    if inputs is None:
        raise ParameterError("a CSV data file needs inputs=[...]: the names of its input "
                             "columns (a CSV keeps no metadata; one IdData.save wrote of "
                             "several experiments also needs experiment='experiment'; the "
                             ".npz archive round-trips everything)")
    tolerance = check_tolerance(time_tolerance)
    notes: list[str] = []
    names, units, cells, lines = _read_csv(path, notes)
    values, bad, text = parse_columns(cells)
    if not bad:
        # every cell a number or missing: the text is read no more (the stamps, labels and
        # refusals below read columns of bad cells); 500 001 rows of 6 cells hold 48 MB
        cells = None
    column = _Names(path.name, names, units)
    reason = ""
    inputs = column.select(inputs, "inputs")
    chosen = column.select(states, "states") if states is not None else None
    index = {n: i for i, n in enumerate(names)}
    signals = {index[n] for n in inputs + (chosen or [])}
    # ISO 8601 stamps are the time in a column named like one (or named as the time)
    candidates = ([index[column.name(time, "time")]] if time not in (None, "auto") else
                  [] if time is None else
                  [c for c in text if c not in signals and is_time_name(names[c], units[c])])
    stamps: dict[int, IsoStamps] = {}
    for c in candidates:
        if c in text and (found := iso_seconds(cells[:, c], where=f"{names[c]!r} of {path.name}",
                                               lines=lines,
                                               missing=missing_cells(cells[:, c]))):
            stamps[c], values[:, c] = found, found.seconds
    unread: list[str] = []                # a row index, left out
    if time == "auto":
        # a column named time or timestamp is the time without a word: a warning on every
        # read (our own saved files included) would be noise; 't' and refusals are said.
        # A column named as a signal is one, whatever it looks like.
        found = find_time_column(names, units, values, notes=notes,
                                 label=lambda c: repr(names[c]), announce=False,
                                 signals=signals, complete=chosen is not None)
        time = None
        if found is not None and found.read:
            time = names[found.column]
            reason = named_reason(repr(time), time)
        elif found is not None:
            unread.append(names[found.column])
        if found is not None:
            unread += [names[c] for c in found.left_out]
    special = [column.name(c, "time" if c is time else "experiment")
               for c in (time, experiment) if c is not None]
    # a column of text is no state unless named one (a status flag, an operator's name)
    words = [n for n in names if index[n] in text and n not in special + unread]
    states = (chosen if chosen is not None else
              [n for n in names if n not in inputs and n not in special + unread + words])
    if not states and words:
        verb = "holds" if len(words) == 1 else "hold"
        example = str(cells[bad[index[words[0]]], index[words[0]]])
        raise ParameterError(f"{path.name} has no column of numbers left for the states: "
                             f"{', '.join(map(repr, words))} {verb} text (e.g. {example!r}); "
                             f"give states=[...] naming the state columns")
    if time is not None and special[0] in states + inputs:
        raise ParameterError(f"{special[0]!r} of {path.name} is the time column and a signal; "
                             f"a time column is never a signal (time=None if it is one)")
    clock = stamps.get(index[special[0]]) if time is not None else None
    labelled = index[special[-1]] if experiment else None
    # only the columns read must be numbers (ISO stamps of the time, text experiment labels)
    read = [index[n] for n in states + inputs]
    read += [index[special[0]]] if time is not None and clock is None else []
    read += [labelled] if labelled is not None and labelled not in text else []
    for c in read:
        if c in bad:
            raise cell_error(str(cells[bad[c], c]), names[c], f"{path.name} line "
                             f"{lines[bad[c]]}", time=time is not None and names[c] == time)
    left = [c for c in bad if names[c] not in states + inputs + special
            and names[c] not in unread]
    if left:
        notes.append(text_columns_note([repr(names[c]) for c in left],
                                       [str(cells[bad[c], c]) for c in left]))
    labels = (cells[:, labelled] if labelled in text else values[:, labelled]
              if labelled is not None else np.zeros(len(values)))
    starts = np.flatnonzero(np.concatenate([[True], labels[1:] != labels[:-1]]))
    pieces = np.split(values, starts[1:])
    if time is not None:
        dt, pieces = _period(path, special[0], units[index[special[0]]], pieces,
                             index[special[0]], np.split(lines, starts[1:]), dt, tolerance,
                             reason, notes, missing, clock)
    elif dt is None:
        index = (f" ({unread[0]!r}, a row index, was left out; time={unread[0]!r} reads it as "
                 f"the time)" if unread else "")
        raise ParameterError(f"{path.name}: give dt=... (seconds) or time='<column>' to read "
                             f"it from a time column{index}")
    if notes:
        warnings.warn(f"{path.name}: {'; '.join(notes)}", TimeColumnWarning, stacklevel=4)
    X = [p[:, [index[s] for s in states]].T for p in pieces]
    U = [p[:-1, [index[s] for s in inputs]].T for p in pieces]
    return dict(X=X, U=U, dt=dt, state_names=states, input_names=inputs,
                state_units=[units[index[s]] for s in states],
                input_units=[units[index[s]] for s in inputs],
                operating_point=operating_point, missing=missing, source=path.name)


class _Names:
    """The columns of a CSV file by bare name (``"valve"``) or header cell (``"valve [%]"``)."""

    def __init__(self, source: str, names: list[str], units: list[str]) -> None:
        self.source, self.names = source, names
        self.cells = [f"{n} [{u}]" if u else n for n, u in zip(names, units, strict=True)]

    def name(self, spec: str, option: str) -> str:
        if spec in self.names:
            return spec
        for c, cell in enumerate(self.cells):
            if isinstance(spec, str) and split_unit(spec) == split_unit(cell):
                return self.names[c]
        raise ParameterError(f"{option}: {self.source} has no column {spec!r}; its columns are "
                             f"{self.cells}")

    def select(self, specs: Any, option: str) -> list[str]:
        specs = [specs] if isinstance(specs, str) else list(specs)
        return [self.name(spec, option) for spec in specs]


def _read_csv(path: Path, notes: list[str]
              ) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """Header names, units, the stripped cells (rows, columns) and each row's line in the
    file, by the rules of :mod:`dmdidc.table_text`; what they decided goes to ``notes``."""
    table = read_table_text(path, source=path.name)
    notes.extend(table.notes)
    return list(table.names), list(table.units), table.cells, table.lines


def parse_row(cells: list[str], names: list[str], where: str, *,
              time: str | None = None, columns: Sequence[int] | None = None) -> np.ndarray:
    """The values of one CSV row's ``cells`` (a missing cell, :data:`MISSING_CELLS`, is NaN);
    ``where`` names the file and line in messages, ``time`` the time column (whose refusal
    says it may hold ISO 8601 stamps); ``columns``: only these are read (the others NaN:
    only the columns read must be numbers)."""
    if len(cells) != len(names):
        trailing = (" (it ends in a trailing separator: an empty last value)"
                    if ends_in_trailing_separator(cells, len(names)) else "")
        raise DimensionError(f"{where} has {len(cells)} cells; the header has {len(names)}"
                             f"{trailing}")
    values = np.full(len(names), np.nan)
    for c in range(len(names)) if columns is None else columns:
        cell = cells[c].strip()
        try:
            values[c] = np.nan if is_missing(cell) else float(cell)
        except ValueError:
            raise cell_error(cell, names[c], where, time=names[c] == time) from None
    return values


def cell_error(cell: str, name: str, where: str, *, time: bool = False) -> ParameterError:
    """The refusal of a ``cell`` of column ``name`` that is no number (``where``: the file
    and line; ``time``: the time column, which may also hold ISO 8601 stamps)."""
    why = (" has a decimal comma: write '.' decimals (export the CSV with '.' as decimal "
           "separator)" if is_decimal_comma(cell) else
           " is not a number (use '.' as decimal mark; leave the cell empty for a missing "
           "sample)")
    if time:
        why += "; a time column holds numbers or ISO 8601 stamps (2026-11-28T00:47:19)"
    return ParameterError(f"{where}, column {name!r}: {cell!r}{why}")


def _period(path: Path, name: str, unit: str, pieces: list[np.ndarray], column: int,
            lines: list, dt: float | None, tolerance: float, reason: str, notes: list[str],
            missing: str, clock: IsoStamps | None = None) -> tuple[float, list[np.ndarray]]:
    """The sampling period of the time column ``name`` (column ``column`` of each of the
    ``pieces``; :mod:`dmdidc.time_column`) and the pieces: gaps of whole periods are lost
    rows, refused with ``missing="error"`` and otherwise rows of NaN for the policy to drop or
    fill; jitter is noted.  ``clock``: the column's ISO 8601 stamps, already seconds."""
    where = f"{name!r} of {path.name}"
    if clock is not None:
        reason += clock.hint
        if clock.note:
            notes.append(f"{where}: {clock.note}")
    seconds = 1.0 if clock is not None else time_unit(unit, where, reason=reason, name=name,
                                                      note=notes.append)
    stamps = [p[:, column] * seconds for p in pieces]
    rows = [list(r) for r in lines]
    grid = time_grid(stamps, where=where, tolerance=tolerance, lines=rows, reason=reason)
    if missing == "error":
        refuse_gaps(grid, stamps, where=where, lines=rows, reason=reason)
    elif note := skipped_note(grid, where, rows, split=missing == "drop"):
        notes.append(note + (clock.hint if clock is not None else ""))
        pieces = [with_skipped_rows(t, p, periods, longest=len(p) if missing == "drop" else None)
                  [1] for t, p, periods in zip(stamps, pieces, grid.periods, strict=True)]
    if grid.jittery:
        notes.append(grid.jitter_note)
    if dt is None:
        return grid.period, pieces
    if not grid.agrees(dt):
        raise ParameterError(f"dt={dt} disagrees with the time column's period "
                             f"{grid.period:g} s ({where})")
    return float(dt), pieces


def _read_npz(path: Path, *, dt: float | None, missing: str) -> dict[str, Any]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot read data from {str(path)!r}: {exc}") from exc
    if "metadata" not in arrays:
        raise ParameterError(f"{path.name} has no 'metadata' entry; it was not written by "
                             f"IdData.save (arrays X, U only: IdData(X, U, dt=...))")
    meta = json.loads(str(arrays.pop("metadata")))
    count = sum(1 for k in arrays if k.startswith("X_"))
    X = [arrays[f"X_{i}"] for i in range(count)]
    U = [arrays[f"U_{i}"] for i in range(count)]
    if dt is not None and dt != meta["dt"]:
        raise ParameterError(f"dt={dt} disagrees with the file's {meta['dt']}")
    return dict(X=X if count > 1 else X[0], U=U if count > 1 else U[0], dt=meta["dt"],
                state_names=meta["state_names"], input_names=meta["input_names"],
                state_units=meta["state_units"], input_units=meta["input_units"],
                operating_point=meta["operating_point"], missing=missing,
                source=meta.get("source") or path.name)
