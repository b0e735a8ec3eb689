"""The outputs ``y = C x + c`` of a model that carries its measurement matrix (an output model).

An :class:`~dmdidc.OutputDMDidc` keeps ``C`` in its own state basis (canonical variates) and the
outputs' constant level ``c`` (``offset_``); the observer subtracts the level from every
measurement and the MPC bounds the outputs through it.  Both refuse what they cannot represent
the same way: a feedthrough ``D != 0`` (the output would depend on the command being computed,
an algebraic loop) and a model whose outputs' level was removed by ``detrend`` and not kept.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_finite_array

__all__ = ["measurement_matrix", "model_mismatch", "model_outputs", "output_level",
           "refuse_feedthrough", "refuse_model_basis"]


def measurement_matrix(model: Any, C: Any, n: int, *, missing: str) -> np.ndarray:
    """The measurement matrix ``C`` (l, n) of ``y = C x``: the one given, else the model's own.

    Parameters
    ----------
    model : object
        The model (its ``C`` attribute, when it carries one).
    C : array_like of shape (l, n) or None
    n : int
        The model's number of states.
    missing : str
        The message when neither gives one.

    Raises
    ------
    ParameterError
        Neither ``C`` nor the model gives one; or a ``C`` other than the one the model carries
        (an identified model's states are its own basis: a ``C`` of the plant's states reads
        the wrong combination of them; in a test loop, cost 2.75e8 against 2.83).
    DimensionError, NonFiniteError
        ``C`` not of shape (l, n), or not finite.

    Examples
    --------
    >>> class Model:
    ...     C = np.array([[1.0, 0.0]])
    >>> measurement_matrix(Model(), None, 2, missing="no C")
    array([[1., 0.]])
    """
    own = getattr(model, "C", None)
    if C is None and own is None:
        raise ParameterError(missing)
    C = check_finite_array("C", own if C is None else C, ndim=2)
    if own is not None:
        own = np.asarray(own, dtype=float)
        scale = max(float(np.max(np.abs(own), initial=0.0)), 1e-300)
        if C.shape != own.shape or not np.allclose(C, own, rtol=1e-9, atol=1e-12 * scale):
            found = (f"shape {C.shape} against {own.shape}" if C.shape != own.shape else
                     f"max |C - model.C| = {float(np.max(np.abs(C - own))):.3g}")
            raise ParameterError(
                f"C differs from the measurement matrix the model ({type(model).__name__}) "
                f"carries ({found}): the model's states are in its own basis (an "
                f"OutputDMDidc's are canonical variates, not the plant's states), and C must "
                f"be in that basis; omit C to use model.C, or, for other sensors, pass "
                f"est.plant() (a DelayedPlant, without a C of its own) with their C in the "
                f"model's basis")
    if C.shape[1] != n:
        raise DimensionError(f"C has shape {C.shape}; expected (l, {n})")
    return C


def refuse_feedthrough(model: Any) -> None:
    """Refuse a model with feedthrough ``D != 0`` (its ``D`` attribute, when it has one).

    Raises
    ------
    ParameterError
        The output depends on the input of its own sample.

    Examples
    --------
    >>> class Model:
    ...     D = np.zeros((1, 2))
    >>> refuse_feedthrough(Model())                 # no feedthrough: nothing to refuse
    """
    D = getattr(model, "D", None)
    if D is not None and np.any(np.asarray(D) != 0):
        raise ParameterError("the model has feedthrough D != 0: the output depends on the "
                             "command being computed (an algebraic loop); fit with "
                             "feedthrough=False for control")


def output_level(model: Any, offset: Any, rows: int, *, name: str = "offset") -> np.ndarray:
    """The outputs' constant level ``c`` of ``y = C x + c``: ``offset`` when given, else the
    model's fitted ``offset_`` (zero for a model without one).

    Parameters
    ----------
    model : object
        The model (its ``detrend`` and ``offset_`` attributes, when it has them).
    offset : float, array_like of shape (rows,), or None
        The level given by the caller (a scalar: the same for every output; 0 for outputs
        ``y = C x``).
    rows : int
        Number of outputs ``l``.
    name : str, default "offset"
        The argument's name, for the messages.

    Returns
    -------
    ndarray, shape (rows,)

    Raises
    ------
    ParameterError
        ``offset`` is None for a model fitted with ``detrend="constant"`` or ``"linear"``:
        each experiment's mean (or line) was removed and not kept, so its ``offset_`` is not
        the outputs' level.
    DimensionError, NonFiniteError
        ``offset`` neither a scalar nor of shape ``(rows,)``, or not finite.

    Examples
    --------
    >>> class Model:
    ...     offset_ = np.array([2.0])
    >>> output_level(Model(), None, 1)
    array([2.])
    """
    detrend = getattr(model, "detrend", False)
    if offset is None and detrend in ("constant", "linear"):
        refit = ("refit with offset=True (the default) and detrend=False, which estimates the "
                 "offset" if hasattr(model, "offset") else
                 "refit without detrend (the model then keeps the data's operating point)")
        raise ParameterError(
            f"the model was fitted with detrend={detrend!r}: each experiment's "
            f"{'mean' if detrend == 'constant' else 'line'} was "
            f"removed from its outputs and inputs and not kept, so its offset_ is not the "
            f"outputs' operating point; pass {name}= (the outputs' level, with the inputs as "
            f"deviations from theirs), or {refit}")
    offset = getattr(model, "offset_", None) if offset is None else offset
    if offset is None:
        return np.zeros(rows)
    # a scalar is the level of every output (the refusal of C= without a level asks for 0)
    level = check_finite_array(name, offset)
    if level.ndim == 0:
        return np.full(rows, float(level))
    if level.shape != (rows,):
        raise DimensionError(f"{name} has shape {level.shape}; expected a scalar or "
                             f"({rows},), one per measured signal")
    return level


def model_outputs(model: Any) -> np.ndarray | None:
    """The measurement matrix ``C`` a model carries (an output model, whose states are its own
    basis: an :class:`~dmdidc.OutputDMDidc`'s canonical variates), read-only; ``None`` for a
    model whose states are the plant's (a :class:`~dmdidc.DelayedPlant`, a ``DMDidc``).

    Examples
    --------
    >>> class Model:
    ...     C = [[2.0, 0.0]]
    >>> model_outputs(Model()).tolist(), model_outputs(object())
    ([[2.0, 0.0]], None)
    """
    C = getattr(model, "C", None)
    if C is None:
        return None
    C = np.array(C, dtype=float)
    C.flags.writeable = False
    return C


def model_mismatch(own: Any, plant: Any, other: str = "the plant's") -> str | None:
    """How the model ``own`` differs from ``plant`` (two :class:`~dmdidc.DelayedPlant`), or
    ``None`` when they are one model to rounding: the same ``dt``, sizes, ``A_d`` and input
    blocks (relative 1e-9; a longer ``max_delay`` adds zero blocks only).  ``other`` names
    ``plant`` in the answer.

    Examples
    --------
    >>> from dmdidc import DelayedPlant
    >>> a = DelayedPlant.from_continuous([[-1.0]], [[1.0]], 0.3, 1.0)
    >>> model_mismatch(a, a) is None
    True
    >>> model_mismatch(a, DelayedPlant.from_continuous([[-1.0]], [[1.0]], 0.3, 0.5))
    'the sampling period T = 1 s against T = 0.5 s'
    """
    if not np.isclose(own.dt, plant.dt, rtol=1e-9, atol=0.0):
        return f"the sampling period T = {own.dt:g} s against T = {plant.dt:g} s"
    if (own.n_states, own.n_inputs) != (plant.n_states, plant.n_inputs):
        return (f"{own.n_states} states and {own.n_inputs} inputs against {plant.n_states} "
                f"and {plant.n_inputs}")
    blocks = [own.B_blocks, plant.B_blocks]
    depth = max(b.shape[0] for b in blocks)     # a longer max_delay adds zero blocks only
    blocks = [np.concatenate([b, np.zeros((depth - b.shape[0], *b.shape[1:]))]) for b in blocks]
    for what, a, b in (("A_d", own.A_d, plant.A_d), ("B_blocks", *blocks)):
        scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-300)
        if not np.allclose(a, b, rtol=1e-9, atol=1e-9 * scale):
            return f"max |{what} - {other} {what}| = {float(np.max(np.abs(a - b))):.3g}"
    return None


def refuse_model_basis(plant: Any, controller: Any, *, states: bool = True) -> None:
    """Refuse to feed a plant's states (or, ``states=False``, its outputs) to a state
    controller designed on an output model.

    Such a controller (its ``output_matrix`` is the model's ``C``) acts on states in the
    model's own basis (an :class:`~dmdidc.OutputDMDidc`'s canonical variates); the plant's
    states mean something else (a test loop: cost 4.8e72, true-loop spectral radius 2.29,
    silently).  Passes when ``plant`` is the controller's own model and its states are fed (a
    nominal check), and for a controller without ``output_matrix`` (an
    :class:`~controllers.OutputFeedback` estimates the model's states from the outputs).

    Raises
    ------
    ParameterError
        The message names the remedy: an :class:`~controllers.OutputFeedback` with a
        :class:`~controllers.DelayedKalmanObserver` of the same model.
    """
    C = getattr(controller, "output_matrix", None)
    if C is None:
        return
    own = getattr(controller, "plant", None)
    if states and own is not None and model_mismatch(own, plant) is None:
        return
    name = type(controller).__name__
    raise ParameterError(
        f"the controller ({name}) is designed on an output model (y = C x with C of shape "
        f"{C.shape}): its states are that model's own basis (an OutputDMDidc's canonical "
        f"variates), not the plant's {'states' if states else 'outputs'}, so it cannot act "
        f"on them; estimate its states "
        f"from the outputs: OutputFeedback(controller, DelayedKalmanObserver(model)) with "
        f"the same model, simulated with measurement_matrix=C (the plant's sensors)")
