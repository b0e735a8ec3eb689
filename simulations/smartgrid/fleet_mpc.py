"""Delay-aware MPC of every household at once: one small QP per household, solved as a batch.

Each household's gateway solves :class:`controllers.DelayedMPC`'s problem on the identified
fleet model -- prediction through the delay with the deviations already sent, cost on the
states the decisions can reach, the same Riccati terminal weight -- in deviations from its own
reference (:mod:`simulations.smartgrid.tracking`), with the heat pump's power limits (hard,
around the reference) and the comfort band on the air temperature (soft, exact L1 penalty) as
constraints.  The households' problems share the model and differ only in their data: the
condensed prediction (``x = Phi z_0 + Gamma v``), the Hessian and the constraint matrix are the
same for all of them, so the households' QPs are solved together by a primal-dual
interior-point method (Mehrotra's predictor-corrector, e.g. Nocedal and Wright, *Numerical
Optimization*, 2nd ed., Alg. 16.4) vectorized over households: every iteration solves one small
``(2N_h, 2N_h)`` Newton system per household in one batched ``numpy.linalg.solve``, and each
household takes its own step length.  Tested against one :class:`controllers.DelayedMPC`
(Clarabel through cvxpy) per household.  Interior point rather than ADMM because the exact L1
comfort penalty makes the multipliers large: ADMM (OSQP's iteration) needed thousands of
iterations there.  The interior point solves each Newton system rather than inverting it
(the explicit inverse lost the step's accuracy as the weights spread from 1e-17 to 1e22: it
failed on 5 of the closed loops of 10 single-house fits, from either start; solved, none
fails), and starts with a zero dual residual (multipliers that balance the penalty,
:meth:`FleetMPC._start`): 10-20 iterations (mean 11) where unit multipliers needed about 40.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from _toolbox.errors import SolverError
from _toolbox.validation import check_integer, check_positive
from controllers.mpc import DelayedMPC
from dmdidc.model import DelayedPlant

__all__ = ["FleetMPC"]

#: Interior-point tolerance (residuals and complementarity) and iteration limit.
_TOLERANCE = 1e-9
_MAX_ITER = 100
#: A solution whose residuals stay above this after ``_MAX_ITER`` is refused.
_FAIL_RESIDUAL = 1e-5


class FleetMPC:
    """Batched delay-aware tracking MPC (module notes); a law for
    :class:`~simulations.smartgrid.tracking.FleetTracker`.

    Parameters
    ----------
    model : DelayedPlant
        Identified fleet model (one input).
    households : int
        Number of households solved together.
    horizon : int
        Decision moves ``N``.
    Q, R : array_like
        Weights on the state deviation (n, n) and the input deviation (scalar), as in
        :class:`controllers.DelayedMPC` (whose Riccati terminal weight is used).
    input_limits : (float, float)
        Limits of the model-coordinate input (the reference is added to them).
    comfort : (float, float) or None
        Band of the first state (model coordinates); soft.
    comfort_penalty : float, default 1e3
        L1 weight of a comfort violation (per K and period).

    Attributes
    ----------
    solve_seconds : list of float
        Wall-clock time of every solve.
    iterations : list of int
        Interior-point iterations of every solve.

    Raises
    ------
    controllers.SolverError
        From a call, when the iteration has not converged (residuals above 1e-5).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[-1e-3, 1e-3], [1e-4, -2e-4]], [[0.0], [2e-4]],
    ...                                      delay=450.0, dt=300.0)
    >>> mpc = FleetMPC(plant, households=3, horizon=6, Q=np.diag([1.0, 0.1]), R=1.0,
    ...                input_limits=(-0.5, 0.5), comfort=(-1.0, 1.0))
    >>> moves = mpc(np.array([[-2.0, 0.0], [0.0, 0.0], [2.0, 0.0]]), np.zeros((3, 2)),
    ...             u_ss=np.zeros(3), x_ss=np.zeros((3, 2)), m=np.zeros(12),
    ...             dx=np.zeros((12, 2)))
    >>> moves.round(3)           # too cold: full power; at the target: nothing; too warm: off
    array([ 0.5,  0. , -0.5])
    """

    def __init__(self, model: DelayedPlant, *, households: int, horizon: int, Q: Any, R: Any,
                 input_limits: tuple[float, float], comfort: tuple[float, float] | None,
                 comfort_penalty: float = 1e3) -> None:
        single = DelayedMPC(model, horizon=horizon, Q=Q, R=R)
        self.model, self.horizon = model, single.horizon
        self.households = check_integer("households", households, minimum=1)
        self.dead_steps = w = single.dead_steps
        self.input_limits = tuple(float(v) for v in input_limits)
        self.comfort = None if comfort is None else tuple(float(v) for v in comfort)
        self.penalty = check_positive("comfort_penalty", comfort_penalty)
        self.history_steps = model.max_delay
        self._predictions(w)
        H = self.horizon
        # objective ||L_T (t_free + T_in v)||^2 + r ||v||^2 + ||L_S (s_free + S_in v)||^2
        # = 0.5 v' P v + q' v + const, q = 2 (T_in' W_T t_free + S_in' W_S s_free)
        W_T = single.terminal_weight
        W_S = np.kron(np.eye(H - 1), single.Q) if H > 1 else np.zeros((0, 0))
        self._q_terminal = 2.0 * self._terminal_input.T @ W_T @ self._terminal_rows
        self._q_stage = 2.0 * self._stage_input.T @ W_S @ self._stage_rows if H > 1 else \
            np.zeros((H, self._terminal_rows.shape[1]))
        P_v = 2.0 * (self._terminal_input.T @ W_T @ self._terminal_input
                     + float(single.R[0, 0]) * np.eye(H))
        if H > 1:
            P_v += 2.0 * self._stage_input.T @ W_S @ self._stage_input
        self._P_v_inverse = np.linalg.inv(P_v)
        # variables [v; s] (s: comfort slack), constraints G [v; s] <= h:
        # v <= high, -v <= -low, -C v - s <= -c_low, C v - s <= c_high, -s <= 0
        eye = np.eye(H)
        if self.comfort is None:
            self._P, self._G = P_v, np.vstack([eye, -eye])
        else:
            C, Z = self._comfort_input, np.zeros((H, H))
            self._P = np.block([[P_v, Z], [Z, Z]])
            self._G = np.block([[eye, Z], [-eye, Z], [-C, -eye], [C, -eye], [Z, -eye]])
        self.solve_seconds: list[float] = []
        self.iterations: list[int] = []

    def _predictions(self, w: int) -> None:
        """Condensed prediction of ``x_{k+t}``, t = 1 .. w + N, from ``z_0`` and the moves."""
        model, H = self.model, self.horizon
        n, Rm = model.n_states, model.max_delay
        F, G = model.lifted_matrices()
        size = F.shape[0]
        steps = w + H
        free = np.empty((steps + 1, size, size))
        forced = np.zeros((steps + 1, size, H))
        free[0] = np.eye(size)
        for t in range(steps):
            free[t + 1] = F @ free[t]
            forced[t + 1] = F @ forced[t]
            if t < H:
                forced[t + 1][:, t] += G[:, 0]
        # states the decisions reach: x_{k+w+1} .. x_{k+w+N}
        reach_free = free[w + 1:, :n]                        # (N, n, size)
        reach_input = forced[w + 1:, :n]                     # (N, n, H)
        self._stage_rows = reach_free[:-1].reshape(-1, size)
        self._stage_input = reach_input[:-1].reshape(-1, H)
        self._comfort_rows = reach_free[:, 0]                # first state, (N, size)
        self._comfort_input = reach_input[:, 0]              # (N, H)
        # lifted terminal state [x_{k+w+N}; v_{k+N-1}, ..., v_{k+N-(R-w)}] (DelayedMPC's)
        rows = [reach_free[-1]]
        inputs = [reach_input[-1]]
        for i in range(Rm - w):
            lag = H - 1 - i                                   # v_{k+lag}
            row, col = np.zeros((1, size)), np.zeros((1, H))
            if lag >= 0:
                col[0, lag] = 1.0
            else:
                row[0, n + (-lag - 1)] = 1.0                  # v_{k+lag} is in the history
            rows.append(row)
            inputs.append(col)
        self._terminal_rows = np.vstack(rows)
        self._terminal_input = np.vstack(inputs)

    def __call__(self, e: np.ndarray, history: np.ndarray, *, u_ss: np.ndarray,
                 x_ss: np.ndarray, m: np.ndarray, dx: np.ndarray, **_: Any) -> np.ndarray:
        """First moves ``v_k`` (N,) for deviations ``e`` (N, n) and past moves ``history``
        (N, >= R), newest first; ``m``, ``dx`` the reference ahead (from period k on)."""
        H, w = self.horizon, self.dead_steps
        z0 = np.hstack([e, history[:, :self.history_steps]]).T          # (size, N)
        u_ref = u_ss[None, :] + m[:H, None]                              # (H, N)
        low_v, high_v = self.input_limits[0] - u_ref, self.input_limits[1] - u_ref
        q_v = self._q_terminal @ z0 + self._q_stage @ z0
        if self.comfort is None:
            q, h = q_v, np.vstack([high_v, -low_v])
        else:
            ref_first = x_ss[None, :, 0] + dx[w + 1:w + 1 + H, 0][:, None]    # (H, N)
            free_first = self._comfort_rows @ z0
            c_low = self.comfort[0] - ref_first - free_first
            c_high = self.comfort[1] - ref_first - free_first
            q = np.vstack([q_v, np.full_like(q_v, self.penalty)])
            h = np.vstack([high_v, -low_v, -c_low, c_high, np.zeros_like(c_low)])
        begin = time.perf_counter()
        # a household whose unconstrained minimizer (zero slack) is feasible needs no more:
        # for a convex QP it is the optimum
        v_free = -self._P_v_inverse @ q_v                                # (H, N)
        x = np.zeros((q.shape[0], q.shape[1]))
        x[:H] = v_free
        inside = np.all(self._G @ x <= h + 1e-12, axis=0)
        moves = v_free[0].copy()
        if not np.all(inside):
            rest = ~inside
            moves[rest] = self._interior_point(q[:, rest].T, h[:, rest].T)[:, 0]
        self.solve_seconds.append(time.perf_counter() - begin)
        return np.clip(moves, low_v[0], high_v[0])

    def _start(self, q: np.ndarray, h: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Starting ``(x, s, lam)`` with a zero dual residual: the unconstrained moves, comfort
        slacks covering their violation, and multipliers that balance the objective's gradient
        (1 on both input limits, a third of the penalty on each of a slack's three rows).

        The comfort penalty (1e3) is the objective's largest gradient; starting from unit
        multipliers left a dual residual of 1e3 whose first steps pushed the complementarity to
        1e15: about 40 iterations against 11 from this start (the failures of trial t15 seeds
        0 and 3 were the explicit inverse's, which failed from either start; solved Newton
        systems converge from both, a review's ablation).
        """
        H = self.horizon
        N = q.shape[0]
        x = np.zeros((N, self._G.shape[1]))
        x[:, :H] = -q[:, :H] @ self._P_v_inverse.T
        lam = np.ones((N, self._G.shape[0]))
        if self.comfort is not None:
            # slack rows -C v - s <= -c_low and C v - s <= c_high: s_j >= the violation
            violation = np.maximum(-x[:, :H] @ self._comfort_input.T - h[:, 2 * H:3 * H],
                                   x[:, :H] @ self._comfort_input.T - h[:, 3 * H:4 * H])
            x[:, H:] = np.maximum(violation, 0.0) + 1.0
            lam[:, 2 * H:] = self.penalty / 3.0
        s = np.maximum(h - x @ self._G.T, 1.0)     # infeasible rows: r_p absorbs the rest
        return x, s, lam

    def _interior_point(self, q: np.ndarray, h: np.ndarray) -> np.ndarray:
        """``argmin 0.5 x' P x + q_i' x`` s.t. ``G x <= h_i`` for every household (rows of
        ``q`` (N, n_x) and ``h`` (N, m)); returns ``x`` (N, n_x).  Households leave the
        iteration as they converge."""
        P, G = self._P, self._G
        N, n_x = q.shape
        m = G.shape[0]
        x, s, lam = self._start(q, h)
        scale = 1.0 + np.max(np.abs(q), axis=1) + np.max(np.abs(h), axis=1)     # (N,)
        active = np.arange(N)
        residual = np.full(N, np.inf)
        iterations = 0
        while active.size and iterations < _MAX_ITER:
            iterations += 1
            xa, sa, la, qa, ha = x[active], s[active], lam[active], q[active], h[active]
            r_d = xa @ P.T + qa + la @ G                     # P x + q + G' lam
            r_p = xa @ G.T + sa - ha                         # G x + s - h
            mu = np.sum(sa * la, axis=1) / m
            residual[active] = np.maximum.reduce([np.max(np.abs(r_d), axis=1),
                                                  np.max(np.abs(r_p), axis=1), mu])
            going = residual[active] > _TOLERANCE * scale[active]
            if not np.any(going):
                break
            active, xa, sa, la = active[going], xa[going], sa[going], la[going]
            r_d, r_p, mu = r_d[going], r_p[going], mu[going]
            W = la / sa
            # P + G'WG is solved, not inverted: W spans 1e-17..1e22 near the end, where an
            # explicit inverse loses the accuracy the Newton step needs
            M = P[None] + (G.T[None] * W[:, None, :]) @ G
            state = (G, M, W, r_d, r_p, sa, la)
            dx, ds, dlam = _newton_direction(state, sa * la)            # predictor
            alpha = _step_length(sa, ds, la, dlam, 1.0)
            mu_affine = np.sum((sa + alpha[:, None] * ds) * (la + alpha[:, None] * dlam),
                               axis=1) / m
            sigma = (mu_affine / mu) ** 3
            dx, ds, dlam = _newton_direction(state, sa * la + ds * dlam
                                             - (sigma * mu)[:, None])   # corrector
            alpha = _step_length(sa, ds, la, dlam, 0.99)[:, None]
            x[active] = xa + alpha * dx
            s[active] = sa + alpha * ds
            lam[active] = la + alpha * dlam
        self.iterations.append(iterations)
        worst = float(np.max(residual / scale))
        if worst > _FAIL_RESIDUAL:
            raise SolverError(f"the fleet MPC's interior point did not converge in {_MAX_ITER} "
                              f"iterations (largest relative residual {worst:.2e})")
        if worst > _TOLERANCE:
            warnings.warn(f"the fleet MPC stopped at reduced accuracy (relative residual "
                          f"{worst:.1e})", RuntimeWarning, stacklevel=3)
        return x


def _newton_direction(state: tuple, r_c: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Newton step ``(dx, ds, dlam)`` of the KKT system for complementarity target ``r_c``
    (``s * lam`` minus the centring term), the other residuals in ``state``."""
    G, M, W, r_d, r_p, s, lam = state
    rhs = -r_d - (W * (r_p - r_c / lam)) @ G
    dx = np.linalg.solve(M, rhs[:, :, None])[:, :, 0]
    dlam = W * (dx @ G.T + r_p - r_c / lam)
    ds = -(r_c + s * dlam) / lam
    return dx, ds, dlam


def _step_length(s: np.ndarray, ds: np.ndarray, lam: np.ndarray, dlam: np.ndarray,
                 fraction: float) -> np.ndarray:
    """Largest step in (0, 1] per household keeping ``s`` and ``lam`` positive (times
    ``fraction``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(ds < 0, -s / ds, np.inf)
        ratios = np.minimum(ratios, np.where(dlam < 0, -lam / dlam, np.inf))
    return np.minimum(1.0, fraction * np.min(ratios, axis=1))
