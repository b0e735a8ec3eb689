"""The one value type that carries a delayed linear plant through the toolbox.

A :class:`DelayedPlant` is a linear plant with input delay, in discrete time

    x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j}        (dissertation eq. 9.21)

and, when it has one, its continuous-time origin x'(t) = A_c x(t) + B_c u(t - r) with one delay
per input channel (eq. 9.15).  The simulator, the DMDidc estimator and the controllers all take it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmdidc.discretization import delay_blocks, required_max_delay, split_delay
from privacy.errors import DimensionError, LogarithmError
from privacy.validation import check_finite_array, check_positive, read_only

__all__ = ["DelayedPlant", "as_plant"]


@dataclass(frozen=True, eq=False)
class DelayedPlant:
    """Linear plant with (fractional, per-channel) input delay; immutable.

    Parameters
    ----------
    A_d : ndarray, shape (n, n)
        Discrete state matrix ``e^{A_c T}``.
    B_blocks : ndarray, shape (R + 1, n, m)
        Input blocks: ``B_blocks[j]`` multiplies ``u_{k-j}``.
    dt : float
        Sampling period ``T`` in seconds.
    A_c : ndarray, shape (n, n), optional
        Continuous state matrix, when a continuous model is known.
    B_c : ndarray, shape (n, m), optional
        Continuous input matrix.
    delay : ndarray, shape (m,), optional
        Input delay of each channel, seconds.
    continuous_note : str, optional
        Why no continuous model is available (e.g. the matrix logarithm is not unique); shown in
        the error raised when ``A_c``, ``B_c`` or ``delay`` are accessed.

    Notes
    -----
    Build it with :meth:`from_continuous` (exact discretization) or get it from
    :class:`dmdidc.DMDidc`.  Arrays are read-only copies.

    Examples
    --------
    >>> import numpy as np
    >>> plant = DelayedPlant.from_continuous(np.array([[0, 1.1], [-1.1, 0]]),
    ...                                      np.array([[1, -1], [-1, 2.0]]), delay=2.5, dt=2.0)
    >>> plant.delay_steps, plant.delay_fraction
    (array([1, 1]), array([0.25, 0.25]))
    >>> plant.B_blocks.shape
    (3, 2, 2)
    """

    A_d: np.ndarray
    B_blocks: np.ndarray
    dt: float
    A_c_: np.ndarray | None = field(default=None, repr=False)
    B_c_: np.ndarray | None = field(default=None, repr=False)
    delay_: np.ndarray | None = field(default=None, repr=False)
    continuous_note: str | None = field(default=None, repr=False)

    def __init__(self, A_d: Any, B_blocks: Any, dt: float, A_c: Any = None, B_c: Any = None,
                 delay: Any = None, continuous_note: str | None = None) -> None:
        A_d = check_finite_array("A_d", A_d, ndim=2)
        B_blocks = check_finite_array("B_blocks", B_blocks)
        if B_blocks.ndim == 2:
            B_blocks = B_blocks[None]
        if B_blocks.ndim != 3:
            raise DimensionError(f"B_blocks must have shape (R + 1, n, m); got {B_blocks.shape}")
        n = A_d.shape[0]
        if A_d.shape != (n, n):
            raise DimensionError(f"A_d must be square; got shape {A_d.shape}")
        if B_blocks.shape[1] != n:
            raise DimensionError(f"B_blocks has {B_blocks.shape[1]} rows; expected {n} "
                                 f"(the size of A_d)")
        m = B_blocks.shape[2]
        dt = check_positive("dt", dt)
        given = [x is not None for x in (A_c, B_c, delay)]
        if any(given) and not all(given):
            raise ValueError("A_c, B_c and delay must be given together (or none of them)")
        if all(given):
            A_c = check_finite_array("A_c", A_c, ndim=2)
            B_c = check_finite_array("B_c", B_c, ndim=2)
            if A_c.shape != (n, n):
                raise DimensionError(f"A_c has shape {A_c.shape}; expected {(n, n)}")
            if B_c.shape != (n, m):
                raise DimensionError(f"B_c has shape {B_c.shape}; expected {(n, m)}")
            delay = _delay_vector(delay, m)
            needed = required_max_delay(delay, dt)
            if needed > B_blocks.shape[0] - 1:
                raise DimensionError(f"delay {delay.tolist()} s at dt={dt} needs {needed + 1} "
                                     f"input blocks; B_blocks has {B_blocks.shape[0]}")
        object.__setattr__(self, "A_d", read_only(A_d))
        object.__setattr__(self, "B_blocks", read_only(B_blocks))
        object.__setattr__(self, "dt", dt)
        object.__setattr__(self, "A_c_", read_only(A_c))
        object.__setattr__(self, "B_c_", read_only(B_c))
        object.__setattr__(self, "delay_", read_only(delay))
        object.__setattr__(self, "continuous_note", continuous_note)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_continuous(cls, A_c: Any, B_c: Any, delay: Any, dt: float,
                        max_delay: int | None = None) -> DelayedPlant:
        """Exactly discretize ``x' = A_c x + B_c u(t - r)`` with zero-order hold of period dt.

        Parameters
        ----------
        A_c : array_like, shape (n, n)
        B_c : array_like, shape (n, m)
        delay : float or array_like, shape (m,)
            Common delay or one delay per input channel, seconds, ``>= 0``.
        dt : float
            Sampling period, seconds.
        max_delay : int, optional
            Number ``R`` of past periods kept (default: the smallest that holds the delay).

        Returns
        -------
        DelayedPlant

        References
        ----------
        Dissertation eqs. (9.5), (9.62), (9.63).
        """
        A_c = check_finite_array("A_c", A_c, ndim=2)
        B_c = check_finite_array("B_c", B_c, ndim=2)
        if A_c.shape[0] != A_c.shape[1]:
            raise DimensionError(f"A_c must be square; got shape {A_c.shape}")
        if B_c.shape[0] != A_c.shape[0]:
            raise DimensionError(f"B_c has {B_c.shape[0]} rows; expected {A_c.shape[0]} "
                                 f"(the size of A_c)")
        delay = _delay_vector(delay, B_c.shape[1])
        if max_delay is not None and (isinstance(max_delay, bool)
                                      or not isinstance(max_delay, (int, np.integer))
                                      or max_delay < 0):
            raise ValueError(f"max_delay must be a non-negative integer; got {max_delay!r}")
        A_d, blocks = delay_blocks(A_c, B_c, delay, dt, max_delay)
        return cls(A_d, blocks, dt, A_c=A_c, B_c=B_c, delay=delay)

    # ------------------------------------------------------------------ sizes
    @property
    def n_states(self) -> int:
        """Number of states ``n``."""
        return self.A_d.shape[0]

    @property
    def n_inputs(self) -> int:
        """Number of inputs ``m``."""
        return self.B_blocks.shape[2]

    @property
    def max_delay(self) -> int:
        """Number ``R`` of past sampling periods the input blocks cover."""
        return self.B_blocks.shape[0] - 1

    # ------------------------------------------------------------------ continuous model
    @property
    def has_continuous(self) -> bool:
        """Whether a continuous-time model (A_c, B_c, delay) is available."""
        return self.A_c_ is not None

    def _continuous(self, name: str) -> np.ndarray:
        value = getattr(self, name + "_")
        if value is None:
            note = self.continuous_note or "this plant was built from discrete matrices only"
            raise LogarithmError(f"{name} is not available: {note}")
        return value

    @property
    def A_c(self) -> np.ndarray:
        """Continuous state matrix, shape (n, n)."""
        return self._continuous("A_c")

    @property
    def B_c(self) -> np.ndarray:
        """Continuous input matrix, shape (n, m)."""
        return self._continuous("B_c")

    @property
    def delay(self) -> np.ndarray:
        """Input delay of each channel in seconds, shape (m,): ``r = (w + p) T``."""
        return self._continuous("delay")

    @property
    def delay_steps(self) -> np.ndarray:
        """Whole part ``w`` of each channel's delay in sampling periods, shape (m,)."""
        return split_delay(self.delay, self.dt)[0]

    @property
    def delay_fraction(self) -> np.ndarray:
        """Fractional part ``p`` in [0, 1) of each channel's delay, shape (m,)."""
        return split_delay(self.delay, self.dt)[1]

    # ------------------------------------------------------------------ derived matrices
    @property
    def B_d(self) -> np.ndarray:
        """Sum of the input blocks, shape (n, m): the delay-free ZOH input matrix (eq. 9.6)."""
        return self.B_blocks.sum(axis=0)

    @property
    def eigs(self) -> np.ndarray:
        """Eigenvalues of ``A_d``, shape (n,)."""
        return np.linalg.eigvals(self.A_d)

    def lifted_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Delay-free realization with input-history states.

        The state ``z_k = [x_k, u_{k-1}, ..., u_{k-R}]`` (size ``n + m R``) obeys
        ``z_{k+1} = F z_k + G u_k``.

        Returns
        -------
        F : ndarray, shape (n + m R, n + m R)
        G : ndarray, shape (n + m R, m)
        """
        n, m, R = self.n_states, self.n_inputs, self.max_delay
        size = n + m * R
        F = np.zeros((size, size))
        G = np.zeros((size, m))
        F[:n, :n] = self.A_d
        G[:n] = self.B_blocks[0]
        if R:
            F[:n, n:] = np.concatenate(list(self.B_blocks[1:]), axis=1)
            G[n:n + m] = np.eye(m)
            F[n + m:, n:n + m * (R - 1)] = np.eye(m * (R - 1))
        return F, G

    def to_statespace(self):
        """Export as a python-control discrete ``StateSpace`` (outputs are the n plant states).

        Returns
        -------
        control.StateSpace
            Delay-free realization of size ``n + m R`` with sampling time ``dt``.
        """
        import control

        F, G = self.lifted_matrices()
        C = np.zeros((self.n_states, F.shape[0]))
        C[:, :self.n_states] = np.eye(self.n_states)
        return control.ss(F, G, C, np.zeros((self.n_states, self.n_inputs)), self.dt)

    # ------------------------------------------------------------------ simulation
    def simulate(self, x0: Any, U: Any, U_past: Any = None) -> np.ndarray:
        """Sample-exact response to a held input sequence.

        Parameters
        ----------
        x0 : array_like, shape (n,)
        U : array_like, shape (m, K)
            Inputs ``u_0 .. u_{K-1}``.
        U_past : array_like, shape (m, R), optional
            Inputs before time 0, oldest first (``u_{-R} .. u_{-1}``); zero by default.

        Returns
        -------
        X : ndarray, shape (n, K + 1)
            States ``x_0 .. x_K``.
        """
        n, m, R = self.n_states, self.n_inputs, self.max_delay
        x0 = check_finite_array("x0", x0, ndim=1)
        if x0.shape != (n,):
            raise DimensionError(f"x0 has shape {x0.shape}; expected ({n},)")
        U = check_finite_array("U", U, ndim=2)
        if U.shape[0] != m:
            raise DimensionError(f"U has {U.shape[0]} rows; expected {m} inputs (time runs "
                                 f"along the columns)")
        history = np.zeros((m, R)) if U_past is None else check_finite_array("U_past", U_past,
                                                                             ndim=2)
        if history.shape != (m, R):
            raise DimensionError(f"U_past has shape {history.shape}; expected {(m, R)}")
        K = U.shape[1]
        padded = np.concatenate([history, U], axis=1)
        # forcing[:, k] = sum_j B^(j) u_{k-j}, vectorized over k before the recursion.
        forcing = np.zeros((n, K))
        for j in range(R + 1):
            forcing += self.B_blocks[j] @ padded[:, R - j:R - j + K]
        X = np.empty((n, K + 1))
        X[:, 0] = x0
        A_d = self.A_d
        for k in range(K):
            X[:, k + 1] = A_d @ X[:, k] + forcing[:, k]
        return X

    # ------------------------------------------------------------------ serialization
    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation (lists of floats)."""
        data: dict[str, Any] = {"dt": self.dt, "A_d": self.A_d.tolist(),
                                "B_blocks": self.B_blocks.tolist()}
        if self.has_continuous:
            data.update(A_c=self.A_c.tolist(), B_c=self.B_c.tolist(), delay=self.delay.tolist())
        if self.continuous_note:
            data["continuous_note"] = self.continuous_note
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DelayedPlant:
        """Inverse of :meth:`to_dict`."""
        try:
            return cls(data["A_d"], data["B_blocks"], data["dt"], A_c=data.get("A_c"),
                       B_c=data.get("B_c"), delay=data.get("delay"),
                       continuous_note=data.get("continuous_note"))
        except KeyError as exc:
            raise ValueError(f"model data is missing the field {exc}") from exc

    def save(self, path: str | Path) -> Path:
        """Write the plant as ``.json`` or ``.npz`` (chosen by the suffix)."""
        path = Path(path)
        if path.suffix == ".npz":
            arrays = {k: np.asarray(v) for k, v in self.to_dict().items()}
            np.savez(path, **arrays)
        elif path.suffix == ".json":
            path.write_text(json.dumps(self.to_dict(), indent=2))
        else:
            raise ValueError(f"path must end in .json or .npz; got {str(path)!r}")
        return path

    @classmethod
    def load(cls, path: str | Path) -> DelayedPlant:
        """Read a plant written by :meth:`save`."""
        path = Path(path)
        try:
            if path.suffix == ".npz":
                with np.load(path) as archive:
                    data = {k: (archive[k].item() if archive[k].ndim == 0 else archive[k])
                            for k in archive.files}
            elif path.suffix == ".json":
                data = json.loads(path.read_text())
            else:
                raise ValueError(f"path must end in .json or .npz; got {str(path)!r}")
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"cannot read a model from {str(path)!r}: {exc}") from exc
        return cls.from_dict(data)


def _delay_vector(delay: Any, m: int) -> np.ndarray:
    delay = check_finite_array("delay", delay)
    if delay.ndim == 0:
        delay = np.full(m, float(delay))
    if delay.shape != (m,):
        raise DimensionError(f"delay must be a scalar or have shape ({m},) (one per input); "
                             f"got shape {delay.shape}")
    if np.any(delay < 0):
        raise ValueError(f"delay must be >= 0 seconds; got {delay.tolist()}")
    return delay


def as_plant(model: Any) -> DelayedPlant:
    """Return the :class:`DelayedPlant` of a plant, or of a fitted estimator (``.model_``)."""
    if isinstance(model, DelayedPlant):
        return model
    fitted = getattr(model, "model_", None)
    if isinstance(fitted, DelayedPlant):
        return fitted
    raise TypeError(f"expected a DelayedPlant or a fitted DMDidc estimator; got "
                    f"{type(model).__name__}")
