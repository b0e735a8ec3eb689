"""Closed-loop simulation of a controller on the true (exactly discretized) delayed plant.

The loop at step ``k`` is

    y_k = x_k + v_k                                   (measurement, noise v_k)
    u_k = controller(y_k)                             (held over [kT, (k+1)T))
    x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j} + w_k   (true plant, eq. 9.65; noise w_k)

with ``u_k = 0`` for ``k < 0`` (``u_op`` with the plant's operating point: the loop then runs
on the deviations, and the controller measures and commands physical values).  Because the
plant's discretization is exact, the sampled states are those of the continuous plant
``x' = A_c x + B_c u(t - r)`` whatever the (fractional, per-channel) delays; ``fine=True``
adds the exact inter-sample trajectory.

Controller protocol
-------------------
Any object with ``reset()`` and ``__call__(x_measured: ndarray (n,)) -> u: ndarray (m,)`` (it keeps
its own history of past commands).  A *linear* controller additionally exposes
``feedback_matrices() -> (K_x (m, n), K_u (H, m, m))`` meaning
``u_k = K_x y_k + sum_{i=1}^{H} K_u[i-1] u_{k-i}``; the loop is then one linear recursion on the
lifted state ``z_k = [x_k, u_{k-1}, ..., u_{k-L}]``, ``L = max(R, H)``, whose matrix (exported by
``controllers.closed_loop_matrix`` for stability analysis) has the exact closed-loop poles.
Long linear runs are iterated in ``sqrt(steps)`` blocks that advance together
(``O(sqrt(steps))`` Python iterations, over 10^6 steps/s for n = 10, m = 2; see
``benchmarks/bench_closed_loop.py``); noise is drawn up front, so noisy linear loops stay fast.
Other controllers are called once per step.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_in_interval,
    check_integer,
    check_positive,
    read_only,
)
from controllers.gains import check_weight
from controllers.lifted import feedback_gains, lifted_loop
from controllers.outputs import refuse_model_basis
from dmdidc.errors import DiagnosticWarning, NoSteadyStateError, warn_model
from dmdidc.model import DelayedPlant, OperatingPoint, as_plant
from privacy.stable import sas_sample
from simulations.plant import _noise_array, checked_output, fine_grid

__all__ = [
    "CoordinatesError",
    "Controller",
    "LinearController",
    "ClosedLoopResult",
    "NoiseSampler",
    "noise_sampler",
    "simulate_closed_loop",
]

_METHODS = ("auto", "linear", "step")
_CHUNK = 4096   # steps between progress-bar updates of a linear loop
_BLOCKED_ABOVE = 1024   # linear loops longer than this use the blocked recursion


# ---------------------------------------------------------------------- controller protocol
@runtime_checkable
class Controller(Protocol):
    """A state-feedback controller that keeps its own input history."""

    def reset(self) -> None:
        """Forget the history (inputs before time 0 are zero)."""

    def __call__(self, x_measured: np.ndarray) -> np.ndarray:
        """Return the input ``u_k`` (m,) for the measured state ``x_measured`` (n,)."""


@runtime_checkable
class LinearController(Controller, Protocol):
    """A controller ``u_k = K_x y_k + sum_{i=1}^{H} K_u[i-1] u_{k-i}``."""

    def feedback_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(K_x (m, n), K_u (H, m, m))``."""


# ---------------------------------------------------------------------- noise samplers
@dataclass(frozen=True, eq=False)
class NoiseSampler:
    """Draws i.i.d. noise: ``sampler(rng, shape) -> ndarray`` (made by :func:`noise_sampler`)."""

    name: str
    scale: float
    loc: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    _draw: Any = field(default=None, repr=False, compare=False)

    def __call__(self, rng: np.random.Generator | int | None,
                 shape: tuple[int, ...]) -> np.ndarray:
        return np.asarray(self._draw(as_generator(rng), tuple(shape)), dtype=float)


