"""Small argument checks shared by every package (messages name argument, value and range)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError

__all__ = [
    "check_positive",
    "check_nonnegative",
    "check_in_interval",
    "check_integer",
    "check_finite_array",
    "check_scalar_or_vector",
    "check_probability",
    "as_generator",
    "read_only",
]


def _check_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a real number; got {value!r} of type "
                             f"{type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ParameterError(f"{name} must be finite; got {value!r}")
    return value


def check_positive(name: str, value: Any) -> float:
    """Return ``value`` as float, or raise ``ParameterError`` unless it is finite and > 0."""
    value = _check_real(name, value)
    if value <= 0:
        raise ParameterError(f"{name} must be > 0; got {value!r}")
    return value


def check_nonnegative(name: str, value: Any) -> float:
    """Return ``value`` as float, or raise ``ParameterError`` unless it is finite and >= 0."""
    value = _check_real(name, value)
    if value < 0:
        raise ParameterError(f"{name} must be >= 0; got {value!r}")
    return value


def check_in_interval(name: str, value: Any, low: float, high: float, *,
                      low_open: bool = False, high_open: bool = False) -> float:
    """Return ``value`` as float if it lies in the interval, else raise ``ParameterError``."""
    value = _check_real(name, value)
    below = value <= low if low_open else value < low
    above = value >= high if high_open else value > high
    if below or above:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ParameterError(f"{name} must lie in {interval}; got {value!r}")
    return value


def check_probability(name: str, value: Any, *, allow_zero: bool = True,
                      allow_one: bool = True) -> float:
    """Check a probability in [0, 1] (ends optionally excluded)."""
    return check_in_interval(name, value, 0.0, 1.0, low_open=not allow_zero,
                             high_open=not allow_one)


def check_integer(name: str, value: Any, *, minimum: int | None = None) -> int:
    """Return ``value`` as int if it is an integer (not bool) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(f"{name} must be an integer; got {value!r} of type "
                             f"{type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}; got {value}")
    return value


def check_finite_array(name: str, value: Any, *, ndim: int | None = None,
                       dtype: type = float) -> np.ndarray:
    """Convert to an ndarray and reject NaN/inf and a wrong number of dimensions."""
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise DimensionError(f"{name} must be a numeric array; got {type(value).__name__} "
                             f"({exc})") from exc
    if ndim is not None and array.ndim != ndim:
        raise DimensionError(f"{name} must be {ndim}-dimensional; got shape {array.shape}")
    if not np.isfinite(array).all():      # the method: ~3 us less per call than np.all
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise NonFiniteError(f"{name} contains {bad} NaN or infinite entries; all entries "
                             f"must be finite")
    return array


def check_scalar_or_vector(name: str, value: Any, size: int) -> np.ndarray:
    """A finite scalar (repeated ``size`` times) or a finite vector of shape ``(size,)``."""
    array = check_finite_array(name, value)
    if array.ndim == 0:
        array = np.full(size, float(array))
    if array.shape != (size,):
        raise DimensionError(f"{name} must be a scalar or have shape ({size},); got shape "
                             f"{array.shape}")
    return array


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """Turn ``rng`` (Generator, seed or None) into a ``numpy.random.Generator``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise ParameterError(f"rng must be a numpy.random.Generator, an integer seed or None; "
                         f"got {type(rng).__name__}")


def read_only(array: Any, *, copy: bool = True) -> np.ndarray | None:
    """Float array flagged read-only (a copy unless ``copy=False``); ``None`` passes through.

    Immutable value objects (plants, results) hand out such arrays so that nobody can change
    them behind the object's back.
    """
    if array is None:
        return None
    array = np.array(array, dtype=float, copy=True) if copy else np.asarray(array, dtype=float)
    array.flags.writeable = False
    return array
