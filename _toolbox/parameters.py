"""Declared parameter constraints, checked in one place (scikit-learn's ``_parameter_constraints``).

An estimator lists, per constructor parameter, what it accepts::

    _parameter_constraints = {"max_delay": [Interval(int, 0, None), None],
                              "estimator": [Options("auto", "ls", "iv")]}

:func:`validate_parameters` raises a :class:`~_toolbox.errors.ParameterError` that names the
parameter, the value and everything accepted; :func:`constructor_parameters` reads the parameter
names from the constructor's signature, so ``get_params`` never lists a name twice.
"""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass
from typing import Any

from _toolbox.errors import ParameterError

__all__ = ["Interval", "Options", "constructor_parameters", "validate_parameters"]


@dataclass(frozen=True)
class Options:
    """One of the listed values (strings, usually)."""

    values: tuple

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", tuple(values))

    def accepts(self, value: Any) -> bool:
        return isinstance(value, (str, bool, type(None))) and value in self.values

    def __str__(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Interval:
    """A real (``kind=float``) or integer (``kind=int``) number in ``[low, high]``.

    ``low`` / ``high`` may be ``None`` (unbounded); ``open`` names the open ends
    (``"low"``, ``"high"``, ``"both"`` or ``None``).
    """

    kind: type
    low: float | None
    high: float | None
    open: str | None = None

    def accepts(self, value: Any) -> bool:
        base = numbers.Integral if self.kind is int else numbers.Real
        if isinstance(value, bool) or not isinstance(value, base):
            return False
        if self.kind is not int:
            try:
                value = float(value)       # a real parameter is used as a float
            except OverflowError:          # an integer beyond the float range
                return False
        if value != value or value in (float("inf"), float("-inf")):
            return False
        low_open = self.open in ("low", "both")
        high_open = self.open in ("high", "both")
        if self.low is not None and (value <= self.low if low_open else value < self.low):
            return False
        return not (self.high is not None
                    and (value >= self.high if high_open else value > self.high))

    def __str__(self) -> str:
        name = "an integer" if self.kind is int else "a real number"
        low_open = self.open in ("low", "both")
        high_open = self.open in ("high", "both")
        if self.low is not None and self.high is not None:
            return (f"{name} in {'(' if low_open else '['}{self.low:g}, {self.high:g}"
                    f"{')' if high_open else ']'}")
        if self.low is not None:
            return f"{name} {'>' if low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{name} {'<' if high_open else '<='} {self.high:g}"
        return name


def _accepts(constraint: Any, value: Any) -> bool:
    if constraint is None:
        return value is None
    return constraint.accepts(value)


def validate_parameters(owner: str, params: dict[str, Any],
                        constraints: dict[str, list[Any]]) -> None:
    """Raise :class:`ParameterError` for the first parameter no constraint accepts.

    Parameters
    ----------
    owner : str
        Name of the class, for the message.
    params : dict
        Parameter values (``get_params()``).
    constraints : dict
        Per parameter, a list of :class:`Options`, :class:`Interval` or ``None`` (the value
        ``None``); a parameter absent from the table is not checked.

    Raises
    ------
    ParameterError
        ``"DMDidc: estimator must be one of 'ls', 'iv'; got 'lsq'"``.
    """
    for name, value in params.items():
        allowed = constraints.get(name)
        if allowed is None or any(_accepts(c, value) for c in allowed):
            continue
        accepted = " or ".join("None" if c is None else str(c) for c in allowed)
        raise ParameterError(f"{owner}: {name} must be {accepted}; got {value!r}")


def constructor_parameters(cls: type) -> tuple[str, ...]:
    """Names of the keyword parameters of ``cls.__init__`` (``self`` and ``*args`` excluded)."""
    signature = inspect.signature(cls.__init__)
    return tuple(name for name, p in signature.parameters.items()
                 if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
