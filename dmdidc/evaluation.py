"""Validate a model on data, as MATLAB's ``compare`` and ``resid`` do.

:func:`compare` predicts the measured states with the model, ``horizon`` steps ahead or by pure
simulation (``horizon=None``: from the state at sample ``R = max_delay`` with the measured
inputs only), and scores each signal by the normalized root-mean-square error and the **fit
percentage**

    fit = 100 (1 - ||y - yhat|| / ||y - mean(y)||)        (NRMSE = ||y - yhat|| / ||y - mean(y)||)

pooled over the experiments (100 % is perfect, 0 % no better than the mean, negative worse).
The first ``R`` samples of each experiment provide the input history and are not scored.

:func:`resid` computes the one-step residuals ``e_k = x_{k+1} - xhat_{k+1|k}`` and their
**auto-correlation** (lags ``0 .. L``) and **cross-correlation with the inputs**
``corr(e_k, u_{k-tau})`` (lags ``-L .. L``; negative lags are future inputs: feedback), with
confidence bands at ``level``: ``z / sqrt(N)`` for the auto-correlation of white residuals and,
for the cross-correlation, Bartlett's variance ``(1/N) sum_v rho_ee(v) rho_uu(v)`` of two
independent series (exactly ``1/N`` when either is white).  A correct model leaves about
``1 - level`` of the correlations outside their band by chance; many more, or a large one at a
particular lag, point to missing dynamics or a wrong delay.  One exception: measurement noise on
the states makes the one-step residual a moving average of order one, ``e_k = v_{k+1} - A_d v_k
+ w_k``, so a negative auto-correlation at lag 1 is expected from a correct model.  The fit's
own statistical tests, with family-wise levels, are in ``DMDidc.diagnostics_``.

Both take the data in the units they were recorded in: a model with an operating point
predicts physical values (:meth:`dmdidc.DelayedPlant.simulate`); for a model without one, the
deviations of an :class:`~dmdidc.IdData` from its operating point are compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import check_in_interval, check_integer
from dmdidc.data import IdData
from dmdidc.inference.residuals import _bartlett_sd, _cross_correlations
from dmdidc.model import DelayedPlant, as_plant
from dmdidc.regression.lag_products import autocorrelations

__all__ = ["Comparison", "ResidualCorrelation", "compare", "resid", "predict_ahead"]

#: Half-width of the Bartlett lag window of the cross-correlation bands (as the fit's checks).
_WINDOW = 25


def _experiments(model: DelayedPlant, data: Any, U: Any
                 ) -> tuple[list[tuple[np.ndarray, np.ndarray]], tuple, tuple]:
    """Physical ``(X, U)`` experiments and the signal names and units to report them by."""
    if isinstance(data, IdData):
        if U is not None:
            raise ParameterError("give an IdData or arrays X, U; not both")
        # a model without operating point describes deviations: compare the data's deviations
        X, U = data.arrays(deviations=model.operating_point is None)
        experiments = list(zip(*((X, U) if data.n_experiments > 1 else ([X], [U])),
                               strict=True))
        labels = (data.state_names, data.input_names), (data.state_units, data.input_units)
    else:
        if U is None:
            raise ParameterError("give the inputs U with state arrays X (or an IdData)")
        from dmdidc.trajectories import as_trajectories

        experiments = as_trajectories(data, U)
        info = model.signal_info
        labels = (info.state_names, info.input_names), (info.state_units, info.input_units)
    n, m = experiments[0][0].shape[0], experiments[0][1].shape[0]
    if (n, m) != (model.n_states, model.n_inputs):
        raise DimensionError(f"the data have {n} states and {m} inputs; the model has "
                             f"{model.n_states} and {model.n_inputs}")
    return experiments, labels[0], labels[1]


def predict_ahead(model: Any, X: np.ndarray, U: np.ndarray, horizon: int | None
                  ) -> tuple[np.ndarray, int]:
    """Predictions of the states of one experiment and the index of the first one.

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
    X : ndarray, shape (n, K + 1)
    U : ndarray, shape (m, K)
    horizon : int or None
        ``k``: each state ``x_t`` predicted from ``x_{t-k}`` and the inputs; ``None``:
        simulation from ``x_R`` over the whole experiment.

    Returns
    -------
    predicted : ndarray, shape (n, K + 1 - first)
        Predictions of ``x_first .. x_K``.
    first : int
        ``R + 1`` for a simulation, ``R + k`` for ``k`` steps ahead.
    """
    plant = as_plant(model)
    R = plant.max_delay
    if horizon is None:
        simulated = plant.simulate(X[:, R], U[:, R:], U[:, :R] if R else None)
        return simulated[:, 1:], R + 1
    op = plant.operating_point
    if op is not None:
        X, U = X - op.state[:, None], U - op.input[:, None]
    plant = plant.deviation_model()
    count = X.shape[1] - R - horizon
    Z = X[:, R:R + count].copy()
    for i in range(horizon):
        forcing = sum(plant.B_blocks[j] @ U[:, R + i - j:R + i - j + count] for j in range(R + 1))
        Z = plant.A_d @ Z + forcing
    if op is not None:
        Z += op.state[:, None]
    return Z, R + horizon


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else np.nan


@dataclass(frozen=True, eq=False)
class Comparison:
    """Measured and predicted states with the fit percentage and NRMSE of each signal.

    Attributes
    ----------
    names, units : tuple of str
        The states'.
    fit_percent : ndarray, shape (n,)
        ``100 (1 - NRMSE)``; NaN for a constant signal (nothing to explain).
    nrmse : ndarray, shape (n,)
    horizon : int or None
        Steps ahead, or ``None`` for simulation.
    time : tuple of ndarray
        Per experiment, the times (s) of the scored samples.
    measured, predicted : tuple of ndarray, shape (n, N_e) each
    """

    names: tuple[str, ...]
    units: tuple[str, ...]
    fit_percent: np.ndarray
    nrmse: np.ndarray
    horizon: int | None
    time: tuple
    measured: tuple
    predicted: tuple

    def __str__(self) -> str:
        what = "simulation" if self.horizon is None else f"{self.horizon}-step prediction"
        width = max(len("signal"), *(len(n) for n in self.names))
        lines = [f"{what}, {sum(t.size for t in self.time)} samples:",
                 f"  {'signal':<{width}}  fit %    NRMSE"]
        for name, fit, nrmse in zip(self.names, self.fit_percent, self.nrmse, strict=True):
            lines.append(f"  {name:<{width}}  {fit:6.2f}  {nrmse:7.4f}")
        if np.isnan(self.fit_percent).any():
            lines.append("  (nan: the signal is constant over the scored samples, so a fit "
                         "percentage is undefined)")
        return "\n".join(lines)

    def plot(self, path: str | Path | None = None, *, experiment: int = 0) -> Any:
        """Measured and predicted states of one experiment, one panel per signal.

        Returns
        -------
        matplotlib.figure.Figure
            Also written to ``path`` when given.
        """
        if not 0 <= experiment < len(self.time):
            raise ParameterError(f"experiment must be in [0, {len(self.time)}); got "
                                 f"{experiment!r}")
        n = len(self.names)
        fig = new_figure((7.0, 1.6 + 1.6 * n))
        axes = np.atleast_1d(fig.subplots(n, 1, sharex=True))
        t = self.time[experiment]
        for i, ax in enumerate(axes):
            ax.plot(t, self.measured[experiment][i], color="0.3", lw=1.0, label="measured")
            ax.plot(t, self.predicted[experiment][i], color="C1", lw=1.0,
                    label=f"model (fit {self.fit_percent[i]:.1f} %)")
            unit = f" [{self.units[i]}]" if self.units[i] else ""
            ax.set_ylabel(self.names[i] + unit)
            ax.legend(loc="upper right", fontsize=8)
        axes[-1].set_xlabel("time [s]")
        axes[0].set_title("simulation" if self.horizon is None
                          else f"{self.horizon}-step-ahead prediction")
        if path is not None:
            save_figure(fig, path)
        return fig


def compare(model: Any, data: Any, U: Any = None, *, horizon: int | None = None) -> Comparison:
    """Predict the data with the model and score each state (module notes).

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
    data : IdData, or array_like (n, K + 1) or list of them
        Validation data (ideally not those of the fit), in physical units.
    U : array_like (m, K) or list of them, optional
        The inputs, when ``data`` are state arrays.
    horizon : int or None, default None
        Steps ahead (``1``: one-step prediction), or ``None`` for simulation.

    Returns
    -------
    Comparison

    Raises
    ------
    DimensionError
        Data that do not fit the model, or experiments too short for the horizon.
    ParameterError
        A horizon below 1.

    Examples
    --------
    >>> from dmdidc import DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 200, rng=0)
    >>> result = compare(plant, plant.simulate([0.0], U), U)
    >>> print(result)
    simulation, 198 samples:
      signal  fit %    NRMSE
      x0      100.00   0.0000
    """
    plant = as_plant(model)
    if horizon is not None:
        horizon = check_integer("horizon", horizon, minimum=1)
    experiments, (names, _), (units, _) = _experiments(plant, data, U)
    needed = plant.max_delay + (1 if horizon is None else horizon)
    time, measured, predicted = [], [], []
    for X, Ue in experiments:
        if X.shape[1] <= needed:
            continue
        Xhat, first = predict_ahead(plant, X, Ue, horizon)
        time.append(plant.dt * np.arange(first, X.shape[1]))
        measured.append(X[:, first:])
        predicted.append(Xhat)
    if not measured:
        raise DimensionError(f"every experiment is too short to score: the model needs "
                             f"{needed + 1} states per experiment (max_delay "
                             f"{plant.max_delay} plus the horizon)")
    Y, Yhat = np.concatenate(measured, axis=1), np.concatenate(predicted, axis=1)
    error = np.linalg.norm(Y - Yhat, axis=1)
    spread = np.linalg.norm(Y - Y.mean(axis=1, keepdims=True), axis=1)
    nrmse = np.array([_ratio(a, b) for a, b in zip(error, spread, strict=True)])
    return Comparison(tuple(names), tuple(units), 100.0 * (1.0 - nrmse), nrmse, horizon,
                      tuple(time), tuple(measured), tuple(predicted))


@dataclass(frozen=True, eq=False)
class ResidualCorrelation:
    """Correlations of the one-step residuals with themselves and with the inputs.

    Attributes
    ----------
    state_names, input_names : tuple of str
    lags : ndarray, shape (2 L + 1,)
        ``-L .. L``.
    auto : ndarray, shape (L + 1, n)
        ``corr(e_i,k, e_i,k-tau)`` for ``tau = 0 .. L``.
    auto_band : float
        Half-width of the auto-correlation band at ``level`` (white residuals).
    cross : ndarray, shape (2 L + 1, n, m)
        ``corr(e_i,k, u_j,k-tau)`` for ``tau = -L .. L``.
    cross_band : ndarray, shape (n, m)
        Half-width of each cross-correlation band at ``level``.
    level : float
    n_samples : int
        Residuals used.
    residuals : tuple of ndarray
        Per experiment, ``e`` (n, N_e) in the states' units.
    """

    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    lags: np.ndarray
    auto: np.ndarray
    auto_band: float
    cross: np.ndarray
    cross_band: np.ndarray
    level: float
    n_samples: int
    residuals: tuple

    @property
    def auto_outside(self) -> np.ndarray:
        """Which auto-correlations at lags ``1 .. L`` leave the band, shape (L, n)."""
        return np.abs(self.auto[1:]) > self.auto_band

    @property
    def cross_outside(self) -> np.ndarray:
        """Which cross-correlations leave their band, shape (2 L + 1, n, m)."""
        return np.abs(self.cross) > self.cross_band

    def largest_cross(self) -> tuple[float, int, str, str]:
        """The cross-correlation farthest outside its band: ``(|corr| / band, lag, state,
        input)``; a ratio well above 1 at a lag says which input acts there unexplained."""
        ratio = np.abs(self.cross) / self.cross_band
        k, i, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        return (float(ratio[k, i, j]), int(self.lags[k]), self.state_names[i],
                self.input_names[j])

    def __str__(self) -> str:
        expected = 100 * (1 - self.level)
        lines = [f"residual correlations, {self.n_samples} samples, {100 * self.level:g} % "
                 f"bands (about {expected:g} % outside by chance):"]
        for i, name in enumerate(self.state_names):
            # lag 1 apart: measurement noise on the states makes e_k a moving average of order
            # one (e_k = v_{k+1} - A_d v_k + w_k), so it is expected there
            later = self.auto[2:, i]
            worst = int(np.argmax(np.abs(later))) + 2 if later.size else 1
            lines.append(f"  {name}: auto lag 1 {self.auto[1, i]:+.3f} (measurement noise "
                         f"makes it negative), lags 2+ {100 * self.auto_outside[1:, i].mean():.0f}"
                         f" % outside, largest {self.auto[worst, i]:+.3f} at lag {worst} "
                         f"(band {self.auto_band:.3f})")
            for j, inp in enumerate(self.input_names):
                z = np.abs(self.cross[:, i, j]) / self.cross_band[i, j]
                k = int(np.argmax(z))
                share = 100 * self.cross_outside[:, i, j].mean()
                lines.append(f"  {name} x {inp}: cross {share:.0f} % outside, largest "
                             f"{self.cross[k, i, j]:+.3f} at lag {int(self.lags[k])} (band "
                             f"{self.cross_band[i, j]:.3f})")
        return "\n".join(lines)

    def plot(self, path: str | Path | None = None) -> Any:
        """Auto-correlation (top row) and cross-correlation with each input (rows below), one
        column per state, with the confidence bands shaded.

        Returns
        -------
        matplotlib.figure.Figure
        """
        n, m = len(self.state_names), len(self.input_names)
        fig = new_figure((2.4 + 2.6 * n, 1.4 + 1.9 * (m + 1)))
        axes = np.asarray(fig.subplots(m + 1, n, squeeze=False))
        L = self.auto.shape[0] - 1
        for i, name in enumerate(self.state_names):
            ax = axes[0, i]
            ax.axhspan(-self.auto_band, self.auto_band, color="C0", alpha=0.2)
            ax.vlines(np.arange(L + 1), 0, self.auto[:, i], color="C0")
            ax.set_title(f"auto-correlation of e({name})", fontsize=9)
            for j, inp in enumerate(self.input_names):
                ax = axes[j + 1, i]
                band = self.cross_band[i, j]
                ax.axhspan(-band, band, color="C1", alpha=0.2)
                ax.vlines(self.lags, 0, self.cross[:, i, j], color="C1")
                ax.set_title(f"e({name}) x {inp}", fontsize=9)
            axes[-1, i].set_xlabel("lag [samples]")
        if path is not None:
            save_figure(fig, path)
        return fig


def resid(model: Any, data: Any, U: Any = None, *, lags: int = 20,
          level: float = 0.99) -> ResidualCorrelation:
    """Auto- and cross-correlation of the one-step residuals with confidence bands (module
    notes).

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
    data : IdData, or array_like (n, K + 1) or list of them
    U : array_like (m, K) or list of them, optional
        The inputs, when ``data`` are state arrays.
    lags : int, default 20
        Largest lag ``L``.
    level : float, default 0.99
        Confidence level of the bands.

    Returns
    -------
    ResidualCorrelation

    Raises
    ------
    DimensionError
        Data that do not fit the model, or fewer residuals than ``2 (lags + 1)``.
    ParameterError
        ``lags < 1`` or ``level`` outside (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 2000, rng=0)
    >>> X = plant.simulate([0.0], U) + 0.1 * np.random.default_rng(1).standard_normal((1, 2001))
    >>> wrong = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=0.5, dt=1.0)
    >>> bool(resid(plant, X, U).largest_cross()[0] < 2)       # |corr| / band
    True
    >>> ratio, lag, state, channel = resid(wrong, X, U).largest_cross()
    >>> bool(ratio > 5)
    True
    """
    plant = as_plant(model)
    lags = check_integer("lags", lags, minimum=1)
    level = check_in_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    experiments, (state_names, input_names), _ = _experiments(plant, data, U)
    R = plant.max_delay
    E, inputs = [], []
    for X, Ue in experiments:
        if X.shape[1] <= R + 1:
            continue
        Xhat, first = predict_ahead(plant, X, Ue, 1)
        E.append(X[:, first:] - Xhat)               # e_k = x_{k+1} - xhat_{k+1|k}, k >= R
        inputs.append(Ue[:, R:])
    N = sum(e.shape[1] for e in E)
    if N < 2 * (lags + 1):
        raise DimensionError(f"{N} residuals are too few for correlations up to lag {lags}; "
                             f"give longer data or fewer lags")
    z = float(special.ndtri(0.5 + level / 2))
    window = min(_WINDOW, max(N // 10, 1))
    auto = autocorrelations(E, max(lags, window))
    rho_u = autocorrelations(inputs, window)
    tau = np.arange(-lags, lags + 1)
    cross_band = z * _bartlett_sd(auto[:window + 1], rho_u, N)
    return ResidualCorrelation(tuple(state_names), tuple(input_names), tau, auto[:lags + 1],
                               z / np.sqrt(N), _cross_correlations(E, inputs, tau),
                               cross_band, level, N, tuple(E))
