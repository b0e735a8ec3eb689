"""Quieting a library's logger for the duration of a call.

Several engines we call log a line per event that we report better ourselves: pandapower an
ERROR per power-flow step that did not converge (the grid raises one error naming them all),
dp_accounting (through absl) a warning per Renyi order whose series it leaves out (still a
bound), our own federated server a line per rejected reply (a poisoning study rejects
thousands).  :func:`quiet_logger` raises the logger's level and restores it however the call
ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

__all__ = ["quiet_logger"]


@contextlib.contextmanager
def quiet_logger(name: str, level: int = logging.ERROR) -> Iterator[logging.Logger]:
    """Within the block, the logger ``name`` drops records below ``level`` (or below its own
    level, if that is higher); its own level is restored on exit, also when the block raises.

    Examples
    --------
    >>> import logging
    >>> with quiet_logger("example.engine", logging.CRITICAL) as logger:
    ...     logger.level == logging.CRITICAL
    True
    >>> logging.getLogger("example.engine").level == logging.NOTSET
    True
    """
    logger = logging.getLogger(name)
    previous = logger.level
    logger.setLevel(max(level, previous))     # never louder than the caller had it
    try:
        yield logger
    finally:
        logger.setLevel(previous)
