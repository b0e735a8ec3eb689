"""The problem of :class:`controllers.DelayedMPC` as a parametric quadratic program, built once.

Only vectors depend on the measured state ``x_k`` and the committed inputs
``u_{k-R} .. u_{k-1}``; stacked as ``p = [x_k, u_{k-R}, ..., u_{k-1}]`` they enter linearly:

    minimize    0.5 v' H v + (q0 + q_p p)' v + p' Y p
    subject to  lower0 + lower_p p  <=  A v  <=  upper0 + upper_p p,

so a controller builds ``H`` and ``A`` (and factors them, in the solver) once and only updates
``q``, ``lower`` and ``upper`` at each step.  Two layouts of the decision vector ``v``:

* **condensed** (dense): ``v = [u_k .. u_{k+N-1}, slack]``; the states are eliminated with the
  prediction ``x_t = T_v[t] v + T_p[t] p``.  Few variables (``m N``), dense matrices: the layout
  of an active-set solver (DAQP) and of small problems.
* **sparse**: ``v = [u, slack, x_{k+1} .. x_{k+w+N}]`` with the dynamics as equality rows; the
  matrices grow linearly with the horizon: the layout of OSQP or Clarabel for long horizons or
  many states.

Both are derived from one description: every state and input is an affine map of ``(v, p)``,
and the cost blocks, bounds and dynamics are written once in terms of these maps.  The leading
rows of ``A`` are the bounds on ``u`` and on the slack (identity rows on the leading entries of
``v``), which an active-set solver treats as simple bounds.

References
----------
Dissertation eqs. (9.21), (9.65) (the delayed prediction); J. B. Rawlings, D. Q. Mayne and
M. M. Diehl, *Model Predictive Control*, 2nd ed., 2017, Sec. 6.1 (condensed and sparse QPs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dmdidc.model import DelayedPlant

__all__ = ["MPCQuadraticProgram", "build_qp"]


@dataclass(frozen=True)
class MPCQuadraticProgram:
    """A parametric QP (module notes); matrices dense (condensed) or scipy CSC (sparse).

    Attributes
    ----------
    hessian : ndarray or sparse matrix, shape (n_v, n_v)
        ``H`` (full, symmetric, positive semidefinite).
    q0, q_p : ndarray, shapes (n_v,), (n_v, n_p)
        Linear cost ``q0 + q_p p``.
    constant_p : ndarray, shape (n_p, n_p)
        The cost's part ``p' Y p`` that no decision moves.
    A : ndarray or sparse matrix, shape (n_rows, n_v)
        Constraint rows: first the ``n_simple`` simple bounds on ``v[:n_simple]``, then the
        state bounds (``state_rows``), then (sparse layout) the dynamics.
    lower0, lower_p, upper0, upper_p : ndarray
        Row bounds ``lower0 + lower_p p`` and ``upper0 + upper_p p`` (infinite where a side is
        absent).
    n_simple : int
        Leading rows that are identity rows on ``v[:n_simple]``.
    state_rows : slice
        The rows of state (or output) bounds, ordered (side, step, component) with sides
        ``x_min`` / ``x_max`` for soft bounds, or one two-sided row per (step, component) for
        hard bounds.
    states_v, states_p : ndarray or sparse matrix
        Predicted states ``x_k .. x_{k+w+N}`` stacked by time: ``states_v v + states_p p``.
    n_inputs : int
        ``m N``: the inputs are ``v[:m N]``, time-major.
    sparse : bool
        Layout (module notes).
    column_groups, row_groups : ndarray of int
        Labels of the variables and of the rows: one label for one signal at every step (an
        input channel, a slack of one bounded signal, a state component; the bounds of one
        signal, the dynamics of one component), so that a scaling of the variables
        (:func:`controllers.qp_solvers.equilibrate`) gives each signal one scale.
    """

    hessian: Any
    q0: np.ndarray
    q_p: np.ndarray
    constant_p: np.ndarray
    A: Any
    lower0: np.ndarray
    lower_p: np.ndarray
    upper0: np.ndarray
    upper_p: np.ndarray
    n_simple: int
    state_rows: slice
    states_v: Any
    states_p: np.ndarray
    n_inputs: int
    sparse: bool
    column_groups: np.ndarray
    row_groups: np.ndarray

    @property
    def n_variables(self) -> int:
        """Number of decision variables ``n_v``."""
        return self.q0.shape[0]

    def cost_vector(self, p: np.ndarray) -> np.ndarray:
        """``q0 + q_p p``, shape (n_v,)."""
        return self.q0 + self.q_p @ p

    def bounds(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row bounds ``(lower, upper)`` at ``p``."""
        return self.lower0 + self.lower_p @ p, self.upper0 + self.upper_p @ p

    def cost(self, v: np.ndarray, p: np.ndarray) -> float:
        """The MPC objective at ``v`` (with the constant part)."""
        return float(v @ (0.5 * (self.hessian @ v) + self.cost_vector(p))
                     + p @ (self.constant_p @ p))

    def states(self, v: np.ndarray, p: np.ndarray, n: int) -> np.ndarray:
        """Predicted states, shape (n, w + N + 1)."""
        return (self.states_v @ v + self.states_p @ p).reshape(-1, n).T


