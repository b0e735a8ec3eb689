"""elapsed_status: a fit whose steps cannot be counted shows its elapsed time on a terminal (a
million samples took 12-30 s with nothing on the screen), and nothing in a pipe or log."""

import time

import pytest

from simulations.cli import common


def test_the_status_line_ticks_on_a_terminal_and_is_cleared(monkeypatch, capsys):
    monkeypatch.setattr(common, "show_progress", lambda: True)
    with common.elapsed_status("fitting 1,000,000 samples", every=0.05):
        time.sleep(0.3)
    err = capsys.readouterr().err
    assert err.count("fitting 1,000,000 samples: 00:0") >= 3      # refreshed while it ran


@pytest.mark.parametrize("terminal, show", [(False, True), (True, False)])
def test_no_status_in_a_pipe_or_for_short_work(monkeypatch, capsys, terminal, show):
    monkeypatch.setattr(common, "show_progress", lambda: terminal)
    with common.elapsed_status("fitting", show=show, every=0.01):
        time.sleep(0.05)
    assert capsys.readouterr().err == ""


def test_the_block_raises_through_it_and_the_ticker_stops(monkeypatch):
    import threading

    monkeypatch.setattr(common, "show_progress", lambda: True)
    with pytest.raises(RuntimeError), common.elapsed_status("fitting", every=0.01):
        assert any(t.name == "dmdidc-elapsed-status" for t in threading.enumerate())
        raise RuntimeError("fit failed")
    # (tqdm may leave its own monitor thread: ours is the one that must be gone)
    assert not any(t.name == "dmdidc-elapsed-status" for t in threading.enumerate())
