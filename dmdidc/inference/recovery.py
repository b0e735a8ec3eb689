"""Recover the continuous plant (A_c, B_c) and each channel's delay r = (w + p) T from the
identified discrete blocks (dissertation eqs. 9.66-9.69).

* ``A_c = logm(A_d) / T``: the principal real logarithm.  It exists and is the unique real
  logarithm whose eigenvalues have imaginary parts in (-pi/T, pi/T) iff ``A_d`` has no eigenvalue
  on the closed negative real axis (Culver 1966).  Otherwise :class:`LogarithmError` is raised;
  a plant with frequencies beyond Nyquist is indistinguishable from its alias, and the recovered
  model is the alias below Nyquist (a warning is issued when an eigenvalue comes close).
* ``w`` is the first active input block (9.66), per channel: by default the first non-zero
  one; the estimator passes its noise-aware decision (:mod:`dmdidc.inference.blocks`).
* With ``b0 = B^(w) e_j`` and ``b1 = B^(w+1) e_j``: ``b0 + b1 = Gamma(T) b`` gives the column
  ``b`` of ``B_c`` by one linear solve, and ``Gamma(s) b = b0`` with ``s = (1 - p) T`` (9.68)
  gives ``p``.  The scalar equation is solved by a grid search followed by Gauss-Newton, which
  converges quadratically on exact data (error at rounding level, ~1e-13 T), unlike a bounded
  scalar minimizer of the residual norm whose accuracy is only the square root of the tolerance.
* The residuals of those fits are weighed per state by the inverse of its one-step noise
  variance (:func:`recovery_weights`, normalized to mean 1): each state's blocks are known to
  that variance, and the fit is then the same in any units of the states.  Unweighted, the
  state in the largest units decided the delay (a record in K, Pa and m^3/s around 350 K,
  2e5 Pa and 0.01 m^3/s read 2.82 T for a delay of 2.30 T, its interval [2.79, 2.84] T).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.linalg import expm, logm, solve

from _toolbox.validation import check_finite_array, check_positive
from dmdidc.discretization import checked_expm, first_active_blocks, zoh_matrices
from dmdidc.errors import (
    ContinuousModelWarning,
    DimensionError,
    LogarithmError,
    ParameterError,
    warn_model,
)

__all__ = ["ContinuousModelWarning", "continuous_state_matrix", "finite_recovery",
           "check_weights", "pair_delay", "recover_channel", "recover_continuous",
           "recovery_weights", "solution_weights", "structured_misfit"]

_NYQUIST_WARNING_MARGIN = 0.05  # radians below pi


def continuous_state_matrix(A_d: np.ndarray, dt: float) -> np.ndarray:
    """Return the principal real logarithm ``logm(A_d) / dt`` or raise :class:`LogarithmError`.

    Parameters
    ----------
    A_d : ndarray, shape (n, n)
    dt : float

    Returns
    -------
    A_c : ndarray, shape (n, n)

    Raises
    ------
    LogarithmError
        ``A_d`` is singular or has an eigenvalue on the negative real axis (no unique real
        logarithm), or the logarithm does not reproduce ``A_d``.  The message gives the
        eigenvalues and the possible causes, most likely first.
    """
    eigenvalues, vectors = np.linalg.eig(A_d)
    size = max(np.max(np.abs(eigenvalues)), np.finfo(float).tiny)
    for lam in eigenvalues:
        if abs(lam) <= 1e-12 * size or (lam.real < 0 and abs(lam.imag) <= 1e-9 * abs(lam)):
            raise LogarithmError(_no_logarithm_message(lam, eigenvalues, size, dt))
    angles = np.abs(np.angle(eigenvalues))
    if np.any(angles > np.pi - _NYQUIST_WARNING_MARGIN):
        warn_model(
            f"A_d has eigenvalues with frequency {angles.max() / dt:.4g} rad/s, close to the "
            f"Nyquist frequency {np.pi / dt:.4g} rad/s; A_c is the principal (below-Nyquist) "
            f"logarithm, and a plant with faster modes would give the same data")
    log = _eigenbasis_logarithm(eigenvalues, vectors)
    if log is None:                  # defective or nearly so: the Schur-based logarithm
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                log = logm(A_d)
            except ValueError:      # its error estimate overflowed: A_d is nearly singular
                raise LogarithmError(
                    f"no reliable logarithm of A_d (eigenvalues "
                    f"{np.array2string(eigenvalues, precision=3, separator=', ')}): its "
                    f"smallest eigenvalues are {np.min(np.abs(eigenvalues)) / size:.2g} of "
                    f"the spectral radius and nearly defective, and scipy's logm overflowed "
                    f"on it. Possible causes: a delay beyond max_delay (the inputs in flight "
                    f"act as states with eigenvalue 0: increase max_delay), or a mode much "
                    f"faster than the sampling period") from None
    log = np.asarray(log)
    if np.iscomplexobj(log):
        if np.max(np.abs(log.imag)) > 1e-8 * max(1.0, np.max(np.abs(log.real))):
            raise LogarithmError("the principal matrix logarithm of A_d is not real, so no real "
                                 "continuous-time A_c reproduces A_d")
        log = log.real
    A_c = log / dt
    with np.errstate(over="ignore", invalid="ignore"):    # a wild logarithm: mismatch inf/NaN
        mismatch = np.linalg.norm(expm(A_c * dt) - A_d) / max(np.linalg.norm(A_d), 1e-300)
    if not mismatch <= 1e-8:
        raise LogarithmError(f"expm(A_c T) reproduces A_d only to relative error {mismatch:.2g}; "
                             f"A_d is too ill-conditioned for a reliable logarithm")
    return A_c


def _eigenbasis_logarithm(eigenvalues: np.ndarray, vectors: np.ndarray) -> np.ndarray | None:
    """``V diag(log lambda) V^-1`` (the principal logarithm: ``np.log`` keeps the angles in
    (-pi, pi]) when the eigenvectors are well conditioned, else None.  The accuracy is that of
    the hold integrals (:data:`_EIGENBASIS_CONDITION`); the caller checks the result."""
    if not _well_conditioned(vectors):
        return None
    return (vectors * np.log(eigenvalues.astype(complex))) @ np.linalg.inv(vectors)


#: Eigenvalues closer to zero than this share of the spectral radius, two or more of them, are
#: read as a delay chain (inputs in flight) when the fit cannot take a logarithm.
_IN_FLIGHT = 1e-3


def _no_logarithm_message(lam: complex, eigenvalues: np.ndarray, size: float, dt: float) -> str:
    """What was found and why it may have happened (most likely cause first)."""
    found = np.array2string(eigenvalues, precision=4, separator=", ")
    relative = abs(lam) / size
    fast = (f"a mode much faster than the sampling period: its discrete eigenvalue "
            f"exp(lambda T) is {relative:.2g} of the spectral radius, so noise or rounding "
            f"decides its sign (sample faster, or identify a model without that mode)")
    noise = ("noise on the states: least squares on noisy states biases A_d (check the "
             "relative residual; lengthen the data, or remove an offset with detrend=)")
    nyquist = (f"a mode oscillating at the Nyquist frequency pi/T = {np.pi / dt:.4g} rad/s "
               f"(sample faster)")
    if abs(lam) <= 1e-12 * size:
        return (f"A_d has the eigenvalue {complex(lam):.3g} at zero (eigenvalues of A_d: "
                f"{found}): no matrix logarithm exists, so no continuous-time plant with "
                f"A_d = expm(A_c T) matches the data. Possible causes: {fast}; or linearly "
                f"dependent measured states")
    # inputs in flight act as a chain of states with eigenvalue 0: rounding spreads such a
    # (nearly defective) cluster on a small circle, and which member lands on the negative
    # axis depends on the BLAS kernel, so the cluster, not the one eigenvalue, names the cause
    near_zero = int(np.sum(np.abs(eigenvalues) < _IN_FLIGHT * size))
    in_flight = (f"a delay beyond max_delay: the inputs in flight act as states with "
                 f"eigenvalue 0, and A_d has {near_zero} eigenvalues within {_IN_FLIGHT:g} of "
                 f"the spectral radius of zero (increase max_delay)")
    if relative < 0.1:
        causes = [fast] + ([in_flight] if near_zero >= 2 else []) + [noise, nyquist]
    else:
        causes = [nyquist, noise] + ([fast] if relative < 0.5 else [])
    listed = "; ".join(f"({chr(97 + i)}) {cause}" for i, cause in enumerate(causes))
    return (f"A_d has the eigenvalue {lam.real:.4g} on the negative real axis (eigenvalues of "
            f"A_d: {found}): a real logarithm is then not unique or does not exist (Culver 1966), "
            f"so A_c is not determined. Possible causes: {listed}")


def recover_channel(A_c: np.ndarray, columns: np.ndarray, dt: float, first: int, *,
                    significant: np.ndarray | None = None,
                    weights: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Continuous input column ``b`` and delay (seconds) of one channel.

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    columns : ndarray, shape (R + 1, n)
        Column ``j`` of every identified block.
    dt : float
    first : int
        The channel's first active block ``w`` (eq. 9.66), ``-1`` if none is active.
    significant : ndarray of bool, shape (R + 1,), optional
        The blocks the block test found significant.  A candidate pair whose structure sets
        one of them to zero is chosen only if every candidate sets as many to zero (the
        ``unexplained_block`` check of the fit then says so).  By default no block is.
    weights : ndarray, shape (n,), optional
        Weight of each state's residual (:func:`recovery_weights`); by default 1.

    Returns
    -------
    b : ndarray, shape (n,)
    delay : float
        ``(w + p) dt``; 0 (and ``b = 0``) for a channel without active block.

    References
    ----------
    Dissertation eqs. (9.66)-(9.69).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc.discretization import delay_blocks
    >>> A_c, B_c = np.array([[-1.0, 2.0], [-2.0, -1.0]]), np.array([[1.0], [0.5]])
    >>> _, blocks = delay_blocks(A_c, B_c, np.array([0.7]), 0.5)
    >>> b, delay = recover_channel(A_c, blocks[:, :, 0], 0.5, 1)
    >>> bool(np.allclose(b, B_c[:, 0])), round(delay, 10)
    (True, 0.7)
    """
    n = A_c.shape[0]
    w = int(first)
    if w < 0:
        return np.zeros(n), 0.0
    hold = _hold_integrals(A_c)
    # A fraction p close to 1 leaves B^(w) below the threshold, and on noisy data a marginal
    # block before the delay can pass the test: the pairs starting one block earlier and one
    # later are fitted too, and the pair whose structure explains all blocks wins.  A pair
    # that zeroes a block the test found significant loses to one that keeps it: by misfit
    # alone, a small significant B^(w) (a delay a little short of w + 1 periods) lost to the
    # pair w + 1, w + 2 whenever noise made its fitted residual larger than B^(w) itself.
    starts = {max(w - 1, 0), w} | ({w + 1} if w + 1 < columns.shape[0] else set())
    fits = [_fit_pair(hold, columns, start, dt, weights=weights) for start in sorted(starts)]
    kept = np.zeros(columns.shape[0], dtype=bool) if significant is None else significant

    def discarded(fit: tuple) -> int:
        whole, fraction = _delay_periods(fit[0], fit[2], dt)
        acting = {whole, whole + 1} if fraction > 0 else {whole}
        return sum(1 for j in np.flatnonzero(kept) if j not in acting)

    start, b, s, _ = min(fits, key=lambda fit: (discarded(fit), fit[3]))
    whole, fraction = _delay_periods(start, s, dt)
    return b, float((whole + fraction) * dt)


