"""Does the plant respond linearly?  Residuals against nonlinear functions of the inputs.

A linear model fitted to a plant with a static nonlinearity (an actuator that saturates while the
commanded input is recorded, a state or sensor that saturates) can look fine to every other
check: the residuals stay white and uncorrelated with the inputs, yet the eigenvalues are biased
and their intervals miss the truth (a ``tanh`` on one state at half its rms: eigenvalues of
``A_c`` 40-270 % off on 15 of 20 random plants, all silent before this check).

The check correlates each residual series with *exogenous* nonlinear features: the squares and
Hermite cubes ``z^3 - 3 z`` of the response ``z_k`` of the identified model to the inputs before
sample ``k`` (from rest, standardized), and the Hermite cubes of the standardized inputs
``u_{k-j}`` at the lags ``j`` through which each channel acts (its nonzero blocks).  Features of
the inputs alone are independent of the noise in open loop whatever its colour, and for Gaussian
signals a square or a Hermite cube is uncorrelated with any linear function of them (in closed
loop too).  A feature that is linear in the inputs (the cube of a two-level input) is left out.

Each feature is prewhitened (its Yule-Walker prediction-error filter of ``WHITENING_ORDER``
taps) and then loses its linear part (a constant, ``z_k`` and the inputs ``u_{k-j}``,
``j = 0 .. R``), which keeps the estimation error of the linear model out of the statistic.  A
sum of products of a white feature and a residual independent of it has the variance of its
lag-0 term whatever the residual's colour, so coloured noise and low-pass inputs do not
inflate the statistic.  Each residual enters through Huber's ``psi`` (clipped at ``5`` robust
standard deviations), so outliers and heavy-tailed noise do not dominate the sums.  The largest
standardized correlation is compared with the Bonferroni normal quantile over all
residual-feature pairs at the check's share of ``check_level``; long data are thinned to about
``SAMPLES`` samples (evenly spread pieces; fewer, down to 2000, for a model of many states and
lags, whose regressors and features are many).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from dmdidc.inference.checks import Check
from dmdidc.inference.residuals import robust_deviations
from dmdidc.model import DelayedPlant
from dmdidc.regression.propagation import delayed_response

__all__ = ["SAMPLES", "WHITENING_ORDER", "linearity_check"]

#: Samples the check uses at most (about; pieces of long data are taken evenly).
SAMPLES = 6000

#: Samples times rows (linear regressors and features) the check uses at most, but never fewer
#: than ``_FEWEST`` samples: a model of many states and lags is tested on fewer samples, so that
#: the check stays a small part of the fit (about 0.1 of one Gram pass of the regression data).
_VALUES = 150_000
_FEWEST = 2000

#: A stable model's response starts from rest early enough before the samples used that the
#: inputs before its start are forgotten to this share (its spectral radius to the power of
#: the samples between): the response to the whole record to this precision.
_FORGOTTEN = 1e-8

#: Taps of each feature's prewhitening filter (at most a tenth of a trajectory).
WHITENING_ORDER = 10

#: Eigenvalues of the linear regressors' Gram matrix below this share of the largest: collinear.
_COLLINEAR = 1e-10

#: Ridge on the Yule-Walker equations (autocorrelations: lag 0 is 1).
_RIDGE = 1e-6

#: A feature whose part beyond the linear regressors is below this share of its norm is linear.
_LINEAR_FEATURE = 1e-6

#: Residuals beyond this many robust standard deviations count as this many (Huber's psi).
_HUBER = 5.0

#: Fewer residual samples per feature and linear regressor (and intercept) than this: not tested.
_SAMPLES_PER_COLUMN = 10

#: Pieces shorter than this are left out (too short for their own prewhitening filter).
_SHORTEST = 20

QUESTION = "Does the plant respond linearly (residuals uncorrelated with nonlinear functions of " \
           "the inputs)?"


def _untested(parts: list, short: int, kept: int, samples: int, columns: int) -> str:
    """Why the linearity check could not be tested, from what it found."""
    if not parts or parts[0][1].shape[0] == 0:
        return "not tested: no inputs"
    if short and not kept:
        return (f"not tested: all {short} pieces read are shorter than {_SHORTEST} residual "
                f"samples (their own prewhitening filter needs that many); longer experiments "
                f"(or fewer gaps) are needed")
    if not kept:
        return "not tested: no input acts (every input block is zero)"
    return (f"not tested: {samples} residual samples in {kept} pieces for {columns} columns "
            f"(features, linear regressors and one intercept per piece), fewer than "
            f"{_SAMPLES_PER_COLUMN} per column"
            + (f"; {short} pieces shorter than {_SHORTEST} samples were left out" if short
               else ""))


def _standardized(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=1, keepdims=True)
    scale = x.std(axis=1, keepdims=True)
    return x / np.where(scale > 0, scale, 1.0)


def _memory(model: DelayedPlant) -> int | None:
    """Samples after which a stable model's response has forgotten its inputs to
    ``_FORGOTTEN`` (its spectral radius to that power, plus the input lags); ``None`` for an
    unstable model, whose response diverges."""
    radius = float(np.max(np.abs(np.linalg.eigvals(model.A_d)), initial=0.0))
    if radius >= 1.0:
        return None
    forget = np.log(_FORGOTTEN) / np.log(radius) if radius > 0.0 else 0.0
    return model.max_delay + 1 + int(np.ceil(forget))


def _cube_lags(model: DelayedPlant) -> list[tuple[int, int]]:
    """``(channel, lag)`` of each input cube: a channel's first two lags through which it acts
    (the blocks of its delay, where an actuator's nonlinearity enters; later lags act through
    the states, whose response's features cover them)."""
    acting = np.any(model.B_blocks != 0, axis=1)                     # (R + 1, m)
    return [(c, int(j)) for c in range(acting.shape[1]) for j in np.flatnonzero(acting[:, c])[:2]]


def _features(U: np.ndarray, model: DelayedPlant, start: int, stop: int, memory: int | None,
              cube_lags: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The linear regressors, each centred, and the nonlinear features of samples ``R +
    start .. R + stop - 1`` (``memory``: :func:`_memory`, the model's response is among them
    unless ``None``; ``cube_lags``: :func:`_cube_lags`), written into one array each (no lists
    joined, no centred copy)."""
    R, m, N = model.max_delay, U.shape[0], stop - start
    centred = U - U.mean(axis=1, keepdims=True)      # the model's response: in its units
    U = _standardized(U)
    stable = memory is not None
    n_response = model.n_states if stable else 0
    # every lag, also those the model leaves out: the cube of a periodic input (a multisine)
    # has parts at its own frequencies, which only enough lags span (the model's two
    # blocks per channel left 2 of 99 multisine fits at the alarm)
    linear = np.empty(((R + 1) * m + n_response, N))
    for j in range(R + 1):
        linear[j * m:(j + 1) * m] = U[:, R + start - j:R + stop - j]
    features = np.empty((2 * n_response + len(cube_lags), N))
    names = []
    if stable:
        # the response to the inputs before sample k (an unstable model's diverges: then the
        # inputs' features remain), from rest early enough that the start is forgotten
        first = max(0, R + start - memory)
        Z = _standardized(delayed_response(model.A_d, model.B_blocks, centred[:, first:R + stop])[
            :, R + start - first:])
        linear[(R + 1) * m:] = Z
        np.multiply(Z, Z, out=features[:n_response])
        np.multiply(Z, Z * Z - 3.0, out=features[n_response:2 * n_response])
        names += [f"the square of state {i}'s response to the inputs" for i in range(Z.shape[0])]
        names += [f"the cube of state {i}'s response to the inputs" for i in range(Z.shape[0])]
    cubes = U * (U * U - 3.0)
    for row, (c, j) in enumerate(cube_lags, start=2 * n_response):
        features[row] = cubes[c, R + start - j:R + stop - j]
        names.append(f"the cube of input {c} lagged {j}")
    linear -= linear.mean(axis=1, keepdims=True)
    return linear, features, names


def _pseudo_inverse(gram: np.ndarray) -> np.ndarray:
    """The Gram matrix's pseudo-inverse (collinear rows such as a constant input: left out)."""
    values, vectors = np.linalg.eigh(gram)
    keep = values > _COLLINEAR * values[-1]
    return (vectors[:, keep] / values[keep]) @ vectors[:, keep].T


def _whitened(F: np.ndarray, F0: np.ndarray, order: int) -> np.ndarray:
    """Each feature through its Yule-Walker prediction-error filter of ``order`` taps
    (``F0``: the features centred, which the filters are fitted to)."""
    cov = np.stack([np.einsum("ij,ij->i", F0[:, i:], F0[:, :F.shape[1] - i])
                    for i in range(order + 1)], axis=1)          # (n_f, order + 1)
    rho = cov / np.where(cov[:, :1] > 0, cov[:, :1], 1.0)
    # every feature's Toeplitz system at once; a hair of ridge, as a feature of a few
    # sinusoids is nearly perfectly predictable (a constant feature, zero, gets no filter)
    lags = np.abs(np.subtract.outer(np.arange(order), np.arange(order)))
    toeplitz = rho[:, lags] + _RIDGE * np.eye(order)
    taps = np.linalg.solve(toeplitz, rho[:, 1:, None])[..., 0]    # (n_f, order)
    # each feature's lag windows times its taps, one product for all (a pass over the
    # features per tap took 3.9 of the check's 12 ms at n = 50, 108 features of 2000
    # samples; this 1.5); the first outputs, whose filters the start cuts, tap by tap.  The
    # filters of smooth features cancel most of the sums, so their order shows at 1e-16 of
    # the features' size (the statistic moved by 1e-10 in the last such change)
    out = F.copy()
    if order:
        windows = np.lib.stride_tricks.sliding_window_view(F, order, axis=1)[:, :-1]
        out[:, order:] -= np.matmul(windows, taps[:, ::-1, None])[..., 0]
        for i in range(1, order):
            out[:, i:order] -= taps[:, i - 1, None] * F[:, :order - i]
    return out


def linearity_check(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                    model: DelayedPlant, level: float) -> Check:
    """The ``linearity`` check (module notes).

    Parameters
    ----------
    parts : list of (E, U, X)
        Residuals with the aligned inputs and states
        (:func:`~dmdidc.inference.residuals.model_residuals`).
    model : DelayedPlant
        The identified deviation model (its ``A_d`` simulates the response to the inputs).
    level : float
        The check's share of ``check_level``.

    Returns
    -------
    Check

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant, random_excitation
    >>> from dmdidc.inference.residuals import model_residuals
    >>> plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]],
    ...                                      delay=1.3, dt=0.5, max_delay=3)
    >>> U = random_excitation(1, 3000, rng=0)
    >>> X = plant.simulate([0.0, 0.0], U)
    >>> X = X + 0.01 * np.random.default_rng(1).standard_normal(X.shape)
    >>> parts = model_residuals([(X, U)], plant.A_d, plant.B_blocks)
    >>> linearity_check(parts, plant, 0.01 / 8).passed
    True
    >>> bent = plant.simulate([0.0, 0.0], np.clip(U, -1.0, 1.0))   # the actuator saturates
    >>> linearity_check(model_residuals([(bent, U)], plant.A_d, plant.B_blocks), plant,
    ...                 0.01 / 8).passed
    False
    """
    # evenly spread pieces of about SAMPLES samples (fewer for many rows): ample power, a
    # bounded cost
    memory, cube_lags = _memory(model), _cube_lags(model)
    stable = memory is not None
    # the constant, every input lag, the response's states and their two features, the cubes
    rows = 1 + model.B_blocks.shape[0] * model.B_blocks.shape[2] + len(cube_lags) + (
        3 * model.n_states if stable else 0)
    budget = min(SAMPLES, max(_FEWEST, _VALUES // rows))
    step = max(1, -(-sum(E.shape[1] for E, _, _ in parts) // budget))
    pieces, names, short = [], [], 0
    for E, U, _ in parts[::step]:
        if U.shape[0] == 0:
            continue
        if E.shape[1] < _SHORTEST:
            short += 1
            continue
        # one part longer than the budget (a single long record): its middle window, the
        # response from well before it (its transient stays out); it used every sample
        # before, 10x the budget at n = 50, K = 2e4
        start = max(E.shape[1] - budget, 0) // 2
        stop = min(start + budget, E.shape[1])
        linear, F, names = _features(U, model, start, stop, memory, cube_lags)
        E = E[:, start:stop]
        if F.size:
            pieces.append((E, linear, F))
    samples = sum(E.shape[1] for E, _, _ in pieces)
    columns = pieces[0][1].shape[0] + pieces[0][2].shape[0] + len(pieces) if pieces else 0
    if not pieces or samples < _SAMPLES_PER_COLUMN * columns:
        return Check("linearity", QUESTION, None, finding=_untested(
            parts, short, len(pieces), samples, columns))
    # one projection for all pieces, each with its own intercept (its signals centred: many
    # short experiments pool their samples instead of each being too short alone)
    inverse = _pseudo_inverse(sum(L @ L.T for _, L, _ in pieces))
    # a feature that is linear in the signals (the cube of a two-level input, a PRBS, is the
    # input itself) tests nothing the residual checks do not: left out (zero)
    centred = [F - F.mean(axis=1, keepdims=True) for _, _, F in pieces]
    cross = sum(F @ L.T for F, (_, L, _) in zip(centred, pieces, strict=True))
    left = (sum(np.einsum("ij,ij->i", F, F) for F in centred)
            - np.einsum("ij,ij->i", cross @ inverse, cross))
    linear_feature = (np.sqrt(np.maximum(left, 0.0)) <= _LINEAR_FEATURE * np.sqrt(
        sum(np.einsum("ij,ij->i", F, F) for _, _, F in pieces)))
    whitened = []
    for (_, _, F), F0 in zip(pieces, centred, strict=True):
        if linear_feature.any():
            F, F0 = (np.where(linear_feature[:, None], 0.0, G) for G in (F, F0))
        W = _whitened(F, F0, min(WHITENING_ORDER, F.shape[1] // 10))
        whitened.append(W - W.mean(axis=1, keepdims=True))
    fitted = sum(W @ L.T for W, (_, L, _) in zip(whitened, pieces, strict=True)) @ inverse
    total = variance = 0.0
    for (E, L, _), W in zip(pieces, whitened, strict=True):
        W -= fitted @ L
        # Huber's psi of the robustly standardized residuals: a few outliers or heavy-tailed
        # noise would otherwise dominate the sums (independent of the features all the same)
        psi = np.clip(robust_deviations(E, signed=True), -_HUBER, _HUBER)
        # white features: the sum's variance is its lag-0 term whatever the residuals' colour
        total, variance = total + psi @ W.T, variance + (psi ** 2) @ (W ** 2).T
    tested = variance > 0
    if not np.any(tested):
        return Check("linearity", QUESTION, None,
                     finding="not tested (every feature is linear in the inputs: two-level "
                             "inputs and no state response)")
    z = np.where(tested, np.abs(total) / np.sqrt(np.where(tested, variance, 1.0)), 0.0)
    critical = float(special.ndtri(1.0 - level / (2.0 * np.count_nonzero(tested))))
    residual, feature = np.unravel_index(int(np.argmax(z)), z.shape)
    largest = float(z[residual, feature])
    finding = (f"residual {residual} correlates with {names[feature]} at {largest:.3g} standard "
               f"deviations (Bonferroni over {np.count_nonzero(tested)} residual-feature pairs)")
    if largest <= critical:
        return Check("linearity", QUESTION, True, largest, critical, finding)
    return Check("linearity", QUESTION, False, largest, critical,
                 finding + ": the plant responds nonlinearly (a saturating actuator whose "
                           "commanded input was recorded, a saturating state or sensor), which "
                           "a linear model cannot represent; its eigenvalues, delays and "
                           "intervals may be biased",
                 "record the input the actuator applied, excite with a smaller amplitude (a "
                 "range where the plant is linear), or model the nonlinearity")
