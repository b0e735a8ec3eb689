"""``dmdidc federated experiment``: outputs, composed epsilon checked against the accountant."""

from __future__ import annotations

import argparse
import json
import math

import pytest

from privacy import GaussianMechanism
from privacy.accounting import epsilon as accountant_epsilon
from simulations.cli import main
from simulations.cli.federated import add_federated_parser


def test_algorithm_names_match_the_experiments():
    from simulations.cli.federated import ALGORITHM_NAMES
    from simulations.studies.federated_experiments import ALGORITHMS
    assert ALGORITHM_NAMES == ALGORITHMS


def test_group_is_extensible():
    parser = argparse.ArgumentParser()
    actions = add_federated_parser(parser.add_subparsers(dest="command", required=True))
    extra = actions.add_parser("echo")
    extra.set_defaults(handler=lambda args: 7)
    args = parser.parse_args(["federated", "echo"])
    assert args.handler(args) == 7


def test_per_update_experiment(tmp_path, capsys):
    out = tmp_path / "syn"
    code = main(["federated", "experiment", "--dataset", "synthetic", "--trials", "2",
                 "--rounds", "3", "--algorithms", "fedinfer,fedavg,fedlin", "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["delta"] == 1e-4 and summary["epsilon_per_update"] == 0.16
    assert {"fedinfer", "fedavg", "fedlin"} <= set(summary)
    bound, total = 2.5, 800
    sensitivity = bound * math.sqrt(bound ** 2 + 1) / total     # FedInfer block, l2
    fedinfer = summary["fedinfer"]
    for sigma, eps in zip(fedinfer["noise_scale"], fedinfer["epsilon_composed"], strict=True):
        expected = accountant_epsilon(GaussianMechanism(sigma, sensitivity), delta=1e-4,
                                      steps=3)
        assert eps == pytest.approx(expected, rel=1e-6)
    assert 0.0 <= fedinfer["final_accuracy"] <= 1.0
    # FedLin releases twice per update: its composed epsilon after 3 rounds (5 releases)
    assert summary["fedlin"]["epsilon_per_update"] == pytest.approx(0.16, rel=5e-3)
    lines = (out / "curves.csv").read_text().splitlines()
    assert lines[0] == "round,algorithm,mean,p10,p90" and len(lines) == 1 + 3 * 3
    assert (out / "accuracy.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "fedinfer" in printed
    # trial 13 finding 9: the line named summary.json and summary.md only; it lists every file
    wrote = printed.splitlines()[-1]
    assert wrote.startswith(f"wrote {out}/: ")
    assert sorted(wrote.split(": ", 1)[1].split(", ")) == sorted(
        p.name for p in out.iterdir() if p.is_file())
    assert {"accuracy.png", "curves.csv", "summary.json", "summary.md"} <= set(
        wrote.split(": ", 1)[1].split(", "))


def test_a_large_delta_against_the_clients_records_is_warned(tmp_path, capsys):
    code = main(["federated", "experiment", "--dataset", "iris", "--trials", "1", "--rounds",
                 "2", "--algorithms", "fedinfer", "--out", str(tmp_path / "iris")])
    err = capsys.readouterr().err
    assert code == 0 and "warning: delta = 0.0095 per record is not small" in err
    code = main(["federated", "experiment", "--dataset", "iris", "--trials", "1", "--rounds",
                 "2", "--algorithms", "fedinfer", "--delta", "1e-5",
                 "--out", str(tmp_path / "small")])
    assert code == 0 and "delta" not in capsys.readouterr().err


def test_total_budget_sweep(tmp_path):
    out = tmp_path / "budget"
    code = main(["federated", "experiment", "--dataset", "synthetic", "--trials", "2",
                 "--rounds", "4", "--budget", "total", "--total-epsilons", "1,4",
                 "--algorithms", "fedinfer,scaffold", "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["total_epsilon"] == [1.0, 4.0]
    for name in ("fedinfer", "scaffold"):
        for budget, eps in zip((1.0, 4.0), summary[name]["epsilon_composed"], strict=True):
            assert max(eps) <= budget and max(eps) > 0.98 * budget
    assert (out / "accuracy_vs_epsilon.png").exists()


@pytest.mark.parametrize("extra", [["--no-privacy", "--epsilon", "1"], ["--alpha", "1.2"],
                                   ["--total-epsilons", "1,2"], ["--trials", "0"]])
def test_contradictory_flags_are_refused(tmp_path, extra, capsys):
    code = main(["federated", "experiment", "--dataset", "iris", "--out", str(tmp_path)] + extra)
    assert code == 2 and "error" in capsys.readouterr().err


@pytest.mark.parametrize(("extra", "named"), [
    (["--noise", "laplace"], "--noise"), (["--noise", "sas", "--alpha", "1.2"], "--noise, --alpha"),
    (["--delta", "1e-5"], "--delta"), (["--noise", "gaussian"], "--noise"),
    (["--budget", "total"], "--budget")])
def test_no_privacy_refuses_the_noise_options_it_would_ignore(tmp_path, capsys, extra, named):
    """Trial 13: --no-privacy accepted --noise laplace, --noise sas --alpha 1.2, --delta."""
    code = main(["federated", "experiment", "--dataset", "iris", "--no-privacy", *extra,
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and f"{named} ha" in err and "no effect with --no-privacy" in err
    assert not (tmp_path / "o").exists()
    # serve has no --budget or --alpha: its noise options are refused the same way
    serve = [e for e in extra if e not in ("--budget", "total", "--alpha", "1.2")]
    code = main(["federated", "serve", "--dataset", "iris", "--algorithm", "fedavg",
                 "--no-privacy", *(serve or ["--delta", "1e-5"]), "--out", str(tmp_path / "s")])
    assert code == 2 and "no effect with --no-privacy" in capsys.readouterr().err