def pair_delay(A_c: np.ndarray, columns: np.ndarray, start: int, dt: float, *,
               clip: bool = True, weights: np.ndarray | None = None
               ) -> tuple[np.ndarray, float]:
    """``b`` and the delay (seconds) fitted to the blocks ``start, start + 1`` alone.

    :func:`recover_channel` chooses among candidate pairs by misfit, and may read a whole delay
    from another pair; this is the fit of the given pair, whatever the others say (the delay
    interval spans it: :mod:`dmdidc.inference.intervals`, *Whole delay read with the next block
    kept*).

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    columns : ndarray, shape (R + 1, n)
        Column ``j`` of every identified block.
    start : int
        The pair's first block, ``0 <= start <= R``.
    dt : float
    clip : bool, default True
        Keep the hold length ``s`` in ``[0, dt]`` (a delay within the pair's span).  With
        ``False`` it is fitted in ``[-dt, 2 dt]``: where noise points beyond the pair (a whole
        delay), the clipped ``s`` stays on the boundary however the blocks move, so only the
        unclipped one has the derivative a central-difference delta method needs.
    weights : ndarray, shape (n,), optional
        As :func:`recover_channel`'s.

    Returns
    -------
    b : ndarray, shape (n,)
    delay : float
        ``(start + 1) dt - s``, ``s`` the fitted hold length.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc.discretization import delay_blocks
    >>> A_c, B_c = np.array([[-1.0, 2.0], [-2.0, -1.0]]), np.array([[1.0], [0.5]])
    >>> _, blocks = delay_blocks(A_c, B_c, np.array([0.52]), 0.5)
    >>> b, delay = pair_delay(A_c, blocks[:, :, 0], 1, 0.5)
    >>> bool(np.allclose(b, B_c[:, 0])), round(delay, 10)
    (True, 0.52)

    A whole delay of 0.5 s whose next block noise made slightly negative points a little
    below the pair's span: clipped it reads 0.5 s, unclipped 0.4946 s:

    >>> _, blocks = delay_blocks(A_c, B_c, np.array([0.5]), 0.5, 2)
    >>> columns = blocks[:, :, 0].copy()
    >>> columns[2] = -0.01 * columns[1]
    >>> [round(pair_delay(A_c, columns, 1, 0.5, clip=c)[1], 4) for c in (True, False)]
    [0.5, 0.4946]
    """
    bounds = (0.0, dt) if clip else (-dt, 2.0 * dt)
    _, b, s, _ = _fit_pair(_hold_integrals(A_c), columns, int(start), dt, bounds,
                           weights=weights)
    return b, float((start + 1) * dt - s)


