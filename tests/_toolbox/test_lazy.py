"""lazy_exports: one table, module -> names, gives a package's __all__, __getattr__ and __dir__."""

from __future__ import annotations

import pytest

from _toolbox.lazy import lazy_exports


def test_names_resolve_on_first_access_and_join_the_eager_ones():
    namespace = {"__name__": "pkg", "local": 1}
    names, getattr_, dir_ = lazy_exports(namespace, {"json": ["dumps", "loads"],
                                                     "math": ["pi"]}, eager=["local"])
    namespace["__all__"] = names
    assert names == ["dumps", "loads", "local", "pi"]
    assert "pi" not in namespace
    assert getattr_("pi") == pytest.approx(3.141592653589793)
    assert "pi" in namespace and set(names) <= set(dir_())
    with pytest.raises(AttributeError, match="'pkg' has no attribute 'tau'"):
        getattr_("tau")


def test_a_name_exported_from_two_modules_is_refused():
    with pytest.raises(ValueError, match="'pi'"):
        lazy_exports({"__name__": "pkg"}, {"math": ["pi"], "cmath": ["pi"]})
