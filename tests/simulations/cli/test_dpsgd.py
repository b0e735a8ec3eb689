"""``dmdidc privacy dpsgd`` and ``dmdidc privacy audit`` (small, fast settings)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privacy import ParameterError
from simulations.cli import main
from simulations.studies.dpsgd import StudyConfig, load_dataset, parse_noise


@pytest.mark.slow
def test_dpsgd_study_writes_summary_and_figure(tmp_path, capsys):
    out = tmp_path / "study"
    # epsilon 0.5, not 4: the accountant's PLD of the subsampled Gaussian is 3x cheaper
    # (13.4 s -> 4.5 s CPU for the run), the accuracy is unchanged (0.91)
    assert main(["privacy", "dpsgd", "--dataset", "breast_cancer", "--out", str(out),
                 "--epsilons", "0.5", "--noises", "gaussian", "sas_1.9", "--seeds", "3",
                 "--sampling-rate", "0.5", "--epochs", "2", "--learning-rate", "0.5",
                 "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["accuracy"]) == {"gaussian", "sas_1.9"}
    for label in ("gaussian", "sas_1.9"):
        cell = summary["accuracy"][label]["0.5"]
        assert len(cell["per_seed"]) == 3
        assert cell["ci95_low"] <= cell["mean"] <= cell["ci95_high"]
        assert 0.5 < cell["mean"] <= 1.0                  # breast cancer is easy
        # the run's epsilon is recomputed from the accountant and meets the target
        assert 0.4875 < summary["epsilon_composed"][label]["0.5"] <= 0.5
        # the 3 seeds' models share the data: releasing them all composes the 3 runs
        assert summary["epsilon_all_seeds"][label]["0.5"] > 0.5
    # SaS gets the scale whose certified Gaussian equivalent is the Gaussian's sigma
    assert summary["gaussian_equivalent_sigma"]["sas_1.9"]["0.5"] == pytest.approx(
        summary["noise_scale"]["gaussian"]["0.5"], rel=1e-12)
    assert summary["hyperparameters"]["steps"] == 4
    assert len(summary["runs"]) == 6
    assert "sas_1.9" in summary["difference_vs_gaussian"]
    assert (out / "accuracy_vs_epsilon.png").stat().st_size > 10_000
    assert (out / "runs.csv").read_text().count("\n") == 7
    assert "gaussian" in capsys.readouterr().out


def test_audit_command_flags_the_miscalibrated_mechanism(tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(["privacy", "audit", "--out", str(out), "--which", "laplace",
                 "laplace_scale_halved", "--samples", "100000", "--no-progress"]) == 0
    audits = {a["name"]: a for a in json.loads((out / "summary.json").read_text())["audits"]}
    assert set(audits) == {"laplace", "laplace_scale_halved"}
    for record in audits.values():
        assert set(record) >= {"name", "epsilon_claimed", "epsilon_lower_bound", "confidence"}
        assert record["epsilon_claimed"] == 1.0 and record["confidence"] == 0.95
    assert 0.8 < audits["laplace"]["epsilon_lower_bound"] <= 1.0
    assert audits["laplace_scale_halved"]["epsilon_lower_bound"] > 1.0
    assert audits["laplace_scale_halved"]["violation"]
    assert (out / "audits.png").exists()
    printed = capsys.readouterr().out
    assert "UNEXPECTED" not in printed and "VIOLATION" in printed
    assert audits["laplace_scale_halved"]["claim_known_wrong"]


def test_bad_arguments_are_refused(tmp_path, capsys):
    with pytest.raises(ParameterError, match="noise must be 'gaussian' or 'sas_<alpha>'"):
        parse_noise("laplace")
    with pytest.raises(ParameterError, match="alpha must lie in"):
        parse_noise("sas_2.5")
    with pytest.raises(ParameterError, match="binary"):
        StudyConfig(dataset="digits", model="logistic")
    with pytest.raises(ParameterError, match="seeds"):
        StudyConfig(seeds=1)
    assert main(["privacy", "audit", "--out", str(tmp_path), "--which", "nope",
                 "--no-progress"]) == 2
    assert "unknown audits ['nope']" in capsys.readouterr().err
    # a record's name (as auditing.md's table and summary.json give it) says its audit's name
    assert main(["privacy", "audit", "--out", str(tmp_path), "--which",
                 "sas_1.5_vector16_certified", "--no-progress"]) == 2
    assert "'sas_1.5_vector16_certified' is a record of the audit 'sas_1.5_vector16'" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["privacy", "dpsgd", "--dataset", "mnist", "--out", str(tmp_path)])
    capsys.readouterr()
    # trial 13: --seeds 1 passed the parser (>= 1), then the study refused it (>= 2)
    with pytest.raises(SystemExit):
        main(["privacy", "dpsgd", "--seeds", "1", "--out", str(tmp_path)])
    assert "argument --seeds: must be an integer >= 2; got '1'" in capsys.readouterr().err


def test_a_gaussian_only_figure_has_no_empty_legend(tmp_path):
    """Trial 13: matplotlib's 'No artists with labels' warning leaked to stderr when the
    Gaussian was the only noise (no differences to plot)."""
    import warnings

    from simulations.studies.dpsgd import plot_study

    cell = {"mean": 0.9, "ci95_low": 0.88, "ci95_high": 0.92}
    summary = {"accuracy": {"gaussian": {"1.0": cell}}, "difference_vs_gaussian": {},
               "epsilons": [1.0], "delta": 1e-5, "dataset": "breast_cancer",
               "model": "logistic", "seeds": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_study(summary, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 1000


def test_datasets_are_split_and_scaled_without_test_leakage():
    data = load_dataset("breast_cancer")
    assert len(data["y_train"]) + len(data["y_val"]) + len(data["y_test"]) == 569
    np.testing.assert_allclose(data["X_train"].mean(axis=0), 0.0, atol=1e-12)
    assert np.abs(data["X_test"].mean(axis=0)).max() > 1e-3    # scaled with train statistics
    digits = load_dataset("digits")
    assert digits["X_train"].max() <= 1.0 and len(np.unique(digits["y_test"])) == 10


@pytest.mark.slow
def test_audit_command_runs_the_statistics_audits_with_their_sample_count(tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(["privacy", "audit", "--out", str(out), "--which", "statistics_laplace_sample",
                 "--statistics-samples", "600", "--no-progress"]) == 0
    (record,) = json.loads((out / "summary.json").read_text())["audits"]
    assert record["name"] == "statistics_laplace_sample"
    assert record["samples_per_neighbour"] == 600 and record["unit"] == "sample"
    assert record["epsilon_lower_bound"] <= record["epsilon_claimed"] == 1.0
    assert "statistics_laplace_sample" in capsys.readouterr().out
    assert main(["privacy", "audit", "--out", str(out), "--which", "statistics_laplace_sample",
                 "--statistics-samples", "3", "--no-progress"]) == 2
    assert "--statistics-samples must be an integer >= 4; got 3" in capsys.readouterr().err


def test_the_audit_page_names_each_rows_which_argument():
    """Walkthrough finding: the table rows are record names, which --which refused."""
    from pathlib import Path

    from simulations.studies.audit import AUDIT_NAMES

    page = Path(__file__).parents[3] / "docs" / "auditing.md"
    rows = [line.split("|")[1:3] for line in page.read_text().splitlines()
            if line.startswith("| ") and "`" in line.split("|")[2] and "--which" not in line]
    assert len(rows) >= 18
    for record, which in rows:
        record, which = record.strip(), which.strip().strip("`")
        assert which in AUDIT_NAMES
        assert record == which or record.startswith(which + "_")


def test_the_console_table_shows_a_rows_certified_epsilon_above_its_target():
    # the scalar-accounting row claims the column's target, the accountant certifies more
    from simulations.cli.dpsgd import _study_table

    cell = {"mean": 0.9, "ci95_high": 0.92}
    table = _study_table({
        "epsilons": [1.0, 4.0],
        "accuracy": {"gaussian": {"1": cell, "4": cell},
                     "sas_1.9_scalar_accounting": {"1": cell, "4": cell}},
        "epsilon_composed": {"gaussian": {"1": 0.998, "4": 3.99},
                             "sas_1.9_scalar_accounting": {"1": 1.49, "4": 4.0}}})
    header, gaussian, scalar = table.splitlines()
    assert "target eps=1" in header and "target eps=4" in header
    assert "certified" not in gaussian
    assert scalar.count("certified") == 1 and "(certified eps 1.49)" in scalar


@pytest.mark.parametrize(("extra", "message"), [
    (["--tune-noise", "sas_1.9"], "--tune-noise only act with --tune"),
    (["--tune-epsilon", "4", "--tune-noise", "gaussian"],
     "--tune-noise, --tune-epsilon only act with --tune"),
    (["--hidden", "8"], "the logistic model has none"),
    (["--model", "softmax", "--hidden", "32"], "the softmax model has none")])
def test_options_that_would_be_ignored_are_refused(tmp_path, capsys, extra, message):
    """Trial 13: --tune-noise/--tune-epsilon without --tune and --hidden with the logistic
    model were accepted and did nothing."""
    code = main(["privacy", "dpsgd", "--dataset", "breast_cancer", *extra, "--out",
                 str(tmp_path / "o")])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
