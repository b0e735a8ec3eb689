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
  at longer lags means coloured noise (or missing dynamics).  Residuals the outlier check
  flags are clipped at its threshold first, so a few spikes cannot hide the colour;
* **state completeness**: correlation with the measured signals at lags ``1 .. L``: a full
  state is Markov, so its past carries nothing the present does not; signals that are not the
  whole state (``y = C x`` with fewer signals than states) leave residuals that the past
  signals predict;
* **outliers**: residuals beyond the Gaussian range, robustly standardized (median and MAD
  per series), against a threshold raised by the MAD scale's own sampling error
  (:func:`outlier_threshold`).

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

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from scipy import linalg, special
from scipy.linalg import blas

from dmdidc.errors import ParameterError
from dmdidc.inference.checks import Check
from dmdidc.inference.moment_gram import corrected_moments
from dmdidc.regression.instrumental import (
    TrimmedMoments,
    hac_lags,
    instrument_moments,
    lagged_moments,
    projected_instruments,
    regressor_moments,
    residual_memory,
)
from dmdidc.regression.lag_products import (
    PieceLayout,
    autocorrelations,
    autocovariances,
    lag_product_sets,
    lag_products,
)
from dmdidc.regression.robust import _MAD_TO_SIGMA
from dmdidc.regression.solution import EXACT_FIT, _column_scale, coefficient_blocks

__all__ = ["ResidualAnalysis", "residual_analysis", "model_residuals", "CORRELATION_LAGS",
           "largest_robust_residual", "largest_residual", "LargestResidual",
           "robust_deviations", "outlier_threshold"]

#: Lags ``L`` of the correlation checks (beyond ``max_delay``, at least this many).
CORRELATION_LAGS = 20
#: Half-width of the Bartlett lag window of the autocorrelations in the variance formula.
_WINDOW = 25
#: Residual-signal pairs above which the prewhitened correlations with the signals (one filter
#: per signal and residual) are not computed.
_SIGNAL_PAIRS = 400
#: Fewer residual samples than this: the correlation checks are not applicable.
_MIN_SAMPLES = 100
#: Rows from which :func:`_prefix` adds whole columns instead of calling ``np.cumsum``.
_PREFIX_ROWS = 512
#: Order of the autoregressive prewhitening filter of each input.
_PREWHITEN_ORDER = 10
#: Standard deviations of the robust scale's sampling error added to the outlier threshold.
_SCALE_SPREAD = 3.0
#: ``sqrt(N)`` times the relative standard deviation of ``1.4826 MAD`` for Gaussian data
#: (asymptotic variance of a median, ``1 / (4 f^2)`` with ``f = 2 phi(q)`` the density of ``|e|``
#: at its median ``q = 0.6745``, relative to ``q^2``: 1.36, square-rooted).
_MAD_RELATIVE_SD = 1.166
#: Level of the test that pieces of data have the same noise level (:func:`largest_residual`):
#: beyond it each piece's residuals are standardized by their own robust scales.
_SCALE_EQUALITY_LEVEL = 1e-3
#: Fewest residuals of a piece for that test (a MAD of fewer is too rough to compare).
_OWN_SCALE_SAMPLES = 30
#: Lags of the autocorrelations in the Bartlett factor of that test's variance.
_BARTLETT_LAGS = 50
#: Samples per block of the robust deviations (:func:`_robust_rows`): a few megabytes.
_DEVIATION_BLOCK = 4096
#: Rows of at least this many values have their medians bracketed by a strided sample of
#: about ``_BRACKET_SAMPLE`` of them (:func:`_bracketed_medians`).
_BRACKET_SAMPLES, _BRACKET_SAMPLE = 4096, 1024



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
    # [A_d, B^(0) .. B^(R)] on [x_k; u_k; ..; u_{k-R}]: one product and one difference, in
    # place (no partial sums of the size of the data); the regressors stacked in one copy
    theta = np.concatenate([A_d] + list(B_blocks), axis=1)
    out = []
    for X, U in trajectories:
        K = U.shape[1]
        if K <= R:
            continue
        E = theta @ np.concatenate([X[:, R:K]] + [U[:, R - j:K - j] for j in range(R + 1)])
        np.subtract(X[:, R + 1:], E, out=E)
        if intercept is not None:
            E -= intercept[:, None]
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
    outlier_scaling : LargestResidual
        It, with the scales behind it (:func:`largest_residual`).
    n_samples : int
    relative_residual : float
        ``||E|| / ||x_{k+1}||``: below :data:`EXACT_FIT` the model reproduces the data to
        rounding and the residuals are not tested (rounding errors are structured, not noise):
        ``whiteness_z`` and ``outlier_z`` are then computed only when first read (for the
        figure), as the correlations are.
    trend : ndarray, shape (L + 1,), or None
        The bias the fit's per-trajectory trends put into the residuals' lagged products, in
        units of ``gamma_0 + 2 gamma_1`` (:func:`_trend_bias`), corrected in ``whiteness_z``;
        ``None``: no trend was removed.
    input_z : ndarray, shape (2 L + 1, n, m)
        ``corr(e_i,k , u_j,k-tau) / sd`` at each lag ``tau`` (positive: past inputs), each
        input prewhitened (computed with the analysis, or when first read).
    state_z : ndarray, shape (L + 1, n, n)
        ``corr(e_i,k , x_j,k-tau) / sd`` at lags ``0 .. L``, each signal prewhitened
        (computed with the analysis when ``n^2`` is at most :data:`_SIGNAL_PAIRS`, else when
        first read).
    """

    parts: tuple
    max_delay: int
    lags: np.ndarray
    n_samples: int
    relative_residual: float
    trend: np.ndarray | None = field(default=None, repr=False)
    _correlations: dict = field(default_factory=dict, repr=False)
    _tests: dict = field(default_factory=dict, repr=False)

    @cached_property
    def whiteness_z(self) -> np.ndarray:
        if "whiteness" not in self._tests:
            moments, _ = _correlations(self.parts, self.max_delay, int(self.lags.max()), ())
            return _whiteness_z(moments, int(self.lags.max()), self.trend)
        return self._tests["whiteness"]

    @cached_property
    def outlier_z(self) -> float:
        return self.outlier_scaling.z

    @cached_property
    def outlier_scaling(self) -> LargestResidual:
        if "outliers" not in self._tests:
            return _outlier_z(self.parts)
        return self._tests["outliers"]

    @cached_property
    def input_z(self) -> np.ndarray:
        return self._correlation("input")

    @cached_property
    def state_z(self) -> np.ndarray:
        return self._correlation("state")

    def _correlation(self, group: str) -> np.ndarray:
        """The correlations of one group, computed with the analysis or now (the residuals'
        moments again: their layout is not kept with the analysis)."""
        if group not in self._correlations:
            return _correlations(self.parts, self.max_delay, int(self.lags.max()),
                                 (group,))[1][group]
        return self._correlations[group]


@dataclass(frozen=True, eq=False)
class _Signals:
    """Signals each prewhitened by its own autoregressive filter (module notes), laid out as
    the residuals, with the lagged products the correlations read.

    ``taps`` (J, order + 1): the filters; ``Sw`` (J, size): the filtered signals, each piece
    centred (zeros in the gaps); ``cov`` (J, window + 1): their pooled autocovariances;
    ``products`` (n, J, lags): ``sum_k e_k Sw_{k-d}`` at lags ``d = low .. high`` (the
    residuals' own, not filtered: :func:`_filtered_moments` filters them along the lags)."""

    taps: np.ndarray
    Sw: np.ndarray
    cov: np.ndarray
    products: np.ndarray
    low: int


@dataclass(frozen=True, eq=False)
class _ResidualMoments:
    """The residual pieces laid out once (:class:`~dmdidc.regression.lag_products.
    PieceLayout`) with their pooled autocovariances ``gamma`` (means not removed, lags ``0 ..
    max(L, window + order)`` with groups of signals, ``0 .. L`` without, shape (lags, n)):
    the whiteness test and every prewhitening filter's moments of the residuals
    (:func:`_filtered_moments`) read them instead of the residuals.  ``factored``: every
    piece is long enough for those (shorter ones are filtered, :func:`_filtered_directly`).
    ``signals``: the prewhitened signals of every group given, stacked (``widths``: each
    group's rows, in order), and their products with the residuals (one :class:`_Signals`,
    or none), from the same transforms of the residuals as ``gamma``
    (:func:`~dmdidc.regression.lag_products.lag_product_sets`)."""

    layout: PieceLayout
    E: np.ndarray | None
    gamma: np.ndarray
    n_samples: int
    window: int
    order: int
    factored: bool
    signals: tuple = ()
    widths: tuple = ()

    @classmethod
    def of(cls, E: list[np.ndarray], L: int, groups: tuple = ()) -> _ResidualMoments:
        """The moments of the residuals ``E``, and of each group of signals in ``groups``
        (each a list of (rows, N_p) pieces aligned with ``E``'s) at the lags ``-L .. L``."""
        N, window, order = _filter_sizes(E)
        lengths = np.array([e.shape[1] for e in E])
        # without groups the products reach the outlier test's Bartlett lags as well (the
        # same transforms: 0 .. 50 cost what 0 .. 30 did), which then reads them
        # (:meth:`centred_autocovariances`) instead of transforming the residuals again
        reach = max(L, window) + order
        layout = PieceLayout(lengths, gap=(reach if groups else max(reach, _BARTLETT_LAGS)) + 1)
        laid = layout.place(E)
        high = max(L, window + order)
        edge = max(window, L) + 1
        factored = bool(np.all(lengths > 2 * (edge + 2 * order + window)))
        if not groups:
            # the whiteness test reads lags 0 .. L, the outlier test's variance up to
            # _BARTLETT_LAGS (the filters' reach is for the groups' correlations; n = 50,
            # K = 2e4: 9.0 -> 7.8 ms for lags 0 .. L alone)
            gamma = lag_products(laid, laid, 0, max(L, _BARTLETT_LAGS), diagonal=True).T
            return cls(layout, laid, gamma, N, window, order, factored)
        # one pass: the residuals' blocks transformed once for their own autocovariances and
        # their products with every group's signals (lags -L - order .. L, the filters' reach);
        # the groups' signals stacked as the rows of one series: one prewhitening, one
        # transform per block and one product per frequency for all of them, not one per group
        low = -L - order
        widths = [signals[0].shape[0] for signals in groups]
        # (each piece to the residuals' length: a longer one would spill into the gap)
        stacked = [np.concatenate([s[:, :e.shape[1]] for s in pieces], axis=0)
                   for e, pieces in zip(E, zip(*groups, strict=True), strict=True)]
        taps, Sw = _prewhiten(layout, stacked, order)
        auto, cross, own = lag_product_sets([laid, Sw], [(0, 0, True), (0, 1, False),
                                                          (1, 1, True)], low, high)
        signals = (_Signals(taps, Sw, own[:, -low:-low + window + 1], cross, low),)
        return cls(layout, laid, auto[:, -low:].T, N, window, order, factored, signals,
                   tuple(widths))

    @cached_property
    def totals(self) -> np.ndarray:
        """Each piece's sum of the residuals, shape (n, pieces): the whiteness test and every
        filter's moments read it (one pass over the residuals, not one each)."""
        return self.layout.sums(self.E)

    def autocorrelations(self, L: int, trend: np.ndarray | None = None) -> np.ndarray:
        """``corr(e_i,k , e_i,k-tau)`` at lags ``0 .. L``, (L + 1, n): the residuals centred
        once, by their mean over every sample, and the pieces' products summed.

        Why not each piece centred: a piece's mean takes ``(1 + 2 rho_1) / N_p`` from every
        lag's autocorrelation (``N_p`` its samples), which 1000 pieces of 17 samples turned into
        z = -11 on white noise (the uncentred statistic: -0.29); a fit's intercept centres
        its residuals over all samples already.  ``trend`` (L + 1,): where the fit removed a
        trend of each trajectory (``detrend``), its residuals are centred per trajectory by
        the fit itself, which biases lag ``tau`` by ``-s trend[tau]`` (``s = gamma_0 + 2
        gamma_1``, :func:`_trend_bias`): added back, with ``s`` estimated from the same biased
        sums."""
        totals = self.totals                                                # (n, pieces)
        means = np.broadcast_to(totals.sum(axis=1, keepdims=True)
                                / max(self.layout.lengths.sum(), 1), totals.shape)
        cov = self._centred(means, L)
        if trend is not None and L >= 1:
            # E[cov_tau] = (N - tau) gamma_tau - s trend[tau]: s from lags 0 and 1 solved
            s = (cov[0] + 2.0 * cov[1]) / max(self.n_samples - trend[0] - 2.0 * trend[1], 1.0)
            cov = cov + np.outer(trend, np.maximum(s, 0.0))
        return cov / np.where(cov[0] > 0, cov[0], 1.0)

    def _centred(self, centres: np.ndarray, L: int) -> np.ndarray:
        """``sum_p sum_{k >= tau} (e_k - c_p)(e_{k-tau} - c_p)`` at lags ``0 .. L`` (L + 1, n),
        ``centres`` ``c_p`` (n, pieces): from the uncentred products ``gamma``, the pieces'
        sums less their first or last ``tau`` samples and ``(N_p - tau) c_p^2``."""
        lengths, taus = self.layout.lengths, np.arange(L + 1)
        first = _prefix(self.layout.window(self.E, 0, L))
        last = _prefix(self.layout.window(self.E, -L, L, from_end=True)[..., ::-1])
        return (self.gamma[:L + 1]
                - np.einsum("ip,ipt->ti", centres, 2.0 * self.totals[..., None] - first - last)
                + np.einsum("ip,pt->ti", centres ** 2,
                            np.maximum(lengths[:, None] - taus[None, :], 0)))

    def centred_autocovariances(self, centres: np.ndarray, L: int) -> np.ndarray | None:
        """:func:`~dmdidc.regression.lag_products.autocovariances` at lags ``0 .. L`` of the
        residual pieces each less its centre (``centres`` (pieces, n)), from the products the
        whiteness test already has; ``None`` where they do not reach ``L`` (with groups of
        signals) or where the centres hold more than half of a row's energy (the centring
        would then cancel digits: the caller transforms the centred pieces instead)."""
        centres = np.asarray(centres, dtype=float).T                        # (n, pieces)
        if L >= self.gamma.shape[0] or L >= self.layout.gap:
            return None
        held = np.einsum("ip,p->i", centres ** 2, self.layout.lengths)
        if not np.all(held <= 0.5 * self.gamma[0]):
            return None
        return self._centred(centres, L)


def _trend_bias(lengths: np.ndarray, kinds: list[str | None], L: int) -> np.ndarray | None:
    """``sum_p tr(S_tau P_p)`` at lags ``0 .. L`` (L + 1,): ``P_p`` the projection on the trend
    the fit removed from piece ``p`` of ``lengths[p]`` residuals (its mean, ``"constant"``, or
    mean and line, ``"linear"``; ``None``: none), ``S_tau`` the lag-``tau`` shift.

    A residual series centred by such a projection, ``e = (I - P) v``, has ``E[sum_k e_k
    e_{k-tau}] = tr(S_tau (I - P) Gamma (I - P))``, about ``(N - tau) gamma_tau - s tr(S_tau
    P)`` with ``s = gamma_0 + 2 gamma_1`` for the moving average of order one the residuals
    are under the null (``P Gamma ~ s P``: a trend is smooth).  ``tr(S_tau P)`` is
    ``(N - tau) / N`` for the mean and adds ``sum_{k >= tau} c_k c_{k-tau} / sum_k c_k^2``
    (``c_k = k - (N - 1) / 2``) for the line.  ``None`` when no piece had a trend removed."""
    kinds = list(kinds)
    if not any(kinds):
        return None
    taus = np.arange(L + 1, dtype=float)
    total = np.zeros(L + 1)
    for N, kind in zip(lengths.astype(float), kinds, strict=True):
        if kind is None or N < 1:
            continue
        M = np.maximum(N - taus, 0.0)                       # the products at each lag
        total += M / N
        if kind == "linear" and N > 1:
            mu = (N - 1.0) / 2.0
            # sum_{j < M} (j - mu)(j - mu + tau) in closed form
            sum_a = M * (M - 1.0) / 2.0 - M * mu
            sum_a2 = (M - 1.0) * M * (2.0 * M - 1.0) / 6.0 - mu * M * (M - 1.0) + M * mu ** 2
            total += (sum_a2 + taus * sum_a) / (N * (N * N - 1.0) / 12.0)
    return total


def _prefix(x: np.ndarray) -> np.ndarray:
    """Sums of the first ``0 .. width`` entries along the last axis, shape (..., width + 1).

    Many rows: one vector addition per entry of the (short) last axis over all the rows
    (``np.cumsum`` along a short last axis loops row by row, and joining its result to a
    column of zeros copies it: 1.6x slower on the state filters' (20, 20, 10, 26) edge sums);
    few rows: ``np.cumsum``, written into the result.  The same sums in the same order."""
    out = np.empty(x.shape[:-1] + (x.shape[-1] + 1,))
    out[..., 0] = 0.0
    if x.size < _PREFIX_ROWS * x.shape[-1]:
        np.cumsum(x, axis=-1, out=out[..., 1:])
        return out
    for k in range(x.shape[-1]):
        np.add(out[..., k], x[..., k], out=out[..., k + 1])
    return out


def _pieces(series: list[np.ndarray], lags: int) -> tuple[PieceLayout, list[np.ndarray]]:
    """The non-empty pieces of ``series`` laid out for products of up to ``lags`` lags."""
    kept = [s for s in series if s.shape[1] > 0]
    return PieceLayout(np.array([s.shape[1] for s in kept]), gap=lags + 1), kept


def _cross_correlations(a: list[np.ndarray], b: list[np.ndarray], lags: np.ndarray
                        ) -> np.ndarray:
    """``corr(a_i,k , b_j,k-tau)`` for every lag (pooled, each trajectory centred), shape
    (len(lags), rows_a, rows_b)."""
    width = int(np.max(np.abs(lags)))
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x.shape[1] > 0]
    if not pairs:
        return np.zeros((lags.size, a[0].shape[0], b[0].shape[0]))
    layout, _ = _pieces([x for x, _ in pairs], width)
    x = layout.centred(layout.place([x for x, _ in pairs]))
    y = layout.centred(layout.place([y for _, y in pairs]))
    low = int(lags.min())
    products = lag_products(x, y, low, int(lags.max()))[:, :, lags - low]
    var_a, var_b = np.sum(x * x, axis=1), np.sum(y * y, axis=1)
    scale = np.sqrt(np.outer(np.where(var_a > 0, var_a, 1.0), np.where(var_b > 0, var_b, 1.0)))
    return products.transpose(2, 0, 1) / scale


