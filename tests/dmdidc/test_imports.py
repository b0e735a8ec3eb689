"""``import dmdidc`` is light (PEP 562 lazy exports): it loads none of the heavy modules, and
the names still resolve on first use (issue 21 item 3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Loaded by no package import: statistics, the federation engine, the modelling layer, the
#: accounting library, the QP solvers and plotting come with the names that need them.
HEAVY = ("scipy.stats", "privacy.federated", "cvxpy", "dp_accounting", "daqp", "osqp",
         "clarabel", "matplotlib")


def _loaded_after(statement: str) -> set[str]:
    """Modules in ``sys.modules`` after ``statement`` in a fresh interpreter."""
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, check=True)
    return set(result.stdout.split())


@pytest.mark.parametrize("statement", [
    "import dmdidc", "import dmdidc, privacy, controllers, simulations",
    "import dmdidc; dmdidc.NotFittedError"])
def test_package_imports_load_no_heavy_module(statement):
    loaded = _loaded_after(statement)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "numpy" not in _loaded_after("import dmdidc")       # the errors need no numpy


#: A default fit of a small random plant (open loop, noisy: the IV refinement and the residual
#: checks run), in a fresh interpreter.
_FIT = ("import numpy as np; from dmdidc import DMDidc, DelayedPlant; "
        "rng = np.random.default_rng({seed}); n = 4; "
        "A_c = rng.standard_normal((n, n)) / 2; "
        "A_c -= (np.linalg.eigvals(A_c).real.max() + 0.5) * np.eye(n); "
        "plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, 2)), "
        "delay=rng.uniform(0.0, 0.25, 2), dt=0.1); "
        "U = rng.standard_normal((2, 3000)); X = plant.simulate(np.zeros(n), U); "
        "X = X + 0.01 * np.std(X) * rng.standard_normal(X.shape); "
        "model = DMDidc(max_delay=3).fit(X, U, dt=plant.dt); model.model_; "
        "assert model.diagnostics_ is not None")


@pytest.mark.parametrize("statement", ["from dmdidc import DMDidc", _FIT.format(seed=0),
                                       _FIT.format(seed=1)])
def test_the_estimator_and_its_default_fit_load_no_statistics_library(statement):
    # scipy.stats costs ~0.5 s (scipy.signal loads it too); the default fit needs neither
    loaded = _loaded_after(statement)
    assert not loaded & {*HEAVY, "scipy.signal"}, sorted(loaded & {*HEAVY, "scipy.signal"})


def test_the_mpc_loads_its_solver_not_cvxpy():
    loaded = _loaded_after("from controllers import DelayedMPC")
    assert "controllers.mpc" in loaded
    assert not loaded & {"cvxpy", "scipy.stats", "daqp", "osqp"}   # solvers load on set-up
    built = _loaded_after("import numpy as np; from controllers import DelayedMPC; "
                          "from dmdidc import DelayedPlant; "
                          "DelayedMPC(DelayedPlant(np.eye(1), np.ones((1, 1, 1)), 1.0), "
                          "horizon=3, u_min=-1, u_max=1)")
    assert "daqp" in built and "cvxpy" not in built


def test_lazy_names_resolve_on_first_use():
    import dmdidc

    assert {"DMDidc", "DelayedPlant", "SufficientStatistics"} <= set(dmdidc.__all__)
    assert set(dmdidc.__all__) <= set(dir(dmdidc))
    assert dmdidc.DelayedPlant.__module__ == "dmdidc.model"
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        dmdidc.not_a_name  # noqa: B018
