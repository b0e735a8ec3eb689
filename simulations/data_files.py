"""Read identification data (states ``X``, inputs ``U``) from the files users actually have.

Two formats, both checked here so that a mistake is reported in terms of the user's files:

* ``.npz`` (``numpy.savez(path, X=X, U=U)``): arrays ``X`` (n, K+1) and ``U`` (m, K), time along
  the columns as everywhere in the toolbox; a 1-D array is one channel; any other array is
  refused (it would be ignored silently).  Without ``U`` the record has no inputs (m = 0: an
  autonomous or free-response record, plain DMD).  Read with ``allow_pickle=False``: a data file can
  never run code.
* CSV, one file for the states and one for the inputs: one row per sample (K+1 rows of n values,
  K rows of m values), an optional header line.  Its text is read by the rules of
  :mod:`dmdidc.table_text` (separator, decimal mark, comment lines, encoding, what spreadsheets
  add; the same rules as :func:`dmdidc.read_data`), and what they decided is noted
  (:attr:`CsvTable.notes`).  :func:`read_csv_table` with ``text=True`` keeps the cells that are
  no number (the caller reads only some columns; ISO time stamps) instead of refusing them.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from dmdidc.data_io import parse_columns
from dmdidc.table_text import is_decimal_comma, is_missing, read_table_text

__all__ = ["load_identification_data", "read_npz_data", "read_samples_csv", "read_csv_table",
           "CsvTable"]

def load_identification_data(data: str | Path | None = None, *, states: str | Path | None = None,
                             inputs: str | Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Load ``X`` (n, K+1) and ``U`` (m, K) from one ``.npz`` file or two CSV files.

    The strict form of :func:`read_identification_data`: no time column, no missing value.

    Parameters
    ----------
    data : str or Path, optional
        ``.npz`` archive holding ``X`` and ``U``.
    states, inputs : str or Path, optional
        CSV files, one row per sample: ``states`` with K+1 rows of n values, ``inputs`` with K
        rows of m values.  Give both, and only without ``data``.

    Returns
    -------
    X : ndarray, shape (n, K + 1)
    U : ndarray, shape (m, K)

    Raises
    ------
    ParameterError
        For no source, both sources, only one CSV, or a file that is not in the expected format
        (the message says which formats are accepted).
    DimensionError
        For sample counts that do not match (with a hint when the data look transposed).
    NonFiniteError
        For NaN or infinite values (the message gives the file and row).
    OSError
        For a file that cannot be opened.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = Path(tempfile.mkdtemp()) / "data.npz"
    >>> np.savez(path, X=np.zeros((2, 11)), U=np.ones((1, 10)))
    >>> [a.shape for a in load_identification_data(path)]
    [(2, 11), (1, 10)]
    """
    if data is not None and (states is not None or inputs is not None):
        raise ParameterError(f"give either a data file ({str(data)!r}) or --states and --inputs "
                             f"CSV files, not both")
    if data is not None:
        return read_npz_data(data)
    _check_pair(states, inputs)
    X, U = read_samples_csv(states).T, read_samples_csv(inputs).T
    _check_samples(X, U, f"{str(states)!r} has", f"{str(inputs)!r} has", csv=True)
    return X, U


def _check_pair(states: str | Path | None, inputs: str | Path | None) -> None:
    if states is None or inputs is None:
        raise ParameterError("give an .npz data file, or both --states and --inputs CSV files "
                             "(--inputs none: a record without inputs) (got "
                             f"{'--states' if states else '--inputs' if inputs else 'none'})")


