"""``dmdidc smartgrid report | attacks | extract``: the parsers' spelled-out defaults are the
library's (``--help`` imports nothing heavy, so they cannot be read from it)."""

from __future__ import annotations

import dmdidc.private
from simulations.cli import build_parser
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