def noise_sampler(distribution: Any, scale: float = 1.0, *, loc: float = 0.0,
                  **params: Any) -> NoiseSampler:
    """Make a noise sampler ``sampler(rng, shape) -> ndarray`` for the simulators.

    Parameters
    ----------
    distribution : str or scipy.stats distribution
        ``"normal"`` (or ``"gaussian"``), ``"laplace"``, ``"sas"`` (symmetric alpha-stable, via
        ``privacy.stable.sas_sample``; needs ``alpha=``), the name of a continuous ``scipy.stats``
        distribution (``"t"``, ``"cauchy"``, ``"levy_stable"``, ...) or a scipy.stats distribution
        object, frozen or not.
    scale : float, default 1.0
        Scale (> 0): the standard deviation for ``"normal"``, the ``scale`` of scipy.stats and
        SaS distributions; multiplies the samples of an already frozen distribution.
    loc : float, default 0.0
        Location; shifts the samples.
    **params
        Shape parameters (``alpha=1.5`` for SaS, ``df=3`` for ``"t"``, ...).

    Returns
    -------
    NoiseSampler
        Call it as ``sampler(rng, shape)``; the draws depend only on ``rng``.

    Raises
    ------
    ParameterError
        At construction, never first when drawing: an unknown distribution name, ``scale <= 0``
        or not finite, ``loc`` not finite, shape parameters a distribution does not take or
        outside its domain (``alpha`` outside (0, 2] for SaS, ``df <= 0`` for ``"t"``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> sampler = noise_sampler("t", scale=0.1, df=3)
    >>> sampler(np.random.default_rng(0), (2, 5)).shape
    (2, 5)
    """
    scale = check_positive("scale", scale)
    loc = check_in_interval("loc", loc, -np.inf, np.inf)
    if isinstance(distribution, str):
        key = distribution.lower()
        if key in ("normal", "gaussian", "norm", "laplace"):
            _refuse_params(key, params, accepted=())
            name, draw = (("laplace", lambda rng, shape: rng.laplace(loc, scale, shape))
                          if key == "laplace" else
                          ("normal", lambda rng, shape: rng.normal(loc, scale, shape)))
            return NoiseSampler(name, scale, loc, {}, draw)
        if key in ("sas", "symmetric_alpha_stable"):
            return _sas_sampler(scale, loc, params)
        import scipy.stats

        dist = getattr(scipy.stats, key, None)
        if not isinstance(dist, scipy.stats.rv_continuous):
            raise ParameterError(f"distribution must be 'normal', 'laplace', 'sas' or the name of "
                                 f"a continuous scipy.stats distribution; got {distribution!r}")
        frozen = _freeze(dist, key, loc, scale, params)
        return NoiseSampler(key, scale, loc, dict(params),
                            lambda rng, shape: frozen.rvs(size=shape, random_state=rng))
    if hasattr(distribution, "rvs"):
        if hasattr(distribution, "dist") and hasattr(distribution, "kwds"):   # frozen
            name = getattr(distribution.dist, "name", type(distribution).__name__)
            if params:
                raise ParameterError(f"a frozen scipy.stats {name} distribution takes no further "
                                     f"parameters; got {sorted(params)} (freeze it with them)")
            _check_support(name, distribution, distribution.args, distribution.kwds)
            return NoiseSampler(name, scale, loc, {},
                                lambda rng, shape: loc + scale * distribution.rvs(
                                    size=shape, random_state=rng))
        name = getattr(distribution, "name", type(distribution).__name__)
        frozen = _freeze(distribution, name, loc, scale, params)
        return NoiseSampler(name, scale, loc, dict(params),
                            lambda rng, shape: frozen.rvs(size=shape, random_state=rng))
    raise ParameterError(f"distribution must be a name or a scipy.stats distribution; got "
                         f"{type(distribution).__name__}")


def _refuse_params(name: str, params: dict[str, Any], accepted: tuple[str, ...]) -> None:
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = f"only {', '.join(accepted)}" if accepted else "no shape parameters"
        raise ParameterError(f"noise_sampler({name!r}) takes {takes}; got {unknown}")


def _freeze(dist: Any, name: str, loc: float, scale: float, params: dict[str, Any]) -> Any:
    """Freeze a scipy.stats distribution, refusing unknown or out-of-range shape parameters now
    (scipy itself would only fail, or return NaN, when drawing)."""
    try:
        frozen = dist(loc=loc, scale=scale, **params)
    except TypeError as exc:
        shapes = getattr(dist, "shapes", None) or "none"
        raise ParameterError(f"invalid parameters {params} for scipy.stats {name} (its shape "
                             f"parameters: {shapes}): {exc}") from exc
    _check_support(name, frozen, (), params)
    return frozen


def _check_support(name: str, frozen: Any, args: tuple, kwds: dict[str, Any]) -> None:
    # scipy marks shape parameters outside their domain by a NaN support
    if np.isnan(np.asarray(frozen.support(), dtype=float)).any():
        given = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwds.items())])
        raise ParameterError(f"the shape parameters ({given}) are outside the domain of the "
                             f"scipy.stats {name} distribution")


def _sas_sampler(scale: float, loc: float, params: dict[str, Any]) -> NoiseSampler:
    _refuse_params("sas", params, accepted=("alpha",))
    if "alpha" not in params:
        raise ParameterError("noise_sampler('sas', ...) needs the stability index alpha=, in "
                             "(0, 2]")
    alpha = check_in_interval("alpha", params["alpha"], 0.0, 2.0, low_open=True)
    return NoiseSampler("sas", scale, loc, {"alpha": alpha},
                        lambda rng, shape: sas_sample(alpha, scale=scale, loc=loc, size=shape,
                                                      rng=rng))


