"""The cvxpy formulation of :class:`controllers.DelayedMPC`'s problem (for costs and constraints
of the user's own).

The problem is built once, with ``cp.Parameter`` objects for ``x_k`` and the input history, and
is DPP-compliant, so each step only updates two parameter values and re-solves (cvxpy caches
its parameter-to-data map after the first solve).  Terms of the user's own enter through
``DelayedMPC(..., cvxpy_extension=f)``: ``f(u, x) -> (cost, constraints)`` on the same
variables, applied when the problem is built.  Slower than the direct solvers of
:mod:`controllers.qp_solvers` (cvxpy re-canonicalizes at every solve), and kept for that
flexibility and as a reference.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError, SolverError
from controllers.qp_solvers import ClarabelSolver, QPOutcome, distant_bounds

__all__ = ["CvxpySolver"]

#: Default options of the solvers cvxpy calls: OSQP with tight tolerances and polishing on every
#: solve (input bounds to ~1e-9); Clarabel without presolve (so cvxpy can update it) and with
#: the tolerances of the direct path (ClarabelSolver.DEFAULTS: with Clarabel's own, soft-bound
#: first moves came 2.9e-4 off the other solvers').
_DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "OSQP": {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iter": 20000, "polishing": True},
    "CLARABEL": {"presolve_enable": False, **ClarabelSolver.DEFAULTS},
}


class CvxpySolver:
    """The MPC problem as a parametrized cvxpy problem, solved through cvxpy.

    Parameters
    ----------
    mpc : DelayedMPC
        The controller whose problem to build (its model, weights, bounds).
    options : dict
        Keyword arguments of ``Problem.solve``; ``solver`` picks cvxpy's QP solver
        (``"CLARABEL"``, default, or ``"OSQP"``).
    warm_start : bool
        cvxpy's ``warm_start``.

    Attributes
    ----------
    problem : cvxpy.Problem
        The parametrized problem; variables ``u`` (m, N), ``x`` (n, w + N + 1), parameters
        ``x_k`` and ``u_history``.
    """

    name = "CVXPY"

    def __init__(self, mpc: Any, options: dict[str, Any], *, warm_start: bool) -> None:
        import cvxpy as cp

        self._cp, self._warm = cp, warm_start
        options = dict(options)
        inner = str(options.pop("solver", "CLARABEL")).upper()
        if inner not in _DEFAULT_OPTIONS or inner not in cp.installed_solvers():
            raise ParameterError(f"solver_options['solver'] must be one of the installed "
                                 f"{sorted(set(_DEFAULT_OPTIONS) & set(cp.installed_solvers()))}"
                                 f"; got {inner!r}")
        self.inner = inner
        self._options = {**_DEFAULT_OPTIONS[inner], **options}
        # Clarabel's own tolerances, to solve again at when the tighter defaults stall
        # (ClarabelSolver.RETRIED; cvxpy reports that as a SolverError); None: not Clarabel,
        # or tolerances of the user's own
        self._own = None
        if inner == "CLARABEL" and not set(ClarabelSolver.DEFAULTS) & set(options):
            import clarabel

            own = clarabel.DefaultSettings()
            self._own = {**self._options,
                         **{key: getattr(own, key) for key in ClarabelSolver.DEFAULTS}}
        self._n, self._m = mpc.plant.n_states, mpc.plant.n_inputs
        self._R = mpc.plant.max_delay
        self._build(mpc)

    def _build(self, mpc: Any) -> None:
        cp = self._cp
        plant, N, w = mpc.plant, mpc.horizon, mpc.dead_steps
        n, m, R_max = self._n, self._m, self._R
        steps = w + N
        self._x_param = cp.Parameter(n, name="x_k")
        self.u = cp.Variable((m, N), name="u")
        self.x = cp.Variable((n, steps + 1), name="x")
        if R_max:
            self._history_param = cp.Parameter((m, R_max), name="u_history")
            u_all = cp.hstack([self._history_param, self.u])
        else:
            self._history_param = None
            u_all = self.u
        # Column c of u_all is u_{k - R + c}; step t uses u_{k+t-j} = column R + t - j.
        forcing = sum(plant.B_blocks[j] @ u_all[:, R_max - j:R_max - j + steps]
                      for j in range(w, R_max + 1))
        constraints = [self.x[:, 0] == self._x_param,
                       self.x[:, 1:] == plant.A_d @ self.x[:, :-1] + forcing]
        u_lo, u_hi = mpc._u_lo, mpc._u_hi
        # distant bounds' rows divided by their magnitude, as for Clarabel called directly
        # (DISTANT_BOUND_RATIO: through cvxpy too, a bound of 1e15 gave an 'optimal' move of 0)
        given = [b for b in (u_lo, u_hi, mpc._x_lo, mpc._x_hi) if b is not None]
        far = distant_bounds(np.concatenate(given)) if given else np.zeros(0, dtype=bool)
        self._far = iter(np.split(far, np.cumsum([b.size for b in given])[:-1]) if given
                         else [])
        constraints += _bounded_rows(self.u, u_lo, u_hi, far=self._far)
        window = self.x[:, w + 1:]  # x_{k+w+1} .. x_{k+w+N}
        # the bounded signals: the states, or an output model's outputs C x (in deviations)
        bounded = window if mpc._bound_matrix is None else mpc._bound_matrix @ window
        objective = cp.sum_squares(_factor(mpc.R) @ self.u)
        if N > 1:
            objective = objective + cp.sum_squares(_factor(mpc.Q) @ window[:, :-1])
        terminal = [self.x[:, steps]] + [u_all[:, R_max + N - 1 - i] for i in range(R_max - w)]
        terminal_state = cp.hstack(terminal) if len(terminal) > 1 else terminal[0]
        objective = objective + cp.sum_squares(_factor(mpc.terminal_weight) @ terminal_state)
        x_lo, x_hi = mpc._x_lo, mpc._x_hi
        if x_lo is not None or x_hi is not None:
            slack: Any = None
            if mpc.soft_state_constraints:
                slack = cp.Variable(bounded.shape, nonneg=True, name="state_slack")
                objective = objective + mpc.state_penalty * cp.sum(slack)
            constraints += _bounded_rows(bounded, x_lo, x_hi, slack, far=self._far)
        extension = getattr(mpc, "cvxpy_extension", None)
        if extension is not None:
            cost, more = _extension(extension, self.u, self.x)
            objective, constraints = objective + cost, constraints + more
        self.problem = cp.Problem(cp.Minimize(objective), constraints)
        if extension is not None and not self.problem.is_dcp():
            raise ParameterError("cvxpy_extension made the MPC problem non-convex (not DCP: "
                                 "cvxpy cannot solve it): its cost must be convex and its "
                                 "constraints convex (affine equalities, convex <= concave)")

    def solve(self, p: np.ndarray) -> QPOutcome:
        """Solve at ``p = [x_k, committed inputs (time-major)]``."""
        cp = self._cp
        self._x_param.value = p[:self._n]
        if self._history_param is not None:
            self._history_param.value = p[self._n:].reshape(self._R, self._m).T
        try:
            with warnings.catch_warnings():
                # cvxpy's generic "Solution may be inaccurate": the status says it
                warnings.filterwarnings("ignore", message="Solution may be inaccurate",
                                        category=UserWarning)
                try:
                    self.problem.solve(solver=self.inner, warm_start=self._warm,
                                       **self._options)
                except cp.error.SolverError:
                    if self._own is None:
                        raise
                    self.problem.solve(solver=self.inner, warm_start=self._warm,
                                       **self._own)
        except cp.error.SolverError as exc:
            raise SolverError(f"{self.inner} (through cvxpy) failed on the MPC problem: "
                              f"{exc}") from exc
        except TypeError as exc:    # Clarabel's answer to an unknown or mistyped setting
            raise ParameterError(f"{self.inner} refused solver_options {self._options}: "
                                 f"{exc}") from exc
        status = {cp.OPTIMAL: "optimal", cp.OPTIMAL_INACCURATE: "optimal_inaccurate",
                  cp.INFEASIBLE: "infeasible", cp.INFEASIBLE_INACCURATE: "infeasible",
                  cp.USER_LIMIT: "user_limit"}.get(self.problem.status,
                                                   f"error: status {self.problem.status!r}")
        stats = self.problem.solver_stats
        iterations, solver_time = stats.num_iters, stats.solve_time
        return QPOutcome(None, status, None if iterations is None else int(iterations),
                         None if solver_time is None else float(solver_time),
                         inputs=self.u.value, states=self.x.value,
                         cost=None if self.problem.value is None else float(self.problem.value))


def _extension(extension: Any, u: Any, x: Any) -> tuple[Any, list[Any]]:
    """``(cost, constraints)`` of the user's ``cvxpy_extension(u, x)``, checked."""
    import cvxpy as cp

    found = extension(u, x)
    if not (isinstance(found, tuple) and len(found) == 2):
        raise ParameterError(f"cvxpy_extension(u, x) must return (cost, constraints); got "
                             f"{type(found).__name__}")
    cost, more = found
    if isinstance(cost, (int, float)) and cost == 0:
        cost = 0.0
    elif not (isinstance(cost, cp.Expression) and cost.is_scalar()):
        raise ParameterError(f"cvxpy_extension's cost must be a scalar cvxpy expression or "
                             f"0; got {type(cost).__name__}")
    if not isinstance(more, (list, tuple)) or not all(
            isinstance(c, cp.constraints.constraint.Constraint) for c in more):
        raise ParameterError("cvxpy_extension's constraints must be a list of cvxpy "
                             "constraints (e.g. [u[:, 0] <= 0.5])")
    return cost, list(more)


