"""Tests of ``dmdidc demo live``: it writes its figure and results; options of the Figure 9.1
demo given before ``live`` are refused, not silently replaced."""

from __future__ import annotations

import json

import pytest

from simulations.cli import main


def test_demo_live_writes_its_files(tmp_path, capsys):
    out = tmp_path / "live"
    assert main(["demo", "live", "--out", str(out), "--steps", "300", "--plants", "2",
                 "--seed", "4"]) == 0
    for name in ("live_adaptive.png", "summary.json", "summary.md"):
        assert (out / name).stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["runs"]) == 2
    assert (summary["config"]["steps"], summary["config"]["step"]) == (300, 100)
    assert "adaptive beat fixed after the step on" in capsys.readouterr().out


def test_options_before_live_are_refused(tmp_path, capsys):
    assert main(["demo", "--steps", "5", "live", "--out", str(tmp_path)]) == 2
    assert "--steps given before 'live'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_too_short_a_run_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "live", "--steps", "20"])
    assert exit_.value.code == 2
    assert "--steps: must be an integer >= 100" in capsys.readouterr().err
