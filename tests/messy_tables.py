"""Messy data files, as loggers and spreadsheets write them, for the readers' agreement test.

Each case is a file's bytes and how to read it (inputs, states, time, missing); every reader
of a data file (:func:`dmdidc.read_data`, the command line's table reader, the follower) must
read it to the same numbers or refuse it alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: One record: time, two states, one input (the last row's input is not used).
_ROWS = [(0, 20.0, 1.5, 0.0), (1, 20.5, 1.25, 1.0), (2, 21.25, 1.0, 1.0), (3, 21.5, 0.5, 0.0),
         (4, 21.0, 0.75, 0.0), (5, 20.75, 1.0, 1.0), (6, 20.5, 1.5, 1.0), (7, 20.25, 1.75, 0.0)]
_NAMES = ["time", "T1", "T2", "heater"]
#: What every clean case holds: states (2, 8), inputs (1, 7), period 1 s.
RECORD = (np.array([r[1:3] for r in _ROWS]).T, np.array([r[3:] for r in _ROWS[:-1]]).T, 1.0)


@dataclass(frozen=True)
class Case:
    """A file's bytes and the options to read it with."""

    name: str
    data: bytes
    inputs: tuple[str, ...] = ("heater",)
    states: tuple[str, ...] | None = None
    missing: str = "error"
    follow: bool = True                  # the follower reads this kind of file too
    clean: bool = True                   # holds the record of RECORD exactly (no sample lost)
    refused: bool = False                # every reader refuses it


def _table(sep: str = ",", header: list[str] | None = None, rows=None, *, end: str = "\n",
           cell=repr) -> str:
    header = _NAMES if header is None else header
    rows = _ROWS if rows is None else rows
    lines = [sep.join(header)] + [sep.join(cell(v) if not isinstance(v, str) else v
                                           for v in row) for row in rows]
    return end.join(lines) + end


def _with(rows, k: int, column: int, value: str):
    rows = [list(r) for r in rows]
    rows[k][column] = value
    return rows


def cases() -> list[Case]:
    """Every variation of a data file that the readers must agree on."""
    plain = _table()
    iso = [(f"2026-11-28T00:00:0{r[0]}",) + r[1:] for r in _ROWS]
    out = [
        Case("comma", plain.encode()),
        Case("semicolon", _table(";").encode()),
        Case("tab", _table("\t").encode()),
        Case("spaces", _table(" ").encode()),
        Case("aligned spaces", _table("   ").encode()),
        Case("crlf", _table(end="\r\n").encode()),
        Case("bom", ("\ufeff" + plain).encode()),
        Case("quoted header", _table(header=[f'"{n}"' for n in _NAMES]).encode()),
        Case("quoted name with a separator", _table(header=["time", '"T1, inner"', "T2",
                                                              "heater"]).encode()),
        # a name holding another separator, unquoted: the first row tells which separates
        Case("comma in a name, tabs", _table("\t", header=["time", "T1, inside", "T2",
                                                              "heater"]).encode()),
        Case("semicolon in a name", _table(header=["time", "T1; inside", "T2",
                                                   "heater"]).encode()),
        Case("quoted cells", _table(cell=lambda v: f'"{v!r}"').encode()),
        Case("units", _table(header=["time [s]", "T1 [degC]", "T2 [degC]", "heater [kW]"])
             .encode()),
        Case("number in a name", _table(header=["time", "Zone 1", "Zone 2", "heater"]).encode()),
        Case("comment lines", ("# logger v2.1, site A\n" + plain.replace(
            "\n3,", "\n# calibration\n3,", 1)).encode()),
        Case("numpy savetxt header", ("# " + plain).encode()),
        Case("numpy savetxt header after a comment", ("# run 3\n# " + plain).encode()),
        Case("comment after header", plain.replace("\n", "\n# exported 2026-11-28\n", 1)
             .encode()),
        Case("blank lines", plain.replace("\n3,", "\n\n3,", 1).encode()),
        Case("trailing spaces", plain.replace("\n", "  \n").encode()),
        # Excel's CSV UTF-8 with a comment appended in Windows-1252: the mark says UTF-8
        Case("bom and a stray byte", ("\ufeff" + plain).encode() + b"# ambient 23\xb0C\n"),
        Case("latin-1 degree", _table(header=["time", "T1 [°C]", "T2 [°C]", "heater"])
             .encode("latin-1")),
        Case("excel trailing delimiter", _table().replace("\n", ",\n").encode()),
        # (the follower cannot tell rows after the data from a row lost in it: no stamp)
        Case("excel empty rows", (plain + ",,,\n,,,\n").encode(), follow=False),
        Case("excel empty rows semicolon", (_table(";") + ";;;\n;;;\n").encode(),
             follow=False),
        Case("unnamed empty column", _table(header=["time", "", "T1", "T2", "heater"], rows=[
            (r[0], "", *r[1:]) for r in _ROWS]).encode()),
        Case("unnamed nan column", _table(header=["time", "", "T1", "T2", "heater"], rows=[
            (r[0], "nan", *r[1:]) for r in _ROWS]).encode()),
        Case("decimal comma semicolon", _table(";", cell=lambda v: repr(v).replace(".", ","))
             .encode(), refused=True),
        Case("decimal comma tab", _table("\t", cell=lambda v: repr(v).replace(".", ","))
             .encode(), refused=True),
        Case("iso stamps", _table(rows=iso).encode()),
        Case("iso stamps spaces", _table(" ", rows=iso).encode()),
        Case("iso stamps with a space, spaces", _table(" ", rows=[
            (r[0].replace("T", " "),) + r[1:] for r in iso]).encode()),
        Case("iso stamps tab", _table("\t", rows=iso).encode()),
        Case("status text column", _table(header=_NAMES + ["status"], rows=[
            r + ("OK",) for r in _ROWS]).encode()),
    ]
    for token in ("", "nan", "NA", "#N/A", "-", "null", "NaN"):
        out.append(Case(f"missing {token or 'empty'!r}",
                        _table(rows=_with(_ROWS, 3, 1, token)).encode(),
                        missing="interpolate", clean=False))
    out.append(Case("missing refused", _table(rows=_with(_ROWS, 3, 1, "")).encode(),
                    refused=True, follow=False))
    lost = [r for r in _ROWS if r[0] != 6]
    out += [Case(f"lost second-to-last row ({m})", _table(rows=lost).encode(), missing=m,
                 clean=False, refused=m == "error", follow=m == "interpolate")
            for m in ("error", "drop", "interpolate")]
    out += [Case(f"lost third row ({m})", _table(rows=[r for r in _ROWS if r[0] != 2]).encode(),
                 missing=m, clean=False, follow=m == "interpolate")
            for m in ("drop", "interpolate")]
    empty6 = _with(_with(_ROWS, 6, 1, ""), 6, 2, "")
    out += [Case(f"empty second-to-last state ({m})", _table(rows=empty6).encode(), missing=m,
                 clean=False, follow=m == "interpolate") for m in ("drop", "interpolate")]
    out.append(Case("empty last input", _table(rows=_with(_ROWS, 7, 3, "")).encode()))
    out.append(Case("empty second-to-last input (drop)",
                    _table(rows=_with(_ROWS, 6, 3, "")).encode(), missing="drop", clean=False,
                    follow=False))
    # a row of empty cells amid the data has no stamp: refused by every reader
    out.append(Case("empty row in the middle (interpolate)",
                    plain.replace("\n3,", "\n,,,\n3,", 1).encode(), missing="interpolate",
                    refused=True))
    return out
