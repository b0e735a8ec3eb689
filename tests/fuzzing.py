"""The guard every fuzz test shares: a call either refuses its input with a toolbox
``ValueError`` or returns a finite result, within a time budget.

Use :func:`check_call` inside a hypothesis test::

    check_call(random_excitation, n_inputs, n_steps, rng=0)
    check_call(lambda: DMDidc().fit(X, U, dt=1.0), finite=lambda est: est.A_d)

and :data:`FUZZ_SETTINGS` (bounded, derandomized examples: the suite stays fast and
reproducible) and :data:`HOSTILE_SCALARS` / :func:`hostile_arrays` for the values.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from _toolbox.errors import ToolboxError

__all__ = ["FUZZ_SETTINGS", "HOSTILE_SCALARS", "CallTimeout", "check_call", "time_limit",
           "hostile_arrays", "all_finite"]

#: Bounded and derandomized: the same examples on every run (CI reproduces a failure), few
#: enough that each fuzz test takes seconds; our own timeout replaces hypothesis' deadline.
#: ``FUZZ_EXAMPLES=1000 pytest tests/.../test_fuzz.py`` searches deeper by hand.
FUZZ_SETTINGS = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 30)), deadline=None,
                         derandomize=True, database=None,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                HealthCheck.data_too_large])

#: Scalars that break naive code: non-finite, extreme, zero, negative, wrong types.
HOSTILE_SCALARS = st.sampled_from([
    float("nan"), float("inf"), -float("inf"), 1e308, -1e308, 1e-308, 5e-324, 0, 0.0, -1,
    -0.5, 0.5, 1, 2, 10 ** 6, 10 ** 12, 10 ** 30, 10 ** 400, True, False, 1 + 1j, 1j,
    np.float32(1.5), np.int64(3), "1", None, [], [1.0], (), {}])


class CallTimeout(BaseException):
    """The call ran past its budget (a ``BaseException``: no ``except Exception`` in the code
    under test can swallow it)."""


@contextmanager
def time_limit(seconds: float):
    """Raise :class:`CallTimeout` in the main thread after ``seconds`` (SIGALRM, so only Python
    code is interrupted: a hang inside one C call surfaces when it returns)."""
    def interrupt(signum, frame):
        raise CallTimeout(f"call still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def all_finite(value: Any) -> bool:
    """Every number in ``value`` (arrays, scalars, sequences, mappings, dataclasses) is finite;
    strings, booleans and ``None`` count as finite."""
    if value is None or isinstance(value, (str, bool, np.bool_)):
        return True
    if isinstance(value, (list, tuple)):
        return all(all_finite(item) for item in value)
    if isinstance(value, dict):
        return all(all_finite(item) for item in value.values())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(all_finite(getattr(value, f.name)) for f in dataclasses.fields(value))
    array = np.asarray(value)
    if array.dtype == object:
        return True          # an object we do not look into (the caller extracts numbers)
    return bool(np.all(np.isfinite(array))) if np.issubdtype(array.dtype, np.number) else True


def check_call(func: Callable, *args: Any, finite: Callable[[Any], Any] | None = None,
               seconds: float = 10.0, allowed: tuple[type[BaseException], ...] = (),
               **kwargs: Any) -> Any:
    """Call ``func(*args, **kwargs)``: return its result after checking that ``finite(result)``
    (default: the result itself) is finite, or ``None`` if it raised a toolbox ``ValueError``
    (or one of the toolbox errors in ``allowed``, e.g. ``SolverError`` where the contract says
    a solver may fail on valid input).

    Any other exception, a non-finite result or a call longer than ``seconds`` fails the test
    (warnings are silenced: hostile data legitimately warn).
    """
    try:
        with warnings.catch_warnings(), time_limit(seconds):
            warnings.simplefilter("ignore")
            result = func(*args, **kwargs)
            checked = finite(result) if finite is not None else result
    except CallTimeout:
        pytest.fail(f"{_name(func)} did not return within {seconds} s")
    except Exception as exc:
        if isinstance(exc, ToolboxError) and isinstance(exc, (ValueError, *allowed)):
            return None
        pytest.fail(f"{_name(func)} raised {type(exc).__name__}: {exc} (expected a toolbox "
                    f"ValueError or a finite result)")
    if not all_finite(checked):
        pytest.fail(f"{_name(func)} returned a non-finite result: {checked!r}")
    return result


def _name(func: Callable) -> str:
    return getattr(func, "__qualname__", repr(func))


def hostile_arrays(valid: np.ndarray) -> st.SearchStrategy:
    """Variants of a valid array: the array itself, one hostile entry, scaled to the edge of
    the float range, wrong shape (transposed, flattened, extra axis, empty), other dtypes
    (bool, int, complex, object), a nested list."""
    valid = np.asarray(valid, dtype=float)

    def with_entry(value: float) -> np.ndarray:
        out = valid.astype(complex if isinstance(value, complex) else float)
        if out.size:
            out.flat[0] = value
        return out

    entries = st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -1e308, 1e-308, 1j]).map(
        with_entry)
    return st.one_of(
        st.just(valid), entries,
        st.sampled_from([1e300, 1e-300, -1e200, 0.0]).map(lambda s: valid * s),
        st.sampled_from(["T", "flat", "axis", "empty", "bool", "int", "complex", "complex0",
                         "object", "list"]).map(lambda kind: _reshaped(valid, kind)))


def _reshaped(valid: np.ndarray, kind: str) -> Any:
    if kind == "T":
        return valid.T
    if kind == "flat":
        return valid.ravel()
    if kind == "axis":
        return valid[None]
    if kind == "empty":
        return valid[..., :0]
    if kind == "bool":
        return valid > 0
    if kind == "int":
        return np.round(valid).astype(int)
    if kind == "complex":
        return valid + 1j
    if kind == "complex0":
        return valid + 0j                 # imaginary part exactly zero: accepted as real
    if kind == "object":
        return np.array(valid.tolist() + [None] if valid.ndim == 1 else [None], dtype=object)
    return valid.tolist()
