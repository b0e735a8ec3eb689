"""Model predictive control through an identified input delay (problem / solve / result split).

The plant is the delayed model of dissertation eq. (9.21)/(9.65),

    x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j},

so at time k the inputs u_{k-1} .. u_{k-R} that the controller has already sent are still
travelling through the delay.  :class:`DelayedMPC` predicts *through* the delay: those committed
inputs enter the prediction as parameters, the decisions are u_k .. u_{k+N-1}, and every block
B^(j) is used.  With a whole delay of ``w`` periods (the leading ``w`` blocks are zero) the states
x_{k+1} .. x_{k+w} are fixed by the past, so the cost is put on the states the decisions can move,
x_{k+w+1} .. x_{k+w+N}.

The quadratic program is built once (:mod:`controllers.mpc_qp`); each step only updates its
vectors (the measured state, the input history, the bounds) and re-solves, warm-started, with a
solver called directly (:mod:`controllers.qp_solvers`): DAQP on the condensed QP for small
problems, OSQP on the sparse QP for long horizons or many states, Clarabel on the sparse QP
when condensing would lose the moves' precision (an unstable plant over a long horizon).
The cvxpy formulation (:mod:`controllers.mpc_cvxpy`) remains for costs and constraints of the
user's own.
"""

from __future__ import annotations

import copy
import functools
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.linalg

from _toolbox.errors import (
    DimensionError,
    NonFiniteError,
    ParameterError,
    SolverError,
    UnstableLoopWarning,
)
from _toolbox.validation import (
    check_finite_array,
    check_integer,
    check_positive,
    check_scalar_or_vector,
    read_only,
)
from controllers.gains import check_weight, default_state_weight
from controllers.mpc_qp import build_qp, qp_sizes
from controllers.outputs import (
    measurement_matrix,
    model_outputs,
    output_level,
    refuse_feedthrough,
)
from controllers.qp_solvers import (
    QP_SOLVERS,
    condition_number,
    meets_bounds,
    unreachable_rows,
)
from dmdidc.model import DelayedPlant, as_plant

_FLOAT = np.dtype(float)
_LARGEST = sys.float_info.max

__all__ = ["DelayedMPC", "MPCResult"]

#: Largest violation of an input bound (absolute, in input units, scaled by ``max(1, |bound|)``)
#: accepted from the solver.  Inputs are never clipped: a larger violation raises SolverError.
INPUT_BOUND_TOLERANCE = 1e-6
#: Largest QP a controller builds (decision variables of the sparse QP, or entries of the dense
#: condensed matrices for DAQP): a horizon beyond it is refused rather than exhausting memory or
#: time (10,000 variables: about 3 s of CPU to build and solve the sparse QP, 40 MB).
MAX_QP_VARIABLES = 10_000
MAX_DENSE_ENTRIES = 10_000_000
#: ``solver="auto"`` picks DAQP while the condensed matrices have at most this many entries,
#: else Clarabel on the sparse QP with soft state (output) bounds, OSQP without.  At n = 10,
#: m = 2 with state bounds DAQP was 10x faster than
#: OSQP up to N = 200 (1.1e6 entries; benchmarks/bench_mpc.py).
AUTO_DENSE_ENTRIES = 2_000_000
#: Largest condition number of the condensed Hessian that DAQP is set up on.  Condensing writes
#: the predictions with powers of ``A_d``: on an unstable plant they grow over the horizon and
#: the Hessian's condition with their square, and the moves carry about ``1e-17 cond`` relative
#: rounding (120 random plants against the sparse QP: 6e-6 at cond 5e11, 1e-3 at 3e13, 0.1 at
#: 2e16, every one reported "optimal").  Beyond it ``"auto"`` solves the sparse QP with
#: Clarabel (the dynamics as constraints: no powers), and ``solver="DAQP"`` is refused.
MAX_CONDENSED_CONDITION = 1e10
#: Largest violation of a hard state or output bound (in its units, scaled by ``max(1,
#: |bound|)``) accepted in a solver's plan; beyond it SolverError (a plan reported optimal
#: that breaks its bounds is no plan).
STATE_BOUND_TOLERANCE = 1e-6

#: A mode of ``A_d`` counts as unstable (for the recovery check of a plan under input bounds)
#: when ``|lambda| > 1 + UNSTABLE_MODE_MARGIN``: an integrator's rounding stays out.
UNSTABLE_MODE_MARGIN = 1e-9

#: The recovery check of an input-bounded MPC on an unstable plant asks whether any inputs
#: within the bounds bring the unstable modes' component back below its value now, over the
#: moves in which the slowest unstable mode grows this many times (a start whose distance to
#: the edge of the recoverable region is below 1 / RECOVERY_GROWTH of its own distance to
#: the origin's is taken as beyond it), at most _MAX_RECOVERY_STEPS moves.
RECOVERY_GROWTH = 1e4
_MAX_RECOVERY_STEPS = 2000
#: What the least-squares recovery leaves, relative to the unforced component, that counts
#: as zero (the solver's rounding).
_RECOVERY_TOLERANCE = 1e-7

_SOLVERS = ("auto", "DAQP", "OSQP", "CLARABEL", "CVXPY")
_DEFAULT_STATE_PENALTY = 1e4
#: The default penalty's margin over the multipliers' estimate (_default_penalty): 1e1 left
#: one of the review's 58 soft plans 67 % off, 1e2 none; 1e3 made OSQP stop in 8 of them
_PENALTY_MARGIN = 1e2
#: Largest ratio of two bounds' magnitudes that the default penalty follows (_default_penalty)
_BOUND_REACH = 1e2
_INACCURATE_POLICIES = ("warn", "raise", "accept")


class _ParameterBuffer:
    """The parameter vector ``[x_k, u_{k-R}, ..., u_{k-1}]`` and two views that fill it.

    Copies and pickles make a fresh buffer (``__reduce__``): a deep copy of the views alone
    would no longer write into the vector.
    """

    def __init__(self, n: int, m: int, R: int) -> None:
        self.shape = (n, m, R)
        self.vector = np.empty(n + m * R)
        self.x = self.vector[:n]
        self.history = self.vector[n:].reshape(R, m)   # rows u_{k-R} .. u_{k-1}

    def __reduce__(self) -> tuple[type, tuple[int, int, int]]:
        return _ParameterBuffer, self.shape


@dataclass(frozen=True)
class MPCResult:
    """Outcome of one MPC solve (immutable; arrays are read-only).

    Attributes
    ----------
    inputs : ndarray, shape (m, N)
        Optimal input sequence ``u_k .. u_{k+N-1}``; ``inputs[:, 0]`` is the move to apply.
    states : ndarray, shape (n, w + N + 1)
        Predicted states ``x_k .. x_{k+w+N}``; the first ``w + 1`` columns are fixed by ``x_k``
        and the committed inputs.  Computed on first access (a controller step needs only the
        first move).
    cost : float
        Optimal value of the objective (see :class:`DelayedMPC`), including any soft-constraint
        penalty; computed on first access.
    status : str
        ``"optimal"`` or ``"optimal_inaccurate"`` (other statuses raise).
    solve_time : float
        Wall-clock seconds of the solve: vector update and the solver (with cvxpy: also its
        cached re-canonicalization).
    solver_time : float or None
        Seconds reported by the solver itself, when it reports them.
    iterations : int or None
        Solver iterations, when reported (DAQP: 0, and ``solver_time`` None, for a step whose
        unconstrained minimizer keeps the input bounds: it is the solution, so DAQP is not
        called).
    solver : str
        ``"DAQP"``, ``"OSQP"``, ``"CLARABEL"`` or ``"CVXPY"``.
    dead_steps : int
        Whole delay ``w`` (periods) used by the prediction.
    """

    inputs: np.ndarray
    status: str
    solve_time: float
    solver_time: float | None
    iterations: int | None
    solver: str
    dead_steps: int
    #: () -> (states, cost): the prediction of this solution, evaluated once, on demand
    _prediction: Callable[[], tuple[np.ndarray, float]] = field(repr=False, compare=False)

    @classmethod
    def _of(cls, inputs: np.ndarray, status: str, solve_time: float, solver_time: float | None,
            iterations: int | None, solver: str, dead_steps: int,
            prediction: Callable[[], tuple[np.ndarray, float]]) -> MPCResult:
        """The result of a controller step, made without the frozen dataclass's ``__init__``
        (one ``object.__setattr__`` per field: a microsecond of each MPC step); the same
        fields, and the same object."""
        result = object.__new__(cls)
        result.__dict__.update(inputs=inputs, status=status, solve_time=solve_time,
                               solver_time=solver_time, iterations=iterations, solver=solver,
                               dead_steps=dead_steps, _prediction=prediction)
        return result

    def __reduce__(self) -> tuple[Callable[..., MPCResult], tuple]:
        # the prediction is a closure over the solver's vectors: a copy or a pickle carries
        # its value instead (evaluated now)
        states, cost = self._predicted
        return _known_result, (self.inputs, self.status, self.solve_time, self.solver_time,
                               self.iterations, self.solver, self.dead_steps, states, cost)

    @cached_property
    def _predicted(self) -> tuple[np.ndarray, float]:
        states, cost = self._prediction()
        return read_only(states, copy=False), float(cost)

    @property
    def states(self) -> np.ndarray:
        """Predicted states ``x_k .. x_{k+w+N}``, shape (n, w + N + 1), read-only."""
        return self._predicted[0]

    @property
    def cost(self) -> float:
        """Optimal value of the objective."""
        return self._predicted[1]

    @property
    def first_input(self) -> np.ndarray:
        """The move to apply now, ``u_k``, shape (m,)."""
        return self.inputs[:, 0].copy()

    @property
    def success(self) -> bool:
        """True when the solver reported ``optimal`` (not ``optimal_inaccurate``)."""
        return self.status == "optimal"


