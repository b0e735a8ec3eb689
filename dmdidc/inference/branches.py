"""Aliasing: which logarithm of ``A_d`` do the data support?

``A_d = expm(A_c T)`` does not determine ``A_c``: a complex pair of modes ``mu, conj(mu)`` and
its aliases ``mu + 2 pi i k / T`` give the same ``A_d``, so sampled states alone cannot tell a
mode above the Nyquist frequency ``pi / T`` from its alias below it.  A *fractional* input delay
breaks the tie: the blocks ``B^(w) = Gamma((1 - p) T) b`` and ``B^(w+1) = e^{A_c (1 - p) T}
Gamma(p T) b`` (eq. 9.65) sample the plant *inside* a period, where the aliases differ.

:func:`choose_branch` refits the structure of every fractional channel with the principal
logarithm and with the aliases ``k = -1, +1`` of each complex pair, and keeps an alias only when
its structured misfit is smaller than the principal one's by more than the noise can explain
(a chi-square difference at the given level, with the blocks' own variance).  With whole delays
(``p = 0``) or noise that hides the difference the principal logarithm stays, and the
estimator's near-Nyquist warning says that a faster plant would give the same data.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import special

from dmdidc.discretization import first_active_blocks
from dmdidc.inference.recovery import (
    _remembered,
    check_weights,
    continuous_state_matrix,
    recover_channel,
    recover_continuous,
    structured_misfit,
)

__all__ = ["BranchChoice", "choose_branch", "logarithm_branches", "recover_branch"]

#: Complex pairs whose frequency lies above this fraction of Nyquist are tested for aliases
#: (aliases of slow modes lie far above Nyquist and fit no plausible structure).
_ALIAS_FRACTION = 0.5
#: At most this many pairs are tested (3^pairs candidates).
_MAX_PAIRS = 3


class BranchChoice:
    """The logarithm the data support, with the evidence.

    Attributes
    ----------
    A_c : ndarray, shape (n, n)
    shifts : tuple of int
        Per tested complex pair, the alias ``k`` chosen (0: principal).
    misfits : dict
        Chi-square-scaled structured misfit per candidate (shifts -> value).
    note : str or None
        A sentence when an alias was chosen.
    """

    def __init__(self, A_c: np.ndarray, shifts: tuple[int, ...], misfits: dict,
                 note: str | None) -> None:
        self.A_c, self.shifts, self.misfits, self.note = A_c, shifts, misfits, note


def logarithm_branches(principal: np.ndarray, dt: float
                       ) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """``(shifts, A_c)`` for the principal logarithm and its aliases.

    Each complex pair ``mu, conj(mu)`` of the principal logarithm with ``|Im mu| T`` above
    half of ``pi`` is shifted by ``k = -1, 0, +1`` periods of ``2 pi / T`` (its conjugate by
    ``-k``), which keeps ``A_c`` real and ``expm(A_c T)`` unchanged.

    Parameters
    ----------
    principal : ndarray, shape (n, n)
        The principal real logarithm divided by ``T``.
    dt : float

    Returns
    -------
    list of (tuple of int, ndarray)
        The principal one first (all shifts 0).
    """
    values, vectors = np.linalg.eig(principal)
    pairs = [i for i in range(values.size)
             if values[i].imag * dt > _ALIAS_FRACTION * np.pi][:_MAX_PAIRS]
    if not pairs:
        return [((), principal)]
    try:
        inverse = np.linalg.inv(vectors)
    except np.linalg.LinAlgError:            # defective: aliases are not defined by modes
        return [((), principal)]
    out = []
    for shifts in itertools.product((0, -1, 1), repeat=len(pairs)):
        shifted = values.astype(complex).copy()
        for i, k in zip(pairs, shifts, strict=True):
            partner = int(np.argmin(np.abs(values - np.conj(values[i]))))
            shifted[i] += 2j * np.pi * k / dt
            shifted[partner] -= 2j * np.pi * k / dt
        out.append((shifts, np.real(vectors @ np.diag(shifted) @ inverse)))
    return out


def choose_branch(principal: np.ndarray, B_blocks: np.ndarray, dt: float, active: np.ndarray,
                  *, block_variance: float, level: float = 1e-3,
                  weights: np.ndarray | None = None) -> BranchChoice:
    """The logarithm whose delay structure explains the blocks (module notes).

    Parameters
    ----------
    principal : ndarray, shape (n, n)
        The principal ``logm(A_d) / T``.
    B_blocks : ndarray, shape (R + 1, n, m)
    dt : float
    active : ndarray of bool, shape (R + 1, m)
        The block test's decision (channels without active block carry no information).
    block_variance : float
        Variance of one block entry (the regression's, about equal across entries); 0 for
        exact data (then any improvement beyond rounding decides).
    level : float
        Level of the chi-square comparison.
    weights : ndarray, shape (n,), optional
        The delay fits' per-state weights
        (:func:`~dmdidc.inference.recovery.recovery_weights`, mean 1 over states of equal
        noise): the weighted misfits over ``block_variance`` stay chi-square.

    Returns
    -------
    BranchChoice
    """
    candidates = logarithm_branches(principal, dt)
    if len(candidates) == 1:
        return BranchChoice(principal, (), {}, None)
    first = first_active_blocks(active)
    channels = [j for j in range(B_blocks.shape[2]) if first[j] >= 0]
    scale = max(block_variance, (1e-12 * float(np.max(np.abs(B_blocks), initial=0.0))) ** 2,
                np.finfo(float).tiny)
    misfits = {}
    for shifts, A_c in candidates:
        total = 0.0
        for j in channels:
            b, delay = recover_channel(A_c, B_blocks[:, :, j], dt, first[j],
                                       significant=active[:, j], weights=weights)
            total += structured_misfit(A_c, B_blocks[:, :, j], b, delay, dt, weights)
        misfits[shifts] = total / scale
    principal_shifts = candidates[0][0]
    best = min(misfits, key=misfits.get)
    gain = misfits[principal_shifts] - misfits[best]
    dof = max(2 * B_blocks.shape[1] * len(channels), 1)
    critical = float(special.chdtri(dof, level))
    if best == principal_shifts or gain <= critical:
        return BranchChoice(principal, principal_shifts, misfits, None)
    A_c = dict(candidates)[best]
    frequencies = np.abs(np.linalg.eigvals(A_c).imag)
    note = (f"aliasing resolved by the fractional delay: the blocks fit the logarithm with the "
            f"mode(s) shifted by {list(best)} x 2 pi / T (frequencies up to "
            f"{frequencies.max():.4g} rad/s, above Nyquist {np.pi / dt:.4g} rad/s) better than "
            f"the principal one (chi-square misfit {misfits[best]:.3g} against "
            f"{misfits[principal_shifts]:.3g}, difference above {critical:.3g})")
    return BranchChoice(A_c, best, misfits, note)


def recover_branch(A_d: np.ndarray, B_blocks: np.ndarray, dt: float, *, active: np.ndarray,
                   block_variance: float, notes: list | None = None,
                   weights: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~dmdidc.inference.recovery.recover_continuous` with the logarithm the data
    support (:func:`choose_branch`); a sentence is appended to ``notes`` when it is an alias.

    The last :data:`_REMEMBERED` recoveries are remembered: the asymptotic intervals of a
    fit recover the same restricted blocks as the fit did (bit for bit), and get its answer
    without a second logarithm and delay search; so does every later interval request, for
    both block structures it spans (each also for a pretest's IV alternative).  Before, only
    the last was kept, so each request after the first searched both structures again: at
    ``n = 30``, ``m = 5`` on the oscillatory plant of ``benchmarks/bench_scaling.py``, 0.8 s
    of a 0.9 s request.

    Raises
    ------
    LogarithmError
        ``A_d`` has no real logarithm.
    """
    A_d, B_blocks, active = (np.asarray(a) for a in (A_d, B_blocks, active))
    if weights is not None:
        weights = check_weights(weights, B_blocks.shape[1])
    key = tuple((a.shape, a.dtype.str, a.tobytes()) for a in (A_d, B_blocks, active)) + (
        float(dt), float(block_variance), None if weights is None else weights.tobytes())

    def recovery() -> tuple[tuple[np.ndarray, ...], str]:
        choice = choose_branch(continuous_state_matrix(A_d, dt), B_blocks, dt, active,
                               block_variance=block_variance, weights=weights)
        return (recover_continuous(A_d, B_blocks, dt, active=active, A_c=choice.A_c,
                                   weights=weights), choice.note)

    result, note = _remembered(_LAST, key, recovery, size=_REMEMBERED)
    if note and notes is not None:
        notes.append(note)
    return tuple(part.copy() for part in result)


_LAST: list = []        # the last (inputs, (recovery, note)) of recover_branch, newest first
#: Recoveries remembered: two block structures of the intervals, each for LS and a pretest's IV.
_REMEMBERED = 4