def _delay_periods(start: int, s: float, dt: float) -> tuple[int, float]:
    """Whole periods and fraction of the delay of the pair ``start`` with hold length ``s``."""
    fraction = 1.0 - s / dt
    if fraction >= 1.0 - 1e-12:      # B^(start) vanishes: the delay is a whole start + 1 periods
        return start + 1, 0.0
    if fraction <= 1e-12:            # B^(start + 1) vanishes: a whole delay, not start + 1e-16
        return start, 0.0
    return start, fraction


def _fit_pair(hold: _HoldIntegrals, columns: np.ndarray, start: int, dt: float,
              bounds: tuple[float, float] | None = None, *,
              weights: np.ndarray | None = None) -> tuple[int, np.ndarray, float, float]:
    """Fit ``b`` and the hold length (in ``bounds``, by default ``[0, dt]``) to the blocks
    ``start, start + 1`` (9.68-9.69).

    Returns ``(start, b, s, misfit)`` where the misfit also counts every other block, which
    the structure says is zero; ``weights`` weigh each state's residual.
    """
    n = columns.shape[1]
    w = np.ones(n) if weights is None else check_weights(weights, n)
    b0 = columns[start]
    b1 = columns[start + 1] if start + 1 < columns.shape[0] else np.zeros(n)
    b = hold.solve(dt, b0 + b1)
    s, r = _solve_hold_length(hold, b, b0, dt, (0.0, dt) if bounds is None else bounds, w)
    others = np.delete(columns, [j for j in (start, start + 1) if j < columns.shape[0]], axis=0)
    misfit = 2.0 * float(r @ (w * r)) + float(np.sum(w * others ** 2))
    return start, b, s, misfit


