"""Robust aggregation for the FedAvg family: coordinate-wise median, trimmed mean, norm bounding.

The server of a gradient method averages its clients' updates; one client can move a mean
arbitrarily far, and the declared-bound screen of
:mod:`privacy.federated.validation` only stops values no honest client could send.  These rules
bound what a minority of clients inside their bounds (e.g. with flipped updates) can do:

* ``"median"``: the coordinate-wise median of the updates (unweighted; breakdown point 1/2);
* ``"trimmed"``: per coordinate, drop the ``floor(trim n)`` largest and smallest values and
  average the rest (unweighted; withstands up to ``floor(trim n)`` bad clients);
* ``"norm"``: clip every update to the median update norm of the round, then the usual
  weighted mean (a client can push at most as hard as a typical one).

Every rule is a function of the released (noisy) updates only, so it is post-processing: the
clients' privacy accounting is unchanged.  It changes the noise of the aggregate: the median of
``n`` Gaussian noises has about ``pi / 2`` times the variance of their mean, the trimmed mean
a little more than the mean; under heavy-tailed (SaS) release noise the median and the
trimmed mean are *less* noisy than the mean.  With data shares far from equal the unweighted
rules give small clients more say than the mean does.

Examples
--------
>>> import numpy as np
>>> updates = np.array([[1.0, 2.0], [1.2, 1.8], [0.8, 2.2], [1e6, -1e6]])
>>> weights = np.full(4, 0.25)
>>> combine(updates, weights, "median")
array([1.1, 1.9])
>>> combine(updates, weights, "trimmed", trim=0.25)
array([1.1, 1.9])
>>> bool(np.linalg.norm(combine(updates, weights, "norm")) < 3.0)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import check_in_interval
from privacy._clipping import row_norms, split_norms

__all__ = ["ROBUST_RULES", "check_robust", "combine"]

#: The robust rules (``None``: the weighted mean).
ROBUST_RULES = ("median", "trimmed", "norm")


def check_robust(robust: Any, trim: float) -> tuple[str | None, float]:
    """``(robust, trim)`` when ``robust`` is ``None`` or one of :data:`ROBUST_RULES` and
    ``0 <= trim < 0.5``.

    Raises
    ------
    ParameterError
        An unknown rule or a trim fraction outside ``[0, 0.5)``.
    """
    if robust is not None and robust not in ROBUST_RULES:
        raise ParameterError(f"robust must be None or one of {ROBUST_RULES}; got {robust!r}")
    return robust, check_in_interval("trim", trim, 0.0, 0.5, high_open=True)


def combine(values: np.ndarray, weights: np.ndarray, robust: str | None, *,
            trim: float = 0.2) -> np.ndarray:
    """Aggregate ``values`` (one row per client) with weights summing to 1, or robustly.

    Parameters
    ----------
    values : ndarray, shape (n, ...)
    weights : ndarray, shape (n,)
        Normalized data shares (used by the mean and by ``"norm"``).
    robust : {None, "median", "trimmed", "norm"}
    trim : float, default 0.2
        Fraction trimmed at each end by ``"trimmed"``.

    Returns
    -------
    ndarray, shape values.shape[1:]
    """
    if robust is None:
        return np.tensordot(weights, values, axes=1)
    if robust == "median":
        return np.median(values, axis=0)
    if robust == "trimmed":
        cut = int(np.floor(trim * len(values)))
        ordered = np.sort(values, axis=0)
        return ordered[cut:len(values) - cut].mean(axis=0)
    flat = values.reshape(len(values), -1)
    norms = row_norms(flat)
    if np.all(np.isfinite(norms)):
        limit = np.median(norms)
        scale = np.minimum(1.0, limit / np.maximum(norms, np.finfo(float).tiny))
    else:
        scale = _scale_to_median(flat)
    return np.tensordot(weights * scale, values, axes=1)


def _scale_to_median(flat: np.ndarray) -> np.ndarray:
    """``min(1, median / ||row||)`` for norms beyond the float range, as ``m 2^e`` pairs."""
    m, e = split_norms(flat)
    with np.errstate(divide="ignore"):
        order = np.argsort(np.log(m) + e * np.log(2.0))          # zero rows: m = 0, -inf
    low, high = order[(len(m) - 1) // 2], order[len(m) // 2]
    top = max(e[low], e[high])
    limit = (np.ldexp(m[low], e[low] - top) + np.ldexp(m[high], e[high] - top)) / 2.0
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        return np.minimum(1.0, np.ldexp(limit / m, top - e))
