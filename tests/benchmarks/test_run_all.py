"""``make bench``'s table: the scripts' ``--json`` rows, collected and printed as markdown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _common import summary_row  # noqa: E402
from run_all import _least_squares_split, _run, main, table  # noqa: E402


def test_the_table_has_one_row_per_measurement_and_says_whether_each_goal_holds():
    rows = [summary_row("step, |u| <= 1", 2e-5, 1e-5, "solver by hand", "<= 2", True),
            summary_row("round", 3.0, 2.0, "peer", "< 1 (faster)", False)]
    assert rows[0]["ratio"] == pytest.approx(2.0) and rows[1]["ratio"] == pytest.approx(1.5)
    lines = table(rows).splitlines()
    assert len(lines) == 2 + len(rows)
    cells = [line.replace("\\|", "").split("|")[1:-1] for line in lines]
    assert {len(c) for c in cells} == {7}          # a bar inside a name stays in its cell
    assert [c[-1].strip() for c in cells[2:]] == ["yes", "no"]


def test_a_script_hands_its_headline_row_to_the_table():
    rows, error = _run("bench_mpc.py", ["--steps", "4"])
    assert not error and len(rows) == 1
    row = rows[0]
    assert row["ours"] > 0 and row["peer"] > 0 and row["ratio"] == row["ours"] / row["peer"]
    assert "first moves agree" in row["note"]
    rows, error = _run("bench_mpc.py", ["--steps", "not-a-number"])
    assert rows == [] and "failed" in error


def test_help_shows_the_options_the_docs_cite(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert "--fit-row" in shown and "--repeat" in shown
    with pytest.raises(SystemExit) as exit_:
        main(["--fit-row", "--repeat", "0"])
    assert exit_.value.code == 2
    assert "--repeat: must be an integer >= 1, got 0" in capsys.readouterr().err


def test_the_least_squares_split_names_each_part_in_gram_passes():
    # a small fit: the statistics pass, the residual checks, the linearity check and the rest,
    # each a share of the given Gram pass (the rest never negative)
    import re
    import warnings

    import numpy as np

    from dmdidc import DelayedPlant, DMDidc, random_excitation

    plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]],
                                         delay=1.3, dt=0.5, max_delay=3)
    U = random_excitation(1, 3000, rng=0)
    X = plant.simulate([0.0, 0.0], U) + 0.01 * np.random.default_rng(1).standard_normal(
        (2, 3001))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = DMDidc(max_delay=3, estimator="ls").fit(X, U, dt=0.5)
    note = _least_squares_split(fitted, X, U, 1e-3, 1e-3, 1)
    shares = dict(re.findall(r"(statistics|residual checks|linearity|the rest) ([0-9.]+)", note))
    assert list(shares) == ["statistics", "residual checks", "linearity", "the rest"]
    assert all(float(v) >= 0 for v in shares.values())


def test_every_benchmark_script_is_in_the_docs_table():
    """docs/benchmarks.md lists every script with what it measures (three had been left out)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    table = (root / "docs" / "benchmarks.md").read_text()
    missing = [path.name for path in sorted((root / "benchmarks").glob("bench_*.py"))
               if f"| `{path.name}` |" not in table]
    assert not missing, f"add to the table in docs/benchmarks.md: {missing}"
