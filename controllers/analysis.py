"""Exact closed-loop stability of linear delay-compensating controllers, without simulation.

The lifted loop and its spectral radius (:mod:`controllers.lifted`, re-exported here), and the
study of the radius against errors of the delay estimate.

References
----------
Dissertation sec. 9.5, Figure 9.1 (truncated versus fractional controller at r = 1T, 1.25T, 1.5T).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError, UnstableLoopWarning
from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import check_allocation, check_finite_array, check_positive
from controllers.factory import LINEAR_CONTROLLER_NAMES, make_controller
from controllers.gains import lqr_gain
from controllers.lifted import closed_loop_matrix, feedback_gains, lifted_loop, spectral_radius
from dmdidc.model import DelayedPlant

__all__ = [
    "closed_loop_matrix",
    "feedback_gains",
    "lifted_loop",
    "spectral_radius",
    "DelayMismatchStudy",
    "delay_mismatch_study",
    "plot_delay_mismatch",
]


@dataclass(frozen=True)
class DelayMismatchStudy:
    """Spectral radius of each controller versus the error of the delay estimate.

    Attributes
    ----------
    offsets : ndarray, shape (P,)
        Delay estimate error ``r_hat - r`` in seconds.
    spectral_radius : dict of str to ndarray, shape (P,)
        One curve per controller name: :func:`spectral_radius` of the float64 lifted loop,
        whose small values near a zero offset can be the rounding of its nilpotent part
        (an upper estimate; see its Notes: 0.51 for an exact 5e-4 at a delay of 50 periods).
    true_delay : ndarray, shape (m,)
    dt : float
    """

    offsets: np.ndarray
    spectral_radius: dict[str, np.ndarray] = field(repr=False)
    true_delay: np.ndarray
    dt: float

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON representation."""
        return {"offsets": self.offsets.tolist(), "true_delay": self.true_delay.tolist(),
                "dt": self.dt,
                "spectral_radius": {k: v.tolist() for k, v in self.spectral_radius.items()}}


def delay_mismatch_study(A_c: Any, B_c: Any, dt: float, true_delay: Any, K: Any = None,
                         offsets: Any = None, *,
                         controllers: Sequence[str] = ("truncated", "exact", "fractional")
                         ) -> DelayMismatchStudy:
    """Exact closed-loop spectral radius when the controller's delay estimate is wrong.

    For each offset ``d``, the controllers are built on the exact model with delay
    ``true_delay + d`` (same ``A_c``, ``B_c``) and closed around the plant with ``true_delay``.

    Parameters
    ----------
    A_c : array_like, shape (n, n)
    B_c : array_like, shape (n, m)
    dt : float
        Sampling period ``T``, seconds.
    true_delay : float or array_like, shape (m,)
        True delay(s), seconds.
    K : array_like, shape (m, n), optional
        Gain used by every controller; default ``lqr_gain`` (Q = I, R = I) on the true
        ``(A_d, B_d)``.
    offsets : array_like, shape (P,), optional
        Delay estimate errors in seconds (added to every channel); default
        ``np.linspace(-0.5, 0.5, 41) * dt``.  Estimates must stay ``>= 0``.
    controllers : sequence of {"truncated", "exact", "fractional", "naive"}
        Linear controllers (:data:`controllers.LINEAR_CONTROLLER_NAMES`) to compare.

    Returns
    -------
    DelayMismatchStudy

    Examples
    --------
    >>> study = delay_mismatch_study([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 2.0, 2.5,
    ...                              offsets=[-0.2, 0.0, 0.2])
    >>> bool(study.spectral_radius["fractional"][1] < 1)
    True
    """
    dt = check_positive("dt", dt)
    true_plant = DelayedPlant.from_continuous(A_c, B_c, true_delay, dt)
    if true_plant.n_inputs == 0:
        raise ParameterError(f"B_c has shape {true_plant.B_c.shape}: no input, no delay to "
                             f"mismatch; give at least one input column")
    # every offset's lifted loop has at least the true plant's size: refuse it before building
    size = true_plant.n_states + true_plant.n_inputs * true_plant.max_delay
    check_allocation(f"true_delay = {np.asarray(true_delay).tolist()} s at dt = {dt} s "
                     f"({true_plant.max_delay} periods)", (size, size),
                     accepted="a delay of fewer periods (the lifted loop holds every input "
                              "still in flight)")
    if K is None:
        K = lqr_gain(true_plant)
    offsets = np.linspace(-0.5, 0.5, 41) * dt if offsets is None else \
        check_finite_array("offsets", offsets, ndim=1)
    names = tuple(controllers)
    for name in names:
        if name not in LINEAR_CONTROLLER_NAMES:
            raise ParameterError(f"controllers must be taken from {LINEAR_CONTROLLER_NAMES}; "
                                 f"got {name!r}")
    if np.min(true_plant.delay) + np.min(offsets, initial=0.0) < 0:
        raise ParameterError(f"offsets must keep every delay estimate >= 0; smallest true delay "
                             f"{float(np.min(true_plant.delay))} s, smallest offset "
                             f"{float(np.min(offsets))} s")
    radii = {name: np.empty(offsets.shape[0]) for name in names}
    with warnings.catch_warnings():
        # loops unstable on their own (mismatched) model are what the study measures and reports
        warnings.simplefilter("ignore", UnstableLoopWarning)
        for index, offset in enumerate(offsets):
            model = DelayedPlant.from_continuous(A_c, B_c, true_plant.delay + offset, dt)
            for name in names:
                radii[name][index] = spectral_radius(true_plant, make_controller(name, model, K))
    for value in radii.values():
        value.flags.writeable = False
    offsets = np.array(offsets, dtype=float)
    offsets.flags.writeable = False
    return DelayMismatchStudy(offsets, radii, np.array(true_plant.delay), dt)


def plot_delay_mismatch(study: DelayMismatchStudy, path: str | Path, *,
                        title: str | None = None) -> Path:
    """Write a PNG of spectral radius versus delay-estimate error (matplotlib OO API, Agg).

    Parameters
    ----------
    study : DelayMismatchStudy
    path : str or Path
        Output file (``.png``); parent directories are created.
    title : str, optional

    Returns
    -------
    Path
    """
    fig = new_figure((6.0, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    for name, radius in study.spectral_radius.items():
        ax.plot(study.offsets / study.dt, radius, marker=".", label=name)
    ax.axhline(1.0, color="k", linewidth=0.8, linestyle="--", label="stability limit")
    ax.set_xlabel("delay estimate error (r_hat - r) / T")
    ax.set_ylabel("closed-loop spectral radius")
    delays = ", ".join(f"{d / study.dt:g}" for d in np.unique(study.true_delay))
    ax.set_title(title or f"Delay mismatch, true delay = {delays} T")
    ax.legend()
    ax.grid(True, alpha=0.3)
    return save_figure(fig, path)
