"""Output-error refinement: every parameter at once, and their covariance.

The subspace step fixes the dynamics before the delays are read, so its errors in ``(A, C)``
pass into everything else unaccounted for.  Starting from it, the output-error criterion

    sum_k || y_k - yhat_k(A_c, C, B_c, r, x_R, D) ||^2

is minimized over all parameters jointly (Gauss-Newton / trust region,
:func:`scipy.optimize.least_squares`); for white output noise this is the maximum-likelihood
(prediction-error) estimate, and ``sigma^2 (J^T J)^+`` its covariance.  The parametrization is
redundant (any similarity transform gives the same outputs): the pseudo-inverse gives the
covariance of every quantity that does not depend on the basis (eigenvalues, delays, transfer
function), which are the ones reported.

The predicted outputs of a candidate are the states
(:func:`~dmdidc.regression.propagation.propagate`) driven by the state input
``sum_i Gamma_0(p_i) b_i u_{k - w_i} + Gamma_1(p_i) b_i u_{k - w_i - 1}``.

**Linear trends** (``trend=True``, ``OutputDMDidc(detrend="linear")``): each experiment's outputs
carry a line of their own, ``yhat_k + c_e + d_e k``.  The line enters linearly, so it is
concentrated out (variable projection): residuals and Jacobian rows are projected, experiment by
experiment and output by output, onto the complement of ``[1, k]`` (:func:`without_lines`).  The
minimum is the joint one over the dynamics and the lines, and ``sigma^2 (J^T J)^+`` of the
projected Jacobian is the covariance of the joint fit's other parameters (Frisch-Waugh); the
degrees of freedom lose the ``2 ny E`` lines.  A constant offset is then part of the line (no
``offset`` parameter).  On data whose lines were removed beforehand (outputs and inputs), the
fit equals the joint fit of the raw data: the response to the removed input line is a line plus
a transient of the free initial state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, signal, special

from _toolbox.errors import ParameterError
from dmdidc.output.blocks import RCOND, family_of_modes, modes
from dmdidc.output.jacobian import (
    MODAL_COND,
    line_basis,
    normal_equations,
    similarity_map,
    trend_degree,
)
from dmdidc.regression.propagation import propagate

__all__ = ["CHI2_GAIN", "ENDINGS", "Refined", "refine", "eigenvalue_gradients",
           "in_noise_variances", "residual_input_test", "without_lines"]


@dataclass(frozen=True)
class Refined:
    """The refined parameters and their covariance (module notes)."""

    A_c: np.ndarray
    C: np.ndarray
    B_c: np.ndarray
    delays: np.ndarray
    initial_states: np.ndarray
    D: np.ndarray
    offset: np.ndarray
    covariance: np.ndarray
    rss: float
    dof: int
    layout: dict
    converged: bool
    #: Output-error residuals ``y_k - yhat_k`` (T_e, ny) of each experiment from sample ``R``
    #: (the search's last evaluation: no second simulation for the residual checks).
    residuals: tuple[np.ndarray, ...] | None = None
    #: Columns of each experiment's trend concentrated out (module notes; 2: its line, 1: its
    #: constant, ``detrend="constant"``; 0: none): the residuals are projected.
    trend: int = 0
    #: How the search ended (:data:`ENDINGS`); ``converged`` is ``ending == "converged"``.
    ending: str = "converged"
    #: Residual evaluations the search took (with its continuations: :func:`continued`).
    evaluations: int = 0
    #: The local quadratic model's largest further decrease of the residual sum of squares
    #: at the end, in noise variances ``rss / N`` (:func:`_model_gain`; 0 when not computed):
    #: the squared distance, in standard errors, to the minimum it points to.
    gain: float = 0.0
    #: The search's last Levenberg-Marquardt damping (column-scaled): where a continuation
    #: starts (:func:`~dmdidc.output.intervals.restart`).
    damping: float = 1e-3


def without_lines(residuals: list[np.ndarray], trend: bool | int = True) -> list[np.ndarray]:
    """Each experiment's residuals (T_e, ny) less their least-squares line (``trend`` 1: their
    mean; :func:`~dmdidc.output.jacobian.trend_degree`), output by output.

    Examples
    --------
    >>> import numpy as np
    >>> r = np.c_[np.arange(5.0), [1.0, -1.0, 1.0, -1.0, 1.0]]
    >>> np.round(without_lines([r])[0][:, 0], 12).tolist()
    [0.0, 0.0, 0.0, 0.0, 0.0]
    """
    result = []
    degree = trend_degree(trend)
    for r in residuals:
        Q = line_basis(r.shape[0], degree)
        result.append(r - Q @ (Q.T @ r))
    return result


def _layout(n: int, ny: int, m: int, E: int, feedthrough: bool, offset: bool) -> dict:
    sizes = {"A_c": n * n, "C": ny * n, "B_c": n * m, "delays": m, "x0": E * n,
             "D": ny * m if feedthrough else 0, "offset": ny if offset else 0}
    layout, start = {}, 0
    for name, size in sizes.items():
        layout[name] = slice(start, start + size)
        start += size
    layout["size"] = start
    return layout


def _unpack(theta: np.ndarray, layout: dict, n: int, ny: int, m: int, E: int):
    A_c = theta[layout["A_c"]].reshape(n, n)
    C = theta[layout["C"]].reshape(ny, n)
    B_c = theta[layout["B_c"]].reshape(n, m)
    delays = theta[layout["delays"]]
    x0 = theta[layout["x0"]].reshape(E, n)
    D = theta[layout["D"]].reshape(ny, m) if layout["D"].stop > layout["D"].start else None
    offset = theta[layout["offset"]] if layout["offset"].stop > layout["offset"].start else None
    return A_c, C, B_c, delays, x0, D, offset


#: Residual of a diverged trial (squares of many stay finite).
_DIVERGED = 1e100


def _state_inputs(U: np.ndarray, B_c: np.ndarray, pairs: list, R: int) -> np.ndarray:
    """State input ``sum_i Gamma_0(p_i) b_i u_{k-w_i} + Gamma_1(p_i) b_i u_{k-w_i-1}``, k >= R."""
    K = U.shape[1]
    v = np.zeros((B_c.shape[0], K - R))
    for i, (w, gamma_0, gamma_1) in enumerate(pairs):
        for j, gamma in ((w, gamma_0), (w + 1, gamma_1)):
            if j <= R:
                v += np.outer(gamma @ B_c[:, i], U[i, R - j:K - j])
    return v


def _states(A_d: np.ndarray, v: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """States (n, T) of ``x_{k+1} = A_d x_k + v_k`` from ``x0``."""
    return propagate(A_d, v.T[:, :, None], initial=x0[:, None])[:, :, 0].T


def _simulator(A_c: np.ndarray, dt: float):
    """``states(v, x0)`` of the sampled plant (:func:`_states`) and its hold blocks
    ``family(delays)`` (:func:`~dmdidc.output.blocks.hold_family`).

    With well-conditioned eigenvectors ``A_c = V diag(lambda) V^-1`` each mode is one scalar
    recursion (``scipy.signal.lfilter``, several times cheaper than the matrix recursion) and
    the hold blocks elementwise exponentials; otherwise the matrix recursion and exponentials.
    """
    found = modes(A_c, MODAL_COND)          # one eigendecomposition for both
    family = family_of_modes(A_c, dt, found)
    if found is None:
        A_d = linalg.expm(A_c * dt)
        return (lambda v, x0: _states(A_d, v, x0)), family
    values, vectors, inverse = found
    # A real A_c's complex modes come in exact conjugate pairs (LAPACK's real eigensolver), and
    # so do their states for real inputs: each pair is filtered once and counted twice in
    # x = Re(V xi), a real mode in real arithmetic.
    upper = values.imag >= 0
    real = values[upper].imag == 0
    poles = np.exp(values[upper] * dt)
    inverse, weighted = inverse[upper], vectors[:, upper] * np.where(real, 1.0, 2.0)

    def states(v: np.ndarray, x0: np.ndarray) -> np.ndarray:
        # modal coordinates xi = V^-1 x: xi_k = pole^k xi_0 + sum_{t < k} pole^(k-1-t) w_t
        drive = np.empty((poles.size, v.shape[1]), dtype=complex)
        drive[:, 0] = inverse @ x0
        drive[:, 1:] = inverse @ v[:, :-1]
        modes = np.stack([signal.lfilter([1.0], [1.0, -pole.real], row.real) if alone
                          else signal.lfilter([1.0], [1.0, -pole], row)
                          for pole, row, alone in zip(poles, drive, real, strict=True)])
        return (weighted @ modes).real
    return states, family


def _predicted(A_c, C, B_c, delays, x0, D, offset, experiments, dt: float, R: int
               ) -> tuple[list, list]:
    """Predicted outputs (T, ny) and states (n, T) of every experiment."""
    states_of, family = _simulator(A_c, dt)
    steps, gamma_0, gamma_1 = family(np.clip(delays, 0.0, R * dt))
    pairs = list(zip(steps.astype(int).tolist(), gamma_0, gamma_1, strict=True))
    outputs, states = [], []
    for e, (_, U) in enumerate(experiments):
        X = states_of(_state_inputs(U, B_c, pairs, R), x0[e])
        y = X.T @ C.T
        if D is not None:
            y = y + U[:, R:].T @ D.T
        if offset is not None:
            y = y + offset
        outputs.append(y)
        states.append(X)
    return outputs, states


#: An accepted step that lowers the residual sum of squares by less than this many noise
#: variances ends the search: it moves the parameters by a small fraction of their standard
#: errors (0.01 in chi^2 is about 0.1 standard error along the step).
_CHI2_STEP = 0.01
#: A search at its evaluation limit (or whose damping overflowed) has converged when the local
#: quadratic model's largest further decrease is at most this many noise variances: the
#: parameters are then within about 0.3 standard errors of the minimum the model points to.
CHI2_GAIN = 0.1
#: Smallest Levenberg-Marquardt damping (column-scaled): the similarity transforms of the state
#: basis leave ``J^T J`` singular, and the damping keeps the step out of that null space.
_MIN_DAMPING = 1e-9
#: A delay within this many periods of a whole period, pushed across it by the descent, is at
#: its corner for the convergence test (:func:`_levenberg_marquardt`; the profiles' smallest
#: step, :data:`~dmdidc.output.intervals._MIN_STEP`).
_AT_PERIOD = 1e-3
#: How a search ends (:attr:`Refined.ending`).  ``converged``: a step that gained at most
#: :data:`_CHI2_STEP` noise variances, or, at a step at rounding or the evaluation limit, the
#: quadratic model promises at most :data:`CHI2_GAIN` noise variances more; ``stopped``: the
#: caller's ``stop`` rule (a candidate that cannot change a comparison, ended by design);
#: ``evaluations``: the evaluation limit with more to gain; ``no_descent``: no damped step could
#: be solved (the damping overflowed), or the damped step shrank to rounding, with more to
#: gain; ``diverged``: the last evaluation overflowed (an unstable trial the search could not
#: leave).
ENDINGS = ("converged", "stopped", "evaluations", "no_descent", "diverged")


def in_noise_variances(decrease: float, rss: float, samples: int) -> float:
    """A decrease of the residual sum of squares in noise variances ``rss / samples`` (the
    maximum-likelihood variance: one unit for the search's rules, :data:`CHI2_GAIN`, and for
    a continuation's rounds); ``inf`` for a decrease from an exact fit (``rss`` 0).

    Examples
    --------
    >>> in_noise_variances(2.0, 100.0, 50), in_noise_variances(0.0, 0.0, 50)
    (1.0, 0.0)
    """
    if rss > 0:
        return decrease / (rss / samples)
    return 0.0 if decrease == 0 else np.inf


def _model_gain(scaled: np.ndarray, gradient: np.ndarray,
                free: np.ndarray | None = None) -> float:
    """The largest decrease of the residual sum of squares the local quadratic model allows:
    ``g^T (J^T J)^+ g`` (column-scaled; the similarity directions' zero eigenvalues dropped,
    below the relative cutoff ``RCOND`` of every pseudo-inverse of :mod:`dmdidc.output`);
    ``free`` (bool): only over these parameters (the others held at a bound)."""
    if free is not None and not free.all():
        scaled, gradient = scaled[np.ix_(free, free)], gradient[free]
    values, vectors = np.linalg.eigh(scaled)
    keep = values > RCOND * max(values.max(initial=0.0), np.finfo(float).tiny)
    projected = vectors[:, keep].T @ gradient
    return float(projected @ (projected / values[keep]))


def _levenberg_marquardt(residuals, linearize, theta, lower, upper, max_evaluations: int,
                         stop=None, edges=None, damping: float = 1e-3):
    """Damped Gauss-Newton on the normal equations with the box projected; the start is good
    (the subspace estimate), so it takes full Gauss-Newton steps within a few iterations.

    Works on the normal equations ``J^T J``, ``J^T r`` (parameters << residuals), which
    ``linearize(theta)`` gives at the last evaluated ``theta`` (:func:`~dmdidc.output.jacobian.
    normal_equations`: ``J`` is never formed), instead of the SVD of ``J`` that
    :func:`scipy.optimize.least_squares`' trust region takes (14x dearer at 8000 x 28).  The
    last step gains at most ``_CHI2_STEP`` noise variances, so it moved the parameters by
    about a tenth of a standard error (a Gauss-Newton step's gain is its length squared in
    standard errors): the Jacobian before it serves the covariance (it differs by
    O(0.1 / sqrt(samples)) relatively) instead of a new one.  Returns ``(theta, residuals,
    J^T J, ending, evaluations, gain, damping)``: how it ended (:data:`ENDINGS`), ``gain`` in
    noise variances ``rss / N`` (the last step's decrease when that ended it, NaN when
    stopped, else the quadratic model's further decrease), and the last
    damping, where a continuation starts (``damping``: the first; a continuation started at
    1e-3 again took a step too damped to move for one at rounding and ended "converged"
    7e-5 s off the delay of noise-free data).  ``stop(rss, gain)`` (optional) is asked at
    every new Jacobian with the quadratic model's largest decrease ``gain``; ``True`` ends the
    search there (``stopped``).

    The model holds only up to an edge of the parameters' smooth region: a bound, or one of
    ``edges(theta, descent)`` (optional), which returns per parameter the distance to its next
    edge along the sign of ``descent`` (``inf``: none; a delay's whole periods, where the
    outputs are not smooth in it) and a tolerance.  A parameter within its tolerance of an edge
    (0 for the bounds) that the descent pushes across is held, and its first-order decrease up
    to the edge added: at a bound or a corner of the residual in a delay the gradient does not
    vanish at the minimum, and the unconstrained model would
    promise a decrease no step can take.  An edge is held only if the residual evaluated
    just across it (the tolerance beyond) is not lower: where it keeps falling there, the
    minimum is not at the corner and the parameter is free (one evaluation per such edge,
    only at the endings that ask the model).
    """
    r = residuals(theta)
    rss, evaluations = float(r @ r), 1
    normal, gradient = linearize(theta)

    def remaining(theta, normal, gradient, rss) -> float:
        """The model's further decrease at ``theta``, in noise variances."""
        nonlocal evaluations
        scale = np.sqrt(np.clip(np.diag(normal), 0.0, None))
        scale[scale == 0] = 1.0
        descent = -gradient
        distance = np.where(descent < 0, theta - lower, upper - theta)
        tolerance = np.zeros(theta.size)
        if edges is not None:
            found, tolerance = edges(theta, descent)
            kinks = (found < distance) & (found <= tolerance) & (descent != 0)
            distance = np.minimum(distance, found)
            # a kink is a corner (the minimum at it) only if the residual does not fall on
            # its other side: one evaluation just across tells (a review's plants fell there)
            for k in np.flatnonzero(kinks):
                across = theta.copy()
                across[k] += np.sign(descent[k]) * (found[k] + tolerance[k])
                if lower[k] <= across[k] <= upper[k]:
                    beyond = residuals(across)
                    evaluations += 1
                    if float(beyond @ beyond) < rss:
                        distance[k] = np.inf            # smooth enough: not held
        # held at an edge only if the parameter's own model step would cross it: a delay
        # 1e-5 periods from a whole period whose slope is rounding is at its minimum, and
        # its slope times that distance read as 76 noise variances still to gain (a review's
        # fits at 1e-9 relative noise, all four warned falsely)
        curvature = np.diag(normal)
        with np.errstate(divide="ignore", invalid="ignore"):
            reach = np.where(curvature > 0, np.abs(gradient) / curvature, np.inf)
        held = (distance <= tolerance) & (descent != 0) & (reach >= distance)
        # the held parameters' decrease up to their edge along the model (rss changes by
        # 2 g t + N_kk t^2 at a step t, less than the slope alone promises)
        edge = np.where(held, distance, 0.0)
        along = np.where(np.isfinite(curvature), curvature, 0.0)
        gain = max(_model_gain(normal / np.outer(scale, scale), gradient / scale, ~held)
                   + float(np.sum(2.0 * np.abs(gradient) * edge - along * edge ** 2)), 0.0)
        return in_noise_variances(gain, rss, r.size)

    def ended(ending: str, gain: float):
        # an overflowed trial is clipped to _DIVERGED: a search still there has no model
        if ending != "stopped" and not np.all(np.abs(r) < _DIVERGED):
            ending = "diverged"
        return theta, r, normal, ending, evaluations, gain, damping

    growth, fresh = 2.0, True
    while evaluations < max_evaluations and np.isfinite(damping):
        # a Gram's diagonal: >= 0, but the expanded normal equations (jacobian._reduction)
        # can leave a direction the outputs do not see at -eps instead of 0
        scale = np.sqrt(np.clip(np.diag(normal), 0.0, None))
        scale[scale == 0] = 1.0
        scaled = normal / np.outer(scale, scale)
        if fresh and stop is not None and stop(rss, _model_gain(scaled, gradient / scale)):
            return ended("stopped", np.nan)
        fresh = False
        scaled[np.diag_indices_from(scaled)] += damping
        try:
            step = -linalg.solve(scaled, gradient / scale, assume_a="pos") / scale
        except (linalg.LinAlgError, ValueError):
            damping, growth = damping * growth, growth * 2
            continue
        trial = np.clip(theta + step, lower, upper)
        step = trial - theta
        r_trial = residuals(trial)
        evaluations += 1
        rss_trial = float(r_trial @ r_trial)
        predicted = -(2.0 * gradient @ step + step @ normal @ step)
        if rss_trial < rss:
            gained = in_noise_variances(rss - rss_trial, rss, r.size)
            ratio = (rss - rss_trial) / predicted if predicted > 0 else 0.0
            theta, r, rss = trial, r_trial, rss_trial
            if gained <= _CHI2_STEP:            # the previous Jacobian serves (docstring)
                return ended("converged", gained)
            (normal, gradient), fresh = linearize(theta), True
            damping = max(damping * max(1 / 3, 1 - (2 * ratio - 1) ** 3), _MIN_DAMPING)
            growth = 2.0
        else:
            damping, growth = damping * growth, growth * 2
        if np.all(np.abs(step) <= 1e-12 * (1.0 + np.abs(theta))):
            # a step at rounding ends the search, converged only where the model agrees: after
            # a rejected step the Jacobian is still at theta, and a wrong one (a column's sign:
            # tests) left 1286 noise variances to gain while this ended "converged"
            gain = remaining(theta, normal, gradient, rss)
            return ended("converged" if gain <= CHI2_GAIN else "no_descent", gain)
    # the Jacobian is at theta (every accepted step above renews it): the limit, or a damping
    # that overflowed, ends a converged search when the model promises little more
    gain = remaining(theta, normal, gradient, rss)
    if gain <= CHI2_GAIN:
        return ended("converged", gain)
    return ended("evaluations" if evaluations >= max_evaluations else "no_descent", gain)


def _similarity_directions(A_c: np.ndarray, C: np.ndarray, B_c: np.ndarray, x0: np.ndarray,
                           layout: dict) -> np.ndarray:
    """Orthonormal basis (size, n^2) of the parameter directions a change of state basis
    moves along (:func:`~dmdidc.output.jacobian.similarity_map`); the outputs do not change
    along them, so they are the only null directions the parametrization must have."""
    directions = similarity_map(A_c, C, B_c, x0, layout)
    basis, singular, _ = np.linalg.svd(directions, full_matrices=False)
    return basis[:, singular > 1e-12 * max(singular.max(initial=0.0), 1e-300)]


def _basis_free_inverse(normal: np.ndarray, similarity: np.ndarray) -> np.ndarray:
    """``(J^T J)^-1`` on the complement of the similarity directions.

    A pseudo-inverse with a relative cutoff would also drop any *other* flat direction (a
    delay the data cannot fix, a mode the inputs barely excite) and report a tiny variance
    along it, the opposite of the truth; here only the basis directions are removed and every
    other direction is inverted exactly (a flat one gets a variance as large as its flatness).
    """
    size = normal.shape[0]
    complement = np.linalg.svd(np.eye(size) - similarity @ similarity.T)[0][
        :, :size - similarity.shape[1]]
    reduced = complement.T @ normal @ complement
    values, vectors = np.linalg.eigh(0.5 * (reduced + reduced.T))
    floor = np.finfo(float).eps * max(values.max(initial=0.0), np.finfo(float).tiny)
    inverse = (vectors / np.maximum(values, floor)) @ vectors.T
    return complement @ inverse @ complement.T


def refine(experiments: list, dt: float, R: int, *, A_c: np.ndarray, C: np.ndarray,
           B_c: np.ndarray, delays: np.ndarray, initial_states: np.ndarray,
           D: np.ndarray | None, offset: np.ndarray | None = None,
           max_evaluations: int = 60, stop=None, held: np.ndarray | None = None,
           trend: bool | int = False, damping: float = 1e-3) -> Refined:
    """Joint output-error fit from a starting point (module notes); ``stop(rss, gain)`` may
    end the search early (:func:`_levenberg_marquardt`; the order check's hopeless candidates);
    the delays of the channels ``held`` (bool, (m,)) stay at ``delays`` (a profile over the
    other parameters, :mod:`dmdidc.output.intervals`); ``trend``: each experiment's line is
    concentrated out (module notes; not with ``offset``, which the line holds); ``damping``:
    the search's first (a continuation's: :attr:`Refined.damping`).
    """
    trend = trend_degree(trend)
    if trend and offset is not None:
        raise ParameterError("refine: trend=True concentrates out each experiment's line, "
                             "which holds the constant offset; pass offset=None")
    n, ny, m, E = A_c.shape[0], C.shape[0], B_c.shape[1], len(experiments)
    feedthrough = D is not None
    layout = _layout(n, ny, m, E, feedthrough, offset is not None)
    targets = np.concatenate([Y[:, R:].T.ravel() for Y, _ in experiments])
    theta0 = np.concatenate([A_c.ravel(), C.ravel(), B_c.ravel(), delays,
                             np.asarray(initial_states).ravel()]
                            + ([D.ravel()] if feedthrough else [])
                            + ([np.asarray(offset, dtype=float)] if offset is not None else []))
    lower = np.full(theta0.size, -np.inf)
    upper = np.full(theta0.size, np.inf)
    lower[layout["delays"]], upper[layout["delays"]] = 0.0, R * dt
    theta0[layout["delays"]] = np.clip(theta0[layout["delays"]], 0.0, R * dt)
    if held is not None:        # equal bounds: the search and the covariance leave them fixed
        at = np.arange(layout["delays"].start, layout["delays"].stop)[np.asarray(held, bool)]
        lower[at] = upper[at] = theta0[at]

    delay_at = np.arange(layout["delays"].start, layout["delays"].stop)

    def edges(theta: np.ndarray, descent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each delay's distance to the whole period next along ``descent`` (the outputs'
        kinks, :func:`_levenberg_marquardt`), within :data:`_AT_PERIOD` of it."""
        distance, tolerance = np.full(theta.size, np.inf), np.zeros(theta.size)
        periods = theta[delay_at] / dt
        below = np.floor(periods)
        distance[delay_at] = dt * np.where(descent[delay_at] < 0, periods - below,
                                           below + 1.0 - periods)
        tolerance[delay_at] = _AT_PERIOD * dt
        return distance, tolerance

    last = {}     # the states and residuals of the latest evaluation, for the Jacobian there
    splits = np.cumsum([Y.shape[1] - R for Y, _ in experiments])[:-1]     # experiments' rows

    def residuals(theta: np.ndarray) -> np.ndarray:
        parts = _unpack(theta, layout, n, ny, m, E)
        last.clear()
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                outputs, states = _predicted(*parts, experiments, dt, R)
            except (np.linalg.LinAlgError, ValueError):     # A_d overflowed: a wild trial
                return np.full(targets.size, _DIVERGED)
            r = targets - np.concatenate([y.ravel() for y in outputs])
            if trend:
                r = np.concatenate([part.ravel() for part in without_lines(
                    np.split(r.reshape(-1, ny), splits), trend)])
        # An unstable trial diverges: a large finite residual steers the search back (a
        # residual within the bound is left as it is: two copies less per evaluation).
        if not np.all(np.abs(r) <= _DIVERGED):                  # NaN fails the comparison
            r = np.clip(np.nan_to_num(r, nan=_DIVERGED, posinf=_DIVERGED, neginf=-_DIVERGED),
                        -_DIVERGED, _DIVERGED)
        last.update(theta=theta.copy(), states=states, r=r)
        return r

    def linearize(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(J^T J, J^T r)`` of the residuals' Jacobian ``J`` at ``theta``."""
        if "theta" not in last or not np.array_equal(last["theta"], theta):
            residuals(theta)
        if "states" not in last:                            # a diverged trial: no direction
            return np.zeros((theta.size, theta.size)), np.zeros(theta.size)
        A_c, C, B_c, delays, *_ = _unpack(theta, layout, n, ny, m, E)
        with np.errstate(over="ignore", invalid="ignore"):
            # the residuals are y - yhat: their Jacobian is minus the predictions'
            normal, gradient = normal_equations(
                experiments, dt, R, A_c=A_c, C=C, B_c=B_c, delays=np.clip(delays, 0.0, R * dt),
                states=last["states"], layout=layout,
                residuals=np.split(-last["r"].reshape(-1, ny), splits), lines=trend)
        fixed = lower >= upper              # max_delay = 0 or held: those delays are fixed
        normal[fixed], normal[:, fixed], gradient[fixed] = 0.0, 0.0, 0.0
        if not (np.isfinite(normal).all() and np.isfinite(gradient).all()):
            # a wild trial: no direction from overflow
            normal = np.nan_to_num(normal, nan=0.0, posinf=_DIVERGED, neginf=-_DIVERGED)
            gradient = np.nan_to_num(gradient, nan=0.0, posinf=_DIVERGED, neginf=-_DIVERGED)
        return normal, gradient

    with np.errstate(over="ignore", invalid="ignore"):
        theta, r, normal, ending, evaluations, gain, damping = _levenberg_marquardt(
            residuals, linearize, theta0, lower, upper, max_evaluations, stop, edges, damping)
    rss = float(r @ r)
    # n^2 directions are the basis; each experiment's line takes two per output
    dof = max(targets.size - (theta.size - n * n) - trend * ny * E, 1)
    A_c, C, B_c, delays, x0, D, found = _unpack(theta, layout, n, ny, m, E)
    covariance = rss / dof * _basis_free_inverse(normal, _similarity_directions(
        A_c, C, B_c, x0, layout))
    fixed = lower >= upper                  # max_delay = 0 or held: those delays are known
    covariance[fixed], covariance[:, fixed] = 0.0, 0.0
    return Refined(A_c=A_c, C=C, B_c=B_c, delays=delays.copy(), initial_states=x0,
                   D=np.zeros((ny, m)) if D is None else D,
                   offset=np.zeros(ny) if found is None else found, covariance=covariance, rss=rss,
                   dof=dof, layout=layout, converged=ending == "converged",
                   residuals=tuple(np.split(r.reshape(-1, ny), splits)), trend=trend,
                   ending=ending, evaluations=evaluations, gain=gain, damping=damping)


def eigenvalue_gradients(A_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of ``A_c`` and their gradients ``d lambda / d vec(A_c)`` (row-major), (n, n^2).

    ``d lambda_i = (v_i^H dA u_i) / (v_i^H u_i)`` with right and left eigenvectors.
    """
    values, left, right = linalg.eig(A_c, left=True, right=True)
    gradients = np.empty((values.size, A_c.size), dtype=complex)
    for i in range(values.size):
        u, v = right[:, i], left[:, i]
        gradients[i] = (np.outer(v.conj(), u) / (v.conj() @ u)).ravel()
    return values, gradients


def residual_input_test(experiments: list, refined: Refined, dt: float, R: int, *,
                        lags: int) -> tuple[float, str]:
    """Do the output-error residuals still depend on the inputs?  ``(p_value, sentence)``.

    Each output's residual is regressed on the inputs at lags ``0..lags``; the F statistic of
    that regression against none, Bonferroni-combined over outputs.  A model with the right
    order and delays leaves residuals independent of the inputs (open loop); a missing mode or
    a delay beyond the bound does not.  White residuals are assumed for the reference
    distribution.
    """
    if refined.residuals is None:
        with np.errstate(over="ignore", invalid="ignore"):
            predicted, _ = _predicted(refined.A_c, refined.C, refined.B_c, refined.delays,
                                      refined.initial_states,
                                      None if not refined.D.any() else refined.D,
                                      refined.offset, experiments, dt, R)
        residuals = [Y[:, R:].T - y for (Y, _), y in zip(experiments, predicted, strict=True)]
        residuals = without_lines(residuals, refined.trend) if refined.trend else residuals
    else:
        residuals = refined.residuals
    rows, targets = [], []
    for (_, U), residual in zip(experiments, residuals, strict=True):     # residual (T, ny)
        T = residual.shape[0]
        if T <= lags + 1:
            continue
        lagged = np.hstack([U[:, R + lags - j:R + T - j].T for j in range(lags + 1)
                            if R + lags - j >= 0])
        rows.append(lagged)
        targets.append(residual[lags:])
    if not rows:
        return 1.0, "too few samples for the residual test"
    X, E = np.vstack(rows), np.vstack(targets)
    q = X.shape[1]
    N = X.shape[0]
    if N <= 2 * q:
        return 1.0, "too few samples for the residual test"
    coef = np.linalg.lstsq(X, E, rcond=None)[0]
    rss1 = np.sum((E - X @ coef) ** 2, axis=0)
    rss0 = np.sum(E ** 2, axis=0)
    F = (rss0 - rss1) / q / (rss1 / (N - q))
    p_values = special.fdtrc(q, N - q, F)
    worst = int(np.argmin(p_values))
    p_value = float(min(1.0, p_values[worst] * E.shape[1]))
    return p_value, (f"output {worst}: residuals regressed on the inputs at lags 0..{lags}: "
                     f"F = {F[worst]:.3g} on ({q}, {N - q}) dof, p = {p_value:.2g}")
