"""The text of a data table: one set of rules for every reader of a data file.

:func:`dmdidc.read_data` (:mod:`dmdidc.data_io`), the command line's readers
(:mod:`simulations.data_files`) and the follower (:mod:`dmdidc.follow`, line by line) read a
table's text by these rules, so a file reads to the same cells whichever reads it:

* **Encoding.**  UTF-8, with or without the byte-order mark Excel writes ("CSV UTF-8");
  a file that is not UTF-8 is read as Windows-1252 (what Excel and Windows loggers write:
  ``T [°C]``), with a note: byte by byte, so that a UTF-8 header with a comment appended in
  Windows-1252 reads as written, whole or line by line.
* **Lines.**  Blank lines and ``#`` comment lines (a logger's preamble, a note between rows)
  are skipped; messages name the file's own line numbers.  A row that starts with ``#N/A``
  (Excel's missing value) is no comment.
* **Header.**  The first line, naming the columns (``T_out [K]``: a name and its unit in
  brackets; cells may be quoted); a ``#`` comment right before a first row of numbers that
  names as many columns is the header ``numpy.savetxt`` writes (``# time,x1,u1``), noted.
  Where a header is optional (the command line's tables, whose columns may be chosen by
  number) the first line is one unless one of its cells is a number or all are missing-value
  marks.  Repeated names are refused.
* **Separator.**  Decided once, from the first line: ``;`` if it holds one (outside quotes),
  else ``,``, else a tab, else runs of spaces.  A header that holds two of them (``T1, inside``
  in a table separated by tabs, ``T; outside`` in one separated by ``,``) is split by the
  first that gives it as many cells as the first row.  With ``;`` or tabs a first row written with
  decimal commas (``20,5``) is refused naming the separator; ``.`` is the decimal mark.  In a
  table separated by spaces an ISO 8601 stamp written with a space (``2026-11-28 00:47:19``)
  is one cell.
* **Rows.**  Every row has as many cells as the header (or the first row); a row that ends in
  one more, empty, cell names its trailing separator.  Rows of empty cells only after the
  last row with a value (``,,,``: what a spreadsheet exports below its data) are no samples:
  left out with a note.
* **Empty columns.**  A column without a name whose every cell is missing (each line ends in
  the separator, as spreadsheets write) is no signal: left out with a note.  Without a header
  only a last column of empty cells is (the others are numbered by the user).
* **Cells.**  Stripped; an empty cell or one of :data:`MISSING_CELLS` is a missing sample.
"""

from __future__ import annotations

import codecs
import csv
import gc
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.dtypes import StringDType

from _toolbox.errors import DimensionError, ParameterError

__all__ = ["MISSING_CELLS", "TableText", "commented_header", "commented_header_note",
           "decode_text", "empty_columns_note", "ends_in_trailing_separator", "find_delimiter",
           "is_comment", "is_decimal_comma", "is_missing", "missing_cells", "parse_header",
           "read_table_text", "separators", "split_cells", "split_unit"]

#: Cells (any case) that are a missing sample, as loggers and spreadsheets write them; shared by
#: every reader of a data file.
MISSING_CELLS = frozenset({"", "nan", "na", "n/a", "#n/a", "null", "-"})
_BOM = "\ufeff"                       # the UTF-8 byte-order mark Excel writes ("CSV UTF-8")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d*,\d+(?:[eE][+-]?\d+)?$")
_HEADER = re.compile(r"^\s*(.*?)\s*(?:\[(.*)\])?\s*$")
_QUOTED = re.compile(r'"[^"]*"')
_UTF8_PAIR = re.compile(rb"[\xc2-\xf4][\x80-\xbf]")    # a lead byte and a continuation
# a date, spaces, a time of day: one ISO 8601 stamp written with a space instead of 'T'
_SPACED_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2}) +(?=\d{2}:\d{2})")
_SEPARATORS = {";": "';'", ",": "','", "\t": "tabs", None: "spaces"}


def is_missing(cell: str) -> bool:
    """Whether a cell is a missing sample (:data:`MISSING_CELLS`).

    Examples
    --------
    >>> [is_missing(c) for c in ("", " NaN", "#N/A", "-", "-1", "0")]
    [True, True, True, True, False, False]
    """
    return cell.strip().lower() in MISSING_CELLS


