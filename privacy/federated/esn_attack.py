"""Reconstruction attack on federated echo state networks (seed Ch. 6, Sec. 6.3).

In incremental federated learning of an echo state network (Bacciu et al., recalled in the seed's
eqs. 6.9-6.12) client ``k`` sends the ridge-regression statistics ``A_k = Y X^T`` and
``B_k = X X^T + beta I`` of its reservoir run.  An adversary who knows the public reservoir
``(W, W_in, a, beta)`` recovers the client's input sequence by fitting an input whose statistics
match the intercepted ones (eq. 6.16), with exact gradients obtained by back-propagation through
the reservoir (the adjoint of eqs. 6.18-6.19).

Conventions (eqs. 6.7, 6.13-6.15): the input is scalar, ``x_1 = 0`` and
``x_{t+1} = (1 - a) x_t + a tanh(W x_t + W_in u_t)``; the regression columns are
``z_t = [1, u_t, x_{t+1}]`` with target ``y_t = u_{t+1}`` for ``t = 1..T-1`` (one-step-ahead
prediction, which is what the expansion 6.14 encodes).  ``A`` has shape ``(n + 2,)`` and ``B``
``(n + 2, n + 2)``.  The loss counts every entry of ``A`` and the upper triangle (diagonal
included) of ``B``: the unique released numbers.

Notes on the seed: eq. (6.18) writes the state Jacobian as ``(1 - a) + a W sech^2(.)``; the exact
Jacobian is ``(1 - a) I + a diag(sech^2(W x_t + W_in u_t)) W``, which is what
:func:`attack_loss_and_gradient` back-propagates (checked against complex-step derivatives in
the tests).  Eq. (6.20) *subtracts* ``gamma (u_k - u_{k-1})``, the opposite sign of heavy-ball
momentum; :func:`reconstruct_input` follows the seed's sign with ``momentum=gamma``.

References
----------
Seed thesis (``000_9f1dc78092037d5e``) Sec. 6.3: eqs. (6.5)-(6.21), Figs. 6.3-6.7.
S. J. Reddi, S. Kale, S. Kumar, "On the convergence of Adam and beyond", ICLR 2018 (AMSGrad).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_in_interval,
    check_integer,
    check_magnitude,
    check_nonnegative,
    check_positive,
    read_only,
)

__all__ = [
    "EchoStateReservoir",
    "ReservoirStatistics",
    "ReconstructionResult",
    "seed_input",
    "attack_loss",
    "attack_loss_and_gradient",
    "reconstruct_input",
    "reconstruct_input_subspace",
    "strongest_attack",
    "relative_error",
]


def seed_input(steps: int = 20) -> np.ndarray:
    """The client input of the seed's simulation, ``u_t = 5 sin(t^2 / 60)``, ``t = 1..T`` (6.21).

    Examples
    --------
    >>> seed_input(3).round(4)
    array([0.0833, 0.3331, 0.7472])
    """
    steps = check_integer("steps", steps, minimum=2)
    t = np.arange(1, steps + 1, dtype=float)
    return 5.0 * np.sin(t ** 2 / 60.0)


@dataclass(frozen=True)
class ReservoirStatistics:
    """What a client sends: ``A = Y X^T`` (n+2,) and ``B = X X^T + beta I`` (n+2, n+2)."""

    A: np.ndarray
    B: np.ndarray

    def __post_init__(self) -> None:
        A = check_finite_array("A", self.A, ndim=1)
        B = check_finite_array("B", self.B, ndim=2)
        if B.shape != (A.size, A.size):
            raise DimensionError(f"B has shape {B.shape}; expected ({A.size}, {A.size}) to "
                                 f"match A of length {A.size}")
        object.__setattr__(self, "A", read_only(A))
        object.__setattr__(self, "B", read_only(B))

    def released_vector(self) -> np.ndarray:
        """The unique released numbers: ``A`` then the upper triangle of ``B`` (row-major)."""
        return np.concatenate([self.A, self.B[np.triu_indices(self.A.size)]])


@dataclass(frozen=True)
class EchoStateReservoir:
    """A fixed leaky-tanh reservoir with one input channel (seed eqs. 6.6, 6.13).

    Parameters
    ----------
    W : ndarray, shape (n, n)
        Reservoir weights.
    W_in : ndarray, shape (n,)
        Input weights.
    leak : float, default 0.3
        Leak rate ``a`` in (0, 1].
    ridge : float, default 1e-2
        Ridge term ``beta >= 0`` added to ``B``.

    Examples
    --------
    >>> res = EchoStateReservoir.random(20, rng=0)
    >>> stats = res.statistics(seed_input(20))
    >>> stats.A.shape, stats.B.shape
    ((22,), (22, 22))
    """

    W: np.ndarray
    W_in: np.ndarray
    leak: float = 0.3
    ridge: float = 1e-2

    def __post_init__(self) -> None:
        W = check_finite_array("W", self.W, ndim=2)
        W_in = check_finite_array("W_in", self.W_in, ndim=1)
        if W.shape != (W_in.size, W_in.size):
            raise DimensionError(f"W has shape {W.shape}; expected ({W_in.size}, {W_in.size}) "
                                 f"to match W_in of length {W_in.size}")
        object.__setattr__(self, "W", read_only(W))
        object.__setattr__(self, "W_in", read_only(W_in))
        object.__setattr__(self, "leak", check_in_interval("leak", self.leak, 0.0, 1.0,
                                                           low_open=True))
        object.__setattr__(self, "ridge", check_nonnegative("ridge", self.ridge))

    @classmethod
    def random(cls, n_nodes: int = 100, *, density: float = 0.2, spectral_radius: float = 0.9,
               leak: float = 0.3, ridge: float = 1e-2,
               rng: np.random.Generator | int | None = None) -> EchoStateReservoir:
        """The seed's reservoir: sparse ``W`` with N(0, 1) non-zeros rescaled to a spectral radius.

        ``density`` is the fraction of non-zero entries of ``W`` (0.2 = "80 % sparse");
        ``W_in`` is dense N(0, 1) (the seed does not say whether the sparsity applies to it).
        """
        n = check_integer("n_nodes", n_nodes, minimum=1)
        density = check_in_interval("density", density, 0.0, 1.0, low_open=True)
        radius = check_positive("spectral_radius", spectral_radius)
        gen = as_generator(rng)
        W = gen.standard_normal((n, n)) * (gen.random((n, n)) < density)
        current = np.max(np.abs(np.linalg.eigvals(W)))
        if current == 0.0:
            raise ParameterError(f"the random W (n_nodes={n}, density={density}) is nilpotent; "
                                 f"raise density or change rng")
        return cls(W * (radius / current), gen.standard_normal(n), leak, ridge)

    @property
    def n_nodes(self) -> int:
        """Number of reservoir nodes ``n``."""
        return self.W_in.size

    def run(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """States ``x_1..x_{T+1}`` (n, T+1) and pre-activations ``W x_t + W_in u_t`` (n, T).

        Works for real and complex ``u`` (complex-step differentiation).
        """
        u = np.asarray(u)
        dtype = np.result_type(u.dtype, float)
        states = np.zeros((self.n_nodes, u.size + 1), dtype=dtype)
        pre = np.zeros((self.n_nodes, u.size), dtype=dtype)
        a = self.leak
        for t in range(u.size):
            pre[:, t] = self.W @ states[:, t] + self.W_in * u[t]
            states[:, t + 1] = (1.0 - a) * states[:, t] + a * np.tanh(pre[:, t])
        return states, pre

    def design(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Regression columns ``Z = [z_1..z_{T-1}]`` (n+2, T-1) and targets ``y`` (T-1,) (6.7)."""
        u = _check_input(u)
        states, _ = self.run(u)
        return _stack(u, states), u[1:]

    def statistics(self, u: np.ndarray) -> ReservoirStatistics:
        """The client's message ``(A, B)`` for input ``u`` of shape (T,), ``T >= 2`` (6.10-6.11)."""
        Z, y = self.design(u)
        return ReservoirStatistics(Z @ y, Z @ Z.T + self.ridge * np.eye(Z.shape[0]))

    def output_weights(self, statistics: ReservoirStatistics) -> np.ndarray:
        """Server side: ``W_out = A B^{-1}`` (n+2,) from summed statistics (6.12)."""
        return np.linalg.solve(statistics.B, statistics.A)


