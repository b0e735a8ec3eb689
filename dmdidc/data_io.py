"""Files of :class:`~dmdidc.IdData`, without pandas: CSV with a header, or NPZ with metadata.

**CSV.** One row per sample, one column per signal, a header line naming the columns, each name
optionally followed by its unit in brackets (``T_out [K]``).  Separator ``,``, ``;`` or a tab;
``.`` as decimal mark (a decimal comma is refused: write ``.`` decimals); an empty cell or one
of :data:`MISSING_CELLS` (``nan``, ``NA``, ``#N/A``, ``-``, ...) is a missing sample (see
:mod:`dmdidc.missing`).  What spreadsheets add is read as they mean it: a UTF-8 byte-order mark
before the header, header cells in quotes, and a last column without a name whose every cell is
empty (each line ends in the separator), which is no signal and is left out with a note.  Row
``k`` holds ``x_k`` and ``u_k``; the inputs of the last row of an experiment are not used (the
state after the last input), and may be empty.  Select columns by name or whole header cell
(``"valve"`` or ``"valve [%]"``): ``inputs`` (required), ``states`` (default: every other
column), ``time`` (a column of sample times, from which ``dt`` is read; default: a column named
like a time, by the rules of :mod:`dmdidc.time_column`, shared with the command line: its unit,
a ``T [degC]`` that is a temperature, jitter within ``time_tolerance``), ``experiment`` (a
column whose value changes where a new experiment starts).

**NPZ.**  Arrays ``X_0, U_0, X_1, ...`` and a ``metadata`` JSON string (names, units, dt,
operating point, source); read with ``allow_pickle=False``, so a data file never runs code.
"""

from __future__ import annotations

import csv
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from dmdidc.time_column import (
    TIME_TOLERANCE,
    TimeColumnWarning,
    check_tolerance,
    find_time_column,
    named_reason,
    refuse_gaps,
    skipped_note,
    time_grid,
    time_unit,
    with_skipped_rows,
)

__all__ = ["read_fields", "write_data", "split_unit", "MISSING_CELLS", "is_missing",
           "is_decimal_comma", "empty_columns_note"]

_HEADER = re.compile(r"^\s*(.*?)\s*(?:\[(.*)\])?\s*$")
#: Cells (any case) that are a missing sample, as loggers and spreadsheets write them; shared by
#: every reader of a data file.
MISSING_CELLS = frozenset({"", "nan", "na", "n/a", "#n/a", "null", "-"})
_BOM = "\ufeff"                       # the UTF-8 byte-order mark Excel writes ("CSV UTF-8")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d*,\d+(?:[eE][+-]?\d+)?$")


def is_missing(cell: str) -> bool:
    """Whether a CSV cell is a missing sample (:data:`MISSING_CELLS`).

    Examples
    --------
    >>> [is_missing(c) for c in ("", " NaN", "#N/A", "-", "-1", "0")]
    [True, True, True, True, False, False]
    """
    return cell.strip().lower() in MISSING_CELLS


