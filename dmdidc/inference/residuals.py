"""Residual analysis of a fitted model: does it explain the data, or do the residuals say why not?

The residuals of the model ``e_k = x_{k+1} - A_d x_k - sum_j B^(j) u_{k-j} - c`` (``c`` the
affine term of an operating point) are compared with the signals (as MATLAB's ``resid``):

* **residual-input correlation** at lags ``0 .. L`` (past inputs): in open loop the inputs are
  independent of every noise, so a correct model leaves residuals uncorrelated with them at
  every lag, whatever the colour of the noise.  A correlation at a lag beyond ``max_delay``
  means a delay beyond the bound or missing dynamics; within it, a block structure (one delay
  per channel) that does not fit;
* **feedback**: correlation with *future* inputs (lags ``-L .. -1``): the inputs react to the
  noise, as in a closed loop (Ljung 1999, Sec. 16.6);
* **whiteness** at lags ``2 .. L``: measurement noise makes the one-step residual a moving
  average of order one (``e_k = v_{k+1} - A_d v_k + w_k``), so lag 1 is allowed; correlation
  at longer lags means coloured noise (or missing dynamics);
* **state completeness**: correlation with the measured signals at lags ``1 .. L``: a full
  state is Markov, so its past carries nothing the present does not; signals that are not the
  whole state (``y = C x`` with fewer signals than states) leave residuals that the past
  signals predict;
* **outliers**: residuals beyond the Gaussian range, robustly standardized.

**Calibration.**  Each input channel is first prewhitened by an autoregressive filter fitted to
it (Yule-Walker, order up to 10), and the residuals are filtered with the same filter (the classical
prewhitening of cross-correlation analysis, Box and Jenkins): low-pass or otherwise coloured inputs
would otherwise spread the fit's own estimation error over many lags and mimic missing dynamics or
feedback.  A sample correlation ``rho_ab(tau)`` of two series has, when they are independent, the
variance ``(1 / N) sum_v rho_aa(v) rho_bb(v)`` (Bartlett 1946), estimated here from the sample
autocorrelations with a Bartlett lag window; white inputs give exactly ``1 / N`` whatever the
residuals' colour.  Each check compares the largest standardized correlation over its signal pairs
and lags with the Gaussian quantile at the check's level divided by their number (Bonferroni), so a
check's false-alarm probability on well-posed data is at most its level.

References
----------
L. Ljung, *System Identification: Theory for the User*, 2nd ed., Prentice Hall (1999), Sec.
16.6; M. S. Bartlett, "On the theoretical specification and sampling properties of
autocorrelated time-series", J. R. Stat. Soc. Suppl. 8 (1946) 27-41.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import linalg, special

from dmdidc.inference.checks import Check
from dmdidc.regression.refined import instrument_rows
from dmdidc.regression.solution import EXACT_FIT, lagged_inputs

__all__ = ["ResidualAnalysis", "residual_analysis", "model_residuals", "CORRELATION_LAGS"]

#: Lags ``L`` of the correlation checks (beyond ``max_delay``, at least this many).
CORRELATION_LAGS = 20
#: Half-width of the Bartlett lag window of the autocorrelations in the variance formula.
_WINDOW = 25
#: Residual-signal pairs above which the prewhitened correlations with the signals (one filter
#: per signal and residual) are not computed.
_SIGNAL_PAIRS = 400
#: Fewer residual samples than this: the correlation checks are not applicable.
_MIN_SAMPLES = 100
#: Samples per chunk of :func:`_cross_correlations` (bounds its lag-shifted copies).
_CHUNK = 8192
#: Order of the autoregressive prewhitening filter of each input.
_PREWHITEN_ORDER = 10



def model_residuals(trajectories: list[tuple[np.ndarray, np.ndarray]], A_d: np.ndarray,
                    B_blocks: np.ndarray, intercept: np.ndarray | None = None
                    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Residuals of the model on each trajectory, with the aligned inputs and states.

    Parameters
    ----------
    trajectories : list of (X (n, K+1), U (m, K))
    A_d : ndarray, shape (n, n)
    B_blocks : ndarray, shape (R + 1, n, m)
    intercept : ndarray, shape (n,), optional
        The affine term ``c``.

    Returns
    -------
    list of (E (n, N), U (m, N + R), X (n, N + R))
        Per trajectory with ``K > R``: residuals ``e_k`` for ``k = R .. K - 1``, and the inputs
        and states of samples ``0 .. K - 1`` (so ``e[:, i]`` belongs to sample ``R + i``).
    """
    R = B_blocks.shape[0] - 1
    blocks = np.concatenate(list(B_blocks), axis=1)             # [B^(0) .. B^(R)]
    out = []
    for X, U in trajectories:
        K = U.shape[1]
        if K <= R:
            continue
        E = X[:, R + 1:] - A_d @ X[:, R:K] - blocks @ lagged_inputs(U, R)
        if intercept is not None:
            E = E - intercept[:, None]
        out.append((E, U, X[:, :K]))
    return out