def _check_input(u: np.ndarray) -> np.ndarray:
    u = check_finite_array("u", u, ndim=1)
    if u.size < 2:
        raise DimensionError(f"u has {u.size} samples; at least 2 are needed (one regression "
                             f"column needs an input and the next one as target)")
    # an input of 1e300 squared overflows in Z Z^T and was reported as "A contains NaN"
    check_magnitude("u", float(np.max(np.abs(u))),
                    "the statistics' products u_t u_s would overflow float64",
                    "scale the input to the reservoir's range (its seed input is of order 1)")
    return u


def _stack(u: np.ndarray, states: np.ndarray) -> np.ndarray:
    steps = u.size - 1
    return np.vstack([np.ones((1, steps), dtype=states.dtype), u[None, :steps],
                      states[:, 1:steps + 1]])


def _residuals(reservoir: EchoStateReservoir, u_hat: np.ndarray, target: ReservoirStatistics
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    states, pre = reservoir.run(u_hat)
    Z = _stack(u_hat, states)
    y = u_hat[1:]
    R_A = Z @ y - target.A
    R_B = Z @ Z.T + reservoir.ridge * np.eye(Z.shape[0]) - target.B
    return R_A, R_B, Z, states, pre


def attack_loss(reservoir: EchoStateReservoir, u_hat: np.ndarray,
                target: ReservoirStatistics) -> float | complex:
    """Loss (6.16): squared mismatch of ``A`` and of the upper triangle of ``B``.

    Analytic in ``u_hat`` (no absolute values), so a complex ``u_hat`` gives complex-step
    derivatives.
    """
    R_A, R_B, *_ = _residuals(reservoir, np.asarray(u_hat), target)
    upper = np.triu_indices(R_A.size)
    total = np.sum(R_A * R_A) + np.sum(R_B[upper] * R_B[upper])
    return complex(total) if np.iscomplexobj(total) else float(total)


def attack_loss_and_gradient(reservoir: EchoStateReservoir, u_hat: np.ndarray,
                             target: ReservoirStatistics) -> tuple[float, np.ndarray]:
    """Loss (6.16) and its exact gradient with respect to ``u_hat`` (T,).

    Back-propagation: with residuals ``R_A``, ``R_B``, ``dL/dZ = 2 R_A y^T + 2 (R_B + diag R_B) Z``
    (the upper-triangle loss counts off-diagonal entries once) and ``dL/dy = 2 Z^T R_A``; the state
    rows of ``dL/dZ`` are propagated backwards with the adjoint of
    ``J_t = (1 - a) I + a diag(sech^2 s_t) W`` and enter ``u_t`` through ``a sech^2(s_t) W_in``.

    Raises
    ------
    DimensionError
        ``u_hat`` is not a 1-D array with at least 2 entries or does not match the statistics.

    Examples
    --------
    >>> res = EchoStateReservoir.random(10, rng=0)
    >>> u = seed_input(5)
    >>> loss, grad = attack_loss_and_gradient(res, u, res.statistics(u))
    >>> loss, grad.shape
    (0.0, (5,))
    """
    u_hat = _check_input(u_hat)
    if target.A.size != reservoir.n_nodes + 2:
        raise DimensionError(f"the statistics have {target.A.size} regressors; the reservoir "
                             f"has {reservoir.n_nodes} nodes (expected {reservoir.n_nodes + 2})")
    R_A, R_B, Z, _, pre = _residuals(reservoir, u_hat, target)
    upper = np.triu_indices(R_A.size)
    loss = float(R_A @ R_A + np.sum(R_B[upper] ** 2))

    dZ = 2.0 * np.outer(R_A, u_hat[1:]) + 2.0 * (R_B + np.diag(np.diag(R_B))) @ Z
    grad = np.zeros_like(u_hat)
    grad[1:] += 2.0 * (Z.T @ R_A)                 # targets y_t = u_{t+1}
    grad[:-1] += dZ[1]                            # the u_t row of Z
    a = reservoir.leak
    sech2 = 1.0 - np.tanh(pre) ** 2               # (n, T)
    adjoint = np.zeros(reservoir.n_nodes)         # dL/dx_{t+1} from later times
    for t in range(u_hat.size - 1, -1, -1):
        if t < u_hat.size - 1:                    # x_{t+1} appears in column t (0-based)
            adjoint = adjoint + dZ[2:, t]
        local = a * sech2[:, t] * adjoint         # through tanh at step t
        grad[t] += reservoir.W_in @ local
        adjoint = (1.0 - a) * adjoint + reservoir.W.T @ local
    return loss, grad


@dataclass(frozen=True)
class ReconstructionResult:
    """Outcome of :func:`reconstruct_input`.

    Attributes
    ----------
    u : ndarray, shape (T,)
        Final estimate of the client's input.
    iterates : ndarray, shape (k, T)
        Recorded estimates (every ``record_every`` iterations, first and last included).
    iterations : ndarray, shape (k,)
        Iteration numbers of the recorded estimates.
    losses : ndarray, shape (k,)
        Loss (6.16) at the recorded estimates.
    method : str
    """

    u: np.ndarray
    iterates: np.ndarray
    iterations: np.ndarray
    losses: np.ndarray
    method: str


_METHODS = ("gd", "amsgrad", "lbfgs")


def reconstruct_input(reservoir: EchoStateReservoir, target: ReservoirStatistics, *,
                      steps: int, method: str = "gd", iterations: int = 10_000,
                      learning_rate: float | None = None, momentum: float = 0.1,
                      u0: np.ndarray | None = None, record_every: int = 10
                      ) -> ReconstructionResult:
    """Recover the client's input from intercepted statistics (seed Sec. 6.3.2).

    Parameters
    ----------
    reservoir : EchoStateReservoir
        The public reservoir.
    target : ReservoirStatistics
        Intercepted ``(A, B)`` (possibly noisy).
    steps : int
        Length ``T`` of the input to recover.
    method : {"gd", "amsgrad", "lbfgs"}
        ``"gd"``: eq. (6.20), ``u <- u - lr grad - momentum (u - u_prev)`` (seed: lr 1e-8,
        momentum 0.1).  ``"amsgrad"``: AMSGrad (lr default 0.05, betas 0.9/0.999).
        ``"lbfgs"``: scipy's L-BFGS-B with the exact gradient.
    iterations : int, default 10000
        Iterations (for L-BFGS the iteration limit).
    learning_rate : float, optional
        Step size (default 1e-8 for gd, 0.05 for amsgrad; unused by lbfgs).
    momentum : float, default 0.1
        ``gamma`` of eq. (6.20) (gd only).
    u0 : ndarray, shape (T,), optional
        Initial estimate (default zeros, as in the seed).
    record_every : int, default 10
        Recording interval of the iterates.

    Returns
    -------
    ReconstructionResult

    Raises
    ------
    ParameterError
        Unknown method or bad numbers.
    DimensionError
        ``u0`` of the wrong length.

    Examples
    --------
    >>> res = EchoStateReservoir.random(20, rng=0)
    >>> u = seed_input(8)
    >>> out = reconstruct_input(res, res.statistics(u), steps=8, method="lbfgs", iterations=500)
    >>> bool(relative_error(out.u, u) < 1e-4)
    True
    """
    if method not in _METHODS:
        raise ParameterError(f"method must be one of {_METHODS}; got {method!r}")
    steps = check_integer("steps", steps, minimum=2)
    iterations = check_integer("iterations", iterations, minimum=1)
    record_every = check_integer("record_every", record_every, minimum=1)
    u = np.zeros(steps) if u0 is None else check_finite_array("u0", u0, ndim=1).copy()
    if u.size != steps:
        raise DimensionError(f"u0 has {u.size} entries; expected steps = {steps}")

    def objective(v: np.ndarray) -> tuple[float, np.ndarray]:
        return attack_loss_and_gradient(reservoir, v, target)

    if method == "lbfgs":
        return _lbfgs(objective, u, iterations, record_every)
    lr = check_positive("learning_rate", learning_rate if learning_rate is not None
                        else (1e-8 if method == "gd" else 0.05))
    momentum = check_in_interval("momentum", momentum, -1.0, 1.0, low_open=True,
                                 high_open=True)
    record = _Recorder(record_every)
    previous = u.copy()
    first = second = second_max = np.zeros(steps)
    for k in range(iterations + 1):
        loss, grad = objective(u)
        record(k, u, loss, force=k == iterations)
        if k == iterations or not math.isfinite(loss):
            break
        if method == "gd":
            u, previous = u - lr * grad - momentum * (u - previous), u
        else:
            first = 0.9 * first + 0.1 * grad
            second = 0.999 * second + 0.001 * grad ** 2
            second_max = np.maximum(second_max, second)
            u = u - lr * first / (np.sqrt(second_max) + 1e-12)
    return record.result(u, method)


class _Recorder:
    def __init__(self, every: int) -> None:
        self.every, self.rows = every, []

    def __call__(self, k: int, u: np.ndarray, loss: float, *, force: bool = False) -> None:
        if force or k % self.every == 0:
            self.rows.append((k, u.copy(), loss))

    def result(self, u: np.ndarray, method: str) -> ReconstructionResult:
        its, us, losses = zip(*self.rows, strict=True)
        return ReconstructionResult(read_only(u), read_only(np.array(us)),
                                    np.array(its, dtype=int), read_only(np.array(losses)), method)


def _lbfgs(objective, u: np.ndarray, iterations: int, record_every: int) -> ReconstructionResult:
    from scipy import optimize

    record = _Recorder(record_every)
    count = [0]
    record(0, u, objective(u)[0])

    def callback(intermediate_result) -> None:
        count[0] += 1
        record(count[0], intermediate_result.x, float(intermediate_result.fun))

    result = optimize.minimize(objective, u, jac=True, method="L-BFGS-B", callback=callback,
                               options={"maxiter": iterations, "maxfun": 3 * iterations,
                                        "ftol": 0.0, "gtol": 0.0,
                                        "maxcor": 30})
    if record.rows[-1][0] != count[0] or not np.array_equal(record.rows[-1][1], result.x):
        record.rows.append((count[0], result.x.copy(), float(result.fun)))
    return record.result(result.x, "lbfgs")


def reconstruct_input_subspace(reservoir: EchoStateReservoir, target: ReservoirStatistics, *,
                               steps: int, grid: int = 4001) -> np.ndarray:
    """One-pass reconstruction from the state subspace, without an iterative optimizer.

    The state block of ``B`` is ``S S^T + beta I`` with ``S = [x_2 .. x_T]`` (n, T-1); when
    ``T - 1 < n`` its ``T - 1`` leading eigenvectors span every state the client visited.  Starting
    from ``x_1 = 0``, each ``u_t`` is then the scalar whose next state
    ``(1 - a) x_t + a tanh(W x_t + W_in u_t)`` lies in that span (relative distance minimised on a
    grid over ``|u| <= sqrt(B[1, 1] - beta)`` -- a bound read off the statistics -- and refined by
    bounded Brent).  The dynamics are odd, so ``u`` and ``-u`` span the same subspace: the first
    input is taken non-negative and the global sign chosen by the loss (6.16); the last input
    (a target only) comes from ``A[0] = sum_{t>=2} u_t``.  On exact statistics this recovers the
    input to about 1e-9 (the conditioning of the small eigenvalues of ``S S^T``).

    Parameters
    ----------
    reservoir, target, steps
        As in :func:`reconstruct_input`.
    grid : int, default 4001
        Grid points of the scalar search at each step.

    Returns
    -------
    ndarray, shape (T,)

    Raises
    ------
    ParameterError
        ``steps - 1 >= n_nodes`` (the states then span the whole space: no subspace to exploit).

    Examples
    --------
    >>> res = EchoStateReservoir.random(20, rng=0)
    >>> u = seed_input(8)
    >>> u_hat = reconstruct_input_subspace(res, res.statistics(u), steps=8, grid=801)
    >>> bool(relative_error(u_hat, u) < 1e-6)
    True
    """
    steps = check_integer("steps", steps, minimum=2)
    grid = check_integer("grid", grid, minimum=3)
    n = reservoir.n_nodes
    if steps - 1 >= n:
        raise ParameterError(f"the subspace attack needs steps - 1 < n_nodes; got steps={steps} "
                             f"with {n} nodes (use reconstruct_input)")
    _, vectors = np.linalg.eigh(target.B[2:, 2:] - reservoir.ridge * np.eye(n))
    basis = vectors[:, -(steps - 1):]
    radius = math.sqrt(max(target.B[1, 1] - reservoir.ridge, 0.0)) or 1.0
    a = reservoir.leak

    def distance(candidates: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nxt = (1.0 - a) * x[:, None] + a * np.tanh(
            (reservoir.W @ x)[:, None] + np.outer(reservoir.W_in, candidates))
        off = nxt - basis @ (basis.T @ nxt)
        size = np.sum(nxt ** 2, axis=0)
        ratio = np.divide(np.sum(off ** 2, axis=0), size, out=np.full(size.shape, np.inf),
                          where=size > 0)
        return ratio, nxt

    from scipy import optimize

    u = np.zeros(steps)
    x = np.zeros(n)
    for t in range(steps - 1):
        values = np.linspace(0.0 if t == 0 else -radius, radius, grid)
        best = int(np.argmin(distance(values, x)[0]))
        low, high = values[max(best - 1, 0)], values[min(best + 1, grid - 1)]
        found = optimize.minimize_scalar(lambda v, x=x: float(distance(np.array([v]), x)[0][0]),
                                         bounds=(low, high), method="bounded",
                                         options={"xatol": 1e-14 * radius})
        u[t] = found.x
        x = distance(np.array([found.x]), x)[1][:, 0]
    u[-1] = target.A[0] - np.sum(u[1:-1])
    if attack_loss(reservoir, -u, target) < attack_loss(reservoir, u, target):
        u = -u
    return u


def strongest_attack(reservoir: EchoStateReservoir, target: ReservoirStatistics, *, steps: int,
                     restarts: int = 3, iterations: int = 500,
                     rng: np.random.Generator | int | None = None) -> np.ndarray:
    """The adversary's best estimate: the lowest loss (6.16) among several attacks.

    Candidates: the subspace reconstruction polished by L-BFGS (when ``steps - 1 < n``), L-BFGS
    from zero, and ``restarts`` L-BFGS runs from random starts ``N(0, s^2)`` with ``s`` the input
    RMS read off ``B[1, 1]``.  Only the intercepted statistics decide (never the truth).

    Returns
    -------
    ndarray, shape (T,)

    Examples
    --------
    >>> res = EchoStateReservoir.random(20, rng=0)
    >>> u = seed_input(8)
    >>> u_hat = strongest_attack(res, res.statistics(u), steps=8, restarts=0, rng=0)
    >>> bool(relative_error(u_hat, u) < 1e-8)
    True
    """
    restarts = check_integer("restarts", restarts, minimum=0)
    gen = as_generator(rng)
    scale = math.sqrt(max(target.B[1, 1] - reservoir.ridge, 0.0) / max(steps - 1, 1)) or 1.0
    starts = [np.zeros(steps)] + [gen.normal(0.0, scale, steps) for _ in range(restarts)]
    if steps - 1 < reservoir.n_nodes:
        starts.insert(0, reconstruct_input_subspace(reservoir, target, steps=steps))
    best, best_loss = starts[0], math.inf
    for start in starts:
        result = reconstruct_input(reservoir, target, steps=steps, method="lbfgs",
                                   iterations=iterations, u0=start, record_every=iterations)
        if result.losses[-1] < best_loss:
            best, best_loss = result.u, result.losses[-1]
    return np.array(best)


def relative_error(estimate: np.ndarray, truth: np.ndarray) -> float:
    """Relative l2 error ``||estimate - truth|| / ||truth||``."""
    estimate = check_finite_array("estimate", estimate)
    truth = check_finite_array("truth", truth)
    if estimate.shape != truth.shape:
        raise DimensionError(f"estimate has shape {estimate.shape}; truth has {truth.shape}")
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))
