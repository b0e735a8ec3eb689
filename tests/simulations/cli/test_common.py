"""``simulations.cli.common``: progress bars only on a terminal."""

from __future__ import annotations

import io
import sys

import pytest

from simulations.cli.common import progress_bar, show_progress


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
