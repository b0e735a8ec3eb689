"""QP solvers called directly on an :class:`~controllers.mpc_qp.MPCQuadraticProgram`.

Each solver is set up once with the QP's matrices (and factors them); a solve only updates the
vectors ``q``, ``lower`` and ``upper`` and re-solves, warm-started:

* :class:`DAQPSolver`: the dual active-set solver DAQP on the condensed QP, warm-started with the
  previous active set (kept in its workspace); the bounds on the inputs are simple bounds.  With
  input bounds alone, a step whose unconstrained minimizer keeps them needs no DAQP call;
* :class:`OSQPSolver`: OSQP (ADMM) on the sparse QP, with the previous primal and dual solution;
* :class:`ClarabelSolver`: Clarabel (interior point) on the sparse QP, data updated in place.

OSQP and Clarabel solve the sparse QP in equilibrated variables (:func:`equilibrate`) when its
scales spread beyond ``EQUILIBRATION_LEAST_SPREAD``: every variable and row divided by its own
scale (powers of two, from the constraint matrix), so that a plant whose states come in mixed
units (mm beside km) is solved as one in common units.

Every solver reports one of the statuses ``"optimal"``, ``"optimal_inaccurate"``,
``"infeasible"``, ``"user_limit"`` (iteration or time limit) or ``"error: <solver's word>"``,
so that :class:`controllers.DelayedMPC` checks them once.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from _toolbox.errors import ParameterError, SolverError
from controllers.mpc_qp import MPCQuadraticProgram

_LARGEST = sys.float_info.max
#: Largest soft-bound penalty Clarabel sees (_cost_scale)
_LARGEST_PENALTY = 1e6
#: A finite bound more than this many times the QP's smallest nonzero finite bound (and 1) is
#: distant (:func:`distant_bounds`): Clarabel's stopping tests scale with the largest entry of
#: its constraint vector, so one such bound loosened them for all (12 random plants, bounds 1
#: to 3 beside one far bound: first moves off by 1e-9 at 1e10, 1e-5 at 1e12, SolverError at
#: 1e14, and an 'optimal' first move of 0 where it was 0.067 at 1e15 and 1e20).  Clarabel
#: sees each distant bound's row divided by the bound's magnitude: the same problem (at 1e8,
#: not yet distant, cvxpy's Clarabel failed in 4 of the 12: hence 1e6).
DISTANT_BOUND_RATIO = 1e6

#: An entry of the sparse QP's constraint matrix below this many times its row's largest is
#: rounding to :func:`equilibrate` (left out of its scales)
NEGLIGIBLE_ENTRY = 1e-14
#: The solvers are given the equilibrated QP only when its scales spread beyond this (mixed
#: units: 256-4096 on random plants with states in units 1e-3, 1 and 1e3; in common units
#: the median 4, 99 % below 300).  Their own equilibration handles a small spread, and
#: rescaling by factors of 0.5-8 tipped hard problems in common units either way: of a
#: review's 57 soft-bound problems at scales up to 1e5 (soft penalties up to 7e8,
#: tests/controllers/test_mpc_soft_far.py), Clarabel went from Solved to AlmostSolved on two
#: (plans 1e-5 and 4e-4 off; within 1e-6 unscaled) and OSQP stopped at its iteration limit
#: on 5 instead of 1, while on 190 random problems OSQP stopped on 0 instead of 3.
EQUILIBRATION_LEAST_SPREAD = 64.0

__all__ = ["QP_SOLVERS", "ClarabelSolver", "DAQPSolver", "OSQPSolver", "QPOutcome",
           "condition_number", "distant_bounds", "equilibrate", "meets_bounds",
           "unreachable_rows"]


class QPOutcome(NamedTuple):
    """What a solve returned: ``v`` (``None`` unless a solution), status, statistics.

    A solver on another formulation (cvxpy) returns ``inputs`` (m, N), ``states`` and ``cost``
    directly instead of ``v``.  (A named tuple: built at every step, it costs a third of a
    frozen dataclass.)
    """

    v: np.ndarray | None
    status: str
    iterations: int | None
    solver_time: float | None
    inputs: np.ndarray | None = None
    states: np.ndarray | None = None
    cost: float | None = None


def condition_number(hessian: np.ndarray) -> float:
    """Estimated 1-norm condition number of a symmetric positive definite ``hessian`` from its
    Cholesky factor (LAPACK ``dpocon``: the factor's cost, no eigenvalues); ``inf`` when it
    is not numerically positive definite.

    Examples
    --------
    >>> round(condition_number(np.diag([1.0, 1e-6])))
    1000000
    >>> condition_number(np.diag([1.0, -1.0]))
    inf
    """
    try:
        factor, lower = scipy.linalg.cho_factor(hessian)
    except np.linalg.LinAlgError:
        return float("inf")
    rcond, info = scipy.linalg.lapack.dpocon(factor, np.linalg.norm(hessian, 1),
                                             uplo="L" if lower else "U")
    return float("inf") if info != 0 or not rcond > 0 else 1.0 / float(rcond)


def distant_bounds(bounds: np.ndarray) -> np.ndarray:
    """Mask of the finite entries of ``bounds`` beyond ``DISTANT_BOUND_RATIO`` times the
    smallest nonzero finite magnitude among them, clamped to ``[1, DISTANT_BOUND_RATIO]``
    (so beyond ``DISTANT_BOUND_RATIO ** 2`` always: every bound of 1e20 left Clarabel's first
    move 1e-4 off).

    Examples
    --------
    >>> distant_bounds(np.array([-1.0, 2.0, 1e15, -np.inf, 0.0])).tolist()
    [False, False, True, False, False]
    """
    size = np.abs(bounds)
    finite = np.isfinite(size)
    nonzero = size[finite & (size > 0)]
    scale = min(max(1.0, float(nonzero.min())), DISTANT_BOUND_RATIO) if nonzero.size else 1.0
    return finite & (size > DISTANT_BOUND_RATIO * scale)


def equilibrate(qp: MPCQuadraticProgram, least_spread: float = 1.0
                ) -> tuple[MPCQuadraticProgram, np.ndarray]:
    """``(scaled, d)``: the sparse ``qp`` in the variables ``z = v / d``, each row divided by
    its own scale, a signal's variables (rows) at every step sharing one (the QP's groups);
    ``qp`` itself (``d = 1``) when neither the variables' scales nor the rows' spread beyond
    ``least_spread`` (largest over smallest).

    The scales are Curtis and Reid's: those that bring the logarithms of the constraint
    matrix's nonzero magnitudes closest to zero in the least-squares sense (entries below
    ``NEGLIGIBLE_ENTRY`` times their row's largest, rounding, left out), rounded to powers of
    two so that scaling rounds nothing.  A solution ``z`` of ``scaled`` is ``v = d * z`` of
    ``qp`` (the same minimizer and cost).

    Why: the dynamics rows of a plant whose states come in mixed units (mm beside km) mix
    entries of 1e-6 .. 1e6, and the solvers' stopping tests, relative to the largest entries,
    left the small states with a relative accuracy of their tolerance times that spread: OSQP
    returned a first move of the wrong sign, 'solved' (its polish), and Clarabel one 1.6e-3
    off (random plants with states in units 1e-3, 1 and 1e3).  Scaled, the states are of one
    size, as the plant in common units would give them: on plants ``S A S^-1`` these scales
    are ``S`` to within a factor of 10 (the solvers' own equilibration, bounded to factors
    1e-4 .. 1e4 and Ruiz's largest-entry rule, stopped 1e4-1e5 short).  The constraint
    matrix, not the cost, sets them: the states' units show in the dynamics, whatever the
    weights.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers.mpc_qp import build_qp
    >>> s = np.array([1e3, 1e-3])                       # states in mm and km
    >>> A = np.array([[0.9, 0.1], [-0.2, 0.8]]) * s[:, None] / s
    >>> B = np.stack([np.zeros((2, 1)), s[:, None] * np.array([[1.0], [0.5]])])
    >>> plant = DelayedPlant(A, B, 1.0)
    >>> qp = build_qp(plant, dead_steps=1, horizon=3, Q=np.diag(s ** -2.0), R=np.eye(1),
    ...               terminal_weight=np.diag(s ** -2.0), u_bounds=(-np.ones(1), np.ones(1)),
    ...               x_bounds=(None, None), soft=False, state_penalty=1.0, sparse=True)
    >>> scaled, d = equilibrate(qp)
    >>> def spread(A):                   # largest over smallest nonzero entry
    ...     return float(abs(A).max() / abs(A[A.nonzero()]).min())
    >>> spread(qp.A) > 1e11, spread(scaled.A) < 100
    (True, True)
    >>> bool(np.all(np.log2(d) == np.round(np.log2(d))))    # powers of two
    True
    """
    A = sp.coo_matrix(qp.A)
    size = np.abs(A.data)
    row_max = np.zeros(A.shape[0])
    np.maximum.at(row_max, A.row, size)
    keep = size > NEGLIGIBLE_ENTRY * row_max[A.row]
    rows = qp.row_groups[A.row[keep]]
    n_rows, n_cols = qp.row_groups.max(initial=-1) + 1, qp.column_groups.max(initial=-1) + 1
    cols = n_rows + qp.column_groups[A.col[keep]]          # unknowns: row, then column logs
    log_size = np.log2(size[keep])
    # the normal equations of  min sum (log2|a| + rho_row + gamma_col)^2  (one equation per
    # entry, a signal's entries sharing their unknowns): a small dense system
    count = n_rows + n_cols
    normal = np.zeros((count, count))
    np.add.at(normal, (rows, cols), 1.0)
    normal += normal.T
    normal[np.diag_indices(count)] = np.bincount(rows, minlength=count) + np.bincount(
        cols, minlength=count)
    right = -(np.bincount(rows, log_size, minlength=count)
              + np.bincount(cols, log_size, minlength=count))
    # (singular: a common shift of the row logs against the column logs; the least-norm
    # solution, and zero for a group without entries)
    logs = np.linalg.lstsq(normal, right, rcond=None)[0]
    e = np.exp2(np.round(logs[:n_rows]))[qp.row_groups]
    d = np.exp2(np.round(logs[n_rows:]))[qp.column_groups]
    if d.max() / d.min() <= least_spread and e.max() / e.min() <= least_spread:
        return qp, np.ones(qp.n_variables)
    scaled_A = sp.diags(e) @ qp.A @ sp.diags(d)
    hessian = sp.diags(d) @ qp.hessian @ sp.diags(d)
    return dataclasses.replace(
        qp, hessian=sp.csc_matrix(hessian), q0=d * qp.q0, q_p=d[:, None] * qp.q_p,
        A=sp.csc_matrix(scaled_A), lower0=e * qp.lower0, lower_p=e[:, None] * qp.lower_p,
        upper0=e * qp.upper0, upper_p=e[:, None] * qp.upper_p), d


def _cost_scale(qp: MPCQuadraticProgram) -> float:
    """Divisor of Clarabel's objective that brings the soft-bound penalty (``q0``; zero without
    soft bounds) to at most ``_LARGEST_PENALTY``; the minimizer is the same.  Penalties of
    1e9-1e10 (soft bounds on signals of 1e5 with weights 1e3) made Clarabel report
    DualInfeasible; divided, the review's 58 soft-bound cases (/tmp/review-cp/soft.py 0 12) all
    solved within 5e-6 of the hard plan (a divisor to 1e3 left 5 off by up to 93 %, 3 of them
    under an 'optimal' status).  It relies on the default penalty staying within 1e2 of the
    cost's gradient (DelayedMPC._default_penalty): a penalty 1e9 times a unit Hessian,
    divided, came back 'optimal' 0.3-19 % off."""
    return max(1.0, float(np.abs(qp.q0).max(initial=0.0)) / _LARGEST_PENALTY)


def _check_options(solver: str, options: dict[str, Any], known: Any) -> None:
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ParameterError(f"solver_options {unknown} are not settings of {solver}; it "
                             f"accepts {sorted(known)}")


class DAQPSolver:
    """DAQP on the condensed QP (simple bounds first), warm-started with the last active set.

    Parameters
    ----------
    qp : MPCQuadraticProgram
        Condensed layout.
    options : dict
        DAQP settings (``daqp.Model().settings``: ``primal_tol``, ``iter_limit``, ...).
    warm_start : bool
        Start from the previous active set (else from the empty one).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers.mpc_qp import build_qp
    >>> plant = DelayedPlant(np.array([[0.9]]), np.array([[[0.0]], [[1.0]]]), 1.0)
    >>> qp = build_qp(plant, dead_steps=1, horizon=3, Q=np.eye(1), R=np.eye(1),
    ...               terminal_weight=np.eye(1), u_bounds=(-np.ones(1), np.ones(1)),
    ...               x_bounds=(None, None), soft=False, state_penalty=1.0, sparse=False)
    >>> outcome = DAQPSolver(qp, {}, warm_start=True).solve(np.array([5.0, 0.0]))
    >>> outcome.status, outcome.v.shape, bool(abs(outcome.v[0] + 1) < 1e-9)  # u >= -1 active
    ('optimal', (3,), True)
    """

    name = "DAQP"
    _STATUS = {1: "optimal", 2: "optimal", -1: "infeasible", -4: "user_limit"}

    def __init__(self, qp: MPCQuadraticProgram, options: dict[str, Any], *,
                 warm_start: bool) -> None:
        import daqp

        self._qp, self._warm = qp, warm_start
        self._model = daqp.Model()
        _check_options("DAQP", options, self._model.settings)
        self._rows = np.ascontiguousarray(qp.A[qp.n_simple:])
        lower, upper = qp.bounds(np.zeros(qp.q_p.shape[1]))
        flag, _ = self._model.setup(np.ascontiguousarray(qp.hessian), qp.q0.copy(), self._rows,
                                    upper, lower, np.zeros(len(lower), dtype=np.intc))
        if flag < 0:      # its next solve would raise a bare "Model has not been set up"
            raise SolverError(f"DAQP could not set up the condensed QP (exit flag {flag}; -5: "
                              f"its Hessian is not numerically positive definite): use "
                              f"solver='CLARABEL' (the sparse QP) or a shorter horizon")
        self._model.settings = {**self._model.settings, **options}
        self._cold = np.zeros(len(lower), dtype=np.intc)
        # the per-step work is one product: q and the bounds of the rows that depend on p
        # (the state rows; the simple bounds on the inputs are constant)
        self._lower, self._upper = lower, upper
        self._varying = np.flatnonzero(np.any(qp.lower_p != 0, axis=1)
                                       | np.any(qp.upper_p != 0, axis=1))
        self._affine = np.vstack([qp.q_p, qp.lower_p[self._varying], qp.upper_p[self._varying]])
        self._offset = np.concatenate([qp.q0, qp.lower0[self._varying],
                                       qp.upper0[self._varying]])
        self._offset_zero = not self._offset.any()     # no slack, no state bounds
        self._data = np.empty(len(self._offset))       # DAQP copies what update() is given
        self._free = self._free_solution(qp, lower, upper)
        self._inside = True      # whether to try the unconstrained minimizer first

    def _free_solution(self, qp: MPCQuadraticProgram, lower: np.ndarray, upper: np.ndarray
                       ) -> tuple[np.ndarray, float, float] | None:
        """``(K, low, high)``: with input bounds alone (no state rows, no slack) and ``H``
        positive definite, the unconstrained minimizer ``v = K p`` (``K = -H^-1 q_p``) solves
        the QP whenever ``low <= v <= high`` (the empty active set is optimal: what DAQP
        would return, to rounding), so such a step needs no DAQP call; None otherwise (also
        for per-input limits: their test would cost about what it saves)."""
        if len(lower) != qp.n_simple or self._varying.size or qp.q0.any():
            return None
        low, high = lower[0], upper[0]
        if not ((lower == low).all() and (upper == high).all()):
            return None
        try:
            factor = scipy.linalg.cho_factor(qp.hessian)
        except np.linalg.LinAlgError:
            return None
        gain = -scipy.linalg.cho_solve(factor, qp.q_p)
        if not np.isfinite(gain).all():
            return None
        # an infinite limit as the largest float: an infinite v fails the test
        return (np.ascontiguousarray(gain), max(float(low), -_LARGEST),
                min(float(high), _LARGEST))

    def solve(self, p: np.ndarray) -> QPOutcome:
        """Solve at parameter ``p`` (``[x_k, committed inputs]``).

        A step whose unconstrained minimizer keeps the input bounds returns it without
        calling DAQP (``iterations`` 0, ``solver_time`` None; :meth:`_free_solution`).
        """
        free = self._free
        if free is not None and self._inside:     # (tried while the last step had no bound
            v = free[0] @ p                        # active: a fresh array, the result keeps it)
            if v[v.argmin()] >= free[1] and v[v.argmax()] <= free[2]:     # (NaN fails both)
                return QPOutcome(v, "optimal", 0, None)
        data = np.dot(self._affine, p, out=self._data)
        if not self._offset_zero:
            data += self._offset
        if self._varying.size:
            n_v, n_rows = len(self._qp.q0), len(self._varying)
            self._lower[self._varying] = data[n_v:n_v + n_rows]
            self._upper[self._varying] = data[n_v + n_rows:]
            self._model.update(f=data[:n_v], bupper=self._upper, blower=self._lower)
        else:                           # input bounds only: the vector f is all that changes
            self._model.update(f=data)
        if not self._warm:
            self._model.update(sense=self._cold)
        v, _, flag, info = self._model.solve()
        if free is not None and flag == 1:    # try the shortcut next step if no bound is active
            self._inside = bool(v[v.argmin()] > free[1] and v[v.argmax()] < free[2])
        status = "optimal" if flag == 1 else self._STATUS.get(int(flag),
                                                               f"error: DAQP exit flag {flag}")
        return QPOutcome(v if status == "optimal" else None, status, info["iterations"],
                         info["solve_time"])


class OSQPSolver:
    """OSQP on the sparse QP, set up once, warm-started with the previous solution.

    Parameters
    ----------
    qp : MPCQuadraticProgram
        Sparse layout (solved in the variables of :func:`equilibrate` when their scales
        spread beyond ``EQUILIBRATION_LEAST_SPREAD``).
    options : dict
        OSQP settings (defaults: ``eps_abs = eps_rel = 1e-8``, ``polishing=True``,
        ``max_iter=20000``: input bounds hold to ~1e-9 instead of OSQP's default 1e-5;
        ``polish_refine_iter=10``: OSQP's 3 left a polish failing and a soft-bound move 1.4e-4
        off, and 10 cost about 10 % of a step: the benchmark plant, N = 20 and 200, 1.5 ->
        1.65 ms and 8.8 -> 9.8 ms, the residual check 3 %).
    warm_start : bool
        Start from the previous primal and dual solution.

    Notes
    -----
    A polished solution is accepted only within OSQP's own tolerances (:meth:`_within`):
    OSQP keeps a polish that lowers its residuals even when they stay above them, and
    returned such a plan as solved (a mixed-unit plant before :func:`equilibrate`: a first
    move of the wrong sign, dual residual 4.5e-4 against a tolerance of 1e-4); the step is
    then solved again without polishing.
    """

    name = "OSQP"
    DEFAULTS = {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iter": 20000, "polishing": True,
                "polish_refine_iter": 10}

    def __init__(self, qp: MPCQuadraticProgram, options: dict[str, Any], *,
                 warm_start: bool) -> None:
        import osqp

        self._qp, self._d = equilibrate(qp, EQUILIBRATION_LEAST_SPREAD)
        qp = self._qp
        self._solver = osqp.OSQP()
        settings = {**self.DEFAULTS, "verbose": False, "warm_starting": warm_start, **options}
        self._eps = (float(settings.get("eps_abs", 0.0)), float(settings.get("eps_rel", 0.0)))
        self._polishing = bool(settings.get("polishing", False))
        lower, upper = qp.bounds(np.zeros(qp.q_p.shape[1]))
        try:
            self._solver.setup(P=sp.triu(qp.hessian, format="csc"), q=qp.q0, A=qp.A,
                               l=lower, u=upper, **settings)
        except (TypeError, ValueError) as exc:      # OSQP checks its settings' names
            raise ParameterError(f"OSQP refused solver_options {options}: {exc}") from exc

    def solve(self, p: np.ndarray) -> QPOutcome:
        """Solve at parameter ``p``."""
        lower, upper = self._qp.bounds(p)
        q = self._qp.cost_vector(p)
        self._solver.update(q=q, l=lower, u=upper)
        result = self._solver.solve(raise_error=False)
        iterations = int(result.info.iter)
        if (self._polishing and result.info.status_polish == 1
                and not self._within(result, q, lower, upper)):
            self._solver.update_settings(polishing=False)
            try:
                result = self._solver.solve(raise_error=False)
            finally:
                self._solver.update_settings(polishing=True)
            iterations += int(result.info.iter)
        word = str(result.info.status).lower()
        if word == "solved":
            status = "optimal"
        elif word == "solved inaccurate":
            status = "optimal_inaccurate"
        elif "primal infeasible" in word:
            status = "infeasible"
        elif "maximum iterations" in word or "time limit" in word:
            status = "user_limit"
        else:
            status = f"error: OSQP status {result.info.status!r}"
        solution = self._d * result.x if status.startswith("optimal") else None
        return QPOutcome(solution, status, iterations, float(result.info.run_time))

    def _within(self, result: Any, q: np.ndarray, lower: np.ndarray, upper: np.ndarray
                ) -> bool:
        """Whether ``result``'s residuals meet OSQP's stopping test (``eps_abs + eps_rel``
        times the largest of the terms it compares, unscaled)."""
        qp, x, y = self._qp, result.x, result.y
        eps_abs, eps_rel = self._eps
        Ax = qp.A @ x
        primal = eps_abs + eps_rel * max(np.abs(Ax).max(initial=0.0),
                                         np.abs(np.clip(Ax, lower, upper)).max(initial=0.0))
        dual = eps_abs + eps_rel * max(np.abs(qp.hessian @ x).max(initial=0.0),
                                       np.abs(qp.A.T @ y).max(initial=0.0),
                                       np.abs(q).max(initial=0.0))
        return bool(result.info.prim_res <= primal and result.info.dual_res <= dual)


class ClarabelSolver:
    """Clarabel on the sparse QP, set up once; each solve updates ``q`` and ``b`` in place.

    Parameters
    ----------
    qp : MPCQuadraticProgram
        Sparse layout (solved in the variables of :func:`equilibrate` when their scales
        spread beyond ``EQUILIBRATION_LEAST_SPREAD``).
    options : dict
        Clarabel settings (``clarabel.DefaultSettings`` attributes; defaults ``tol_gap_abs =
        tol_gap_rel = tol_feas = 1e-10``, and a step on which they stall solved again at
        Clarabel's own, ``RETRIED``, unless these are given); presolve is disabled so that
        the data can be updated.
    warm_start : bool
        Unused (an interior-point method starts from its own central point).
    """

    name = "CLARABEL"
    #: Clarabel's own 1e-8 left soft-bound first moves up to 7e-5 off DAQP's (the penalty's
    #: share of the cost); these: 1.2e-6 -> 1.2e-8 on 31 random problems, 11 % more
    #: iterations
    DEFAULTS = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}
    #: Statuses after which a step is solved again at Clarabel's own tolerances when
    #: DEFAULTS were in use: its progress test stops a solve whose residuals jump 100x above
    #: tol_feas, so the tighter one stopped solves that its own finishes (a review's 80 random
    #: problems: 2 'InsufficientProgress' directly, 3 failures through cvxpy, each solved at
    #: Clarabel's 1e-8 to within 1e-10 of an independent MPC written in cvxpy)
    RETRIED = ("InsufficientProgress",)

    def __init__(self, qp: MPCQuadraticProgram, options: dict[str, Any], *,
                 warm_start: bool) -> None:
        import clarabel

        self._qp, self._d = equilibrate(qp, EQUILIBRATION_LEAST_SPREAD)
        qp = self._qp
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        settings.presolve_enable = False
        known = [name for name in dir(settings) if not name.startswith("_")]
        _check_options("CLARABEL", options, known)
        # Clarabel's own tolerances, to solve again at (RETRIED); None: the user set them
        self._own = (None if set(self.DEFAULTS) & set(options) else
                     {key: getattr(settings, key) for key in self.DEFAULTS})
        for key, value in {**self.DEFAULTS, **options}.items():
            try:
                setattr(settings, key, value)
            except (TypeError, ValueError) as exc:
                raise ParameterError(f"CLARABEL refused solver_options {{{key!r}: "
                                     f"{value!r}}}: {exc}") from exc
        self._settings = settings
        # l <= A v <= u as cones: equalities (zero cone), then finite upper and lower sides
        lower, upper = qp.bounds(np.zeros(qp.q_p.shape[1]))
        self._equal = np.flatnonzero(lower == upper)
        self._upper = np.flatnonzero((lower != upper) & np.isfinite(upper))
        self._lower = np.flatnonzero((lower != upper) & np.isfinite(lower))
        A = sp.csr_matrix(qp.A)
        # a distant bound's row divided by its magnitude (DISTANT_BOUND_RATIO), else 1
        sides = np.concatenate([upper[self._upper], lower[self._lower]])
        far = distant_bounds(sides)
        self._row_scale = (np.where(far, 1.0 / np.where(far, np.abs(sides), 1.0), 1.0)
                           if far.any() else None)
        stacked = sp.vstack([A[self._upper], -A[self._lower]])
        if self._row_scale is not None:
            stacked = sp.diags(self._row_scale) @ stacked
        stacked = sp.vstack([A[self._equal], stacked], format="csc")
        cones = [clarabel.ZeroConeT(len(self._equal)),
                 clarabel.NonnegativeConeT(len(self._upper) + len(self._lower))]
        self._scale = _cost_scale(qp)     # only v is used: the cost is evaluated from it
        self._solver = clarabel.DefaultSolver(sp.triu(qp.hessian, format="csc") / self._scale,
                                              qp.q0 / self._scale, stacked,
                                              self._b(lower, upper), cones, settings)

    def _b(self, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
        b = np.concatenate([upper[self._equal], upper[self._upper], -lower[self._lower]])
        if self._row_scale is not None:
            b[len(self._equal):] *= self._row_scale
        return b

    def solve(self, p: np.ndarray) -> QPOutcome:
        """Solve at parameter ``p``."""
        lower, upper = self._qp.bounds(p)
        b = self._b(lower, upper)
        # Solved in v / size, size the constraint vector's largest entry (so the objective
        # over size^2: q / size, the same H): the same minimizer.  Unscaled, a plan riding a
        # state bound at 1e4 with R = 1e3 (multipliers of 1e7) was reported PrimalInfeasible
        # (a 2-state plant, x_0 = 3e4, x_max = 2e4; DAQP and OSQP solved it)
        size = max(1.0, float(np.abs(b[:len(self._equal)]).max(initial=0.0)))
        self._solver.update(q=self._qp.cost_vector(p) / (self._scale * size), b=b / size)
        start = time.perf_counter()
        solution = self._solver.solve()
        word = str(solution.status)
        stalled = 0         # the iterations of a stalled first solve count too
        if word in self.RETRIED and self._own is not None:
            stalled = int(solution.iterations)
            solution = self._solve_at_own_tolerances()
            word = str(solution.status)
        elapsed = time.perf_counter() - start
        status = {"Solved": "optimal", "AlmostSolved": "optimal_inaccurate",
                  "PrimalInfeasible": "infeasible", "AlmostPrimalInfeasible": "infeasible",
                  "MaxIterations": "user_limit", "MaxTime": "user_limit"}.get(
                      word, f"error: Clarabel status {word!r}")
        v = (size * self._d) * np.array(solution.x) if status.startswith("optimal") else None
        return QPOutcome(v, status, stalled + int(solution.iterations), elapsed)

    def _solve_at_own_tolerances(self) -> Any:
        """The current data solved again at Clarabel's own tolerances (then DEFAULTS again)."""
        own = self._solver.get_settings()
        for key, value in self._own.items():
            setattr(own, key, value)
        self._solver.update(settings=own)
        try:
            return self._solver.solve()
        finally:
            self._solver.update(settings=self._settings)


#: Solver name -> (class, layout is sparse).
QP_SOLVERS: dict[str, tuple[type, bool]] = {"DAQP": (DAQPSolver, False),
                                            "OSQP": (OSQPSolver, True),
                                            "CLARABEL": (ClarabelSolver, True)}


def unreachable_rows(qp: MPCQuadraticProgram, p: np.ndarray
                     ) -> tuple[int, float, float, float] | None:
    """The first state-bound row an infeasible condensed QP misses, or ``None``.

    DAQP solves the QP with the state rows soft (violations penalized, the simple bounds on
    the inputs kept hard); the first row (in time order) whose value lies outside its bounds
    is returned as ``(row within the state rows, its state's value, lower, upper)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers.mpc_qp import build_qp
    >>> plant = DelayedPlant(np.array([[0.9]]), np.array([[[0.0]], [[1.0]]]), 1.0)
    >>> qp = build_qp(plant, dead_steps=1, horizon=3, Q=np.eye(1), R=np.eye(1),
    ...               terminal_weight=np.eye(1), u_bounds=(-np.ones(1), np.ones(1)),
    ...               x_bounds=(-np.ones(1), np.ones(1)), soft=False, state_penalty=1.0,
    ...               sparse=False)
    >>> row, value, lower, upper = unreachable_rows(qp, np.array([5.0, 0.0]))
    >>> row, bool(value > upper)
    (0, True)
    """
    found = _condensed_rows(qp, p, soft=True)
    if found is None:
        return None
    missed = np.flatnonzero(found[1])
    if not missed.size:
        return None
    values, _, lo, hi = found
    row = int(missed[0])
    return row, float(values[row]), float(lo[row]), float(hi[row])


def meets_bounds(qp: MPCQuadraticProgram, p: np.ndarray) -> bool:
    """Whether DAQP finds inputs on the condensed QP (every row hard) whose states meet every
    state-bound row to 1e-6 of the bound (and 1): a checked plan, so the problem at ``p`` is
    feasible whatever another solver reported.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from controllers.mpc_qp import build_qp
    >>> plant = DelayedPlant(np.array([[0.9]]), np.array([[[0.0]], [[1.0]]]), 1.0)
    >>> qp = build_qp(plant, dead_steps=1, horizon=3, Q=np.eye(1), R=np.eye(1),
    ...               terminal_weight=np.eye(1), u_bounds=(-np.ones(1), np.ones(1)),
    ...               x_bounds=(-np.ones(1), np.ones(1)), soft=False, state_penalty=1.0,
    ...               sparse=False)
    >>> meets_bounds(qp, np.array([0.5, 0.0])), meets_bounds(qp, np.array([5.0, 0.0]))
    (True, False)
    """
    found = _condensed_rows(qp, p, soft=False)
    return found is not None and not found[1].any()


def _condensed_rows(qp: MPCQuadraticProgram, p: np.ndarray, *, soft: bool
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``(values, outside, lower, upper)`` of the state-bound rows at DAQP's inputs on the
    condensed QP (the state rows soft, or hard), ``outside`` those beyond a bound by more
    than 1e-6 of it (and 1); None when DAQP finds no solution."""
    import daqp

    lower, upper = qp.bounds(p)
    sense = np.zeros(len(lower), dtype=np.intc)
    if soft:
        sense[qp.state_rows] = 8                                 # DAQP's "soft" flag
    v, _, flag, _ = daqp.solve(np.ascontiguousarray(qp.hessian), qp.cost_vector(p),
                               np.ascontiguousarray(qp.A[qp.n_simple:]), upper, lower, sense)
    if int(flag) not in (1, 2):
        return None
    rows = qp.state_rows
    values = qp.A[rows] @ v - qp.lower_p[rows] @ p      # the states (rows: C_v v + C_p p)
    lo, hi = qp.lower0[rows], qp.upper0[rows]
    scale = np.maximum(1.0, np.maximum(np.abs(np.where(np.isfinite(lo), lo, 0.0)),
                                       np.abs(np.where(np.isfinite(hi), hi, 0.0))))
    outside = (values < lo - 1e-6 * scale) | (values > hi + 1e-6 * scale)
    return values, outside, lo, hi
