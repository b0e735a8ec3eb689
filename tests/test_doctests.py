"""Every docstring example of the five packages runs and prints what it shows.

One test per module holding examples, each in its own temporary folder (examples may write
files). Modules whose examples calibrate noise against the accountant take tens of seconds:
they are marked ``slow``.
"""

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("_toolbox", "privacy", "dmdidc", "controllers", "simulations")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
SLOW = {"privacy.dpsgd.noise", "privacy.calibration", "simulations.studies.statistics_audit",
        "simulations.smartgrid.attack_study"}


def _modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__main__" or ">>>" not in path.read_text():
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.append(".".join(parts))
    return names


MODULES = _modules_with_examples()


def test_examples_are_found():
    assert len(MODULES) >= 70
    assert "dmdidc.estimator" in MODULES


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else [])
             for name in MODULES])
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    tests = [test for test in doctest.DocTestFinder().find(module, name) if test.examples]
    assert tests, f"{name} has '>>>' but no example was found"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in tests:
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