def missing_cells(cells: np.ndarray) -> np.ndarray:
    """Which of the (stripped) ``cells`` are missing samples (:data:`MISSING_CELLS`), as a
    boolean array of their shape."""
    return np.isin(np.strings.lower(cells), list(MISSING_CELLS))


def is_decimal_comma(cell: str) -> bool:
    """Whether a cell is a number written with a decimal comma (``-0,25``, ``1,5e-3``).

    Examples
    --------
    >>> [is_decimal_comma(c) for c in ("-0,25", "1,5e-3", "0.25", "1,2,3")]
    [True, True, False, False]
    """
    return bool(_DECIMAL_COMMA.match(cell.strip()))


def is_comment(line: str) -> bool:
    """Whether a line is a ``#`` comment (``#N/A``, Excel's missing value, starts a row).

    Examples
    --------
    >>> is_comment("# logger v2"), is_comment("#N/A,1.5")
    (True, False)
    """
    text = line.lstrip()
    return text.startswith("#") and text[:4].lower() != "#n/a"


def _windows_1252(error: UnicodeDecodeError) -> tuple[str, int]:
    """The bytes that are not UTF-8, read as Windows-1252 (a codecs error handler)."""
    return error.object[error.start:error.end].decode("cp1252", errors="replace"), error.end


codecs.register_error("dmdidc.windows-1252", _windows_1252)


def decode_text(data: bytes, offset: int = 0) -> tuple[str, str]:
    """The text of a file's ``data`` and a note ("" for UTF-8): UTF-8 without its byte-order
    mark, and a byte that is not UTF-8 read as Windows-1252 (module notes).  ``offset``: where
    ``data`` starts in the file (a follower's new lines), for the note's byte position.

    Byte by byte, so that a file reads to the same text whole or in pieces (the follower's):
    a UTF-8 header and a comment appended in Windows-1252 read as written.

    Examples
    --------
    >>> decode_text("T [°C]".encode("cp1252"))[0]
    'T [°C]'
    >>> decode_text(codecs.BOM_UTF8 + "T [°C]\\n# 23".encode() + b"\\xb0C")[0]
    'T [°C]\\n# 23°C'
    """
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        # the whole file as Windows-1252 read Excel's byte-order mark into the first name
        # ('ï»¿time') and each UTF-8 degree sign as two characters
        where = offset + exc.start + len(data) - len(exc.object)
        data = data.removeprefix(codecs.BOM_UTF8)
        # without a UTF-8 sequence of two bytes or more, byte by byte is Windows-1252 whole
        # (which is 25 times as fast: a degree sign in each of a million rows took 0.8 s)
        text = (data.decode("utf-8", errors="dmdidc.windows-1252") if _UTF8_PAIR.search(data)
                else data.decode("cp1252", errors="replace"))
        return text, (f"not UTF-8 (byte {exc.object[exc.start]:#04x} at {where}): such bytes "
                      f"read as Windows-1252, as Excel and Windows loggers write; save as "
                      f"UTF-8 to say so")


def separators(line: str) -> list[str]:
    """The separators ``;``, ``,`` and tab that ``line`` holds outside quotes, in the order
    they are tried (a separator inside a quoted name is none)."""
    bare = _QUOTED.sub("", line)
    return [d for d in (";", ",", "\t") if d in bare]


def find_delimiter(line: str, row: str | None = None) -> str | None:
    """The separator of a table whose first line is ``line`` (None: runs of spaces); ``row``,
    the first row after a header, decides between two separators of the header (module notes).

    Examples
    --------
    >>> find_delimiter('"T; out",x'), find_delimiter("0;20,5"), find_delimiter("t  x")
    (',', ';', None)
    >>> find_delimiter("time\\tT1, inside\\tu", "0\\t20.5\\t1")
    '\\t'
    """
    found = separators(line)
    if row is not None and len(found) > 1:
        # a name that holds another separator: the one that splits header and row alike
        return next((d for d in found
                     if len(split_cells(line, d)) == len(split_cells(row, d))), found[0])
    return found[0] if found else None


def split_cells(line: str, delimiter: str | None) -> list[str]:
    """The stripped, unquoted cells of a line (``delimiter`` None: runs of spaces, and an ISO
    8601 stamp with a space in it is one cell)."""
    if delimiter is None:
        line = _SPACED_STAMP.sub(r"\1T", line.strip())
        return [cell.strip() for cell in next(csv.reader([line], delimiter=" ",
                                                         skipinitialspace=True))]
    return [cell.strip() for cell in next(csv.reader([line], delimiter=delimiter))]


