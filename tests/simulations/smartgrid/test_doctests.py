"""The docstring examples of the smart-grid modules run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["config", "household", "occupancy", "operation", "profiles", "reconstruction",
           "sweep", "private_identification", "tracking", "fleet_mpc", "demand_response",
           "case_study", "study_sweep", "attack_study", "attack_windows"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"simulations.smartgrid.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
