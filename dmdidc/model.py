"""The one value type that carries a delayed linear plant through the toolbox.

A :class:`DelayedPlant` is a linear plant with input delay, in discrete time

    x_{k+1} = A_d x_k + sum_{j=0}^{R} B^(j) u_{k-j}        (dissertation eq. 9.21)

and, when it has one, its continuous-time origin x'(t) = A_c x(t) + B_c u(t - r) with one delay
per input channel (eq. 9.15).  The simulator, the DMDidc estimator and the controllers all take it.

Each fact about the plant is decided here, once:

* the two parts agree: a plant that carries a continuous model has exactly its discretization as
  discrete part (checked on construction and on load);
* the **operating point** ``(x_op, u_op)``, when the data had one (an offset, an input bias, a
  non-zero equilibrium): the matrices describe deviations ``x - x_op``, ``u - u_op``, and
  :meth:`DelayedPlant.simulate` works in the physical units the data came in;
* a block ``B^(j)`` acts through channel ``i`` iff its column ``i`` is not zero
  (:attr:`DelayedPlant.active_blocks`), and the whole delay ``w`` of a channel is its first
  active block (:attr:`DelayedPlant.delay_steps`, eq. 9.66).  No tolerance is involved: an
  identified plant gets exact zeros where the estimator decided that a block is inactive (with
  its noise-aware test), and every controller reads ``w`` from here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.validation import (
    check_allocation,
    check_finite_array,
    check_integer,
    check_positive,
    read_only,
)
from dmdidc.discretization import (
    check_continuous,
    delay_blocks,
    first_active_blocks,
    required_max_delay,
    split_delay,
)
from dmdidc.errors import (
    DimensionError,
    InconsistentModelError,
    LogarithmError,
    NonFiniteError,
    NoSteadyStateError,
    ParameterError,
    warn_model,
)
from dmdidc.info import ModelInfo

__all__ = ["DelayedPlant", "OperatingPoint", "as_plant", "steady_state", "FORMAT_VERSION",
           "CONSISTENCY_RTOL", "INTEGRATOR_RCOND"]

#: Version of the file format written by :meth:`DelayedPlant.to_dict` / :meth:`save`.
#: 1 (no ``format_version`` field): dmdidc before the discrete/continuous consistency rule;
#: 2: consistent parts; 3: adds the optional ``operating_point``; 4: adds the optional ``info``
#: (signal names and units, confidence intervals, data provenance: :class:`~dmdidc.ModelInfo`),
#: and within it the optional ``sensors`` of a model in POD coordinates (written only then:
#: files without it are as before; a reader that predates it refuses the field by name).
FORMAT_VERSION = 4
#: Largest relative (Frobenius) difference accepted between the discrete part of a plant and
#: the exact discretization of its continuous part.  Far above rounding (~1e-15 for matrices
#: that went through JSON or ``from_continuous``), far below any hand edit.
CONSISTENCY_RTOL = 1e-8
#: ``A_d`` whose steady state moves by more than ``1 / INTEGRATOR_RCOND`` times a relative
#: rounding of its entries is an integrator (an eigenvalue 1 to rounding): the condition
#: ``rho(|(I - A_d)^-1| |A_d|)`` (the spectral radius of the entrywise absolute values) is at
#: least ``1e8``.  It is unchanged by a diagonal similarity (the states in other units), unlike
#: a singular value of ``I - A_d``.  At the threshold the rounding of ``A_d`` moves the steady
#: state by about ``1e8 eps`` (``2e-8``) of itself; past it the solve returns the forcing over
#: rounding.  A stable plant reaches it only with a mode whose discrete eigenvalue is within
#: ``1e-8`` of 1 (a time constant of ``1e8`` sampling periods).
INTEGRATOR_RCOND = 1e-8
#: The fields of a model file (:meth:`DelayedPlant.from_dict`); any other is refused.
_FIELDS = ("format_version", "dt", "A_d", "B_blocks", "A_c", "B_c", "delay", "max_delay",
           "continuous_note", "operating_point", "info")


@dataclass(frozen=True, eq=False)
class OperatingPoint:
    """The equilibrium a linear model describes deviations from (immutable).

    Attributes
    ----------
    state : ndarray, shape (n,)
        ``x_op``: the state in the data's units.
    input : ndarray, shape (m,)
        ``u_op``: the input that holds the plant at ``x_op``.

    Notes
    -----
    The model ``x_{k+1} - x_op = A_d (x_k - x_op) + sum_j B^(j) (u_{k-j} - u_op)`` is the affine
    model ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j} + c`` with ``c = (I - A_d) x_op - B_d u_op``
    (:mod:`dmdidc.offset`).
    """

    state: np.ndarray
    input: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", read_only(check_finite_array(
            "operating_point state", self.state, ndim=1)))
        object.__setattr__(self, "input", read_only(check_finite_array(
            "operating_point input", self.input, ndim=1)))

    def to_dict(self) -> dict[str, list[float]]:
        return {"state": self.state.tolist(), "input": self.input.tolist()}

    def __repr__(self) -> str:
        return (f"OperatingPoint(state={np.array2string(self.state, precision=4)}, "
                f"input={np.array2string(self.input, precision=4)})")


def _operating_point(value: Any, n: int, m: int) -> OperatingPoint | None:
    """Validate an operating point given as OperatingPoint, (x_op, u_op) or a mapping."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        unknown = set(value) - {"state", "input"}
        if unknown or len(value) != 2:
            raise ParameterError(f"operating_point must have the fields 'state' and 'input'; "
                                 f"got {sorted(value)}")
        value = OperatingPoint(value["state"], value["input"])
    elif not isinstance(value, OperatingPoint):
        try:
            state, inputs = value
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"operating_point must be an OperatingPoint, a pair "
                                 f"(x_op (n,), u_op (m,)) or a mapping; got "
                                 f"{type(value).__name__}") from exc
        value = OperatingPoint(state, inputs)
    if value.state.shape != (n,) or value.input.shape != (m,):
        raise DimensionError(f"operating_point has state shape {value.state.shape} and input "
                             f"shape {value.input.shape}; expected ({n},) and ({m},)")
    return value


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
    operating_point : OperatingPoint or (x_op, u_op), optional
        The equilibrium the matrices describe deviations from (module notes); ``None``: the
        origin.  :meth:`simulate` takes and returns physical values; the matrices, the lifted
        realization and the controllers work in deviations.
    info : ModelInfo, optional
        Signal names and units, confidence intervals and data provenance (saved with the
        model); :attr:`signal_info` gives defaults when there is none.

    Raises
    ------
    DimensionError, NonFiniteError, ParameterError
        Malformed arrays or ``dt``.
    InconsistentModelError
        ``A_c``, ``B_c`` and ``delay`` given with a discrete part that is not their exact
        discretization (relative difference above :data:`CONSISTENCY_RTOL`, or a non-zero entry
        in a block that the delay leaves exactly zero).

    Notes
    -----
    Build it with :meth:`from_continuous` (exact discretization), from discrete matrices only
    (then there is no continuous model), or get it from :class:`dmdidc.DMDidc`.  A discrete
    part given together with a continuous one must be its discretization: a plant never predicts
    with one part and simulates between samples with another.  Arrays are read-only copies.

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
    operating_point: OperatingPoint | None = field(default=None)
    info: ModelInfo | None = field(default=None, repr=False)

    def __init__(self, A_d: Any, B_blocks: Any, dt: float, A_c: Any = None, B_c: Any = None,
                 delay: Any = None, continuous_note: str | None = None,
                 operating_point: Any = None, info: ModelInfo | None = None) -> None:
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
        if continuous_note is not None and not isinstance(continuous_note, str):
            raise ParameterError(f"continuous_note must be a string or None; got "
                                 f"{type(continuous_note).__name__}")
        given = [x is not None for x in (A_c, B_c, delay)]
        if any(given) and not all(given):
            missing = [name for name, x in (("A_c", A_c), ("B_c", B_c), ("delay", delay))
                       if x is None]
            raise ParameterError(f"A_c, B_c and delay must be given together (or none of them); "
                                 f"missing {missing}")
        if all(given):
            A_c = check_finite_array("A_c", A_c, ndim=2)
            if A_c.shape != (n, n):
                raise DimensionError(f"A_c has shape {A_c.shape}; expected {(n, n)}")
            A_c, B_c, delay = check_continuous(A_c, B_c, delay)
            if B_c.shape != (n, m):
                raise DimensionError(f"B_c has shape {B_c.shape}; expected {(n, m)}")
            needed = required_max_delay(delay, dt)
            if needed > B_blocks.shape[0] - 1:
                raise DimensionError(f"delay {delay.tolist()} s at dt={dt} needs {needed + 1} "
                                     f"input blocks; B_blocks has {B_blocks.shape[0]}")
            _check_consistent(A_d, B_blocks, A_c, B_c, delay, dt)
        self._assign(A_d, B_blocks, dt, A_c, B_c, delay, continuous_note,
                     _operating_point(operating_point, n, m), _info(info, n, m))

    def _assign(self, A_d, B_blocks, dt, A_c, B_c, delay, continuous_note,
                operating_point=None, info=None) -> None:
        object.__setattr__(self, "A_d", read_only(A_d))
        object.__setattr__(self, "B_blocks", read_only(B_blocks))
        object.__setattr__(self, "dt", float(dt))
        object.__setattr__(self, "A_c_", read_only(A_c))
        object.__setattr__(self, "B_c_", read_only(B_c))
        object.__setattr__(self, "delay_", read_only(delay))
        object.__setattr__(self, "continuous_note", continuous_note)
        object.__setattr__(self, "operating_point", operating_point)
        object.__setattr__(self, "info", info)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_continuous(cls, A_c: Any, B_c: Any, delay: Any, dt: float,
                        max_delay: int | None = None, *, operating_point: Any = None,
                        info: ModelInfo | None = None) -> DelayedPlant:
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
        operating_point : OperatingPoint or (x_op, u_op), optional
            The equilibrium the model describes deviations from.
        info : ModelInfo, optional
            Signal names, units, intervals, provenance.

        Returns
        -------
        DelayedPlant

        Raises
        ------
        DimensionError, NonFiniteError, ParameterError
            Malformed matrices, a negative delay, ``dt <= 0``, or ``max_delay`` too small.

        References
        ----------
        Dissertation eqs. (9.5), (9.62), (9.63).
        """
        A_c, B_c, delay = check_continuous(A_c, B_c, delay)
        dt = check_positive("dt", dt)
        if max_delay is not None:
            max_delay = check_integer("max_delay", max_delay, minimum=0)
        A_d, blocks = delay_blocks(A_c, B_c, delay, dt, max_delay)
        plant = cls.__new__(cls)           # consistent by construction: skip the check
        n, m = B_c.shape
        plant._assign(A_d, blocks, dt, A_c, B_c, delay, None,
                      _operating_point(operating_point, n, m), _info(info, n, m))
        return plant

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

    def require_continuous(self, purpose: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(A_c, B_c, delay)``, or :class:`~dmdidc.LogarithmError` saying why there are none.

        Parameters
        ----------
        purpose : str
            What needs the continuous model (named in the error message).

        Returns
        -------
        A_c : ndarray, shape (n, n)
        B_c : ndarray, shape (n, m)
        delay : ndarray, shape (m,)

        Raises
        ------
        LogarithmError
            The plant has no continuous model (built from discrete matrices only, or identified
            with an ``A_d`` that has no unique real logarithm).
        """
        if not self.has_continuous:
            note = self.continuous_note or "this plant was built from discrete matrices only"
            raise LogarithmError(f"{purpose} needs the continuous-time model (A_c, B_c, delay) "
                                 f"of the plant, which is not available: {note}")
        return self.A_c_, self.B_c_, self.delay_

    @property
    def A_c(self) -> np.ndarray:
        """Continuous state matrix, shape (n, n)."""
        return self.require_continuous("A_c")[0]

    @property
    def B_c(self) -> np.ndarray:
        """Continuous input matrix, shape (n, m)."""
        return self.require_continuous("B_c")[1]

    @property
    def delay(self) -> np.ndarray:
        """Input delay of each channel in seconds, shape (m,): ``r = (w + p) T``."""
        return self.require_continuous("delay")[2]

    @property
    def active_blocks(self) -> np.ndarray:
        """Which input blocks act, shape (R + 1, m): ``B^(j)[:, i]`` is not zero.

        An identified plant has exact zeros where the estimator decided that a block is
        inactive; a plant from :meth:`from_continuous` is active at ``w`` (and ``w + 1`` for a
        fractional delay) of each channel.
        """
        return np.any(self.B_blocks != 0, axis=1)

    @property
    def delay_steps(self) -> np.ndarray:
        """Whole delay ``w`` of each channel in sampling periods, shape (m,) (eq. 9.66).

        The index of the channel's first active block; it needs no continuous model (and
        equals ``floor(delay / dt)`` when there is one).  0 for a channel without effect.
        """
        return np.maximum(first_active_blocks(self.active_blocks), 0)

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

    def steady_state(self, input: Any, offset: Any = None) -> np.ndarray:
        """The state where the plant rests under a constant input: ``(I - A_d)^-1 (B_d u + c)``.

        Parameters
        ----------
        input : array_like, shape (m,)
            The constant input ``u`` (in the matrices' coordinates: the operating point is not
            added).
        offset : array_like, shape (n,), optional
            A constant term ``c`` of ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j} + c``.

        Returns
        -------
        ndarray, shape (n,)

        Raises
        ------
        NoSteadyStateError
            ``A_d`` has an eigenvalue at 1 (an integrator): the message names it.
        DimensionError, NonFiniteError
            Wrong shapes, non-finite values.

        See Also
        --------
        steady_state : the same for a bare ``A_d`` and forcing.

        Examples
        --------
        >>> plant = DelayedPlant.from_continuous([[-1.0, 0.0], [1.0, -0.5]], [[1.0], [0.0]],
        ...                                      delay=0.7, dt=0.5)
        >>> plant.steady_state([2.0]).round(6)
        array([2., 4.])
        """
        forcing = self.B_d @ _checked_vector("input", input, self.n_inputs, "inputs")
        if offset is not None:
            forcing = forcing + _checked_vector("offset", offset, self.n_states, "states")
        return steady_state(self.A_d, forcing)

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
        check_allocation(f"a plant with max_delay = {R} (lifted state of size n + m R)",
                         (size, size))
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

    def to_control(self, *, form: str = "discrete", pade_order: int = 6):
        """Export to python-control as a ``StateSpace`` with the model's signal names.

        Parameters
        ----------
        form : {"discrete", "pade"}, default "discrete"
            ``"discrete"``: the exact sampled model, a discrete ``StateSpace`` (sampling time
            ``dt``) whose states are the plant states followed by the input history
            ``u_i[k-1] .. u_i[k-R]`` (:meth:`lifted_matrices`): the fractional delay is exact
            at the samples, no approximation.  ``"pade"``: a continuous ``StateSpace`` of
            ``(A_c, B_c)`` with each channel's delay replaced by a Pade approximant of order
            ``pade_order`` (accurate well below the frequency ``pade_order / delay``).  The
            delay-free continuous plant with the delays given separately is
            :meth:`to_control_continuous`.
        pade_order : int, default 6

        Returns
        -------
        control.StateSpace
            Inputs named after the inputs, outputs after the states (:attr:`signal_info`).
            With an :attr:`operating_point` it describes the deviations from it.

        Raises
        ------
        ParameterError
            Unknown ``form``.
        LogarithmError
            ``form="pade"`` without a continuous model.

        Examples
        --------
        >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
        >>> sys = plant.to_control()
        >>> sys.nstates, sys.dt, sys.input_labels, sys.output_labels
        (3, 1.0, ['u0'], ['x0'])
        >>> float(sys.dcgain()), float(plant.to_control(form="pade").dcgain())
        (2.0..., 2.0...)
        """
        import control

        names = self.signal_info
        if form == "discrete":
            F, G = self.lifted_matrices()
            n, m, R = self.n_states, self.n_inputs, self.max_delay
            C = np.eye(n, F.shape[0])
            history = [f"{names.input_names[i]}[k-{j}]" for j in range(1, R + 1)
                       for i in range(m)]
            return control.ss(F, G, C, np.zeros((n, m)), self.dt,
                              inputs=list(names.input_names), outputs=list(names.state_names),
                              states=list(names.state_names) + history)
        if form != "pade":
            raise ParameterError(f"form must be 'discrete' or 'pade'; got {form!r}")
        pade_order = check_integer("pade_order", pade_order, minimum=1)
        plant, delay = self.to_control_continuous()
        channels = [control.tf2ss(*control.pade(r, pade_order)) if r > 0
                    else control.ss([], [], [], [[1.0]]) for r in delay]
        delayed = control.series(control.append(*channels), plant)
        return control.ss(delayed.A, delayed.B, delayed.C, delayed.D,
                          inputs=list(names.input_names), outputs=list(names.state_names))

    def to_control_continuous(self):
        """The delay-free continuous plant as a python-control ``StateSpace`` and the delays.

        python-control's state-space objects hold no delay, so it is returned beside them:
        ``x'(t) = A_c x(t) + B_c u(t - delay)``.

        Returns
        -------
        system : control.StateSpace
            ``(A_c, B_c, I, 0)`` with the signal names.
        delay : ndarray, shape (m,)
            Each input channel's delay, seconds.

        Raises
        ------
        LogarithmError
            No continuous model.
        """
        import control

        A_c, B_c, delay = self.require_continuous("a continuous python-control model")
        names = self.signal_info
        n = self.n_states
        system = control.ss(A_c, B_c, np.eye(n), np.zeros((n, self.n_inputs)),
                            inputs=list(names.input_names), outputs=list(names.state_names),
                            states=list(names.state_names))
        return system, delay.copy()

    # ------------------------------------------------------------------ simulation
    def simulate(self, x0: Any, U: Any, U_past: Any = None) -> np.ndarray:
        """Sample-exact response to a held input sequence.

        Parameters
        ----------
        x0 : array_like, shape (n,)
        U : array_like, shape (m, K)
            Inputs ``u_0 .. u_{K-1}``.
        U_past : array_like, shape (m, R), optional
            Inputs before time 0, oldest first (``u_{-R} .. u_{-1}``); by default the plant
            was at rest: zero, or ``u_op`` with an operating point.

        Returns
        -------
        X : ndarray, shape (n, K + 1)
            States ``x_0 .. x_K``.

        Raises
        ------
        DimensionError, NonFiniteError, ParameterError
            Malformed or non-finite arguments, or states that overflow float64 (an unstable
            plant over many steps, or huge ``x0`` or ``U``).

        Notes
        -----
        With an :attr:`operating_point` every argument and the result are physical values (in
        the units of the data the model was fitted to): the deviations from the operating
        point follow the linear model.
        """
        op = self.operating_point
        if op is not None:
            x0 = check_finite_array("x0", x0, ndim=1)
            U = check_finite_array("U", U, ndim=2)
            shift = op.input[:, None] if U.shape[0] == op.input.size else 0.0
            past = None if U_past is None else check_finite_array("U_past", U_past, ndim=2) \
                - shift
            deviation = self.deviation_model().simulate(
                x0 - op.state if x0.shape == op.state.shape else x0, U - shift, past)
            return deviation + op.state[:, None]
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
        X = np.empty((n, K + 1))
        X[:, 0] = x0
        A_d = self.A_d
        with np.errstate(over="ignore", invalid="ignore"):   # overflow is refused below
            # forcing[:, k] = sum_j B^(j) u_{k-j}, vectorized over k before the recursion.
            forcing = np.zeros((n, K))
            for j in range(R + 1):
                forcing += self.B_blocks[j] @ padded[:, R - j:R - j + K]
            for k in range(K):
                X[:, k + 1] = A_d @ X[:, k] + forcing[:, k]
        if not np.all(np.isfinite(X)):
            first = int(np.argmin(np.all(np.isfinite(X), axis=0)))
            raise NonFiniteError(f"the simulated state overflows float64 at step {first} of "
                                 f"{K} (largest |x0| {np.max(np.abs(x0), initial=0):.3g}, "
                                 f"largest |U| {np.max(np.abs(U), initial=0):.3g}, spectral "
                                 f"radius of A_d {np.max(np.abs(self.eigs), initial=0):.3g}): "
                                 f"simulate fewer steps or smaller x0 and U")
        return X

    def deviation_model(self) -> DelayedPlant:
        """The same plant without operating point (it describes deviations ``x - x_op``)."""
        if self.operating_point is None:
            return self
        plant = DelayedPlant.__new__(DelayedPlant)
        plant._assign(self.A_d, self.B_blocks, self.dt, self.A_c_, self.B_c_, self.delay_,
                      self.continuous_note, None, self.info)
        return plant

    def with_operating_point(self, state: Any = None, input: Any = None, *,
                             rtol: float = 1e-6) -> DelayedPlant:
        """The same plant around another equilibrium: a setpoint for its controllers.

        Controllers built on a plant regulate to its operating point; an identified model's is
        the equilibrium under the data's mean input, wherever that left the plant.  This gives
        the one requested, checked as an equilibrium of the model:
        ``(I - A_d)(x - x_op) = B_d (u - u_op)`` (``x_op``, ``u_op`` the present operating
        point, or the origin).

        Parameters
        ----------
        state : array_like, shape (n,), optional
            The requested state ``x`` (physical values).  Alone, the input that holds it is
            solved for (least squares, exact when ``x`` is an equilibrium).
        input : array_like, shape (m,), optional
            The requested input ``u``.  Alone, the state follows: the equilibrium under it.
        rtol : float, default 1e-6
            Largest residual of the equilibrium equation, relative to ``|(I - A_d)(x - x_op)|``
            and ``|B_d (u - u_op)|``, accepted.

        Returns
        -------
        DelayedPlant
            The same matrices with ``operating_point=(x, u)``.

        Raises
        ------
        ParameterError
            Neither given; a state that no input holds (with fewer inputs than states most
            states are not equilibria: the message gives the nearest one), or a pair that is
            not an equilibrium.
        NoSteadyStateError
            An input alone on a plant with an eigenvalue at 1 (no unique equilibrium; a
            ``ParameterError``).
        DimensionError, NonFiniteError
            Wrong shapes, non-finite values.

        Examples
        --------
        >>> plant = DelayedPlant.from_continuous([[-1.0, 0.0], [1.0, -0.5]], [[1.0], [0.0]],
        ...                                      delay=0.7, dt=0.5)
        >>> warmer = plant.with_operating_point(input=[2.0])
        >>> warmer.operating_point.state.round(6)
        array([2., 4.])
        >>> plant.with_operating_point(state=[2.0, 4.0]).operating_point.input.round(6)
        array([2.])
        """
        n, m = self.n_states, self.n_inputs
        op = self.operating_point
        x_op, u_op = (np.zeros(n), np.zeros(m)) if op is None else (op.state, op.input)
        rtol = float(rtol)
        if not 0.0 < rtol < 1.0:
            raise ParameterError(f"rtol={rtol!r}; accepted: (0, 1)")
        if state is None and input is None:
            raise ParameterError("with_operating_point needs the requested state=, input= or "
                                 "both")
        x = None if state is None else _checked_vector("state", state, n, "states")
        u = None if input is None else _checked_vector("input", input, m, "inputs")
        gap = np.eye(n) - self.A_d
        B_d = self.B_d
        if x is None:
            x = x_op + steady_state(self.A_d, B_d @ (u - u_op), remedy=(
                f"the input {u} holds no unique state; give state= as well"))
        elif u is None:
            u = u_op + np.linalg.lstsq(B_d, gap @ (x - x_op), rcond=None)[0]
        needed, given = gap @ (x - x_op), B_d @ (u - u_op)
        residual = float(np.linalg.norm(needed - given))
        if residual > rtol * max(float(np.linalg.norm(needed)), float(np.linalg.norm(given)),
                                 np.finfo(float).tiny):
            nearest = x_op + np.linalg.lstsq(gap, given, rcond=None)[0]
            # why: fewer inputs than states hold only some states (a state alone asked for);
            # otherwise the pair given simply disagrees
            why = (f"with {m} input(s) for {n} states only some states can be held"
                   if input is None and m < n else "the pair is not consistent")
            raise ParameterError(
                f"state {np.array2string(x, precision=6)} with input "
                f"{np.array2string(u, precision=6)} is not an equilibrium of the model "
                f"(residual {residual:.3g} of (I - A_d)(x - x_op) = B_d (u - u_op)); {why}: "
                f"the input {np.array2string(u, precision=6)} holds "
                f"{np.array2string(nearest, precision=6)}")
        plant = DelayedPlant.__new__(DelayedPlant)
        plant._assign(self.A_d, self.B_blocks, self.dt, self.A_c_, self.B_c_, self.delay_,
                      self.continuous_note, OperatingPoint(x, u), self.info)
        return plant

    def shifted_by(self, state: Any, input: Any) -> DelayedPlant:
        """The same plant for data that were deviations from ``(state, input)``: that point
        added to the operating point the model fitted (the origin when it has none).

        A fit on data less a known point (a detrended file, a private release's declared
        centre) identifies the deviations; this puts the model back in physical values.
        Unlike :meth:`with_operating_point` nothing is solved: the model's own operating point
        is an equilibrium of its deviations, so the shifted one is of the physical plant.

        Parameters
        ----------
        state : array_like, shape (n,)
        input : array_like, shape (m,)

        Returns
        -------
        DelayedPlant

        Examples
        --------
        >>> plant = DelayedPlant.from_continuous([[-1.0]], [[1.0]], delay=0.2, dt=0.5)
        >>> shifted = plant.shifted_by([20.0], [1.0])
        >>> shifted.operating_point.state, shifted.operating_point.input
        (array([20.]), array([1.]))
        """
        x = _checked_vector("state", state, self.n_states, "states")
        u = _checked_vector("input", input, self.n_inputs, "inputs")
        op = self.operating_point
        if op is not None:
            x, u = x + op.state, u + op.input
        plant = DelayedPlant.__new__(DelayedPlant)
        plant._assign(self.A_d, self.B_blocks, self.dt, self.A_c_, self.B_c_, self.delay_,
                      self.continuous_note, OperatingPoint(x, u), self.info)
        return plant

    def with_info(self, info: ModelInfo | None) -> DelayedPlant:
        """The same plant with another :class:`~dmdidc.ModelInfo` (``None``: without)."""
        plant = DelayedPlant.__new__(DelayedPlant)
        plant._assign(self.A_d, self.B_blocks, self.dt, self.A_c_, self.B_c_, self.delay_,
                      self.continuous_note, self.operating_point,
                      _info(info, self.n_states, self.n_inputs))
        return plant

    @property
    def signal_info(self) -> ModelInfo:
        """:attr:`info`, or default names (``x0 ..``, ``u0 ..``) when the plant has none."""
        return self.info or ModelInfo.default(self.n_states, self.n_inputs)

    # ------------------------------------------------------------------ serialization
    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation (lists of floats) with ``format_version``."""
        data: dict[str, Any] = {"format_version": FORMAT_VERSION, "dt": self.dt,
                                "A_d": self.A_d.tolist(), "B_blocks": self.B_blocks.tolist()}
        if self.has_continuous:
            data.update(A_c=self.A_c.tolist(), B_c=self.B_c.tolist(), delay=self.delay.tolist())
        if self.continuous_note:
            data["continuous_note"] = self.continuous_note
        if self.operating_point is not None:
            data["operating_point"] = self.operating_point.to_dict()
        if self.info is not None:
            data["info"] = self.info.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DelayedPlant:
        """Inverse of :meth:`to_dict`; also reads files written by hand or by older versions.

        Accepted fields: ``dt`` and a discrete part (``A_d``, ``B_blocks``), a continuous part
        (``A_c``, ``B_c``, ``delay``, optionally ``max_delay``), or both; also
        ``format_version``, ``continuous_note``, ``operating_point`` (``{"state": [...],
        "input": [...]}``) and ``info`` (:meth:`ModelInfo.to_dict`).  Any other field is
        refused (a misspelt name must not drop a part silently), as is a ``max_delay`` the
        blocks contradict.  With only the continuous part the discrete one is derived
        (:meth:`from_continuous`).  With both they must agree (:data:`CONSISTENCY_RTOL`), except
        in files without ``format_version``
        (version 1, written before the rule): there the discrete part is re-derived from the
        continuous one, with a :class:`~dmdidc.ContinuousModelWarning` giving the difference.

        Raises
        ------
        ParameterError
            ``data`` is not a mapping, a field is missing or unknown, ``max_delay`` disagrees
            with ``B_blocks``, or the format version is unknown.
        DimensionError, NonFiniteError
            Malformed arrays.
        InconsistentModelError
            Both parts given (format version 2 or later) and they disagree.
        """
        if not isinstance(data, Mapping):
            raise ParameterError(f"model data must be a JSON object (a mapping) with the fields "
                                 f"'dt' and 'A_d', 'B_blocks' and/or 'A_c', 'B_c', 'delay'; got "
                                 f"{type(data).__name__}")
        unknown = sorted(set(data) - set(_FIELDS), key=str)
        if unknown:
            raise ParameterError(f"model data has unknown field(s) {unknown} (misspelt?); "
                                 f"accepted: {list(_FIELDS)}")
        version = data.get("format_version", 1)
        if isinstance(version, np.ndarray):
            version = version.item()
        if version not in range(1, FORMAT_VERSION + 1) or isinstance(version, bool):
            raise ParameterError(f"model data has format_version {version!r}; this version of "
                                 f"dmdidc reads 1 to {FORMAT_VERSION}")
        if "dt" not in data:
            raise ParameterError("model data is missing the field 'dt' (sampling period, s)")
        missing_continuous = [k for k in ("A_c", "B_c", "delay") if k not in data]
        missing_discrete = [k for k in ("A_d", "B_blocks") if k not in data]
        continuous, discrete = not missing_continuous, not missing_discrete
        if len(missing_continuous) in (1, 2):
            raise ParameterError(f"model data has a partial continuous model: missing the "
                                 f"field(s) {missing_continuous}")
        if not discrete and not continuous:
            raise ParameterError(f"model data is missing the field(s) {missing_discrete} (or a "
                                 f"continuous model 'A_c', 'B_c', 'delay' to derive them from)")
        max_delay = data.get("max_delay")
        if max_delay is not None:
            max_delay = check_integer("max_delay", max_delay, minimum=0)
        if discrete:
            A_d = check_finite_array("A_d", data["A_d"], ndim=2)
            B_blocks = check_finite_array("B_blocks", data["B_blocks"])
            blocks_max_delay = B_blocks.shape[0] - 1 if B_blocks.ndim == 3 else 0
            if max_delay is not None and max_delay != blocks_max_delay:
                raise ParameterError(f"model data has max_delay {max_delay} but B_blocks has "
                                     f"{blocks_max_delay + 1} block(s), so max_delay "
                                     f"{blocks_max_delay}; drop max_delay or make them agree")
            max_delay = blocks_max_delay
        operating = data.get("operating_point")
        info = None if data.get("info") is None else ModelInfo.from_dict(data["info"])
        if continuous and (not discrete or version == 1):
            derived = cls.from_continuous(data["A_c"], data["B_c"], data["delay"], data["dt"],
                                          max_delay=max_delay, operating_point=operating,
                                          info=info)
            if discrete:
                gaps = _consistency_gaps(A_d, B_blocks, derived)
                if max(gaps.values()) > CONSISTENCY_RTOL:
                    warn_model(f"model data without format_version (version 1): its discrete "
                               f"part differs from the discretization of its continuous model "
                               f"(relative difference A_d {gaps['A_d']:.2g}, B_blocks "
                               f"{gaps['B_blocks']:.2g}); the discrete part was re-derived from "
                               f"A_c, B_c and delay. Save the model again to store the "
                               f"consistent version {FORMAT_VERSION}")
            return derived
        return cls(A_d, B_blocks, data["dt"], A_c=data.get("A_c"),
                   B_c=data.get("B_c"), delay=data.get("delay"),
                   continuous_note=data.get("continuous_note"), operating_point=operating,
                   info=info)

    def save(self, path: str | Path) -> Path:
        """Write the plant as ``.json`` or ``.npz`` (chosen by the suffix).

        Raises
        ------
        ParameterError
            Another suffix.
        """
        path = Path(path)
        if path.suffix == ".npz":
            data = self.to_dict()
            operating = data.pop("operating_point", None)
            info = data.pop("info", None)
            arrays = {k: np.asarray(v) for k, v in data.items()}
            if info is not None:               # names and records: one JSON string
                arrays["info"] = np.asarray(json.dumps(info))
            if operating is not None:          # npz holds arrays only: one per field
                arrays.update({f"operating_point.{k}": np.asarray(v)
                               for k, v in operating.items()})
            np.savez(path, **arrays)
        elif path.suffix == ".json":
            path.write_text(json.dumps(self.to_dict(), indent=2))
        else:
            raise ParameterError(f"path must end in .json or .npz; got {str(path)!r}")
        return path

    @classmethod
    def load(cls, path: str | Path) -> DelayedPlant:
        """Read a plant written by :meth:`save` (or by hand: see :meth:`from_dict`).

        Raises
        ------
        ParameterError
            The file cannot be read, has another suffix, or is not a model (see
            :meth:`from_dict` for the other errors).
        """
        path = Path(path)
        try:
            if path.suffix == ".npz":
                with np.load(path, allow_pickle=False) as archive:
                    data = {k: (archive[k].item() if archive[k].ndim == 0 else archive[k])
                            for k in archive.files}
                operating = {k.split(".", 1)[1]: data.pop(k) for k in list(data)
                             if k.startswith("operating_point.")}
                if operating:
                    data["operating_point"] = operating
                if "info" in data:
                    data["info"] = json.loads(str(data["info"]))
            elif path.suffix == ".json":
                data = json.loads(path.read_text())
            else:
                raise ParameterError(f"path must end in .json or .npz; got {str(path)!r}")
        except (OSError, ValueError) as exc:
            if isinstance(exc, ParameterError):
                raise
            raise ParameterError(f"cannot read a model from {str(path)!r}: {exc}") from exc
        return cls.from_dict(data)


def steady_state(A_d: np.ndarray, forcing: np.ndarray, *, remedy: str | None = None
                 ) -> np.ndarray:
    """``x_ss = (I - A_d)^-1 f``: where ``x_{k+1} = A_d x_k + f`` rests under a constant ``f``.

    The steady state of a delayed plant under a constant input ``u`` and offset ``c`` is this
    with ``f = B_d u + c`` (``B_d = sum_j B^(j)``: once the input has been constant for the
    whole delay every block sees it); :meth:`DelayedPlant.steady_state` forms ``f``.  Every
    steady state of the toolbox (an operating point's state, an identified model's
    equilibrium, a controller's offset on a plant) is solved here, so an integrator is
    decided once, with :data:`INTEGRATOR_RCOND`.

    Parameters
    ----------
    A_d : ndarray, shape (n, n)
        The state matrix (finite: callers pass a checked model's).
    forcing : ndarray, shape (n,)
        The constant forcing ``f``.
    remedy : str, optional
        What the caller's user can do instead, appended to the error (a generic advice
        otherwise).

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    NoSteadyStateError
        The steady state moves by at least ``1 / INTEGRATOR_RCOND`` times a relative rounding
        of ``A_d`` (:data:`INTEGRATOR_RCOND`; an eigenvalue of ``A_d`` at 1: an integrator),
        whatever the units of the states; the message names the eigenvalue nearest 1.  A
        ``ParameterError``.

    Examples
    --------
    >>> steady_state(np.array([[0.5, 0.0], [0.25, 0.5]]), np.array([1.0, 0.0]))
    array([2., 1.])
    """
    n = A_d.shape[0]
    system = np.eye(n) - A_d
    condition = _steady_state_condition(system, A_d) if n else 0.0
    if condition * INTEGRATOR_RCOND >= 1.0:
        eigenvalues = np.linalg.eigvals(A_d)
        nearest = eigenvalues[np.argmin(np.abs(eigenvalues - 1.0))]
        value = (f"{nearest.real:.12g}{nearest.imag:+.3g}j" if nearest.imag
                 else f"{nearest.real:.12g}")
        raise NoSteadyStateError(
            f"no steady state: A_d has an eigenvalue at 1, an integrator ({value}, "
            f"{abs(nearest - 1.0):.3g} from 1; a rounding of A_d's entries moves the steady "
            f"state by {condition:.3g} times as much, at least 1 / INTEGRATOR_RCOND = "
            f"{1.0 / INTEGRATOR_RCOND:g}), so a constant input makes the "
            f"state drift instead of settling; "
            + (remedy or "give the state of the operating point instead of solving for it, "
               "or, if the plant should not integrate, look for a drift in the data that the "
               "fit took for an integrator (detrend='linear')"))
    return np.linalg.solve(system, forcing)


def _steady_state_condition(system: np.ndarray, A_d: np.ndarray) -> float:
    """``rho(|system^-1| |A_d|)``: how much a relative rounding of ``A_d``'s entries moves the
    solution of ``system x = f`` (``system = I - A_d``), measured in the states' best units
    (Bauer's optimally scaled condition); inf when ``system`` is singular.  A diagonal
    similarity ``D A_d D^-1`` turns the product into ``D (...) D^-1``, whose spectral radius
    is the same, so the states' units do not change it."""
    with np.errstate(all="ignore"):
        try:
            inverse = np.linalg.inv(system)
        except np.linalg.LinAlgError:
            return np.inf
        if not np.all(np.isfinite(inverse)):
            return np.inf
        # a nonnegative matrix: its spectral radius is its largest eigenvalue's modulus
        radius = np.max(np.abs(np.linalg.eigvals(np.abs(inverse) @ np.abs(A_d))))
    return float(radius) if np.isfinite(radius) else np.inf


def _relative_gap(given: np.ndarray, exact: np.ndarray) -> float:
    scale = max(np.linalg.norm(given), np.linalg.norm(exact), np.finfo(float).tiny)
    return float(np.linalg.norm(given - exact) / scale)


def _consistency_gaps(A_d: np.ndarray, B_blocks: np.ndarray, exact: DelayedPlant
                      ) -> dict[str, float]:
    if B_blocks.ndim == 2:
        B_blocks = B_blocks[None]
    if A_d.shape != exact.A_d.shape or B_blocks.shape != exact.B_blocks.shape:
        raise DimensionError(f"A_d {A_d.shape} and B_blocks {B_blocks.shape} do not have the "
                             f"shapes of the continuous model's discretization "
                             f"{exact.A_d.shape} and {exact.B_blocks.shape}")
    return {"A_d": _relative_gap(A_d, exact.A_d),
            "B_blocks": _relative_gap(B_blocks, exact.B_blocks)}


def _check_consistent(A_d: np.ndarray, B_blocks: np.ndarray, A_c: np.ndarray, B_c: np.ndarray,
                      delay: np.ndarray, dt: float) -> None:
    """Raise :class:`InconsistentModelError` unless ``(A_d, B_blocks)`` discretize the rest."""
    exact = DelayedPlant.from_continuous(A_c, B_c, delay, dt, max_delay=B_blocks.shape[0] - 1)
    gaps = _consistency_gaps(A_d, B_blocks, exact)
    advice = ("The discrete part of a plant must be the exact discretization of its continuous "
              "part: build it with DelayedPlant.from_continuous(A_c, B_c, delay, dt), or give "
              "only A_d and B_blocks (a discrete-only model) or only A_c, B_c and delay (in a "
              "model file)")
    if gaps["A_d"] > CONSISTENCY_RTOL:
        worst = np.unravel_index(np.argmax(np.abs(A_d - exact.A_d)), A_d.shape)
        raise InconsistentModelError(
            f"A_d does not equal expm(A_c T) with T = {dt}: relative difference "
            f"{gaps['A_d']:.3g} (tolerance {CONSISTENCY_RTOL:g}), largest at entry "
            f"{tuple(int(i) for i in worst)}: {A_d[worst]:.6g} vs {exact.A_d[worst]:.6g}. "
            + advice)
    if gaps["B_blocks"] > CONSISTENCY_RTOL:
        j, _, i = np.unravel_index(np.argmax(np.abs(B_blocks - exact.B_blocks)), B_blocks.shape)
        raise InconsistentModelError(
            f"B_blocks are not the discretization of B_c with delay {delay.tolist()} s at "
            f"T = {dt}: relative difference {gaps['B_blocks']:.3g} (tolerance "
            f"{CONSISTENCY_RTOL:g}), largest in block B^({int(j)}), channel {int(i)} "
            f"(active blocks of the continuous model: "
            f"{np.flatnonzero(exact.active_blocks[:, i]).tolist()}). " + advice)
    # Which blocks act is a fact, not a value with a tolerance: a rounding-level entry where the
    # discretization has an exact zero would move the whole delay read from the blocks.
    given = np.any(B_blocks != 0, axis=1)
    for i in np.flatnonzero(np.any(given != exact.active_blocks, axis=0)):
        ours, theirs = (np.flatnonzero(a[:, i]).tolist() for a in (given, exact.active_blocks))
        raise InconsistentModelError(
            f"channel {int(i)} acts through blocks {ours} of B_blocks (whole delay "
            f"{ours[0] if ours else 0}) but through {theirs} in the discretization of its delay "
            f"{delay[i]:g} s (whole delay {theirs[0] if theirs else 0}); the blocks where the "
            f"delay gives none must be exactly zero. " + advice)


def _checked_vector(name: str, value: Any, size: int, what: str) -> np.ndarray:
    vector = check_finite_array(name, value, ndim=1)
    if vector.shape != (size,):
        raise DimensionError(f"{name} has shape {vector.shape}; expected ({size},), one per "
                             f"{what[:-1]} of the plant's {size} {what}")
    return vector


def _info(info: Any, n: int, m: int) -> ModelInfo | None:
    if info is None:
        return None
    if not isinstance(info, ModelInfo):
        raise ParameterError(f"info must be a ModelInfo or None; got {type(info).__name__}")
    return info.check_sizes(n, m)


def as_plant(model: Any, name: str = "model") -> DelayedPlant:
    """Return the :class:`DelayedPlant` of a plant, or of a fitted estimator (``.model_``).

    Parameters
    ----------
    model : DelayedPlant or fitted estimator
    name : str, default "model"
        The argument's name, for the error message.

    Raises
    ------
    ParameterError
        ``model`` is neither (a :class:`~dmdidc.NotFittedError` from an unfitted estimator
        propagates).
    """
    if isinstance(model, DelayedPlant):
        return model
    if hasattr(type(model), "model_") or hasattr(model, "model_"):
        fitted = model.model_          # an unfitted DMDidc raises NotFittedError here
        if isinstance(fitted, DelayedPlant):
            return fitted
    raise ParameterError(f"{name} must be a DelayedPlant or a fitted DMDidc estimator; got "
                         f"{type(model).__name__}")
