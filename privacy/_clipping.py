"""Overflow-safe l2 norms and clipping shared by DP-SGD and the federated clients.

A record whose entries reach about ``1e155`` overflows its squared norm (and one near
``1e-155`` underflows it); the textbook factor ``min(1, C / ||v||)`` then becomes ``0`` and the
record is silently dropped instead of clipped to ``C`` (or a tiny record escapes a tiny ``C``).
These helpers keep the textbook arithmetic, bit for bit, on rows whose squared norm is a normal
float, and elsewhere first divide each row by the power of two of its largest entry (exact).
"""

from __future__ import annotations

import numpy as np

_TINY = np.finfo(float).tiny


def _squares(v: np.ndarray) -> np.ndarray:
    """Squared norms along the last axis, ``inf`` (or subnormal) where they leave the range.

    Summed as :func:`numpy.linalg.norm` sums them, so ``sqrt`` of it is that norm bit for bit.
    """
    with np.errstate(over="ignore", under="ignore"):
        return np.add.reduce(v * v, axis=-1)


def _reliable(v: np.ndarray, squared: np.ndarray) -> np.ndarray:
    """Where a squared norm neither overflowed nor lost bits to underflow (or the row is 0).

    A square of ``0`` is trusted only for a zero row: ``[3e-170, 4e-170]`` also squares to 0,
    and under a bound of ``1e-175`` would escape clipping.
    """
    ok = np.isfinite(squared) & (squared >= _TINY)
    zero = ~ok & (squared == 0.0)
    ok[zero] = ~np.any(v[zero], axis=-1)
    return ok


def split_norms(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(m, e)`` with ``||v||_2 = m 2^e`` per row, ``m`` in ``[1/2, sqrt(P)]`` (0 for zero rows).

    Dividing a row by the power of two of its largest entry is exact, so the only roundings
    are the textbook ones of the squares, their sum and the square root.
    """
    _, e = np.frexp(np.max(np.abs(v), axis=-1, initial=0.0))
    with np.errstate(under="ignore"):
        unit = np.ldexp(v, -e[..., None])
    return np.sqrt(_squares(unit)), e


def log_row_norms(v: np.ndarray) -> np.ndarray:
    """``log ||v||_2`` along the last axis without overflow (``-inf`` for zero rows)."""
    m, e = split_norms(np.asarray(v, dtype=float))
    with np.errstate(divide="ignore"):
        return np.log(m) + e * np.log(2.0)


def row_norms(v: np.ndarray) -> np.ndarray:
    """``||v||_2`` along the last axis: :func:`numpy.linalg.norm` where its squares stay in
    range, the largest entry factored out elsewhere (``inf`` only beyond the float range)."""
    v = np.asarray(v, dtype=float)
    squared = _squares(v)
    norms = np.sqrt(squared)
    odd = ~_reliable(v, squared)
    if np.any(odd):
        m, e = split_norms(v[odd])
        with np.errstate(over="ignore"):
            norms[odd] = np.ldexp(m, e)
    return norms


def clip_rows(v: np.ndarray, bound: float) -> np.ndarray:
    """Each row (last axis) of finite ``v`` scaled down to l2 norm ``bound`` if longer.

    Rows whose squared norm is a normal float get exactly ``v * min(1, bound / ||v||)`` (with
    ``||v||`` as :func:`numpy.linalg.norm` gives it); the others are rescaled by a power of two
    first, so any finite row is clipped to ``bound`` with its direction kept.
    """
    v = np.asarray(v, dtype=float)
    squared = _squares(v)
    odd = ~_reliable(v, squared)
    norms = np.sqrt(squared)
    factor = np.divide(bound, norms, out=np.ones_like(norms), where=~odd & (norms > bound))
    out = v * factor[..., None]
    if np.any(odd):
        rows = v[odd]
        m, e = split_norms(rows)
        with np.errstate(over="ignore", under="ignore"):
            longer = m > np.ldexp(bound, -e)            # ||v|| = m 2^e > bound
            unit = np.ldexp(rows, -e[:, None])
        out[odd] = np.where(longer[:, None], unit * (bound / np.where(longer, m, 1.0))[:, None],
                            rows)
    return out


def clip_factors(bound: float, *parts: np.ndarray) -> np.ndarray:
    """``min(1, bound / prod_k ||parts_k||)`` per row, the norms along each part's last axis.

    The textbook factor where every part's squared norm is a normal float and the product is
    finite; elsewhere the same number from power-of-two split norms, so a huge finite row gets
    a tiny factor (it is clipped to ``bound``), not ``0`` (unless the factor itself is below
    the float range, ``||.|| > bound * 1e308``).
    """
    parts = tuple(np.asarray(p, dtype=float) for p in parts)
    squares = [_squares(p) for p in parts]
    with np.errstate(over="ignore"):
        size = np.prod([np.sqrt(s) for s in squares], axis=0)
    fine = np.logical_and.reduce([_reliable(p, s) for p, s in zip(parts, squares, strict=True)])
    fine &= np.isfinite(size)
    factor = np.divide(bound, size, out=np.ones_like(size), where=fine & (size > bound))
    if not np.all(fine):
        split = [split_norms(p) for p in parts]
        m = np.prod([s[0] for s in split], axis=0)
        e = np.sum([s[1] for s in split], axis=0)
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            careful = np.minimum(1.0, np.ldexp(bound / m, -e))
        factor = np.where(fine, factor, careful)
    return factor
