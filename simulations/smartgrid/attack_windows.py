"""Attack (a) on the windows a household shares, plain and privatized (issue 10, item 4).

A household shares :class:`dmdidc.SufficientStatistics` in the coordinates of
:mod:`~simulations.smartgrid.private_identification` (states minus a public operating point,
per-unit commands, the aggregator's excitation as instrument, bounds declared), plain or
privatized by :func:`~simulations.smartgrid.private_identification.privatize_household` with
a guarantee composed by the accountant.  Here it releases them per window of ``K`` periods
(disjoint windows inside a day); the adversary intercepts one window, knows the commands and,
at best, the aggregator's fleet model, and searches the states whose regression blocks
(:meth:`~simulations.smartgrid.reconstruction.GramBlocks.from_statistics`) match
(:mod:`~simulations.smartgrid.reconstruction`, dissertation Ch. 6 carried over to
identification).  It gets its best shot: random restarts from the mean state the shared sums
give, projection on the public clip bounds and, per window, the best of several weights of the
fleet-model prior (chosen with the truth, an oracle no real adversary has -- so the errors
reported are lower bounds on what it achieves).  The error is relative to the trajectory's
variation: guessing the true mean level everywhere scores 1.

Privacy units and composition: a release covers ``L`` periods (a window here, a day for the
occupancy attack of :mod:`~simulations.smartgrid.attack_study`), releases are disjoint in
time; one time step (``unit="sample"``) lies in one release, a window of ``w`` steps reaches up
to ``1 + ceil((w - 1) / L)`` releases, the whole record (``unit="trajectory"``) all of them
(:func:`releases_reached`); the household's guarantee is composed over them by the accountant.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError, ToolboxError
from _toolbox.validation import as_generator, check_integer, read_only
from dmdidc import DelayedPlant, SufficientStatistics
from dmdidc.private.release import MECHANISMS
from dmdidc.private.sensitivity import PRIVACY_UNITS
from simulations.smartgrid.config import ScenarioConfig
from simulations.smartgrid.operation import FleetRecord
from simulations.smartgrid.private_identification import (
    SharingBounds,
    _household_days,
    aggregate_statistics,
    daily_household_statistics,
    fleet_estimator,
    privatize_household,
)
from simulations.smartgrid.reconstruction import (
    GramBlocks,
    free_dimensions,
    reconstruct_trajectory,
    relative_error,
)

__all__ = ["ATTACK_WINDOW", "AttackWindow", "DEFAULT_ALPHA", "attack_window",
           "check_mechanisms", "fleet_prior", "privatize_release", "reconstruct_window",
           "reconstruction_privacy_study", "releases_reached",
           "window_free_dimensions", "window_starts"]

#: Stability index of the SaS mechanism when none is given (the scenario's default).
DEFAULT_ALPHA = ScenarioConfig.alpha
#: Window of the reconstruction attack in the case-study run (the scenario's default).
ATTACK_WINDOW = ScenarioConfig.attack_window_steps
#: Weights of the fleet-model prior tried by the adversary (0: statistics only).
PRIOR_WEIGHTS = (0.0, 1.0, 100.0)
#: A window counts as reconstructed below this relative error.
SUCCESS_ERROR = 0.1


def releases_reached(unit: str, window: int | None, release_steps: int, total: int) -> int:
    """Releases (disjoint, ``release_steps`` periods each, ``total`` of them) one privacy unit
    can reach: 1 for a sample, ``min(total, 1 + ceil((w - 1) / release_steps))`` for a window of
    ``w`` steps, ``total`` for the whole record.

    Examples
    --------
    >>> releases_reached("window", 36, 12, 100), releases_reached("trajectory", None, 288, 28)
    (4, 28)
    """
    if unit not in PRIVACY_UNITS:
        raise ParameterError(f"unit must be one of {PRIVACY_UNITS}; got {unit!r}")
    L = check_integer("release_steps", release_steps, minimum=1)
    total = check_integer("total", total, minimum=1)
    if unit == "sample":
        return 1
    if unit == "trajectory":
        return total
    w = check_integer("window", window, minimum=1)
    return min(total, 1 + math.ceil((w - 1) / L))


@dataclass(frozen=True, eq=False)
class AttackWindow:
    """One window a household shares, and what the adversary attacks it with.

    Attributes
    ----------
    statistics : dmdidc.SufficientStatistics
        Plain statistics of the window (shared coordinates, bounds declared).
    commands : ndarray, shape (m, N + R)
        Per-unit commands from ``k0 - R`` (known to the adversary).
    states : ndarray, shape (n, N + 1)
        The truth ``x_{k0} .. x_K`` as shared (offset and clipped).
    start : int
        Time index of the window's first period in the record.
    """

    statistics: SufficientStatistics
    commands: np.ndarray
    states: np.ndarray
    start: int


def attack_window(record: FleetRecord, household: int, *, start: int, steps: int,
                  max_delay: int, bounds: SharingBounds | None = None) -> AttackWindow:
    """The statistics one household shares for ``steps`` periods from ``start`` (one day).

    Built from the same per-day data as
    :func:`~simulations.smartgrid.private_identification.daily_household_statistics`, sliced.

    Raises
    ------
    ParameterError
        A window that crosses midnight or leaves the record, or too short for the lags.
    """
    bounds = SharingBounds() if bounds is None else bounds
    R = check_integer("max_delay", max_delay, minimum=0)
    start = check_integer("start", start, minimum=0)
    steps = check_integer("steps", steps, minimum=1)
    span = record.steps_per_day
    day, offset = divmod(start, span)
    if day >= record.days or offset + steps > span - 1:
        raise ParameterError(f"the window start={start}, steps={steps} must lie inside one day "
                             f"of the record ({record.days} days of {span - 1} periods)")
    X_days, U_days, E_days = _household_days(record, household, bounds)
    X = X_days[day][:, offset:offset + steps + 1]
    U = U_days[day][:, offset:offset + steps]
    stats = SufficientStatistics.from_data(X, U, max_delay=R,
                                           state_bound=list(bounds.state_bounds_K),
                                           input_bound=0.5,
                                           instruments=E_days[day][:, offset:offset + steps],
                                           instrument_bound=bounds.excitation)
    k0 = stats.layout.first_sample
    if stats.n_samples < 1:
        raise ParameterError(f"steps={steps} leaves no regression sample (the statistics start "
                             f"at period {k0})")
    limit = np.array(bounds.state_bounds_K)[:, None]
    truth = np.clip(X[:, k0:], -limit, limit)
    return AttackWindow(stats, read_only(np.clip(U[:, k0 - R:], -0.5, 0.5)), read_only(truth),
                        start)


def reconstruct_window(window: AttackWindow, shared: SufficientStatistics, *,
                       model: DelayedPlant | None = None,
                       prior_weights: Sequence[float] = PRIOR_WEIGHTS, restarts: int = 3,
                       rng: np.random.Generator | int | None = None
                       ) -> tuple[float, np.ndarray, float]:
    """Attack (a) on what was shared for ``window`` (its plain or privatized statistics).

    The adversary starts its search at the mean state the shared sums give (the shared states
    have either sign), and projects its reconstruction onto the public clip bounds.

    Returns
    -------
    error : float
        Smallest relative error over the prior weights (without ``model``: statistics only).
    states : ndarray, shape (n, N + 1)
        That reconstruction.
    weight : float
        The prior weight that gave it.
    """
    rng = as_generator(rng)
    blocks = GramBlocks.from_statistics(shared)
    weights = [w for w in prior_weights if w > 0] if model is not None else []
    limit = np.asarray(shared.state_bound)[:, None]
    n = shared.n_states
    level = np.clip(shared.moments()[1][:n] / shared.n_samples, -limit[:, 0], limit[:, 0])
    best = None
    for weight in [0.0, *weights]:
        result = reconstruct_trajectory(blocks, window.commands,
                                        model=model if weight > 0 else None,
                                        prior_weight=weight, restarts=restarts,
                                        start_level=level, rng=rng)
        states = np.clip(result.states, -limit, limit)
        error = relative_error(states, window.states)
        if best is None or error < best[0]:
            best = (error, states, weight)
    return best


def window_starts(record: FleetRecord, steps: int, count: int, rng: np.random.Generator
                   ) -> np.ndarray:
    """``count`` window starts inside days, each day holding whole windows from midnight."""
    per_day = (record.steps_per_day - 1) // steps
    if per_day < 1:
        raise ParameterError(f"a window of {steps} periods does not fit in a day")
    slots = rng.choice(record.days * per_day, size=min(count, record.days * per_day),
                       replace=False)
    return np.sort((slots // per_day) * record.steps_per_day + (slots % per_day) * steps)


def check_mechanisms(mechanisms: Sequence[str], alpha: float | None = None) -> list[str]:
    """The mechanisms as a list; an unknown one, or an ``alpha`` without ``"sas"`` among them
    (it would change nothing), raises :class:`ParameterError`."""
    mechanisms = list(mechanisms)
    for mech in mechanisms:
        if mech not in MECHANISMS:
            raise ParameterError(f"mechanism must be one of {MECHANISMS}; got {mech!r}")
    if alpha is not None and "sas" not in mechanisms:
        raise ParameterError(f"alpha applies to mechanism 'sas' only; got alpha={alpha!r} with "
                             f"mechanisms {mechanisms}")
    return mechanisms


def privatize_release(stats: SufficientStatistics, mechanism: str, epsilon: float, *,
                      delta: float, unit: str, window: int | None, alpha: float | None,
                      releases: int, rng: np.random.Generator):
    """:func:`~simulations.smartgrid.private_identification.privatize_household` with the
    scenario's SaS alpha (:data:`DEFAULT_ALPHA`) by default; ``alpha`` is the SaS cells' of a
    study over several mechanisms (:func:`check_mechanisms` refuses it without SaS); returns
    ``(private, guarantee)``.  The attack studies draw many releases of the same statistics
    to measure the attacks (each stands for a household's one release): ``accounted``."""
    if mechanism != "sas":
        alpha = None
    elif alpha is None:
        alpha = DEFAULT_ALPHA
    return privatize_household(stats, mechanism=mechanism, epsilon=epsilon, delta=delta,
                               unit=unit, window=window, alpha=alpha, releases=releases,
                               rng=rng, accounted=True)


def fleet_prior(record: FleetRecord, max_delay: int,
                daily: Sequence[Sequence[SufficientStatistics]] | None = None
                ) -> DelayedPlant | None:
    """The aggregator's fleet model from the households' plain statistics (the adversary's
    best prior): the fit of :func:`~simulations.smartgrid.private_identification.
    identify_fleet` (instrumental variables, the excitation as instrument) without its
    delay interval; ``None`` when the fit fails."""
    if daily is None:
        daily = [daily_household_statistics(record, i, max_delay=max_delay)
                 for i in range(len(record.households))]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")    # diagnostics of a prior the adversary tries
            total = aggregate_statistics([sum(d) for d in daily])
            return fleet_estimator(max_delay).fit_statistics(total, dt=record.dt_s).model_
    except (ToolboxError, np.linalg.LinAlgError):
        return None


def reconstruction_privacy_study(record: FleetRecord, *, windows: Sequence[int] = (12, 14, 16,
                                 18, 24), epsilons: Sequence[float] = (1.0, 10.0, 100.0,
                                 1000.0), mechanisms: Sequence[str] = MECHANISMS,
                                 household: int = 0, starts: int = 3, max_delay: int = 3,
                                 delta: float = 1e-5, unit: str = "sample",
                                 window: int | None = None, alpha: float | None = None,
                                 model: DelayedPlant | None = None, restarts: int = 3,
                                 progress: bool = False,
                                 rng: np.random.Generator | int | None = None
                                 ) -> list[dict[str, Any]]:
    """Attack (a) against window length and epsilon, plain and privatized.

    For each window length ``K``, ``starts`` windows of ``household`` (whole windows from
    midnight) are attacked on their plain statistics and on their privatized release for every
    mechanism and epsilon (the household's composed guarantee per ``unit``, windows shared
    back to back).

    Returns
    -------
    list of dict
        One row per (window, mechanism, epsilon); ``mechanism="plain"`` rows have
        ``epsilon`` = inf.  Keys: ``window_steps``, ``n_samples``, ``unknowns``,
        ``free_dimensions`` (plain, at the truth), ``mechanism``, ``epsilon`` (household,
        composed), ``releases``, ``median_error``, ``errors``, ``success_share``.
    """
    from tqdm.auto import tqdm

    rng = as_generator(rng)
    mechanisms = check_mechanisms(mechanisms, alpha)
    R = check_integer("max_delay", max_delay, minimum=0)
    rows = []
    for K in tqdm(list(windows), desc="attack (a)", disable=not progress):
        K = check_integer("window", K, minimum=1)
        total = record.days * ((record.steps_per_day - 1) // K)
        releases = releases_reached(unit, window, K, total)
        errors: dict[tuple[str, float], list[float]] = {}
        guarantees: dict[tuple[str, float], float] = {}
        for start in window_starts(record, K, starts, rng):
            target = attack_window(record, household, start=int(start), steps=K, max_delay=R)
            errors.setdefault(("plain", math.inf), []).append(reconstruct_window(
                target, target.statistics, model=model, restarts=restarts, rng=rng)[0])
            for mech in mechanisms:
                for eps in epsilons:
                    shared, guarantee = privatize_release(
                        target.statistics, mech, eps, delta=delta, unit=unit, window=window,
                        alpha=alpha, releases=releases, rng=rng)
                    guarantees[mech, eps] = guarantee.epsilon
                    errors.setdefault((mech, eps), []).append(reconstruct_window(
                        target, shared, model=model, restarts=restarts, rng=rng)[0])
        unknowns, free = window_free_dimensions(target)
        for (mech, eps), errs in errors.items():
            rows.append({"window_steps": K, "n_samples": target.statistics.n_samples,
                         "unknowns": unknowns, "free_dimensions": free, "mechanism": mech,
                         "epsilon": guarantees.get((mech, eps), math.inf),
                         "epsilon_target": eps, "unit": unit, "releases": releases,
                         "median_error": float(np.median(errs)), "errors": errs,
                         "success_share": float(np.mean(np.array(errs) < SUCCESS_ERROR))})
    return rows


def window_free_dimensions(target: AttackWindow) -> tuple[int, int]:
    """:func:`free_dimensions` of the window's states ``x_{k0} ..`` (the states before ``k0``
    do not enter the statistics: zeros stand for them)."""
    R = target.statistics.max_delay
    states = np.hstack([np.zeros((target.states.shape[0], R)), target.states])
    return free_dimensions(states, target.commands, R)
