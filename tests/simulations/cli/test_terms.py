"""Library remedies restated in the command's flags, where the command has the flag."""

from __future__ import annotations

import pytest

from simulations.cli import build_parser
from simulations.cli.terms import OPTIONS, command_flags, command_parser, in_cli_terms

GROUPS = ("privacy", "federated", "smartgrid")

FEEDBACK = ("closed-loop data: pass the reference or dither that excites the loop, "
            "fit(..., reference=r), so the instruments are independent of the noise")


def _flags(*argv):
    parser = build_parser()
    command = command_parser(parser, parser.parse_args(list(argv)))
    assert command.prog == "dmdidc " + " ".join(argv[:2 if argv[0] in GROUPS else 1])
    return command_flags(command)


@pytest.mark.parametrize("name", sorted(OPTIONS))
def test_every_option_becomes_its_flag_only_where_the_command_has_it(name):
    flag = OPTIONS[name].flag
    for value, shown in (("'auto'", "auto"), ("3", "3"), ("0.5", "0.5"), ("1e-05", "1e-05")):
        text = f"refit with {name}={value} or more."
        assert in_cli_terms(text, {flag}) == f"refit with {flag} {shown} or more."
        assert in_cli_terms(text, {"--other"}) == text           # no flag: the Python text
    assert in_cli_terms(f"a call DMDidc({name}=r) here", {flag}) == \
        f"a call {flag} {OPTIONS[name].metavar} here"


def test_bare_names_with_an_underscore_only_and_never_inside_quotes_or_words():
    flags = {spec.flag: None for spec in OPTIONS.values()} | {"--method": ("auto", "qr")}
    assert in_cli_terms("raise max_delay (now 3); lower block_rtol", flags) == \
        "raise --max-delay (now 3); lower --block-rtol"
    for text in ("pass the reference or dither", "column 'max_delay' of the table",
                 "my_max_delay_x", "--max-delay 3", "the estimator decided",
                 "confidence_intervals(method='bootstrap')"):
        assert in_cli_terms(text, flags) == text
    assert in_cli_terms("DMDidc(max_delay=None)", flags) == "--max-delay auto"
    assert in_cli_terms("detrend=None", flags) == "--detrend none"


def test_the_identify_command_states_the_closed_loop_remedy_as_its_flag():
    flags = _flags("identify", "x.npz", "--max-delay", "1")
    assert {"--max-delay", "--detrend", "--reference", "--estimator"} <= set(flags)
    assert in_cli_terms(FEEDBACK, flags) == (
        "closed-loop data: pass the reference or dither that excites the loop, "
        "--reference FILE, so the instruments are independent of the noise")


def test_a_value_the_flag_refuses_keeps_the_python_text():
    flags = _flags("identify", "x.npz", "--max-delay", "1")
    assert in_cli_terms("method='qr' selects a least-squares solver; estimator='iv' has its "
                        "own (use method='auto')", flags) == (
        "--method qr selects a least-squares solver; --estimator iv has its own (use "
        "--method auto)")
    for text in ("compare with confidence_intervals(method='bootstrap') over experiments",
                 "use method='bootstrap' intervals"):
        assert in_cli_terms(text, flags) == text


def test_a_command_without_the_flag_keeps_the_python_text():
    flags = _flags("federated", "identify", "--out", "f")
    assert "--max-delay" in flags and "--reference" not in flags
    assert in_cli_terms(FEEDBACK, flags) == FEEDBACK
    # privacy identify's --detrend takes none or constant: 'auto' stays Python
    flags = _flags("privacy", "identify", "d.npz", "--max-delay", "1", "--state-bound", "1",
                   "--input-bound", "1", "--epsilon", "1")
    assert flags["--detrend"] == ("none", "constant")
    assert in_cli_terms("fit with detrend='auto' (the default) or detrend='constant'", flags) \
        == "fit with detrend='auto' (the default) or --detrend constant"


def test_a_checks_message_names_the_flag_of_its_argument():
    flags = _flags("privacy", "epsilon", "--alpha", "1.5", "--scale", "1")
    assert in_cli_terms("sampling_rate must lie in (0.0, 1.0]; got 2.0", flags) == \
        "--sampling-rate must lie in (0.0, 1.0]; got 2.0"
    assert in_cli_terms("--x 1 is wrong: steps must be >= 1", flags) == \
        "--x 1 is wrong: --steps must be >= 1"
    # not a flag of the command, or not a check's subject: unchanged
    for text in ("households must be >= 1", "the steps must be fewer", "a steps must x"):
        assert in_cli_terms(text, flags) == text


def test_a_call_with_other_arguments_stays_python_and_a_method_call_becomes_the_flag():
    """Review findings: the outlier remedy of OutputDMDidc read "fit IdData(Y, U[:, :-1],
    dt=dt, --missing drop)" and its feedback remedy "use DMDidc().--reference FILE"."""
    flags = _flags("identify", "x.npz", "--max-delay", "1")
    text = ("fit IdData(Y, U[:, :-1], dt=dt, missing='drop') (split at them); "
            "raise max_delay")
    assert in_cli_terms(text, flags) == (
        "fit IdData(Y, U[:, :-1], dt=dt, missing='drop') (split at them); raise --max-delay")
    for receiver in ("DMDidc().", "DMDidc(...).", "est."):
        assert in_cli_terms(f"use {receiver}fit(..., reference=r) when", flags) == \
            "use --reference FILE when"
    assert in_cli_terms("fit(X, U, max_delay=3) or max_delay=4", flags) == \
        "fit(X, U, max_delay=3) or --max-delay 4"