# ---------------------------------------------------------------------- result
@dataclass(frozen=True, eq=False)
class ClosedLoopResult:
    """Outcome of :func:`simulate_closed_loop` (read-only arrays; time on the last axis).

    Attributes
    ----------
    times : ndarray, shape (steps + 1,)
        Sampling instants ``k T`` in seconds.
    states : ndarray, shape (n, steps + 1)
        True states ``x_0 .. x_steps``.
    inputs : ndarray, shape (m, steps)
        Inputs ``u_0 .. u_{steps-1}`` applied (before the plant's delay).
    stage_costs : ndarray, shape (steps,)
        ``x_k' Q x_k + u_k' R u_k`` for ``k = 0 .. steps - 1``.
    cost : float
        ``stage_costs.sum()``.
    dt : float
        Sampling period ``T``.
    method : str
        ``"linear"`` (lifted recursion) or ``"step"`` (per-step controller calls).
    measurement_noise : ndarray, shape (l, steps + 1), or None
        Noise ``v_k`` on the measurements (``l = n`` without a measurement matrix).
    fine_times : ndarray, shape (steps P + 1,), or None
        Instants of the exact inter-sample trajectory (``fine=True`` only).
    fine_states : ndarray, shape (n, steps P + 1), or None
        Exact states at ``fine_times`` (``fine=True`` only).
    operating_point : dmdidc.OperatingPoint or None
        The plant's operating point: ``states`` and ``inputs`` are physical values, while
        ``stage_costs``, :attr:`state_norms` and :attr:`final_norm` measure the deviations
        from it (the quantity the loop regulates to zero).  ``None``: the origin.
    measurement_matrix : ndarray, shape (l, n), or None
        ``C`` of output feedback: the controller measured ``y_k = C x_k + v_k``
        (:attr:`measurements`); ``None``: it measured the states.
    """

    times: np.ndarray
    states: np.ndarray
    inputs: np.ndarray
    stage_costs: np.ndarray
    cost: float
    dt: float
    method: str
    measurement_noise: np.ndarray | None = None
    fine_times: np.ndarray | None = None
    fine_states: np.ndarray | None = None
    operating_point: OperatingPoint | None = None
    measurement_matrix: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("times", "states", "inputs", "stage_costs", "measurement_noise",
                     "fine_times", "fine_states", "measurement_matrix"):
            object.__setattr__(self, name, read_only(getattr(self, name)))

    @property
    def steps(self) -> int:
        """Number of control steps."""
        return self.inputs.shape[1]

    @property
    def measurements(self) -> np.ndarray:
        """What the controller measured, ``C x_k + v_k`` (``x_k + v_k`` without a measurement
        matrix; ``v_k`` zero without noise), shape (l, steps + 1) (``l = n`` without ``C``).
        With an operating point ``x_k`` is the physical state."""
        clean = self.states if self.measurement_matrix is None else \
            self.measurement_matrix @ self.states
        return clean if self.measurement_noise is None else clean + self.measurement_noise

    @property
    def _measured_apart(self) -> bool:
        """Whether the measurements differ from the states (noise, or outputs y = C x)."""
        return self.measurement_noise is not None or self.measurement_matrix is not None

    @property
    def deviations(self) -> np.ndarray:
        """States minus the plant's operating point (the states without one), (n, steps + 1)."""
        if self.operating_point is None:
            return self.states
        return self.states - self.operating_point.state[:, None]

    @property
    def state_norms(self) -> np.ndarray:
        """Euclidean norm of each state's deviation from the operating point, (steps + 1,)."""
        return np.linalg.norm(self.deviations, axis=0)

    @property
    def final_norm(self) -> float:
        """Euclidean norm of the final state's deviation from the plant's operating point
        ``x_steps - x_op`` (of ``x_steps`` without one), as the cost weighs it (scaled: no
        overflow above ~1e154)."""
        x = self.deviations[:, -1]
        largest = float(np.max(np.abs(x), initial=0.0))
        return largest * float(np.linalg.norm(x / largest)) if largest > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation (lists of floats; fine trajectory only if computed)."""
        data: dict[str, Any] = {"dt": self.dt, "method": self.method, "cost": self.cost,
                                "final_norm": self.final_norm, "times": self.times.tolist(),
                                "states": self.states.tolist(), "inputs": self.inputs.tolist(),
                                "stage_costs": self.stage_costs.tolist()}
        if self._measured_apart:
            data["measurements"] = self.measurements.tolist()
        if self.measurement_matrix is not None:
            data["measurement_matrix"] = self.measurement_matrix.tolist()
        if self.fine_states is not None:
            data["fine_times"] = self.fine_times.tolist()
            data["fine_states"] = self.fine_states.tolist()
        if self.operating_point is not None:
            data["operating_point"] = self.operating_point.to_dict()
        return data

    def to_csv(self, path: str | Path, *, state_labels: Sequence[str] | None = None,
               input_labels: Sequence[str] | None = None) -> Path:
        """Write one row per sampling instant: ``t, x_1..x_n, [y_1..y_l,] u_1..u_m``.

        The measurement columns ``y`` are written when they differ from the states (noise, or
        output feedback ``y = C x + v``: ``l`` outputs).  ``state_labels``, ``input_labels``
        name the columns instead (``"T_room [K]"``; a noisy measurement of a state is
        ``"T_room measured [K]"``; outputs stay ``y_1..y_l``).  The inputs of the last row
        (``k = steps``) are empty.  Returns the path.
        """
        path = Path(path)
        n, m = self.states.shape[0], self.inputs.shape[0]
        states = list(state_labels or [f"x_{i + 1}" for i in range(n)])
        header = ["t"] + states
        columns = [self.times[:, None], self.states.T]
        if self._measured_apart:
            measured = self.measurements
            header += ([f"y_{i + 1}" for i in range(measured.shape[0])]
                       if state_labels is None or self.measurement_matrix is not None else
                       [label.replace(" [", " measured [", 1) if " [" in label
                        else f"{label} measured" for label in states])
            columns.append(measured.T)
        header += list(input_labels or [f"u_{i + 1}" for i in range(m)])
        table = np.concatenate(columns, axis=1)
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            for k in range(self.steps + 1):
                row = [repr(float(v)) for v in table[k]]
                row += ([repr(float(v)) for v in self.inputs[:, k]] if k < self.steps
                        else [""] * m)
                writer.writerow(row)
        return path


# ---------------------------------------------------------------------- linear loops
def _diverged(k: int) -> NonFiniteError:
    return NonFiniteError(f"the closed-loop state is no longer finite at step {k}: the loop "
                          f"diverged (check controllers.spectral_radius) or the "
                          f"noise is too heavy-tailed for this run length")


def _run_linear(plant: DelayedPlant, K_x: np.ndarray, K_u: np.ndarray, x0: np.ndarray,
                steps: int, W: np.ndarray | None, V: np.ndarray | None,
                bar: Any) -> tuple[np.ndarray, np.ndarray]:
    """States (n, steps + 1) and inputs (m, steps) of the lifted linear loop."""
    n = plant.n_states
    F, G, C = lifted_loop(plant, K_x, K_u)
    A_cl = F + G @ C
    z0 = np.zeros(A_cl.shape[0])
    z0[:n] = x0
    # z_{k+1} = A_cl z_k + d_k with d_k = E w_k + G K_x v_k (rows of `forcing`)
    forcing = None
    if W is not None or V is not None:
        forcing = np.zeros((steps, A_cl.shape[0]))
        if W is not None:
            forcing[:, :n] = W.T
        if V is not None:
            forcing += V[:, :steps].T @ (G @ K_x).T
    if forcing is None and steps > _BLOCKED_ABOVE:
        X, U = _unforced_readouts(A_cl, z0, steps, (np.eye(n, A_cl.shape[0]), C), bar)
        if np.isfinite(X).all():
            return X, U[:, :steps]
    Z = _linear_trajectory(A_cl, z0, forcing, steps, bar)
    if not np.isfinite(Z[:, :n]).all():
        # The blocked recursion can overflow in A^b before the trajectory does: redo it plainly.
        Z = _linear_trajectory(A_cl, z0, forcing, steps, None, blocked=False)
        finite = np.isfinite(Z[:, :n]).all(axis=1)
        if not finite.all():
            raise _diverged(int(np.argmin(finite)))
    U = C @ Z[:-1].T if V is None else C @ Z[:-1].T + K_x @ V[:, :steps]
    # contiguous states: the stage costs and the result read them along time
    return np.ascontiguousarray(Z[:, :n].T), U


def _transposed_powers(A_T: np.ndarray, count: int) -> np.ndarray:
    """``[A_T^0 .. A_T^(count-1)]`` (count, s, s), each from the previous one."""
    powers = np.empty((count, *A_T.shape))
    powers[0] = np.eye(A_T.shape[0])
    for j in range(1, count):
        powers[j] = powers[j - 1] @ A_T
    return powers


def _unforced_readouts(A: np.ndarray, z0: np.ndarray, N: int, readouts: tuple, bar: Any
                       ) -> list[np.ndarray]:
    """``[R z_0 .. R z_N]`` (r, N + 1) for each readout ``R`` (r, s) of ``z_{k+1} = A z_k``:
    the blocks of :func:`_linear_trajectory` (``b ~ sqrt(N)`` steps from each block start), but
    every readout of every block one batched product of the starts with ``[R A^0 .. R
    A^(b-1)]`` laid out so that it writes each signal's samples along time in place: never
    the (N, s) trajectory, its transposition or a copy (the states' readout is the
    identity's first rows, the inputs' the feedback matrix).  Each
    signal is a view of rows ``nb b >= N + 1`` samples apart."""
    size = A.shape[0]
    b = int(np.ceil(np.sqrt(N)))
    nb = -(-(N + 1) // b)
    powers = _transposed_powers(np.ascontiguousarray(A.T), b + 1)
    starts = np.empty((nb, size))            # z_{ib}
    starts[0] = z0
    for i in range(nb - 1):
        np.matmul(starts[i], powers[b], out=starts[i + 1])
    signals = []
    for R in readouts:
        r = R.shape[0]
        # [a, t, j]: one product per signal writes its samples along time in place (the
        # product over all signals at once, then a transposing copy, wrote them twice:
        # 4.5 of the 9 ms of the closed-loop benchmark)
        ladder = np.ascontiguousarray((powers[:b] @ R.T).transpose(2, 1, 0))
        along = np.matmul(starts, ladder)                                  # [a, i, j]
        signals.append(along.reshape(r, nb * b)[:, :N + 1])
    if bar is not None:
        bar.update(N)
    return signals


def _linear_trajectory(A: np.ndarray, z0: np.ndarray, forcing: np.ndarray | None, N: int,
                       bar: Any, blocked: bool = True) -> np.ndarray:
    """Return ``Z`` (N + 1, s), row ``k`` the state ``z_k`` of ``z_{k+1} = A z_k + d_k``,
    ``d_k = forcing[k]`` (or 0).

    Short runs use the plain loop.  Long runs split the horizon into ``nb`` blocks of
    ``b ~ sqrt(N)`` steps: the block-start states follow
    ``z_{(i+1)b} = A^b z_{ib} + sum_j A^{b-1-j} d_{ib+j}`` (one contraction for all blocks'
    forcing), then all blocks advance together, one vectorized step of the same recursion at a
    time.  That is ``O(sqrt(N))`` Python iterations instead of ``N``, with rounding differences of
    the order of ``b`` machine epsilons.  The rows are written where they belong (block ``i``,
    step ``j`` is row ``ib + j``): no transposition of the trajectory afterwards.
    """
    size = A.shape[0]
    A_T = np.ascontiguousarray(A.T)   # row-vector form: z_{k+1}' = z_k' A' + d_k'
    if not blocked or N <= _BLOCKED_ABOVE:
        Z = np.empty((N + 1, size))
        Z[0] = z0
        Z[1:] = 0.0 if forcing is None else forcing
        for start in range(0, N, _CHUNK):
            stop = min(start + _CHUNK, N)
            for k in range(start, stop):
                Z[k + 1] += Z[k] @ A_T
            if bar is not None:
                bar.update(stop - start)
        return Z
    b = int(np.ceil(np.sqrt(N)))
    nb = -(-N // b)
    powers = _transposed_powers(A_T, b + 1)
    # rows[ib + j] = z_{ib+j}; rows nb b (a block start) and beyond N are computed and dropped
    rows = np.empty((nb * b + 1, size))
    rows[0] = z0
    rows[1:N + 1] = 0.0 if forcing is None else forcing
    rows[N + 1:] = 0.0
    starts = rows[::b]                       # z_{ib}, i = 0 .. nb (a view)
    A_b = powers[b]
    # (without forcing, _run_linear reads long runs from _unforced_readouts; here f is zero)
    # f[i] = sum_j d_{ib+j}' A_T^{b-1-j}, read from the rows before the starts overwrite them
    f = rows[1:nb * b + 1].reshape(nb, b * size) @ powers[b - 1::-1].reshape(b * size, size)
    for i in range(nb):
        starts[i + 1] = starts[i] @ A_b + f[i]
    blocks = rows[:nb * b].reshape(nb, b, size)   # blocks[i, j] = z_{ib+j} (a view)
    for j in range(b - 1):
        blocks[:, j + 1] += blocks[:, j] @ A_T
        if bar is not None:
            bar.update(N * (j + 1) // (b - 1) - N * j // (b - 1))   # N in all
    return rows[:N + 1]


def _run_steps(plant: DelayedPlant, controller: Any, x0: np.ndarray, steps: int,
               W: np.ndarray | None, V: np.ndarray | None, bar: Any,
               C: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    n, m = plant.n_states, plant.n_inputs
    F, G = plant.lifted_matrices()
    size = F.shape[0]
    Z = np.zeros((steps + 1, size))
    Z[0, :n] = x0
    if W is not None:
        Z[1:, :n] = W.T
    U = np.empty((steps, m))
    F_T, G_T = np.ascontiguousarray(F.T), np.ascontiguousarray(G.T)
    for k in range(steps):
        x = Z[k, :n]
        if not np.isfinite(x).all():
            raise _diverged(k)
        y = x.copy() if C is None else C @ x
        if V is not None:
            y += V[:, k]
        U[k] = checked_output(f"the controller at step {k}", controller(y), (m,),
                              f" (norm of the measured {'state' if C is None else 'output'}: "
                              f"{np.linalg.norm(y):.3g})")
        Z[k + 1] += Z[k] @ F_T + U[k] @ G_T
        bar.update(1)   # every step: a controller call (an MPC solve) can take milliseconds
    X = Z[:, :n].T
    if not np.isfinite(X[:, -1]).all():
        raise _diverged(steps)
    return np.ascontiguousarray(X), np.ascontiguousarray(U.T)


def simulate_closed_loop(plant: DelayedPlant, controller: Controller, x0: Any, steps: int, *,
                         process_noise: Any = None, measurement_noise: Any = None,
                         rng: np.random.Generator | int | None = None, fine: bool = False,
                         points_per_step: int | None = None, Q: Any = None, R: Any = None,
                         progress: bool = False, method: str = "auto",
                         measurement_matrix: Any = None) -> ClosedLoopResult:
    """Simulate a controller in feedback with the true delayed plant.

    Parameters
    ----------
    plant : dmdidc.DelayedPlant
        The TRUE plant (``n`` states, ``m`` inputs, per-channel delays).  Its discretization is
        exact, so fractional delays act exactly as in continuous time.  With an
        ``operating_point`` ``(x_op, u_op)`` the states, ``x0`` and the controller's
        measurements and commands are physical values, while the cost, ``final_norm`` and
        ``state_norms`` weigh the deviations from it.  The controller must then have an
        operating point too (one built on a model that carries one), and a plant without one
        needs a controller without one (see Raises).
    controller : Controller
        Object with ``reset()`` and ``__call__(y (n,)) -> u (m,)``; a linear controller also has
        ``feedback_matrices() -> (K_x (m, n), K_u (H, m, m))``.  ``reset()`` is called first.
    x0 : array_like, shape (n,)
        Initial state; inputs before time 0 are zero.
    steps : int
        Number of control steps ``>= 0``.
    process_noise : ndarray of shape (n, steps), or callable, optional
        Discrete process noise ``w_k`` added to ``x_{k+1}``, explicit or a sampler
        ``sampler(rng, (n, steps))`` (e.g. :func:`noise_sampler`).
    measurement_noise : ndarray of shape (l, steps + 1) or (l, steps), or callable, optional
        Noise ``v_k`` on the measurement ``y_k = x_k + v_k`` (or ``C x_k + v_k``) of
        ``x_0 .. x_steps`` (the last one is only recorded; with ``(l, steps)`` it is zero);
        ``l = n`` without ``measurement_matrix``.  A sampler gets ``(l, steps + 1)``.
    rng : numpy.random.Generator or int or None, optional
        Randomness for the samplers: process noise is drawn first, then measurement noise.
    fine : bool, default False
        Also compute the exact inter-sample trajectory (needs the plant's continuous model).
        Process noise acts at the sampling instants, so the fine trajectory jumps by ``w_k`` there.
    points_per_step : int, optional
        Instants per sampling period in the fine trajectory (default 20; only with ``fine``).
    Q : array_like, shape (n, n), optional
        State weight of the cost (identity by default).
    R : array_like, shape (m, m), optional
        Input weight of the cost (identity by default).
    progress : bool, default False
        Show a tqdm progress bar.
    method : {"auto", "linear", "step"}, default "auto"
        ``"linear"`` iterates the lifted closed-loop matrix (controller must have
        ``feedback_matrices``; the controller object itself is not called, so its internal
        history is not advanced); ``"step"`` calls the controller every step; ``"auto"`` picks
        ``"linear"`` when available.
    measurement_matrix : array_like, shape (l, n), optional
        The controller sees only ``y_k = C x_k + v_k`` (output feedback, e.g.
        :class:`~controllers.OutputFeedback`); the loop is then stepped (``method="step"``).
        With a plant's operating point, ``x_k`` is the physical state.  Required for a
        controller that reads outputs (an ``n_outputs`` attribute, as
        :class:`~controllers.OutputFeedback`), even with as many outputs as states: the
        plant's sensors are not the observer's ``C`` (which is in its model's basis); pass
        ``np.eye(n)`` if the sensors read the states.

    Returns
    -------
    ClosedLoopResult
        ``times`` (steps + 1,), ``states`` (n, steps + 1), ``inputs`` (m, steps), ``cost``
        ``= sum_{k<steps} x_k' Q x_k + u_k' R u_k``, and ``fine_times``/``fine_states``.

    Raises
    ------
    ParameterError
        For ``steps`` not a non-negative integer, an unknown ``method``, ``method="linear"``
        with a controller without ``feedback_matrices``, or ``points_per_step`` without
        ``fine``.  A controller with a (non-zero) ``operating_point`` on a plant without one,
        or a controller whose ``operating_point`` is ``None`` on a plant with one: the two
        work in different coordinates (the message names both operating points and the
        remedy: ``DelayedPlant(..., operating_point=)`` or ``deviation_model()``).  A
        controller whose ``plant`` (its model) has another sampling period ``dt`` than the
        plant's.  A controller that reads outputs without ``measurement_matrix``.  A state
        controller designed on an output model (its ``output_matrix``: its states are the
        model's own basis, an :class:`~dmdidc.OutputDMDidc`'s canonical variates) fed this
        plant's states or outputs, unless the plant is that model itself: wrap it in
        :class:`~controllers.OutputFeedback` with a
        :class:`~controllers.DelayedKalmanObserver` of the model.
    DimensionError
        For a wrong shape of ``x0``, the noise, ``Q``, ``R``, the gains, or of an input returned
        by the controller; a ``measurement_matrix`` with other rows than the controller's
        outputs.
    NonFiniteError
        If the controller returns NaN/inf or the state diverges to non-finite values.

    References
    ----------
    Dissertation eqs. (9.15), (9.65), (9.70), (9.75).

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[0.0]], [[1.0]], delay=0.5, dt=1.0)
    >>> class Gain:
    ...     def reset(self): pass
    ...     def __call__(self, x): return -0.5 * x
    ...     def feedback_matrices(self): return np.array([[-0.5]]), np.zeros((0, 1, 1))
    >>> result = simulate_closed_loop(plant, Gain(), [1.0], 50)
    >>> result.states.shape, result.inputs.shape, result.final_norm < 1e-3
    ((1, 51), (1, 50), True)
    """
    plant = as_plant(plant, "plant")
    C = None
    if measurement_matrix is not None:
        C = check_finite_array("measurement_matrix", measurement_matrix, ndim=2)
        if C.shape[1] != plant.n_states:
            raise DimensionError(f"measurement_matrix has shape {C.shape}; expected "
                                 f"(l, {plant.n_states})")
        if method == "linear":
            raise ParameterError("method='linear' iterates a state-feedback law; with "
                                 "measurement_matrix the loop is stepped (method='step')")
    outputs = getattr(controller, "n_outputs", None)     # an OutputFeedback's sensors
    if outputs is not None and C is None:
        # not the states in their place, even when there are as many: the observer's C is in
        # its model's basis, the plant's sensors are the plant's (C = [[1, 0], [1, 1]] read
        # as the states: cost 5.66 against 4.21, 12 of 30 random C diverged, silently)
        raise ParameterError(
            f"the controller reads {outputs} measured output(s) (y = C x: an output feedback "
            f"loop) and measurement_matrix is missing; pass measurement_matrix=C, the plant's "
            f"sensors ({outputs} rows, {plant.n_states} columns; np.eye({plant.n_states}) if "
            f"the sensors read the states)")
    if outputs is not None and C.shape[0] != outputs:
        raise DimensionError(
            f"the controller reads {outputs} measured output(s) (y = C x: an output feedback "
            f"loop) and measurement_matrix has {C.shape[0]} rows; pass measurement_matrix=C, "
            f"the plant's sensors ({outputs} rows)")
    x0 = check_finite_array("x0", x0, ndim=1)
    if x0.shape != (plant.n_states,):          # before the coordinates, which read its size
        raise DimensionError(f"x0 has shape {x0.shape}; expected ({plant.n_states},)")
    _check_period(plant, controller)
    # a state controller of an output model acts on that model's basis, not on what we measure
    refuse_model_basis(plant, controller, states=C is None)
    _check_coordinates(plant, controller, x0)
    if plant.operating_point is not None:
        return _around_operating_point(plant, controller, x0, steps, process_noise=process_noise,
                                       measurement_noise=measurement_noise, rng=rng, fine=fine,
                                       points_per_step=points_per_step, Q=Q, R=R,
                                       progress=progress, method=method, measurement_matrix=C)
    n, m = plant.n_states, plant.n_inputs
    steps = check_integer("steps", steps, minimum=0)
    if method not in _METHODS:
        raise ParameterError(f"method must be one of {_METHODS}; got {method!r}")
    if not callable(controller) or not callable(getattr(controller, "reset", None)):
        raise ParameterError(f"controller must have reset() and __call__(x) -> u; got "
                             f"{type(controller).__name__}")
    Q = check_weight("Q", Q, n, definite=False)
    R_weight = check_weight("R", R, m, definite=False)
    if fine:
        points_per_step = check_integer("points_per_step", 20 if points_per_step is None
                                        else points_per_step, minimum=1)
    elif points_per_step is not None:
        raise ParameterError("points_per_step needs fine=True (it sets the inter-sample grid)")
    linear = callable(getattr(controller, "feedback_matrices", None))
    if method == "linear" and not linear:
        raise ParameterError(f"method='linear' needs a controller with feedback_matrices(); "
                             f"{type(controller).__name__} has none")
    use_linear = linear and method != "step" and C is None

    generator = as_generator(rng)
    W = _noise_array("process_noise", process_noise, (n, steps), generator)
    signals = n if C is None else C.shape[0]
    V = _noise_array("measurement_noise", measurement_noise, (signals, steps + 1), generator,
                     accepted=((signals, steps + 1), (signals, steps)))
    if V is not None and V.shape[1] == steps:
        V = np.concatenate([V, np.zeros((signals, 1))], axis=1)

    from tqdm.auto import tqdm

    controller.reset()
    # Overflow of a diverging loop is reported as NonFiniteError, not as numpy warnings; a cost
    # beyond the float range (finite states above ~1e154) is inf.
    with tqdm(total=steps, disable=not progress, desc="closed loop", unit="step") as bar, \
            np.errstate(over="ignore", invalid="ignore"):
        if use_linear:
            K_x, K_u = feedback_gains(controller, n, m)
            X, U = _run_linear(plant, K_x, K_u, x0, steps, W, V, bar)
        else:
            X, U = _run_steps(plant, controller, x0, steps, W, V, bar, C)
        stage = (np.sum(X[:, :-1] * (Q @ X[:, :-1]), axis=0)
                 + np.sum(U * (R_weight @ U), axis=0))
    fine_times = fine_states = None
    if fine:
        fine_times, fine_states = fine_grid(plant, X, U, None, points_per_step)
    return ClosedLoopResult(times=np.arange(steps + 1) * plant.dt, states=X, inputs=U,
                            stage_costs=stage, cost=float(stage.sum()), dt=plant.dt,
                            method="linear" if use_linear else "step", measurement_noise=V,
                            fine_times=fine_times, fine_states=fine_states,
                            measurement_matrix=C)


def _operating_point_text(op: OperatingPoint | None) -> str:
    return "none (the origin)" if op is None else repr(op)


#: A controller's operating point below this fraction of the start's deviation only warns: a
#: start given in the other coordinates (a physical x0 ~ x_op for a deviation plant) is about
#: as large as the operating point itself and must not pass for a small offset.
_SMALL_OFFSET = 0.1


def _offset_size(plant: DelayedPlant, op: OperatingPoint) -> float:
    """How far a controller's operating point moves the loop on a plant in other coordinates:
    the larger of ``|x_op|`` and the plant's steady response to ``u_op`` (infinite for an
    integrator; for an operating point that is the plant's equilibrium the two are one)."""
    try:
        held = plant.steady_state(op.input)
    except NoSteadyStateError:
        return np.inf
    return float(max(np.linalg.norm(op.state), np.linalg.norm(held)))