@dataclass(frozen=True, eq=False)
class ResidualAnalysis:
    """Standardized correlations of the residuals (the data of the residual-analysis figure).

    Attributes
    ----------
    parts : tuple of (E (n, N), U (m, N + R), X (n, N + R))
        The residuals with the aligned inputs and signals (:func:`model_residuals`).
    max_delay : int
    lags : ndarray, shape (2 L + 1,)
        ``-L .. L``.
    whiteness_z : ndarray, shape (L + 1, n)
        ``corr(e_i,k , e_i,k-tau) / sd`` at lags ``0 .. L`` (lag 0 is 1 / sd, not tested).
    outlier_z : float
        Largest robustly standardized residual.
    n_samples : int
    relative_residual : float
        ``||E|| / ||x_{k+1}||``: below :data:`EXACT_FIT` the model reproduces the data to
        rounding and the residuals are not tested (rounding errors are structured, not noise).
    input_z : ndarray, shape (2 L + 1, n, m)
        ``corr(e_i,k , u_j,k-tau) / sd`` at each lag ``tau`` (positive: past inputs), each
        input prewhitened (computed when first read).
    state_z : ndarray, shape (L + 1, n, n)
        ``corr(e_i,k , x_j,k-tau) / sd`` at lags ``0 .. L``, each signal prewhitened
        (computed when first read).
    """

    parts: tuple
    max_delay: int
    lags: np.ndarray
    whiteness_z: np.ndarray
    outlier_z: float
    n_samples: int
    relative_residual: float

    @cached_property
    def input_z(self) -> np.ndarray:
        R = self.max_delay
        return _prewhitened_correlations([e for e, _, _ in self.parts],
                                         [u[:, R:] for _, u, _ in self.parts], self.lags,
                                         self._residual_autocovariances)

    @cached_property
    def state_z(self) -> np.ndarray:
        R = self.max_delay
        return _prewhitened_correlations([e for e, _, _ in self.parts],
                                         [x[:, R:] for _, _, x in self.parts],
                                         self.lags[self.lags >= 0],
                                         self._residual_autocovariances)

    @cached_property
    def _residual_autocovariances(self) -> list[np.ndarray] | None:
        """The residuals' autocovariances that both correlations filter: one pass, not two."""
        return _residual_autocovariances([e for e, _, _ in self.parts], self.lags)


def _autocorrelations(series: list[np.ndarray], window: int) -> np.ndarray:
    """Per row, the autocorrelation at lags ``0 .. window`` pooled over trajectories."""
    from dmdidc.regression.instrumental import autocovariances

    cov = autocovariances([s - s.mean(axis=1, keepdims=True) for s in series], window)
    return cov / np.where(cov[0] > 0, cov[0], 1.0)