def is_decimal_comma(cell: str) -> bool:
    """Whether a CSV cell is a number written with a decimal comma (``-0,25``, ``1,5e-3``).

    Examples
    --------
    >>> [is_decimal_comma(c) for c in ("-0,25", "1,5e-3", "0.25", "1,2,3")]
    [True, True, False, False]
    """
    return bool(_DECIMAL_COMMA.match(cell.strip()))


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
        CSV: the state columns (default: all columns but the others named here).
    time : str or None, default "auto"
        CSV: the column of sample times (then ``dt`` is read from it, in the unit of its
        header, :mod:`dmdidc.time_column`); ``"auto"``: a column named ``time``,
        ``timestamp`` or ``t`` if there is one (``t``, which may be a temperature, with a
        :class:`TimeColumnWarning` saying what was decided; so are jittery stamps); a
        column named in ``inputs`` or ``states`` is a signal, never the time; a first column
        without a name that grows by one step (a row index, as pandas' ``to_csv`` writes) is
        left out, with the warning; ``None``: no time column (every column is a signal).
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
    names, units, values, lines = _read_csv(path, notes)
    column = _Names(path.name, names, units)
    reason = ""
    inputs = column.select(inputs, "inputs")
    chosen = column.select(states, "states") if states is not None else None
    unread: list[str] = []                # a row index, left out
    if time == "auto":
        # a column named time or timestamp is the time without a word: a warning on every
        # read (our own saved files included) would be noise; 't' and refusals are said.
        # A column named as a signal is one, whatever it looks like.
        found = find_time_column(names, units, values, notes=notes,
                                 label=lambda c: repr(names[c]), announce=False,
                                 signals={names.index(n) for n in inputs + (chosen or [])},
                                 complete=chosen is not None)
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
    states = (chosen if chosen is not None else
              [n for n in names if n not in inputs and n not in special + unread])
    if time is not None and special[0] in states + inputs:
        raise ParameterError(f"{special[0]!r} of {path.name} is the time column and a signal; "
                             f"a time column is never a signal (time=None if it is one)")
    index = {n: i for i, n in enumerate(names)}
    labels = values[:, index[special[-1]]] if experiment else np.zeros(len(values))
    starts = np.flatnonzero(np.concatenate([[True], labels[1:] != labels[:-1]]))
    pieces = np.split(values, starts[1:])
    if time is not None:
        dt, pieces = _period(path, special[0], units[index[special[0]]], pieces,
                             index[special[0]], np.split(lines, starts[1:]), dt, tolerance,
                             reason, notes, missing)
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
    """Header names, units, the values (rows, columns; missing cells NaN) and each row's line
    in the file; a column without a name whose every cell is empty is left out, noted in
    ``notes``."""
    # the BOM a spreadsheet writes, on every platform (the default encoding of Windows is
    # cp1252, which read it as the header's first characters, and a degree sign as two)
    text = path.read_text(encoding="utf-8-sig")
    # blank lines are skipped, but messages name the file's own line numbers
    numbered = [(k, line) for k, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(numbered) < 2:
        raise ParameterError(f"{path.name} needs a header line and at least one row")
    names, units, delimiter = parse_header(numbered[0][1], path.name)
    lines = np.array([k for k, _ in numbered[1:]])
    rows = csv.reader([line for _, line in numbered[1:]], delimiter=delimiter)
    values = np.array([parse_row(row, names, f"{path.name} line {k}")
                       for k, row in zip(lines, rows, strict=True)])
    empty = [c for c, name in enumerate(names)
             if not name and np.isnan(values[:, c]).all()]
    if empty:
        notes.append(empty_columns_note(empty, len(names), repr(delimiter)))
        kept = [c for c in range(len(names)) if c not in empty]
        names, units, values = [names[c] for c in kept], [units[c] for c in kept], values[:, kept]
    return names, units, values, lines


def empty_columns_note(columns: list[int], width: int, delimiter: str) -> str:
    """The note of columns without a name whose every cell is empty, left out (0-based
    ``columns`` of ``width``): a spreadsheet ends every line in the separator."""
    if columns == [width - 1]:
        which, why = "the last column", f"each line ends in {delimiter}, as spreadsheets write"
    else:
        which, why = f"columns {', '.join(str(c + 1) for c in columns)}", "as spreadsheets write"
    return f"{which} has no name and every cell empty ({why}): no signal, left out"


def split_unit(cell: str) -> tuple[str, str]:
    """A header cell's name and unit (``"T_out [K]"`` -> ``("T_out", "K")``; no unit: ``""``).

    Examples
    --------
    >>> split_unit(" time [ms] "), split_unit("heater")
    (('time', 'ms'), ('heater', ''))
    """
    name, unit = _HEADER.match(cell).groups()
    return name, unit or ""


def parse_header(line: str, source: str) -> tuple[list[str], list[str], str]:
    """Names, units and delimiter of a CSV header line (module notes); ``source`` names the
    file in messages.  Shared with :func:`dmdidc.follow.follow_csv`."""
    line = line.lstrip(_BOM)
    delimiter = next((d for d in (",", ";", "\t") if d in line), ",")
    parsed = [split_unit(cell) for cell in next(csv.reader([line], delimiter=delimiter))]
    names, units = [n for n, _ in parsed], [u for _, u in parsed]
    if len(set(names)) != len(names):
        raise ParameterError(f"{source} has repeated column names {names}")
    return names, units, delimiter


def parse_row(cells: list[str], names: list[str], where: str) -> np.ndarray:
    """The values of one CSV row's ``cells`` (a missing cell, :data:`MISSING_CELLS`, is NaN);
    ``where`` names the file and line in messages."""
    if len(cells) != len(names):
        raise DimensionError(f"{where} has {len(cells)} cells; the header has {len(names)}")
    values = np.empty(len(names))
    for c, cell in enumerate(cells):
        cell = cell.strip()
        try:
            values[c] = np.nan if is_missing(cell) else float(cell)
        except ValueError:
            comma = (" has a decimal comma: write '.' decimals (export the CSV with '.' as "
                     "decimal separator)" if is_decimal_comma(cell) else
                     " is not a number (use '.' as decimal mark; leave the cell empty for a "
                     "missing sample)")
            raise ParameterError(f"{where}, column {names[c]!r}: {cell!r}{comma}") from None
    return values


def _period(path: Path, name: str, unit: str, pieces: list[np.ndarray], column: int,
            lines: list, dt: float | None, tolerance: float, reason: str, notes: list[str],
            missing: str) -> tuple[float, list[np.ndarray]]:
    """The sampling period of the time column ``name`` (column ``column`` of each of the
    ``pieces``; :mod:`dmdidc.time_column`) and the pieces: gaps of whole periods are lost
    rows, refused with ``missing="error"`` and otherwise rows of NaN for the policy to drop or
    fill; jitter is noted."""
    where = f"{name!r} of {path.name}"
    seconds = time_unit(unit, where, reason=reason, name=name, note=notes.append)
    stamps = [p[:, column] * seconds for p in pieces]
    rows = [list(r) for r in lines]
    grid = time_grid(stamps, where=where, tolerance=tolerance, lines=rows, reason=reason)
    if missing == "error":
        refuse_gaps(grid, stamps, where=where, lines=rows, reason=reason)
    elif note := skipped_note(grid, where, rows):
        notes.append(note)
        pieces = [with_skipped_rows(t, p, periods)[1]
                  for t, p, periods in zip(stamps, pieces, grid.periods, strict=True)]
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
