"""``simulations.cli.common``: progress bars only on a terminal; the Markdown summary table."""

from __future__ import annotations

import io
import sys

import pytest

from simulations.cli.common import progress_bar, show_progress, summary_table


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream, shown", [(_Terminal(), True), (io.StringIO(), False),
                                           (object(), False)])
def test_bars_draw_on_a_terminal_only(monkeypatch, stream, shown):
    monkeypatch.setattr(sys, "stderr", stream)
    assert show_progress() is shown
    if isinstance(stream, io.StringIO):
        with progress_bar(range(3), desc="steps") as bar:
            for _ in bar:
                pass
        assert ("\r" in stream.getvalue()) is shown


def test_a_reason_with_line_breaks_and_bars_stays_in_its_cell():
    # a refusal's reason holds line breaks and '|' (a matrix norm, an option's choices):
    # unescaped, they ended the row or split the cell of summary.md
    reason = "the delta method cannot give them:\n  |A_d| = 2\r\nuse drop|interpolate"
    table = summary_table({"missing": {"intervals": reason}, "delay_steps": [1, 0]})
    lines = table.splitlines()
    assert len(lines) == 4                              # header, rule, two rows
    row = next(line for line in lines if line.startswith("| missing.intervals |"))
    # two cells: every bar but the four delimiters is escaped
    assert row.replace("\\|", "").count("|") == 3
    assert "cannot give them:" in row and "use drop\\|interpolate" in row
    records = summary_table([{"reason": "a\nb|c"}, {"reason": None}]).splitlines()
    assert records[2] == "| a b\\|c |" and records[3] == "| n/a |"


def test_an_empty_mapping_is_a_row_that_says_none():
    # `missing: {}` (nothing missing) left no row at all: the table did not say it
    table = summary_table({"delay_steps": [1, 1], "missing": {}, "run": {"steps": 5}})
    assert "| missing | none |" in table.splitlines()
    assert "| run.steps | 5 |" in table.splitlines()
