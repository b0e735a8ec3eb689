"""Importing the error hierarchy and the argument checks (what ``dmdidc`` uses of ``privacy``)
does not pull in scipy.stats or the mechanisms."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    return set(result.stdout.split())


@pytest.mark.parametrize("statement", ["import privacy.errors", "import privacy",
                                       "from privacy.validation import check_positive"])
def test_cheap_imports_do_not_load_scipy_stats(statement):
    loaded = _loaded_after(statement)
    assert "scipy.stats" not in loaded
    assert "privacy.mechanisms" not in loaded


def test_lazy_names_still_resolve():
    loaded = _loaded_after("import privacy; privacy.SaSMechanism; privacy.accounting")
    assert {"privacy.mechanisms", "privacy.accounting"} <= loaded
    import privacy
    assert privacy.GaussianMechanism.__module__ == "privacy.mechanisms"
    assert set(privacy.__all__) <= set(dir(privacy))


@pytest.mark.parametrize("statement", ["import privacy", "import privacy.dpsgd",
                                       "import privacy.federated",
                                       "import privacy.federated.flower"])
def test_packages_load_their_modules_on_first_use(statement):
    # Flower takes seconds to import; only a name that needs it may load it.
    loaded = _loaded_after(statement)
    assert not any(name == "flwr" or name.startswith("flwr.") for name in loaded)
    assert "privacy.dpsgd.train" not in loaded


def test_the_lazy_dpsgd_and_flower_names_resolve():
    import privacy.dpsgd
    import privacy.federated.flower

    assert privacy.dpsgd.dpsgd_train.__module__ == "privacy.dpsgd.train"
    assert privacy.federated.flower.run_sync_grid.__module__ == "privacy.federated.flower.sync"
    for package in (privacy.dpsgd, privacy.federated.flower):
        assert all(hasattr(package, name) for name in package.__all__)