#: Largest identity block of a sparse selector.
_EYE_PIECE = 512


class _Blocks:
    """A sparse linear map as a list of dense blocks ``(first row, first column, block)``.

    The sparse layout's maps (selectors, dynamics rows) are assembled from a few small blocks
    each; scipy's per-operation overhead made the horizon loop cost seconds, so the blocks are
    kept as numpy arrays and scattered into one CSC matrix at the end (duplicates add up).
    """

    __array_ufunc__ = None      # ``ndarray @ _Blocks`` calls ``_Blocks.__rmatmul__``

    def __init__(self, shape: tuple[int, int], blocks: list | None = None) -> None:
        self.shape, self.blocks = shape, blocks or []

    def __add__(self, other: _Blocks) -> _Blocks:
        return _Blocks(self.shape, self.blocks + other.blocks)

    def __neg__(self) -> _Blocks:
        return _Blocks(self.shape, [(r, c, -b) for r, c, b in self.blocks])

    def __sub__(self, other: _Blocks) -> _Blocks:
        return self + (-other)

    def __rmatmul__(self, M: np.ndarray) -> _Blocks:
        return _Blocks((M.shape[0], self.shape[1]),
                       [(0, c, M[:, r:r + b.shape[0]] @ b) for r, c, b in self.blocks])

    @staticmethod
    def vstack(parts: list[_Blocks]) -> _Blocks:
        blocks, rows = [], 0
        for part in parts:
            blocks += [(rows + r, c, b) for r, c, b in part.blocks]
            rows += part.shape[0]
        return _Blocks((rows, parts[0].shape[1]), blocks)

    def gram(self, W: np.ndarray) -> _Blocks:
        """``C' W C`` (shape (columns, columns))."""
        return _Blocks((self.shape[1], self.shape[1]),
                       [(c1, c2, b1.T @ W[r1:r1 + b1.shape[0], r2:r2 + b2.shape[0]] @ b2)
                        for r1, c1, b1 in self.blocks for r2, c2, b2 in self.blocks])

    def cross(self, W: np.ndarray, C_p: np.ndarray) -> np.ndarray:
        """``C' W C_p`` (dense)."""
        out = np.zeros((self.shape[1], C_p.shape[1]))
        for r, c, b in self.blocks:
            out[c:c + b.shape[1]] += b.T @ (W[r:r + b.shape[0]] @ C_p)
        return out

    def tocsc(self) -> sp.csc_matrix:
        rows, cols, values = [np.zeros(0, dtype=int)], [np.zeros(0, dtype=int)], [np.zeros(0)]
        for r, c, b in self.blocks:
            i, j = np.nonzero(b)
            rows.append(r + i)
            cols.append(c + j)
            values.append(b[i, j])
        return sp.csc_matrix((np.concatenate(values), (np.concatenate(rows),
                                                       np.concatenate(cols))), shape=self.shape)


def qp_sizes(n: int, m: int, dead_steps: int, horizon: int, *, soft: bool,
             sparse: bool, bounded: int | None = None) -> tuple[int, int]:
    """``(variables, constraint rows)`` of the QP (without building it); for size checks.
    ``bounded``: the bounded signals per step (``n`` states by default, or ``l`` outputs)."""
    bounded = n if bounded is None else bounded
    slack = bounded * horizon if soft else 0
    states = n * (dead_steps + horizon) if sparse else 0
    state_rows = 2 * bounded * horizon if soft else bounded * horizon
    return m * horizon + slack + states, m * horizon + slack + state_rows + states


