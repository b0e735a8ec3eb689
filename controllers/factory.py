"""Controllers by name: the one list of names (used by the CLI and the analysis) and a builder."""

from __future__ import annotations

import inspect
from typing import Any

from _toolbox.errors import ParameterError
from controllers.feedback import FractionalDelayController, NaiveStateFeedback, PredictiveController
from controllers.gains import lqr_gain
from controllers.names import CONTROLLER_NAMES, LINEAR_CONTROLLER_NAMES
from dmdidc.model import as_plant

__all__ = ["CONTROLLER_NAMES", "LINEAR_CONTROLLER_NAMES", "make_controller"]

#: Keyword options each controller accepts (anything else is refused, not ignored).
_OPTIONS = {"fractional": {"reference_delay"}, "truncated": set(), "exact": set(),
            "naive": set()}


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
        Gain of the linear controllers; default :func:`~controllers.lqr_gain` on the model's
        delay-free pair.  Refused for ``"mpc"``.
    **options
        ``reference_delay`` for ``"fractional"``; the keyword arguments of
        :class:`~controllers.DelayedMPC` (``horizon`` required) for ``"mpc"``.

    Returns
    -------
    controller
        An object with ``reset()`` and ``__call__(x) -> u``.

    Raises
    ------
    ParameterError
        An unknown name, or an option the controller does not take.

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
    K = lqr_gain(plant) if K is None else K
    if name == "fractional":
        return FractionalDelayController(plant, K, **options)
    if name == "naive":
        return NaiveStateFeedback(plant, K)
    return PredictiveController(plant, K, prediction=name)
