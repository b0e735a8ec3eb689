"""Tests of ``dmdidc federated esn-attack`` and ``dmdidc federated sifl`` on small settings."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from simulations.cli import main
from simulations.cli.seed_fl import add_seed_fl_actions
from tests.privacy.federated.test_esn_defence import gaussian_epsilon_reference


def test_actions_register_handlers():
    parser = argparse.ArgumentParser()
    add_seed_fl_actions(parser.add_subparsers(dest="action", required=True))
    args = parser.parse_args(["sifl", "--out", "x", "--models", "logistic"])
    assert callable(args.handler) and args.models == ["logistic"]
    with pytest.raises(SystemExit):
        parser.parse_args(["esn-attack", "--out", "x", "--trials", "0"])


def test_esn_attack_cli(tmp_path, capsys):
    argv = ["federated", "esn-attack", "--out", str(tmp_path), "--nodes", "12", "--steps", "6",
            "--trials", "1", "--gd-iterations", "30", "--restarts", "0", "--unit", "step"]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["plain_relative_error"] < 1e-6
    assert summary["private_relative_error"] > 1e-2
    assert summary["privacy_unit"] == "step" and summary["private_delta"] == 1e-5
    exact = gaussian_epsilon_reference(summary["noise_sigma"],
                                       summary["sensitivity_l2_diameter"], 1e-5)
    assert exact <= summary["private_epsilon"] <= 1.001 * exact
    for name in ("esn_fig6_4_gd_iterates", "esn_fig6_5_error_vs_iteration",
                 "esn_fig6_6_recovered", "esn_fig6_7_private"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
    with np.load(tmp_path / "estimates.npz") as saved:
        assert saved["private_best"].shape == (1, 6)
        np.testing.assert_allclose(saved["plain_best"][0], saved["u"], rtol=1e-6)
    assert main(argv) == 0
    assert "note: overwrote" in capsys.readouterr().err


def test_sifl_cli(tmp_path):
    argv = ["federated", "sifl", "--out", str(tmp_path), "--dataset", "breast_cancer",
            "--models", "logistic", "--clients", "3", "--rounds", "8", "--exact-rounds", "2",
            "--extra-dim", "4", "--epsilons", "5", "--nbafl-seeds", "1"]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["max_abs_difference_vs_plain"] < 1e-10
    accuracy = summary["accuracy"]
    assert accuracy["fl"] == accuracy["sifl_m1"] == accuracy["sifl_m2"]
    assert {"fl_clipped", "nbafl_eps_5"} <= set(accuracy)
    assert summary["privacy"]["unit"]["aggregator_difference_noise"] < 1e-10
    for name in ("sifl_accuracy", "sifl_exactness", "sifl_attacks"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000


def test_bad_options_are_refused(tmp_path, capsys):
    assert main(["federated", "esn-attack", "--out", str(tmp_path), "--snr", "-1"]) == 2
    assert "snr" in capsys.readouterr().err
