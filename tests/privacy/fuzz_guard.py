"""A small guard for the privacy fuzz tests: a toolbox ValueError or a sane result, in time.

``outcome(call, seconds)`` runs ``call`` under a SIGALRM deadline and returns its value, or
``None`` when it raised a toolbox ``ValueError`` (the only accepted failure: it names the
argument).  Any other exception, or running past the deadline, fails the test with the call's
description.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tests.fuzzing import check_call


def outcome(call: Callable[[], Any], seconds: float, what: str) -> Any:
    """The value of ``call()``, or None for a toolbox ValueError; fails on anything else (the
    shared guard :func:`tests.fuzzing.check_call`; privacy answers may be inf, so finiteness
    is left to :func:`assert_not_nan` and :func:`assert_bound`)."""
    call.__qualname__ = what                   # names the call in a failure
    return check_call(call, seconds=seconds, finite=lambda _: 0.0)


def assert_not_nan(value: Any, what: str) -> None:
    """No NaN anywhere in a numeric result (``+-inf`` only where documented)."""
    array = np.asarray(value, dtype=float)
    assert not np.any(np.isnan(array)), f"{what} returned NaN: {value!r}"


def assert_bound(value: float, low: float, high: float, what: str) -> None:
    """An accountant's answer: a float in ``[low, high]`` (``high`` may be inf), never NaN."""
    assert isinstance(value, float) and not math.isnan(value), f"{what} returned {value!r}"
    assert low <= value <= high, f"{what} returned {value!r} outside [{low}, {high}]"