def split_unit(cell: str) -> tuple[str, str]:
    """A header cell's name and unit (``"T_out [K]"`` -> ``("T_out", "K")``; no unit: ``""``).

    Examples
    --------
    >>> split_unit(" time [ms] "), split_unit("heater")
    (('time', 'ms'), ('heater', ''))
    """
    name, unit = _HEADER.match(cell).groups()
    return name, unit or ""


def parse_header(line: str, source: str, row: str | None = None
                 ) -> tuple[list[str], list[str], str | None]:
    """Names, units and separator of a header line (module notes); ``row``: the first row
    after it, if read (:func:`find_delimiter`); ``source`` names the file in messages.

    Raises
    ------
    ParameterError
        Repeated column names.
    """
    line = line.lstrip(_BOM)
    delimiter = find_delimiter(line, row)
    parsed = [split_unit(cell) for cell in split_cells(line, delimiter)]
    names, units = [n for n, _ in parsed], [u for _, u in parsed]
    repeated = sorted({n for n in names if n and names.count(n) > 1})
    if repeated:
        raise ParameterError(f"{source} has repeated column names {repeated} (its header "
                             f"names {names}); each column needs a name of its own")
    return names, units, delimiter


def empty_columns_note(columns: list[int], width: int, delimiter: str,
                       blank: bool = True) -> str:
    """The note of columns without a name whose every cell is missing, left out (0-based
    ``columns`` of ``width``): a spreadsheet ends every line in the separator; ``blank``:
    every cell is empty (else some hold a missing-value mark, ``nan``)."""
    if not blank:
        which = "the last column" if columns == [width - 1] else (
            f"column{'s' if len(columns) > 1 else ''} {', '.join(str(c + 1) for c in columns)}")
        verb = "have" if len(columns) > 1 else "has"
        return (f"{which} {verb} no name and no value (missing-value marks only): no signal, "
                f"left out")
    if columns == [width - 1]:
        which, why = "the last column", f"each line ends in {delimiter}, as spreadsheets write"
        verb = "has"
    else:
        which = (f"column{'s' if len(columns) > 1 else ''} "
                 f"{', '.join(str(c + 1) for c in columns)}")
        why, verb = "as spreadsheets write", "have" if len(columns) > 1 else "has"
    return f"{which} {verb} no name and every cell empty ({why}): no signal, left out"


@dataclass(frozen=True)
class TableText:
    """The cells of a table file, as :func:`read_table_text` read them.

    Attributes
    ----------
    header : tuple of str, or None
        The header cells as written (``"T_out [K]"``), unquoted; None: the file has no header.
    names, units : tuple of str, or None
        The header cells' names and units (:func:`split_unit`).
    cells : ndarray of str, shape (rows, columns)
        The stripped cells of every row.
    lines : ndarray of int, shape (rows,)
        The file line of each row.
    delimiter : str or None
        The separator (None: runs of spaces).
    notes : tuple of str
        What was decided (a column or rows left out, the encoding), without the file's name.
    """

    header: tuple[str, ...] | None
    cells: np.ndarray
    lines: np.ndarray
    delimiter: str | None
    notes: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...] | None:
        return None if self.header is None else tuple(split_unit(c)[0] for c in self.header)

    @property
    def units(self) -> tuple[str, ...] | None:
        return None if self.header is None else tuple(split_unit(c)[1] for c in self.header)


def read_table_text(path: str | Path, *, header: bool | None = True,
                    source: str | None = None) -> TableText:
    """The cells of the table file ``path`` by the rules of the module notes.

    Parameters
    ----------
    path : str or Path
    header : bool or None, default True
        True: the first line is the header; None: it is one unless a cell of it is a number
        or all are missing-value marks (a table of numbers only).
    source : str, optional
        The file in messages (default: ``repr`` of the path).

    Returns
    -------
    TableText

    Raises
    ------
    ParameterError
        No row, repeated column names, decimal commas with ``;`` or tabs between the values.
    DimensionError
        A row with another number of cells than the header (or the first row).

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "log.csv"
    >>> _ = path.write_text("# logger v2\\ntime [s];T [K];\\n0;300;\\n1;NA;\\n;;\\n")
    >>> table = read_table_text(path)
    >>> table.names, table.units, table.cells.tolist(), table.lines.tolist()
    (('time', 'T'), ('s', 'K'), [['0', '300'], ['1', 'NA']], [3, 4])
    >>> [note[:40] for note in table.notes]
    ['1 row(s) of empty cells after the last v', 'the last column has no name and every ce']
    """
    # a row is a list and a line a tuple: the cyclic collector, run again and again while a
    # million are made, took 40 % of the reading (2.6 s of a million rows -> 1.5 s); the rows
    # hold no reference cycles for it to find
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_table_text(Path(path), header, source)
    finally:
        if enabled:
            gc.enable()


