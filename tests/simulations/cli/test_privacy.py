"""Tests of the ``privacy`` subcommand: every flag takes effect or is refused.

Alpha = 1 (Cauchy) has closed forms, so most expectations are computed independently:
``eps_1 = 2 asinh(sensitivity / (2 scale))`` (seed eq. 3.57).
"""

from __future__ import annotations

import argparse
import json
import math
import re

import pytest

from privacy import SaSMechanism
from privacy.accounting import epsilon as composed_epsilon
from privacy.composition import amplified_epsilon, pure_dp_epsilon
from simulations.cli import main
from simulations.cli.privacy import add_privacy_parser

OWN_COMMANDS = ("figures", "epsilon", "calibrate", "compare")   # defined in simulations.cli.privacy


def cauchy_eps(scale, sensitivity=1.0):
    return 2.0 * math.asinh(sensitivity / (2.0 * scale))


def run(capsys, *argv):
    code = main(["privacy", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, action, *argv):
    code, out, err = run(capsys, action, "--json", *argv)
    assert code == 0, err
    return json.loads(out)


def test_parser_registers_handler():
    parser = argparse.ArgumentParser()
    add_privacy_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["privacy", "epsilon", "--alpha", "1", "--scale", "2"])
    assert callable(args.handler)


def test_every_option_has_help_and_shows_its_default():
    from simulations.cli import build_parser

    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    sub = top.choices["privacy"]
    commands = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == {"figures", "epsilon", "calibrate", "compare", "dpsgd",
                                     "audit", "identify", "sweep"}
    for name, command in commands.choices.items():
        if name not in OWN_COMMANDS:      # other modules register theirs under privacy too
            continue
        text = " ".join(command.format_help().split())
        # no noise such as "(default: None)" on required options or a second default
        assert "(default: None)" not in text and "(default: False)" not in text, name
        assert not re.search(r"default: [^)]*\) \(default:", text), name   # said twice
        for action in command._actions:
            if action.dest == "help":
                continue
            assert action.help, (name, action.dest)
            if not action.required and action.default not in (None, False):
                assert f"(default: {action.default})" in text, (name, action.dest)


def test_figures_refuses_steps_without_figure_4_6(tmp_path, capsys):
    code, out, err = run(capsys, "figures", "--out", str(tmp_path), "--which", "3.7",
                         "--steps", "50")
    assert code == 2 and "--steps sets N of Fig. 4.6" in err
    assert not (tmp_path / "fig3_7_cauchy_limits.png").exists()


# ----------------------------------------------------------------------------- epsilon


def test_epsilon_of_one_release_is_the_pure_epsilon(capsys):
    out = run_json(capsys, "epsilon", "--alpha", "1", "--scale", "1")
    assert out["epsilon"] == pytest.approx(cauchy_eps(1.0), rel=1e-12)
    assert out["pure_epsilon_one_release"] == pytest.approx(cauchy_eps(1.0), rel=1e-12)
    assert (out["delta"], out["steps"], out["method"]) == (0.0, 1, "pure-dp")


