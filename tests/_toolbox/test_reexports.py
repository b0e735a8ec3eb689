"""The neutral base's names are re-exported, as the same objects, from their former homes."""

from __future__ import annotations

import importlib

import pytest

import _toolbox.errors

HOMES = {
    "privacy.errors": "_toolbox.errors",
    "privacy.validation": "_toolbox.validation",
    "privacy.lazy": "_toolbox.lazy",
    "privacy.plotting": "_toolbox.plotting",
    "controllers.errors": "_toolbox.errors",
    "dmdidc.errors": "_toolbox.errors",
}


@pytest.mark.parametrize("old, new", sorted(HOMES.items()))
def test_former_homes_re_export_the_same_objects(old, new):
    alias, module = importlib.import_module(old), importlib.import_module(new)
    for name in alias.__all__:
        assert getattr(alias, name) is getattr(module, name), name


def test_one_hierarchy_compatible_with_builtins():
    errors = _toolbox.errors
    for name in errors.__all__:
        cls = getattr(errors, name)
        if issubclass(cls, Warning):          # warnings are the user's kind, not errors
            assert issubclass(cls, UserWarning)
            continue
        assert issubclass(cls, errors.ToolboxError)
    assert issubclass(errors.ParameterError, ValueError)
    assert issubclass(errors.NotFittedError, AttributeError)
    assert issubclass(errors.SolverError, RuntimeError)
