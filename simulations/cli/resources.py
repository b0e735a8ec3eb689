"""Resource checks of the command line: a request is refused, with its estimated memory and the
accepted range, before anything is allocated (a ``MemoryError`` or an hour of swapping is not
an answer).

The estimates count the float64 arrays a request allocates at its peak, with a small factor for
the copies numpy makes; the budget is half of the memory the machine has available now.
"""

from __future__ import annotations

import os

__all__ = ["memory_budget", "check_memory", "format_bytes"]

_FALLBACK_BUDGET = 4 * 2**30          # when the system does not say (bytes)


def memory_budget() -> int:
    """Half of the memory available now, in bytes (4 GiB if the system does not say)."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return _FALLBACK_BUDGET
    return max(available // 2, 1) if available > 0 else _FALLBACK_BUDGET


def format_bytes(count: float) -> str:
    """``count`` bytes as ``'12.3 GiB'``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(count) < 1024 or unit == "PiB":
            return f"{count:.3g} {unit}" if unit != "B" else f"{count:.0f} B"
        count /= 1024
    raise AssertionError("unreachable")


def check_memory(option: str, value: int, needed: float, accepted: str,
                 budget: int | None = None) -> None:
    """Refuse ``option value`` when its estimated memory ``needed`` (bytes) exceeds the budget.

    Parameters
    ----------
    option : str
        The option, as the user wrote it (``"--steps"``).
    value : int
        Its value.
    needed : float
        The estimated peak memory of the request, in bytes.
    accepted : str
        The accepted range of the option for this data (``"1 .. 2.1e8"``).
    budget : int, optional
        The limit in bytes (default: :func:`memory_budget`).

    Raises
    ------
    ParameterError
        Naming the option, the estimate, the budget and the accepted range.

    Examples
    --------
    >>> check_memory("--steps", 10, 640.0, "1 .. 1000", budget=2**20)      # fits: no error
    >>> check_memory("--steps", 10**9, 6.4e10, "1 .. 1000", budget=2**20)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    _toolbox.errors.ParameterError: --steps 1000000000 needs about 59.6 GiB of memory; ...
    """
    from _toolbox.errors import ParameterError

    budget = memory_budget() if budget is None else budget
    if needed > budget:
        raise ParameterError(f"{option} {value} needs about {format_bytes(needed)} of memory; "
                             f"the budget is {format_bytes(budget)} (half of the memory "
                             f"available): accepted {option} {accepted}")
