"""Tests of the ``privacy`` subcommand (stand-alone parser; alpha = 1 closed forms)."""

from __future__ import annotations

import argparse
import json

import pytest

from simulations.privacy_cli import add_privacy_parser, main


def test_parser_registers_handler():
    parser = argparse.ArgumentParser()
    add_privacy_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["privacy", "epsilon", "--alpha", "1", "--scale", "2"])
    assert callable(args.handler)


def test_epsilon_and_calibrate(capsys):
    assert main(["privacy", "epsilon", "--alpha", "1", "--scale", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["pure_epsilon"] == pytest.approx(0.9624236501, rel=1e-9)
    assert main(["privacy", "epsilon", "--alpha", "1", "--scale", "1", "--delta", "1e-5",
                 "--steps", "10", "--sampling-rate", "0.1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0 < out["epsilon"] < 10 * 0.9624236501
    assert main(["privacy", "calibrate", "--alpha", "1", "--epsilon", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scale"] == pytest.approx(0.9595, rel=1e-3)


def test_figures(tmp_path, capsys):
    assert main(["privacy", "figures", "--out", str(tmp_path), "--which", "3.7"]) == 0
    assert (tmp_path / "fig3_7_cauchy_limits.png").exists()
