"""Did the plant change during the record?  The residual-input moments of its two halves.

A fit is one linear time-invariant model for the whole record.  When the plant changes part way
(a transport delay that jumps when a network reroutes, a gain that changes with the operating
point), the fit averages the two plants, and every other check may pass: the residuals of an
average model are white and uncorrelated with the inputs over the whole record (a delay that grew
by 0.5-1 T at mid-record read 0.3 T off on 2 of 10 random plants, with no warning).

The check compares, between the first and the second half of the samples, the mean of each
residual ``e_i`` (a sensor that drifts or steps moves it) and the mean products
``e_{i,k} u_{j,k-l}`` of each residual with each input ``j`` at the lags ``l = 0 .. R`` the
model uses.  Over the whole record their difference is what a least-squares (or
instrumental) fit leaves zero on average; for a time-invariant plant both halves have the same
expectation, whatever that expectation is (closed loop, coloured noise, a missing state:
stationary misspecifications cancel in the difference), so only a change between the halves
moves it.  Its standard error comes from batch means (each half cut into up to ``BATCHES``
consecutive batches), which holds for serially correlated residuals and inputs; the largest
absolute ``t`` is compared with Student's ``t`` quantile (batches minus two degrees of freedom)
at the check's share of ``check_level``, Bonferroni over the ``n (1 + m (R + 1))`` moments.
An outlier cannot pass for a change: it moves one batch mean, and the batches' spread with
it.  Long data are thinned to about ``SAMPLES``
samples (fewer for many states and lags), so the check costs about one product of the residuals
with the lagged inputs on those samples.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dmdidc.inference.checks import Check

__all__ = ["BATCHES", "SAMPLES", "time_invariance_check"]

#: Batches per half at most (their means give the standard errors).
BATCHES = 32

#: Samples the check uses at most (about; fewer when moments times samples exceed _VALUES).
SAMPLES = 20_000

#: Moments times samples at most (but never fewer than _FEWEST samples): a model of many states,
#: inputs and lags is tested on fewer samples, keeping the check a few hundredths of a Gram pass.
_VALUES = 4_000_000
_FEWEST = 2000

#: Samples per batch at least; fewer than three batches per half: not tested.
_BATCH_SAMPLES = 20
_FEWEST_BATCHES = 3

QUESTION = ("Is the plant the same in both halves of the record (residual-input moments of the "
            "first and second half agree)?")


def _products(parts: list, R: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Residuals (n, N) and a constant with the lagged inputs (1 + m (R + 1), N), in time
    order, every part thinned alike to about ``budget`` samples in all (a centred window of
    each)."""
    total = sum(E.shape[1] for E, _, _ in parts)
    fraction = min(1.0, budget / max(total, 1))
    residuals, lagged = [], []
    for E, U, _ in parts:
        N = E.shape[1]
        keep = max(int(round(N * fraction)), 1)
        start = (N - keep) // 2
        residuals.append(E[:, start:start + keep])
        # e[:, i] belongs to sample R + i, whose input at lag l is U[:, R + i - l]
        lagged.append(np.concatenate([np.ones((1, keep))]
                                     + [U[:, R - lag + start:R - lag + start + keep]
                                        for lag in range(R + 1)]))
    return np.concatenate(residuals, axis=1), np.concatenate(lagged, axis=1)


def _batch_means(E: np.ndarray, Z: np.ndarray, batches: int) -> np.ndarray:
    """Mean of ``e_i z_j`` over each of ``batches`` equal consecutive batches: (batches, n, q)."""
    size = E.shape[1] // batches
    E = E[:, :size * batches].reshape(E.shape[0], batches, size).transpose(1, 0, 2)
    Z = Z[:, :size * batches].reshape(Z.shape[0], batches, size).transpose(1, 2, 0)
    return np.matmul(E, Z) / size


