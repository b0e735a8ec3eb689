"""Lazy package attributes (PEP 562), shared by the packages whose imports must stay cheap.

It lives in the neutral base package because every package's ``__init__`` uses it, so that
``import dmdidc`` stays light and the ``dmdidc`` command starts without loading cvxpy,
matplotlib or scipy.stats.

* :func:`lazy_exports`: a package's ``__all__``, ``__getattr__`` and ``__dir__`` from one
  table, module -> the names it exports; each name is imported on first access;
* :func:`lazy_attributes`: the ``__getattr__`` and ``__dir__`` behind :func:`lazy_exports`;
* :func:`deprecated_attributes`: a module ``__getattr__`` that still serves the old names of
  renamed objects, with a ``DeprecationWarning`` on every access.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["deprecated_attributes", "lazy_attributes", "lazy_exports"]


def lazy_attributes(package: str, exports: Mapping[str, str], namespace: dict[str, Any], *,
                    submodules: bool = False
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` that import ``exports`` on first access.

    Parameters
    ----------
    package : str
        The package's name (for error messages and submodule look-up).
    exports : mapping of str to str
        Public name -> module defining it.
    namespace : dict
        The package's ``globals()``; a value is cached there after its first look-up.
    submodules : bool, default False
        Also resolve ``package.name`` as a submodule (``privacy.accounting``).

    Examples
    --------
    In a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_attributes(__name__, {"DMDidc": "dmdidc.estimator"},
                                               globals())
    """
    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif (submodules and not name.startswith("_")
              and importlib.util.find_spec(f"{package}.{name}") is not None):
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value      # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__


def lazy_exports(namespace: dict[str, Any], modules: Mapping[str, Iterable[str]], *,
                 eager: Iterable[str] = (), submodules: bool = False
                 ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__all__``, ``__getattr__`` and ``__dir__``: ``modules`` imported on first use.

    Parameters
    ----------
    namespace : dict
        The package's ``globals()``.
    modules : mapping of str to iterable of str
        Module -> the public names the package takes from it (each name from one module).
    eager : iterable of str, default ()
        Names the package binds itself (imported at once); they join ``__all__``.
    submodules : bool, default False
        Also resolve ``package.name`` as a submodule (``privacy.accounting``).

    Returns
    -------
    __all__ : list of str
        Sorted: the eager names and every name of ``modules``.
    __getattr__, __dir__
        As :func:`lazy_attributes`.

    Examples
    --------
    In a package's ``__init__.py``::

        __all__, __getattr__, __dir__ = lazy_exports(globals(), {
            "dmdidc.estimator": ["DMDidc", "ESTIMATORS"],
            "dmdidc.model": ["DelayedPlant", "as_plant"],
        })
    """
    exports: dict[str, str] = {}
    for module, names in modules.items():
        for name in names:
            if exports.setdefault(name, module) != module:
                raise ValueError(f"{name!r} is exported from both {exports[name]!r} and "
                                 f"{module!r}")
    return (sorted({*eager, *exports}),
            *lazy_attributes(namespace["__name__"], exports, namespace, submodules=submodules))


def deprecated_attributes(module: str, renamed: Mapping[str, tuple[str, str]], *,
                          fallback: Callable[[str], Any] | None = None
                          ) -> Callable[[str], Any]:
    """Module ``__getattr__`` (PEP 562) serving old names of renamed objects, with a warning.

    Every access to an old name (``module.old`` or ``from module import old``) issues a
    ``DeprecationWarning`` that gives the new name and why, and returns the new object; the
    old name is not cached in the module (each access warns) and stays out of ``__all__``.

    Parameters
    ----------
    module : str
        The module's name (``__name__``).
    renamed : mapping of str to (str, str)
        Old name -> (``"package.module.NewName"``, a note on why it was renamed).
    fallback : callable, optional
        The module's other ``__getattr__`` (e.g. from :func:`lazy_exports`), asked for
        every other name; without it other names raise ``AttributeError``.

    Examples
    --------
    >>> import warnings
    >>> getattr_ = deprecated_attributes("pkg", {"Old": ("_toolbox.lazy.lazy_exports", "why")})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = getattr_("Old")
    >>> value is lazy_exports, caught[0].category.__name__
    (True, 'DeprecationWarning')
    >>> print(caught[0].message)
    pkg.Old is deprecated: use _toolbox.lazy.lazy_exports (why)
    """
    def __getattr__(name: str) -> Any:
        if name in renamed:
            target, why = renamed[name]
            warnings.warn(f"{module}.{name} is deprecated: use {target} ({why})",
                          DeprecationWarning, stacklevel=2)
            where, _, attribute = target.rpartition(".")
            return getattr(importlib.import_module(where), attribute)
        if fallback is not None:
            return fallback(name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
