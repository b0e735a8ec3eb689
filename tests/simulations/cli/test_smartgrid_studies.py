"""``dmdidc smartgrid report | attacks | extract``: the parsers' spelled-out defaults are the
library's (``--help`` imports nothing heavy, so they cannot be read from it)."""

from __future__ import annotations

import pytest

import dmdidc.private
from simulations.cli import build_parser, main
from simulations.cli.smartgrid_studies import MECHANISMS, PRIVACY_UNITS, REPORT_DEFAULTS
from simulations.smartgrid import ScenarioConfig


def test_spelled_out_defaults_are_the_librarys():
    assert MECHANISMS == dmdidc.private.MECHANISMS
    assert PRIVACY_UNITS == dmdidc.private.PRIVACY_UNITS
    config = ScenarioConfig(households=20)
    for name, value in REPORT_DEFAULTS.items():
        assert getattr(config, name) == value, name


def test_the_study_scripts_are_subcommands():
    parser = build_parser()
    report = parser.parse_args(["smartgrid", "report", "--households", "5"])
    attacks = parser.parse_args(["smartgrid", "attacks", "--unit", "window", "--window", "8"])
    extract = parser.parse_args(["smartgrid", "extract"])
    assert report.households == 5 and report.out == "out/smartgrid"
    assert attacks.mechanisms == list(MECHANISMS) and attacks.window == 8
    assert extract.out is None
    assert {args.handler.__name__ for args in (report, attacks, extract)} == {
        "run_report", "run_attacks", "run_extract"}


@pytest.mark.parametrize("argv, message", [
    (["report", "--grid-day", "12", "--no-grid"], "--grid-day only sets the day of the power "
                                                  "flows; got --grid-day 12 with --no-grid"),
    (["attacks", "--window", "12"], "--window applies to --unit window"),
    (["attacks", "--unit", "window"], "got --unit window with --window None"),
])
def test_flags_that_would_do_nothing_are_refused_before_any_work(tmp_path, capsys, argv,
                                                                 message):
    assert main(["smartgrid", *argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_the_attacks_headline_is_at_the_mechanism_and_epsilon_asked_for(tmp_path, capsys):
    """Trial 13 finding 9: the headline summary was SaS at epsilon 1 whatever the flags."""
    import json

    from simulations.cli import main

    out = tmp_path / "att"
    assert main(["smartgrid", "attacks", "--households", "5", "--days", "4", "--epsilons", "3",
                 "100", "--mechanisms", "gaussian", "--windows", "12", "--seeds", "2",
                 "--starts", "1", "--out", str(out)]) == 0
    summary = json.loads((out / "attack_study.json").read_text())["summary"]
    for release in ("attack_guarantee_window", "attack_guarantee_day"):
        assert summary[release]["mechanism"] == "GaussianMechanism"
        assert 2.9 < summary[release]["epsilon"] <= 3.0
    assert ("| headline | gaussian at epsilon 3 per sample (the first of --mechanisms and "
            "--epsilons" in capsys.readouterr().out)
