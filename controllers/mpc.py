"""Model predictive control through an identified input delay (problem / solve / result split).

The plant is the delayed model of dissertation eq. (9.21)/(9.65),

    x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j},

so at time k the inputs u_{k-1} .. u_{k-R} that the controller has already sent are still
travelling through the delay.  :class:`DelayedMPC` predicts *through* the delay: those committed
inputs enter the prediction as parameters, the decisions are u_k .. u_{k+N-1}, and every block
B^(j) is used.  With a whole delay of ``w`` periods (the leading ``w`` blocks are zero) the states
x_{k+1} .. x_{k+w} are fixed by the past, so the cost is put on the states the decisions can move,
x_{k+w+1} .. x_{k+w+N}.

The cvxpy problem is built once, with ``cp.Parameter`` objects for x_k and the input history, and
is DPP-compliant, so each step only updates two parameter values and re-solves (warm-started).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.linalg

from _toolbox.errors import DimensionError, ParameterError, SolverError
from _toolbox.validation import (
    check_finite_array,
    check_integer,
    check_positive,
    check_scalar_or_vector,
    read_only,
)
from controllers.gains import check_weight
from dmdidc.model import DelayedPlant, as_plant

__all__ = ["DelayedMPC", "MPCResult"]

#: Largest violation of an input bound (absolute, in input units, scaled by ``max(1, |bound|)``)
#: accepted from the solver.  Inputs are never clipped: a larger violation raises SolverError.
INPUT_BOUND_TOLERANCE = 1e-6

_SOLVERS = ("CLARABEL", "OSQP")
_DEFAULT_STATE_PENALTY = 1e4
_INACCURATE_POLICIES = ("warn", "raise", "accept")
#: Default solver settings (overridable with ``solver_options``).  OSQP is asked for tight
#: tolerances and solution polishing on every solve (cvxpy only polishes warm re-solves when the
#: matrices change), so that input bounds hold to ~1e-9 instead of OSQP's default 1e-5.
#: Clarabel's presolve is disabled because cvxpy can only reuse (update) a Clarabel solver
#: without presolve.
_DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "OSQP": {"eps_abs": 1e-8, "eps_rel": 1e-8, "max_iter": 20000, "polishing": True},
    "CLARABEL": {"presolve_enable": False},
}



@dataclass(frozen=True)
class MPCResult:
    """Outcome of one MPC solve (immutable; arrays are read-only).

    Attributes
    ----------
    inputs : ndarray, shape (m, N)
        Optimal input sequence ``u_k .. u_{k+N-1}``; ``inputs[:, 0]`` is the move to apply.
    states : ndarray, shape (n, w + N + 1)
        Predicted states ``x_k .. x_{k+w+N}``; the first ``w + 1`` columns are fixed by ``x_k``
        and the committed inputs.
    cost : float
        Optimal value of the objective (see :class:`DelayedMPC`), including any soft-constraint
        penalty.
    status : str
        cvxpy status: ``"optimal"`` or ``"optimal_inaccurate"`` (other statuses raise).
    solve_time : float
        Wall-clock seconds of the whole ``Problem.solve`` call (parameter update, cvxpy's cached
        re-canonicalization and the solver).
    solver_time : float or None
        Seconds reported by the solver itself, when it reports them.
    iterations : int or None
        Solver iterations, when reported.
    solver : str
        ``"CLARABEL"`` or ``"OSQP"``.
    dead_steps : int
        Whole delay ``w`` (periods) used by the prediction.
    """

    inputs: np.ndarray
    states: np.ndarray
    cost: float
    status: str
    solve_time: float
    solver_time: float | None
    iterations: int | None
    solver: str
    dead_steps: int

    @property
    def first_input(self) -> np.ndarray:
        """The move to apply now, ``u_k``, shape (m,)."""
        return self.inputs[:, 0].copy()

    @property
    def success(self) -> bool:
        """True when the solver reported ``optimal`` (not ``optimal_inaccurate``)."""
        return self.status == cp.OPTIMAL


class DelayedMPC:
    """Linear MPC for a plant with (fractional, per-channel) input delay.

    At time ``k``, with ``w`` the whole delay (the first active input block of any channel, from
    the model's :attr:`~dmdidc.DelayedPlant.active_blocks`) and ``N``
    the horizon, the controller solves

        minimize    sum_{i=1}^{N-1} x_{k+w+i}' Q x_{k+w+i} + sum_{i=0}^{N-1} u_{k+i}' R u_{k+i}
                    + z_N' P z_N  (+ state_penalty * total slack, if soft)
        subject to  x_{t+1} = A_d x_t + sum_j B^(j) u_{t-j}        (eq. 9.21 / 9.65)
                    x_k given, u_{k-1} .. u_{k-R} given (committed)
                    u_min <= u_{k+i} <= u_max,                        i = 0 .. N-1
                    x_min <= x_{k+w+i} <= x_max,                      i = 1 .. N

    with the terminal lifted state ``z_N = [x_{k+w+N}, u_{k+N-1}, ..., u_{k+N-R+w}]`` (the state of
    the delay-free realization of the plant advanced by ``w`` steps).  States ``x_{k+1} ..
    x_{k+w}`` do not depend on any decision, so they carry no cost and no constraint (a bound
    on them could only make the problem infeasible); they are returned in
    :attr:`MPCResult.states` so callers can inspect them.

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
        The (identified) delayed plant; anything :func:`dmdidc.as_plant` accepts.  With an
        operating point the problem is posed in deviations from it (the cost regulates the
        plant to it); states, inputs and bounds stay in the model's physical units.
    horizon : int
        Number ``N >= 1`` of decision moves.
    Q : float, array_like of shape (n,) or (n, n), optional
        State weight (scalar times identity, diagonal, or full symmetric PSD); default identity.
    R : float, array_like of shape (m,) or (m, m), optional
        Input weight, symmetric positive definite; default identity.
    P : array_like of shape (n, n) or (n + m (R - w), n + m (R - w)), optional
        Terminal weight on ``x_{k+w+N}`` alone, or on the lifted terminal state ``z_N``.  Default:
        the solution of the discrete algebraic Riccati equation of the lifted delay-free pair
        (so that, without active constraints, the first move is the infinite-horizon LQ move);
        if that DARE has no stabilizing solution a ``RuntimeWarning`` is issued and ``P = Q`` on
        ``x_{k+w+N}`` is used.
    u_min, u_max : float or array_like of shape (m,), optional
        Finite input bounds (hard).  ``None`` means unbounded.
    x_min, x_max : float or array_like of shape (n,), optional
        Finite state bounds on ``x_{k+w+1} .. x_{k+w+N}``; hard unless
        ``soft_state_constraints``.
    soft_state_constraints : bool, default False
        Replace the hard state bounds by an exact L1 penalty ``state_penalty * sum(slack)``; the
        problem is then always feasible.  Needs state bounds.
    state_penalty : float, optional
        Weight of the slack penalty (default 1e4; only with ``soft_state_constraints``); it must
        exceed the constraint multipliers for the soft bounds to be met whenever the hard ones
        can be.
    solver : {"CLARABEL", "OSQP"}, default "CLARABEL"
        QP solver called through cvxpy.
    warm_start : bool, default True
        Re-use the solver (and, for OSQP, the previous primal/dual solution) between solves.
    inaccurate : {"warn", "raise", "accept"}, default "warn"
        What to do on cvxpy status ``optimal_inaccurate`` (the solver stopped at reduced
        accuracy): return the solution with a ``RuntimeWarning``, raise :class:`SolverError`,
        or return it silently.  The result's ``status`` always records it, and the input
        bounds are checked in every case.  Every other non-optimal status (infeasible,
        unbounded, ``user_limit``, solver error) raises :class:`SolverError`.
    solver_options : dict, optional
        Extra keyword arguments for ``Problem.solve`` (override the defaults: OSQP
        ``eps_abs = eps_rel = 1e-8, polishing=True``; Clarabel ``presolve_enable=False``).

    Attributes
    ----------
    plant : DelayedPlant
    Q, R : ndarray
        The weights in use, shapes (n, n) and (m, m), read-only.
    u_min, u_max, x_min, x_max : ndarray or None
        The bounds in use, shapes (m,) and (n,), read-only.
    dead_steps : int
        Whole delay ``w``: the number of leading input blocks that act through no channel
        (``min`` of the model's ``delay_steps`` over the channels that act).
    terminal_weight : ndarray, shape (n + m (R - w), n + m (R - w))
        The terminal weight ``P`` in use (on the lifted terminal state).
    problem : cvxpy.Problem
        The parametrized problem, built once.
    history : ndarray, shape (m, R)
        Inputs sent so far that still act on the plant, oldest first (``u_{k-R} .. u_{k-1}``).
    last_result : MPCResult or None
        Result of the latest ``__call__`` (``None`` after construction or :meth:`reset`).

    Raises
    ------
    ParameterError
        Bad horizon, weights, solver name or policy; ``u_min > u_max`` or ``x_min > x_max``
        (names the channel); a plant whose input blocks are all zero; soft constraints without
        state bounds, or a ``state_penalty`` without soft constraints.
    DimensionError
        Wrong shapes.
    NonFiniteError
        Non-finite weights or bounds.

    Notes
    -----
    The dynamics are imposed as equality constraints on a state variable (sparse, the standard
    QP form), with ``x_k`` and the input history as ``cp.Parameter``; the problem satisfies
    ``problem.is_dcp(dpp=True)``, so cvxpy caches its parameter-to-data map after the first
    solve.  An identified model (:class:`dmdidc.DMDidc`) has exact zeros in the blocks its
    estimator found inactive, so ``w`` is the identified whole delay even on noisy data.

    References
    ----------
    Dissertation eqs. (9.12)-(9.14) (predictive feedback), (9.21), (9.62)-(9.65).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous(np.array([[0, 1.1], [-1.1, 0]]),
    ...                                      np.array([[1, -1], [-1, 2.0]]), delay=3.0, dt=2.0)
    >>> mpc = DelayedMPC(plant, horizon=10, u_min=-1, u_max=1)
    >>> mpc.dead_steps
    1
    >>> x, past = np.array([1.0, -0.5]), np.zeros((2, plant.max_delay))
    >>> for _ in range(30):
    ...     u = mpc(x)
    ...     x = plant.simulate(x, u[:, None], past)[:, -1]
    ...     past = np.concatenate([past[:, 1:], u[:, None]], axis=1)
    >>> bool(np.linalg.norm(x) < 1e-3)
    True
    >>> result = mpc.solve(np.array([0.5, 0.0]), np.zeros((2, 2)))
    >>> result.inputs.shape, result.states.shape, result.status
    ((2, 10), (2, 12), 'optimal')
    """

    def __init__(self, model: Any, *, horizon: int, Q: Any = None, R: Any = None, P: Any = None,
                 u_min: Any = None, u_max: Any = None, x_min: Any = None, x_max: Any = None,
                 soft_state_constraints: bool = False, state_penalty: float | None = None,
                 solver: str = "CLARABEL", warm_start: bool = True, inaccurate: str = "warn",
                 solver_options: dict[str, Any] | None = None) -> None:
        plant = as_plant(model)
        #: The model's operating point: the problem is posed in deviations from it, and
        #: ``solve`` / ``__call__`` / the bounds are in the model's physical units.
        self.operating_point = plant.operating_point
        plant = plant.deviation_model()
        self.plant: DelayedPlant = plant
        n, m, R_max = plant.n_states, plant.n_inputs, plant.max_delay
        self.horizon = check_integer("horizon", horizon, minimum=1)
        self.dead_steps = _dead_steps(plant)
        # Read-only: the problem is built from these once, so changing them later would lie.
        self.Q = read_only(check_weight("Q", Q, n, definite=False))
        self.R = read_only(check_weight("R", R, m, definite=True))
        self.u_min, self.u_max = (read_only(b) for b in _bounds("u", u_min, u_max, m))
        self.x_min, self.x_max = (read_only(b) for b in _bounds("x", x_min, x_max, n))
        op = self.operating_point
        u_op, x_op = (np.zeros(m), np.zeros(n)) if op is None else (op.input, op.state)
        self._u_lo, self._u_hi = (None if b is None else b - u_op for b in (self.u_min,
                                                                             self.u_max))
        self._x_lo, self._x_hi = (None if b is None else b - x_op for b in (self.x_min,
                                                                             self.x_max))
        if not isinstance(soft_state_constraints, (bool, np.bool_)):
            raise ParameterError(f"soft_state_constraints must be a bool; got "
                                 f"{soft_state_constraints!r}")
        self.soft_state_constraints = bool(soft_state_constraints)
        if soft_state_constraints and x_min is None and x_max is None:
            raise ParameterError("soft_state_constraints needs state bounds (x_min and/or "
                                 "x_max) to soften")
        if state_penalty is not None and not soft_state_constraints:
            raise ParameterError("state_penalty weighs the slack of soft_state_constraints; "
                                 "set soft_state_constraints=True or leave it out")
        self.state_penalty = check_positive("state_penalty", _DEFAULT_STATE_PENALTY
                                            if state_penalty is None else state_penalty)
        if not isinstance(solver, str) or solver.upper() not in _SOLVERS:
            raise ParameterError(f"solver must be one of {_SOLVERS}; got {solver!r}")
        self.solver = solver.upper()
        if self.solver not in cp.installed_solvers():
            raise ParameterError(f"solver {self.solver!r} is not installed; cvxpy has "
                                 f"{cp.installed_solvers()}")
        if not isinstance(warm_start, (bool, np.bool_)):
            raise ParameterError(f"warm_start must be a bool; got {warm_start!r}")
        self.warm_start = bool(warm_start)
        if inaccurate not in _INACCURATE_POLICIES:
            raise ParameterError(f"inaccurate must be one of {_INACCURATE_POLICIES}; got "
                                 f"{inaccurate!r}")
        self.inaccurate = inaccurate
        if solver_options is not None and not isinstance(solver_options, dict):
            raise ParameterError(f"solver_options must be a dict or None; got "
                                 f"{type(solver_options).__name__}")
        self.solver_options = {**_DEFAULT_OPTIONS[self.solver], **(solver_options or {})}

        w = self.dead_steps
        reduced = DelayedPlant(plant.A_d, plant.B_blocks[w:], plant.dt)
        self._F, self._G = reduced.lifted_matrices()
        self.terminal_weight = read_only(self._terminal_weight(P, n))
        self._n, self._m, self._R = n, m, R_max
        self._build()
        self.reset()

    # ------------------------------------------------------------------ set-up
    def _terminal_weight(self, P: Any, n: int) -> np.ndarray:
        size = self._F.shape[0]
        if P is not None:
            P = check_finite_array("P", P, ndim=2)
            if P.shape == (n, n) and size != n:
                padded = np.zeros((size, size))
                padded[:n, :n] = P
                P = padded
            if P.shape != (size, size):
                raise DimensionError(f"P has shape {P.shape}; expected {(n, n)} (on "
                                     f"x_{{k+w+N}}) or {(size, size)} (on the lifted state)")
            return check_weight("P", P, size, definite=False)
        Q_lifted = np.zeros((size, size))
        Q_lifted[:n, :n] = self.Q
        try:
            P = scipy.linalg.solve_discrete_are(self._F, self._G, Q_lifted, self.R)
            if not np.all(np.isfinite(P)):
                raise np.linalg.LinAlgError("non-finite Riccati solution")
        except (np.linalg.LinAlgError, ValueError) as exc:
            warnings.warn(f"the Riccati equation of the lifted delay-free pair has no "
                          f"stabilizing solution ({exc}); using P = Q on x_{{k+w+N}} as the "
                          f"terminal weight", RuntimeWarning, stacklevel=3)
            return Q_lifted
        return 0.5 * (P + P.T)

    def _build(self) -> None:
        n, m, R_max, N, w = self._n, self._m, self.plant.max_delay, self.horizon, self.dead_steps
        steps = w + N
        self._x_param = cp.Parameter(n, name="x_k")
        self._u = cp.Variable((m, N), name="u")
        self._x = cp.Variable((n, steps + 1), name="x")
        if R_max:
            self._history_param = cp.Parameter((m, R_max), name="u_history")
            u_all = cp.hstack([self._history_param, self._u])
        else:
            self._history_param = None
            u_all = self._u
        # Column c of u_all is u_{k - R + c}; step t uses u_{k+t-j} = column R + t - j.
        forcing = sum(self.plant.B_blocks[j] @ u_all[:, R_max - j:R_max - j + steps]
                      for j in range(w, R_max + 1))
        constraints = [self._x[:, 0] == self._x_param,
                       self._x[:, 1:] == self.plant.A_d @ self._x[:, :-1] + forcing]
        if self._u_lo is not None:
            constraints.append(self._u >= np.outer(self._u_lo, np.ones(N)))
        if self._u_hi is not None:
            constraints.append(self._u <= np.outer(self._u_hi, np.ones(N)))

        window = self._x[:, w + 1:]  # x_{k+w+1} .. x_{k+w+N}
        objective = cp.sum_squares(_factor(self.R) @ self._u)
        if N > 1:
            objective = objective + cp.sum_squares(_factor(self.Q) @ window[:, :-1])
        reduced_delay = R_max - w
        terminal = [self._x[:, steps]] + [u_all[:, R_max + N - 1 - i]
                                          for i in range(reduced_delay)]
        terminal_state = cp.hstack(terminal) if len(terminal) > 1 else terminal[0]
        objective = objective + cp.sum_squares(_factor(self.terminal_weight) @ terminal_state)

        self._slack = None
        if self.x_min is not None or self.x_max is not None:
            ones = np.ones(N)
            if self.soft_state_constraints:
                self._slack = cp.Variable((n, N), nonneg=True, name="state_slack")
                slack = self._slack
                objective = objective + self.state_penalty * cp.sum(self._slack)
            else:
                slack = 0
            if self._x_lo is not None:
                constraints.append(window >= np.outer(self._x_lo, ones) - slack)
            if self._x_hi is not None:
                constraints.append(window <= np.outer(self._x_hi, ones) + slack)
        self._problem = cp.Problem(cp.Minimize(objective), constraints)
        if not self._problem.is_dcp(dpp=True):  # pragma: no cover - construction guarantees it
            raise SolverError("internal error: the MPC problem is not DPP-compliant")

    # ------------------------------------------------------------------ public API
    @property
    def problem(self) -> cp.Problem:
        """The parametrized cvxpy problem (built once; same object for every solve)."""
        return self._problem

    @property
    def history(self) -> np.ndarray:
        """Committed inputs ``u_{k-R} .. u_{k-1}``, oldest first, shape (m, R) (a copy)."""
        return self._history.copy()

    def reset(self, u_history: Any = None) -> None:
        """Forget the past: zero input history (or ``u_history``, shape (m, R), oldest first)."""
        self._history = self._check_history(u_history)
        self.last_result: MPCResult | None = None

    def __call__(self, x: Any) -> np.ndarray:
        """Solve at the measured state ``x`` (shape (n,)), record and return ``u_k`` (shape (m,)).

        Raises
        ------
        DimensionError, NonFiniteError
            Bad ``x``.
        SolverError
            Infeasible problem or solver failure (the history is left unchanged).
        """
        result = self.solve(x, self._history)
        u = result.first_input
        if self._R:
            self._history = np.concatenate([self._history[:, 1:], u[:, None]], axis=1)
        self.last_result = result
        return u

    def solve(self, x: Any, u_history: Any = None) -> MPCResult:
        """Solve the MPC problem for state ``x`` and committed inputs, without changing state.

        Parameters
        ----------
        x : array_like, shape (n,)
            Measured state ``x_k``.
        u_history : array_like, shape (m, R), optional
            Inputs ``u_{k-R} .. u_{k-1}`` already sent, oldest first (the convention of
            ``DelayedPlant.simulate``'s ``U_past``); zero by default.

        Returns
        -------
        MPCResult

        Raises
        ------
        DimensionError, NonFiniteError
            Bad ``x`` or ``u_history``.
        SolverError
            Infeasible (the message says which constraints and shows the states fixed by the
            past), unbounded, solver failure, inaccurate with ``inaccurate="raise"``, or an
            input bound violated by more than ``INPUT_BOUND_TOLERANCE``.
        """
        x = check_finite_array("x", x, ndim=1)
        if x.shape != (self._n,):
            raise DimensionError(f"x has shape {x.shape}; expected ({self._n},)")
        history = self._check_history(u_history)
        op = self.operating_point
        if op is not None:              # the problem is posed in deviations
            x, history = x - op.state, history - op.input[:, None]
        self._x_param.value = x
        if self._history_param is not None:
            self._history_param.value = history
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # cvxpy's generic "Solution may be inaccurate" warning: the status is handled
                # below according to ``inaccurate``.
                warnings.filterwarnings("ignore", message="Solution may be inaccurate",
                                        category=UserWarning)
                self._problem.solve(solver=self.solver, warm_start=self.warm_start,
                                    **self.solver_options)
        except cp.error.SolverError as exc:
            raise SolverError(f"{self.solver} failed on the MPC problem: {exc}") from exc
        except TypeError as exc:    # Clarabel's answer to an unknown or mistyped setting
            raise ParameterError(f"{self.solver} refused solver_options "
                                 f"{self.solver_options}: {exc}") from exc
        elapsed = time.perf_counter() - start
        status = self._problem.status
        if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
            raise SolverError(self._infeasible_message(x, history, status))
        if status == cp.USER_LIMIT:
            raise SolverError(f"{self.solver} stopped at its iteration or time limit (status "
                              f"'user_limit') before solving the MPC problem; raise "
                              f"'max_iter' (or the time limit) in solver_options")
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            raise SolverError(f"{self.solver} returned status {status!r} for the MPC problem")
        if status == cp.OPTIMAL_INACCURATE:
            if self.inaccurate == "raise":
                raise SolverError(f"{self.solver} returned 'optimal_inaccurate' for the MPC "
                                  f"problem (inaccurate='raise')")
            if self.inaccurate == "warn":
                warnings.warn(f"{self.solver} returned 'optimal_inaccurate'; using the "
                              f"solution", RuntimeWarning, stacklevel=2)
        inputs, states = self._u.value, self._x.value
        if inputs is None or states is None or not (np.all(np.isfinite(inputs))
                                                    and np.all(np.isfinite(states))):
            raise SolverError(f"{self.solver} reported {status!r} but returned no finite "
                              f"solution")
        self._check_input_bounds(inputs)
        stats = self._problem.solver_stats
        iterations = getattr(stats, "num_iters", None)
        solver_time = getattr(stats, "solve_time", None)
        if op is not None:
            inputs, states = inputs + op.input[:, None], states + op.state[:, None]
        return MPCResult(inputs=read_only(inputs), states=read_only(states),
                         cost=float(self._problem.value), status=status, solve_time=elapsed,
                         solver_time=None if solver_time is None else float(solver_time),
                         iterations=None if iterations is None else int(iterations),
                         solver=self.solver, dead_steps=self.dead_steps)

    # ------------------------------------------------------------------ helpers
    def _check_history(self, u_history: Any) -> np.ndarray:
        m, R_max = self.plant.n_inputs, self.plant.max_delay
        if u_history is None:           # at rest: zero, or the operating point's input
            op = self.operating_point
            return np.zeros((m, R_max)) + (0.0 if op is None else op.input[:, None])
        history = check_finite_array("u_history", u_history, ndim=2)
        if history.shape != (m, R_max):
            raise DimensionError(f"u_history has shape {history.shape}; expected {(m, R_max)} "
                                 f"(inputs u_(k-R) .. u_(k-1) as columns, oldest first)")
        return history

    def _check_input_bounds(self, inputs: np.ndarray) -> None:
        for name, bound, sign in (("u_min", self._u_lo, -1.0), ("u_max", self._u_hi, 1.0)):
            if bound is None:
                continue
            excess = sign * (inputs - bound[:, None])
            allowed = INPUT_BOUND_TOLERANCE * np.maximum(1.0, np.abs(bound))[:, None]
            if np.any(excess > allowed):
                worst = float(np.max(excess))
                raise SolverError(f"{self.solver} returned inputs that violate {name} by "
                                  f"{worst:.3g} (> tolerance {INPUT_BOUND_TOLERANCE:g}); "
                                  f"tighten solver_options or use the other solver")

    def _infeasible_message(self, x: np.ndarray, history: np.ndarray, status: str) -> str:
        w, N = self.dead_steps, self.horizon
        message = (f"MPC problem is infeasible ({self.solver} status {status!r}): the hard state "
                   f"bounds x_min={_fmt(self.x_min)}, x_max={_fmt(self.x_max)} on "
                   f"x_(k+{w + 1}) .. x_(k+{w + N}) cannot be met with inputs in "
                   f"[{_fmt(self.u_min)}, {_fmt(self.u_max)}] from x_k={_fmt(x)}")
        if self._R:
            # States fixed by the past: simulate w steps; u_k.. do not act before x_{k+w+1}.
            fixed = self.plant.simulate(x, np.zeros((self._m, w)), history)
            message += (f" given the committed inputs u_(k-{self._R}) .. u_(k-1)="
                        f"{_fmt(history)}; x_(k+{w}) = {_fmt(fixed[:, -1])} is already fixed "
                        f"by them")
        if self.x_min is None and self.x_max is None:  # pragma: no cover - box inputs only
            message = f"MPC problem reported infeasible ({status!r}) with only input bounds"
        return message + ". Use soft_state_constraints=True, a longer horizon or wider bounds."


# ---------------------------------------------------------------------- module helpers
def _dead_steps(plant: DelayedPlant) -> int:
    acting = np.flatnonzero(plant.active_blocks.any(axis=1))
    if not acting.size:
        raise ParameterError("every input block B^(j) of the plant is zero: the inputs do not "
                             "act on the state, so there is nothing to control")
    return int(acting[0])


def _factor(weight: np.ndarray) -> np.ndarray:
    """Return L with L' L = weight (rows of zero eigenvalues dropped, at least one row)."""
    values, vectors = np.linalg.eigh(weight)
    keep = values > 1e-14 * max(1.0, float(values.max(initial=0.0)))
    if not np.any(keep):
        return np.zeros((1, weight.shape[0]))
    return np.sqrt(values[keep])[:, None] * vectors[:, keep].T


def _bounds(prefix: str, low: Any, high: Any, size: int) -> tuple[np.ndarray | None,
                                                                  np.ndarray | None]:
    out = []
    for suffix, value in (("min", low), ("max", high)):
        name = f"{prefix}_{suffix}"
        if value is None:
            out.append(None)
            continue
        out.append(check_scalar_or_vector(name, value, size))
    low, high = out
    if low is not None and high is not None and np.any(low > high):
        bad = np.flatnonzero(low > high)
        raise ParameterError(f"{prefix}_min > {prefix}_max in component(s) {bad.tolist()} "
                             f"({low[bad].tolist()} > {high[bad].tolist()}): no {prefix} is "
                             f"admissible")
    return low, high


def _fmt(value: np.ndarray | None) -> str:
    if value is None:
        return "None"
    return np.array2string(np.asarray(value), precision=4, separator=", ")