#: Text lines read, split into cells and stored at a time (each piece's Python strings are
#: freed before the next: 500 001 rows of 6 numbers peaked at 561 MB holding them all).
_PIECE_LINES = 8_192
#: Characters of the file's text split into lines at a time (cut after a line feed).
_PIECE_CHARS = 1 << 20


def _text_lines(text: str):
    """``(line number from 1, line)`` of ``text`` as ``str.splitlines`` gives them, split a
    piece at a time (each cut right after a line feed, where every line break ends: the lines
    are the same) so that the lines of a large file are never all held at once."""
    k, start = 0, 0
    while start < len(text):
        cut = text.find("\n", start + _PIECE_CHARS)
        stop = len(text) if cut < 0 else cut + 1
        for line in text[start:stop].splitlines():
            k += 1
            yield k, line
        start = stop


def _rows(text: str, before: list[str]):
    """``(line number, line)`` of the rows of ``text``: neither blank nor a ``#`` comment.
    The lines before the first row (blank or comments) go to ``before``."""
    lines = _text_lines(text)
    for k, line in lines:
        if line.strip() and ("#" not in line or not is_comment(line)):
            yield k, line
            break
        before.append(line)
    for k, line in lines:
        if line.strip() and ("#" not in line or not is_comment(line)):
            yield k, line


def _read_table_text(path: Path, header: bool | None, source: str | None) -> TableText:
    """:func:`read_table_text`, with the collector off.  The rows are split and stored a piece
    of :data:`_PIECE_LINES` at a time (:class:`_Cells`)."""
    source = repr(str(path)) if source is None else source
    text, encoding_note = decode_text(path.read_bytes())
    notes = [encoding_note] if encoding_note else []
    before: list[str] = []
    stream = _rows(text, before)
    numbered = list(itertools.islice(stream, 3))   # the header, or the first rows, decide
    if not numbered:
        raise ParameterError(f"{source} holds no rows (only blank or '#' comment lines); "
                             f"expected a header line and a row per sample")
    delimiter = find_delimiter(numbered[0][1])
    first = split_cells(numbered[0][1], delimiter)
    found = commented_header(before, numbered[0][1])
    if found:
        numbered.insert(0, found)                     # numpy.savetxt's '# x1,x2' header
        notes.append(commented_header_note(found[0]))
        first, header = split_cells(found[1], delimiter), True
    elif header is None:
        header = not _numbers(first)
    names = header_line = None
    if header:
        # refuses repeated names; the first row decides between two separators of the header
        _, _, delimiter = parse_header(numbered[0][1], source,
                                       numbered[1][1] if len(numbered) > 1 else None)
        header_line = numbered[0]
        names, numbered = split_cells(numbered[0][1], delimiter), numbered[1:]
    if not numbered:
        raise ParameterError(f"{source} has a header line and no row; expected a row per "
                             f"sample after it")
    table = _Cells(source, delimiter, names, header_line, numbered[:2], text.count("\n") + 1)
    table.add(numbered)
    while piece := list(itertools.islice(stream, _PIECE_LINES)):
        table.add(piece)
    del text, stream
    lines, cells = table.lines[:table.rows], table.cells[:table.rows]
    width, rows = table.width, table.rows
    # rows of empty cells below the data: what a spreadsheet exports under its last row
    end = rows
    while end > 1 and not any(cells[end - 1]):
        end -= 1
    if end < rows:
        where = (f"line {lines[end]}" if end == rows - 1 else
                 f"lines {lines[end]}-{lines[-1]}")
        notes.append(f"{rows - end} row(s) of empty cells after the last value ({where}, "
                     f"as spreadsheets write): no samples, left out")
        cells, lines = cells[:end], lines[:end]
    empty = ([c for c, name in enumerate(names) if not name and missing_cells(cells[:, c]).all()]
             if names is not None else
             [width - 1] if width > 1 and not any(cells[:, -1]) else [])
    if empty:
        notes.append(empty_columns_note(empty, width, repr(delimiter),
                                        bool((cells[:, empty] == "").all())))
        kept = [c for c in range(width) if c not in empty]
        cells = cells[:, kept]
        names = None if names is None else [names[c] for c in kept]
    return TableText(None if names is None else tuple(names), cells, lines, delimiter,
                     tuple(notes))


