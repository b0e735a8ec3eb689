"""Delay-aware MPC of every household at once: one QP with a block per household.

Each household's gateway solves :class:`controllers.DelayedMPC`'s problem on the identified
fleet model -- prediction through the delay with the deviations already sent, cost on the
states the decisions can reach, the same Riccati terminal weight -- in deviations from its own
reference (:mod:`simulations.smartgrid.tracking`), with the heat pump's power limits (hard,
around the reference) and the comfort band on the air temperature (soft, exact L1 penalty) as
constraints.  The households' problems share the model and differ only in their data, so this
module condenses the prediction once (``x = Phi z_0 + Gamma v``) and solves all of them as one
block-separable QP per period: the same solutions as one solve per household (tested against
:class:`controllers.DelayedMPC`), about two orders of magnitude faster for a fleet.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import cvxpy as cp
import numpy as np

from controllers.errors import SolverError
from controllers.mpc import DelayedMPC
from dmdidc.model import DelayedPlant
from privacy.validation import check_integer, check_positive

__all__ = ["FleetMPC"]

_ACCEPTED = (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)


def _factor(weight: np.ndarray) -> np.ndarray:
    """``L`` with ``L^T L = weight`` (symmetric PSD)."""
    values, vectors = np.linalg.eigh(0.5 * (weight + weight.T))
    return np.sqrt(np.clip(values, 0.0, None))[:, None] * vectors.T


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
    solver : {"CLARABEL", "OSQP"}, default "CLARABEL"

    Attributes
    ----------
    solve_seconds : list of float
        Wall-clock time of every solve.
    """

    def __init__(self, model: DelayedPlant, *, households: int, horizon: int, Q: Any, R: Any,
                 input_limits: tuple[float, float], comfort: tuple[float, float] | None,
                 comfort_penalty: float = 1e3, solver: str = "CLARABEL") -> None:
        single = DelayedMPC(model, horizon=horizon, Q=Q, R=R, solver=solver)
        self.model, self.horizon, self.solver = model, single.horizon, single.solver
        self.households = check_integer("households", households, minimum=1)
        self.dead_steps = w = single.dead_steps
        self.input_limits = tuple(float(v) for v in input_limits)
        self.comfort = None if comfort is None else tuple(float(v) for v in comfort)
        penalty = check_positive("comfort_penalty", comfort_penalty)
        n, Rm, H = model.n_states, model.max_delay, self.horizon
        self.history_steps = Rm
        self._predictions(w)
        N = self.households
        self._v = cp.Variable((H, N), name="v")
        self._stage_free = cp.Parameter((n * (H - 1), N), name="stage_free") if H > 1 else None
        self._terminal_free = cp.Parameter((self._terminal_rows.shape[0], N), name="terminal")
        self._low = cp.Parameter((H, N), name="low")
        self._high = cp.Parameter((H, N), name="high")
        objective = cp.sum_squares(_factor(single.terminal_weight)
                                   @ (self._terminal_free + self._terminal_input @ self._v))
        objective += float(single.R[0, 0]) * cp.sum_squares(self._v)   # one input: R scalar
        if H > 1:
            stage_weight = _factor(np.kron(np.eye(H - 1), single.Q))
            objective += cp.sum_squares(stage_weight
                                        @ (self._stage_free + self._stage_input @ self._v))
        constraints = [self._v >= self._low, self._v <= self._high]
        if self.comfort is not None:
            self._slack = cp.Variable((H, N), nonneg=True, name="slack")
            self._comfort_low = cp.Parameter((H, N), name="comfort_low")
            self._comfort_high = cp.Parameter((H, N), name="comfort_high")
            reach = self._comfort_input @ self._v
            constraints += [reach >= self._comfort_low - self._slack,
                            reach <= self._comfort_high + self._slack]
            objective += penalty * cp.sum(self._slack)
        self.problem = cp.Problem(cp.Minimize(objective), constraints)
        self.solve_seconds: list[float] = []

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
        self._low.value = self.input_limits[0] - u_ref
        self._high.value = self.input_limits[1] - u_ref
        if H > 1:
            self._stage_free.value = self._stage_rows @ z0
        self._terminal_free.value = self._terminal_rows @ z0
        if self.comfort is not None:
            ref_first = x_ss[None, :, 0] + dx[w + 1:w + 1 + H, 0][:, None]    # (H, N)
            free_first = self._comfort_rows @ z0
            self._comfort_low.value = self.comfort[0] - ref_first - free_first
            self._comfort_high.value = self.comfort[1] - ref_first - free_first
        begin = time.perf_counter()
        self.problem.solve(solver=self.solver, warm_start=True)
        self.solve_seconds.append(time.perf_counter() - begin)
        status = self.problem.status
        if status not in _ACCEPTED:
            raise SolverError(f"the fleet MPC returned status {status!r} (the input limits are "
                              f"hard; the comfort band is soft, so this is a solver failure)")
        if status == cp.OPTIMAL_INACCURATE:
            warnings.warn("the fleet MPC solver stopped at reduced accuracy", RuntimeWarning,
                          stacklevel=2)
        moves = np.asarray(self._v.value[0], dtype=float)
        return np.clip(moves, self._low.value[0], self._high.value[0])