def build_qp(plant: DelayedPlant, *, dead_steps: int, horizon: int, Q: np.ndarray,
             R: np.ndarray, terminal_weight: np.ndarray, u_bounds: tuple[Any, Any],
             x_bounds: tuple[Any, Any], soft: bool, state_penalty: float,
             sparse: bool, bound_matrix: np.ndarray | None = None) -> MPCQuadraticProgram:
    """Build the QP of :class:`controllers.DelayedMPC` once (module notes).

    Parameters
    ----------
    plant : DelayedPlant
        Deviation model (no operating point).
    dead_steps, horizon : int
        ``w`` and ``N``.
    Q, R, terminal_weight : ndarray
        Weights (n, n), (m, m) and on the lifted terminal state.
    u_bounds, x_bounds : (ndarray or None, ndarray or None)
        Bounds in deviations (``None``: no bound on that side); ``x_bounds`` bound the signals
        ``H x`` (``bound_matrix``), shape (l,) each.
    soft : bool
        State bounds with an exact L1 slack penalty ``state_penalty``.
    sparse : bool
        Layout (module notes).
    bound_matrix : ndarray of shape (l, n), optional
        ``H`` of the bounded signals ``H x_{k+w+i}`` (an output model's ``C``: output
        bounds); default the identity (state bounds).

    Returns
    -------
    MPCQuadraticProgram

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant(np.array([[0.9]]), np.array([[[0.0]], [[1.0]]]), 1.0)
    >>> qp = build_qp(plant, dead_steps=1, horizon=3, Q=np.eye(1), R=np.eye(1),
    ...               terminal_weight=np.eye(1), u_bounds=(-np.ones(1), np.ones(1)),
    ...               x_bounds=(None, None), soft=False, state_penalty=1.0, sparse=False)
    >>> qp.hessian.shape, qp.n_simple, qp.A.shape
    ((3, 3), 3, (3, 3))
    """
    n, m, R_max = plant.n_states, plant.n_inputs, plant.max_delay
    w, N = dead_steps, horizon
    steps = w + N
    has_x = x_bounds[0] is not None or x_bounds[1] is not None
    H = np.eye(n) if bound_matrix is None else bound_matrix
    n_c = H.shape[0]                            # bounded signals per step
    n_slack = n_c * N if (soft and has_x) else 0
    n_v = m * N + n_slack + (n * steps if sparse else 0)
    n_p = n + m * R_max

    def zero_v(rows: int) -> Any:
        return _Blocks((rows, n_v)) if sparse else np.zeros((rows, n_v))

    def select_v(start: int, size: int) -> Any:
        if sparse:      # identity pieces: one dense eye(m N) would take GBs at long horizons
            return _Blocks((size, n_v), [(i, start + i, np.eye(min(_EYE_PIECE, size - i)))
                                         for i in range(0, size, _EYE_PIECE)])
        rows = np.zeros((size, n_v))
        rows[:, start:start + size] = np.eye(size)
        return rows

    def select_p(start: int, size: int) -> np.ndarray:
        rows = np.zeros((size, n_p))
        rows[:, start:start + size] = np.eye(size)
        return rows

    def move(i: int) -> tuple[Any, np.ndarray]:
        """u_{k+i} as (C_v, C_p): a decision for i >= 0, a committed input for i < 0."""
        if i >= 0:
            return select_v(m * i, m), np.zeros((m, n_p))
        return zero_v(m), select_p(n + m * (R_max + i), m)

    def forcing(t: int) -> tuple[Any, np.ndarray]:
        """sum_j B^(j) u_{k+t-j} (blocks before ``w`` are zero)."""
        out_v, out_p = zero_v(n), np.zeros((n, n_p))
        for j in range(w, R_max + 1):
            c_v, c_p = move(t - j)
            out_v = out_v + plant.B_blocks[j] @ c_v
            out_p = out_p + plant.B_blocks[j] @ c_p
        return out_v, out_p

    state = [(zero_v(n), select_p(0, n))]
    dynamics_v, dynamics_p = [], []
    for t in range(steps):
        f_v, f_p = forcing(t)
        if sparse:   # x_{t+1} is a variable; its dynamics become equality rows
            state.append((select_v(m * N + n_slack + n * t, n), np.zeros((n, n_p))))
            dynamics_v.append(state[t + 1][0] - plant.A_d @ state[t][0] - f_v)
            dynamics_p.append(-plant.A_d @ state[t][1] - f_p)    # rows: d_v v + d_p p = 0
        else:        # condensed: the prediction itself
            state.append((plant.A_d @ state[t][0] + f_v, plant.A_d @ state[t][1] + f_p))

    # cost blocks (weight, C_v, C_p): stage states, inputs, lifted terminal state
    blocks = [(Q, *state[w + i]) for i in range(1, N)]
    blocks += [(R, *move(i)) for i in range(N)]
    terminal = [state[steps]] + [move(N - 1 - i) for i in range(R_max - w)]
    stack = _Blocks.vstack if sparse else np.vstack
    blocks.append((terminal_weight, stack([c for c, _ in terminal]),
                   np.vstack([c for _, c in terminal])))
    weighted_p = np.vstack([weight @ c_p for weight, _, c_p in blocks])
    all_p = np.vstack([c_p for _, _, c_p in blocks])
    constant_p = all_p.T @ weighted_p
    if sparse:
        hessian, q_p = zero_v(n_v), np.zeros((n_v, n_p))
        for weight, c_v, c_p in blocks:  # in place: a sum of N block lists copies N^2 blocks
            hessian.blocks += c_v.gram(2.0 * weight).blocks
            q_p += c_v.cross(2.0 * weight, c_p)
    else:               # one product over all blocks (a sum of N products was 5x slower)
        weighted_v = np.vstack([weight @ c_v for weight, c_v, _ in blocks])
        all_v = np.vstack([c_v for _, c_v, _ in blocks])
        hessian, q_p = 2.0 * (all_v.T @ weighted_v), 2.0 * (weighted_v.T @ all_p)
    q0 = np.zeros(n_v)
    q0[m * N:m * N + n_slack] = state_penalty

    # rows: u bounds, slack >= 0, state bounds on x_{k+w+1} .. x_{k+w+N}, dynamics
    u_lo, u_hi = (np.tile(b, N) if b is not None else np.full(m * N, sign * np.inf)
                  for b, sign in zip(u_bounds, (-1.0, 1.0), strict=True))
    rows_v = [select_v(0, m * N + n_slack)]
    rows_p = [np.zeros((m * N + n_slack, n_p))]
    lower0 = [u_lo, np.zeros(n_slack)]
    upper0 = [u_hi, np.full(n_slack, np.inf)]
    n_simple = m * N + n_slack
    if has_x:
        window = [state[w + i] if bound_matrix is None else
                  (H @ state[w + i][0], H @ state[w + i][1]) for i in range(1, N + 1)]
        window_v = stack([c_v for c_v, _ in window])
        window_p = np.vstack([c_p for _, c_p in window])
        x_lo, x_hi = (np.tile(b, N) if b is not None else np.full(n_c * N, sign * np.inf)
                      for b, sign in zip(x_bounds, (-1.0, 1.0), strict=True))
        if n_slack:   # x + s >= x_min and x - s <= x_max, s >= 0
            slack = select_v(m * N, n_slack)
            rows_v += [window_v + slack, window_v - slack]
            rows_p += [window_p, window_p]
            lower0 += [x_lo, np.full(n_c * N, -np.inf)]
            upper0 += [np.full(n_c * N, np.inf), x_hi]
        else:
            rows_v.append(window_v)
            rows_p.append(window_p)
            lower0.append(x_lo)
            upper0.append(x_hi)
    state_rows = slice(n_simple, n_simple + sum(len(b) for b in lower0[2:]))
    bound_p = np.vstack(rows_p)
    lower_p, upper_p = -bound_p, -bound_p       # rows are C_v v + C_p p within the bounds
    if sparse:
        rows_v += dynamics_v
        dyn_p = np.vstack(dynamics_p)
        lower_p = upper_p = np.vstack([-bound_p, -dyn_p])
        lower0.append(np.zeros(n * steps))
        upper0.append(np.zeros(n * steps))
    A = stack(rows_v)
    # one label per signal (inputs, slacks, states; bounds of a signal, dynamics of a state)
    column_groups = np.concatenate([np.tile(np.arange(m), N),
                                    m + np.tile(np.arange(n_c), n_slack // n_c),
                                    m + n_c + np.tile(np.arange(n), steps if sparse else 0)])
    n_bound_rows = state_rows.stop - state_rows.start
    row_groups = np.concatenate([column_groups[:n_simple],
                                 m + n_c + np.tile(np.arange(n_c), n_bound_rows // n_c),
                                 m + 2 * n_c + np.tile(np.arange(n), steps if sparse else 0)])
    states_v, states_p = stack([s[0] for s in state]), np.vstack([s[1] for s in state])
    if sparse:
        hessian, A, states_v = (M.tocsc() for M in (hessian, A, states_v))
    return MPCQuadraticProgram(
        hessian=0.5 * (hessian + hessian.T), q0=q0, q_p=q_p, constant_p=constant_p, A=A,
        lower0=np.concatenate(lower0), lower_p=lower_p, upper0=np.concatenate(upper0),
        upper_p=upper_p, n_simple=n_simple, state_rows=state_rows, states_v=states_v,
        states_p=states_p, n_inputs=m * N, sparse=sparse, column_groups=column_groups,
        row_groups=row_groups)