def _known_result(inputs: np.ndarray, status: str, solve_time: float, solver_time: float | None,
                  iterations: int | None, solver: str, dead_steps: int, states: np.ndarray,
                  cost: float) -> MPCResult:
    """An :class:`MPCResult` whose prediction is already known (copies and pickles)."""
    return MPCResult._of(read_only(inputs), status, solve_time, solver_time, iterations, solver,
                         dead_steps, functools.partial(_known_prediction, states, cost))


def _known_prediction(states: np.ndarray, cost: float) -> tuple[np.ndarray, float]:
    return states, cost


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
                    y_min <= C x_{k+w+i} + c <= y_max                 i = 1 .. N (output model)

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
        State weight (scalar times identity, diagonal, or full symmetric PSD); default identity,
        or for a model that carries a measurement matrix ``C`` (an
        :class:`~dmdidc.OutputDMDidc`, whose states are canonical variates)
        :func:`~controllers.gains.output_weight`, ``C^T C + 1e-6 ||C||^2 I``: the outputs.
    R : float, array_like of shape (m,) or (m, m), optional
        Input weight, symmetric positive definite; default identity.
    P : array_like of shape (n, n) or (n + m (R - w), n + m (R - w)), optional
        Terminal weight on ``x_{k+w+N}`` alone, or on the lifted terminal state ``z_N``.  Default:
        the solution of the discrete algebraic Riccati equation of the lifted delay-free pair
        (so that, without active constraints, the first move is the infinite-horizon LQ move);
        if that DARE has no stabilizing solution a ``RuntimeWarning`` is issued and ``P = Q`` on
        ``x_{k+w+N}`` is used.
    u_min, u_max : float or array_like of shape (m,), optional
        Input bounds (hard), physical values (with an operating point too, not
        deviations; ``u_op`` must lie within them).  ``None`` means unbounded; an entry
        ``-inf`` in ``u_min`` (``inf`` in ``u_max``) leaves that channel unbounded on that
        side (so do the other bounds' infinite entries).
    x_min, x_max : float or array_like of shape (n,), optional
        State bounds on ``x_{k+w+1} .. x_{k+w+N}``, physical values (``x_op`` must lie
        within them); hard unless ``soft_state_constraints``.  Refused for a model that
        carries a measurement matrix ``C`` (an output model): its states are canonical
        variates, which have no physical range; bound its outputs instead.
    y_min, y_max : float or array_like of shape (l,), optional
        Output bounds on ``y = C x + c`` at ``x_{k+w+1} .. x_{k+w+N}``, physical values:
        the outputs of a model that carries its measurement matrix ``C`` (an
        :class:`~dmdidc.OutputDMDidc`; ``c`` its output level ``offset_``), or of the ``C``
        given.  The output at the operating point (``C x_op + c``, or ``c`` without one) must
        lie within them.  Hard unless ``soft_state_constraints``.  Refused for a model with
        feedthrough ``D != 0``, and beside state bounds (one set of bounded signals: add state
        rows to ``C`` instead).
    C : array_like of shape (l, n), optional
        The measurement matrix of the bounded outputs, in the model's state basis (e.g. for a
        :class:`~dmdidc.DelayedPlant` such as a setpoint model ``est.plant()
        .with_operating_point(...)``, which carries none; a model's own ``C`` is the default,
        and another is refused: its states are its own basis).  Only with output bounds, and
        with ``output_offset`` for a model without an ``offset_`` of its own; the cost is set
        by ``Q``.
    output_offset : array_like of shape (l,), optional
        The outputs' level ``c`` the output bounds are read against, instead of the model's
        ``offset_`` (needed for a model fitted with ``detrend``, which removed the level
        without keeping it; the observer's ``offset``).  Only with output bounds.
    soft_state_constraints : bool, default False
        Replace the hard state (or output) bounds by an exact L1 penalty ``state_penalty *
        sum(slack)``; the problem is then always feasible.  Needs state or output bounds.
    state_penalty : float, optional
        Weight of the slack penalty (only with ``soft_state_constraints``); it must exceed the
        constraint multipliers for the soft bounds to be met whenever the hard ones can be.
        Default ``max(1e4, 1e2 g)``, scaled to the multipliers (which grow with the signals):
        ``g = lambda_max(Q) b / h^2 + lambda_max(R) a / (||sum_j B^(j)|| h)``, ``b`` and ``a``
        the largest finite state (output) and input bounds as deviations from the operating
        point, each taken at most 100 times its side's smallest (a distant bound does not
        inflate it), ``h = sigma_max(C)`` for output bounds, else 1.  The value in use is
        :attr:`state_penalty`.  A bound more than 100 times the others is met as the others
        are only while its multiplier stays below the penalty: give ``state_penalty`` when
        the plan runs up to such a bound.
    solver : {"auto", "DAQP", "OSQP", "CLARABEL", "CVXPY"}, default "auto"
        ``"DAQP"``: the dual active-set solver on the condensed QP (inputs only), warm-started
        with the previous active set (with input bounds alone, the same for every input, a
        step whose unconstrained minimizer keeps them is that minimizer, without a DAQP call);
        ``"OSQP"`` / ``"CLARABEL"``: on the sparse QP (states
        and inputs), called directly; ``"CVXPY"``: the cvxpy problem (:attr:`problem`), for
        formulations of one's own.  ``"auto"``: DAQP while the condensed matrices are small
        (``AUTO_DENSE_ENTRIES``) and the condensed Hessian well conditioned
        (``MAX_CONDENSED_CONDITION``: an open-loop unstable plant over a long horizon
        exceeds it), else on the sparse QP Clarabel (ill-conditioned, or large with soft
        state or output bounds) or OSQP (large otherwise; a step where OSQP does not solve
        the problem, stopped at its iteration or time limit, reporting it infeasible or
        failing, is solved by Clarabel on the same QP, with a ``RuntimeWarning`` once);
        ``"DAQP"`` on an ill-conditioned condensed QP is refused.  Case-insensitive.
    warm_start : bool, default True
        Start each solve from the previous one (DAQP: active set; OSQP: primal and dual
        solution).
    inaccurate : {"warn", "raise", "accept"}, default "warn"
        What to do on status ``optimal_inaccurate`` (the solver stopped at reduced accuracy:
        OSQP ``solved inaccurate``, Clarabel ``AlmostSolved``, cvxpy's status): return the
        solution with a ``RuntimeWarning``, raise :class:`SolverError`, or return it silently.
        The result's ``status`` always records it, and the input bounds are checked in every
        case.  Every other non-optimal status (infeasible,
        unbounded, ``user_limit``, solver error) raises :class:`SolverError`.
    cvxpy_extension : callable, optional
        Costs and constraints of one's own, with ``solver="CVXPY"`` (refused otherwise):
        ``cvxpy_extension(u, x) -> (cost, constraints)`` is called once, when the problem is
        built (and again for a copy or :meth:`with_model`), with the cvxpy variables ``u``,
        shape (m, N), the moves ``u_k .. u_{k+N-1}``, and ``x``, shape (n, w + N + 1), the
        predicted states ``x_k .. x_{k+w+N}`` (deviations from the operating point, if the
        model has one); ``cost`` (a scalar cvxpy expression, or 0) is added to the objective
        and ``constraints`` (a list) to the constraints, and every step solves the extended
        problem (:attr:`problem`).  The result is still checked against the bounds.  The
        function must be picklable for the controller to be (a module-level function).
    solver_options : dict, optional
        Settings of the solver (DAQP: ``daqp.Model().settings``; OSQP: defaults
        ``eps_abs = eps_rel = 1e-8, polishing=True``; Clarabel: ``DefaultSettings``
        attributes, defaults ``tol_gap_abs = tol_gap_rel = tol_feas = 1e-10``; a step on
        which they stall, status ``InsufficientProgress``, is solved again at Clarabel's own
        1e-8, directly and through cvxpy, unless these settings are given); with
        ``"CVXPY"``, keyword arguments of ``Problem.solve``, whose
        ``solver`` picks cvxpy's solver (``"CLARABEL"``, default, or ``"OSQP"``).  A setting
        the solver does not have is refused.

    Attributes
    ----------
    plant : DelayedPlant
    output_matrix : ndarray or None
        The ``C`` of an output model (its states, on which the MPC acts, are the model's own
        basis): such an MPC runs on estimated states only (an
        :class:`~controllers.OutputFeedback`); ``None`` for a model whose states are the
        plant's.
    Q, R : ndarray
        The weights in use, shapes (n, n) and (m, m), read-only.
    u_min, u_max, x_min, x_max, y_min, y_max : ndarray or None
        The bounds in use, shapes (m,), (n,) and (l,), read-only.
    dead_steps : int
        Whole delay ``w``: the number of leading input blocks that act through no channel
        (``min`` of the model's ``delay_steps`` over the channels that act).
    terminal_weight : ndarray, shape (n + m (R - w), n + m (R - w))
        The terminal weight ``P`` in use (on the lifted terminal state).
    solver : str
        The solver in use (``"auto"`` resolved).
    problem : cvxpy.Problem
        The parametrized cvxpy problem (built on first access).
    history : ndarray, shape (m, R)
        Inputs sent so far that still act on the plant, oldest first (``u_{k-R} .. u_{k-1}``).
    last_result : MPCResult or None
        Result of the latest ``__call__`` (``None`` after construction or :meth:`reset`).

    Raises
    ------
    ParameterError
        Bad horizon, weights, solver name, settings or policy; ``inf`` in a lower bound or
        ``-inf`` in an upper one; ``u_min > u_max`` or
        ``x_min > x_max`` (names the channel); bounds that exclude the operating point's
        ``u_op`` or ``x_op`` (it could never be held), or output bounds that exclude the
        output there; state bounds on an output model (one that carries ``C``), state and
        output bounds together, output bounds without a ``C`` (given or the model's), a ``C``
        other than the model's own or given without ``output_offset`` for a model without an
        ``offset_``, output
        bounds on a model with feedthrough or on one fitted with ``detrend`` without
        ``output_offset``; ``C`` or ``output_offset`` without output bounds; a plant whose
        input blocks are all zero; soft constraints without state or output bounds, or a
        ``state_penalty`` without soft constraints; a horizon whose QP exceeds
        ``MAX_QP_VARIABLES`` (or, for DAQP, ``MAX_DENSE_ENTRIES``); ``solver="DAQP"`` on a
        condensed QP above ``MAX_CONDENSED_CONDITION``.
    DimensionError
        Wrong shapes.
    NonFiniteError
        Non-finite weights, or a bound that is NaN.

    Warns
    -----
    UnstableLoopWarning
        Once per loop (until :meth:`reset`), from a solve whose plan rides an input bound on
        an open-loop unstable plant and ends with a larger unstable component than at
        ``x_{k+w}``, when no inputs within the bounds bring that component back to zero
        (``RECOVERY_GROWTH``): the state is beyond the region the bounds can recover and the
        loop diverges, though every solve is "optimal".  Widen the bounds or start closer.

    Notes
    -----
    The QP's matrices are built and factored once; a step updates only its vectors, so a
    constrained step costs about one warm-started solve (benchmarks/bench_mpc.py).  An
    identified model (:class:`dmdidc.DMDidc`) has exact zeros in the blocks its
    estimator found inactive, so ``w`` is the identified whole delay even on noisy data.
    ``copy.deepcopy`` and ``pickle`` give an independent controller with the same history (its
    solver set up again from its copy of the QP, starting cold); ``copy.copy`` shares the
    solver.

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
                 y_min: Any = None, y_max: Any = None, C: Any = None,
                 output_offset: Any = None,
                 soft_state_constraints: bool = False, state_penalty: float | None = None,
                 solver: str = "auto", warm_start: bool = True, inaccurate: str = "warn",
                 solver_options: dict[str, Any] | None = None,
                 cvxpy_extension: Callable[[Any, Any], tuple[Any, list[Any]]] | None = None
                 ) -> None:
        plant = as_plant(model)
        n, m = plant.n_states, plant.n_inputs
        self.output_matrix = model_outputs(model)
        self.horizon = check_integer("horizon", horizon, minimum=1)
        _refuse_variate_bounds(model, x_min, x_max)
        bounds_y = y_min is not None or y_max is not None
        if bounds_y and (x_min is not None or x_max is not None):
            raise ParameterError(
                "give state bounds (x_min, x_max) or output bounds (y_min, y_max), not both: "
                "one set of bounded signals is built; to bound states beside outputs, add their "
                "rows to C (in the model's state basis) with their bounds in y_min / y_max")
        for name, value, what in (("C", C, "measurement matrix"),
                                  ("output_offset", output_offset, "level")):
            if value is not None and not bounds_y:
                raise ParameterError(f"{name} is the outputs' {what} that output bounds "
                                     f"(y_min, y_max) are read through; give output bounds or "
                                     f"leave it out (the cost is set by Q)")
        self._output_map = (C, output_offset)        # as given: re-read for every model
        outputs = _outputs(model, n, *self._output_map) if bounds_y else None
        # Read-only: the problem is built from these once, so changing them later would lie.
        self.Q = read_only(check_weight("Q", default_state_weight(model) if Q is None else Q,
                                        n, definite=False))
        self.R = read_only(check_weight("R", R, m, definite=True))
        self.u_min, self.u_max = (read_only(b) for b in _bounds("u", u_min, u_max, m))
        self.x_min, self.x_max = (read_only(b) for b in _bounds("x", x_min, x_max, n))
        self.y_min, self.y_max = (read_only(b) for b in _bounds(
            "y", y_min, y_max, 0 if outputs is None else outputs[0].shape[0]))
        if not isinstance(soft_state_constraints, (bool, np.bool_)):
            raise ParameterError(f"soft_state_constraints must be a bool; got "
                                 f"{soft_state_constraints!r}")
        self.soft_state_constraints = bool(soft_state_constraints)
        # (an infinite entry bounds nothing: soft bounds that are all infinite would soften
        # nothing, silently)
        if soft_state_constraints and not any(
                b is not None and np.isfinite(b).any()
                for b in (self.x_min, self.x_max, self.y_min, self.y_max)):
            raise ParameterError("soft_state_constraints needs state bounds (x_min and/or "
                                 "x_max) or output bounds (y_min and/or y_max) to soften, "
                                 "finite in some component")
        if state_penalty is not None and not soft_state_constraints:
            raise ParameterError("state_penalty weighs the slack of soft_state_constraints; "
                                 "set soft_state_constraints=True or leave it out")
        self._given_penalty = (None if state_penalty is None else
                               check_positive("state_penalty", state_penalty))
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
        self.solver_options = dict(solver_options or {})
        if cvxpy_extension is not None and not callable(cvxpy_extension):
            raise ParameterError(f"cvxpy_extension must be a function (u, x) -> (cost, "
                                 f"constraints); got {type(cvxpy_extension).__name__}")
        if cvxpy_extension is not None and str(solver).lower() != "cvxpy":
            # the direct solvers solve a QP built from the documented cost: the extension
            # would do nothing there, silently
            raise ParameterError(f"cvxpy_extension adds to the cvxpy problem, which only "
                                 f"solver='CVXPY' solves; got solver={solver!r}: pass "
                                 f"solver='CVXPY' or leave cvxpy_extension out")
        self.cvxpy_extension = cvxpy_extension
        self._n, self._m = n, m
        self._requested = (solver, P)      # re-resolved for every model (with_model)
        self._design(plant, outputs)

    def _design(self, plant: DelayedPlant, outputs: tuple[np.ndarray, np.ndarray] | None
                ) -> None:
        """Everything that depends on the model: delay, lifted pair, terminal weight, QP
        (``outputs``: the model's ``C`` and output level, for output bounds)."""
        #: The model's operating point: the problem is posed in deviations from it, and
        #: ``solve`` / ``__call__`` / the bounds are in the model's physical units.
        self.operating_point = plant.operating_point
        plant = plant.deviation_model()
        self.plant: DelayedPlant = plant
        n, m = self._n, self._m
        self._R = plant.max_delay
        self.dead_steps = _dead_steps(plant)
        op = self.operating_point
        u_op, x_op = (np.zeros(m), np.zeros(n)) if op is None else (op.input, op.state)
        # (without an operating point the target is the origin: bounds that exclude it park
        # the loop at a bound as silently)
        _hold_within("u", u_op, self.u_min, self.u_max, op is not None)
        _hold_within("x", x_op, self.x_min, self.x_max, op is not None)
        self._u_lo, self._u_hi = (None if b is None else b - u_op for b in (self.u_min,
                                                                             self.u_max))
        self._x_lo, self._x_hi = (None if b is None else b - x_op for b in (self.x_min,
                                                                             self.x_max))
        #: The bounded signals ``H x`` (None: the states; an output model's ``C``: its outputs)
        self._bound_matrix: np.ndarray | None = None
        if outputs is not None:
            # y = C x + c in physical units: around the operating point the deviations'
            # outputs C dx are bounded by the bounds less the output there
            C, level = outputs
            bound = self.y_min if self.y_min is not None else self.y_max
            if C.shape != (bound.shape[0], n):
                raise DimensionError(f"the model's measurement matrix C has shape {C.shape}; "
                                     f"the output bounds need ({bound.shape[0]}, {n}) (one row "
                                     f"per bounded output, one column per state)")
            y_op = C @ x_op + level
            _hold_within("y", y_op, self.y_min, self.y_max, True)
            self._bound_matrix = C
            self._x_lo, self._x_hi = (None if b is None else b - y_op for b in (self.y_min,
                                                                                 self.y_max))
        #: The slack's weight in use: as given, or the default scaled to the bounded signals
        self.state_penalty = (self._given_penalty if self._given_penalty is not None
                              else self._default_penalty())
        solver, P = self._requested
        self.solver = self._choose_solver(solver)

        w = self.dead_steps
        reduced = DelayedPlant(plant.A_d, plant.B_blocks[w:], plant.dt)
        self._F, self._G = reduced.lifted_matrices()
        self.terminal_weight = read_only(self._terminal_weight(P, n))
        self._cvxpy: Any = None
        self._u_allowed: list[np.ndarray] | None = None   # input limits: _input_limits
        self._u_range: tuple[float, float] | None = None
        self._zero_history = read_only(self._check_history(None))
        self._p = _ParameterBuffer(n, m, self._R)    # solve's parameter vector, filled in place
        if self.solver != "CVXPY":
            self._qp = self._build_qp(sparse=QP_SOLVERS[self.solver][1])
        self._left_condensed = None
        if self.solver == "DAQP":
            self._condensed_or_sparse(str(solver).lower() == "auto")
        # hard state (output) bounds: every plan's bounded signals are checked
        # (_check_state_bounds) against the user's bounds with the tolerance, built once
        self._hard_rows = (not self.soft_state_constraints
                           and (self._x_lo is not None or self._x_hi is not None))
        self._signal_check = self._signal_map() if self._hard_rows else None
        self._recovery = self._recovery_map()
        self._solver: Any = self._new_solver()
        # "auto" picked OSQP: a step that OSQP does not solve (iteration or time limit,
        # 'infeasible', an error) is solved again by Clarabel on the same sparse QP (set up on
        # first need)
        self._fallback: Any = None
        self._auto = str(solver).lower() == "auto"
        self._may_fall_back = self.solver == "OSQP" and self._auto
        self._fell_back = False
        self.reset()

    def _new_solver(self) -> Any:
        """The solver of ``self.solver``, set up on the stored QP (or the cvxpy problem)."""
        if self.solver == "CVXPY":
            from controllers.mpc_cvxpy import CvxpySolver  # cvxpy: only when asked for

            self._cvxpy = CvxpySolver(self, self.solver_options, warm_start=self.warm_start)
            return self._cvxpy
        try:
            return QP_SOLVERS[self.solver][0](self._qp, self.solver_options,
                                              warm_start=self.warm_start)
        except ParameterError as exc:
            left = getattr(self, "_left_condensed", None)
            if left is None:
                raise
            raise ParameterError(
                f"solver='auto' solves this problem with Clarabel on the sparse QP, not DAQP: "
                f"the condensed Hessian's condition number {left:.3g} exceeds "
                f"MAX_CONDENSED_CONDITION = {MAX_CONDENSED_CONDITION:g}; {exc}. Pass "
                f"solver='CLARABEL' with Clarabel's settings, or leave solver_options out"
            ) from exc

    # ------------------------------------------------------------------ copies and pickles
    # The solvers hold native handles (DAQP's workspace, the OSQP and Clarabel solvers, the
    # compiled cvxpy problem) that can be neither copied nor pickled; the QP they are set up on
    # is plain data.  So the state of a deep copy or a pickle leaves the handles out and the
    # copy sets its own solver up again on its own copy of the QP: an independent controller
    # with the same history, whose first solve starts cold (same solution, maybe more
    # iterations).  A shallow ``copy.copy`` shares the solver (only its warm start: each solve
    # loads its own vectors), as ``with_model`` needs before it re-designs the copy.
    def __copy__(self) -> DelayedMPC:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_solver"] = state["_cvxpy"] = state["_fallback"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._solver = self._new_solver()

    def with_model(self, model: Any) -> DelayedMPC:
        """This MPC re-designed for an updated ``model`` (e.g. a new delay estimate).

        Re-used (not re-validated): the horizon, the weights ``Q``, ``R`` (and a ``P`` given on
        ``x_{k+w+N}``), the bounds, the soft-constraint settings, the solver choice and its
        options (output bounds are read through the new model's own ``C`` and output level:
        an output model's basis is its own; a ``C`` given is refused, as it belongs to the old
        basis).  Recomputed from the model: the whole delay ``w``,
        the lifted pair and the
        default terminal weight (its Riccati equation), the QP's matrices and the solver's
        set-up (its factorization): they all depend on the input blocks.  The committed inputs
        are carried over (the newest ``min(R_old, R_new)``; older ones at rest), so the
        controller continues the loop.  The result solves exactly the problem of a controller
        built afresh with the same arguments on ``model``; this controller is left unchanged.

        Parameters
        ----------
        model : DelayedPlant or fitted estimator
            Same numbers of states and inputs.

        Returns
        -------
        DelayedMPC

        Raises
        ------
        DimensionError
            ``model`` of other sizes, or a lifted-state ``P`` that does not fit its delay.
        ParameterError
            A model whose input blocks are all zero, or whose QP exceeds the size limits.

        Examples
        --------
        >>> import numpy as np
        >>> from dmdidc import DelayedPlant
        >>> A_c, B_c = [[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]]
        >>> old = DelayedPlant.from_continuous(A_c, B_c, delay=0.65, dt=0.5, max_delay=4)
        >>> new = DelayedPlant.from_continuous(A_c, B_c, delay=1.3, dt=0.5, max_delay=4)
        >>> mpc = DelayedMPC(old, horizon=8, u_min=-1, u_max=1)
        >>> updated = mpc.with_model(new)
        >>> updated.dead_steps, mpc.dead_steps
        (2, 1)
        >>> fresh = DelayedMPC(new, horizon=8, u_min=-1, u_max=1)
        >>> x = np.array([0.5, -1.0])
        >>> bool(np.allclose(updated.solve(x).inputs, fresh.solve(x).inputs, atol=1e-8))
        True
        """
        plant = as_plant(model)
        if (plant.n_states, plant.n_inputs) != (self._n, self._m):
            raise DimensionError(f"model has {plant.n_states} states and {plant.n_inputs} "
                                 f"inputs; this MPC has {self._n} and {self._m}")
        if self._output_map[0] is not None:
            raise ParameterError(
                "this MPC's output bounds read the outputs through the C given, in the old "
                "model's state basis, which a new identification changes (an output model's "
                "states are its own canonical variates): build a new DelayedMPC with the new "
                "model's C (and output_offset)")
        new = copy.copy(self)
        new.output_matrix = model_outputs(model)
        bounds_y = self.y_min is not None or self.y_max is not None
        new._design(plant, _outputs(model, plant.n_states, *self._output_map) if bounds_y
                    else None)
        keep = min(self._R, new._R)
        if keep:        # the newest committed inputs, in physical units
            new._history[:, -keep:] = self._history[:, -keep:]
        return new

    def _choose_solver(self, solver: Any) -> str:
        """Resolve ``solver`` ("auto": by the size of the condensed QP) and check the size."""
        if not isinstance(solver, str) or solver.lower() not in {s.lower() for s in _SOLVERS}:
            raise ParameterError(f"solver must be one of {_SOLVERS} (case-insensitive); got "
                                 f"{solver!r}")
        solver = "auto" if solver.lower() == "auto" else solver.upper()
        n, m, N, w = self._n, self._m, self.horizon, self.dead_steps
        soft = self.soft_state_constraints
        bounded = self._x_lo is not None or self._x_hi is not None
        rows = None if self._bound_matrix is None else self._bound_matrix.shape[0]
        variables, _ = qp_sizes(n, m, w, N, soft=soft and bounded, sparse=True, bounded=rows)
        if variables > MAX_QP_VARIABLES:
            def fits(horizon: int) -> bool:
                return qp_sizes(n, m, w, horizon, soft=soft and bounded, sparse=True,
                                bounded=rows)[0] <= MAX_QP_VARIABLES
            low, high = 0, N                       # the largest horizon that fits: bisection
            while high - low > 1:
                low, high = ((low + high) // 2, high) if fits((low + high) // 2) else \
                    (low, (low + high) // 2)
            raise ParameterError(f"horizon = {N} gives a QP of {variables} variables (n={n} "
                                 f"states, m={m} inputs, dead steps {w}) above the limit "
                                 f"MAX_QP_VARIABLES = {MAX_QP_VARIABLES} (controllers.mpc); "
                                 f"accepted: horizon <= {low} for this plant")
        dense_v, dense_rows = qp_sizes(n, m, w, N, soft=soft and bounded, sparse=False,
                                       bounded=rows)
        if not bounded:
            dense_rows = dense_v
        entries = dense_v * (dense_v + dense_rows)
        if solver == "DAQP" and entries > MAX_DENSE_ENTRIES:
            raise ParameterError(f"horizon={N} gives a condensed QP of {entries} matrix "
                                 f"entries for DAQP (at most {MAX_DENSE_ENTRIES}); shorten the "
                                 f"horizon or use solver='OSQP' (sparse)")
        if solver == "auto":
            # large: with soft bounds OSQP stopped at its 20000 iterations in 3 of 6 random
            # loops (4-10 states, N = 150-300) and was 0.9-10x slower than Clarabel where it
            # finished; with input bounds alone it was 1.2-1.6x faster (docs/control.md)
            solver = ("DAQP" if entries <= AUTO_DENSE_ENTRIES else
                      "CLARABEL" if soft and bounded else "OSQP")
        return solver

    def _condensed_or_sparse(self, auto: bool) -> None:
        """Keep the condensed QP while its Hessian is well conditioned
        (``MAX_CONDENSED_CONDITION``); else the sparse QP with Clarabel (``auto``), or refuse
        DAQP: its moves would be wrong under an "optimal" status (a trial: the first move of
        an unstable scalar plant off by 6 % at N = 20, plans breaking hard state bounds)."""
        # the inputs' block: soft bounds' slacks cost linearly (a zero block, which DAQP's
        # proximal iterations handle)
        inputs = self._qp.n_inputs
        condition = condition_number(self._qp.hessian[:inputs, :inputs])
        if condition <= MAX_CONDENSED_CONDITION:
            return
        if auto:
            self.solver = "CLARABEL"
            self._qp = self._build_qp(sparse=True)
            self._left_condensed = condition
            return
        radius = float(np.max(np.abs(np.linalg.eigvals(self.plant.A_d))))
        state = (f"has condition number {condition:.3g} (above MAX_CONDENSED_CONDITION = "
                 f"{MAX_CONDENSED_CONDITION:g})" if np.isfinite(condition)
                 else "is not numerically positive definite")
        raise ParameterError(
            f"solver='DAQP' solves the condensed QP, whose Hessian here {state}: the "
            f"predictions' powers of A_d (spectral radius {radius:.4g} over "
            f"{self.dead_steps + self.horizon} steps) leave its moves with rounding of about "
            f"{min(1e-17 * condition, 1.0):.1g} of their size, under an 'optimal' status. Use "
            f"solver='auto' or 'CLARABEL' (the sparse QP keeps the dynamics as constraints), "
            f"or a shorter horizon")

    def _default_penalty(self) -> float:
        """``max(1e4, 1e2 g)``, ``g`` the size of the constraints' multipliers: the cost's
        gradient on a plan at the bounds, ``lambda_max(Q) b / h^2 + lambda_max(R) a /
        (||sum_j B^(j)|| h)``, with ``b`` and ``a`` the largest finite bounds of the bounded
        signals and of the inputs (deviations from the operating point, each at most
        ``_BOUND_REACH`` times its smallest) and ``h = ||H||`` (``C`` for output bounds, else
        1).

        The exact L1 penalty meets the bounds whenever the hard problem can only above the
        multipliers, which grow with the signals' scale: a fixed 1e4 left 7 of the review's 58
        soft plans (scales 1e3 and 1e5) 8-98 % off the hard plan in the first move.  A
        penalty ``1e4 max(1, lambda_max(Q) b)`` met them with DAQP, but at 1e9-1e14 (one
        distant bound, or large signals) made OSQP stop at its iteration limit and Clarabel
        report DualInfeasible in 26 and 23 of the 58.  The input term: with ``Q = 1e-3 I``
        and inputs of 2e5, the multipliers come from ``R u``."""
        def reach(bounds: tuple[Any, Any]) -> float:
            finite = np.concatenate([np.abs(b[np.isfinite(b)]) for b in bounds
                                     if b is not None] or [np.zeros(0)])
            if not finite.size:
                return 0.0
            # a distant bound (1e6 beside 1) is never met at the others' scale; its
            # multiplier is not theirs
            return float(np.minimum(finite, _BOUND_REACH * finite.min()).max())

        H = np.eye(self._n) if self._bound_matrix is None else self._bound_matrix
        h = max(float(np.linalg.norm(H, 2)), 1e-300)
        B = np.sum(self.plant.B_blocks, axis=0)
        state_term = float(np.linalg.eigvalsh(self.Q)[-1]) * reach((self._x_lo, self._x_hi))
        input_term = (float(np.linalg.eigvalsh(self.R)[-1]) * reach((self._u_lo, self._u_hi))
                      / max(float(np.linalg.norm(B, 2)), 1e-300))
        return max(_DEFAULT_STATE_PENALTY,
                   _PENALTY_MARGIN * (state_term / h + input_term) / h)

    def _build_qp(self, *, sparse: bool) -> Any:
        return build_qp(self.plant, dead_steps=self.dead_steps, horizon=self.horizon, Q=self.Q,
                        R=self.R, terminal_weight=self.terminal_weight,
                        u_bounds=(self._u_lo, self._u_hi), x_bounds=(self._x_lo, self._x_hi),
                        soft=self.soft_state_constraints, state_penalty=self.state_penalty,
                        sparse=sparse, bound_matrix=self._bound_matrix)

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
                          f"terminal weight", RuntimeWarning, stacklevel=4)
            return Q_lifted
        return 0.5 * (P + P.T)

    # ------------------------------------------------------------------ public API
    @property
    def problem(self) -> Any:
        """The parametrized cvxpy problem (built on first access, then the same object).

        Variables ``u`` (m, N) and ``x`` (n, w + N + 1), parameters ``x_k`` and ``u_history``;
        DPP-compliant.  With ``solver="CVXPY"`` it is the problem the controller solves,
        with the terms of ``cvxpy_extension``; to solve a variant by hand, build it on a copy
        (``cvxpy.Problem(problem.objective + extra, problem.constraints + more)``).
        """
        if self._cvxpy is None:
            from controllers.mpc_cvxpy import CvxpySolver  # cvxpy: only when asked for

            self._cvxpy = CvxpySolver(self, {}, warm_start=self.warm_start)
        return self._cvxpy.problem

    @property
    def history(self) -> np.ndarray:
        """Committed inputs ``u_{k-R} .. u_{k-1}``, oldest first, shape (m, R) (a copy)."""
        return self._history.copy()

    def reset(self, u_history: Any = None) -> None:
        """Forget the past: zero input history (or ``u_history``, shape (m, R), oldest first).
        A new loop may warn again (the unstable-mode recovery check warns once per loop)."""
        self._history = self._check_history(u_history)
        self.last_result: MPCResult | None = None
        self._warned_recovery = False

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
            past), unbounded, solver failure, inaccurate with ``inaccurate="raise"``, an
            input bound violated by more than ``INPUT_BOUND_TOLERANCE``, or a hard state
            (output) bound by more than ``STATE_BOUND_TOLERANCE``.
        """
        history = self._zero_history if u_history is None else u_history
        if (type(x) is not np.ndarray or x.dtype != _FLOAT or x.shape != (self._n,)
                or type(history) is not np.ndarray or history.dtype != _FLOAT
                or history.shape != self._zero_history.shape):
            x, history = self._check_x(x), self._check_history(u_history)
        buffer = self._p
        p = buffer.vector                            # [x_k, u_{k-R}, ..., u_{k-1}]
        buffer.x[...] = x
        buffer.history[...] = history.T
        # one check for both arguments: the extreme entries are finite (argmin / argmax pick
        # a NaN; direct calls, a third of a ufunc reduction's cost); the messages name the
        # argument
        if not (p[p.argmin()] >= -_LARGEST and p[p.argmax()] <= _LARGEST):
            x, history = self._check_x(x), self._check_history(u_history)
        op = self.operating_point
        if op is None:
            # the result's lazy prediction keeps p, and the next solve refills the buffer: this
            # copy is the one allocation of the parameter (buffer + copy: 0.7 us, a fresh
            # concatenate: 1.4-1.7 us)
            p = p.copy()
        else:                           # the problem is posed in deviations (a fresh p)
            x, history = x - op.state, history - op.input[:, None]
            p = np.concatenate((x, history.T.ravel()))
        return self._solve(p, x, history)

    def _solve(self, p: np.ndarray, x: np.ndarray, history: np.ndarray) -> MPCResult:
        """Solve at ``p = [x_k, committed inputs]`` (deviations, checked)."""
        start = time.perf_counter()
        outcome = self._solver.solve(p)
        name = self.solver
        if self._may_fall_back and not outcome.status.startswith("optimal"):
            outcome, name = self._solve_by_fallback(p, outcome), "CLARABEL"
        elapsed = time.perf_counter() - start
        status = outcome.status
        if status != "optimal":
            self._check_status(status, x, history, name)
        op = self.operating_point
        if outcome.v is not None:
            v = outcome.v
            moves = v[:self._qp.n_inputs]                     # u_k .. u_{k+N-1}, time-major
            limits = self._u_range      # the quick test of _check_input_bounds, here (no call)
            if limits is None or not (moves[moves.argmin()] >= limits[0]
                                      and moves[moves.argmax()] <= limits[1]):
                self._check_input_bounds(moves, name)         # (and that they are finite)
            inputs = moves.reshape(self.horizon, self._m).T
            qp, n = self._qp, self._n
            if self._hard_rows:
                rows_v, rows_p = self._signal_check[:2]
                self._check_state_bounds(rows_v @ v + rows_p @ p, name)
            if self._recovery is not None and not self._warned_recovery:
                self._check_recovery(moves, p)

            def prediction() -> tuple[np.ndarray, float]:
                states = qp.states(v, p, n)
                return (states if op is None else states + op.state[:, None]), qp.cost(v, p)
        else:
            inputs, states, cost = outcome.inputs, outcome.states, outcome.cost
            if inputs is None or states is None or not np.isfinite(states).all():
                raise SolverError(f"{self.solver} reported {status!r} but returned no finite "
                                  f"solution")
            self._check_input_bounds(inputs.T.ravel())
            if self._hard_rows:
                w, N = self.dead_steps, self.horizon
                H = np.eye(self._n) if self._bound_matrix is None else self._bound_matrix
                self._check_state_bounds((H @ states[:, w + 1:w + N + 1]).T.ravel())
            if self._recovery is not None and not self._warned_recovery:
                self._check_recovery(inputs.T.ravel(), p)    # (deviations, as p)
            shifted = states if op is None else states + op.state[:, None]

            def prediction() -> tuple[np.ndarray, float]:
                return shifted, cost
        if op is not None:
            inputs = inputs + op.input[:, None]
        inputs.setflags(write=False)     # a fresh float array of this solve: no copy needed
        return MPCResult._of(inputs, status, elapsed, outcome.solver_time, outcome.iterations,
                             name, self.dead_steps, prediction)

    def _solve_by_fallback(self, p: np.ndarray, stopped: Any) -> Any:
        """Clarabel's outcome at ``p`` after OSQP (picked by ``"auto"``) did not solve the
        problem: a trial's loop (8 states, 2 inputs, N = 300, soft state bounds) raised
        SolverError 'user_limit' partway, where Clarabel solved every step, and a review's
        12-state plant in mixed units (N = 450) was 'infeasible' to OSQP, not to Clarabel or
        DAQP.  Clarabel's plan is checked against the bounds like any other (and its own
        'infeasible' is examined as any solver's).  Said once per controller."""
        if self._fallback is None:
            self._fallback = QP_SOLVERS["CLARABEL"][0](self._qp, {}, warm_start=False)
        outcome = self._fallback.solve(p)
        if not self._fell_back and outcome.status.startswith("optimal"):
            self._fell_back = True
            what = ("stopped at its iteration or time limit" if stopped.status == "user_limit"
                    else f"returned status {stopped.status!r}")
            warnings.warn(f"OSQP (picked by solver='auto') {what} after {stopped.iterations} "
                          f"iterations; Clarabel solved this step on the same QP, and will "
                          f"solve every step that OSQP does not (said once). "
                          f"solver='CLARABEL' uses it throughout", RuntimeWarning,
                          stacklevel=5)
        return outcome


    def _check_status(self, status: str, x: np.ndarray, history: np.ndarray,
                      solver: str | None = None) -> None:
        """Raise for every status but optimal; warn (or raise) on optimal_inaccurate.
        ``solver``: the one that returned ``status`` (default :attr:`solver`)."""
        solver = solver or self.solver
        if status == "infeasible":
            raise SolverError(self._infeasible_message(x, history, solver))
        # Clarabel stops too (InsufficientProgress beside a bound of 1e12, DualInfeasible under
        # a soft penalty of 1e10 before _cost_scale): DAQP is then the other solver to name
        other = ("solver='DAQP' (the condensed QP)" if solver == "CLARABEL" else
                 "solver='CLARABEL' (an interior-point method)"
                 + ("" if self._auto else " or 'auto' (which falls back to it)"))
        soft = (f"; with soft bounds a large state_penalty (here "
                f"{self.state_penalty:.3g}) or bounds of very different magnitudes "
                f"strain the solver: try a smaller one" if self.soft_state_constraints else "")
        if status == "user_limit":
            raise SolverError(f"{solver} stopped at its iteration or time limit (status "
                              f"'user_limit') before solving the MPC problem; raise its "
                              f"iteration limit (or the time limit) in solver_options, or use "
                              f"{other}{soft}")
        if status != "optimal_inaccurate":
            raise SolverError(f"{solver} returned status {status!r} for the MPC problem; "
                              f"use {other}{soft}")
        if self.inaccurate == "raise":
            raise SolverError(f"{solver} returned 'optimal_inaccurate' for the MPC "
                              f"problem (inaccurate='raise')")
        if self.inaccurate == "warn":
            warnings.warn(f"{solver} returned 'optimal_inaccurate'; using the "
                          f"solution", RuntimeWarning, stacklevel=4)

    # ------------------------------------------------------------------ helpers
    def _recovery_map(self) -> tuple[Any, ...] | None:
        """``(ends_p, terminal_u, reach)`` of the unstable-mode recovery check, ``ends_p``
        the stacked ``[fixed_p; terminal_p]`` and ``reach`` None until the check first needs
        it (then ``(reach_u, reach_p, span)``), or None (no input bounds, or no mode of
        ``A_d`` beyond ``1 + UNSTABLE_MODE_MARGIN``).

        The unstable component of a state ``x`` is ``z = Z' x``, ``Z`` (n, r) an orthonormal
        basis of the unstable invariant subspace of ``A_d'`` (its sorted real Schur form):
        ``z`` is zero exactly on the stable subspace and follows ``z_{t+1} = L z_t + sum_j Z'
        B^(j) u_{t-j}`` with ``L = Z' A_d Z`` (r, r).  ``z_{k+w} = fixed_p p`` is fixed by the
        past; ``z_{k+w+N} = terminal_u moves + terminal_p p``; ``reach_u``, ``reach_p`` the
        same after ``_recovery_steps`` moves."""
        if self._u_lo is None and self._u_hi is None:
            return None
        limit = (1.0 + UNSTABLE_MODE_MARGIN) ** 2
        plant = self.plant
        _, Z, count = scipy.linalg.schur(plant.A_d.T, output="real",
                                         sort=lambda re, im: re * re + im * im > limit)
        if not count:
            return None
        basis = Z[:, :count].T
        eigenvalues = np.linalg.eigvals(plant.A_d)
        unstable = eigenvalues[np.abs(eigenvalues) ** 2 > limit]
        self._unstable_moduli = np.sort(np.abs(unstable))[::-1]
        # The reach is tested over more moves than the horizon: a start near the edge of the
        # recoverable region comes back slowly (first held near the edge by the committed
        # inputs: a random plant went 4.78, 5.14, 5.396 against an edge of 5.3966, then
        # back), and a rotating pair cannot always be shrunk soon (the inputs push along
        # fixed directions).  So: until the slowest unstable mode has grown RECOVERY_GROWTH
        # times (a start that close to the edge is taken as beyond it), and a full turn of
        # the slowest rotation.
        grow = int(np.ceil(np.log(RECOVERY_GROWTH) / np.log(self._unstable_moduli[-1])))
        turning = np.abs(np.angle(unstable))
        turning = turning[turning > 1e-12]
        turn = int(np.ceil(2 * np.pi / turning.min())) if turning.size else 0
        self._recovery_steps = max(self.horizon, min(max(grow, turn), _MAX_RECOVERY_STEPS))
        # moves within the input tolerance of a bound ride it
        self._u_tiled = [np.full(self._m * self.horizon, sign * np.inf) if b is None else
                         # (an infinite bound stays one: inf - inf would be NaN)
                         np.tile(b - sign * INPUT_BOUND_TOLERANCE * np.maximum(
                             1.0, np.abs(np.where(np.isfinite(b), b, 0.0))), self.horizon)
                         for b, sign in ((self._u_lo, -1.0), (self._u_hi, 1.0))]
        low, high = self._u_tiled
        self._ride = ((float(low[0]), float(high[0]))
                      if (low == low[0]).all() and (high == high[0]).all() else None)
        self._reach_bounds = [np.full(self._m * self._recovery_steps, sign * np.inf)
                              if b is None else np.tile(b, self._recovery_steps)
                              for b, sign in ((self._u_lo, -1.0), (self._u_hi, 1.0))]
        fixed, terminal_u, terminal_p = self._unstable_maps(basis, self.horizon)
        self._recovery_basis = basis        # the reach maps: on first need (_check_recovery)
        return np.vstack([fixed, terminal_p]), terminal_u, None

    def _unstable_maps(self, basis: np.ndarray, horizon: int, *, discount: bool = False
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(fixed_p, on_u, on_p)``: ``z_{k+w} = fixed_p p`` and ``z_{k+w+horizon} = on_u
        moves + on_p p`` (moves ``u_k .. u_{k+horizon-1}``, time-major) for ``z = basis x``.

        ``discount``: the maps of ``L^-t z_t`` instead (``t`` steps after ``k``): ``L^-t
        z_t = z_0 + sum_s L^-(s+1) (forcing of step s)``, whose terms shrink (the plain
        maps grow as ``L^t``: 1e89 over 635 steps of a mode at 1.46)."""
        plant = self.plant
        n, m, R, w = self._n, self._m, self._R, self.dead_steps
        L = basis @ plant.A_d @ basis.T
        step = np.linalg.inv(L) if discount else L
        blocks = [(j, basis @ plant.B_blocks[j]) for j in range(R + 1)
                  if np.any(plant.B_blocks[j])]
        on_p, on_u = np.zeros((basis.shape[0], n + m * R)), np.zeros((basis.shape[0],
                                                                      m * horizon))
        on_p[:, :n] = basis
        fixed = on_p.copy()
        scale = np.eye(basis.shape[0])            # L^-(t+1), discounted
        for t in range(w + horizon):
            if discount:
                scale = scale @ step
            else:
                on_p, on_u = L @ on_p, L @ on_u
            for j, block in blocks:
                i = t - j               # u_{k+i}: committed (p: oldest first) or a move
                force = scale @ block
                if i < 0:
                    on_p[:, n + (R + i) * m:n + (R + i + 1) * m] += force
                else:
                    on_u[:, i * m:(i + 1) * m] += force
            if t == w - 1:
                fixed = on_p.copy()
        return fixed, on_u, on_p

    def _reach_maps(self) -> tuple[np.ndarray, np.ndarray, tuple[float, float] | None]:
        """``(reach_u, reach_p, span)`` of the recovery check: the decay-scaled maps over
        ``_recovery_steps`` moves and, with one unstable mode, the range ``(low, high)`` of
        ``reach_u moves`` over the input box (else None)."""
        _, reach_u, reach_p = self._unstable_maps(self._recovery_basis, self._recovery_steps,
                                                  discount=True)
        span = None
        if reach_u.shape[0] == 1:
            gain = reach_u[0]
            low, high = self._reach_bounds
            with np.errstate(invalid="ignore"):     # 0 * inf: a move without effect
                ends = np.nan_to_num(np.stack([gain * low, gain * high]), nan=0.0,
                                     posinf=np.inf, neginf=-np.inf)
            span = (float(ends.min(axis=0).sum()), float(ends.max(axis=0).sum()))
        return reach_u, reach_p, span

    def _check_recovery(self, moves: np.ndarray, p: np.ndarray) -> None:
        """Warn (:class:`UnstableLoopWarning`, once per loop) when no inputs within the bounds
        bring the unstable modes' component back to zero within ``_recovery_steps`` moves:
        the state is beyond the region the bounds can recover, and the loop diverges (a
        trial: ``|u| <= 0.1`` on ``x' = 0.2 x`` from 2, the state at 7.9e8 after 100 steps,
        every solve "optimal").

        Only a plan that itself ends with a larger component than ``x_{k+w}``'s (fixed by
        the past) is examined: a plan may let the component grow because that is cheaper
        for the cost while the bounds could still bring it back (random plants with a
        slightly unstable pair: the loop grew it from 8 to 10.5, then converged), so the
        plan alone would be a false alarm.  The test is a box least-squares problem
        (``scipy.optimize.lsq_linear``; with one unstable mode, the distance of zero from
        the interval the moves reach) in the decay-scaled coordinates ``L^-t z_t``: zero is
        reached there exactly when ``z`` is."""
        # a plan off the bounds is the unconstrained one (stabilizing): the bounds do not
        # limit it (and the test below is skipped on most steps; the extreme moves decide
        # with the same limits for every input, as in _check_input_bounds)
        ride = self._ride
        if ride is not None:
            if moves[moves.argmin()] > ride[0] and moves[moves.argmax()] < ride[1]:
                return
        elif not (np.any(moves <= self._u_tiled[0]) or np.any(moves >= self._u_tiled[1])):
            return
        ends_p, terminal_u, reach = self._recovery
        if reach is None:       # (up to _MAX_RECOVERY_STEPS steps of a loop: built when asked)
            reach = self._reach_maps()
            self._recovery = (ends_p, terminal_u, reach)
        reach_u, reach_p, span = reach
        if span is not None:
            # one unstable mode: the moves reach exactly free + [low, high], and the box
            # least squares' residual is the distance of zero from it; decided first, as
            # it costs one product (the plan's test below, two; lsq_linear took up to
            # 5.5 ms over the 1844 moves of the benchmark plant)
            value = float(reach_p[0] @ p)
            left = max(0.0, value + span[0], -(value + span[1]))
            if left <= _RECOVERY_TOLERANCE * abs(value):
                return
        r = terminal_u.shape[0]
        ends = ends_p @ p                       # z_{k+w}, then the plan's end less its moves
        start = ends[:r] @ ends[:r]
        end = terminal_u @ moves
        end += ends[r:]
        if not end @ end > start:               # (squared norms; NaN: no)
            return
        if span is None:
            from scipy.optimize import lsq_linear

            free = reach_p @ p
            best = lsq_linear(reach_u, -free, bounds=tuple(self._reach_bounds),
                              method="bvls")
            left = float(np.linalg.norm(reach_u @ best.x + free))
            if left <= _RECOVERY_TOLERANCE * float(np.linalg.norm(free)):
                return
        start = float(np.sqrt(start))
        self._warned_recovery = True
        w, steps = self.dead_steps, self._recovery_steps
        warnings.warn(
            f"DelayedMPC: the input bounds cannot bring the plant's unstable mode(s) back "
            f"(|lambda| = {_fmt(self._unstable_moduli)}): their component is {start:.4g} at "
            f"x_(k+{w}) (fixed by the past), the plan ends with it larger, and no inputs "
            f"within [{_fmt(self.u_min)}, {_fmt(self.u_max)}] bring it back to zero even "
            f"over {steps} moves: the loop diverges. Widen the input bounds or start closer "
            f"to the {'operating point' if self.operating_point is not None else 'origin'}",
            UnstableLoopWarning, stacklevel=4)

    def _check_x(self, x: Any) -> np.ndarray:
        x = check_finite_array("x", x, ndim=1)
        if x.shape != (self._n,):
            raise DimensionError(f"x has shape {x.shape}; expected ({self._n},)")
        return x

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

    def _check_input_bounds(self, moves: np.ndarray, solver: str | None = None) -> None:
        """Refuse moves (time-major, shape (m N,)) that are not finite or lie beyond a bound by
        more than the tolerance (``solver``: the one that returned them, default
        :attr:`solver`).

        Quick tests first, each accepting only moves the exact comparison accepts: with the
        same limits for every input, the extreme moves decide (``argmin`` / ``argmax``: direct
        calls, a third of a ufunc reduction's cost; they pick a NaN, and an infinite limit is
        the largest float, so that an infinite move fails); else one maximum over the box.
        """
        if self._u_allowed is None:     # the limits with the tolerance, computed once
            self._input_limits()
        if self._u_range is not None:
            low, high = self._u_range
            if moves[moves.argmin()] >= low and moves[moves.argmax()] <= high:
                return
        elif self._u_box is not None:   # two-sided finite limits (NaN fails the test)
            middle, scale = self._u_box
            distance = np.abs(moves - middle) * scale
            if distance[distance.argmax()] < 1.0:
                return
        low, high = self._u_allowed
        finite = bool(np.isfinite(moves).all())
        if finite and (moves >= low).all() and (moves <= high).all():   # the exact decision
            return
        solver = solver or self.solver
        if not finite:
            raise SolverError(f"{solver} reported an optimal status but returned no finite "
                              f"solution")
        for name, bound, sign in (("u_min", self._u_lo, -1.0), ("u_max", self._u_hi, 1.0)):
            limit = low if sign < 0 else high
            if bound is not None and np.any(sign * (moves - limit) > 0):
                worst = float(np.max(sign * (moves - np.tile(bound, self.horizon))))
                raise SolverError(f"{solver} returned inputs that violate {name} by "
                                  f"{worst:.3g} (> tolerance {INPUT_BOUND_TOLERANCE:g}); "
                                  f"tighten solver_options or use another solver")

    def _signal_map(self) -> tuple[Any, np.ndarray | None, np.ndarray, np.ndarray,
                                   tuple[float, float]]:
        """``(rows_v, rows_p, lowest, highest, inside)``: the bounded signals of steps ``w + 1
        .. w + N`` (deviations, by step then component) are ``rows_v v + rows_p p`` of a QP
        solution (``None`` for cvxpy, which returns the states), ``[lowest, highest]`` the
        user's bounds widened by ``STATE_BOUND_TOLERANCE * max(1, |bound|)``, and ``inside``
        the largest lower and the smallest upper of them (the quick test's box)."""
        N = self.horizon
        tiled = [None if b is None else np.tile(b, N) for b in (self._x_lo, self._x_hi)]
        size = next(b.size for b in tiled if b is not None)
        lowest, highest = (np.full(size, sign * np.inf) if b is None else
                           b + sign * STATE_BOUND_TOLERANCE * np.maximum(1.0, np.abs(b))
                           for b, sign in zip(tiled, (-1.0, 1.0), strict=True))
        inside = (max(float(lowest.max()), -_LARGEST), min(float(highest.min()), _LARGEST))
        if self.solver == "CVXPY":
            return None, None, lowest, highest, inside
        qp = self._qp
        # the hard rows are H x = rows_v v - lower_p p within [lower0, upper0]
        return qp.A[qp.state_rows], -qp.lower_p[qp.state_rows], lowest, highest, inside

    def _check_state_bounds(self, signals: np.ndarray, solver: str | None = None) -> None:
        """Refuse a plan whose bounded signals (deviations, by step then component) lie beyond
        the hard bounds by more than ``STATE_BOUND_TOLERANCE`` (scaled by ``max(1,
        |bound|)``; ``solver``: the one that returned it, default :attr:`solver`)."""
        _, _, lowest, highest, inside = self._signal_check
        # the quick test first: inside the tightest bound of every step, nothing to compare
        if signals[signals.argmin()] >= inside[0] and signals[signals.argmax()] <= inside[1]:
            return
        if (signals >= lowest).all() and (signals <= highest).all():
            return
        solver = solver or self.solver
        if not np.isfinite(signals).all():
            raise SolverError(f"{solver} reported an optimal status but returned a plan "
                              f"whose predicted signals are not finite")
        excess = np.maximum(lowest - signals, signals - highest)
        worst = int(np.argmax(excess))
        s, kind, _, _ = self._bounded_signal
        size = self._n if self._bound_matrix is None else self._bound_matrix.shape[0]
        step, component = divmod(worst, size)
        side = f"{s}_min" if lowest[worst] - signals[worst] > 0 else f"{s}_max"
        bound = (self._x_lo if side.endswith("min") else self._x_hi)[component]
        when = self.dead_steps + step + 1
        # another solver than the one that failed (Clarabel's own plans broke bounds of 1e-2
        # beside states of 4e7, and the message named Clarabel)
        other = ("'DAQP'" + ("" if self._auto else " (or 'auto')")
                 if solver in ("CLARABEL", "CVXPY") else "'CLARABEL'")
        raise SolverError(
            f"{solver} reported a plan whose predicted {kind} {s}_(k+{when})[{component}] "
            f"violates {side} by {abs(signals[worst] - bound):.3g} (> tolerance "
            f"{STATE_BOUND_TOLERANCE:g} x max(1, |bound|)): an ill-conditioned QP, or solver "
            f"tolerances loosened in solver_options; use solver={other}, "
            f"soft_state_constraints=True, or a shorter horizon")

    def _input_limits(self) -> None:
        """The input limits with the tolerance (``_u_allowed``) and the quick tests' data."""
        self._u_allowed = [
            np.tile(np.full(self._m, sign * np.inf) if bound is None else
                    bound + sign * INPUT_BOUND_TOLERANCE * np.maximum(1.0, np.abs(bound)),
                    self.horizon)
            for bound, sign in ((self._u_lo, -1.0), (self._u_hi, 1.0))]
        low, high = self._u_allowed
        self._u_range = self._u_box = None
        if (low == low[0]).all() and (high == high[0]).all():
            self._u_range = max(float(low[0]), -_LARGEST), min(float(high[0]), _LARGEST)
        elif np.isfinite(low).all() and np.isfinite(high).all():
            self._u_box = 0.5 * (low + high), 2.0 / (high - low)

    def _infeasible_message(self, x: np.ndarray, history: np.ndarray,
                            solver: str | None = None) -> str:
        """Why the problem at ``x``, ``history`` (deviations from the operating point) is
        infeasible, as ``solver`` (default :attr:`solver`) reported; the values shown are
        physical, as the bounds are."""
        solver = solver or self.solver
        # "auto": OSQP's 'infeasible' was put to Clarabel (_solve_by_fallback), which agreed
        tried = "OSQP and CLARABEL" if self._may_fall_back and solver == "CLARABEL" else solver
        auto_too = "" if self._auto else " (or 'auto')"     # unless "auto" gave the result
        w, N = self.dead_steps, self.horizon
        op = self.operating_point
        x_at, u_at = (np.zeros(self._n), np.zeros(self._m)) if op is None else (op.state,
                                                                              op.input)
        shown_x, shown_history = x + x_at, history + u_at[:, None]
        # Input bounds alone, state (output) bounds that are all infinite, and soft ones
        # always admit a plan: 'infeasible' is then the solver's numerical trouble, and a
        # message about bounds that cannot be met (or a remedy of soft bounds already in
        # use) would mislead
        finite = any(b is not None and np.isfinite(b).any() for b in (self._x_lo, self._x_hi))
        if self.cvxpy_extension is not None:
            # its constraints may be what no plan meets: neither 'always feasible' nor the
            # bounds' reach (computed without them) can be said
            return (f"MPC problem is infeasible (CVXPY, with cvxpy_extension "
                    f"{getattr(self.cvxpy_extension, '__name__', self.cvxpy_extension)!r}): "
                    f"its constraints, with the input bounds [{_fmt(self.u_min)}, "
                    f"{_fmt(self.u_max)}]" + (" and the hard state (output) bounds" if finite
                                               and not self.soft_state_constraints else "")
                    + f", admit no plan from x_k={_fmt(shown_x)}, committed inputs "
                    f"{_fmt(shown_history)}; check the extension's constraints against the "
                    f"bounds (the same controller without it tells whether the bounds alone "
                    f"can be met)")
        if not finite or self.soft_state_constraints:
            why = ("it has only input bounds" if not finite else
                   "its state (output) bounds are soft")
            other = ("solver='DAQP'" if tried != solver else
                     "solver='DAQP' or 'OSQP'" if solver in ("CLARABEL", "CVXPY") else
                     "solver='CLARABEL'")
            return (f"{tried} reported the MPC problem infeasible although {why} "
                    f"(always feasible): numerical trouble at x_k={_fmt(shown_x)}, committed "
                    f"inputs {_fmt(shown_history)}; check the scaling of the model and of the "
                    f"state (signals of very different sizes), or use {other}")
        s, kind, low, high = self._bounded_signal
        p = np.concatenate([x, history.T.ravel()])
        qp = self._condensed_qp() if self.solver != "DAQP" else None
        if qp is not None and meets_bounds(qp, p):
            # a plan that meets every bound, checked: the report is the solver's trouble (the
            # cvxpy path, not rescaled, read 14 of a review's 140 random problems so, 3 with
            # hard bounds)
            return (f"{tried} reported the MPC problem infeasible, but DAQP on the "
                    f"condensed QP finds inputs within [{_fmt(self.u_min)}, "
                    f"{_fmt(self.u_max)}] whose {kind}s meet the hard bounds {s}_min="
                    f"{_fmt(low)}, {s}_max={_fmt(high)} (checked): numerical trouble at "
                    f"x_k={_fmt(shown_x)}, committed inputs {_fmt(shown_history)}; use "
                    f"solver='DAQP'{auto_too}, or scale the model's "
                    f"units")
        message = (f"MPC problem is infeasible ({tried}): the hard {kind} bounds "
                   f"{s}_min={_fmt(low)}, {s}_max={_fmt(high)} on "
                   f"{s}_(k+{w + 1}) .. {s}_(k+{w + N}) cannot be met with inputs in "
                   f"[{_fmt(self.u_min)}, {_fmt(self.u_max)}] from x_k={_fmt(shown_x)}")
        if self._R:
            message += (f" given the committed inputs u_(k-{self._R}) .. u_(k-1)="
                        f"{_fmt(shown_history)}")
        if self._R and w:
            # States fixed by the past: simulate w steps; u_k.. do not act before x_{k+w+1}.
            fixed = self.plant.simulate(x, np.zeros((self._m, w)), history)[:, -1] + x_at
            message += f"; x_(k+{w}) = {_fmt(fixed)} is already fixed by them"
        found = self._unreachable_bound(p)
        if found is not None:
            side, component, step, reached = found
            bound = (low if side == "min" else high)[component]
            # (output bounds are read in deviations from the output at the operating point)
            shift = bound - (self._x_lo if side == "min" else self._x_hi)[component]
            message += (f"; the first bound that cannot be met is {s}_{side}[{component}] = "
                        f"{bound:.4g} on {s}_(k+{step}) (the closest the inputs bring "
                        f"{s}_(k+{step})[{component}] is {reached + shift:.4g})")
        return message + ". Use soft_state_constraints=True, a longer horizon or wider bounds."

    @property
    def _bounded_signal(self) -> tuple[str, str, np.ndarray | None, np.ndarray | None]:
        """``(symbol, name, lower, upper)`` of the bounded signals: states or outputs."""
        if self._bound_matrix is None:
            return "x", "state", self.x_min, self.x_max
        return "y", "output", self.y_min, self.y_max

    def _condensed_qp(self) -> Any:
        """The condensed QP of this problem (the one in use, or built), or None when it would
        exceed ``MAX_DENSE_ENTRIES``."""
        qp = getattr(self, "_qp", None)
        if qp is None or qp.sparse:
            rows_per_step = (self._n if self._bound_matrix is None else
                             self._bound_matrix.shape[0])
            n_v, rows = qp_sizes(self._n, self._m, self.dead_steps, self.horizon, soft=False,
                                 sparse=False, bounded=rows_per_step)
            if n_v * (n_v + rows) > MAX_DENSE_ENTRIES:
                return None
            qp = self._build_qp(sparse=False)
        return qp

    def _unreachable_bound(self, p: np.ndarray) -> tuple[str, int, int, float] | None:
        """The earliest hard state (or output) bound missed by the inputs that miss them least
        (in the least-squares sense; DAQP with soft bound rows on the condensed QP), or None:
        ``(side "min" | "max", component, step, value reached in deviations)``."""
        qp = self._condensed_qp()
        missed = None if qp is None else unreachable_rows(qp, p)
        if missed is None:
            return None
        rows_per_step = self._n if self._bound_matrix is None else self._bound_matrix.shape[0]
        row, value, lower, upper = missed
        step, component = divmod(row, rows_per_step)
        return ("min" if value < lower else "max", component, self.dead_steps + 1 + step,
                value)


# ---------------------------------------------------------------------- module helpers
def _dead_steps(plant: DelayedPlant) -> int:
    acting = np.flatnonzero(plant.active_blocks.any(axis=1))
    if not acting.size:
        raise ParameterError("every input block B^(j) of the plant is zero: the inputs do not "
                             "act on the state, so there is nothing to control")
    return int(acting[0])


def _refuse_variate_bounds(model: Any, x_min: Any, x_max: Any) -> None:
    """Refuse state bounds on a model that carries its measurement matrix ``C``: an output
    model's states are its own basis' (canonical variates), so ``|x| <= 0.3`` bounds
    combinations without physical meaning (the review's loop: soft bounds of 0.3 changed
    nothing, the output still reached 0.97 after five steps), silently."""
    if (x_min is None and x_max is None) or getattr(model, "C", None) is None:
        return
    raise ParameterError(
        f"x_min/x_max bound the states of the model, and this model ({type(model).__name__}) "
        f"is an output model: its states are canonical variates of its own basis, not "
        f"physical quantities, so their bounds mean nothing in the plant's units; bound its "
        f"outputs (y_min, y_max) and inputs (u_min, u_max), or pass est.plant() to bound the "
        f"variates deliberately")


def _outputs(model: Any, n: int, C: Any, offset: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(C, c)`` of the outputs ``y = C x + c`` that output bounds constrain: ``C`` given or
    the model's own measurement matrix, and the output level (``offset``, else the model's
    ``offset_``, else zero)."""
    given = C is not None
    C = measurement_matrix(model, C, n, missing=(
        f"y_min/y_max bound the outputs y = C x + c: give C (the outputs' measurement matrix "
        f"in the model's state basis) or a model that carries its own (an OutputDMDidc); "
        f"this model ({type(model).__name__}) has none; or bound its states with x_min/x_max"))
    refuse_feedthrough(model)
    if given and offset is None and getattr(model, "offset_", None) is None:
        # a setpoint model (est.plant().with_operating_point(...)) has lost the level: read
        # against 0, bounds of level + 5 bounded the outputs at level + 3 (offset_ 2)
        raise ParameterError(
            f"output_offset is required with C= for a model without an output level of its "
            f"own ({type(model).__name__} has no offset_): pass the outputs' level c of "
            f"y = C x + c (an output model's est.offset_), or 0 for outputs y = C x")
    return C, output_level(model, offset, C.shape[0], name="output_offset")


def _bounds(prefix: str, low: Any, high: Any, size: int) -> tuple[np.ndarray | None,
                                                                  np.ndarray | None]:
    out = []
    for suffix, value, sign in (("min", low, -1.0), ("max", high, 1.0)):
        name = f"{prefix}_{suffix}"
        out.append(None if value is None else _bound(name, value, size, sign))
    low, high = out
    if low is not None and high is not None and np.any(low > high):
        bad = np.flatnonzero(low > high)
        raise ParameterError(f"{prefix}_min > {prefix}_max in component(s) {bad.tolist()} "
                             f"({low[bad].tolist()} > {high[bad].tolist()}): no {prefix} is "
                             f"admissible")
    return low, high


def _bound(name: str, value: Any, size: int, sign: float) -> np.ndarray:
    """A scalar or ``(size,)`` bound whose entries are finite or ``sign * inf`` (no bound on
    that channel: a user who bounds one input of two has no other way to say so, and a
    stand-in such as 1e15 left Clarabel's tolerances at its scale, an 'optimal' first move
    of 0 where the move was 0.067)."""
    try:                # (None in a list reads as NaN; the rest is check_scalar_or_vector's)
        array = np.asarray(value, dtype=float) if not np.iscomplexobj(value) else None
    except (TypeError, ValueError, OverflowError):
        array = None
    if array is not None:
        if array.ndim == 0:         # a scalar bounds every component
            array = np.full(size, float(array))
        if np.isnan(array).any():
            bad = np.flatnonzero(np.isnan(array)).tolist()
            raise NonFiniteError(f"{name} is NaN (or None) in component(s) {bad}; a bound is a "
                                 f"number, or {'-' if sign < 0 else ''}inf for no bound on a "
                                 f"channel (None for the whole side)")
        wrong = array == -sign * np.inf
        if wrong.any():
            raise ParameterError(
                f"{name} is {'' if sign < 0 else '-'}inf in component(s) "
                f"{np.flatnonzero(wrong).tolist()}, which admits no value; accepted: finite "
                f"numbers, or {'-' if sign < 0 else ''}inf for no bound on a channel")
        open_side = array == sign * np.inf
        if open_side.any():
            checked = check_scalar_or_vector(name, np.where(open_side, 0.0, array), size)
            return np.where(open_side, sign * np.inf, checked)
    return check_scalar_or_vector(name, value, size)


def _hold_within(prefix: str, point: np.ndarray, low: np.ndarray | None,
                 high: np.ndarray | None, operating: bool) -> None:
    """Refuse bounds that exclude the point the controller regulates to (the model's operating
    point, or the origin for a model without one: ``operating`` False): the constrained
    problem could never hold it, and the loop would sit at a bound instead, silently (a model
    at 45 % valve with ``|u| <= 10``: cost 3e5 against 425 unconstrained)."""
    outside = np.zeros(point.shape, dtype=bool)
    if low is not None:
        outside |= point < low
    if high is not None:
        outside |= point > high
    if not outside.any():
        return
    bad = np.flatnonzero(outside)
    lows = "-inf" if low is None else _fmt(low[bad])
    highs = "inf" if high is None else _fmt(high[bad])
    if not operating:
        raise ParameterError(
            f"the model has no operating point, so the controller regulates to {prefix} = 0, "
            f"which [{prefix}_min, {prefix}_max] = [{lows}, {highs}] excludes (component(s) "
            f"{bad.tolist()}): the constrained problem could never hold it. Widen the bounds "
            f"to contain 0, or give the model the equilibrium to hold: identify it from data "
            f"at their level (dmdidc identify keeps the inputs' level unless --detrend), or "
            f"in Python model.with_operating_point(input=...)")
    raise ParameterError(f"the model's operating point {prefix}_op = {_fmt(point[bad])} "
                         f"(component(s) {bad.tolist()}) lies outside [{prefix}_min, "
                         f"{prefix}_max] = [{lows}, {highs}]: the constrained problem could "
                         f"never hold it. The bounds are physical values, not deviations from "
                         f"the operating point: widen them to contain it (an actuator range "
                         f"such as 0 .. 100 % takes {prefix}_min=0, {prefix}_max=100)")


def _fmt(value: np.ndarray | None) -> str:
    if value is None:
        return "None"
    return np.array2string(np.asarray(value), precision=4, separator=", ")
