"""Attack and defence (issue 10, item 4): both attacks on what a household shares, plain and
privatized.

A household shares :class:`dmdidc.SufficientStatistics` in the coordinates of
:mod:`~simulations.smartgrid.private_identification` (states minus a public operating point,
per-unit commands, the aggregator's excitation as instrument, bounds declared), plain or
privatized by :func:`~simulations.smartgrid.private_identification.privatize_household` with
a guarantee composed by the accountant.  Both attacks read exactly these objects:

* **(a) reconstruction** (:mod:`~simulations.smartgrid.reconstruction`, dissertation Ch. 6 carried
  over to identification): the household releases its statistics per window of ``K`` periods
  (disjoint windows inside a day); the adversary intercepts one window, knows the commands
  and, at best, the aggregator's fleet model, and searches the states whose regression blocks
  (:meth:`GramBlocks.from_statistics`) match.  It gets its best shot: random restarts and,
  per window, the best of several weights of the fleet-model prior (chosen with the truth, an
  oracle no real adversary has -- so the errors reported are lower bounds on what it
  achieves).  The error is relative to the trajectory's variation: guessing the true mean
  level everywhere scores 1.
* **(b) occupancy inference** (:mod:`~simulations.smartgrid.occupancy_attack`): per-day
  releases, features = every shared entry, logistic regression cross-validated by household;
  balanced accuracy (chance 0.5) with an interval from resampling households.

Privacy units and composition: a release covers ``L`` periods (a window of attack (a), a day of
attack (b)), releases are disjoint in time; one time step (``unit="sample"``) lies in one
release, a window of ``w`` steps reaches up to ``1 + ceil((w - 1) / L)`` releases, the whole
record (``unit="trajectory"``) all of them (:func:`releases_reached`); the household's
guarantee is composed over them by the accountant.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dmdidc import DelayedPlant, DMDidc, SufficientStatistics
from dmdidc.privatization import MECHANISMS
from dmdidc.sensitivity import PRIVACY_UNITS
from privacy.errors import ParameterError, ToolboxError
from privacy.validation import as_generator, check_in_interval, check_integer, read_only
from simulations.smartgrid.config import ScenarioConfig
from simulations.smartgrid.occupancy_attack import OccupancyAttackResult, occupancy_attack
from simulations.smartgrid.operation import FleetRecord
from simulations.smartgrid.private_identification import (
    SharingBounds,
    _household_days,
    aggregate_statistics,
    daily_household_statistics,
    privatize_household,
)
from simulations.smartgrid.reconstruction import (
    GramBlocks,
    free_dimensions,
    reconstruct_trajectory,
    relative_error,
)

__all__ = ["AttackWindow", "attack_window", "fleet_prior", "household_interval",
           "occupancy_privacy_study",
           "reconstruct_window", "reconstruction_privacy_study", "releases_reached",
           "chance_epsilon", "attack_summary", "plot_attacks", "main"]

#: Stability index of the SaS mechanism when none is given (the scenario's default).
DEFAULT_ALPHA = ScenarioConfig.alpha
#: Window of the reconstruction attack in the case-study run (the scenario's default).
ATTACK_WINDOW = ScenarioConfig.attack_window_steps
#: Weights of the fleet-model prior tried by the adversary (0: statistics only).
PRIOR_WEIGHTS = (0.0, 1.0, 100.0)
#: A window counts as reconstructed below this relative error.
SUCCESS_ERROR = 0.1
CHANCE = 0.5


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


def _window_starts(record: FleetRecord, steps: int, count: int, rng: np.random.Generator
                   ) -> np.ndarray:
    """``count`` window starts inside days, each day holding whole windows from midnight."""
    per_day = (record.steps_per_day - 1) // steps
    if per_day < 1:
        raise ParameterError(f"a window of {steps} periods does not fit in a day")
    slots = rng.choice(record.days * per_day, size=min(count, record.days * per_day),
                       replace=False)
    return np.sort((slots // per_day) * record.steps_per_day + (slots % per_day) * steps)


def _check_mechanisms(mechanisms: Sequence[str]) -> list[str]:
    mechanisms = list(mechanisms)
    for mech in mechanisms:
        if mech not in MECHANISMS:
            raise ParameterError(f"mechanism must be one of {MECHANISMS}; got {mech!r}")
    return mechanisms


def _privatize(stats: SufficientStatistics, mechanism: str, epsilon: float, *, delta: float,
               unit: str, window: int | None, alpha: float | None, releases: int,
               rng: np.random.Generator):
    """:func:`privatize_household` with the scenario's SaS alpha by default."""
    if mechanism == "sas" and alpha is None:
        alpha = DEFAULT_ALPHA
    return privatize_household(stats, mechanism=mechanism, epsilon=epsilon, delta=delta,
                               unit=unit, window=window, alpha=alpha, releases=releases,
                               rng=rng)


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
            estimator = DMDidc(max_delay=max_delay, estimator="iv", instruments="exogenous")
            return estimator.fit_statistics(aggregate_statistics([sum(d) for d in daily]),
                                            dt=record.dt_s).model_
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
    mechanisms = _check_mechanisms(mechanisms)
    R = check_integer("max_delay", max_delay, minimum=0)
    rows = []
    for K in tqdm(list(windows), desc="attack (a)", disable=not progress):
        K = check_integer("window", K, minimum=1)
        total = record.days * ((record.steps_per_day - 1) // K)
        releases = releases_reached(unit, window, K, total)
        errors: dict[tuple[str, float], list[float]] = {}
        guarantees: dict[tuple[str, float], float] = {}
        for start in _window_starts(record, K, starts, rng):
            target = attack_window(record, household, start=int(start), steps=K, max_delay=R)
            errors.setdefault(("plain", math.inf), []).append(reconstruct_window(
                target, target.statistics, model=model, restarts=restarts, rng=rng)[0])
            for mech in mechanisms:
                for eps in epsilons:
                    shared, guarantee = _privatize(target.statistics, mech, eps, delta=delta,
                                                   unit=unit, window=window, alpha=alpha,
                                                   releases=releases, rng=rng)
                    guarantees[mech, eps] = guarantee.epsilon
                    errors.setdefault((mech, eps), []).append(reconstruct_window(
                        target, shared, model=model, restarts=restarts, rng=rng)[0])
        unknowns, free = _free_dimensions(target)
        for (mech, eps), errs in errors.items():
            rows.append({"window_steps": K, "n_samples": target.statistics.n_samples,
                         "unknowns": unknowns, "free_dimensions": free, "mechanism": mech,
                         "epsilon": guarantees.get((mech, eps), math.inf),
                         "epsilon_target": eps, "unit": unit, "releases": releases,
                         "median_error": float(np.median(errs)), "errors": errs,
                         "success_share": float(np.mean(np.array(errs) < SUCCESS_ERROR))})
    return rows


def _free_dimensions(target: AttackWindow) -> tuple[int, int]:
    """:func:`free_dimensions` of the window's states ``x_{k0} ..`` (the states before ``k0``
    do not enter the statistics: zeros stand for them)."""
    R = target.statistics.max_delay
    states = np.hstack([np.zeros((target.states.shape[0], R)), target.states])
    return free_dimensions(states, target.commands, R)


def household_interval(results: Sequence[OccupancyAttackResult], *, level: float = 0.95,
                       resamples: int = 2000, rng: np.random.Generator | int | None = None
                       ) -> tuple[float, float]:
    """Percentile interval of the balanced accuracy, resampling households (cluster bootstrap).

    Days of one household are correlated, so households, not days, are resampled; several
    results (e.g. privacy-noise seeds on the same fleet) are pooled per household.  Each
    resample's balanced accuracy is the mean of the recalls of both classes, from the
    resampled households' confusion counts.

    Raises
    ------
    ParameterError
        No results, or results on different households.
    """
    results = list(results)
    if not results:
        raise ParameterError("results must hold at least one OccupancyAttackResult")
    level = check_in_interval("level", level, 0.0, 1.0, low_open=True, high_open=True)
    resamples = check_integer("resamples", resamples, minimum=1)
    ids = np.unique(results[0].households)
    if any(not np.array_equal(np.unique(r.households), ids) for r in results):
        raise ParameterError("results must cover the same households")
    counts = np.zeros((ids.size, 4))        # per household: true pos., pos., true neg., neg.
    for r in results:
        row = np.searchsorted(ids, r.households)
        positive, hit = r.labels.astype(bool), r.labels == r.predicted
        for column, values in enumerate((positive & hit, positive, ~positive & hit, ~positive)):
            counts[:, column] += np.bincount(row, weights=values, minlength=ids.size)
    pick = as_generator(rng).integers(0, ids.size, size=(resamples, ids.size))
    total = counts[pick].sum(axis=1)
    both = (total[:, 1] > 0) & (total[:, 3] > 0)
    scores = 0.5 * (total[both, 0] / total[both, 1] + total[both, 2] / total[both, 3])
    tail = 50.0 * (1.0 - level)
    return float(np.percentile(scores, tail)), float(np.percentile(scores, 100.0 - tail))


def occupancy_privacy_study(record: FleetRecord, *, epsilons: Sequence[float] = (
        0.1, 1.0, 10.0, 100.0, 1000.0), mechanisms: Sequence[str] = MECHANISMS,
        max_delay: int = 3, delta: float = 1e-5, unit: str = "sample",
        window: int | None = None, alpha: float | None = None, seeds: int = 2,
        level: float = 0.95, progress: bool = False,
        rng: np.random.Generator | int | None = None) -> list[dict[str, Any]]:
    """Attack (b) against epsilon: per-day releases, household-level cross-validation.

    Returns
    -------
    list of dict
        The plain row (``mechanism="plain"``, ``epsilon`` = inf) and one per mechanism and
        epsilon: ``epsilon`` (household, composed over the days one unit reaches),
        ``epsilon_day`` (one day's release), ``releases``, ``balanced_accuracy`` (mean over
        ``seeds`` noise draws), ``ci_low``/``ci_high`` (households resampled, seeds pooled),
        ``seed_accuracies``.
    """
    from tqdm.auto import tqdm

    rng = as_generator(rng)
    mechanisms = _check_mechanisms(mechanisms)
    seeds = check_integer("seeds", seeds, minimum=1)
    R = check_integer("max_delay", max_delay, minimum=0)
    daily = [daily_household_statistics(record, i, max_delay=R)
             for i in range(len(record.households))]
    releases = releases_reached(unit, window, record.steps_per_day, record.days)
    plain = occupancy_attack(record, statistics=daily)
    rows = [_occupancy_row("plain", math.inf, math.inf, 1, [plain], level, rng)]
    grid = [(m, e) for m in mechanisms for e in epsilons]
    for mech, eps in tqdm(grid, desc="attack (b)", disable=not progress):
        results, guarantee = [], None
        for _ in range(seeds):
            shared = []
            for days in daily:
                released = [_privatize(s, mech, eps, delta=delta, unit=unit, window=window,
                                       alpha=alpha, releases=releases, rng=rng) for s in days]
                shared.append([p for p, _ in released])
                guarantee = released[0][1]
            results.append(occupancy_attack(record, statistics=shared))
        rows.append(_occupancy_row(mech, guarantee.epsilon, guarantee.release.epsilon, releases,
                                   results, level, rng))
    return rows


def _occupancy_row(mechanism: str, epsilon: float, epsilon_day: float, releases: int,
                   results: list[OccupancyAttackResult], level: float,
                   rng: np.random.Generator) -> dict[str, Any]:
    low, high = household_interval(results, level=level, rng=rng)
    accuracies = [r.balanced_accuracy for r in results]
    return {"mechanism": mechanism, "epsilon": epsilon, "epsilon_day": epsilon_day,
            "releases": releases, "balanced_accuracy": float(np.mean(accuracies)),
            "ci_low": low, "ci_high": high, "seed_accuracies": accuracies,
            "n_days": results[0].n_days, "occupied_share": results[0].occupied_share}


def chance_epsilon(rows: Sequence[dict[str, Any]], mechanism: str) -> float:
    """Largest epsilon of the grid at which, and below which, the interval of the balanced
    accuracy of ``mechanism`` contains chance (0.5); 0 if none does."""
    own = sorted((r for r in rows if r["mechanism"] == mechanism), key=lambda r: r["epsilon"])
    if not own:
        raise ParameterError(f"no rows for mechanism {mechanism!r}")
    found = 0.0
    for row in own:
        if row["ci_low"] > CHANCE:
            break
        found = row["epsilon"]
    return found


def attack_summary(record: FleetRecord, *, household: int = 0, epsilon: float = 1.0,
                   delta: float = 1e-5, unit: str = "sample", window: int | None = None,
                   mechanism: str = "sas", alpha: float | None = None,
                   rng: np.random.Generator | int | None = None) -> dict[str, Any]:
    """Both attacks for the case-study run, plain and privatized at the household's budget.

    Attack (a) on ``household``: three windows of :data:`ATTACK_WINDOW` periods (the scenario's
    ``attack_window_steps``, short enough for the plain statistics to give the trajectory
    away), the adversary holding the fleet model identified from the plain statistics as a
    prior.  Attack (b) on every household's per-day releases.  Both releases are privatized
    with ``mechanism`` so that the household's composed guarantee per ``unit`` is
    ``epsilon`` (with ``delta`` for Gaussian).

    Parameters
    ----------
    record : FleetRecord
        At least five households (household-level cross-validation), with excitation.
    household : int, default 0
    epsilon, delta : float
    unit : {"sample", "window", "trajectory"}, default "sample"
    window : int, optional
        Steps of a privacy window (``unit="window"``).
    mechanism : {"sas", "gaussian", "laplace"}, default "sas"
    alpha : float, optional
        SaS stability index (default :data:`DEFAULT_ALPHA`).
    rng : numpy.random.Generator or int or None

    Returns
    -------
    dict
        ``attack_window`` (periods) and ``attack_window_s``, ``attack_error_plain`` and
        ``attack_error_private`` (median relative error over the windows; 1 = no better than
        the true mean level), ``attack_unknowns``/``attack_free_dimensions``,
        ``attack_accuracy_plain``/``attack_accuracy_private`` (balanced accuracy) with
        ``..._ci`` (95 %, households resampled), ``attack_guarantee_window`` and
        ``attack_guarantee_day`` (the accountant's guarantees), ``attack_trace`` (truth and
        both reconstructions of the first window, for :func:`plot_attacks`).

    Raises
    ------
    ParameterError
        Bad mechanism, unit, window, epsilon, delta or household.
    dmdidc.privatization / BudgetExceededError
        Propagated from :func:`privatize_household`.

    Examples
    --------
    >>> from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
    >>> record = simulate_fleet(draw_households(6, rng=0), load_profiles("extract"),
    ...                         start_day=0, days=4, rng=0)
    >>> summary = attack_summary(record, mechanism="laplace", epsilon=1.0, rng=0)
    >>> summary["attack_error_plain"] < 1e-6 < 1.0 < summary["attack_error_private"]
    True
    """
    if mechanism not in MECHANISMS:
        raise ParameterError(f"mechanism must be one of {MECHANISMS}; got {mechanism!r}")
    if unit not in PRIVACY_UNITS:
        raise ParameterError(f"unit must be one of {PRIVACY_UNITS}; got {unit!r}")
    if check_integer("household", household, minimum=0) >= len(record.households):
        raise ParameterError(f"household must be < {len(record.households)}; got {household}")
    if len(record.households) < 5:
        raise ParameterError(f"record must hold at least 5 households for household-level "
                             f"cross-validation; got {len(record.households)}")
    rng = as_generator(rng)
    R, K = ScenarioConfig.max_delay, ATTACK_WINDOW
    options = {"delta": delta, "unit": unit, "window": window, "alpha": alpha}
    daily = [daily_household_statistics(record, i, max_delay=R)
             for i in range(len(record.households))]
    # attack (a): the household releases windows of K periods back to back
    total = record.days * ((record.steps_per_day - 1) // K)
    releases = releases_reached(unit, window, K, total)
    model = fleet_prior(record, R, daily)
    plain_errors, private_errors, trace = [], [], None
    for start in _window_starts(record, K, 3, rng):
        target = attack_window(record, household, start=int(start), steps=K, max_delay=R)
        shared, window_guarantee = _privatize(target.statistics, mechanism, epsilon,
                                              releases=releases, rng=rng, **options)
        plain = reconstruct_window(target, target.statistics, model=model, restarts=2, rng=rng)
        private = reconstruct_window(target, shared, model=model, restarts=2, rng=rng)
        plain_errors.append(plain[0])
        private_errors.append(private[0])
        if trace is None:
            trace = {"start": int(start), "first_sample": target.statistics.layout.first_sample,
                     "truth": target.states.tolist(),
                     "plain": plain[1].tolist(), "private": private[1].tolist()}
            unknowns, free = _free_dimensions(target)
    # attack (b): one release per day
    day_releases = releases_reached(unit, window, record.steps_per_day, record.days)
    released = [[_privatize(s, mechanism, epsilon, releases=day_releases, rng=rng, **options)
                 for s in days] for days in daily]
    day_guarantee = released[0][0][1]
    plain_b = occupancy_attack(record, statistics=daily)
    private_b = occupancy_attack(record, statistics=[[p for p, _ in days] for days in released])
    return {"attack_window": K, "attack_window_s": K * record.dt_s,
            "attack_error_plain": float(np.median(plain_errors)),
            "attack_error_private": float(np.median(private_errors)),
            "attack_unknowns": unknowns, "attack_free_dimensions": free,
            "attack_accuracy_plain": plain_b.balanced_accuracy,
            "attack_accuracy_private": private_b.balanced_accuracy,
            "attack_accuracy_plain_ci": household_interval([plain_b], rng=rng),
            "attack_accuracy_private_ci": household_interval([private_b], rng=rng),
            "attack_prior": "fleet model" if model is not None else "none",
            "attack_guarantee_window": window_guarantee.to_dict(),
            "attack_guarantee_day": day_guarantee.to_dict(), "attack_trace": trace}


def plot_attacks(summary: dict[str, Any], path: str | Path, *,
                 occupancy_rows: Sequence[dict[str, Any]] | None = None) -> Path:
    """PNG: attack (a) on one window with and without privacy; attack (b) against epsilon.

    Parameters
    ----------
    summary : dict
        :func:`attack_summary`'s result (its ``attack_trace`` and accuracies).
    path : str or Path
    occupancy_rows : sequence of dict, optional
        :func:`occupancy_privacy_study` rows for the accuracy-against-epsilon panel (default:
        the summary's plain and private accuracies).

    Returns
    -------
    Path
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    trace = summary["attack_trace"]
    fig = Figure(figsize=(11.0, 4.0))
    FigureCanvasAgg(fig)
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    dt_min = summary["attack_window_s"] / summary["attack_window"] / 60.0
    minutes = (trace["first_sample"] + np.arange(len(trace["truth"][0]))) * dt_min
    truth = np.asarray(trace["truth"][0])
    left.plot(minutes, truth, "k-o", label="truth (T_i - 21 C)")
    left.plot(minutes, trace["plain"][0], "--x", color="tab:red",
              label=f"from plain statistics (error {summary['attack_error_plain']:.1e})")
    private = np.asarray(trace["private"][0])
    left.plot(minutes, private, ":s", color="tab:blue",
              label=f"from private statistics (error {summary['attack_error_private']:.2g})")
    low, high = min(truth.min(), private.min()), max(truth.max(), private.max())
    left.set_ylim(low - 0.1 * (high - low) - 0.05, high + 0.1 * (high - low) + 0.05)
    left.set_xlabel("minutes into the attacked window")
    left.set_ylabel("indoor temperature offset (K)")
    left.set_title(f"Attack (a): {summary['attack_window']}-period window")
    if occupancy_rows:
        for mech in MECHANISMS:
            own = sorted((r for r in occupancy_rows if r["mechanism"] == mech),
                         key=lambda r: r["epsilon"])
            if own:
                eps = [r["epsilon"] for r in own]
                line = right.semilogx(eps, [r["balanced_accuracy"] for r in own], "o-",
                                      label=mech)[0]
                right.fill_between(eps, [r["ci_low"] for r in own], [r["ci_high"] for r in own],
                                   color=line.get_color(), alpha=0.2)
        plain = [r for r in occupancy_rows if r["mechanism"] == "plain"]
        if plain:
            right.axhline(plain[0]["balanced_accuracy"], color="tab:red", linestyle="--",
                          label="plain statistics")
        right.set_xlabel("epsilon per household (composed)")
    else:
        right.bar(["plain", "private"], [summary["attack_accuracy_plain"],
                                         summary["attack_accuracy_private"]])
    right.axhline(CHANCE, color="k", linewidth=0.8, linestyle=":", label="chance")
    right.set_ylim(0.3, 1.0)
    right.set_ylabel("balanced accuracy")
    right.set_title("Attack (b): occupancy from per-day statistics")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def _write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import csv

    keys = [k for k in rows[0] if not isinstance(rows[0][k], list)]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=keys, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m simulations.smartgrid.attack_study --out DIR``: both attacks against
    epsilon (and window length), CSV + JSON + PNG."""
    import argparse
    import json

    from simulations.smartgrid.household import draw_households
    from simulations.smartgrid.operation import simulate_fleet
    from simulations.smartgrid.profiles import load_profiles

    parser = argparse.ArgumentParser(description="attack and defence study (issue 10, item 4)",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--households", type=int, default=40, help="fleet size")
    parser.add_argument("--days", type=int, default=28, help="days of data")
    parser.add_argument("--start-day", type=int, default=0, help="first day, 0 = 1 January")
    parser.add_argument("--setback", type=float, default=0.0, help="away setback, K")
    parser.add_argument("--excitation", type=float, default=ScenarioConfig.excitation,
                        help="excitation amplitude as a fraction of P_max")
    parser.add_argument("--epsilons", type=float, nargs="+",
                        default=[0.1, 1.0, 10.0, 100.0, 1000.0],
                        help="household budgets per unit (composed)")
    parser.add_argument("--windows", type=int, nargs="+", default=[12, 14, 16, 18, 24],
                        help="window lengths of attack (a), periods")
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS),
                        choices=MECHANISMS, help="privacy mechanisms")
    parser.add_argument("--unit", default="sample", choices=PRIVACY_UNITS, help="privacy unit")
    parser.add_argument("--window", type=int, default=None,
                        help="steps of a privacy window (--unit window)")
    parser.add_argument("--seeds", type=int, default=2, help="privacy-noise draws, attack (b)")
    parser.add_argument("--starts", type=int, default=3, help="windows per length, attack (a)")
    parser.add_argument("--seed", type=int, default=0, help="root seed")
    parser.add_argument("--out", default="out/attack_study", help="output folder")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    record = simulate_fleet(draw_households(args.households, rng=rng), load_profiles(),
                            start_day=args.start_day, days=args.days, setback_K=args.setback,
                            excitation=args.excitation, progress=True, rng=rng)
    options = {"unit": args.unit, "window": args.window}
    summary = attack_summary(record, rng=rng, **options)
    occupancy = occupancy_privacy_study(record, epsilons=args.epsilons,
                                        mechanisms=args.mechanisms, seeds=args.seeds,
                                        progress=True, rng=rng, **options)
    model = fleet_prior(record, ScenarioConfig.max_delay)
    reconstruction = reconstruction_privacy_study(
        record, windows=args.windows, epsilons=args.epsilons, mechanisms=args.mechanisms,
        starts=args.starts, model=model, progress=True, rng=rng, **options)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    existed = (out / "attack_study.json").exists()
    result = {"settings": vars(args), "summary": summary,
              "chance_epsilon": {m: chance_epsilon(occupancy, m) for m in args.mechanisms},
              "occupancy": occupancy, "reconstruction": reconstruction}
    (out / "attack_study.json").write_text(json.dumps(result, indent=2, default=float))
    _write_csv(occupancy, out / "occupancy.csv")
    _write_csv(reconstruction, out / "reconstruction.csv")
    plot_attacks(summary, out / "attack_study.png", occupancy_rows=occupancy)
    print(json.dumps({k: v for k, v in summary.items() if k != "attack_trace"}, indent=2,
                     default=float))
    print(f"chance epsilon: {result['chance_epsilon']}")
    print(f"wrote {out}/attack_study.json, occupancy.csv, reconstruction.csv, attack_study.png"
          f"{' (overwritten)' if existed else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