class _Cells:
    """The rows of one table split into stripped cells a piece at a time, each row checked
    against the width of the header (or the first row) with the messages of the module."""

    def __init__(self, source: str, delimiter: str | None, names: list[str] | None,
                 header_line: tuple[int, str] | None, first: list[tuple[int, str]],
                 capacity: int) -> None:
        self.source, self.delimiter, self.names = source, delimiter, names
        self.header_line, self.first = header_line, first
        self.first_row = self._split(first[:1])[0]
        self.width = len(names) if names is not None else len(self.first_row)
        # filled in place (a list of pieces joined at the end held the cells twice); the
        # capacity, the line feeds, is exceeded only by other line breaks (an old Mac's '\r')
        self.rows = 0
        self.lines = np.empty(capacity, dtype=int)
        self.cells = np.empty((capacity, self.width), dtype=StringDType())

    def add(self, numbered: list[tuple[int, str]]) -> None:
        """Store the rows ``numbered`` (:meth:`piece`) after the rows stored so far."""
        lines, cells = self.piece(numbered)
        start, stop = self.rows, self.rows + len(lines)
        if stop > len(self.lines):
            grow = max(stop, 2 * len(self.lines)) - len(self.lines)
            self.lines = np.concatenate([self.lines, np.empty(grow, dtype=int)])
            self.cells = np.concatenate([self.cells, np.empty((grow, self.width),
                                                              dtype=StringDType())])
        self.lines[start:stop], self.cells[start:stop] = lines, cells
        self.rows = stop

    def _split(self, numbered: list[tuple[int, str]]) -> list[list[str]]:
        if self.delimiter is None:
            return [split_cells(line, None) for _, line in numbered]
        # one csv reader for the piece (a reader per line took 60 % longer on 300 000 rows)
        return list(csv.reader([line for _, line in numbered], delimiter=self.delimiter))

    def piece(self, numbered: list[tuple[int, str]]) -> tuple[np.ndarray, np.ndarray]:
        """The line numbers and stripped cells (rows, width) of the rows ``numbered``.

        Raises
        ------
        ParameterError, DimensionError
            As :func:`read_table_text`.
        """
        rows = self._split(numbered)
        if numbered[0] == self.first[0]:
            _refuse_decimal_commas(rows[0], numbered[0][1], self.delimiter, self.source)
        width, names, first = self.width, self.names, self.first
        for (k, line), row in zip(numbered, rows, strict=True):
            if len(row) == width:
                continue
            delimiter = self.delimiter
            trailing = (f" (it ends in a trailing {delimiter!r}: an empty last value)"
                        if ends_in_trailing_separator(row, width) else "")
            if names is None and width == len(row) + 1 and not self.first_row[-1].strip():
                # the first row is the odd one: blaming every later row named the wrong line
                raise DimensionError(f"{self.source} line {first[0][0]} ends in a trailing "
                                     f"{delimiter!r} (an empty last value) and line {k} does "
                                     f"not: {first[0][1].strip()[:80]!r}; expected one "
                                     f"value per column, nothing after the last")
            if names is not None and k == first[0][0]:
                header_line = self.header_line
                raise DimensionError(
                    f"{self.source} line {k} has {len(row)} cells; the header (line "
                    f"{header_line[0]}: {header_line[1].strip()[:80]!r}) has {width}"
                    f"{trailing}: {line.strip()[:80]!r}{_first_row_hint(row, delimiter, width)}")
            title = ""
            if (names is None and len(first) > 1 and k == first[1][0] and not trailing
                    and not all(_is_number(c) or is_missing(c) for c in self.first_row)):
                # the first row is the odd one out: a title with a number in it ('run 3')
                title = (f"; is line {first[0][0]} ({first[0][1].strip()[:80]!r}) a "
                         f"title or note? Start it with '#' (a comment) or delete it")
            raise DimensionError(f"{self.source} line {k} has {len(row)} cells; "
                                 f"{'the header' if names is not None else 'the first row'} "
                                 f"has {width}{trailing}: {line.strip()[:80]!r}{title}")
        lines = np.fromiter((k for k, _ in numbered), dtype=int, count=len(numbered))
        cells = np.array(rows, dtype=StringDType()).reshape(len(rows), width)
        del rows
        return lines, np.strings.strip(cells)


