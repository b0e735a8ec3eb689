"""The module paths of the flat dmdidc layout still import the same objects (users' imports and
pickles), and the packages that replaced modules re-export their names."""

from __future__ import annotations

import importlib
import pickle

import pytest

#: old module -> module that now defines its names
MOVED = {
    "dmdidc.instrumental": "dmdidc.regression.instrumental",
    "dmdidc.robust": "dmdidc.regression.robust",
    "dmdidc.blocks": "dmdidc.inference.blocks",
    "dmdidc.selection": "dmdidc.inference.selection",
    "dmdidc.recovery": "dmdidc.inference.recovery",
    "dmdidc.intervals": "dmdidc.inference.intervals",
    "dmdidc.diagnostics": "dmdidc.inference.diagnostics",
    "dmdidc.statistics_accumulator": "dmdidc.statistics.accumulator",
    "dmdidc.from_statistics": "dmdidc.statistics.fit",
    "dmdidc.sensitivity": "dmdidc.private.sensitivity",
    "dmdidc.privatization": "dmdidc.private.release",
    "dmdidc.federated_identification": "dmdidc.federated.identification",
}

#: modules that became packages, and names they exported as modules
PACKAGES = {
    "dmdidc.regression": ["RegressionSolution", "GramAccumulator", "QRAccumulator",
                          "make_accumulator", "lagged_inputs", "assemble_solution",
                          "gram_factors", "solve_normal_equations", "regression_blocks"],
    "dmdidc.statistics": ["SufficientStatistics", "StatisticsLayout", "INSTRUMENT_KINDS"],
    "dmdidc.federated": ["combine_statistics", "statistics_posterior", "statistics_box",
                         "release_noises"],
}


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_old_module_paths_re_export_the_same_objects(old, new):
    alias, module = importlib.import_module(old), importlib.import_module(new)
    assert alias.__all__ and set(alias.__all__) <= set(module.__all__)
    for name in alias.__all__:
        assert getattr(alias, name) is getattr(module, name), name


@pytest.mark.parametrize("package, names", sorted(PACKAGES.items()))
def test_packages_re_export_what_the_modules_exported(package, names):
    module = importlib.import_module(package)
    for name in names:
        assert name in module.__all__ and name in dir(module), name
        assert getattr(module, name) is not None


def test_every_package_export_resolves():
    for package in ("dmdidc", "dmdidc.regression", "dmdidc.inference", "dmdidc.statistics",
                    "dmdidc.private", "dmdidc.federated"):
        module = importlib.import_module(package)
        for name in module.__all__:
            assert getattr(module, name) is not None, (package, name)


def test_pickles_naming_the_old_paths_still_load():
    from dmdidc.statistics import StatisticsLayout

    layout = StatisticsLayout(1, 1, 2, None, 0, 0)
    data = pickle.dumps(layout, protocol=0)        # text protocol: module names unframed
    old = data.replace(b"dmdidc.statistics.layout", b"dmdidc.statistics")
    assert old != data and pickle.loads(old) == layout