def _solve_hold_length(hold: _HoldIntegrals, b: np.ndarray, b0: np.ndarray, dt: float,
                       bounds: tuple[float, float], weights: np.ndarray
                       ) -> tuple[float, np.ndarray]:
    """Solve ``Gamma(s) b = b0`` for ``s`` in ``bounds`` (weighted least squares: a grid over
    ``[0, dt]``, then Gauss-Newton); returns ``s`` and the residual ``Gamma(s) b - b0``."""
    integrals = hold.along(b, bounds[1])
    grid = np.linspace(0.0, dt, 33)
    gamma_b, _ = integrals(grid)
    s = float(grid[int(np.argmin(np.sum(weights * (gamma_b - b0) ** 2, axis=1)))])
    for _ in range(60):
        gamma_b, slope = integrals(np.array([s]))      # d/ds Gamma(s) b = e^{A s} b
        r, slope = gamma_b[0] - b0, slope[0]
        denom = slope @ (weights * slope)
        if denom == 0:
            break
        step = (slope @ (weights * r)) / denom
        s_new = min(max(s - step, bounds[0]), bounds[1])
        if abs(s_new - s) <= 1e-15 * dt:
            s = s_new
            break
        s = s_new
    gamma_b, _ = integrals(np.array([s]))
    return s, gamma_b[0] - b0