def test_epsilon_steps_without_delta_compose_pure_dp(capsys):
    """It used to print the one-release epsilon for --steps 100."""
    out = run_json(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--steps", "100")
    assert out["epsilon"] == pytest.approx(100 * cauchy_eps(1.0), rel=1e-12)
    assert out["method"] == "pure-dp"


def test_epsilon_sampling_rate_without_delta_amplifies(capsys):
    out = run_json(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--steps", "10",
                   "--sampling-rate", "0.1")
    amplified = math.log1p(0.1 * math.expm1(cauchy_eps(1.0)))
    assert out["epsilon"] == pytest.approx(10 * amplified, rel=1e-12)


def test_epsilon_replace_one_doubles_the_shift(capsys):
    out = run_json(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--replace-one")
    assert out["epsilon"] == pytest.approx(cauchy_eps(1.0, 2.0), rel=1e-12)
    assert out["neighboring"] == "replace_one"


def test_epsilon_with_delta_uses_the_accountant(capsys):
    out = run_json(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--delta", "1e-5",
                   "--steps", "10", "--sampling-rate", "0.1")
    expected = composed_epsilon(SaSMechanism(1.0, 1.0), delta=1e-5, steps=10,
                                sampling_rate=0.1)
    assert out["epsilon"] == pytest.approx(expected, rel=1e-12)
    assert out["epsilon"] < 10 * math.log1p(0.1 * math.expm1(cauchy_eps(1.0)))
    assert out["method"] == "pld"


def test_epsilon_dimension_is_the_vector_epsilon(capsys):
    out = run_json(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--dimension", "2")
    even_split = 2 * cauchy_eps(1.0, 0.5)      # Cauchy: concave, the even split is the worst
    assert even_split <= out["epsilon"] <= 1.01 * even_split
    assert out["dimension"] == 2


@pytest.mark.parametrize("scale", [0.3, 2.0])
def test_gaussian_prints_its_sigma_beside_the_sas_scale(capsys, scale):
    """A SaS scale is not a Gaussian's sigma: alpha = 2 is N(0, 2 scale^2), shown as
    gaussian_sigma = sqrt(2) scale (and only for the Gaussian)."""
    out = run_json(capsys, "epsilon", "--scale", str(scale), "--delta", "1e-5")
    assert out["gaussian_sigma"] == pytest.approx(math.sqrt(2.0) * scale, rel=1e-12)
    calibrated = run_json(capsys, "calibrate", "--epsilon", "1", "--delta", "1e-5")
    assert calibrated["gaussian_sigma"] == pytest.approx(math.sqrt(2) * calibrated["scale"],
                                                         rel=1e-12)
    assert "gaussian_sigma" not in run_json(capsys, "epsilon", "--alpha", "1.5", "--scale",
                                            str(scale))


def test_gaussian_without_delta_is_refused(capsys):
    code, out, err = run(capsys, "epsilon", "--alpha", "2", "--scale", "1", "--steps", "100")
    assert code == 2 and out == ""
    assert "--delta" in err and "pure" in err


def test_bad_values_are_refused_with_the_flag(capsys):
    code, _, err = run(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--steps", "0")
    assert code == 2 and "error: --steps must be an integer >= 1; got 0" in err
    code, _, err = run(capsys, "epsilon", "--alpha", "1", "--scale", "1",
                       "--sampling-rate", "1.5")
    assert code == 2 and "error: --sampling-rate must lie in (0.0, 1.0]; got 1.5" in err


# ----------------------------------------------------------------------------- calibrate


def test_calibrate_one_release(capsys):
    out = run_json(capsys, "calibrate", "--alpha", "1", "--epsilon", "1")
    expected = 1.0 / (2.0 * math.sinh(0.5))   # inverse of eq. (3.57)
    assert expected <= out["scale"] <= expected * (1 + 1e-9)


def test_calibrate_steps_without_delta_calibrates_the_composition(capsys):
    """It used to return the one-release scale and echo the steps."""
    out = run_json(capsys, "calibrate", "--alpha", "1", "--epsilon", "1", "--steps", "10")
    expected = 1.0 / (2.0 * math.sinh(0.05))   # each release must be 0.1-DP
    assert expected <= out["scale"] <= expected * 1.002
    assert out["epsilon"] <= 1.0 and out["method"] == "pure-dp"


def test_calibrate_with_delta_steps_and_sampling(capsys):
    out = run_json(capsys, "calibrate", "--alpha", "1", "--epsilon", "1", "--delta", "1e-5",
                   "--steps", "20", "--sampling-rate", "0.5")
    mech = SaSMechanism(1.0, out["scale"])
    assert composed_epsilon(mech, delta=1e-5, steps=20, sampling_rate=0.5) <= 1.0
    assert composed_epsilon(SaSMechanism(1.0, out["scale"] / 1.01), delta=1e-5, steps=20,
                            sampling_rate=0.5) > 1.0
    single = 1.0 / (2.0 * math.sinh(0.5))
    assert out["scale"] > 2 * single


def test_epsilon_and_calibrate_print_the_privacy_unit(capsys):
    # docs/privacy.md: the unit is printed with every epsilon
    code, out, _ = run(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--steps", "3")
    assert code == 0 and "| unit | record |" in out
    assert "-DP for one record added or removed (3 releases" in out
    cal = run_json(capsys, "calibrate", "--alpha", "1", "--epsilon", "1", "--replace-one",
                   "--unit", "household")
    assert cal["unit"] == "household"
    assert cal["guarantee"].startswith(f"({cal['epsilon']:.4g}, 0)-DP for one household "
                                       f"replaced")


@pytest.mark.parametrize("unit", ["", "  "])
def test_a_unit_naming_nothing_is_refused(capsys, unit):
    # the printed guarantee read "for one  added or removed"
    code, out, err = run(capsys, "epsilon", "--alpha", "1", "--scale", "1", "--unit", unit)
    assert code == 2 and out == ""
    assert "--unit must be a non-empty string naming the privacy unit" in err


def test_calibrate_replace_one_needs_more_noise(capsys):
    plain = run_json(capsys, "calibrate", "--alpha", "1", "--epsilon", "1", "--steps", "5")
    replace = run_json(capsys, "calibrate", "--alpha", "1", "--epsilon", "1", "--steps", "5",
                       "--replace-one")
    expected = 2.0 / (2.0 * math.sinh(0.1))    # shift 2 D, 0.2-DP per release
    assert expected <= replace["scale"] <= expected * 1.002
    assert replace["scale"] > 1.9 * plain["scale"]


def test_calibrate_gaussian_pure_is_refused_at_once(capsys):
    code, out, err = run(capsys, "calibrate", "--alpha", "2", "--epsilon", "1", "--steps", "10")
    assert code == 2 and out == "" and "--delta" in err


def test_calibrate_pure_vector_composition_matches_the_accountant(capsys):
    out = run_json(capsys, "calibrate", "--alpha", "1", "--epsilon", "2", "--steps", "4",
                   "--sampling-rate", "0.5", "--dimension", "2")
    mech = SaSMechanism(1.0, out["scale"], dimension=2)
    assert pure_dp_epsilon(amplified_epsilon(mech.epsilon, 0.5), steps=4, delta=0.0) <= 2.0


# ----------------------------------------------------------------------------- compare, figures


def test_compare_prints_the_table_and_writes_json(capsys, tmp_path, monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)   # bars show on a terminal only
    path = tmp_path / "compare.json"
    argv = ["compare", "--epsilons", "2", "--alphas", "1", "--steps", "10", "--sampling-rate",
            "1", "--out", str(path)]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert out.splitlines()[0] == "| q | eps | Gaussian | alpha = 1 |"
    rows = json.loads(path.read_text())
    assert rows[0]["alpha"] == 1.0 and 0 < rows[0]["scale_ratio_to_gaussian"] < 1
    assert f"{rows[0]['scale']:#.3g}" in out
    assert "calibrating" in err                    # the progress bar


def test_figures_says_when_it_overwrites(tmp_path, capsys):
    out = run_json(capsys, "figures", "--out", str(tmp_path), "--which", "3.7")
    assert out["overwritten"] == []
    assert (tmp_path / "fig3_7_cauchy_limits.png").stat().st_size > 10_000
    again = run_json(capsys, "figures", "--out", str(tmp_path), "--which", "3.7")
    assert again["overwritten"] == ["fig3_7_cauchy_limits.png"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--scale", "2"], "give the noise: --alpha A with 0.1 <= A < 2 for a pure-DP"),
    (["--scale", "2", "--delta", "0"], "--delta 0 is pure DP, which the default alpha = 2"),
    (["--scale", "2", "--alpha", "2"], "--alpha 2 is Gaussian noise"),
])
def test_epsilon_never_defaults_to_an_invalid_pair(capsys, argv, message):
    """The reported failure: ``--scale 2`` alone silently meant alpha = 2 with delta = 0."""
    code, out, err = run(capsys, "epsilon", *argv)
    assert code == 2 and out == "" and message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("scale", ["-1", "0", "nan", "inf"])
def test_a_bad_scale_blames_the_scale(capsys, scale):
    with pytest.raises(SystemExit) as info:
        main(["privacy", "epsilon", "--alpha", "1.5", "--scale", scale])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --scale: must be a number > 0; got '{scale}'" in err
    assert "alpha" not in err.splitlines()[-1]
    with pytest.raises(SystemExit):
        main(["privacy", "epsilon", "--scale", scale])          # before the defaults' refusal
    assert "argument --scale" in capsys.readouterr().err


def test_gaussian_with_delta_is_the_default_alpha_and_the_table_is_readable(capsys):
    code, out, err = run(capsys, "epsilon", "--scale", "2", "--delta", "1e-5", "--steps", "10")
    assert code == 0, err
    assert out.startswith("| quantity | value |") and "| alpha | 2 |" in out
    assert "| method |" in out