def _lag_products(x: np.ndarray, y: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """``sum_k x_i,k y_j,k-tau`` over the samples where both exist, (rows_x, len(lags), rows_y).

    All lags in one matrix product per chunk of samples: ``x`` against the lag-shifted copies
    of ``y`` (zero outside the trajectory), so ``x`` is read once, not once per lag.
    """
    N = x.shape[1]
    out = np.zeros((x.shape[0], lags.size, y.shape[0]))
    step = max(1024, _CHUNK // max(y.shape[0], 1))      # bounded copies of many rows of y
    for c0 in range(0, N, step):
        c1 = min(N, c0 + step)
        shifted = np.zeros((lags.size, y.shape[0], c1 - c0))
        for i, tau in enumerate(lags):
            low, high = max(c0, tau), min(c1, N + tau)     # 0 <= k - tau < N
            if low < high:
                shifted[i, :, low - c0:high - c0] = y[:, low - tau:high - tau]
        out += (x[:, c0:c1] @ shifted.reshape(-1, c1 - c0).T).reshape(out.shape)
    return out


def _cross_correlations(a: list[np.ndarray], b: list[np.ndarray], lags: np.ndarray
                        ) -> np.ndarray:
    """``corr(a_i,k , b_j,k-tau)`` for every lag (pooled), shape (len(lags), rows_a, rows_b)."""
    out = np.zeros((a[0].shape[0], lags.size, b[0].shape[0]))
    var_a, var_b = np.zeros(a[0].shape[0]), np.zeros(b[0].shape[0])
    for x, y in zip(a, b, strict=True):
        x = x - x.mean(axis=1, keepdims=True)
        y = y - y.mean(axis=1, keepdims=True)
        var_a += np.sum(x * x, axis=1)
        var_b += np.sum(y * y, axis=1)
        out += _lag_products(x, y, lags)
    scale = np.sqrt(np.outer(np.where(var_a > 0, var_a, 1.0), np.where(var_b > 0, var_b, 1.0)))
    return out.transpose(1, 0, 2) / scale


def _tail_products(x: np.ndarray, y: np.ndarray, order: int, shifts: np.ndarray) -> np.ndarray:
    """``sum_{i = N - p}^{N - 1} x_i,k y_i - d`` (``y`` zero beyond its end) for ``p = 0 ..
    order`` and every shift ``d``: shape (rows, order + 1, len(shifts)); ``y`` has one row or
    the rows of ``x``.  The end effects of an FIR filter applied to ``x`` (module notes)."""
    N = x.shape[1]
    indices = np.arange(N - order, N)[:, None] - shifts[None, :]            # (order, shifts)
    valid = (indices >= 0) & (indices < N)
    products = x[:, N - order:, None] * np.where(valid, y[:, np.clip(indices, 0, N - 1)], 0.0)
    tails = np.zeros((x.shape[0], order + 1, shifts.size))
    tails[:, 1:] = np.cumsum(products[:, ::-1], axis=1)
    return tails


def _filtered_correlations(E: list[np.ndarray], Sw: list[np.ndarray], a: np.ndarray,
                           lags: np.ndarray, window: int, autocov: list[np.ndarray]
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every signal ``j`` (filter ``a[j]``, filtered signal ``Sw[.][j]``) and ``Ew =
    lfilter(a[j], E)`` (zero initial state): the pooled centred autocovariance of ``Ew`` (lags
    ``0 .. window``, shape (rows, window + 1, n)), its cross products with the centred ``Sw[j]``
    at ``lags`` (rows, n, len(lags)) and the centred energy of ``Sw[j]`` (rows,) -- without
    filtering ``E``, and reading it once for all signals.

    ``Ew_k = sum_p a_p E_{k-p}``, so its products are those of ``E`` (``autocov``: lags
    ``0 .. window + q``, means not removed) combined with the filter, less the last ``p``
    samples that the filter cuts off (:func:`_tail_products`); the means come from the first
    and last samples of ``Ew`` (filtered directly).  Exact: the same sums as filtering ``E``
    (only rounding differs).  ``a`` is (rows, q + 1), shorter filters padded with zeros.
    """
    J, q = a.shape[0], a.shape[1] - 1
    taus = np.arange(window + 1)
    d = taus[:, None, None] + np.arange(q + 1)[None, None, :] - np.arange(q + 1)[None, :, None]
    weights = a[:, :, None] * a[:, None, :]                                 # (j, p, p')
    edge = max(window, int(np.max(np.abs(lags)))) + 1
    shifts = np.arange(int(lags.min()) - q, int(lags.max()) + 1)
    p_index = np.broadcast_to(np.arange(q + 1)[None, :, None], d.shape)
    n = E[0].shape[0]
    cov = np.zeros((J, window + 1, n))
    cross = np.zeros((J, n, lags.size))
    energy = np.zeros(J)

    def fir_rows(x: np.ndarray) -> np.ndarray:           # every filter on x: (j, n, samples)
        padded = np.concatenate([np.zeros((x.shape[0], q)), x], axis=1)
        stack = np.stack([padded[:, q - p:q - p + x.shape[1]] for p in range(q + 1)])
        return np.einsum("jp,pik->jik", a, stack)

    def prefix(x: np.ndarray) -> np.ndarray:
        return np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, axis=-1)], axis=-1)

    for e, sw, gamma in zip(E, Sw, autocov, strict=True):
        N = e.shape[1]
        head = fir_rows(e[:, :edge])
        tail = fir_rows(e[:, N - edge - q:])[:, :, q:]
        suffix = prefix(e[:, :N - q - 1:-1])[:, :q + 1]
        total = a @ (e.sum(axis=1)[None, :] - suffix.T)                    # (j, n): sum_k Ew_k
        mean = total / N
        # sum_{k >= tau} Ew_k Ew_{k - tau}: E's products (all signals) combined per filter
        tails = _tail_products(e, e, q, np.arange(-q, window + q + 1))       # (rows, p, d + q)
        raw = np.einsum("jpq,tpqr->jtr", weights, gamma[np.abs(d)]
                        - tails[:, p_index, d + q].transpose(1, 2, 3, 0))
        head_sums, tail_sums = prefix(head), prefix(tail[:, :, ::-1])
        cov += (raw - mean[:, None, :] * (2 * total[:, None, :]
                                          - head_sums[:, :, taus].transpose(0, 2, 1)
                                          - tail_sums[:, :, taus].transpose(0, 2, 1))
                + (N - taus)[None, :, None] * mean[:, None, :] ** 2)
        # sum_k Ew_k Sw_{k - tau} over the samples where both exist
        products = _lag_products(e, sw, shifts).transpose(2, 0, 1)           # (j, rows, shifts)
        low, high = np.maximum(lags, 0), np.minimum(N, N + lags)
        sw_sums = prefix(sw)
        centre = sw_sums[:, -1] / N
        for j in range(J):
            tails = _tail_products(e, sw[j][None], q, shifts)
            filtered = sum(a[j, p] * (products[j][:, lags - p - shifts[0]]
                                      - tails[:, p, lags - p - shifts[0]]) for p in range(q + 1))
            ew_inside = total[j][:, None] - head_sums[j][:, low] - tail_sums[j][:, N - high]
            cross[j] += (filtered - mean[j][:, None] * (sw_sums[j][high - lags]
                                                        - sw_sums[j][low - lags])
                         - centre[j] * ew_inside + (high - low) * mean[j][:, None] * centre[j])
        energy += np.sum((sw - centre[:, None]) ** 2, axis=1)
    return cov, cross, energy


def _prewhitening_filter(series: list[np.ndarray], order: int) -> np.ndarray:
    """Yule-Walker AR filter ``[1, -a_1, .., -a_q]`` of one signal (pooled trajectories)."""
    return _yule_walker(_autocorrelations([s[None] for s in series], order)[:, 0], order)


def _yule_walker(rho: np.ndarray, order: int) -> np.ndarray:
    """The AR filter ``[1, -a_1, .., -a_q]`` of the autocorrelation ``rho`` (lags 0 .. order)."""
    if rho[0] <= 0 or order == 0:
        return np.ones(1)
    try:
        a = linalg.solve_toeplitz(rho[:order], rho[1:order + 1])
    except (linalg.LinAlgError, ValueError):
        return np.ones(1)
    return np.concatenate([[1.0], -a])


def _fir(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``y_k = sum_j a_j x_{k-j}`` along the last axis (``x`` zero before the start): the causal
    FIR filter ``scipy.signal.lfilter(a, [1], x)`` for the few taps of a prewhitening filter,
    without importing scipy.signal (which loads scipy.stats, ~0.5 s, on every fit)."""
    K = x.shape[-1]
    if K == 0:
        return np.zeros(x.shape)
    rows = x.reshape(-1, K)
    y = np.empty(rows.shape)
    for i, row in enumerate(rows):      # np.convolve: one C loop per row, as fast as lfilter
        y[i] = np.convolve(row, a)[:K]
    return y.reshape(x.shape)


def _bartlett_sd(rho_a: np.ndarray, rho_b: np.ndarray, n_samples: int) -> np.ndarray:
    """Standard deviation of a cross-correlation of independent series (rows_a, rows_b)."""
    window = rho_a.shape[0] - 1
    taper = 1.0 - np.arange(window + 1) / (window + 1)
    weights = np.concatenate([[1.0], 2.0 * taper[1:]])
    variance = np.einsum("v,va,vb->ab", weights, rho_a, rho_b) / n_samples
    return np.sqrt(np.maximum(variance, 0.25 / n_samples))


def _filter_sizes(E: list[np.ndarray]) -> tuple[int, int, int]:
    """Samples ``N``, the Bartlett ``window`` and the prewhitening ``order`` for residuals ``E``."""
    N = sum(e.shape[1] for e in E)
    return N, min(_WINDOW, max(N // 10, 1)), min(_PREWHITEN_ORDER, max(N // 50, 0))


def _residual_autocovariances(E: list[np.ndarray], lags: np.ndarray
                              ) -> list[np.ndarray] | None:
    """Per trajectory, the autocovariance of ``E`` (means not removed) at lags ``0 .. window +
    order`` that :func:`_filtered_correlations` combines with each filter; ``None`` when a
    trajectory is too short for that (the residuals are filtered directly).  Any ``lags`` up to
    ``max(|lags|)`` may use it."""
    from dmdidc.regression.instrumental import autocovariances

    _, window, order = _filter_sizes(E)
    edge = max(window, int(np.max(np.abs(lags)))) + 1
    if not all(e.shape[1] > 2 * (edge + 2 * order + window) for e in E):
        return None
    return [autocovariances([e], window + order) for e in E]


def _prewhitened_correlations(E: list[np.ndarray], signals: list[np.ndarray],
                              lags: np.ndarray, autocov: list[np.ndarray] | None = None
                              ) -> np.ndarray:
    """Standardized ``corr(e_i,k , s_j,k-tau)``, each signal ``j`` prewhitened by its own AR
    filter and the residuals filtered alike (module notes); shape (len(lags), n, rows).

    The filtered residuals' moments come from those of the residuals (``autocov``, from
    :func:`_residual_autocovariances` with lags reaching as far as these), computed once for
    every signal (:func:`_filtered_correlations`); trajectories too short for that are filtered.
    """
    N, window, order = _filter_sizes(E)
    out = np.zeros((lags.size, E[0].shape[0], signals[0].shape[0]))
    if autocov is None:
        autocov = _residual_autocovariances(E, lags)
    rows = signals[0].shape[0]
    if rows == 0:                  # no inputs: nothing to correlate with
        return out
    # every signal's autocorrelation in one pass (lags 0 .. order, then 0 .. window filtered)
    rho = _autocorrelations(signals, order)
    filters = [_yule_walker(rho[:, j], order) for j in range(rows)]
    Sw = [np.stack([_fir(f, s[j]) for j, f in enumerate(filters)]) for s in signals]
    rho_sw = _autocorrelations(Sw, window)
    if autocov is not None:        # every signal's moments from one read of the residuals
        taps = np.zeros((rows, max(f.size for f in filters)))
        for j, f in enumerate(filters):
            taps[j, :f.size] = f   # zero taps: the same filter
        moments = _filtered_correlations(E, Sw, taps, lags, window, autocov)
    for j, a in enumerate(filters):
        rho_s = rho_sw[:, j:j + 1]
        if autocov is not None:
            cov, cross, energy = (m[j] for m in moments)
            rho_e = cov / np.where(cov[0] > 0, cov[0], 1.0)
            scale = np.sqrt(np.where(cov[0] > 0, cov[0], 1.0) * (energy if energy > 0 else 1.0))
            correlation = (cross / scale[:, None]).T
        else:
            Sw_j = [sw[j][None] for sw in Sw]
            Ew = [_fir(a, e) for e in E]
            rho_e = _autocorrelations(Ew, window)
            correlation = _cross_correlations(Ew, Sw_j, lags)[:, :, 0]
        out[:, :, j] = correlation / _bartlett_sd(rho_e, rho_s, N)[:, 0]
    return out


def residual_analysis(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], max_delay: int,
                      lags: int | None = None) -> ResidualAnalysis | None:
    """Residual whiteness, outliers and (on demand) correlations; ``None`` with too few
    samples.

    Parameters
    ----------
    parts : list of (E, U, X)
        From :func:`model_residuals`.
    max_delay : int
        ``R``.
    lags : int, optional
        ``L`` (default ``max(R + 10, 20)``).

    Returns
    -------
    ResidualAnalysis or None
    """
    R = max_delay
    L = lags if lags is not None else max(R + 10, CORRELATION_LAGS)
    E = [e for e, _, _ in parts]
    N = sum(e.shape[1] for e in E)
    if N < _MIN_SAMPLES:
        return None
    rho_e = _autocorrelations(E, L)
    # whiteness: lags >= 2 against Bartlett's variance for a moving average of order one
    whiteness_z = rho_e / np.sqrt((1.0 + 2.0 * rho_e[1] ** 2) / N)
    stacked = np.concatenate(E, axis=1)
    centre = np.median(stacked, axis=1, keepdims=True)
    mad = 1.482602218505602 * np.median(np.abs(stacked - centre), axis=1, keepdims=True)
    rms = np.sqrt(np.mean((stacked - centre) ** 2, axis=1, keepdims=True))
    scale = np.where(mad > 0, mad, np.maximum(rms, np.finfo(float).tiny))
    outlier_z = float(np.max(np.abs(stacked - centre) / scale))
    targets = np.sqrt(sum(float(np.sum(x[:, R + 1:] ** 2)) for _, _, x in parts)
                      + sum(float(np.sum(e ** 2)) for e in E))
    relative = float(np.sqrt(np.sum(stacked ** 2)) / max(targets, np.finfo(float).tiny))
    return ResidualAnalysis(tuple(parts), R, np.arange(-L, L + 1), whiteness_z, outlier_z, N,
                            relative)


def _critical(level: float, count: int) -> float:
    """Two-sided Gaussian quantile at ``level / count`` (Bonferroni)."""
    return float(special.ndtri(1.0 - level / (2.0 * max(count, 1))))


def _largest(z: np.ndarray) -> tuple[float, tuple[int, ...]]:
    index = np.unravel_index(int(np.argmax(np.abs(z))), z.shape)
    return float(abs(z[index])), tuple(int(i) for i in index)


def residual_checks(analysis: ResidualAnalysis | None, level: float, *,
                    robust: bool = False, reference: bool = False,
                    correlations: bool = True) -> list[Check]:
    """The five residual checks at family-wise ``level`` each (module notes).

    Parameters
    ----------
    analysis : ResidualAnalysis or None
        ``None`` (too few samples, or no data: statistics) makes every check not applicable.
    level : float
        False-alarm probability of each check on well-posed data.
    robust : bool, default False
        The fit bounds the influence of outliers: outliers are reported, not failed.
    reference : bool, default False
        The fit's instruments come from a reference signal: feedback is expected (the
        inputs react to the noise in a closed loop) and handled, so it is reported, not failed;
        input correlation at lag 0 is feedback too and is not tested.
    correlations : bool, default True
        Test the correlations with inputs and signals; ``False`` leaves them to
        :func:`moment_checks` (placeholders are returned for the caller to replace).

    Returns
    -------
    list of Check
    """
    names = [("input_correlation", "Are the residuals uncorrelated with past inputs?"),
             ("feedback", "Are the residuals uncorrelated with future inputs (no feedback)?"),
             ("whiteness", "Are the residuals white beyond lag 1?"),
             ("state_completeness", "Do past signals predict nothing the model misses "
                                    "(the signals are the full state)?"),
             ("outliers", "Are the residuals free of outliers?")]
    if analysis is None:
        return [Check(name, question, None, finding="not applicable: no residual series "
                      "(statistics were fitted, or fewer than 100 residual samples)")
                for name, question in names]
    if analysis.relative_residual < EXACT_FIT:
        return [Check(name, question, True, finding=f"the model reproduces the data to "
                      f"rounding (relative residual {analysis.relative_residual:.2g})")
                for name, question in names]
    R, lags = analysis.max_delay, analysis.lags
    L = int(lags.max())
    if not correlations:
        later = [Check(name, question, None, finding="see the moment tests")
                 for name, question in names]
        return [later[0], later[1], _whiteness_check(analysis, level, *names[2]), later[3],
                _outlier_check(analysis, level, robust, *names[4])]
    checks = []
    past = analysis.input_z[lags >= (1 if reference else 0)]
    if past.size:
        z, (tau, i, j) = _largest(past)
        tau += int(reference)
        critical = _critical(level, past.size)
        beyond = tau > R
        remedy = (f"the delay of input {j} may exceed max_delay={R}, or dynamics are missing "
                  f"(states not measured): raise max_delay, or measure every state"
                  if beyond else
                  f"the model's structure (one delay per input channel, blocks w and w + 1) "
                  f"does not fit input {j}: a distributed delay, or missing dynamics")
        checks.append(Check(names[0][0], names[0][1], z <= critical, z, critical,
                            f"largest correlation of residual {i} with input {j} at lag {tau} "
                            f"is {z:.2f} standard deviations", remedy if z > critical else ""))
    else:
        checks.append(Check(names[0][0], names[0][1], None, finding="no inputs"))
    future = analysis.input_z[lags < 0]
    if future.size:
        z, (k, i, j) = _largest(future)
        critical = _critical(level, future.size)
        found = z > critical
        checks.append(Check(
            names[1][0], names[1][1], z <= critical or reference, z, critical,
            f"largest correlation of residual {i} with input {j} {L - k} samples later: "
            f"{z:.2f} standard deviations"
            + (": the inputs react to the noise, as in a closed loop" if found else "")
            + ("; the reference's instruments account for it" if found and reference else ""),
            "closed-loop data: pass the reference or dither that excites the loop, "
            "fit(..., reference=r), so the instruments are independent of the noise; without "
            "an external excitation closed-loop data cannot identify the plant consistently"
            if found and not reference else ""))
    else:
        checks.append(Check(names[1][0], names[1][1], None, finding="no inputs"))
    checks.append(_whiteness_check(analysis, level, *names[2]))
    n = analysis.whiteness_z.shape[1]
    if n * n > _SIGNAL_PAIRS:
        checks.append(Check(*names[3], None, finding=f"not computed: {n * n} pairs of residuals "
                                                     f"and signals exceed {_SIGNAL_PAIRS}"))
    else:
        states = analysis.state_z[1:]
        z, (tau, i, j) = _largest(states)
        critical = _critical(level, states.size)
        checks.append(Check(
            names[3][0], names[3][1], z <= critical, z, critical,
            f"largest correlation of residual {i} with signal {j} {tau + 1} samples earlier: "
            f"{z:.2f} standard deviations",
            "the signals may not be the full state (e.g. y = C x with fewer signals than "
            "states, or an unmeasured state): DMDidc needs every state; measure all states, or "
            "identify from the outputs with OutputDMDidc" if z > critical else ""))
    checks.append(_outlier_check(analysis, level, robust, *names[4]))
    return checks



def _whiteness_check(analysis: ResidualAnalysis, level: float, name: str,
                     question: str) -> Check:
    white = analysis.whiteness_z[2:]
    z, (tau, i) = _largest(white)
    critical = _critical(level, white.size)
    return Check(
        name, question, z <= critical, z, critical,
        f"largest autocorrelation of residual {i} beyond lag 1: {z:.2f} standard deviations "
        f"at lag {tau + 2}"
        + (": the noise is coloured or the model misses dynamics" if z > critical else ""),
        "the default instrumental-variable fit stays consistent under coloured noise, but "
        "standard errors, the block test and the intervals assume white noise and may be too "
        "narrow: compare with confidence_intervals(method='bootstrap') over independent "
        "experiments" if z > critical else "")


def _outlier_check(analysis: ResidualAnalysis, level: float, robust: bool, name: str,
                   question: str) -> Check:
    critical = _critical(level, analysis.n_samples * analysis.whiteness_z.shape[1])
    z = analysis.outlier_z
    handled = robust and z > critical
    return Check(
        name, question, z <= critical or handled, z, critical,
        f"the largest residual is {z:.3g} robust standard deviations from the median"
        + ("; the robust fit bounds their influence" if handled else ""),
        "estimator='huber_iv' bounds the influence of outliers (or remove the bad samples)"
        if z > critical and not handled else "")


#: Lags of the moment tests: past inputs ``R + 1 .. R + L``, future inputs ``1 .. L``, past
#: signals ``1 .. S``.
MOMENT_LAGS = 10
STATE_LAGS = 2
#: Largest number of moments (signals x residuals) a moment test forms the covariance of:
#: by a Kronecker product for signals independent of the noise, by products of the moment
#: series otherwise (cost ~ moments^2 x samples x lags).
_MOMENTS_INDEPENDENT = 2000
_MOMENTS_DEPENDENT = 120


def _shifted(signal_: np.ndarray, lags: range, start: int, stop: int) -> np.ndarray:
    """Rows ``signal[:, k - l]`` for each ``l`` in ``lags`` (negative: future), ``k`` in
    ``start .. stop - 1``."""
    return np.concatenate([signal_[:, start - lag:stop - lag] for lag in lags])


def moment_checks(trajectories: list[tuple[np.ndarray, np.ndarray]], signals: list[np.ndarray],
                  coefficients: np.ndarray, *, max_delay: int, centred: bool, level: float,
                  reference: bool = False, kind: str = "exogenous") -> list[Check]:
    """Residual checks as tests of moment conditions, corrected for the fit's estimation error.

    A correct model leaves its residuals ``e_k`` uncorrelated with any signal ``w_k`` that is
    independent of the noise: past inputs beyond the bound (missing dynamics, a longer delay),
    future inputs (feedback, in open loop) and past measured signals (a full state is Markov).
    The sample moments ``g = sum_k w_k e_k^T`` of the *fitted* residuals differ from those of
    the true errors by the fit's own error ``Theta^ - Theta = sum_l e_l h_l^T`` (``h_l``
    the projected instruments, :func:`dmdidc.regression.instrumental.long_run_covariance`), so
    ``g = sum_k w~_k e_k^T`` with ``w~_k = w_k - S_wphi h_k``: the statistic
    ``vec(g)^T V^+ vec(g)`` with the long-run (HAC) covariance ``V`` of ``w~_k e_k^T`` is
    ``chi^2`` with ``rank(V)`` degrees of freedom when the model is right (Hansen's test of
    overidentifying restrictions, one group of moments at a time).  Smooth (low-pass) inputs
    or signals do not raise it falsely, unlike raw residual correlations.

    Parameters
    ----------
    trajectories : list of (X, U)
    signals : list of ndarray (q, K)
        The fit's instrument signals.
    kind : {"exogenous", "simulated"}
        How they instrument (:func:`dmdidc.regression.refined.instrument_rows`).
    coefficients : ndarray, shape (n, p)
        The unrestricted IV coefficients.
    max_delay : int
    centred : bool
    level : float
        Level of each test.
    reference : bool
        The instruments come from a reference (closed loop): feedback is expected and
        reported, not failed; lag 0 of the inputs is feedback too.

    Returns
    -------
    list of Check
        ``input_correlation``, ``feedback``, ``state_completeness``.
    """
    from dmdidc.regression.instrumental import _inverse_sqrt, hac_lags, residual_memory

    R, L, S = max_delay, MOMENT_LAGS, STATE_LAGS
    n, p = coefficients.shape
    start_lag = R + L
    groups = {"past": [], "future": [], "state": []}
    Phi, Y, Z = [], [], []
    for (X, U), E in zip(trajectories, signals, strict=True):
        K = U.shape[1]
        start, stop = start_lag, K - L
        if stop - start < 2:
            continue
        ks = np.arange(start, stop)
        Phi.append(np.concatenate([X[:, ks], _shifted(U, range(R + 1), start, stop)]))
        Y.append(X[:, ks + 1])
        Z.append(instrument_rows(kind, U, E, R, start, stop))
        groups["past"].append(_shifted(U, range(R + 1, R + L + 1), start, stop))
        groups["future"].append(_shifted(U, range(-1, -L - 1, -1), start, stop))
        groups["state"].append(_shifted(X, range(1, S + 1), start, stop))
    names = {"past": ("input_correlation", "Are the residuals uncorrelated with past inputs "
                      "beyond max_delay (no missing dynamics)?"),
             "future": ("feedback", "Are the residuals uncorrelated with future inputs "
                        "(no feedback)?"),
             "state": ("state_completeness", "Do past signals add nothing to the model (the "
                       "signals are the full state)?")}
    lengths = [phi.shape[1] for phi in Phi]
    if sum(lengths) < _MIN_SAMPLES or U.shape[0] == 0:
        return [Check(name, question, None, finding="too few samples, or no inputs")
                for name, question in names.values()]
    Phi_all, Z_all = np.concatenate(Phi, axis=1), np.concatenate(Z, axis=1)
    E_all = np.concatenate(Y, axis=1) - coefficients @ Phi_all
    if centred:
        Phi_all = Phi_all - Phi_all.mean(axis=1, keepdims=True)
        Z_all = Z_all - Z_all.mean(axis=1, keepdims=True)
        E_all = E_all - E_all.mean(axis=1, keepdims=True)
    z_scale, Lz = _inverse_sqrt(Z_all @ Z_all.T)
    B = Lz @ ((Z_all @ Phi_all.T) / z_scale[:, None])
    G = (Lz.T @ B @ np.linalg.pinv(B.T @ B)) / z_scale[:, None]
    H = G.T @ Z_all                                            # projected instruments (p, N)
    cuts = np.cumsum(lengths)[:-1]
    residuals = np.split(E_all, cuts, axis=1)
    memory = residual_memory(residuals)                     # one pass of up to 100 lags
    independent_lags = hac_lags(residuals, memory)
    dependent_lags = max(independent_lags, 2 * (memory + S + 1))
    checks = []
    for group, (name, question) in names.items():
        W = np.concatenate(groups[group], axis=1)
        independent = group != "state"     # inputs are independent of the noise (open loop)
        limit = _MOMENTS_INDEPENDENT if independent else _MOMENTS_DEPENDENT
        if W.shape[0] * n > limit:
            checks.append(Check(name, question, None,
                                finding=f"not computed: {W.shape[0] * n} moments exceed "
                                        f"{limit} (a long-run covariance of that size); see "
                                        f"the correlations of diagnostics_.plot()"))
            continue
        if centred:
            W = W - W.mean(axis=1, keepdims=True)
        W = W - (W @ Phi_all.T) @ H                            # the estimation-error correction
        statistic, rank, z, index = _moment_statistic(
            np.split(W, cuts, axis=1), residuals,
            independent_lags if independent else dependent_lags, independent)
        critical = float(special.chdtri(max(rank, 1), level))
        row, residual = divmod(index, n)
        width = U.shape[0] if group != "state" else n
        lag, channel = divmod(row, width)
        checks.append(_moment_check(group, name, question, statistic, critical, z, lag, channel,
                                    residual, R, reference))
    return checks


def _moment_statistic(W: list[np.ndarray], E: list[np.ndarray], lags: int, independent: bool
                      ) -> tuple[float, int, float, int]:
    """``vec(g)^T V^+ vec(g)``, its degrees of freedom, and the largest ``|g_i| / sd_i``."""
    q, n = W[0].shape[0], E[0].shape[0]
    N = sum(e.shape[1] for e in E)
    g = sum(w @ e.T for w, e in zip(W, E, strict=True)).ravel()       # row-major (q, n)
    V = np.zeros((q * n, q * n))
    if independent:
        for tau in range(lags + 1):
            weight = 1.0 if tau == 0 else 1.0 - tau / (lags + 1.0)
            Wt = sum(w[:, tau:] @ w[:, :w.shape[1] - tau].T for w in W if w.shape[1] > tau)
            Et = sum(e[:, tau:] @ e[:, :e.shape[1] - tau].T for e in E if e.shape[1] > tau) / N
            term = np.kron(Wt, Et)
            V += term if tau == 0 else weight * (term + term.T)
    else:
        # sum_k sum_l weight(|k - l|) m_k m_l^T: each moment series smoothed by the Bartlett
        # kernel (within its trajectory), then one product -- not one product per lag.
        for w, e in zip(W, E, strict=True):
            moments = (w[:, None, :] * e[None, :, :]).reshape(q * n, -1)
            smoothed = moments.copy()
            for tau in range(1, min(lags, moments.shape[1] - 1) + 1):
                weight = 1.0 - tau / (lags + 1.0)
                smoothed[:, tau:] += weight * moments[:, :-tau]
                smoothed[:, :-tau] += weight * moments[:, tau:]
            V += moments @ smoothed.T
    V = 0.5 * (V + V.T)
    statistic, rank = _pseudo_quadratic(V, g)
    sd = np.sqrt(np.clip(np.diag(V), np.finfo(float).tiny, None))
    index = int(np.argmax(np.abs(g) / sd))
    return statistic, rank, float(abs(g[index]) / sd[index]), index


#: Eigenvalues of a moment covariance below this fraction of the largest count as zero.
_MOMENT_RANK_RTOL = 1e-10


def _pseudo_quadratic(V: np.ndarray, g: np.ndarray) -> tuple[float, int]:
    """``(g^T V^+ g, rank)`` with eigenvalues below ``_MOMENT_RANK_RTOL`` of the largest
    dropped: by Cholesky (a tenth of the cost of the eigen-decomposition) when ``V`` is
    safely non-singular, by the eigen-decomposition otherwise."""
    from scipy import linalg

    try:
        factor, lower = linalg.cho_factor(V, lower=True, check_finite=False)
        rcond, info = linalg.lapack.dpocon(factor, np.linalg.norm(V, 1), uplo="L")
    except linalg.LinAlgError:
        rcond, info = 0.0, 1
    # kappa_2 <= size kappa_1, and the 1-norm estimate is within a small factor (10 here):
    # then every eigenvalue is above the threshold and g^T V^-1 g is the pseudo-inverse form
    if info == 0 and rcond > 10 * V.shape[0] * _MOMENT_RANK_RTOL:
        whitened = linalg.solve_triangular(factor, g, lower=True, check_finite=False)
        return float(whitened @ whitened), V.shape[0]
    values, vectors = np.linalg.eigh(V)
    keep = values > _MOMENT_RANK_RTOL * max(values.max(), np.finfo(float).tiny)
    projected = vectors[:, keep].T @ g
    return float(np.sum(projected ** 2 / values[keep])), int(keep.sum())


def _moment_check(group: str, name: str, question: str, statistic: float, critical: float,
                  z: float, lag: int, channel: int, residual: int, R: int,
                  reference: bool) -> Check:
    failed = statistic > critical
    if group == "past":
        where = f"input {channel} at lag {R + 1 + lag}"
        meaning = ("the delay may exceed max_delay, or dynamics are missing (states not "
                   "measured)")
        remedy = (f"raise max_delay (now {R}), or measure every state" if failed else "")
    elif group == "future":
        where = f"input {channel} {lag + 1} samples later"
        meaning = "the inputs react to the noise, as in a closed loop"
        remedy = ("closed-loop data: pass the reference or dither that excites the loop, "
                  "fit(..., reference=r), so the instruments are independent of the noise; "
                  "without an external excitation closed-loop data cannot identify the plant "
                  "consistently" if failed and not reference else "")
    else:
        where = f"signal {channel} {lag + 1} samples earlier"
        meaning = "the signals are not a Markov state"
        remedy = ("the signals may not be the full state (e.g. y = C x with fewer signals "
                  "than states, or an unmeasured state): DMDidc needs every state; measure all "
                  "states, or identify from the outputs with OutputDMDidc" if failed else "")
    finding = (f"moment statistic {statistic:.3g}; largest: residual {residual} with {where} "
               f"({z:.2f} standard deviations)")
    if failed:
        finding += f": {meaning}"
        if group == "future" and reference:
            finding += "; the reference's instruments account for it"
    passed = not failed or (group == "future" and reference)
    return Check(name, question, passed, statistic, critical, finding, remedy)