def commented_header(before: list[str], row: str) -> tuple[int, str] | None:
    """The header ``numpy.savetxt`` writes (``# time,x1,u1``): the line number (in
    ``before``, from 1) and text without its ``#`` of the comment right before the first
    ``row``, when that row is numbers and the comment names as many columns, none a number.

    Examples
    --------
    >>> commented_header(["# run 3", "# time,x1,u1", ""], "0,0.5,1")
    (2, 'time,x1,u1')
    >>> commented_header(["# time,x1,u1"], "time,x1,u1") is None      # a header of its own
    True
    """
    delimiter = find_delimiter(row)
    width = len(split_cells(row, delimiter))
    filled = [(k, line) for k, line in enumerate(before, 1) if line.strip()]
    if not filled or not is_comment(filled[-1][1]) or not _numbers(split_cells(row, delimiter)):
        return None
    k, line = filled[-1]
    text = line.lstrip()[1:].strip()
    cells = split_cells(text, delimiter)
    if len(cells) != width or any(_is_number(c) or not c for c in cells):
        return None
    return k, text


def commented_header_note(line: int) -> str:
    """The note of a header read from the comment on ``line`` (:func:`commented_header`)."""
    return (f"the header is the comment on line {line} (numpy.savetxt writes it so), as no "
            f"line before the first row names the columns")


def ends_in_trailing_separator(cells, width: int) -> bool:
    """Whether a row of ``cells`` is one of ``width`` cells with a separator after the last
    (one more, empty, cell), as spreadsheets write.

    Examples
    --------
    >>> ends_in_trailing_separator(["1", "2", ""], 2), ends_in_trailing_separator(["1", "2"], 2)
    (True, False)
    """
    return len(cells) == width + 1 and not cells[-1].strip()


def _first_row_hint(row: list[str], delimiter: str | None, width: int) -> str:
    """What a first row whose cells differ from the header's (``width``) in number most
    likely means."""
    if not _numbers(row):
        # names, not values: the line taken as the header is a title or note above it
        return "; a title or note above the header? Start it with '#' (a comment) or delete it"
    if ends_in_trailing_separator(row, width):
        return ""                       # named as such by the caller
    if (delimiter == "," and len(row) > 1 and _SPLIT_STAMP.match(row[0].strip())
            and _FRACTION.match(row[1].strip())):
        # Python's logging writes '2026-11-28 00:47:19,500': the stamp splits at its comma
        return (f"; the time stamp {row[0].strip() + ',' + row[1].strip()!r} may have a "
                f"decimal comma, which ',' separates: separate the values by ';' or tabs, "
                f"quote the stamps, or write them with '.'")
    return ""


#: The two cells an ISO stamp with a decimal comma splits into between ',' (the date and time
#: to the seconds; the fraction, with any UTC offset).
_SPLIT_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}$")
_FRACTION = re.compile(r"^\d+(?:Z|[+-]\d{2}(?::?\d{2})?)?$")


def _numbers(cells: list[str]) -> bool:
    """Whether a first line is a row (a cell of it a number, or all missing), no header."""
    return any(_is_number(c) or is_decimal_comma(c) for c in cells) or all(map(is_missing,
                                                                                cells))


def _refuse_decimal_commas(row: list[str], line: str, delimiter: str | None,
                           source: str) -> None:
    """Refuse a first row written with decimal commas between ``;`` or tabs, naming the
    separator (with ``,`` between the values a decimal comma splits a number in two)."""
    if delimiter not in (";", "\t") or not any(map(is_decimal_comma, row)):
        return
    # with tabs, only if every cell is a number (a ',' table may hold a tab in a text cell)
    if delimiter == "\t" and not all(is_decimal_comma(c) or _is_number(c) or is_missing(c)
                                     for c in row):
        return
    raise ParameterError(f"{source} uses {_SEPARATORS[delimiter]} between values and ',' as "
                         f"decimal mark ({line.strip()[:80]!r}); write '.' decimals (e.g. "
                         f"export the CSV with '.' as decimal separator)")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
