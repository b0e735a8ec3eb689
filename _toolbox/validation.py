"""Small argument checks shared by every package (messages name argument, value and range).

Resource limit: :func:`check_allocation` refuses, before anything is allocated, a request whose
arrays would exceed :data:`ALLOCATION_LIMIT_BYTES` (so a huge size is a ``ParameterError``
naming the argument, not a ``MemoryError`` or a machine that swaps).
"""

from __future__ import annotations

import math
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
    "check_allocation",
    "ALLOCATION_LIMIT_BYTES",
    "check_magnitude",
    "DATA_MAGNITUDE_LIMIT",
    "check_scalar_or_vector",
    "check_probability",
    "as_generator",
    "read_only",
]


def _check_real(name: str, value: Any) -> float:
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()        # a 0-d array (what np.load returns for a saved scalar)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a real number; got {value!r} of type "
                             f"{type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:              # an integer beyond the float range
        raise ParameterError(f"{name} must be finite; got an integer of {len(str(value))} "
                             f"digits") from None
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
    """Convert to an ndarray and reject NaN/inf, complex entries and a wrong number of
    dimensions.

    A complex array whose imaginary parts are all exactly zero is accepted (as its real part);
    any other complex entry raises ``ParameterError`` instead of being cast away.
    """
    try:
        array = np.asarray(value)
        if np.iscomplexobj(array):
            if np.any(array.imag != 0):
                raise ParameterError(f"{name} has complex entries (largest imaginary part "
                                     f"{float(np.max(np.abs(array.imag))):.3g}); it must be "
                                     f"real")
            array = array.real
        array = np.asarray(array, dtype=dtype)
    except OverflowError as exc:          # a Python integer beyond the float range
        raise NonFiniteError(f"{name} has an entry beyond the float range ({exc}); all "
                             f"entries must be finite") from exc
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ParameterError):
            raise
        raise DimensionError(f"{name} must be a numeric array; got {type(value).__name__} "
                             f"({exc})") from exc
    if ndim is not None and array.ndim != ndim:
        raise DimensionError(f"{name} must be {ndim}-dimensional; got shape {array.shape}")
    if not np.isfinite(array).all():      # the method: ~3 us less per call than np.all
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise NonFiniteError(f"{name} contains {bad} NaN or infinite entries; all entries "
                             f"must be finite")
    return array


#: Largest array, in bytes, that a request may allocate (:func:`check_allocation`): 4 GiB.
#: A module attribute so that a machine with more memory may raise it.
ALLOCATION_LIMIT_BYTES = 4 * 2 ** 30


def _bytes(size: int) -> str:
    if size >= 2 ** 1000:               # beyond what a float (and any machine) holds
        return "more than 1e300 B"
    for power, unit in enumerate(("B", "KiB", "MiB", "GiB", "TiB")):
        if size < 1024 ** (power + 1):
            return f"{size / 1024 ** power:.3g} {unit}"
    return f"{size / 1024 ** 5:.3g} PiB"


def check_allocation(name: str, shape: tuple[int, ...], dtype: Any = float, *,
                     accepted: str = "") -> int:
    """Refuse, before allocating, an array larger than :data:`ALLOCATION_LIMIT_BYTES`.

    Parameters
    ----------
    name : str
        The argument (and its value) that asks for the array, e.g. ``"max_delay = 1000000"``.
    shape : tuple of int
        The array's shape (exact Python integers: no overflow however large).
    dtype : numpy dtype, default float
    accepted : str, optional
        The accepted range of the argument, appended to the message.

    Returns
    -------
    int
        The array's size in bytes.

    Raises
    ------
    ParameterError
        The array would exceed the limit; the message gives its shape and size and the limit.

    Examples
    --------
    >>> check_allocation("n_steps = 1000", (2, 1000))
    16000
    >>> check_allocation("n_steps = 10**12", (2, 10**12))
    Traceback (most recent call last):
    ...
    _toolbox.errors.ParameterError: n_steps = 10**12 needs an array of shape (2, 1000000000000) ...
    """
    size = math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
    if size > ALLOCATION_LIMIT_BYTES:
        raise ParameterError(
            f"{name} needs an array of shape {tuple(int(d) for d in shape)} ({_bytes(size)} of "
            f"{np.dtype(dtype).name}), above the limit of {_bytes(ALLOCATION_LIMIT_BYTES)} "
            f"(_toolbox.validation.ALLOCATION_LIMIT_BYTES)" + (f"; {accepted}" if accepted
                                                               else ""))
    return size


#: Largest magnitude of a data entry any package accepts: sums of products of entries (a
#: regression's moments, a squared gradient norm) overflow float64 (1.8e308) for entries near
#: 1e154; 1e100 leaves room for any sample count or dimension.
DATA_MAGNITUDE_LIMIT = 1e100


def check_magnitude(name: str, largest: float, consequence: str, remedy: str) -> None:
    """Refuse data whose largest entry magnitude exceeds :data:`DATA_MAGNITUDE_LIMIT`.

    Parameters
    ----------
    name : str
        The argument holding the data.
    largest : float
        Its largest ``|entry|`` (the caller computes it, as cheaply as its layout allows).
    consequence : str
        What would overflow beyond the limit.
    remedy : str
        What the user can do instead.

    Raises
    ------
    NonFiniteError
        ``largest`` is above the limit (or NaN); the message names the argument, the
        magnitude, the limit, the consequence and the remedy.

    Examples
    --------
    >>> check_magnitude("X", 3.0, "sums would overflow", "rescale X")
    >>> check_magnitude("X", 1e160, "sums would overflow", "rescale X")
    Traceback (most recent call last):
    ...
    _toolbox.errors.NonFiniteError: X has an entry of magnitude 1e+160, beyond 1e+100: ...
    """
    if not largest <= DATA_MAGNITUDE_LIMIT:
        raise NonFiniteError(f"{name} has an entry of magnitude {largest:.3g}, beyond "
                             f"{DATA_MAGNITUDE_LIMIT:.0e}: {consequence}; {remedy}")


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