def _check_period(plant: DelayedPlant, controller: Any) -> None:
    """Refuse a controller designed for another sampling period than the plant's: it acts once
    per plant period with a law (prediction over the delay, gain) made for its own model's
    period (a controller of T = 1 s on the README plant at T = 2 s: cost 1.75e9, silently).  A
    controller of one's own without a ``plant`` (a DelayedPlant) is taken to fit the plant."""
    own = getattr(controller, "plant", None)
    if not isinstance(own, DelayedPlant) or np.isclose(own.dt, plant.dt, rtol=1e-9, atol=0.0):
        return
    raise ParameterError(f"the controller ({type(controller).__name__}) is designed on a model "
                         f"sampled at T = {own.dt:g} s and the plant is sampled at "
                         f"T = {plant.dt:g} s: the loop runs one command per plant period; "
                         f"design the controller on a model at the plant's T (identify from "
                         f"data sampled at it, or DelayedPlant.from_continuous(A_c, B_c, "
                         f"delay, dt={plant.dt:g}))")


def _check_coordinates(plant: DelayedPlant, controller: Any, x0: Any) -> None:
    """Refuse a loop whose controller and plant work in different coordinates.

    A plant without an operating point is taken in its matrices' coordinates; a controller
    with one regulates to ``x_op`` holding ``u_op``.  Whether the plant's origin is ``x_op``
    (a plant in deviations) or the physical zero (a plant that rests at 0) cannot be told from
    the two, and the two readings differ by the whole operating point (a model of a process at
    45 % valve run on its deviation plant: cost 8e5, silently), so the loop is refused rather
    than converted.  With an operating point on both sides everything is physical, and the
    loop runs.  A controller of one's own without an ``operating_point`` attribute is taken to
    speak the plant's coordinates.

    An operating point below a tenth of the start's deviation (the larger of ``|x_op|`` and
    the plant's steady response to ``u_op``, against ``|x0|``) only warns: an identified model of
    deviation data keeps a small spurious offset when its intercept test fires by chance
    (about 1 fit in 100 at its level), and its loop then settles that little off target.
    """
    if not hasattr(controller, "operating_point"):
        return
    own, theirs = controller.operating_point, plant.operating_point
    if (own is None) == (theirs is None):
        return
    if own is not None and not (np.any(own.state) or np.any(own.input)):
        return                          # an operating point at the origin changes nothing
    name = type(controller).__name__
    text = (f"the controller ({name}) has the operating point {_operating_point_text(own)} "
            f"and the plant {_operating_point_text(theirs)}")
    if own is not None:
        start = np.linalg.norm(np.asarray(x0, dtype=float))
        size = _offset_size(plant, own)
        if size < _SMALL_OFFSET * start:
            warn_model(f"{text}: the loop runs in the plant's coordinates and settles off "
                       f"target by the controller's operating point (size {size:.3g}, below "
                       f"a tenth of the start's {start:.3g}: e.g. a small offset an "
                       f"identified model kept); design the controller on "
                       f"model.deviation_model() when the plant works in deviations",
                       DiagnosticWarning)
            return
    remedy = ("give the plant its operating point (DelayedPlant(..., operating_point=(x_op, "
              "u_op)), in the same units), or design the controller on model.deviation_model() "
              "when the plant works in deviations"
              if theirs is None else
              "design the controller on a model with the plant's operating point (the plant "
              "itself, or an identified model that carries one), or simulate "
              "plant.deviation_model() with x0 as a deviation")
    raise CoordinatesError(f"{text}: the controller would regulate the plant to the wrong "
                           f"coordinates", remedy, plant_has_point=theirs is not None)