def _weighted_edge_sums(taps: np.ndarray, weights: np.ndarray, window: np.ndarray, *,
                        from_end: bool = False) -> np.ndarray:
    """``sum_pieces weights * (sums of the first 0 .. w outputs of each filter)`` on per-piece
    windows (n, pieces, q + w) whose first ``q`` samples precede the ``w`` outputs (with
    ``from_end``: of the last 0 .. w outputs): filters ``taps`` (J, q + 1), weights (J,
    pieces, n); shape (J, n, w + 1).

    Filtering, summing the first outputs and weighting the pieces are all linear, so the
    pieces are weighted first: the filters then run on (J, n) windows instead of (J, n,
    pieces) (the same sums up to rounding)."""
    q = taps.shape[1] - 1
    width = window.shape[-1] - q
    weighted = np.einsum("jpi,ips->jis", weights, window)                 # (J, n, q + w)
    filtered = np.einsum("jp,pjit->jit", taps,
                         np.stack([weighted[..., q - p:q - p + width] for p in range(q + 1)]))
    return _prefix(filtered[..., ::-1] if from_end else filtered)


def _filtered_moments(moments: _ResidualMoments, Sw: np.ndarray, taps: np.ndarray,
                      lags: np.ndarray, products: np.ndarray,
                      covariance: tuple[np.ndarray, np.ndarray] | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """For every signal ``j`` (filter ``taps[j]``, its filtered and centred signal ``Sw[j]``,
    laid out) and ``Ew = fir(taps[j], E)`` (each piece from rest): the pooled centred
    autocovariance of ``Ew`` (lags ``0 .. window``, shape (J, window + 1, n)) and its centred
    cross products with ``Sw[j]`` at ``lags`` (J, n, len(lags)) -- without filtering ``E``.

    ``Ew_k = sum_p a_p e_{k-p}``, so its products are those of ``e`` (``gamma``, and
    ``products``: ``sum_k e_k Sw_{k-d}`` at ``d = min(lags) - q .. max(lags)``, shape (n, J,
    d)) combined along the lag axis, less the terms of the last ``p`` samples of each piece
    that the filter carries beyond its end (the tails); the means come from the first and
    last samples of ``Ew`` (filtered directly).  Exact: the same sums as filtering (up to
    rounding).  ``covariance``: what :func:`_filtered_covariances` returns for ``taps``, when
    known (the residuals' side, for the filters of several groups at once).
    """
    layout = moments.layout
    q = taps.shape[1] - 1
    cov, mean = _filtered_covariances(moments, taps) if covariance is None else covariance
    # sum_k Ew_k Sw_{k - tau} = sum_p a_p (products of e with Sw - tails)(tau - p)
    low = int(lags.min()) - q
    shifts = np.arange(low, int(lags.max()) + 1)
    cut = _tail_products(moments, q, Sw, shifts, False)                  # (p, n, J, d)
    at = lags[:, None] - np.arange(q + 1)[None, :] - low                 # (lags, p)
    terms = products[:, :, at]                                           # (n, J, lags, p)
    terms -= cut[np.arange(q + 1)[None, :], :, :, at].transpose(2, 3, 0, 1)
    filtered = np.einsum("ijtp,jp->jit", terms, taps)
    # less mean(Ew) times the sum of Sw over the samples it meets (Sw sums to 0 per piece)
    reach = int(np.max(np.abs(lags)))
    first = _prefix(layout.window(Sw, 0, reach))
    final = _prefix(layout.window(Sw, -reach, reach, from_end=True)[..., ::-1])
    met = layout.sums(Sw)[..., None] - np.where(lags >= 0, final[..., np.maximum(lags, 0)],
                                                first[..., np.maximum(-lags, 0)])
    return cov, filtered - np.einsum("jni,jnt->jit", mean, met)


def _tail_products(moments: _ResidualMoments, q: int, signal_: np.ndarray, shifts: np.ndarray,
                   rowwise: bool) -> np.ndarray:
    """``sum_{r < p} e_{N-1-r} s_{N-1-r-d}`` pooled, for ``p = 0 .. q`` and ``d`` in ``shifts``
    (``s`` zero beyond a piece): the filter's terms past each piece's end.  Shape (p, n, d)
    for ``s = e`` row by row (``rowwise``), else (p, n, rows, d)."""
    layout = moments.layout
    last = layout.window(moments.E, -q, q, from_end=True)[..., ::-1]     # (n, pieces, q)
    ends = layout.starts + layout.lengths
    index = ends[:, None, None] - 1 - np.arange(q)[None, :, None] - shifts[None, None, :]
    near = signal_[:, index]                                  # (rows, pieces, r, d)
    if rowwise:
        products = np.einsum("inr,inrd->rid", last, near)
    else:   # per r one (n x pieces) @ (pieces x rows d) product
        products = (last.transpose(2, 0, 1) @ near.transpose(2, 1, 0, 3).reshape(
            q, near.shape[1], -1)).reshape(q, last.shape[0], near.shape[0], -1)
    # sums over r < p along the leading axis: whole contiguous slabs added (the indexing
    # below reads them in place, no transposed copies)
    out = np.empty((q + 1,) + products.shape[1:])
    out[0] = 0.0
    for r in range(q):
        np.add(out[r], products[r], out=out[r + 1])
    return out


def _filtered_covariances(moments: _ResidualMoments, taps: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The residuals' side of :func:`_filtered_moments`: per filter, the pooled centred
    autocovariance of ``Ew`` (J, window + 1, n) and its piece means (J, pieces, n).  Each
    filter's rows are its own, so the filters of several groups take one call."""
    layout, E, gamma, window = moments.layout, moments.E, moments.gamma, moments.window
    q, lengths = taps.shape[1] - 1, layout.lengths
    taus = np.arange(window + 1)
    # per piece, sum_k Ew_k = sum_p a_p (the sum of e but its last p samples)
    last = layout.window(E, -q, q, from_end=True)[..., ::-1]      # (n, pieces, q): e_{N-1-r}
    total = np.einsum("jp,inp->jni", taps, moments.totals[..., None] - _prefix(last))
    mean = total / lengths[None, :, None]                                # (J, pieces, n)
    # sums of the first and last 0 .. window samples of Ew, weighted by its piece means (the
    # covariances' mean terms)
    head = _weighted_edge_sums(taps, mean, layout.window(E, -q, window + q))
    tail = _weighted_edge_sums(taps, mean, layout.window(E, -window - q, window + q,
                                                         from_end=True), from_end=True)
    # sum_{k >= tau} Ew_k Ew_{k - tau} = sum_{p, p'} a_p a_p' (gamma - tails)(tau + p' - p)
    d = taus[:, None, None] + np.arange(q + 1)[None, None, :] - np.arange(q + 1)[None, :, None]
    tails = _tail_products(moments, q, E, np.arange(-q, window + q + 1), True)  # (p, n, d)
    p_index = np.broadcast_to(np.arange(q + 1)[None, :, None], d.shape)
    terms = gamma[np.abs(d)] - tails[p_index, :, d + q]                        # (t, p, p', n)
    weights = (taps[:, :, None] * taps[:, None, :]).reshape(taps.shape[0], -1)
    raw = (weights @ terms.reshape(taus.size, -1, terms.shape[-1]))            # (t, J, n)
    raw = raw.transpose(1, 0, 2)
    cov = (raw - (2.0 * np.einsum("jni,jni->ji", mean, total)[:, None, :]
                  - (head + tail).transpose(0, 2, 1))
           + np.einsum("jni,nt->jti", mean ** 2, lengths[:, None] - taus[None, :]))
    return cov, mean


def _filtered_directly(moments: _ResidualMoments, Sw: np.ndarray, taps: np.ndarray,
                       lags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`_filtered_moments` returns, by filtering the residuals once per signal (for
    pieces too short for its edge terms)."""
    layout, window, low = moments.layout, moments.window, int(lags.min())
    cov = np.zeros((taps.shape[0], window + 1, moments.E.shape[0]))
    cross = np.zeros((taps.shape[0], moments.E.shape[0], lags.size))
    for j, a in enumerate(taps):
        Ew = layout.centred(_fir(a, moments.E) * layout.mask)
        cov[j] = lag_products(Ew, Ew, 0, window, diagonal=True).T
        cross[j] = lag_products(Ew, Sw[j:j + 1], low, int(lags.max()))[:, 0, lags - low]
    return cov, cross


def _prewhitening_filter(series: list[np.ndarray], order: int) -> np.ndarray:
    """Yule-Walker AR filter ``[1, -a_1, .., -a_q]`` of one signal (pooled trajectories)."""
    return _yule_walker(autocorrelations([s[None] for s in series], order), order)[0]


def _yule_walker(rho: np.ndarray, order: int) -> np.ndarray:
    """The AR filters ``[1, -a_1, .., -a_q]`` (J, order + 1) of the autocorrelations ``rho``
    (lags 0 .. order, one column each, (order + 1, J)): the Yule-Walker equations by the
    Levinson-Durbin recursion, every column at once (one Toeplitz solve per signal took ~0.2 ms
    of argument checks each).  A column whose recursion fails (``rho_0 <= 0``, a singular
    leading minor) gets ``[1, 0, .., 0]``: no filter."""
    J = rho.shape[1]
    taps = np.zeros((J, order + 1))
    taps[:, 0] = 1.0
    error = np.array(rho[0], dtype=float)
    ok = error > 0
    a = np.zeros((J, order))                  # a[:, i - 1] = a_i of the model of order k
    for k in range(1, order + 1):
        ok &= error != 0
        previous = a[:, :k - 1]
        # kappa_k = (rho_k - sum_{i < k} a_i rho_{k-i}) / error_{k-1}
        acc = rho[k] - np.sum(previous * rho[k - 1:0:-1].T, axis=1)
        kappa = acc / np.where(ok, error, 1.0)
        a[:, :k - 1] = previous - kappa[:, None] * previous[:, ::-1]
        a[:, k - 1] = kappa
        error = error * (1.0 - kappa ** 2)
    ok &= np.all(np.isfinite(a), axis=1)
    taps[ok, 1:] = -a[ok]
    return taps


def _fir(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``y_k = sum_j a_j x_{k-j}`` along the last axis (``x`` zero before the start): the causal
    FIR filter ``scipy.signal.lfilter(a, [1], x)`` for the few taps of a prewhitening filter,
    without importing scipy.signal (which loads scipy.stats, ~0.5 s, on every fit).  ``a`` of
    shape (q + 1,), or (rows, q + 1) for one filter per row of ``x`` (rows, K).  One
    ``np.convolve`` per row (a loop over the taps in C): 4.5x faster than a pass over the whole
    array per tap (20 rows of 2e4 samples, 11 taps: 1.8 ms against 8 ms)."""
    a = np.asarray(a, dtype=float)
    K = x.shape[-1]
    rows = x.reshape(math.prod(x.shape[:-1]), K)    # (-1, K) is ambiguous for K = 0
    taps = np.broadcast_to(a, (rows.shape[0], a.shape[-1])) if a.ndim == 1 else a
    y = np.zeros(rows.shape)
    if K:
        for j, row in enumerate(rows):
            y[j] = np.convolve(row, taps[j])[:K]
    return y.reshape(x.shape)


def _bartlett_sd(rho_a: np.ndarray, rho_b: np.ndarray, n_samples: int) -> np.ndarray:
    """Standard deviation of a cross-correlation of independent series (..., rows_a, rows_b),
    from their autocorrelations (..., window + 1, rows)."""
    window = rho_a.shape[-2] - 1
    taper = 1.0 - np.arange(window + 1) / (window + 1)
    weights = np.concatenate([[1.0], 2.0 * taper[1:]])
    variance = np.einsum("v,...va,...vb->...ab", weights, rho_a, rho_b) / n_samples
    return np.sqrt(np.maximum(variance, 0.25 / n_samples))


def _filter_sizes(E: list[np.ndarray]) -> tuple[int, int, int]:
    """Samples ``N``, the Bartlett ``window`` and the prewhitening ``order`` for residuals ``E``."""
    N = sum(e.shape[1] for e in E)
    return N, min(_WINDOW, max(N // 10, 1)), min(_PREWHITEN_ORDER, max(N // 50, 0))


def _prewhiten(layout: PieceLayout, signals: list[np.ndarray], order: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each signal's AR filter (Yule-Walker on its pooled autocorrelation at lags ``0 ..
    order``, one pass for all) and the signals filtered, each piece centred: ``taps`` (J,
    order + 1) and ``Sw`` (J, size), laid out.

    The autocorrelations are the sums over the laid-out signals, one per lag: the filters of
    smooth states amplify the rounding of any other order (per piece, 4.9 -> 4.3 ms, moved
    the state correlations by 1e-11; BLAS dot products likewise, docs/benchmarks.md)."""
    rows = signals[0].shape[0]
    if rows == 0:                  # no inputs: nothing to filter
        return np.zeros((0, order + 1)), np.zeros((0, layout.size))
    laid = layout.place(signals)
    centred = layout.centred(laid)
    rho = lag_products(centred, centred, 0, order, diagonal=True).T
    rho = rho / np.where(rho[0] > 0, rho[0], 1.0)
    taps = _yule_walker(rho, order)
    Sw = _fir(taps, laid)
    layout.centre(Sw)              # (and the filters' tails in the gaps zeroed)
    return taps, Sw


def _prewhitened_correlations(moments: _ResidualMoments, signals: _Signals,
                              lags: np.ndarray,
                              covariance: tuple[np.ndarray, np.ndarray] | None = None
                              ) -> np.ndarray:
    """Standardized ``corr(e_i,k , s_j,k-tau)``, each signal ``j`` prewhitened by its own AR
    filter and the residuals filtered alike (module notes); shape (len(lags), n, rows).

    The filtered residuals' moments come from the residuals' (``moments``, with their
    products with the prewhitened ``signals``, :func:`_filtered_moments`; ``covariance``:
    their residuals' side when known, :func:`_filtered_covariances`); pieces too short for
    that are filtered.
    """
    N, taps, Sw = moments.n_samples, signals.taps, signals.Sw
    rows, q = taps.shape[0], taps.shape[1] - 1
    if rows == 0:                  # no inputs: nothing to correlate with
        return np.zeros((lags.size, moments.gamma.shape[1], 0))
    energy = signals.cov[:, 0]
    rho_s = signals.cov / np.where(energy > 0, energy, 1.0)[:, None]
    if moments.factored:           # (J, window + 1, n), (J, n, lags)
        first = int(lags.min()) - q - signals.low
        products = signals.products[:, :, first:first + int(np.ptp(lags)) + q + 1]
        cov, cross = _filtered_moments(moments, Sw, taps, lags, products, covariance)
    else:
        cov, cross = _filtered_directly(moments, Sw, taps, lags)
    c0 = np.where(cov[:, 0] > 0, cov[:, 0], 1.0)
    scale = np.sqrt(c0 * np.where(energy > 0, energy, 1.0)[:, None])               # (J, n)
    sd = _bartlett_sd(cov / c0[:, None, :], rho_s[:, :, None], N)[..., 0]          # (J, n)
    return (cross / (scale * sd)[..., None]).transpose(2, 1, 0)


def largest_robust_residual(E: np.ndarray, *, constant_rows: str = "rms") -> float:
    """Largest ``|e_ik - median_i| / (1.4826 MAD_i)`` over the rows of ``E`` (n, N).

    Rows whose MAD is zero (more than half the residuals equal) are scaled by their rms about
    the median (``constant_rows="rms"``) or by the smallest float (``"tiny"``: any deviation is
    an outlier).  The medians by one partition per row (``np.median`` partitions around two
    more indices and takes five times as long).

    Examples
    --------
    >>> import numpy as np
    >>> E = np.random.default_rng(0).standard_normal((2, 1000))
    >>> E[1, 10] = 40.0
    >>> bool(largest_robust_residual(E) > 30)
    True
    """
    return _largest_robust_residual(np.array(E, dtype=float), constant_rows=constant_rows)


def _largest_robust_residual(work: np.ndarray, *, constant_rows: str = "rms") -> float:
    """:func:`largest_robust_residual` of ``work`` (n, N), which it overwrites: the medians,
    deviations and their medians in place (partitions permute each row, and every statistic
    here is of a row's values, not their order), no copy of the residuals."""
    if work.size == 0:
        return 0.0
    largest, _, scales = _robust_rows(work, constant_rows)
    return float(np.max(largest / scales))


def _robust_rows(work: np.ndarray, constant_rows: str | None) -> tuple[np.ndarray, ...]:
    """Per row of ``work`` (n, N), which it overwrites: the largest absolute deviation from
    the median, the median and the robust scale (:func:`_robust_scales`)."""
    medians = _row_medians(work, overwrite=True)
    largest = np.zeros(work.shape[0])
    # the deviations block by block, each subtracted, made absolute and searched while it is
    # in cache (three passes over 50 x 2e4 residuals took 8 ms, these 4)
    for a in range(0, work.shape[1], _DEVIATION_BLOCK):
        block = work[:, a:a + _DEVIATION_BLOCK]
        np.subtract(block, medians[:, None], out=block)
        np.abs(block, out=block)
        np.maximum(largest, block.max(axis=1), out=largest)
    return largest, medians, _robust_scales(work, constant_rows)


def robust_deviations(E: np.ndarray, *, constant_rows: str = "rms",
                      signed: bool = False) -> np.ndarray:
    """Every ``|e_ik - median_i| / (1.4826 MAD_i)`` of ``E`` (n, N), scaled as
    :func:`largest_robust_residual` scales them (its value is their largest): which samples
    an outlier check that failed at a threshold found beyond it.  With ``signed``, the
    deviations keep their sign (``(e_ik - median_i) / (1.4826 MAD_i)``: the same magnitudes,
    for Huber's psi of the ``linearity`` check).

    Examples
    --------
    >>> import numpy as np
    >>> E = np.random.default_rng(0).standard_normal((2, 1000))
    >>> E[1, 10] = 40.0
    >>> [int(i) for i in np.flatnonzero(robust_deviations(E)[1] > 30)]
    [10]
    """
    work = np.array(E, dtype=float)
    if work.size == 0:
        return work
    work -= _row_medians(work.copy(), overwrite=True)[:, None]
    np.divide(work, _robust_scales(np.abs(work), constant_rows)[:, None], out=work)
    return work if signed else np.abs(work, out=work)


def _robust_scales(deviation: np.ndarray, constant_rows: str | None) -> np.ndarray:
    """``1.4826 MAD`` per row of the absolute deviations from the median (which it reorders),
    rows whose MAD is zero by their rms (``constant_rows="rms"``) or the smallest float
    (``"tiny"``); ``None``: the MAD as it is."""
    mad = _MAD_TO_SIGMA * _row_medians(deviation, overwrite=True)
    if constant_rows is None:
        return mad
    fallback = np.finfo(float).tiny
    if constant_rows == "rms" and np.any(mad <= 0):
        fallback = np.maximum(np.sqrt(np.mean(deviation ** 2, axis=1)), fallback)
    return np.where(mad > 0, mad, fallback)


def _row_medians(x: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """``np.median(x, axis=1)``, the same numbers, by one partition per row (of ``x`` itself,
    reordering each row, when ``overwrite``; long rows are bracketed first and left as they
    are), in an array of their own."""
    N = x.shape[1]
    if N == 0:
        return np.full(x.shape[0], np.nan)
    half = N // 2
    if N >= _BRACKET_SAMPLES:
        return _bracketed_medians(x, [half] if N % 2 else [half - 1, half])
    if overwrite:
        x.partition(half, axis=1)
        part = x
    else:
        part = np.partition(x, half, axis=1)
    if N % 2:
        # a copy: a view of x's column would change with x, which the callers overwrite
        # (the deviations, partitioned again for the MAD: odd-length rows returned the MAD
        # as their median, which the pieces' scale test and the outliers' samples read)
        return part[:, half].copy()
    return (part[:, :half].max(axis=1) + part[:, half]) / 2.0


def _bracketed_medians(x: np.ndarray, ranks: list[int]) -> np.ndarray:
    """The mean of the order statistics ``ranks`` (the median's one or two) of each row of
    ``x`` (n, N), exactly: a strided sample of each row brackets them, and only the values in
    the bracket are partitioned (about an eighth of them: 50 rows of 2e4 residuals took 10 ms
    by a full partition, 5 this way).  A row whose bracket misses them (a sample that does
    not represent the row, NaN among the values) is partitioned whole."""
    n, N = x.shape
    ranks = np.asarray(ranks)
    sample = x[:, ::max(N // _BRACKET_SAMPLE, 1)]
    S = sample.shape[1]
    # the sample's quantiles 4 standard deviations of their population rank about the median
    spread = int(np.ceil(2.0 * np.sqrt(S))) + 1
    low, high = max(S // 2 - spread, 0), min(S // 2 + spread, S - 1)
    bounds = np.partition(sample, (low, high), axis=1)
    below = x < bounds[:, low:low + 1]
    inside = x <= bounds[:, high:high + 1]
    n_below = np.count_nonzero(below, axis=1)
    counts = np.count_nonzero(inside, axis=1) - n_below
    candidates = x[np.logical_xor(inside, below, out=inside)]    # row after row
    ends = np.cumsum(counts)
    out = np.empty(n)
    for i in range(n):
        k = ranks - n_below[i]
        if k[0] >= 0 and k[-1] < counts[i]:
            values = candidates[ends[i] - counts[i]:ends[i]]
            values.partition(k)
        else:
            values, k = np.partition(x[i], ranks), ranks
        out[i] = values[k].mean()
    return out


def residual_analysis(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], max_delay: int,
                      lags: int | None = None, *, correlations: bool = True,
                      trends: list[str | None] | None = None) -> ResidualAnalysis | None:
    """Residual whiteness, outliers and correlations; ``None`` with too few samples.

    Parameters
    ----------
    parts : list of (E, U, X)
        From :func:`model_residuals`.
    max_delay : int
        ``R``.
    lags : int, optional
        ``L`` (default ``max(R + 10, 20)``).
    correlations : bool, default True
        Compute the correlations with the inputs (and with the signals, when ``n^2`` is at
        most :data:`_SIGNAL_PAIRS`) now, from the same transforms of the residuals as the
        whiteness test; ``False`` computes them only when first read.
    trends : list of {None, "constant", "linear"}, optional
        Per part, the trend the fit removed from it as a whole (one intercept, and slope, per
        trajectory: ``detrend``), which centres its residuals; ``None`` (default) for every
        part: none (a fit's common intercept centres the residuals over all samples, and the
        cuts of one trajectory are not centred each).  The whiteness test is corrected for it
        (:meth:`_ResidualMoments.autocorrelations`).

    Returns
    -------
    ResidualAnalysis or None
    """
    R = max_delay
    L = lags if lags is not None else max(R + 10, CORRELATION_LAGS)
    kinds = [None] * len(parts) if trends is None else list(trends)
    kinds = [kind for part, kind in zip(parts, kinds, strict=True) if part[0].shape[1] > 0]
    parts = [part for part in parts if part[0].shape[1] > 0]   # (the layout needs samples)
    N = sum(e.shape[1] for e, _, _ in parts)
    if N < _MIN_SAMPLES:
        return None
    trend = _trend_bias(np.array([e.shape[1] for e, _, _ in parts]), kinds, L)
    # ||E|| / ||x_k+1|| first: an exact fit's residuals are not tested (residual_checks), so
    # their whiteness, outliers and correlations wait until read (the figure)
    energy = sum(float(np.einsum("ik,ik->", e, e)) for e, _, _ in parts)
    targets = np.sqrt(sum(float(np.einsum("ik,ik->", x[:, R + 1:], x[:, R + 1:]))
                          for _, _, x in parts) + energy)
    relative = float(np.sqrt(energy) / max(targets, np.finfo(float).tiny))
    analysis = ResidualAnalysis(tuple(parts), R, np.arange(-L, L + 1), N, relative, trend)
    if relative < EXACT_FIT:
        return analysis
    groups = ()
    if correlations:
        n = parts[0][0].shape[0]
        groups = ("input", "state") if n * n <= _SIGNAL_PAIRS else ("input",)
    moments, found = _correlations(parts, R, L, groups)
    analysis._correlations.update(found)
    analysis._tests.update(whiteness=_whiteness_z(moments, L, trend),
                           outliers=largest_residual(
                               [e for e, _, _ in parts],
                               autocovariances_of=moments.centred_autocovariances))
    return analysis


def _whiteness_z(moments: _ResidualMoments, L: int, trend: np.ndarray | None = None
                 ) -> np.ndarray:
    """The residuals' autocorrelations at lags ``0 .. L`` standardized by Bartlett's variance
    for a moving average of order one (lag 1 is allowed, lags >= 2 are tested); ``trend``:
    :func:`_trend_bias`."""
    rho_e = moments.autocorrelations(L, trend)
    return rho_e / np.sqrt((1.0 + 2.0 * rho_e[1] ** 2) / moments.n_samples)


def _outlier_z(parts) -> LargestResidual:
    """The largest robustly standardized residual over every part."""
    return largest_residual([e for e, _, _ in parts])


@dataclass(frozen=True)
class LargestResidual:
    """The largest robustly standardized residual of pieces of data, and how they were scaled.

    Attributes
    ----------
    z : float
        ``max |e_ik - median| / (1.4826 MAD)`` over every piece, row and sample.
    samples : int
        Residuals behind each robust scale: every residual (one scale per row), or the
        smallest piece's (one scale per piece and row); the threshold's margin for the scale's
        sampling error (:func:`outlier_threshold`) is that of the fewest.
    count : int
        Residuals per row over every piece (the Bonferroni count, with ``series``).
    series : int
        Rows (residual series).
    spread : float or None
        The largest ratio of two pieces' robust scales of one row when the pieces' noise
        levels differ (each piece was then scaled by its own), ``None`` when they were pooled.
    centres, scales : ndarray, shape (pieces, n)
        Each piece's medians and robust scales (:meth:`deviations`).
    """

    z: float
    samples: int
    count: int
    series: int
    spread: float | None = None
    centres: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    scales: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)

    def threshold(self, level: float) -> float:
        """The outlier threshold at false-alarm ``level`` (:func:`outlier_threshold`)."""
        return outlier_threshold(level, self.count, self.series, scale_samples=self.samples)

    def deviations(self, pieces: list[np.ndarray]) -> list[np.ndarray]:
        """``|e - median| / scale`` of every residual of ``pieces`` (the list this was
        computed from, (n, N_p) each), scaled as ``z`` was: which samples lie beyond a
        threshold.  Their largest is ``z``."""
        return [np.abs(np.asarray(e, dtype=float) - centre[:, None]) / scale[:, None]
                for e, centre, scale in zip(pieces, self.centres, self.scales, strict=True)]


def largest_residual(pieces: list[np.ndarray], *, constant_rows: str = "rms",
                     autocovariances_of: Callable[[np.ndarray, int], np.ndarray | None]
                     | None = None) -> LargestResidual:
    """The largest robustly standardized residual of residual pieces (n, N_p) each: one robust
    scale per row over every piece, or one per piece and row where their noise levels differ.

    Experiments of one plant often differ in their noise level (sensors, days, operating
    points): standardized by a common scale, the noisier ones' ordinary residuals read as
    outliers (IV on 8 experiments of 1000 samples at 20 and 40 dB: the check failed on 10 of 10
    random plants, z ~ 19 against 5.7).  The pieces' scales ``s_pi`` (``1.4826 MAD`` about the
    piece's median) are therefore tested for equality first: ``log s_pi`` is about normal with
    variance ``1.166^2 / N_p`` (:data:`_MAD_RELATIVE_SD`; times ``(1 + rho_i) / (1 - rho_i)``
    for residuals of lag-1 autocorrelation ``rho_i``, clipped to ``[0, 0.95]``), so ``sum_pi N_p
    (log s_pi - m_i)^2`` over that variance (``m_i`` the ``N_p``-weighted mean) is ``chi^2``
    with ``n (P - 1)`` degrees of freedom when they are equal.  Beyond its quantile at
    :data:`_SCALE_EQUALITY_LEVEL`, each piece is standardized by its own scales; otherwise every
    residual by one scale per row over all of them (their ``N_p``-weighted geometric mean), each
    piece about its own median.  A single piece, a piece of fewer than
    :data:`_OWN_SCALE_SAMPLES` residuals (whose MAD is too rough to test) or a row of more than
    half equal residuals (MAD zero) in a piece: one median and one scale per row over all of
    them, as :func:`largest_robust_residual`.

    Parameters
    ----------
    pieces : list of ndarray, each (n, N_p)
    constant_rows : {"rms", "tiny"}
        As :func:`largest_robust_residual`.
    autocovariances_of : callable, optional
        ``(centres (pieces, n), L) -> (L + 1, n)`` or ``None``: the pieces' autocovariances
        about the centres, pooled, at lags ``0 .. L``, from products computed elsewhere (the
        whiteness test's, :meth:`_ResidualMoments.centred_autocovariances`); ``None`` from
        it, or not given: the centred pieces are transformed here.

    Returns
    -------
    LargestResidual

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> quiet, noisy = rng.standard_normal((2, 3000)), 10 * rng.standard_normal((2, 3000))
    >>> pooled = largest_robust_residual(np.concatenate([quiet, noisy], axis=1))
    >>> found = largest_residual([quiet, noisy])
    >>> bool(pooled > 8), bool(found.z < 5), round(found.spread)
    (True, True, 10)
    """
    pieces = [np.asarray(e, dtype=float) for e in pieces]
    n = pieces[0].shape[0] if pieces else 0
    lengths = np.array([e.shape[1] for e in pieces], dtype=int)
    total, given = int(lengths.sum()), lengths > 0
    if total == 0:
        empty = np.zeros((len(pieces), n))
        return LargestResidual(0.0, 0, 0, n, None, empty, empty + 1.0)
    medians, mads = np.full((len(pieces), n), np.nan), np.full((len(pieces), n), np.nan)
    largest = np.zeros((len(pieces), n))
    if given.sum() > 1 and lengths[given].min() >= _OWN_SCALE_SAMPLES:
        for p in np.flatnonzero(given):      # (a copy: the partitions reorder it)
            largest[p], medians[p], mads[p] = _robust_rows(pieces[p].copy(), None)
        if np.all(mads[given] > 0):
            logs = np.log(mads[given])
            N = lengths[given]
            centre = N @ logs / total
            # serially correlated residuals (coloured noise, a moving average) estimate their
            # scales less precisely: the variance times (1 + rho) / (1 - rho), rho the pooled
            # lag-1 autocorrelation (AR(1) at 0.7: 531 of 2000 equal-scale draws tested
            # unequal at level 1e-3 without it)
            lags = min(_BARTLETT_LAGS, int(N.min()) // 2)
            products = (None if autocovariances_of is None
                        else autocovariances_of(medians[given], lags))
            if products is None:
                products = autocovariances(
                    [pieces[p] - medians[p][:, None] for p in np.flatnonzero(given)], lags)
            rho = _lag_one_correlation(products)
            # ... and by 1 + 2 sum_k rho_k^2 (Bartlett's bound on the variance of a scale of
            # Gaussian residuals at every lag; the MAD's is below it), where that is larger:
            # oscillating residuals have a small lag-1 correlation (a resonance at 4 samples
            # per period: 0), and on 5 pieces of 300-1500 samples of one level the check of
            # their levels failed on 4 of 10 fits with the lag-1 factor alone
            inflation = np.maximum((1.0 + rho) / (1.0 - rho),
                                   _bartlett_factor(products, int(N.sum()), N.size))
            equality = float(np.sum(N[:, None] * (logs - centre) ** 2 / inflation))
            if equality > _MAD_RELATIVE_SD ** 2 * special.chdtri(n * (N.size - 1),
                                                                 _SCALE_EQUALITY_LEVEL):
                spread = float(np.max(np.exp(logs.max(axis=0) - logs.min(axis=0))))
                scales = np.where(given[:, None], mads, 1.0)
                return LargestResidual(float(np.max(largest[given] / mads[given])),
                                       int(N.min()), total, n, spread,
                                       np.nan_to_num(medians), scales)
            common = np.broadcast_to(np.exp(centre), mads.shape)
            return LargestResidual(float(np.max(largest[given] / common[given])), total,
                                   total, n, None, np.nan_to_num(medians), common.copy())
    largest, median, scale = _robust_rows(np.concatenate(pieces, axis=1), constant_rows)
    return LargestResidual(float(np.max(largest / scale)), total, total, n, None,
                           np.broadcast_to(median, (len(pieces), n)).copy(),
                           np.broadcast_to(scale, (len(pieces), n)).copy())


def _bartlett_factor(products: np.ndarray, samples: int, pieces: int) -> np.ndarray:
    """Per row, ``1 + 2 sum_k rho_k^2`` over lags ``1 .. L`` of centred pieces from their
    pooled autocovariances ``products`` (L + 1, n) (products within each of the ``pieces``,
    ``samples`` in all), each autocorrelation's square less its sampling bias ``1 /
    products`` (clipped at 0): the factor by which serial correlation raises the variance of
    a Gaussian series' sample variance (Bartlett), an upper bound on that of its MAD's (whose
    indicator's covariance at correlation ``rho`` is ``sum_j a_j rho^(2j)`` with ``sum_j a_j
    = 1``).  :func:`largest_residual` takes ``L = min(50, shortest piece / 2)``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import signal
    >>> rng = np.random.default_rng(0)
    >>> white = rng.standard_normal((1, 5000))
    >>> ringing = signal.lfilter([1], [1, 0, 0.9], white)     # lag 1: 0, lag 2: -0.9
    >>> def factor(x):
    ...     return _bartlett_factor(autocovariances([x], 50), 5000, 1)[0]
    >>> bool(factor(white) < 1.2), bool(factor(ringing) > 6)
    (True, True)
    """
    lags = products.shape[0] - 1
    energy = np.where(products[0] > 0, products[0], 1.0)
    count = samples - pieces * np.arange(1, lags + 1)
    excess = np.maximum((products[1:] / energy) ** 2 - 1.0 / count[:, None], 0.0)
    return 1.0 + 2.0 * excess.sum(axis=0)


def _lag_one_correlation(products: np.ndarray) -> np.ndarray:
    """Per row, the lag-1 autocorrelation of centred pieces from their pooled
    autocovariances ``products`` (at least lags 0 and 1, (L + 1, n)), clipped to ``[0,
    0.95]``: a negative one would shrink the scales' variance, and the loud side is to keep
    it."""
    energy = products[0]
    return np.clip(products[1] / np.where(energy > 0, energy, 1.0), 0.0, 0.95)


def _correlations(parts: list, R: int, L: int, groups: tuple[str, ...]
                  ) -> tuple[_ResidualMoments, dict[str, np.ndarray]]:
    """The residuals' moments and the prewhitened correlations of each group (``"input"``:
    lags ``-L .. L``, ``"state"``: lags ``0 .. L``) in one pass over the residuals."""
    lags = np.arange(-L, L + 1)
    signals = {"input": [u[:, R:] for _, u, _ in parts],
               "state": [x[:, R:] for _, _, x in parts]}
    moments = _ResidualMoments.of([e for e, _, _ in parts], L,
                                  tuple(signals[group] for group in groups))
    bounds = np.cumsum((0,) + moments.widths)
    # the residuals' side of every filter at once; the products with the signals per group
    # on its rows of the stacked signals (the state correlations at lags 0 .. L only: one
    # call for both at the input lags cost 8 % more)
    covariance = None
    if groups and moments.factored and moments.signals[0].taps.shape[0]:
        covariance = _filtered_covariances(moments, moments.signals[0].taps)
    found = {}
    for group, a, b in zip(groups, bounds[:-1], bounds[1:], strict=True):
        stacked = moments.signals[0]        # (the groups' rows a .. b of it)
        rows = _Signals(stacked.taps[a:b], stacked.Sw[a:b], stacked.cov[a:b],
                        stacked.products[:, a:b], stacked.low)
        found[group] = _prewhitened_correlations(
            moments, rows, lags if group == "input" else lags[lags >= 0],
            None if covariance is None else (covariance[0][a:b], covariance[1][a:b]))
    return moments, found


def outlier_threshold(level: float, samples: int, series: int = 1, *,
                      scale_samples: int | None = None) -> float:
    """Threshold of the largest robustly standardized residual (:func:`largest_robust_residual`)
    among ``series`` series of ``samples`` Gaussian residuals each, at false-alarm ``level``.

    The Gaussian quantile at ``level`` divided by the ``samples * series`` residuals
    (Bonferroni), raised by :data:`_SCALE_SPREAD` standard deviations of the scale's sampling
    error: ``1.4826 MAD`` is about ``1.166 / sqrt(samples)`` too small or too large (relative
    standard deviation, :data:`_MAD_RELATIVE_SD`), and a scale a few of them too small moves
    the largest Gaussian residual beyond the quantile (DMDidc's random plants with K = 300:
    false alarms 1.3 % at level 0.14 %; OutputDMDidc's sweep: 5.23 against 5.10).  Gross
    errors (tens of standard deviations) stay far above it.  DMDidc's residual check, the
    outlier test of ``estimator="auto"`` and OutputDMDidc's check all use it.

    Parameters
    ----------
    level : float
        False-alarm probability on Gaussian residuals, in (0, 1).
    samples : int
        Residuals per series (each series has its own median and MAD).
    series : int, default 1
    scale_samples : int, optional
        Residuals behind each robust scale, when fewer than ``samples`` (pieces of data scaled
        each by its own, :func:`largest_residual`): the margin is that of the fewest.

    Returns
    -------
    float

    Examples
    --------
    >>> round(outlier_threshold(1e-3, 10_000, 3), 1)       # 5.52 (Bonferroni) raised 3.5 %
    5.7
    """
    behind = samples if scale_samples is None else min(scale_samples, samples)
    spread = _SCALE_SPREAD * _MAD_RELATIVE_SD / math.sqrt(max(behind, 1))
    return _critical(level, samples * series) * (1.0 + spread)


def _critical(level: float, count: int) -> float:
    """Two-sided Gaussian quantile at ``level / count`` (Bonferroni)."""
    return float(special.ndtri(1.0 - level / (2.0 * max(count, 1))))


def _largest(z: np.ndarray) -> tuple[float, tuple[int, ...]]:
    index = np.unravel_index(int(np.argmax(np.abs(z))), z.shape)
    return float(abs(z[index])), tuple(int(i) for i in index)


def residual_checks(analysis: ResidualAnalysis | None, level: float, *,
                    robust: bool = False, reference: bool = False,
                    correlations: bool = True, only: tuple[str, ...] | None = None
                    ) -> list[Check]:
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
    only : tuple of str, optional
        The names of the checks wanted (``None``: all five), in the order above; the others'
        statistics are not computed (the correlations with the signals cost as much as the
        rest together).

    Returns
    -------
    list of Check

    Raises
    ------
    ParameterError
        ``only`` names a check that does not exist.
    """
    names = [("input_correlation", "Are the residuals uncorrelated with past inputs?"),
             ("feedback", "Are the residuals uncorrelated with future inputs (no feedback)?"),
             ("whiteness", "Are the residuals white beyond lag 1?"),
             ("state_completeness", "Do past signals predict nothing the model misses "
                                    "(the signals are the full state)?"),
             ("outliers", "Are the residuals free of outliers?")]
    known = [name for name, _ in names]
    wanted = set(known if only is None else only)
    if not wanted <= set(known):
        raise ParameterError(f"only={only!r} names checks that do not exist: "
                             f"{sorted(wanted - set(known))}; accepted: {known}")
    names = [(name, question) for name, question in names if name in wanted]
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
    question = dict(names)
    if not correlations:
        return [_whiteness_check(analysis, level, name, question[name]) if name == "whiteness"
                else _outlier_check(analysis, level, robust, name, question[name])
                if name == "outliers" else
                Check(name, question[name], None, finding="see the moment tests")
                for name in question]
    checks = []
    if "input_correlation" in wanted:
        name = "input_correlation"
        past = analysis.input_z[lags >= (1 if reference else 0)]
        if past.size:
            z, (tau, i, j) = _largest(past)
            tau += int(reference)
            critical = _critical(level, past.size)
            beyond = tau > R
            remedy = (f"the delay of input {j} may exceed max_delay={R}, or dynamics are "
                      f"missing (states not measured): raise max_delay, or measure every state "
                      f"(or fit OutputDMDidc, dmdidc identify --outputs, to what is measured)"
                      if beyond else
                      f"the model's structure (one delay per input channel, blocks w and "
                      f"w + 1) does not fit input {j}: a distributed delay, or missing dynamics")
            checks.append(Check(name, question[name], z <= critical, z, critical,
                                f"largest correlation of residual {i} with input {j} at lag "
                                f"{tau} is {z:.2f} standard deviations",
                                remedy if z > critical else ""))
        else:
            checks.append(Check(name, question[name], None, finding="no inputs"))
    if "feedback" in wanted:
        name = "feedback"
        future = analysis.input_z[lags < 0]
        if future.size:
            z, (k, i, j) = _largest(future)
            critical = _critical(level, future.size)
            found = z > critical
            checks.append(Check(
                name, question[name], z <= critical or reference, z, critical,
                f"largest correlation of residual {i} with input {j} {L - k} samples later: "
                f"{z:.2f} standard deviations"
                + (": the inputs react to the noise, as in a closed loop" if found else "")
                + ("; the reference's instruments account for it" if found and reference
                   else ""),
                "closed-loop data: pass the reference or dither that excites the loop, "
                "fit(..., reference=r), so the instruments are independent of the noise; "
                "without an external excitation closed-loop data cannot identify the plant "
                "consistently" if found and not reference else ""))
        else:
            checks.append(Check(name, question[name], None, finding="no inputs"))
    if "whiteness" in wanted:
        checks.append(_whiteness_check(analysis, level, "whiteness", question["whiteness"]))
    if "state_completeness" in wanted:
        name = "state_completeness"
        n = analysis.parts[0][0].shape[0]                   # residual series
        if n * n > _SIGNAL_PAIRS:
            checks.append(Check(name, question[name], None,
                                finding=f"not computed: {n * n} pairs of residuals and "
                                        f"signals exceed {_SIGNAL_PAIRS}"))
        else:
            states = analysis.state_z[1:]
            z, (tau, i, j) = _largest(states)
            critical = _critical(level, states.size)
            checks.append(Check(
                name, question[name], z <= critical, z, critical,
                f"largest correlation of residual {i} with signal {j} {tau + 1} samples "
                f"earlier: {z:.2f} standard deviations",
                "the signals may not be the full state (e.g. y = C x with fewer signals than "
                "states, or an unmeasured state): DMDidc needs every state; measure all "
                "states, or identify from the outputs with OutputDMDidc"
                if z > critical else ""))
    if "outliers" in wanted:
        checks.append(_outlier_check(analysis, level, robust, "outliers", question["outliers"]))
    return checks



def _whiteness_check(analysis: ResidualAnalysis, level: float, name: str,
                     question: str) -> Check:
    whiteness, clipped = _whiteness_without_outliers(analysis, level)
    white = whiteness[2:]
    z, (tau, i) = _largest(white)
    critical = _critical(level, white.size)
    return Check(
        name, question, z <= critical, z, critical,
        f"largest autocorrelation of residual {i} beyond lag 1: {z:.2f} standard deviations "
        f"at lag {tau + 2}"
        + (f" ({clipped} outlying residual(s) clipped at the outlier threshold)" if clipped
           else "")
        + (": the noise is coloured or the model misses dynamics" if z > critical else ""),
        "the default instrumental-variable fit stays consistent under coloured noise, but "
        "standard errors, the block test and the intervals assume white noise and may be too "
        "narrow: compare with confidence_intervals(method='bootstrap') over independent "
        "experiments" if z > critical else "")


def _whiteness_without_outliers(analysis: ResidualAnalysis, level: float
                                ) -> tuple[np.ndarray, int]:
    """``whiteness_z``, or, when the outlier check at ``level`` flags residuals, that of the
    residuals with those clipped at its threshold (each about its median, in its robust
    scale), and how many were clipped.

    A few gross outliers fill the lag-0 variance that every autocorrelation is divided by:
    AR(1)-coloured noise (0.9) whose whiteness statistic read 24, plus 6 spikes of 20 state
    deviations, read 3.4-4.0 against 4.3, so the check passed and the coloured noise went on to
    fail state_completeness instead of making it inconclusive.  Clipped, the spikes weigh no
    more than the largest ordinary residual; residuals within the threshold (all of them,
    on data without outliers) are untouched."""
    largest = analysis.outlier_scaling
    critical = largest.threshold(level)
    if not largest.z > critical:
        return analysis.whiteness_z, 0
    parts, clipped = [], 0
    for (e, u, x), centre, scale in zip(analysis.parts, largest.centres, largest.scales,
                                        strict=True):
        low, high = centre[:, None] - critical * scale[:, None], \
            centre[:, None] + critical * scale[:, None]
        clipped += int(np.count_nonzero((e < low) | (e > high)))
        parts.append((np.clip(e, low, high), u, x))
    L = int(analysis.lags.max())
    moments, _ = _correlations(parts, analysis.max_delay, L, ())
    return _whiteness_z(moments, L, analysis.trend), clipped


def _outlier_check(analysis: ResidualAnalysis, level: float, robust: bool, name: str,
                   question: str) -> Check:
    largest = analysis.outlier_scaling
    critical, z = largest.threshold(level), largest.z
    handled = robust and z > critical
    return Check(
        name, question, z <= critical or handled, z, critical,
        f"the largest residual is {z:.3g} robust standard deviations from the median"
        + ("" if largest.spread is None else
           f" of its piece of data (the pieces' noise levels differ, up to {largest.spread:.3g}"
           f"x: each standardized by its own)")
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


def _laid_out(sources: list[tuple[np.ndarray, ...]], blocks: list[tuple[int, range]],
              start: int, end: int) -> tuple[np.ndarray, list[int]]:
    """Rows ``source[which][:, k - l]`` for each block ``(which, lags)`` and lag ``l``
    (negative: future), ``k = start .. K - end - 1`` of each trajectory (``K`` the samples of
    its second source), the trajectories side by side in one array written once (building the
    pieces and concatenating them copied every value three times: 52 ms against 4 ms for the
    benchmark's 19 600 samples of 204 rows).  Trajectories with fewer than two samples are
    left out; returns the array and the samples of each trajectory kept."""
    lengths = [max(s[1].shape[1] - end - start, 0) for s in sources]
    lengths = [w for w in lengths if w >= 2]
    rows = sum(sources[0][which].shape[0] * len(lags) for which, lags in blocks)
    out = np.empty((rows, sum(lengths)))
    at = 0
    for source in sources:
        width = source[1].shape[1] - end - start
        if width < 2:
            continue
        row = 0
        for which, lags in blocks:
            signal_ = source[which]
            for lag in lags:
                out[row:row + signal_.shape[0], at:at + width] = \
                    signal_[:, start - lag:start - lag + width]
                row += signal_.shape[0]
        at += width
    return out, lengths


def moment_checks(trajectories: list[tuple[np.ndarray, np.ndarray]], signals: list[np.ndarray],
                  coefficients: np.ndarray, *, max_delay: int, centred: bool, level: float,
                  reference: bool = False, kind: str = "exogenous",
                  instrument_moments: TrimmedMoments | None = None,
                  instrument_lags: int = 0) -> list[Check]:
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

    The moments do not depend on the coefficients: ``sum_k h_k phi_k^T = I``, so the
    corrected signals are orthogonal to the regressors (``sum_k w~_k phi_k^T = S_wphi -
    S_wphi = 0``, to rounding) and the residuals ``e_k - D phi_k`` of *any* coefficients
    ``Theta + D`` give the same ``g = sum_k w~_k e_k^T``.  The coefficients enter only through
    the residuals that estimate ``V``.  So least squares kept by Hausman's pretest
    (``estimator="auto"`` with weak instruments, :func:`dmdidc.fitting.fit_trajectories`)
    leaves the test valid, with ``V`` from its residuals, which estimate the noise better than
    weak IV's.  Measured (``benchmarks/bench_pretest_moments.py --variants``, 40 random plants
    per condition) on 99 fits that kept least squares (process noise 0.3-3 x the input
    response, with or without 20-40 dB measurement noise): none failed at the fit's share of
    the level, the p-values uniform (Kolmogorov-Smirnov p 0.11-0.9).  The IV twin's residuals
    would put the p-values near 1 (none below 0.05) and lose detections (a closed loop's
    feedback, 25 -> 18 of 37; a missing state, 16 -> 13 of 36; delays beyond the bound, by
    state completeness, 21 -> 4 of 32).  Least squares' own projection (``h_k = (sum phi
    phi^T)^-1 phi_k``) is not used there: it assumes least squares consistent, which the
    pretest only failed to reject, and raised false alarms where measurement noise biased it
    slightly (input correlation and state completeness on all 4 open-loop fits that kept
    least squares; state completeness on 3 of 27 with process noise, nominal 0.1 %).

    Fits without instrument signals (``estimator="ls"`` or ``"huber"``, plain DMD without
    inputs) use that projection (``kind="regressors"``): the user chose least squares, and
    where it is consistent (process noise, exact states, open or closed loop) the moments are
    exactly ``sum_k w~_k e_k^T`` of the true errors.  The prewhitened residual correlations
    they replace failed ``state_completeness`` on 32 of 40 exactly-right least-squares fits
    (white inputs, process noise only); these fail 0 of 40
    (``benchmarks/bench_ls_checks.py``).  Under that null the errors are white and the
    moments independent over time, so every group takes the Kronecker covariance without a
    lag window: ``state_completeness`` is computed up to 2000 moments (``n <= 31``) as the
    input groups are, not 120 (the lag window's terms would add only noise).  Measurement
    noise makes least squares inconsistent, and these moments detect it where ``ls_vs_iv``
    does not: the corrected signals of the past states are then of the noise's size, so
    ``state_completeness`` fails by ``sqrt(N)`` however small the noise (an ADC's rounding at
    10 bits: ``state_completeness`` and ``input_correlation`` on 19-20 of 20 fits,
    ``ls_vs_iv`` on 1, although the fits were right, ``benchmarks/bench_trust_more.py
    --estimator ls``); their remedy names it and the default estimator.  Without inputs
    (plain DMD, where the default is least squares) a failed ``state_completeness`` is
    judged by IV on the earlier states instead (:func:`_plain_state_check`): noise whose
    bias is below the standard errors passes, with the numbers.

    IV with fixed instruments (``kind="inputs"`` or ``"states"``) keeps no instrument signals
    either: its instruments are rows of the data, built here, and the fit is 2SLS on them, so
    the same correction applies.  On 20 right fits per condition (process noise only,
    ``benchmarks/bench_ls_checks.py --estimators iv_inputs iv_states``) the prewhitened
    correlations failed ``state_completeness`` on 14 and 17 of 20 (white inputs), and on 12
    of 20 with measurement noise only (IV's case); these fail none (white or low-pass inputs,
    with or without 20-40 dB measurement noise), while delays beyond the bound still fail
    ``input_correlation`` (18 and 20 of 20) and a closed loop ``feedback`` (13 and 18 of 20).
    The lagged inputs are often weak instruments: the IV residuals then overstate the noise
    (up to 1.45 x least squares' variance), and the p-values are conservative (8 of 120
    below 0.2 on 40 white-input fits; the lagged states' 25).

    Parameters
    ----------
    trajectories : list of (X, U)
    signals : list of ndarray (q, K) or None
        The fit's instrument signals (``None`` with ``kind="regressors"``, ``"inputs"`` or
        ``"states"``).
    kind : {"exogenous", "simulated", "regressors", "inputs", "states"}
        How they instrument (:func:`dmdidc.regression.refined.instrument_rows`);
        ``"regressors"``: no instrument signals, the regressors instrument themselves (least
        squares' projection; also without inputs, where only ``state_completeness`` is
        tested); ``"inputs"``, ``"states"``: IV with the fixed instruments of that name
        (:mod:`dmdidc.statistics.layout`), built here from the data.
    coefficients : ndarray, shape (n, p)
        The unrestricted coefficients of the fit: IV, or least squares kept by Hausman's
        pretest (the moments do not depend on them, only the covariance's residuals do).
    max_delay : int
    centred : bool
    level : float
        Level of each test.
    reference : bool
        The instruments come from a reference (closed loop): feedback is expected and
        reported, not failed; lag 0 of the inputs is feedback too.
    instrument_moments : TrimmedMoments, optional
        The instruments' moments over the samples of these checks, from the long-run
        covariance's (:func:`~dmdidc.regression.instrumental.long_run_covariance`): used
        when their samples' sums and count are those of the data here, computed otherwise.
    instrument_lags : int
        ``L`` of ``kind="inputs"`` (``u_{k-R-1} .. u_{k-R-L}`` beside ``u_k .. u_{k-R}``) or
        ``"states"`` (``x_{k-1} .. x_{k-L}`` beside them); unused otherwise.

    Returns
    -------
    list of Check
        ``input_correlation``, ``feedback``, ``state_completeness``.  A check whose corrected
        moments are all cancellation noise (periodic inputs: lagged inputs are combinations
        of the instruments, :func:`_decidable_directions`) is not applicable
        (``passed=None``), with the reason: the data cannot decide it.
    """
    R, L, S = max_delay, MOMENT_LAGS, STATE_LAGS
    n, p = coefficients.shape
    names = {"past": ("input_correlation", "Are the residuals uncorrelated with past inputs "
                      "beyond max_delay (no missing dynamics)?"),
             "future": ("feedback", "Are the residuals uncorrelated with future inputs "
                        "(no feedback)?"),
             "state": ("state_completeness", "Do past signals add nothing to the model (the "
                       "signals are the full state)?")}
    m = trajectories[0][1].shape[0]
    signals_of = {"past": (1, range(R + 1, R + L + 1)), "future": (1, range(-1, -L - 1, -1)),
                  "state": (0, range(1, S + 1))}            # (X or U, lags)
    widths = {"past": m * L, "future": m * L, "state": n * S}
    regressors = kind == "regressors"
    # Kronecker covariance (signals independent of the noise) for the inputs in open loop, and
    # for every group with least squares' projection: least squares is consistent only with
    # white errors (coloured ones reach x_k through the dynamics and bias it), which, as
    # everywhere here, are taken independent of the past: each e_k is then independent of its
    # corrected signals (functions of the past and of the inputs) and of the earlier moments
    independent = {group: group != "state" or regressors for group in names}
    limits = {group: _MOMENTS_INDEPENDENT if independent[group] else _MOMENTS_DEPENDENT
              for group in names}
    # the groups whose covariance is affordable (the others are not built at all); without
    # inputs (plain DMD by least squares) the signals' group alone
    computed = [group for group in names if widths[group] * n <= limits[group]
                and (m > 0 or group == "state")]
    if regressors:
        tested, lengths = _regressor_tests(trajectories, coefficients, computed, signals_of,
                                           R, centred)
    else:
        tested, lengths = _instrumented_tests(trajectories, signals, coefficients, computed,
                                              signals_of, kind, R, centred, independent,
                                              instrument_moments, instrument_lags)
    if sum(lengths) < _MIN_SAMPLES or (m == 0 and not regressors):
        return [Check(name, question, None,
                      finding=_too_short(trajectories, R + 2 * L, max(m, regressors)))
                for name, question in names.values()]
    checks, row = [], 0
    for group, (name, question) in names.items():
        if m == 0 and group != "state":
            checks.append(Check(name, question, None, finding="not applicable: no inputs"))
            continue
        if group not in computed:
            checks.append(Check(name, question, None,
                                finding=f"not computed: {widths[group] * n} moments exceed "
                                        f"{limits[group]} (a long-run covariance of that "
                                        f"size); see the correlations of diagnostics_.plot()"))
            continue
        result = tested(group, slice(row, row + widths[group]))
        row += widths[group]
        if result is None:
            checks.append(Check(name, question, None, finding=_UNDECIDABLE[group]))
            continue
        statistic, rank, z, index = result
        critical = float(special.chdtri(max(rank, 1), level))
        moment_row, residual = divmod(index, n)
        width = m if group != "state" else n
        lag, channel = divmod(moment_row, width)
        check = _moment_check(group, name, question, statistic, critical, z, lag, channel,
                              residual, R, reference, regressors)
        if regressors and m == 0 and check.failed:
            # plain DMD by least squares: the moments detect any measurement noise (by
            # sqrt(N)); IV on the earlier states tells noise from a missing state, and how far
            # the noise moved the coefficients
            check = _plain_state_check(check, noise_bias(trajectories, centred, level))
        checks.append(check)
    return checks


#: The statistic of one group of moments (its rows of the stacked moment signals), ``None``
#: when the data cannot decide it (:func:`_decidable_directions`).
_GroupTest = Callable[[str, slice], "tuple[float, int, float, int] | None"]


def _regressor_tests(trajectories: list[tuple[np.ndarray, np.ndarray]],
                     coefficients: np.ndarray, computed: list[str],
                     signals_of: dict[str, tuple[int, range]], R: int, centred: bool
                     ) -> tuple[_GroupTest, list[int]]:
    """The group tests of :func:`moment_checks` with least squares' own projection, from
    second moments alone (:func:`~dmdidc.inference.moment_gram.corrected_moments`).

    Least squares' projection ``h_k = (sum phi phi^T)^-1 phi_k`` (projected_instruments of
    ``Z = Phi``): its error is exactly ``Theta^ - Theta = sum_l e_l h_l^T``, no linearization,
    so ``sum_k w_k e^_k^T = sum_k (w_k - S_wphi S^-1 phi_k) e_k^T``, the true errors weighted
    by ``w``'s least-squares residual on the regressors.  Those weights at ``k`` are functions
    of ``x_k``, earlier signals and inputs (and, for feedback, future inputs: independent of
    the noise in open loop), which ``e_k`` is independent of (process noise drives the later
    states, not these): the moments are a martingale difference, independent over ``k`` as
    well, so no lag window (its terms ``W_tau kron E_tau``, ``E_tau ~ 0`` for white errors,
    would add noise) and the covariance is ``W0 kron E0``.  The prewhitened correlations'
    state filter mixed later residuals into earlier states instead (32 of 40 exactly-right
    fits failed state_completeness, ``benchmarks/bench_ls_checks.py``).
    """
    slots = [("x" if signals_of[group][0] == 0 else "u", lag)
             for group in computed for lag in signals_of[group][1]]
    n, m = coefficients.shape[0], trajectories[0][1].shape[0]
    A_d, blocks = coefficient_blocks(coefficients, n, m, R)
    residuals = [model_residuals([(X, U)], A_d, blocks)[0][0] if U.shape[1] > R
                 else np.zeros((n, 0)) for X, U in trajectories]
    grams = corrected_moments(trajectories, residuals, slots, max_delay=R, centred=centred)
    E0 = grams.residuals / max(grams.n_samples, 1)

    def tested(group: str, rows: slice) -> tuple[float, int, float, int] | None:
        basis, back = _decidable_basis(grams.raw[rows], grams.signals[rows, rows])
        if basis.shape[1] == 0:
            return None
        return _kronecker_statistic(basis.T @ grams.moments[rows], np.eye(basis.shape[1]),
                                    E0, back)           # orthonormal directions: W0 = I
    return tested, grams.lengths


def _instrumented_tests(trajectories: list[tuple[np.ndarray, np.ndarray]],
                        signals: list[np.ndarray] | None, coefficients: np.ndarray,
                        computed: list[str], signals_of: dict[str, tuple[int, range]],
                        kind: str, R: int, centred: bool, independent: dict[str, bool],
                        instrument_moments: TrimmedMoments | None, instrument_lags: int
                        ) -> tuple[_GroupTest, list[int]]:
    """The group tests of :func:`moment_checks` with an IV projection (instrument signals or
    fixed instruments): the signals, instruments and residuals laid out side by side, the
    corrected signals formed, and a long-run covariance over the residuals' memory."""
    L, S = MOMENT_LAGS, STATE_LAGS
    n, p = coefficients.shape
    simulated = kind == "simulated"
    # x_k, the instruments' own rows (z_k less the lagged inputs it shares with Phi when
    # simulated, instrument_rows), u_k .. u_{k-R}, x_{k+1} (Y), the moment signals: simulated,
    # z_k = [x^_k; u_k .. u_{k-R}] is then one block of rows (no copy), as is Phi otherwise
    # fixed instruments are rows of the data themselves (StatisticsLayout's order): the
    # fit is 2SLS on them, so the same projection h_k = G^T z_k corrects its moments
    fixed = {"inputs": [(1, range(R + instrument_lags + 1))],
             "states": [(1, range(R + 1)), (0, range(1, instrument_lags + 1))]}.get(kind)
    own = (2, range(1)) if simulated else (2, range(R + 1))
    order = ([(0, range(1)), own, (1, range(R + 1)), (0, range(-1, 0))] if simulated
             else [(0, range(1)), (1, range(R + 1)), (0, range(-1, 0))]
             + (fixed if fixed is not None else [own]))
    sources = (trajectories if fixed is not None else
               [(X, U, E) for (X, U), E in zip(trajectories, signals, strict=True)])
    # the instruments' lags beyond the checks' own need samples before the first
    laid, lengths = _laid_out(sources, order + [signals_of[group] for group in computed],
                              R + max(L, instrument_lags if fixed is not None else 0), L)
    if sum(lengths) < _MIN_SAMPLES or trajectories[0][1].shape[0] == 0:
        return (lambda group, rows: None), lengths
    z_rows = (signals[0].shape[0] * len(own[1]) if fixed is None
              else sum(trajectories[0][which].shape[0] * len(lags) for which, lags in fixed))
    lagged = p - n
    z_at = slice(n, n + z_rows + lagged) if simulated else slice(p + n, p + n + z_rows)
    moments = _own_moments(instrument_moments, laid[z_at], centred, L)
    memory = _own_memory(instrument_moments if moments is not None else None, coefficients)
    if moments is None and kind == "inputs" and not centred:
        # fixed instruments u_k .. u_{k-R-L} (the fit keeps no moments of them): their Gram
        # matrix from the lag structure, and the regressors' lagged inputs are its first rows
        # (the benchmark's 124 instruments, 19 600 samples: 37 -> 8-16 ms, loaded machine)
        Z, lags = laid[z_at], range(R + instrument_lags + 1)
        firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
        S_zz = _lag_block_products(Z, lags, Z, lags, firsts, firsts + np.asarray(lengths) - 1)
        S_zz = 0.5 * (S_zz + S_zz.T)
        moments = S_zz, np.concatenate([Z @ laid[:n].T, S_zz[:, :p - n]], axis=1)
    if centred:                           # every row at once, in place (laid is our own)
        laid -= laid.mean(axis=1, keepdims=True)
    X_all = laid[:n]
    Z_all = laid[z_at]
    if simulated:
        U_all, Y_all = Z_all[z_rows:], laid[n + z_rows + lagged:p + z_rows + n]
        common = lagged
    else:
        U_all, Y_all = laid[n:p], laid[p:p + n]
        common = 0
    W_all = laid[p + n + z_rows:]
    # over the laid-out x_{k+1} (ours, not read again): no arrays for the products
    E_all = _subtract_product(_subtract_product(Y_all, coefficients[:, :n], X_all),
                              coefficients[:, n:], U_all)
    # each residual at unit rms: the statistics are then the same in any units of the states
    # (the covariance's rank cut is relative to its largest eigenvalue, which the state in the
    # largest units set: states in units 1e3 apart moved feedback's statistic 117 -> 62)
    E_all /= _column_scale(np.sqrt(np.einsum("ij,ij->i", E_all, E_all) / E_all.shape[1]))[:, None]
    W_phi = None if centred else _signal_regressor_products(
        W_all, X_all, U_all, [signals_of[group] for group in computed], R, lengths)
    energies = np.einsum("ij,ij->i", W_all, W_all)      # of the raw signals, before:
    corrected_all = _corrected_signals(W_all, X_all if simulated else laid[:p], Z_all, common,
                                       moments, W_phi, overwrite=True)      # (laid is ours)
    residuals = np.split(E_all, np.cumsum(lengths)[:-1], axis=1)
    if memory is None:
        memory = residual_memory(residuals)             # one pass of up to 100 lags
    independent_lags = hac_lags(residuals, memory)
    dependent_lags = max(independent_lags, 2 * (memory + S + 1))
    residual_moments: dict = {}

    def tested(group: str, rows: slice) -> tuple[float, int, float, int] | None:
        corrected = corrected_all[rows]
        # the directions formed only when their fewer lagged products repay the product that
        # forms them (r s per sample against lags (s^2 - r^2))
        basis, back, gram = _decidable(energies[rows], corrected)
        (s, r), lags = basis.shape, independent_lags if independent[group] else dependent_lags
        if r == 0:
            return None
        formed = not independent[group] or lags * (s * s - r * r) >= r * s
        return _moment_statistic(
            basis.T @ corrected if formed else corrected, E_all, lengths, lags,
            independent[group], back, np.eye(r) if formed else gram,   # orthonormal directions
            residual_moments, None if formed else basis)
    return tested, lengths


def _too_short(trajectories: list[tuple[np.ndarray, np.ndarray]], window: int, m: int) -> str:
    """Why the moment tests found too few samples: what the pieces held against the
    ``window`` of lags each loses (``max_delay + 2 x`` :data:`MOMENT_LAGS`)."""
    if m == 0:
        return "not applicable: no inputs"
    lengths = np.array([U.shape[1] for _, U in trajectories])
    usable = int(np.maximum(lengths - window, 0)[lengths - window >= 2].sum())
    low, high = int(lengths.min()), int(lengths.max())
    sizes = f"{low}" if low == high else f"{low} to {high}"
    return (f"not applicable: {usable} samples left for the moment tests, fewer than "
            f"{_MIN_SAMPLES}: each of the {lengths.size} pieces (of {sizes} samples) loses "
            f"{window} to the lags (max_delay and "
            f"{MOMENT_LAGS} lags either side), and pieces of fewer than {window + 2} samples "
            f"give none; longer experiments (or fewer gaps) are needed")


def _own_memory(moments: TrimmedMoments | None, coefficients: np.ndarray) -> int | None:
    """The residuals' memory the long-run covariance found over the checks' samples
    (``moments``, already matched to them by :func:`_own_moments`) when it is of the
    residuals of these ``coefficients`` (least squares kept by the pretest, or a robust
    fit, has others), else ``None``."""
    if (moments is None or moments.residual_memory is None or moments.coefficients is None
            or not np.array_equal(moments.coefficients, coefficients)):
        return None
    return moments.residual_memory


def _own_moments(moments: TrimmedMoments | None, Z: np.ndarray, centred: bool, trim: int
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(Z Z^T, Z head^T)`` of the checks' samples from ``moments`` when they are of the
    instruments ``Z`` here (uncentred rows; the same trim, centring, count and sums to
    rounding), else ``None``: a guard against moments of other data, which would decide the
    checks silently wrong."""
    if (moments is None or moments.trim != trim or moments.centred != centred
            or moments.n_samples != Z.shape[1] or moments.sums.shape != (Z.shape[0],)):
        return None
    sums = Z.sum(axis=1)
    # sum_k |z_k| <= sqrt(N sum_k z_k^2) = sqrt(N S_zz + sums^2) (S_zz centred or not): a bound
    # from the moments at hand, not two more passes over the instruments for their extremes
    # (2.6 -> 1 ms of the benchmark's IV checks)
    scale = np.sqrt(np.abs(Z.shape[1] * np.diag(moments.S_zz)) + sums ** 2)
    if not np.all(np.abs(sums - moments.sums) <= 1e-9 * scale):
        return None
    return moments.S_zz, moments.S_zhead


def _signal_regressor_products(W: np.ndarray, X: np.ndarray, U: np.ndarray,
                               groups: list[tuple[int, range]], R: int, lengths: list[int]
                               ) -> np.ndarray:
    """``S_wphi = W Phi^T`` of uncentred moment signals ``W`` (the ``groups``' rows: lags of
    the states, ``which = 0``, or of the inputs, ``1``) with the regressors ``Phi = [x_k;
    u_k .. u_{k-R}]`` (``X``, ``U``), the trajectories side by side (``lengths``): the input
    groups' products with the lagged inputs from their lag structure
    (:func:`_lag_block_products`; 8.2 -> 4.8 ms at the benchmark's 80 signals, 84 lagged
    inputs and 19 600 samples, 1.8 of them ``W X^T``)."""
    n, m = X.shape[0], U.shape[0] // (R + 1)
    firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)
    lasts = firsts + np.asarray(lengths) - 1
    W_phi = np.empty((W.shape[0], n + U.shape[0]))
    W_phi[:, :n] = W @ X.T
    spans, row = [], 0
    for which, lags in groups:
        spans.append(slice(row, row + len(lags) * (n if which == 0 else m)))
        row = spans[-1].stop
    inputs = [(rows, lags) for rows, (which, lags) in zip(spans, groups, strict=True) if which]
    # the input groups' anchors (their smallest lag against every lagged input, every row
    # against lag 0) in two products: one pass over U and one over W, not one per group
    smallest = [rows.start + m * (0 if lags.step > 0 else len(lags) - 1) for rows, lags in inputs]
    if inputs:
        row_anchors = np.concatenate([W[at:at + m] for at in smallest]) @ U.T
        column_anchors = W[:inputs[-1][0].stop] @ U[:m].T
    for i, (rows, lags) in enumerate(inputs):
        W_phi[rows, n:] = _lag_block_products(
            W[rows], lags, U, range(R + 1), firsts, lasts,
            (row_anchors[i * m:(i + 1) * m], column_anchors[rows]))
    for rows, (which, _) in zip(spans, groups, strict=True):
        if not which:
            W_phi[rows, n:] = W[rows] @ U.T
    return W_phi


def _lag_block_products(A: np.ndarray, a_lags: range, B: np.ndarray, b_lags: range,
                        firsts: np.ndarray, lasts: np.ndarray,
                        anchors: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """``A @ B.T`` for rows that are lags of one signal ``u`` (``width`` rows each): block
    ``(i, j)`` of rows ``u_{k-a}``, ``a = a_lags[i]``, of ``A`` and ``u_{k-b}``, ``b =
    b_lags[j]``, of ``B``, each a run of consecutive lags (step 1 or -1), the trajectories
    side by side (``firsts``, ``lasts``: the columns of each one's first and last sample).

    Block ``(a, b)`` is block ``(a - 1, b - 1)`` over the window one sample later: it gains
    the products of the first sample's ``u_{s-a} u_{s-b}^T`` and loses those past the end,
    ``u_{e-a} u_{e-b}^T`` (rows ``a - 1``, ``b - 1`` of the last sample).  So only the
    blocks of the smallest ``a`` or ``b`` are products over the samples (the block-Toeplitz
    structure of :func:`~dmdidc.regression.instrumental.lagged_moments`'s lagged layout, as
    ``_lagged_gram`` takes it for a Gram matrix): ``width^2 (len(a) + len(b))`` multiply-adds
    per sample instead of ``width^2 len(a) len(b)`` (7x fewer for the 40 signal rows of a
    group against the 84 lagged inputs of the benchmark's regression).  Uncentred rows only:
    each row's own mean breaks the lag structure.  ``anchors``: those blocks' rows and
    columns, ``(A_min @ B.T, A @ B_min.T)``, when the caller has them (from products of
    several groups at once).
    """
    width = A.shape[0] // len(a_lags)
    na, nb = len(a_lags), len(b_lags)
    out = np.empty((A.shape[0], B.shape[0]))
    blocks = out.reshape(na, width, nb, width)
    first_a = 0 if a_lags.step > 0 else na - 1              # the block of the smallest lag
    first_b = 0 if b_lags.step > 0 else nb - 1
    rows = slice(first_a * width, (first_a + 1) * width)
    columns = slice(first_b * width, (first_b + 1) * width)
    out[rows], out[:, columns] = ((A[rows] @ B.T, A @ B[columns].T) if anchors is None
                                  else anchors)
    gained = (A[:, firsts] @ B[:, firsts].T).reshape(na, width, nb, width)
    lost = (A[:, lasts] @ B[:, lasts].T).reshape(na, width, nb, width)
    # the blocks of b > min(b), and those of b - 1, as slices of the blocks' axis
    later, earlier = ((slice(1, nb), slice(0, nb - 1)) if b_lags.step > 0
                      else (slice(0, nb - 1), slice(1, nb)))
    order = range(1, na) if a_lags.step > 0 else range(na - 2, -1, -1)   # a ascending
    for i in order:
        previous = i - 1 if a_lags.step > 0 else i + 1                   # the block of a - 1
        blocks[i, :, later] = (blocks[previous, :, earlier] + gained[i, :, later]
                               - lost[previous, :, earlier])
    return out


def _corrected_signals(W: np.ndarray, head: np.ndarray, Z: np.ndarray, common: int = 0,
                       moments: tuple[np.ndarray, np.ndarray] | None = None,
                       W_phi: np.ndarray | None = None, *, overwrite: bool = False
                       ) -> np.ndarray:
    """The moment signals corrected for the fit's estimation error, ``w~_k = w_k - S_wphi
    h_k`` with the projected instruments ``h_k = G^T z_k``
    (:func:`~dmdidc.regression.instrumental.projected_instruments`), every group at once and
    as ``(S_wphi G^T) Z``: never the ``(p, N)`` projected instruments.  The regressors are
    ``Phi = [head; Z[-common:]]`` (``common`` rows of ``Z`` are the same signals,
    :func:`~dmdidc.regression.instrumental.instrument_moments`): never copied together.
    ``moments``: ``(Z Z^T, Z head^T)`` when known (:func:`_own_moments`); ``W_phi``:
    ``S_wphi = W Phi^T`` when known (:func:`_signal_regressor_products`).  ``overwrite``:
    the corrected signals replace ``W`` (C-ordered, float), by one matrix product that
    subtracts in place (the same values to the bit: no ``(q, N)`` product and no pass to
    subtract it)."""
    if moments is None:
        S_zz, S_zphi = instrument_moments(Z, head, common)
    else:
        S_zz, S_zphi = moments[0], regressor_moments(*moments, common)
    G = projected_instruments(S_zz, S_zphi)
    if W_phi is None:
        W_phi = W @ head.T
        if common:
            W_phi = np.concatenate([W_phi, W @ Z[-common:].T], axis=1)
    correction = W_phi @ G.T
    if overwrite:
        return _subtract_product(W, correction, Z)
    corrected = correction @ Z
    return np.subtract(W, corrected, out=corrected)


def _subtract_product(target: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``target -= left @ right`` in ``target``'s memory: for C-ordered float ``target`` and
    ``right``, one BLAS product with ``beta = 1`` on their Fortran-ordered transposes (no
    array for the product, no pass to subtract it; the same values to the bit where the
    product's inner dimension is one panel of the kernel, as for these few hundred rows)."""
    if (target.size and left.size and target.flags.c_contiguous and right.flags.c_contiguous
            and target.dtype == right.dtype == np.float64):     # (BLAS refuses empty ones)
        blas.dgemm(-1.0, right.T, left.T, beta=1.0, c=target.T, overwrite_c=True)
    else:
        target -= left @ right
    return target


#: A direction of the corrected moments keeping less than this fraction of the raw moments'
#: energy (squared norm) is taken as determined by the fit (dropped): periodic inputs make the
#: corrected moments cancellation noise (1e-27 .. 1e-9 of the raw energy, the top when two
#: frequencies are close on a short record), while genuine directions keep 1e-10 .. 1 of it
#: (dropping the few below this bound only drops moment conditions: the test stays valid).
_DECIDABLE_ENERGY = 1e-6

_UNDECIDABLE = {
    group: f"not computed: the {what}, corrected for the fit's estimation error, are cancellation "
           f"noise (below {_DECIDABLE_ENERGY:.0e} of their raw energy): they are linear "
           f"combinations of the signals the fit already uses, as for a periodic input (a few "
           f"sinusoids) or an otherwise degenerate excitation, so the data cannot decide this "
           f"check; excite with a broadband input (white noise, a PRBS) to test it"
    for group, what in (("past", "moments with past inputs beyond max_delay"),
                         ("future", "moments with future inputs"),
                         ("state", "moments with past signals"))}


def _decidable_directions(raw: np.ndarray, corrected: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The directions of the corrected moment signals the data can decide, and the way back.

    A rank decision relative to the *raw* signals' scale (each row of ``raw`` of unit energy),
    not to the corrected ones' own: when the signals are in the span of the instruments (a
    periodic input once a period fits in the lag window) the correction cancels them to
    rounding, and a decision relative to that noise would keep it and test it.

    Returns
    -------
    reduced : ndarray, shape (r, N)
        The kept directions, orthonormal rows (``r = 0``: nothing decidable).
    back : ndarray, shape (q, r)
        ``back @ reduced`` is ``corrected`` without the dropped directions.
    """
    basis, back, _ = _decidable(np.einsum("ij,ij->i", raw, raw), corrected)
    return basis.T @ corrected, back


def _decidable(energy: np.ndarray, corrected: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_decidable_directions` from the raw signals' ``energy`` (q,), without forming
    the directions: ``basis`` (q, r), whose transpose maps the corrected signals to them,
    ``back`` (q, r), and the corrected signals' Gram matrix (q, q)."""
    gram = corrected @ corrected.T
    return (*_decidable_basis(energy, gram), gram)


def _decidable_basis(energy: np.ndarray, gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_decidable_directions` from second moments: the raw signals' ``energy`` (q,) and
    the corrected signals' ``gram`` (q, q); returns ``basis`` (q, r), whose transpose maps the
    corrected signals to the kept orthonormal directions, and ``back`` (q, r)."""
    scale = np.sqrt(np.where(energy > 0, energy, 1.0))
    # the scaled signals' Gram and directions, without a scaled copy of the signals
    values, vectors = np.linalg.eigh(gram / np.outer(scale, scale))
    keep = values > _DECIDABLE_ENERGY
    root = np.sqrt(values[keep])
    return vectors[:, keep] / root / scale[:, None], scale[:, None] * vectors[:, keep] * root


def _moment_statistic(W: np.ndarray, E: np.ndarray, lengths: list[int], lags: int,
                      independent: bool, back: np.ndarray | None = None,
                      gram: np.ndarray | None = None, residual_moments: dict | None = None,
                      basis: np.ndarray | None = None, factored: bool | None = None
                      ) -> tuple[float, int, float, int]:
    """``vec(g)^T V^+ vec(g)``, its degrees of freedom, and the largest ``|g_i| / sd_i``.

    ``W`` (q, N) and ``E`` (n, N) hold the trajectories (``lengths`` samples each) side by
    side; lags stay within a trajectory.  With ``back`` (q, r), ``W`` holds ``r`` reduced
    directions (:func:`_decidable_directions`) and the largest standardized moment is that of
    the signals ``back @ W`` (the index into their ``(q, n)`` moments).  ``gram``: ``W W^T``
    when the caller knows it (the identity for orthonormal directions).  ``residual_moments``:
    a dict the lagged products of ``E`` are kept in, for the next group with the same ``E``
    and ``lags``.  ``basis`` (s, r): ``W`` (s, N) holds the signals and ``basis.T @ W`` the
    directions, not formed where only second moments of them are needed (their moments and
    lagged products are ``basis.T`` times the signals', times ``basis``); ``gram`` is then
    the signals' (s, s).

    Signals independent of the noise with a lag window (``independent``, ``lags > 0``):
    ``V = sum_tau w_tau (W_tau kron E_tau + W_tau^T kron E_tau^T)`` is kept as its ``2 lags
    + 1`` terms (:func:`_lag_window_terms`), the variances from the terms' diagonals, and the
    form by preconditioned conjugate gradients on them with a Lanczos certificate of full
    rank (:func:`_factored_form`): ``O(J (q^2 n + q n^2))`` an iteration, no ``(q n)^2``
    matrix (the IV fit of 50 states and 4 inputs: 2000 moments, 87-92 -> 4.3-4.9 ms of the
    form, 26 iterations: the certificate's, conjugate gradients converge first).
    The dense path (``V`` formed, :func:`_pseudo_quadratic`) decides where the certificate
    or the solve fails within the iterations the dense path's own cost buys
    (:func:`_affordable_iterations`; none below 30: small groups, or long lag windows whose
    ``J`` terms cost more an iteration), and whenever ``factored=False``; ``factored=True``
    tries the factored path whatever the cost (both for tests).
    """
    if basis is not None and not independent:     # products of the directions per sample
        W, gram, basis = basis.T @ W, None if gram is None else basis.T @ gram @ basis, None
    q, n = W.shape[0] if basis is None else basis.shape[1], E.shape[0]
    N = E.shape[1]
    g = W @ E.T
    g = (g if basis is None else basis.T @ g).ravel()                 # row-major (q, n)
    if independent:
        signals_gram = W @ W.T if gram is None else gram
        W0 = signals_gram if basis is None else basis.T @ signals_gram @ basis
    if independent and lags == 0:
        return _kronecker_statistic(g.reshape(q, n), W0, E @ E.T / N, back)
    if independent:
        left, right = _lag_window_terms(W, E, lengths, lags, signals_gram, W0, basis,
                                        residual_moments)
        variances = _kronecker_sum_diagonal(left, right, back)
        result = (_factored_form(left, right, g, _affordable_iterations(left, right))
                  if factored is None else
                  _factored_form(left, right, g, _FACTORED_ITERATIONS) if factored else None)
        if result is None:
            V = _kronecker_sum(left, right)
            result = _pseudo_quadratic(V, g, overwrite=True)     # V is ours: factored in place
        statistic, rank = result
    else:
        # sum_k sum_l weight(|k - l|) m_k m_l^T: each moment series smoothed by the Bartlett
        # kernel (within its trajectory), then one product -- not one product per lag.
        cuts = np.cumsum(lengths)[:-1]
        V = np.zeros((q * n, q * n))
        for w, e in zip(np.split(W, cuts, axis=1), np.split(E, cuts, axis=1), strict=True):
            moments = (w[:, None, :] * e[None, :, :]).reshape(q * n, -1)
            V += moments @ _bartlett_smoothed(moments, lags).T
        V += V.T                          # numpy buffers the overlapping transpose
        V *= 0.5
        variances = np.diag(V).copy()
        if back is not None:                 # the variances of the moments of back @ W
            # sum_ab back_ia back_ib V[(a, r), (b, r)]: the (q, q) block of each residual r
            # first (a view), then two products (0.6 against 2.9 ms for 40 x 20 moments)
            blocks = np.einsum("arbr->rab", V.reshape(q, n, q, n))
            variances = ((back @ blocks) * back).sum(axis=2).T.ravel()
        statistic, rank = _pseudo_quadratic(V, g, overwrite=True)     # V is ours
    if back is not None:                 # the moments of back @ W
        g = (back @ g.reshape(q, n)).ravel()
    sd = np.sqrt(np.clip(variances, np.finfo(float).tiny, None))
    index = int(np.argmax(np.abs(g) / sd))
    return statistic, rank, float(abs(g[index]) / sd[index]), index


def _lag_window_terms(W: np.ndarray, E: np.ndarray, lengths: list[int], lags: int,
                      signals_gram: np.ndarray, W0: np.ndarray, basis: np.ndarray | None,
                      residual_moments: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """The terms ``(left, right)``, ``(2 lags + 1, q, q)`` and ``(2 lags + 1, n, n)``, of the
    lag window's covariance ``V = sum_j left_j kron right_j``: ``W0 kron E0 / N``, then
    ``w_tau W_tau kron E_tau / N`` and its transpose for each lag (Bartlett weights ``w_tau``);
    the lagged products of all pieces and lags in a few products (lagged_moments)."""
    N = E.shape[1]
    W_lagged = lagged_moments(W, lengths, lags, signals_gram)
    if basis is not None:
        W_lagged = basis.T @ W_lagged @ basis
    memo = {} if residual_moments is None else residual_moments
    if memo.get("lags") != lags:
        E0 = E @ E.T
        memo.update(lags=lags, moments=(E0, lagged_moments(E, lengths, lags, E0)))
    E0, E_lagged = memo["moments"]
    left = np.empty((2 * lags + 1,) + W0.shape)
    right = np.empty((2 * lags + 1,) + E0.shape)
    left[0], right[0] = W0, E0 / N
    for tau in range(1, lags + 1):
        weight = 1.0 - tau / (lags + 1.0)
        left[2 * tau - 1] = weight * W_lagged[tau - 1]
        left[2 * tau] = left[2 * tau - 1].T
        right[2 * tau - 1] = E_lagged[tau - 1] / N
        right[2 * tau] = right[2 * tau - 1].T
    return left, right


def _kronecker_sum(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``V = sum_j left_j kron right_j`` (a set of terms closed under transposition, so ``V =
    (P + P^T) / 2`` of ``P = sum_j left_j kron right_j``) as one product of the stacked
    factors (``q^2`` by terms by ``n^2``), reordered: no Kronecker product per term."""
    (J, q, _), n = left.shape, right.shape[1]
    # halved (exactly, a power of two) for the symmetrization below
    products = np.reshape(0.5 * left, (J, q * q)).T @ np.reshape(right, (J, n * n))
    # V = (P + P^T) / 2 of P[(a, c), (b, d)] = products[(a, b), (c, d)] in one pass that
    # reads both orders from the products (the reordered copy, then V += V.T and V *= 0.5
    # were four passes over the (q n)^2 matrix; the same values, to the bit)
    halves = products.reshape(q, q, n, n)
    return np.add(halves.transpose(0, 2, 1, 3), halves.transpose(1, 3, 0, 2),
                  out=np.empty((q, n, q, n))).reshape(q * n, q * n)


def _kronecker_sum_diagonal(left: np.ndarray, right: np.ndarray,
                            back: np.ndarray | None) -> np.ndarray:
    """The variances of the moments, ``diag(V)`` of ``V = sum_j left_j kron right_j`` (the
    factors' diagonals: ``sum_j diag(left_j) kron diag(right_j)``); with ``back`` those of the
    moments of ``back @ W``: the ``(q, q)`` block of residual ``r`` is ``sum_j right_j[r, r]
    left_j``, so ``sum_j (back left_j back^T)_ii right_j[r, r]``."""
    right_diagonals = np.diagonal(right, axis1=1, axis2=2)             # (J, n)
    if back is None:
        return (np.diagonal(left, axis1=1, axis2=2).T @ right_diagonals).ravel()
    # products, not einsum (its three operands loop in C: 4.4 against 0.8 ms for 81 terms);
    # the residuals' blocks first when there are fewer residuals than terms
    if left.shape[0] <= right.shape[1]:
        return (((back @ left) * back).sum(axis=2).T @ right_diagonals).ravel()
    blocks = np.tensordot(right_diagonals.T, left, 1)                    # (n, r, r)
    return ((back @ blocks) * back).sum(axis=2).T.ravel()


#: Most iterations of :func:`_factored_form` (it then leaves the form to the dense path).
_FACTORED_ITERATIONS = 300
#: Fewest iterations the dense path's cost must buy for :func:`_factored_form` to be tried
#: (below, the dense factorization is the cheaper bet): the certificate alone takes 15 at
#: the least (``eps < 1/2``), 25-40 where the preconditioned spectrum spans 5-16 (the IV
#: fits' input groups of 760-2000 moments).
_FACTORED_MIN_ITERATIONS = 30
#: Relative residual the factored solve must reach, in the preconditioned space
#: (``|S (g - V x)| / |S g|``, ``S`` the preconditioner's inverse square root: the norm the
#: form's error bound needs).
_FACTORED_RESIDUAL = 1e-12
#: Probability, per check, that the Lanczos certificate of full rank passes a covariance that
#: has an eigenvalue at or below ``_MOMENT_RANK_RTOL`` of its largest (over the random start);
#: checked after each iteration once ``eps < 1/2``, so up to a few hundred times that over a
#: solve (by the union bound).
_CERTIFICATE_RISK = 1e-6
#: Flops one iteration's interpreter overhead (a dozen numpy calls) costs on one core.
_ITERATION_OVERHEAD = 2e6


def _affordable_iterations(left: np.ndarray, right: np.ndarray) -> int:
    """Iterations of :func:`_factored_form` the dense path's cost buys (0: not worth trying):
    the dense path builds ``V`` (``2 J q^2 n^2`` flops) and factors it (``(q n)^3 / 3``), an
    iteration applies the terms to two ``(q, n)`` matrices (``4 J (q^2 n + q n^2)``), so a
    fallback costs at most twice the dense path alone."""
    (J, q, _), n = left.shape, right.shape[1]
    dense = 2.0 * J * q * q * n * n + (q * n) ** 3 / 3.0
    iteration = 4.0 * J * (q * q * n + q * n * n) + _ITERATION_OVERHEAD
    affordable = int(min(dense / iteration, _FACTORED_ITERATIONS))
    return affordable if affordable >= _FACTORED_MIN_ITERATIONS else 0


def _nearest_kronecker(left: np.ndarray, right: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """``(A, B)`` of the Kronecker product nearest ``sum_j left_j kron right_j`` in Frobenius
    norm (Van Loan & Pitsianis 1993): the leading singular pair of its rearrangement
    ``sum_j vec(left_j) vec(right_j)^T``, from the terms' Gram matrices (``J x J``), never
    the ``q^2 x n^2`` rearrangement; ``None`` when the terms vanish."""
    J = left.shape[0]
    flat_left, flat_right = left.reshape(J, -1), right.reshape(J, -1)
    gram_left, gram_right = flat_left @ flat_left.T, flat_right @ flat_right.T
    values, vectors = np.linalg.eigh(gram_left)
    keep = values > J * np.finfo(float).eps * max(values[-1], 0.0)
    if not keep.any():
        return None
    # vec(A) = sum_j alpha_j vec(left_j), unit norm: alpha^T gram_left alpha = 1; then
    # gram_right gram_left alpha = sigma^2 alpha, symmetric in the root of gram_left
    root = vectors[:, keep] * np.sqrt(values[keep])
    alpha = vectors[:, keep] @ (np.linalg.eigh(root.T @ gram_right @ root)[1][:, -1]
                                / np.sqrt(values[keep]))
    A = np.tensordot(alpha, left, 1)
    B = np.tensordot(gram_left @ alpha, right, 1)
    if np.trace(A) < 0:
        A, B = -A, -B
    return 0.5 * (A + A.T), 0.5 * (B + B.T)


def _factored_form(left: np.ndarray, right: np.ndarray, g: np.ndarray, iterations: int
                   ) -> tuple[float, int] | None:
    """:func:`_pseudo_quadratic` of ``V = sum_j left_j kron right_j`` (``(q n)^2``, never
    formed) and ``g`` (row-major ``(q, n)``) when ``V`` is certified of full rank, else
    ``None`` (the caller then forms ``V``).

    Preconditioned conjugate gradients solve ``V x = g`` on the operator ``G -> sum_j left_j
    G right_j^T`` (``q x n`` matrices: ``O(J (q^2 n + q n^2))`` a product, against
    ``O((q n)^3)`` for a factorization of ``V``), preconditioned by the Kronecker product
    ``A kron B`` nearest ``V`` (:func:`_nearest_kronecker`), inverted by the eigen-
    decompositions of ``A`` and ``B``: the terms are transformed once into those of ``C =
    (S_A kron S_B) V (S_A kron S_B)^T`` with ``S = diag(a)^-1/2 U^T``, and ``g^T V^-1 g =
    g~^T C^-1 g~``.  The solve stops at a relative residual of
    :data:`_FACTORED_RESIDUAL` (checked again on the true residual), the form is ``g~^T x +
    x^T r``, in error by ``r^T C^-1 r <= |r|^2 / lambda_min(C)``.

    The dense path keeps eigenvalues above ``_MOMENT_RANK_RTOL`` of the largest; the rank is
    ``q n`` only when ``lambda_min(V) >= lambda_min(C) min(a) min(b)`` exceeds that share of
    ``lambda_max(V) <= lambda_max(C) max(a) max(b)``.  The extremes of ``C`` are bounded by
    Lanczos from a random start (a fixed seed, run alongside the solve on the same products):
    after ``k`` products its Ritz values ``theta`` satisfy, each with probability at least
    ``1 - 1.648 sqrt(q n) exp(-sqrt(eps) (2k - 3))`` (Kuczynski & Wozniakowski 1992, for positive
    semi-definite matrices, applied to ``C`` and to ``lambda_max(C) I - C``),
    ``lambda_max(C) <= theta_max / (1 - eps)`` and ``lambda_min(C) >= (theta_min - eps
    lambda_max(C)) / (1 - eps)``; ``eps`` is taken so that both hold but with probability
    :data:`_CERTIFICATE_RISK`.  The start's components reach every eigenvector, which the
    solve's own Krylov space (from ``g``) does not: a null direction of ``V`` that ``g`` misses
    leaves conjugate gradients converging, and the Ritz values of their own coefficients
    blind to it.  ``None`` (the dense path decides) when the preconditioner is
    not positive definite, or the bounds do not certify full rank, or the solve has not
    converged, within ``iterations``.
    """
    (J, q, _), n = left.shape, right.shape[1]
    size = q * n
    # unit scales first: the factors' squares (Gram matrices) stay finite at any units
    left_scale = float(np.max(np.abs(np.diagonal(left[0]))))
    right_scale = float(np.max(np.abs(np.diagonal(right[0]))))
    if not (left_scale > 0 and right_scale > 0 and np.isfinite(left_scale * right_scale)
            and iterations > 0):
        return None
    left, right = left / left_scale, right / right_scale
    nearest = _nearest_kronecker(left, right)
    if nearest is None:
        return None
    a, U_a = np.linalg.eigh(nearest[0])
    b, U_b = np.linalg.eigh(nearest[1])
    # bottom <= top: no certificate can pass where the preconditioner's own spread exceeds
    # the rank cut (a repeated signal or residual: W0 or E0, and A or B, singular)
    if not (a[0] > 0 and b[0] > 0 and a[0] * b[0] > _MOMENT_RANK_RTOL * a[-1] * b[-1]):
        return None
    S_a, S_b = U_a.T / np.sqrt(a)[:, None], U_b.T / np.sqrt(b)[:, None]
    # C's terms S_a left_j S_a^T, S_b right_j S_b^T, laid out for two products per
    # application: all left terms against the operands at once (J q, operands n), then the
    # right terms, contracted over (j, c): X~[(i, a), (j, c)] against right~[(j, c), d]
    stacked_left = (S_a @ left @ S_a.T).reshape(J * q, q)
    stacked_right = (S_b @ right @ S_b.T).transpose(0, 2, 1).reshape(J * n, n)

    def applied(operands: list[np.ndarray]) -> np.ndarray:
        s = len(operands)
        products = stacked_left @ np.stack(operands, axis=1).reshape(q, s * n)
        products = products.reshape(J, q, s, n).transpose(2, 1, 0, 3).reshape(s * q, J * n)
        return (products @ stacked_right).reshape(s, q, n)

    rhs = S_a @ (g.reshape(q, n) / np.sqrt(left_scale) / np.sqrt(right_scale)) @ S_b.T
    target = (_FACTORED_RESIDUAL * np.linalg.norm(rhs)) ** 2
    x, residual = np.zeros((q, n)), rhs.copy()
    direction, squared = residual.copy(), float(np.vdot(residual, residual))
    converged = squared <= target
    # Lanczos from a fixed random start: its probability bound holds for any C independent
    # of the start, and the result is the same on every run
    basis = np.empty((min(iterations, size) + 1, size))
    start = np.random.default_rng(20261128).standard_normal(size)
    basis[0] = start / np.linalg.norm(start)
    diagonal, offdiagonal = [], []
    logarithm = math.log(1.648 * math.sqrt(size) / (0.5 * _CERTIFICATE_RISK))
    certified = False
    # the least eps of this solve (at its last product); none below 1/2: only a Lanczos run
    # that exhausts the space can certify
    last = (logarithm / (2 * iterations - 3)) ** 2 if iterations > 1 else math.inf
    if last >= 0.5 and iterations < size:
        return None

    def passes(ritz: np.ndarray, eps: float) -> bool:
        top = ritz[-1] / (1.0 - eps)
        bottom = (ritz[0] - eps * top) / (1.0 - eps)
        return bool(bottom * a[0] * b[0] > _MOMENT_RANK_RTOL * top * a[-1] * b[-1])

    for k in range(1, iterations + 1):
        operands = ([] if converged else [direction]) + \
            ([] if certified else [basis[k - 1].reshape(q, n)])
        products = applied(operands)
        if not converged:
            curvature = float(np.vdot(direction, products[0]))
            if not curvature > 0:
                return None
            step = squared / curvature
            x += step * direction
            residual -= step * products[0]
            previous, squared = squared, float(np.vdot(residual, residual))
            direction *= squared / previous
            direction += residual
            converged = squared <= target
        if not certified:
            w = products[-1].ravel()
            diagonal.append(float(w @ basis[k - 1]))
            # full reorthogonalization, twice (the three-term recurrence loses orthogonality
            # at converged Ritz values, one Gram-Schmidt pass where w nearly cancels; k stays
            # small)
            for _ in range(2):
                w = w - basis[:k].T @ (basis[:k] @ w)
            beta = float(np.linalg.norm(w))
            # the bound's k counts products beyond the start's: 2 (k - 1) - 1, one step on
            # the safe side of however the paper counts them
            eps = (logarithm / (2 * k - 3)) ** 2 if k > 1 else math.inf
            # an invariant subspace (every eigenvalue seen, as the start has a component in
            # each eigenspace): its Ritz values are exact; otherwise a certificate needs eps
            # below 1/2 (theta_min > eps theta_max / (1 - eps))
            exhausted = k == size or beta <= np.finfo(float).eps * size * max(diagonal)
            if exhausted:
                eps = 0.0
            if eps < 0.5 or (k >= 3 and last < 0.5):
                ritz = linalg.eigvalsh_tridiagonal(np.array(diagonal), np.array(offdiagonal),
                                                   check_finite=False)
                if eps < 0.5:
                    certified = passes(ritz, eps)
                # Ritz values only spread as k grows, and eps is least at the last product:
                # a certificate that fails now with that eps fails at every later k (a
                # preconditioned spread beyond ~1e3 took every iteration, then the dense path)
                if not certified and eps > 0.0 and not passes(ritz, last):
                    return None
            if not certified:
                if eps == 0.0:
                    return None        # the whole spectrum seen, not certified
                offdiagonal.append(beta)
                basis[k] = w / beta
        if converged and certified:
            break
    else:
        return None
    # the true residual (the recurrence's drifts from it by rounding)
    residual = rhs - applied([x])[0]
    if not np.vdot(residual, residual) <= (10.0 * _FACTORED_RESIDUAL) ** 2 * np.vdot(rhs, rhs):
        return None
    return float(np.vdot(rhs, x) + np.vdot(x, residual)), size


#: Lag windows from which :func:`_bartlett_smoothed` takes two running sums instead of one
#: pass per lag.
_RUNNING_SUM_LAGS = 6


def _bartlett_smoothed(moments: np.ndarray, lags: int) -> np.ndarray:
    """``sum_{|tau| <= lags} (1 - |tau| / (lags + 1)) m_{k - tau}`` of each row of ``moments``
    (zero outside its samples).  The Bartlett kernel is a box of ``lags + 1`` ones convolved
    with itself, divided by ``lags + 1``: two running sums (differences of cumulative sums)
    give it whatever the window, where a pass per lag cost ``2 lags`` passes over the
    ``(q n, K)`` moments (the state group of coloured residuals: a window of ~200 lags, 0.6 s
    of one fit's checks).  Few lags: those passes."""
    rows, K = moments.shape
    if lags <= _RUNNING_SUM_LAGS:
        smoothed = moments.copy()
        for tau in range(1, min(lags, K - 1) + 1):
            weight = 1.0 - tau / (lags + 1.0)
            smoothed[:, tau:] += weight * moments[:, :-tau]
            smoothed[:, :-tau] += weight * moments[:, tau:]
        return smoothed
    # y_k = m_k + .. + m_{k+lags} for k = -lags .. K - 1 (array index k + lags), then
    # smoothed_k = (y_{k-lags} + .. + y_k) / (lags + 1)
    prefix = np.zeros((rows, K + 1))
    np.cumsum(moments, axis=1, out=prefix[:, 1:])
    k = np.arange(-lags, K)
    boxed = prefix[:, np.minimum(k + lags + 1, K)]
    boxed -= prefix[:, np.maximum(k, 0)]
    twice = np.zeros((rows, K + lags + 1))
    np.cumsum(boxed, axis=1, out=twice[:, 1:])
    smoothed = twice[:, lags + 1:]                   # (rows, K): index k + lags + 1
    smoothed -= twice[:, :K]
    smoothed /= lags + 1.0
    return smoothed


def _kronecker_statistic(g: np.ndarray, W0: np.ndarray, E0: np.ndarray,
                         back: np.ndarray | None) -> tuple[float, int, float, int]:
    """:func:`_moment_statistic` of moments ``g`` (q, n) independent over time and of their
    signals (``V = W0 kron E0``, ``E0`` the residuals' covariance per sample): the form and
    rank from the two factors' eigenvalues, never the ``(q n)^2`` matrix (least squares'
    moment checks: three 800 x 800 Cholesky factorizations, 80 ms of a 20-state fit, for what
    two small eigh give).  The residuals are taken at unit variance first (``E0`` a
    correlation matrix): the rank cut is then the same in any units of the states."""
    unit = _column_scale(np.sqrt(np.clip(np.diag(E0), 0.0, None)))
    g, E0 = g / unit, E0 / np.outer(unit, unit)
    statistic, rank = _kronecker_form(W0, E0, g)
    if back is None:
        variances = np.outer(np.diag(W0), np.diag(E0)).ravel()
        g = g.ravel()
    else:
        g = (back @ g).ravel()
        variances = np.outer(((back @ W0) * back).sum(axis=1), np.diag(E0)).ravel()
    sd = np.sqrt(np.clip(variances, np.finfo(float).tiny, None))
    index = int(np.argmax(np.abs(g) / sd))
    return statistic, rank, float(abs(g[index]) / sd[index]), index


#: Eigenvalues of a moment covariance below this fraction of the largest count as zero.
_MOMENT_RANK_RTOL = 1e-10


def _pseudo_quadratic(V: np.ndarray, g: np.ndarray, *, overwrite: bool = False
                      ) -> tuple[float, int]:
    """``(g^T V^+ g, rank)`` with eigenvalues at or below ``_MOMENT_RANK_RTOL`` of the largest
    dropped, without the full eigen-decomposition (at 760 moments, single-threaded: about 6 ms
    when the shifted Cholesky test passes, 4.4 of them the factorization; 45-80 ms otherwise,
    against 100-120 ms).

    ``V - rtol ||V||_1 I`` positive definite (a Cholesky factorization succeeds) bounds every
    eigenvalue above the threshold (``||V||_1 >= lambda_max``): then ``g^T V^-1 g`` is the
    pseudo-inverse form, from that same factor (:func:`_neumann_form`; a factorization of
    ``V`` only when its series is slow).  Otherwise one tridiagonal reduction gives
    ``lambda_max`` and the eigenvalues below the threshold (bisection), their eigenvectors ``Q``
    (inverse iteration): ``g^T V^+ g = g_Q^T (V + lambda_max Q Q^T)^-1 g_Q`` with
    ``g_Q = g - Q Q^T g`` (the dropped eigenvalues are lifted, the kept ones untouched), by
    Cholesky.  Only ``V``'s lower triangle is read.

    ``overwrite``: ``V`` (C-ordered) may be destroyed: the shifted factorization then runs in
    its memory (LAPACK on the transposed view, no copy; a C-ordered matrix handed to
    ``cho_factor`` is copied to Fortran order first, even with ``overwrite_a``), and the
    rare paths that need ``V`` again rebuild it from its untouched upper triangle.
    """
    from scipy.linalg import lapack

    size = V.shape[0]

    def cholesky_form(matrix: np.ndarray, vector: np.ndarray) -> float:
        factor = linalg.cho_factor(matrix, lower=True, check_finite=False)[0]
        whitened = linalg.solve_triangular(factor, vector, lower=True, check_finite=False)
        return float(whitened @ whitened)

    shift = _MOMENT_RANK_RTOL * np.linalg.norm(V, 1)
    in_place = overwrite and V.flags.c_contiguous
    diagonal = np.diag(V).copy()
    # V - shift I: the diagonal only (no identity built); V^T is Fortran-ordered, and its upper
    # triangle is V's lower one
    lowered = V.T if in_place else V.copy().T
    lowered.flat[::size + 1] -= shift
    try:
        shifted = linalg.cho_factor(lowered, lower=False, check_finite=False, overwrite_a=True)
    except linalg.LinAlgError:
        shifted = None
    if in_place:                          # V from its upper triangle (the factor's is lower)
        def restored() -> np.ndarray:
            upper = np.triu(V, 1)
            upper += upper.T
            upper.flat[::size + 1] = diagonal
            return upper
    else:
        def restored() -> np.ndarray:
            return V
    if shifted is not None:
        form = _neumann_form(shifted, shift, g)
        return (cholesky_form(restored(), g) if form is None else form), size
    V = restored()
    reduced, d, e, tau, _ = lapack.dsytrd(V, lower=1, lwork=64 * size)
    top = max(lapack.dstebz(d, e, 2, 0.0, 0.0, size, size, 0.0, b"E")[1][0],
              np.finfo(float).tiny)
    dropped, w, block, split, _ = lapack.dstebz(d, e, 1, -np.inf, _MOMENT_RANK_RTOL * top, 0, 0,
                                                0.0, b"B")
    if dropped == 0:                     # all above the threshold, if barely: plain Cholesky
        return cholesky_form(V, g), size
    if dropped == size:
        return 0.0, 0
    Q = lapack.dstein(d, e, w[:dropped], block, split)[0]
    # back to V's basis: Q_V = H_1 .. H_{size-1} Q (the reflectors of the reduction, as ormtr)
    Q[1:] = lapack.dormqr(b"L", b"N", reduced[1:, :-1], tau, Q[1:],
                          lwork=64 * max(dropped, 1))[0]
    kept = g - Q @ (Q.T @ g)
    return cholesky_form(V + top * (Q @ Q.T), kept), size - dropped


def _kronecker_form(A: np.ndarray, B: np.ndarray, G: np.ndarray) -> tuple[float, int]:
    """``(vec(G)^T (A kron B)^+ vec(G), rank)`` for symmetric positive semi-definite ``A``
    (q, q) and ``B`` (n, n), ``vec`` row-major: the eigenvalues of ``A kron B`` are the
    products of the factors' (rounding-negative ones taken as zero), its eigenvectors the
    products of their eigenvectors; products at or below ``_MOMENT_RANK_RTOL`` of the largest
    are dropped, as :func:`_pseudo_quadratic` drops small eigenvalues."""
    a, U = np.linalg.eigh(0.5 * (A + A.T))
    b, V = np.linalg.eigh(0.5 * (B + B.T))
    products = np.outer(np.clip(a, 0.0, None), np.clip(b, 0.0, None))
    keep = products > _MOMENT_RANK_RTOL * products.max() if products.size else products > 0
    if not keep.any():
        return 0.0, 0
    rotated = U.T @ G @ V
    return float(np.sum(rotated[keep] ** 2 / products[keep])), int(keep.sum())


#: Terms of :func:`_neumann_form` before it leaves the form to a factorization of its own.
_NEUMANN_TERMS = 12


def _neumann_form(shifted, shift: float, g: np.ndarray) -> float | None:
    """``g^T V^-1 g`` from the Cholesky factor of ``P = V - shift I = L L^T`` (no second
    factorization): ``V^-1 = sum_j (-shift)^j P^-(j+1)``, which converges when every eigenvalue
    of ``P`` exceeds ``shift``, fast when by far (the usual case: the terms fall like ``(shift /
    lambda_min)^j``).  Term ``j`` is ``(-shift)^j |x_j|^2`` with ``x_0 = L^-1 g`` and ``x_j``
    from ``x_{j-1}`` by one triangular solve (with ``L^T`` and ``L`` in turn:
    ``g^T P^-(j+1) g`` is the squared norm of ``L^-1 P^-j/2 g`` or ``P^-(j+1)/2 g``), not a
    solve with ``P`` (two, each reading the whole factor) per term: 11.3 -> 8 ms of a 760-moment
    check.  ``None`` when the terms have not fallen below rounding after
    :data:`_NEUMANN_TERMS`."""
    factor, lower = shifted
    total, x = 0.0, g
    for j in range(_NEUMANN_TERMS):
        # L^-1 on even terms, L^-T on odd ones (the factor is L, or U = L^T when not lower)
        x = linalg.solve_triangular(factor, x, lower=lower, trans=0 if (j % 2 == 0) == lower
                                    else 1, check_finite=False)
        term = (-shift) ** j * float(x @ x)
        total += term
        if abs(term) <= 1e-16 * abs(total):
            return total
    return None


#: Largest estimated bias of plain DMD's least squares, in its standard errors, that a failed
#: ``state_completeness`` may leave unreported (:func:`noise_bias`).
NOISE_BIAS_SHARE = 1.0
#: One-sided 95 % normal quantile: the bias's upper confidence bound.
_ONE_SIDED_95 = 1.6448536269514722


@dataclass(frozen=True)
class NoiseBias:
    """What IV on the earlier states says of plain DMD's failed ``state_completeness``
    (:func:`noise_bias`), biases in least squares' standard errors (root mean square over
    ``A_d``).

    Attributes
    ----------
    bias, lower, upper : float
        The bias from IV minus least squares less their spread, and its one-sided 95 %
        confidence bounds (the squared bias's estimate -/+ 1.645 of its spread: ``Var d^2 =
        2 v^2 + 4 b^2 v`` per coefficient, ``d`` the difference of variance ``v``, taken
        independent over the coefficients).
    lagged : float
        One-sided 95 % upper bound of the bias from least squares' lag-1 residual covariance
        (:func:`_lagged_bias`).
    sargan, critical : float
        Sargan's statistic of the IV fit and its critical value.
    """

    bias: float
    lower: float
    upper: float
    lagged: float
    sargan: float
    critical: float


def noise_bias(trajectories: list[tuple[np.ndarray, np.ndarray]], centred: bool, level: float
               ) -> NoiseBias | None:
    """Whether measurement noise alone explains a failed ``state_completeness`` of plain DMD
    by least squares (no inputs), and by how many standard errors it biases the fit.

    White measurement noise makes the measured states no Markov state: least squares of
    ``x_{k+1}`` on ``x_k`` is biased by ``O(sigma^2)`` (errors in variables), while its
    standard errors are ``O(sigma / sqrt(N))``, and ``state_completeness``'s moments detect
    the noise by ``sqrt(N)`` however small it is.  The states ``x_{k-1} .. x_{k-S}``
    (:data:`STATE_LAGS`) are independent of the noise of ``x_k`` and ``x_{k+1}``: two-stage
    least squares on them is consistent, and

    - its residuals ``e_k`` (then ``MA(1)``: ``v_{k+1} - A v_k``) stay uncorrelated with
      those states, which Sargan's test of the ``n (nS - n)`` overidentifying moments
      checks (long-run covariance over one lag); an unmeasured state fails it: the data
      then have dynamics no noise explains;
    - ``(IV - LS)^2`` less the variance of the difference (``sum_k e_k (h_iv,k -
      h_ls,k)^T``, over one lag) estimates each coefficient's squared bias; their mean over
      the coefficients of ``A_d`` in least squares' squared standard errors, clipped at
      zero only then (clipping each first biased it up by 0.8 standard errors on unbiased
      fits), gives the root-mean-square bias reported.  Both fits use the samples with
      ``S`` earlier states, so this is least squares' bias there; where the first samples
      carry most of the signal (free decays) it overstates the fit's own (1.8 standard
      errors against 0.4, 60 noise draws), the loud side.

    The bias is judged against :data:`NOISE_BIAS_SHARE`: above one standard error the
    intervals' coverage falls below about 83 % (95 % nominal).

    Parameters
    ----------
    trajectories : list of (X (n, K + 1), U (0, K))
    centred : bool
        Every signal less its mean (the fit's intercept).
    level : float
        Level of Sargan's test.

    Returns
    -------
    NoiseBias or None
        ``None`` when the samples or the instruments' rank do not allow the comparison.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> A = np.array([[0.9, 0.2], [-0.2, 0.9]])
    >>> X = np.zeros((2, 301)); X[:, 0] = [3.0, 0.0]
    >>> for k in range(300):
    ...     X[:, k + 1] = A @ X[:, k] + 0.1 * rng.standard_normal(2)
    >>> found = noise_bias([(X, np.zeros((0, 300)))], False, 0.01)
    >>> bool(found.lower <= found.bias <= found.upper and found.sargan < found.critical)
    True
    """
    S = STATE_LAGS
    # both fits on the samples with S earlier states: least squares' bias there, not the
    # fit's own on every sample, is what is estimated; it overstates the fit's where the
    # first samples carry most of the signal (free decays: 1.76 standard errors where the
    # fit's was 0.43, 60 noise draws), the loud side (IV beside least squares on different
    # samples measured the bias only within 1-3 standard errors)
    pieces = [(X[:, S:-1], X[:, S + 1:],
               np.vstack([X[:, S - lag:X.shape[1] - 1 - lag] for lag in range(1, S + 1)]))
              for X, _ in trajectories if X.shape[1] > S + 3]
    if not pieces:
        return None
    ends = np.cumsum([piece[0].shape[1] for piece in pieces])
    Phi, Y, W = (np.hstack(parts) for parts in zip(*pieces, strict=True))
    if centred:
        Phi, Y, W = (M - M.mean(axis=1, keepdims=True) for M in (Phi, Y, W))
    n, N = Phi.shape
    if N < max(_MIN_SAMPLES, W.shape[0] + n):
        return None
    # the instruments' projection of the regressors (the first stage), through a QR of W^T
    basis, upper = linalg.qr(W.T, mode="economic")
    diagonal = np.abs(np.diag(upper))
    basis = basis[:, diagonal > 1e-10 * diagonal.max(initial=0.0)]
    fitted = (basis @ (basis.T @ Phi.T)).T
    # each fit's error is sum_k e_k h_k^T with h_k = (F F^T)^-1 f_k (F = Phi, or its fitted
    # part for IV): the difference's spread from h_iv - h_ls and the IV residuals over one
    # lag (MA(1) errors under measurement noise), not Hausman's Var IV - Var LS, which holds
    # only where least squares is efficient, i.e. not here
    projections = []
    for regressors in (Phi, fitted):
        gram = regressors @ regressors.T
        if np.linalg.matrix_rank(gram) < n:
            return None
        projections.append(np.linalg.solve(gram, regressors))
    h_ls, h_iv = projections
    ls, iv = Y @ h_ls.T, Y @ h_iv.T
    errors = Y - iv @ Phi
    within = np.ones(N - 1, dtype=bool)
    within[ends[:-1] - 1] = False                       # no lag across two pieces
    E0 = errors @ errors.T / N
    E1 = errors[:, :-1][:, within] @ errors[:, 1:][:, within].T / N
    spread = h_iv - h_ls
    lagged = np.sum(spread[:, :-1][:, within] * spread[:, 1:][:, within], axis=1)
    v_difference = np.maximum(np.outer(np.diag(E0), np.sum(spread ** 2, axis=1))
                              + 2 * np.outer(np.diag(E1), lagged), 0.0)
    ls_errors = Y - ls @ Phi
    v_ls = np.outer(np.sum(ls_errors ** 2, axis=1) / (N - n), np.sum(h_ls ** 2, axis=1))
    # averaged before the clipping at zero, which alone would leave a positive bias (0.8
    # standard errors on unbiased fits, process noise only)
    used = v_ls > 0
    if not used.any():
        return None
    squared = (iv - ls)[used] ** 2
    ratio = v_difference[used] / v_ls[used]
    terms = squared / v_ls[used] - ratio
    bias2 = float(np.mean(terms))
    # the estimate's own spread: a difference d ~ N(b, v) has Var d^2 = 2 v^2 + 4 b^2 v, here
    # in squared standard errors, b^2 estimated term by term; where IV is weak (v_diff 100x
    # v_ls) it spans tens of standard errors, and a mean near zero says nothing (a review: LS
    # biased by 32 standard errors estimated at 0 in 3 of 4 draws)
    # taken fully correlated over the coefficients (the mean of their standard deviations):
    # the differences are correlated 0.3-0.9, and summed as independent the bounds held on
    # about half of 300 draws instead of 95 % (a review)
    spread2 = float(np.mean(np.sqrt(2 * ratio ** 2 + 4 * ratio * np.maximum(terms, 0.0))))
    bias = float(np.sqrt(max(bias2, 0.0)))
    # (from the clipped estimate: one far below zero says the difference's variance is
    # misjudged, not that the bias is small; unclipped, weak IV read "at most 0")
    upper = float(np.sqrt(max(bias2, 0.0) + _ONE_SIDED_95 * spread2))
    lower = float(np.sqrt(max(bias2 - _ONE_SIDED_95 * spread2, 0.0)))
    # least squares' bias from its own residuals: white measurement noise v makes them
    # MA(1), E[e_{k+1} e_k^T] = M (I - P (Q + Sigma_v)) to first order with M = -A Sigma_v,
    # Q + Sigma_v = E_0 + M A^T and P the regressors' inverse second moment, and the bias
    # is M P: precise where the noise is small (its spread ~ sqrt(E P) standard errors), where
    # the IV difference is not (weak earlier states); first order, it read 10 standard
    # errors where a Monte Carlo found 32 (fast mode, 10 % noise), so it passes only a third
    # of the share
    lagged = _lagged_bias(ls, ls_errors, Phi, within)
    # Sargan: the moments sum_k b_k e_k^T in the instruments' orthonormal directions b_k,
    # their covariance I kron E_0 + (B_1 kron E_1 + its transpose) over one lag (MA(1)
    # errors), within each piece
    B = basis.T                                          # (r, N), orthonormal rows
    G = B @ errors.T
    B1 = B[:, :-1][:, within] @ B[:, 1:][:, within].T
    sargan = _kronecker_quadratic(G, E0, B1, E1)
    if sargan is None:
        return None
    dof = max(n * (B.shape[0] - n), 1)
    return NoiseBias(bias, lower, upper, lagged, sargan, float(special.chdtri(dof, level)))


def _lagged_bias(coefficients: np.ndarray, errors: np.ndarray, Phi: np.ndarray,
                 within: np.ndarray) -> float:
    """One-sided 95 % upper bound of least squares' root-mean-square bias over ``A``, in its
    standard errors, under white measurement noise, from its residuals ``errors`` (n, N) on
    the regressors ``Phi`` (n, N) (``within``: the lag-1 pairs inside one piece).

    ``e_k = v_{k+1} - A v_k + w_k - B x~_k`` (``B`` the bias): ``G_1 = E[e_{k+1} e_k^T] = M
    (I - P (Q + Sigma_v))`` to first order, ``M = -A Sigma_v``, ``P`` the inverse of the
    regressors' second moment, ``Q + Sigma_v = E_0 + M A^T`` (``E_0`` the residuals'
    covariance); ``M`` by fixed-point iteration, ``B = M P``.  ``G_1``'s sampling spread
    ``sqrt(E_0,ii E_0,jj / N)`` reaches ``B`` as ``sqrt(E_0,ii (P E_0 P)_jj / N)``; ``inf``
    where the iteration does not settle."""
    n, N = Phi.shape
    E0 = errors @ errors.T / N
    G1 = errors[:, 1:][:, within] @ errors[:, :-1][:, within].T / N
    P = N * np.linalg.inv(Phi @ Phi.T)
    M = np.zeros((n, n))
    try:
        for _ in range(_LAGGED_ITERATIONS):
            following = G1 @ np.linalg.inv(np.eye(n) - P @ (E0 + M @ coefficients.T))
            settled = np.max(np.abs(following - M)) <= 1e-10 * max(np.max(np.abs(following)),
                                                                  1e-300)
            M = following
            if settled:
                break
        else:
            return math.inf
    except np.linalg.LinAlgError:
        return math.inf
    se2 = np.outer(np.diag(E0), np.diag(P)) / N
    spread2 = np.outer(np.diag(E0), np.diag(P @ E0 @ P)) / N
    used = se2 > 0
    if not used.any() or not np.all(np.isfinite(M)):
        return math.inf
    bias = np.abs(M @ P)[used] + _ONE_SIDED_95 * np.sqrt(spread2[used])
    return float(np.sqrt(np.mean(bias ** 2 / se2[used])))


#: Fixed-point iterations of :func:`_lagged_bias`.
_LAGGED_ITERATIONS = 100


def _kronecker_quadratic(G: np.ndarray, E0: np.ndarray, B1: np.ndarray, E1: np.ndarray
                         ) -> float | None:
    """``vec(G)^T V^-1 vec(G)`` for ``V = I kron E0 + B1 kron E1 + B1^T kron E1^T`` (``vec``
    row by row, ``G`` (r, n)), the MA(1) errors' long-run covariance.  Dense up to 600
    unknowns, else conjugate gradients with ``I kron E0`` as the preconditioner, by products
    ``E0 X + ...`` that never form ``V`` (31 states: ``r n = 1922``, 3.2 s dense).  A sample
    ``V`` need not be positive definite (a large lag-1 term): then, dense, the quadratic form
    on its positive eigenvalues (the negative ones clipped, the lag term kept where it
    holds: the Bartlett weight 1/2 instead raised Sargan's statistic past its threshold on a
    right fit), and by conjugate gradients the Bartlett (Newey-West) ``V``, which is
    positive definite; ``None`` when that fails too."""
    value = _weighted_quadratic(G, E0, B1, E1)
    if value is None and G.size > 600:
        value = _weighted_quadratic(G, E0, B1, 0.5 * E1)
    return value


def _weighted_quadratic(G: np.ndarray, E0: np.ndarray, B1: np.ndarray, E1: np.ndarray
                        ) -> float | None:
    """:func:`_kronecker_quadratic` for one ``E1``: dense, on the positive eigenvalues of an
    indefinite ``V``; by conjugate gradients ``None`` where it does not converge to a
    non-negative value."""
    r, n = G.shape
    if r * n <= 600:
        V = np.kron(np.eye(r), E0) + np.kron(B1, E1) + np.kron(B1.T, E1.T)
        try:
            return float(G.ravel() @ linalg.cho_solve(linalg.cho_factor(V), G.ravel()))
        except linalg.LinAlgError:
            values, vectors = np.linalg.eigh(V)
            kept = values > 1e-10 * max(values[-1], 0.0)
            if not kept.any():
                return None
            projected = vectors[:, kept].T @ G.ravel()
            return float(np.sum(projected ** 2 / values[kept]))
    from scipy.sparse.linalg import LinearOperator, cg

    try:
        factor = linalg.cho_factor(E0)
    except linalg.LinAlgError:
        return None

    def product(x: np.ndarray) -> np.ndarray:
        X = x.reshape(r, n)
        return (X @ E0.T + B1 @ X @ E1.T + B1.T @ X @ E1).ravel()

    def preconditioned(x: np.ndarray) -> np.ndarray:
        return linalg.cho_solve(factor, x.reshape(r, n).T).T.ravel()

    solution, info = cg(LinearOperator((r * n, r * n), matvec=product, dtype=float),
                        G.ravel(), rtol=1e-10, maxiter=500,
                        M=LinearOperator((r * n, r * n), matvec=preconditioned, dtype=float))
    value = float(G.ravel() @ solution)
    return value if info == 0 and value >= 0 else None


_NOT_FULL_STATE = ("the signals may not be the full state (e.g. y = C x with fewer signals "
                   "than states, or an unmeasured state): DMDidc needs every state; measure all "
                   "states, or identify from the outputs with OutputDMDidc")
_STATE_IV = ("fit with estimator='iv', instruments='states' (the earlier measured states as "
             "instruments: consistent under white measurement noise, if of larger variance; "
             "its confidence intervals say whether it is the better model here), or measure "
             "with less noise")


def _plain_state_check(check: Check, noise: NoiseBias | None) -> Check:
    """A failed ``state_completeness`` of plain DMD by least squares (no inputs) judged with
    IV on the earlier states (:func:`noise_bias`): still failed when Sargan's test finds
    dynamics no measurement noise explains, when the noise biases least squares by more than
    :data:`NOISE_BIAS_SHARE` standard errors (the IV difference's 95 % lower bound beyond
    it), or when neither the lag-1 bound (below a third of the share) nor the IV difference's
    upper bound (below the share) shows the bias small (weak earlier states: a review found
    the point estimate 0 on 22 of 30 fits biased by 32 standard errors); with IV on the
    states as the remedy where the bias is shown (its eigenvalues were closer on 18 of 33
    such fits at 3 % noise and 30 of 40 at 10 %, on 5 of 7 and none of those that passed);
    passed, with the numbers, when the moments detect
    only noise whose bias is below that (IV's eigenvalues were further off on 33 of 38 at
    0.1 % and 18 of 23 at 1 %: least squares is the better model there).
    Least squares' remedy of fits with inputs (``estimator='auto'``, which instruments them)
    cannot apply: without inputs ``'auto'`` is least squares.  On free decays
    (``benchmarks/bench_plain_dmd_state.py``, 40 random plants) the failures at relative
    noise 1e-4 / 1e-3 fell from 22 / 40 of 40 to 0 / 2, those of 1000 sensors with
    ``svd_rank`` at 1e-3 / 1e-2 from 22 / 40 to 0 / 1; an unmeasured state, or one signal
    fewer than states, stayed loud on 39-40 of 40 at every noise level."""
    if noise is None:
        return replace(check, remedy=f"{_NOT_FULL_STATE}; or the states are measured with "
                                     f"noise, which biases least squares: {_STATE_IV}")
    bias, upper, lagged, sargan, critical = (noise.bias, noise.upper, noise.lagged,
                                             noise.sargan, noise.critical)
    iv = (f"IV on the {STATE_LAGS} earlier states leaves Sargan's statistic {sargan:.3g} "
          f"(threshold {critical:.3g})")
    if sargan > critical:
        return replace(check, finding=f"{check.finding}; {iv}: the earlier signals predict "
                                      f"what no measurement noise explains",
                       remedy=_NOT_FULL_STATE)
    size = (f"{bias:.2g} standard errors (root mean square over A_d: IV minus least squares "
            f"on the same samples, less their spread)")
    detected = check.finding.split(": the signals are not")[0]
    if lagged <= NOISE_BIAS_SHARE / 3:
        return Check(check.name, check.question, True, lagged, NOISE_BIAS_SHARE / 3,
                     f"{detected}: measurement noise ({iv}), which biases least squares by at "
                     f"most {lagged:.2g} standard errors (root mean square over A_d, 95 % "
                     f"upper bound from its residuals' lag-1 covariance), below "
                     f"{NOISE_BIAS_SHARE / 3:.2g}: negligible against the standard errors")
    if noise.lower > NOISE_BIAS_SHARE:
        return replace(check, finding=f"{check.finding}; {iv}, so measurement noise explains "
                                      f"it, and it biases least squares by {size}, at "
                                      f"least {noise.lower:.2g} (95 % lower bound)",
                       remedy=f"{_STATE_IV}; or, if the signals may miss a state, "
                              f"{_NOT_FULL_STATE}")
    if upper > NOISE_BIAS_SHARE:
        # IV on the earlier states too imprecise to bound the bias: the detection stands
        return replace(check, finding=f"{check.finding}; {iv}, so measurement noise explains "
                                      f"it; it biases least squares by {size}, between "
                                      f"{noise.lower:.2g} and {upper:.2g} (95 %): whether "
                                      f"beyond one standard error the data cannot tell (the "
                                      f"earlier states instrument weakly)",
                       remedy=f"{_STATE_IV}. If the signals may miss a state: "
                              f"{_NOT_FULL_STATE}")
    return Check(check.name, check.question, True, upper, NOISE_BIAS_SHARE,
                 f"{detected}: measurement noise ({iv}), which biases least squares by "
                 f"{size}, at most {upper:.2g} (95 % upper bound), below "
                 f"{NOISE_BIAS_SHARE:g}: negligible against the standard errors")


def _moment_check(group: str, name: str, question: str, statistic: float, critical: float,
                  z: float, lag: int, channel: int, residual: int, R: int,
                  reference: bool, regressors: bool = False) -> Check:
    failed = statistic > critical
    if group == "past":
        where = f"input {channel} at lag {R + 1 + lag}"
        meaning = ("the delay may exceed max_delay, or dynamics are missing (states not "
                   "measured)")
        remedy = (f"raise max_delay (now {R}), or measure every state (or fit OutputDMDidc, "
                  f"dmdidc identify --outputs, to what is measured)" if failed else "")
    elif group == "future":
        where = f"input {channel} {lag + 1} samples later"
        meaning = "the inputs react to the noise, as in a closed loop"
        remedy = ("closed-loop data: pass the reference or dither that excites the loop, "
                  "fit(..., reference=r), so the instruments are independent of the noise; "
                  "without an external excitation closed-loop data cannot identify the plant "
                  "consistently" if failed and not reference else "")
        if failed and not reference and lag == 0:
            # a log whose row k holds the input applied at k - 1 puts the input that drove
            # x_(k+1) one row later: the same signature as feedback, at exactly one sample
            remedy += ("; if the loop is open, the inputs may be logged one row late (row k "
                       "holding the input applied at k - 1): shift the input columns one row "
                       "earlier and refit")
    else:
        where = f"signal {channel} {lag + 1} samples earlier"
        meaning = "the signals are not a Markov state"
        remedy = _NOT_FULL_STATE if failed else ""
    if failed and regressors:
        # least squares' own projection assumes it consistent: any measurement noise (errors
        # in variables, even an ADC's rounding at 48 dB) fails these moments, by sqrt(N) for
        # the signals' group, whose corrected signals are then of the noise's size
        remedy += ("; or the states are measured with noise (even an ADC's rounding), which "
                   "makes the measured signals no Markov state and biases least squares, "
                   "if perhaps by less than its standard errors (ls_vs_iv is less sensitive): "
                   "fit with estimator='auto' (the default), which instruments them")
    finding = (f"moment statistic {statistic:.3g}; largest: residual {residual} with {where} "
               f"({z:.2f} standard deviations)")
    if failed:
        finding += f": {meaning}"
        if group == "future" and reference:
            finding += "; the reference's instruments account for it"
    passed = not failed or (group == "future" and reference)
    return Check(name, question, passed, statistic, critical, finding, remedy)