#: Eigenvector matrices of A_c with a condition number above this are not used: the eigenbasis
#: formulas lose about cond * eps of relative accuracy (1e-12 at this limit), so beyond it the
#: hold integrals are computed by the matrix exponential instead.
_EIGENBASIS_CONDITION = 1e4
#: Largest ``Re(lambda) s`` the eigenbasis path takes: beyond it ``e^{lambda s}`` nears the
#: float64 overflow, and the exponential path raises the error that names it.
_EIGENBASIS_EXPONENT = 600.0


def _well_conditioned(vectors: np.ndarray) -> bool:
    """Whether an eigenvector matrix is safe for the eigenbasis formulas
    (condition number finite and at most :data:`_EIGENBASIS_CONDITION`)."""
    with np.errstate(all="ignore"):
        condition = np.linalg.cond(vectors)
    return bool(np.isfinite(condition) and condition <= _EIGENBASIS_CONDITION)


class _HoldIntegrals:
    """``Gamma(s) b = int_0^s e^{A tau} d tau b`` and ``e^{A s} b`` for one ``A_c``.

    A recovery evaluates these for every channel, candidate pair, grid point and Gauss-Newton
    step.  When ``A_c = V diag(lambda) V^-1`` with a well-conditioned ``V``, one decomposition
    serves them all: ``Gamma(s) b = V diag(expm1(lambda s) / lambda) V^-1 b``; otherwise (a
    defective or nearly defective ``A_c``) every value is the exact block exponential
    ``expm([[A, b], [0, 0]] s)``.
    """

    def __init__(self, A_c: np.ndarray) -> None:
        self.A_c = A_c
        self.vectors = None
        self.exact_gamma: dict[float, np.ndarray] = {}
        with np.errstate(all="ignore"):
            values, vectors = np.linalg.eig(A_c)
        if _well_conditioned(vectors):
            self.values, self.vectors = values, vectors
            self.inverse = np.linalg.inv(vectors)
            self.fastest = float(np.max(values.real, initial=0.0))
            self.zero = values == 0                      # Gamma = s there

    def _eigenbasis(self, span: float) -> bool:
        """Whether the eigenbasis serves hold lengths up to ``span``."""
        return self.vectors is not None and self.fastest * span <= _EIGENBASIS_EXPONENT

    def _integral_factors(self, z: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``(e^{lambda s} - 1) / lambda`` from ``z = lambda s`` (``s`` where ``lambda = 0``)."""
        if not self.zero.any():
            return np.expm1(z) / self.values
        return np.where(self.zero, s[:, None], np.expm1(z) / np.where(self.zero, 1.0, self.values))

    def along(self, b: np.ndarray, span: float
              ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """``s -> (Gamma(s_k) b, e^{A s_k} b)``, each of shape (len(s), n), for ``s <= span``."""
        if self._eigenbasis(span):
            c, rows = self.inverse @ b, self.vectors.T

            def eigenbasis(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                z = np.multiply.outer(s, self.values)
                return (((self._integral_factors(z, s) * c) @ rows).real,
                        ((np.exp(z) * c) @ rows).real)
            return eigenbasis
        n = b.size
        block = np.zeros((n + 1, n + 1))
        block[:n, :n], block[:n, n] = self.A_c, b

        def exact(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            if s.size == 1:
                exp_block = checked_expm(block, f"[[A_c, b], [0, 0]] * s with s = {s[0]!r}",
                                         float(s[0]))[None]
            else:                                    # the grid: one batched expm
                exp_block = expm(s[:, None, None] * block)
            return exp_block[:, :n, n], exp_block[:, :n, :n] @ b
        return exact

    def matrices(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        """``(e^{A s}, Gamma(s))``, each (n, n): :func:`~dmdidc.discretization.zoh_matrices`
        of the identity."""
        if self._eigenbasis(s):
            z = s * self.values
            factors = self._integral_factors(z[None], np.array([s]))[0]
            return (np.real((self.vectors * np.exp(z)) @ self.inverse),
                    np.real((self.vectors * factors) @ self.inverse))
        return zoh_matrices(self.A_c, np.eye(self.A_c.shape[0]), s)

    def solve(self, s: float, rhs: np.ndarray) -> np.ndarray:
        """``b`` with ``Gamma(s) b = rhs``."""
        if self._eigenbasis(s):
            factors = self._integral_factors(s * self.values[None], np.array([s]))[0]
            if np.min(np.abs(factors)) > 1e-12 * np.max(np.abs(factors)):
                return np.real(self.vectors @ ((self.inverse @ rhs) / factors))
        # Exact path, also for a (nearly) singular Gamma(s) (lambda s = 2 pi i k): solve() says so.
        if s not in self.exact_gamma:           # every channel's pairs solve with Gamma(T)
            self.exact_gamma[s] = zoh_matrices(self.A_c, np.eye(self.A_c.shape[0]), s)[1]
        return solve(self.exact_gamma[s], rhs)


_LAST: list = []     # the last (key, _HoldIntegrals): a fit recovers every channel with one A_c


def _hold_integrals(A_c: np.ndarray) -> _HoldIntegrals:
    """The :class:`_HoldIntegrals` of ``A_c``, reused while the same ``A_c`` is recovered
    (the estimate, the ambiguity check and the branch candidates call once per channel)."""
    return _remembered(_LAST, (A_c.shape, A_c.tobytes()),
                       lambda: _HoldIntegrals(np.array(A_c, dtype=float)))


def _remembered(store: list, key: tuple, compute: Callable[[], Any], size: int = 1) -> Any:
    """``compute()``, or the value remembered in ``store`` (a list of the last ``size``
    ``(key, value)``, newest first) when ``key`` is one of theirs: a fit asks for the same
    thing once per channel (and :func:`~dmdidc.inference.branches.recover_branch` twice per
    fit, then once per block structure of its intervals)."""
    entries = list(store)                       # read once: another thread may replace it
    for remembered, value in entries:
        if remembered == key:
            return value
    value = compute()
    store[:] = [(key, value)] + entries[:size - 1]
    return value


def structured_misfit(A_c: np.ndarray, columns: np.ndarray, b: np.ndarray, delay: float,
                      dt: float, weights: np.ndarray | None = None) -> float:
    """``sum_j ||B^(j)[:, i] - B^(j)_model||^2``: how far a channel's blocks are from the
    discretization of ``(A_c, b, delay)`` (eq. 9.65), every block counted (each state's
    entries times its ``weights``, :func:`recovery_weights`).

    Parameters
    ----------
    A_c : ndarray, shape (n, n)
    columns : ndarray, shape (R + 1, n)
        The channel's column of every block.
    b : ndarray, shape (n,)
    delay : float
    dt : float
    """
    from dmdidc.discretization import delay_blocks

    _, model = delay_blocks(A_c, b[:, None], np.array([delay]), dt, columns.shape[0] - 1)
    squares = (columns - model[:, :, 0]) ** 2
    if weights is None:
        return float(np.sum(squares))
    return float(np.sum(check_weights(weights, b.size) * squares))


def recover_continuous(A_d: np.ndarray, B_blocks: np.ndarray, dt: float, *,
                       active: np.ndarray | None = None, A_c: np.ndarray | None = None,
                       weights: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Continuous ``A_c`` (n, n), ``B_c`` (n, m) and per-channel delays (m,) from the blocks.

    Parameters
    ----------
    A_d : ndarray, shape (n, n)
    B_blocks : ndarray, shape (R + 1, n, m)
    dt : float
    active : ndarray of bool, shape (R + 1, m), optional
        Which blocks act (the estimator's decision, :func:`dmdidc.inference.blocks.block_test`);
        by default the non-zero ones.  A channel without active block gets ``b = 0`` and delay 0.
        When given, each channel's pair of blocks keeps its active ones where a candidate pair
        can (:func:`recover_channel`).
    A_c : ndarray, shape (n, n), optional
        A logarithm of ``A_d`` chosen beforehand (an alias the data support,
        :func:`dmdidc.inference.branches.recover_branch`); by default the principal one.
    weights : ndarray, shape (n,), optional
        Weight of each state's residual in the delay fits (:func:`recovery_weights`: the
        estimator's, from its residual variances); by default 1.

    Raises
    ------
    DimensionError
        ``A_d`` not square, ``B_blocks`` not 3-D with ``n`` rows per block (a single (n, m)
        matrix is ``B_blocks[None]``), or ``active`` not of shape (R + 1, m).
    NonFiniteError
        NaN or infinite entries.
    ParameterError
        ``dt`` not a finite positive number.
    LogarithmError
        When ``A_d`` has no unique real logarithm (see :func:`continuous_state_matrix`), or
        the continuous model is not finite in float64 (:func:`finite_recovery`).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc.discretization import delay_blocks
    >>> A_d, blocks = delay_blocks(np.array([[-1.0]]), np.array([[2.0]]), np.array([1.3]), 0.5)
    >>> A_c, B_c, delay = recover_continuous(A_d, blocks, 0.5)
    >>> np.round([A_c[0, 0], B_c[0, 0], delay[0]], 10).tolist()
    [-1.0, 2.0, 1.3]
    """
    dt = check_positive("dt", dt)
    A_d = check_finite_array("A_d", A_d, ndim=2)
    if A_d.shape[0] != A_d.shape[1]:
        raise DimensionError(f"A_d has shape {A_d.shape}; expected a square (n, n) matrix")
    n = A_d.shape[0]
    B_blocks = check_finite_array("B_blocks", B_blocks)
    if B_blocks.ndim != 3 or B_blocks.shape[1] != n:
        hint = (f" (a single (n, m) input matrix is B_blocks[None], shape "
                f"{(1, *B_blocks.shape)})" if B_blocks.ndim == 2 else "")
        raise DimensionError(f"B_blocks has shape {B_blocks.shape}; expected (R + 1, n, m) = "
                             f"(R + 1, {n}, m): one (n, m) input matrix per delay lag{hint}")
    R1, _, m = B_blocks.shape
    decided = active is not None
    if not decided:
        active = np.any(B_blocks != 0, axis=1)
    else:
        active = np.asarray(active, dtype=bool)
        if active.shape != (R1, m):
            raise DimensionError(f"active has shape {active.shape}; expected (R + 1, m) = "
                                 f"{(R1, m)} (one flag per block of B_blocks)")
    A_c = None if A_c is None else check_finite_array("A_c", A_c, ndim=2)
    weights = None if weights is None else check_weights(weights, n)
    return finite_recovery(_recover, A_d, B_blocks, dt, active=active, A_c=A_c,
                           decided=decided, weights=weights)


def _recover(A_d: np.ndarray, B_blocks: np.ndarray, dt: float, *, active: np.ndarray,
             A_c: np.ndarray | None, decided: bool = True, weights: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    A_c = continuous_state_matrix(A_d, dt) if A_c is None else A_c
    n, m = B_blocks.shape[1:]
    first = first_active_blocks(active)
    B_c = np.zeros((n, m))
    delays = np.zeros(m)
    for j in range(m):
        # (the non-zero rule is no significance decision: every noisy block is non-zero)
        B_c[:, j], delays[j] = recover_channel(A_c, B_blocks[:, :, j], dt, first[j],
                                               significant=active[:, j] if decided else None,
                                               weights=weights)
    return A_c, B_c, delays


def recovery_weights(residual_variances: np.ndarray) -> np.ndarray:
    """Per-state weights of the delay fits: ``mean(sigma^2) / sigma_i^2`` from the states'
    one-step residual variances ``sigma_i^2`` (the diagonal of the regression's residual
    covariance), so that the fits are the same in any units of the states and equal noise
    weighs every state 1.  No floor relative to the largest (units spanning 24 orders of
    magnitude in the variances are still units): a state without residual takes the smallest
    positive variance; exact data (all zero): every weight 1.

    Examples
    --------
    >>> recovery_weights(np.array([1e-6, 4e-6])).tolist()     # mean 2.5e-6
    [2.5, 0.625]
    """
    variances = np.clip(np.asarray(residual_variances, dtype=float), 0.0, None)
    positive = variances > 0
    if not positive.any() or not np.all(np.isfinite(variances)):
        return np.ones(variances.shape)
    variances = np.where(positive, variances, variances[positive].min())
    return float(np.mean(variances)) / variances


def solution_weights(solution: Any) -> np.ndarray:
    """:func:`recovery_weights` of a regression solution (its residual covariance's
    diagonal): the one place a fit's delay-fit weights are decided, for the model, its
    intervals and its checks alike."""
    return recovery_weights(np.diag(solution.residual_covariance))


def check_weights(weights: np.ndarray, n: int) -> np.ndarray:
    """``weights`` as a finite positive (n,) vector, or a clear error naming it."""
    weights = check_finite_array("weights", weights, ndim=1)
    if weights.shape != (n,):
        raise DimensionError(f"weights has shape {weights.shape}; expected ({n},): one weight "
                             f"per state (recovery_weights)")
    if np.any(weights <= 0):
        raise ParameterError(f"weights has smallest entry {float(np.min(weights)):g}; "
                             f"accepted: positive weights (recovery_weights)")
    return weights


def finite_recovery(recover, A_d: np.ndarray, B_blocks: np.ndarray, dt: float, **options
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``recover(A_d, B_blocks, dt, **options)``, with a continuous model that float64 cannot
    hold reported as a :class:`LogarithmError` (its absence; the discrete model stays exact).

    A sampling period near the underflow limit makes ``logm(A_d) / dt`` overflow, and a
    singular hold matrix makes the channel solve fail; neither may leave NaN in a model.
    """
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            A_c, B_c, delay = recover(A_d, B_blocks, dt, **options)
    except np.linalg.LinAlgError as exc:
        raise LogarithmError(f"the continuous model is not computable in float64 at dt = "
                             f"{dt!r} s ({exc})") from exc
    if not all(np.all(np.isfinite(part)) for part in (A_c, B_c, delay)):
        raise LogarithmError(f"the continuous model is not finite in float64 at dt = {dt!r} s "
                             f"(logm(A_d) / dt overflows): use the discrete model, or a "
                             f"sampling period in seconds that float64 can divide by")
    return A_c, B_c, delay