def time_invariance_check(parts: list, max_delay: int, level: float) -> Check:
    """Whether the residual-input moments of the record's two halves agree (see the module).

    Parameters
    ----------
    parts : list of (E (n, N), U (m, N + R), X)
        The model's residuals with the aligned inputs (``model_residuals``), in time order.
    max_delay : int
        ``R``: the moments use the input lags ``0 .. R``.
    level : float
        The check's share of ``check_level``.

    Returns
    -------
    Check
        ``time_invariance``: failed when the largest ``|t|`` exceeds its critical value; not
        applicable without inputs or with fewer than ``2 x 3 x 20`` residual samples.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from dmdidc.inference.residuals import model_residuals
    >>> rng = np.random.default_rng(0)
    >>> before = DelayedPlant.from_continuous([[-0.5]], [[1.0]], [0.5], 0.5, max_delay=3)
    >>> after = DelayedPlant.from_continuous([[-0.5]], [[1.0]], [1.0], 0.5, max_delay=3)
    >>> U = rng.standard_normal((1, 4000))
    >>> X = np.hstack([before.simulate([0.0], U[:, :2000]),
    ...                after.simulate([0.0], U[:, 2000:])[:, 1:]])
    >>> X = X + 0.01 * rng.standard_normal(X.shape)
    >>> parts = model_residuals([(X, U)], before.A_d, before.B_blocks)
    >>> time_invariance_check(parts, 3, 0.01 / 9).passed
    False
    >>> Xb = before.simulate([0.0], U) + 0.01 * rng.standard_normal(X.shape)
    >>> parts = model_residuals([(Xb, U)], before.A_d, before.B_blocks)
    >>> time_invariance_check(parts, 3, 0.01 / 9).passed
    True
    """
    R = max_delay
    if not parts or parts[0][1].shape[0] == 0:
        return Check("time_invariance", QUESTION, None, finding="no inputs")
    n, m = parts[0][0].shape[0], parts[0][1].shape[0]
    q = 1 + m * (R + 1)                     # the residuals' means, then their input products
    budget = min(SAMPLES, max(_FEWEST, _VALUES // (n * q)))
    E, Z = _products(parts, R, budget)
    half = E.shape[1] // 2
    batches = min(BATCHES, half // _BATCH_SAMPLES)
    if batches < _FEWEST_BATCHES:
        return Check("time_invariance", QUESTION, None,
                     finding=f"not tested: {E.shape[1]} residual samples, fewer than "
                             f"{2 * _FEWEST_BATCHES * _BATCH_SAMPLES} needed")
    first = _batch_means(E[:, :half], Z[:, :half], batches)
    second = _batch_means(E[:, half:], Z[:, half:], batches)
    difference = first.mean(axis=0) - second.mean(axis=0)
    variance = (first.var(axis=0, ddof=1) + second.var(axis=0, ddof=1)) / batches
    t = np.abs(difference) / np.sqrt(np.maximum(variance, np.finfo(float).tiny))
    dof = 2 * batches - 2
    critical = float(-special.stdtrit(dof, level / (2 * n * q)))     # Student t's upper tail
    state, moment = np.unravel_index(int(np.argmax(t)), t.shape)
    statistic = float(t[state, moment])
    if moment == 0:
        what = f"residual {state}'s mean"
    else:
        what = f"residual {state} with input {(moment - 1) % m} at lag {(moment - 1) // m}"
    where = (f"{what}: the halves differ by {statistic:.3g} standard errors ({batches} batches "
             f"of {half // batches} samples per half, Student t with {dof} degrees of freedom, "
             f"Bonferroni over {n * q} moments)")
    if statistic <= critical:
        return Check("time_invariance", QUESTION, True, statistic, critical, where)
    if moment == 0:         # the residuals' level moved: a drift or a step of a sensor
        return Check("time_invariance", QUESTION, False, statistic, critical,
                     f"the data's level moved during the record: {where}; a sensor that "
                     f"drifts, or an offset or operating point that changed, which a "
                     f"constant offset cannot represent",
                     "experiments recorded at different levels: detrend='constant' (an "
                     "offset of each experiment's own); a slow drift: detrend='linear'; a "
                     "step within one record: fit each stretch as its own data (split the "
                     "record where it moved)")
    excitation = _excitation_change(Z[1:1 + m], half)
    if excitation:
        return Check("time_invariance", QUESTION, False, statistic, critical,
                     f"the halves differ: {where}; {excitation}, and a model that misses part "
                     f"of the plant (see the other failed checks) then leaves different "
                     f"residual-input moments in each, so the plant need not have changed",
                     "excite the plant alike over the record (stationary inputs), and see the "
                     "other failed checks; if the plant did change, fit each stretch as its "
                     "own data")
    return Check("time_invariance", QUESTION, False, statistic, critical,
                 f"the plant, or how it was measured, changed during the record: {where}; one "
                 f"model averages the two halves, and its delays and modes may be neither",
                 "find where it changed (fit the halves separately, or track it with "
                 "OnlineDMDidc) and fit each stretch as its own data (split the record)")


#: Inputs whose spread about the record's mean differs by more than this factor between the
#: halves excite them differently (steps, a changed excitation).
_EXCITATION_RATIO = 2.0


def _excitation_change(U: np.ndarray, half: int) -> str:
    """Why the halves' inputs (``U`` (m, N), lag 0) excite the plant differently, or ``""``:
    an input's mean square about the record's mean differs by more than
    :data:`_EXCITATION_RATIO` between them (the check's premise, one excitation in both
    halves, fails: step inputs failed it on 6 of 30 records of a sweep, always beside other
    failed checks)."""
    centred = U - U.mean(axis=1, keepdims=True)
    first = np.mean(centred[:, :half] ** 2, axis=1)
    second = np.mean(centred[:, half:] ** 2, axis=1)
    tiny = np.finfo(float).tiny
    ratio = np.maximum(first, tiny) / np.maximum(second, tiny)
    worst = int(np.argmax(np.abs(np.log(ratio))))
    if max(ratio[worst], 1.0 / ratio[worst]) <= _EXCITATION_RATIO:
        return ""
    return (f"the inputs excite the halves differently too (input {worst}'s mean square about "
            f"the record's mean is {ratio[worst]:.3g} times as large in the first half)")