def read_npz_data(path: str | Path, *, allow_missing: bool = False, outputs: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Arrays ``X`` (n, K+1) and ``U`` (m, K) of an ``.npz`` archive (see the module notes);
    with ``allow_missing`` a NaN is a missing sample (an infinite value is always refused).
    Without ``U``, ``U`` has no rows (m = 0).  ``outputs``: ``X`` holds measured outputs,
    which may also have as many samples as ``U`` (:meth:`dmdidc.OutputDMDidc.fit` takes both)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such data file: {str(path)!r}")
    if not zipfile.is_zipfile(path):
        kind = " (it is a text file, e.g. CSV)" if _looks_like_text(path) else ""
        raise ParameterError(f"{str(path)!r} is not an .npz archive{kind}: a data file must be "
                             f"an .npz archive written by numpy.savez(path, X=X, U=U) with X "
                             f"(n, K+1) and U (m, K); CSV data goes in --states x.csv --inputs "
                             f"u.csv (one row per sample)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        raise ParameterError(f"cannot read {str(path)!r} as an .npz archive of numeric arrays "
                             f"X and U: {exc}") from exc
    if outputs and "Y" in arrays and "X" not in arrays:
        arrays["X"] = arrays.pop("Y")               # the outputs' usual name (y = C x)
    if "X" not in arrays:
        also = (" (for --outputs: or Y, the outputs)" if outputs
                else " (Y holds measured outputs? give --outputs all)" if "Y" in arrays else "")
        raise ParameterError(f"{str(path)!r} lacks the array X{also} (it holds "
                             f"{sorted(arrays)}); it must hold X (n, K+1) and, for a plant "
                             f"with inputs, U (m, K)")
    extra = sorted(set(arrays) - {"X", "U"})
    if extra:
        raise ParameterError(f"{str(path)!r} holds array(s) {extra} besides X and U; an "
                             f"identification data file holds exactly X (n, K+1) and U (m, K) "
                             f"(save the others in another file: they would be ignored)")
    X = _as_channels(path, "X", arrays["X"], allow_missing)
    if "U" in arrays:
        U = _as_channels(path, "U", arrays["U"], allow_missing)
    else:                   # no inputs: an autonomous record (plain DMD), as U of zero rows
        U = np.zeros((0, max(X.shape[1] - 1, 0)))
    _check_samples(X, U, "X has", "U has", csv=False, outputs=outputs)
    return X, U


def read_samples_csv(path: str | Path) -> np.ndarray:
    """A CSV file of samples as an array (rows, columns) = (samples, channels).

    The text is read by the rules of :mod:`dmdidc.table_text` (an optional header line: a first
    line without numbers).  The result is at least 2-D: a single column
    gives shape (rows, 1).  Every value must be present and finite (see
    :func:`read_csv_table` for a table with names and missing values).
    """
    return read_csv_table(path).values


@dataclass(frozen=True)
class CsvTable:
    """A CSV file of samples: its column names (from the header line, if any), its values
    (rows = samples, NaN where a value is missing), the file line of each row and what the reader
    decided (an empty column left out).  Read with ``text=True``, ``cells`` holds the stripped
    cells (rows, columns; None when every cell is a number or missing), ``bad`` the first row of
    each column with a cell that is no number (NaN in ``values``) and ``text`` the columns among
    them without a single number (:func:`dmdidc.data_io.parse_columns`); the caller refuses the bad
    cells of the columns it reads (:meth:`refuse`)."""

    path: Path
    names: tuple[str, ...] | None
    values: np.ndarray
    lines: np.ndarray
    notes: tuple[str, ...] = ()
    cells: np.ndarray | None = None
    bad: dict[int, int] = field(default_factory=dict)
    text: frozenset[int] = frozenset()
    delimiter: str | None = None

    def refuse(self, column: int, *, time: bool = False) -> ParameterError:
        """The refusal of the first cell of ``column`` that is no number (in ``bad``);
        ``time``: the time column, which may also hold ISO 8601 stamps."""
        row = self.bad[column]
        try:
            _number(self.path, int(self.lines[row]), str(self.cells[row, column]),
                    self.delimiter, True, self.names, column)
        except ParameterError as exc:
            tail = ("; a time column holds numbers or ISO 8601 stamps (2026-11-28T00:47:19)"
                    if time else "")
            return ParameterError(f"{exc}{tail}")
        raise AssertionError("a bad cell that reads as a number")  # pragma: no cover

    def label(self, column: int) -> str:
        """The column's header name, or ``column <number>`` (1-based)."""
        return _column_label(self.names, column)


def _column_label(names: tuple[str, ...] | None, column: int) -> str:
    return repr(names[column]) if names and column < len(names) else f"column {column + 1}"


def read_csv_table(path: str | Path, *, allow_missing: bool = False,
                   text: bool = False) -> CsvTable:
    """A CSV file of samples with its header names and the line number of each row.

    Parameters
    ----------
    path : str or Path
        The file (format as in :func:`read_samples_csv`).
    allow_missing : bool
        Read an empty value or one of :data:`dmdidc.data_io.MISSING_CELLS` (``nan``, ``NA``,
        ``n/a``, ``#N/A``, ``null``, ``-``) as missing (NaN) instead of refusing it.
    text : bool
        Keep a cell that is no number (NaN in the values, described in :class:`CsvTable`)
        instead of refusing it: only the columns the caller reads must be numbers.

    Returns
    -------
    CsvTable

    Raises
    ------
    ParameterError
        For text that is not a number (booleans included: write 0/1), an empty value (unless
        ``allow_missing``), a trailing delimiter or a decimal comma, with the file and line.
    DimensionError
        For rows of different widths.
    NonFiniteError
        For an infinite value, or a NaN unless ``allow_missing``.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "x.csv"
    >>> _ = path.write_text("t,x1\\n0,1.5\\n2,\\n4,2.5\\n")
    >>> table = read_csv_table(path, allow_missing=True)
    >>> table.names, table.values[:, 1].tolist(), table.lines.tolist()
    (('t', 'x1'), [1.5, nan, 2.5], [2, 3, 4])
    """
    path = Path(path)
    table = read_table_text(path, header=None)
    notes = tuple(f"{str(path)!r}: {note}" for note in table.notes)
    cells, lines = table.cells, table.lines
    if not allow_missing:
        empty = np.flatnonzero((cells == "").any(axis=1))
        if empty.size:
            row = int(empty[0])
            raise ParameterError(f"{str(path)!r} line {lines[row]} holds an empty value: "
                                 f"{list(cells[row])}; a missing sample needs --missing drop "
                                 f"or interpolate")
    bad_cells, words = {}, set()
    if text:
        array, bad_cells, words = parse_columns(cells)
    else:
        array = np.array([[_number(path, int(lines[r]), str(cell), table.delimiter,
                                   allow_missing, table.header, c)
                           for c, cell in enumerate(row)] for r, row in enumerate(cells)],
                         dtype=float).reshape(cells.shape)
    bad = np.isinf(array) if allow_missing else ~np.isfinite(array)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise NonFiniteError(f"{str(path)!r} line {lines[row]} holds a NaN or infinite value; "
                             f"every sample must be finite (a missing one needs --missing drop "
                             f"or interpolate)")
    # the cells only where a column holds one that is no number (the readers read no others;
    # every number's text, 500 001 rows of 6 cells, held 48 MB through the fit)
    return CsvTable(path, table.header, array, lines, notes, cells if bad_cells else None,
                    bad_cells, frozenset(words), table.delimiter)


_BOOLEANS = frozenset({"true", "false"})


def _number(path: Path, line: int, field: str, delimiter: str | None,
            allow_missing: bool, names: tuple[str, ...] | None, column: int) -> float:
    if allow_missing and is_missing(field):
        return math.nan
    try:
        return float(field)
    except ValueError:
        pass
    if is_missing(field):
        raise ParameterError(f"{str(path)!r} line {line}, {_column_label(names, column)}: "
                             f"{field!r} is a missing value; a missing sample needs --missing "
                             f"drop or interpolate")
    if is_decimal_comma(field):           # read_data's words (dmdidc.data_io.cell_error)
        raise ParameterError(f"{str(path)!r} line {line}, {_column_label(names, column)}: "
                             f"{field!r} has a decimal comma: write '.' decimals (export the "
                             f"CSV with '.' as decimal separator)")
    if field.lower() in _BOOLEANS:
        raise ParameterError(f"{str(path)!r} line {line}: {field!r} is a boolean; write on/off "
                             f"signals as numbers (1/0) so that their scale is explicit")
    raise ParameterError(f"{str(path)!r} line {line}, {_column_label(names, column)}: "
                         f"{field!r} is not a number "
                         f"(expected one row per sample, numbers separated by "
                         f"{delimiter or 'spaces'!r}, '.' as decimal mark; a column of text "
                         f"is read only as the time, of ISO 8601 stamps, in a table whose "
                         f"columns are chosen by name)")


def _looks_like_text(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4096)
    return bool(head) and b"\0" not in head


def _as_channels(path: Path, name: str, array: np.ndarray, allow_missing: bool) -> np.ndarray:
    if array.dtype.kind == "b":
        raise ParameterError(f"{str(path)!r}: {name} is boolean; save on/off signals as numbers "
                             f"({name}.astype(float)) so that their scale is explicit")
    if array.dtype.kind not in "iuf":
        raise ParameterError(f"{str(path)!r}: {name} has dtype {array.dtype}; expected real "
                             f"numbers")
    array = np.asarray(array, dtype=float)
    if array.ndim == 1:
        array = array[None, :]                              # one channel over time
    if array.ndim != 2:
        raise DimensionError(f"{str(path)!r}: {name} has shape {array.shape}; expected a 2-D "
                             f"array (channels, samples)")
    bad = np.isinf(array) if allow_missing else ~np.isfinite(array)
    if bad.any():
        raise NonFiniteError(f"{str(path)!r}: {name} holds {int(bad.sum())} NaN or infinite "
                             f"values; every sample must be finite (a missing one, NaN, needs "
                             f"--missing drop or interpolate)")
    return array


def _check_samples(X: np.ndarray, U: np.ndarray, x_name: str, u_name: str, *, csv: bool,
                   outputs: bool = False) -> None:
    """``X`` (n, K+1) against ``U`` (m, K), explained in the user's terms (rows of CSV files,
    columns of npz arrays); measured outputs (``outputs``) may also be ``(l, K)``."""
    samples, channels = ("rows", "columns") if csv else ("columns", "rows")
    (n, x_samples), (m, u_samples) = X.shape, U.shape
    if n == 0:             # inputs without states: nothing to identify (m = 0 is plain DMD)
        raise DimensionError(f"{x_name} no state channel ({channels} are channels): a fit "
                             f"identifies how the states evolve (and how the inputs act on "
                             f"them); it needs at least one state")
    if u_samples == 0 and x_samples <= 1:
        raise DimensionError(f"{x_name} {x_samples} {samples[:-1]} and {u_name} none: a record "
                             f"needs at least two samples of the states (x_0, x_1) and the "
                             f"input between them")
    # more "channels" than samples and channel counts off by one: samples and channels swapped
    transposed = (n == m + 1 or outputs) and (n > x_samples or (outputs and m > u_samples))
    if x_samples == u_samples + 1 and not transposed:
        return
    if outputs and x_samples == u_samples and not (n > x_samples or m > u_samples):
        return                  # y_k with u_k: the outputs' own convention
    found = (f"{x_name} {x_samples} {samples} of {n} values and {u_name} {u_samples} {samples} "
             f"of {m}")
    if transposed:
        layout = ("one row per sample, one column per state or input" if csv else
                  "time along the columns: X (n, K+1), U (m, K)")
        fix = "write the transposed tables" if csv else "save X.T and U.T"
        raise DimensionError(f"the data look transposed: {found}; expected {layout} ({fix})")
    if x_samples == u_samples:
        raise DimensionError(f"{found}: the states need one sample more than the inputs (x_0 .. "
                             f"x_K for u_0 .. u_(K-1)); drop the last input sample or add the "
                             f"state after it")
    if outputs:
        raise DimensionError(f"{found}: the measured outputs need as many samples as the inputs "
                             f"(y_k with u_k) or one more (the states' convention); "
                             f"{channels} are channels")
    swapped = (" (the inputs have one more: are the states and the inputs swapped?)"
               if u_samples == x_samples + 1 else "")
    raise DimensionError(f"{found}: the states need exactly one sample more than the inputs "
                         f"(K+1 {samples} of states for K of inputs; {channels} are "
                         f"channels){swapped}")