class CoordinatesError(ParameterError):
    """A loop refused because its controller and plant work in different coordinates (an
    operating point on one side only): ``finding`` and ``remedy`` apart, so that a command can
    give its own remedy (a plant file's field, a flag) for the Python one."""

    def __init__(self, finding: str, remedy: str, *, plant_has_point: bool) -> None:
        super().__init__(f"{finding}; {remedy}")
        self.finding, self.remedy, self.plant_has_point = finding, remedy, plant_has_point


class _DeviationController:
    """A physical-units controller seen from a loop that runs in deviations: it measures
    ``y + measured_level`` and its commands are taken less ``input_level``."""

    def __init__(self, controller: Any, measured_level: np.ndarray,
                 input_level: np.ndarray) -> None:
        self._controller = controller
        self._measured, self._input = measured_level, input_level

    def reset(self) -> None:
        self._controller.reset()

    def __call__(self, y_deviation: np.ndarray) -> np.ndarray:
        u = checked_output(f"the controller {type(self._controller).__name__}",
                           self._controller(y_deviation + self._measured), self._input.shape)
        return u - self._input


def _around_operating_point(plant: DelayedPlant, controller: Any, x0: Any, steps: int,
                            measurement_matrix: np.ndarray | None = None,
                            **options: Any) -> ClosedLoopResult:
    """The loop of a plant with an operating point: its dynamics act on deviations, the
    controller sees and commands physical values (``C x`` of the physical state, with a
    measurement matrix), and the result is physical (stage costs weigh the deviations, the
    quantity regulated to zero)."""
    op = plant.operating_point
    if options.get("method") == "linear":
        raise ParameterError("method='linear' iterates a linear law in the plant's coordinates; "
                             "a plant with an operating point runs the controller step by step "
                             "(method='step' or 'auto')")
    options["method"] = "step"
    C = measurement_matrix
    measured = op.state if C is None else C @ op.state
    result = simulate_closed_loop(plant.deviation_model(),
                                  _DeviationController(controller, measured, op.input),
                                  x0 - op.state, steps, measurement_matrix=C, **options)
    fine = None if result.fine_states is None else read_only(result.fine_states
                                                             + op.state[:, None])
    return dataclasses.replace(result, states=read_only(result.states + op.state[:, None]),
                               inputs=read_only(result.inputs + op.input[:, None]),
                               fine_states=fine, operating_point=op)