def _bounded_rows(signals: Any, low: np.ndarray | None, high: np.ndarray | None,
                  slack: Any = None, *, far: Any) -> list[Any]:
    """``low <= signals <= high`` (shape (l, N), bounds (l,)), less ``slack`` of the same
    shape if given, on the channels whose side is finite: an infinite side is no bound (cvxpy
    would hand the infinity to the solver, which fails on it).  ``far`` yields, for each side
    given in turn, the mask of its distant bounds, whose rows are divided by their
    magnitude."""
    import cvxpy as cp

    rows = []
    ones = np.ones(signals.shape[1])
    for bound, sign in ((low, -1.0), (high, 1.0)):
        if bound is None:
            continue
        distant = next(far)
        kept = np.flatnonzero(np.isfinite(bound))
        if not kept.size:
            continue
        every = kept.size == bound.size    # (a plain expression keeps the problem small)
        part = signals if every else signals[kept, :]
        if slack is not None:
            part = part - sign * (slack if every else slack[kept, :])
        level = bound[kept]
        if distant.any():
            scale = np.where(distant[kept], 1.0 / np.abs(np.where(distant, bound, 1.0))[kept],
                             1.0)
            part, level = cp.multiply(np.outer(scale, ones), part), level * scale
        level = np.outer(level, ones)
        rows.append(part >= level if sign < 0 else part <= level)
    return rows


def _factor(weight: np.ndarray) -> np.ndarray:
    """Return L with L' L = weight (rows of zero eigenvalues dropped, at least one row)."""
    values, vectors = np.linalg.eigh(weight)
    keep = values > 1e-14 * max(1.0, float(values.max(initial=0.0)))
    if not np.any(keep):
        return np.zeros((1, weight.shape[0]))
    return np.sqrt(values[keep])[:, None] * vectors[:, keep].T
