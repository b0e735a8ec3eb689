"""Controllers by name: the one list of names (used by the CLI and the analysis) and a builder."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from controllers.feedback import (
    _TIME_TOL,
    FractionalDelayController,
    NaiveStateFeedback,
    PredictiveController,
    reduced_input_matrix,
    whole_delay_input_matrix,
)
from controllers.gains import default_state_weight, lqr_gain
from controllers.names import CONTROLLER_NAMES, LINEAR_CONTROLLER_NAMES
from dmdidc.model import as_plant

__all__ = ["CONTROLLER_NAMES", "LINEAR_CONTROLLER_NAMES", "make_controller"]

#: Keyword options each controller accepts (anything else is refused, not ignored); Q and R
#: weigh the default LQR design of K.
_OPTIONS = {"fractional": {"reference_delay", "Q", "R"}, "truncated": {"Q", "R"},
            "exact": {"Q", "R"}, "naive": {"Q", "R"}}


def _default_gain(name: str, plant: Any, options: dict[str, Any],
                  weights: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
    """The LQR gain on the pair whose loop the controller realizes on its model.

    Returns the gain and the controller's options (the fractional controller's reference
    delay is set here when the channels' delay fractions differ).  A gain from ``(A_d, B_d)``
    guarantees nothing for those loops (the README plant with delays 2.0 and 2.9 s at T = 2 s:
    spectral radius 1.18 on its own model).  Unstable on their own model, of 300 random plants
    per family (``benchmarks/bench_default_gains.py``): the fractional controller with unequal
    fractions 5 -> 0, exact and truncated with unequal whole delays 37 -> 0; median closed-loop
    cost ratio 0.99-1.00 where both designs are stable.
    """
    if name == "fractional" and plant.has_continuous:
        reference = options.get("reference_delay")
        if reference is None and np.ptp(plant.delay_fraction) > _TIME_TOL:
            reference = float(np.max(plant.delay))
            options = {**options, "reference_delay": reference}
        if reference is not None:
            return lqr_gain(plant.A_d, reduced_input_matrix(plant, reference),
                            **weights), options
    if name in ("truncated", "exact") and plant.n_inputs and np.ptp(plant.delay_steps) > 0:
        return lqr_gain(plant.A_d, whole_delay_input_matrix(plant), **weights), options
    return lqr_gain(plant, **weights), options


def make_controller(name: str, model: Any, K: Any = None, **options: Any) -> Any:
    """Build the controller ``name`` on ``model``.

    Parameters
    ----------
    name : {"fractional", "truncated", "exact", "naive", "mpc"}
        :class:`~controllers.FractionalDelayController`, :class:`~controllers.
        PredictiveController` with ``prediction="truncated"`` (eq. 9.13) or ``"exact"``,
        :class:`~controllers.NaiveStateFeedback`, :class:`~controllers.DelayedMPC`.
    model : DelayedPlant or fitted estimator
        The controller's model of the plant.
    K : array_like, shape (m, n), optional
        Gain of the linear controllers; default :func:`~controllers.lqr_gain` (weights ``Q``,
        ``R``; ``Q`` of a model that carries ``C`` :func:`~controllers.gains.output_weight`)
        on the pair whose loop the controller realizes on its model, so that the loop
        is stable there: ``(A_d, B_d)``, except ``(A_d, reduced_input_matrix(model, r))`` for
        ``"fractional"`` with a ``reference_delay`` ``r`` -- which is set to the largest delay
        when the channels' delay fractions differ, where ``(A_d, B_d)`` guarantees nothing --
        and ``(A_d, whole_delay_input_matrix(model))`` for ``"truncated"`` and ``"exact"``
        when the channels' whole delays differ.  Refused for ``"mpc"``.
    **options
        ``Q``, ``R`` (the default design's weights, not with ``K``) for the linear
        controllers; ``reference_delay`` for ``"fractional"``; the keyword arguments of
        :class:`~controllers.DelayedMPC` (``horizon`` required) for ``"mpc"``.

    Returns
    -------
    controller
        An object with ``reset()`` and ``__call__(x) -> u``.

    Raises
    ------
    ParameterError
        An unknown name, an option the controller does not take, or ``Q``/``R`` with ``K``.

    Warns
    -----
    UnstableLoopWarning
        A linear controller whose loop on its own model is not stable (a gain ``K`` of your
        own, or the ``"truncated"``, ``"exact"`` and ``"naive"`` baselines on fractional
        delays): see the controllers.

    Examples
    --------
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                      delay=2.5, dt=2.0)
    >>> [type(make_controller(name, plant, horizon=5)).__name__ if name == "mpc"
    ...  else type(make_controller(name, plant)).__name__ for name in CONTROLLER_NAMES]
    ['FractionalDelayController', 'PredictiveController', 'PredictiveController', \
'NaiveStateFeedback', 'DelayedMPC']
    """
    if name not in CONTROLLER_NAMES:
        raise ParameterError(f"controller must be one of {CONTROLLER_NAMES}; got {name!r}")
    if name == "mpc":
        if K is not None:
            raise ParameterError("the MPC controller takes no gain K (its terminal weight comes "
                                 "from the Riccati equation); pass Q, R, P instead")
        from controllers.mpc import DelayedMPC  # the QP machinery (scipy.sparse): only for an MPC

        if "horizon" not in options:
            raise ParameterError("the MPC controller needs horizon=N (the number of moves)")
        accepted = set(inspect.signature(DelayedMPC).parameters) - {"model"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise ParameterError(f"the 'mpc' controller takes no option(s) {unknown}; it "
                                 f"accepts {sorted(accepted)}")

        return DelayedMPC(model, **options)
    unknown = sorted(set(options) - _OPTIONS[name])
    if unknown:
        raise ParameterError(f"the {name!r} controller takes no option(s) {unknown}; it accepts "
                             f"{sorted(_OPTIONS[name]) or 'none'}")
    plant = as_plant(model)
    weights = {key: options.pop(key) for key in ("Q", "R") if key in options}
    outputs = default_state_weight(model)      # an output model's: weigh its outputs
    if K is None and "Q" not in weights and outputs is not None:
        weights["Q"] = outputs
    if K is None:
        K, options = _default_gain(name, plant, options, weights)
    elif weights:
        raise ParameterError(f"Q and R weigh the default LQR design of K; got K and "
                             f"{sorted(weights)}: give one or the other")
    # the model itself, not its plant: a controller of an output model records its C
    if name == "fractional":
        return FractionalDelayController(model, K, **options)
    if name == "naive":
        return NaiveStateFeedback(model, K)
    return PredictiveController(model, K, prediction=name)
