"""A small guard for the privacy fuzz tests: a toolbox ValueError or a sane result, in time.

``outcome(call, seconds)`` runs ``call`` under a SIGALRM deadline and returns its value, or
``None`` when it raised a toolbox ``ValueError`` (the only accepted failure: it names the
argument).  Any other exception, or running past the deadline, fails the test with the call's
description.  (A shared ``tests/fuzzing.py`` was not in this tree when the suite was written.)
"""

from __future__ import annotations

import math
import signal
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from _toolbox.errors import ToolboxError


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` swallows it."""


def _alarm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _Hang


def outcome(call: Callable[[], Any], seconds: float, what: str) -> Any:
    """The value of ``call()``, or None for a toolbox ValueError; fails on anything else."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return call()
    except _Hang:
        pytest.fail(f"{what} ran longer than {seconds} s")
    except ToolboxError as exc:
        if not isinstance(exc, ValueError):
            pytest.fail(f"{what} raised {type(exc).__name__} (not a ValueError): {exc}")
        return None
    except Exception as exc:  # noqa: BLE001 - the point of the guard
        pytest.fail(f"{what} raised {type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def assert_not_nan(value: Any, what: str) -> None:
    """No NaN anywhere in a numeric result (``+-inf`` only where documented)."""
    array = np.asarray(value, dtype=float)
    assert not np.any(np.isnan(array)), f"{what} returned NaN: {value!r}"


def assert_bound(value: float, low: float, high: float, what: str) -> None:
    """An accountant's answer: a float in ``[low, high]`` (``high`` may be inf), never NaN."""
    assert isinstance(value, float) and not math.isnan(value), f"{what} returned {value!r}"
    assert low <= value <= high, f"{what} returned {value!r} outside [{low}, {high}]"
