"""Attack and defence (issue 10, item 4): both attacks on what a household shares, plain and
privatized, the case-study summary and its figure.

* **(a) reconstruction** of a window's trajectory from its statistics:
  :mod:`~simulations.smartgrid.attack_windows`.
* **(b) occupancy inference** (:mod:`~simulations.smartgrid.occupancy_attack`): per-day
  releases (:func:`~simulations.smartgrid.private_identification.daily_household_statistics`,
  privatized with the household's composed guarantee), features = every shared entry,
  logistic regression cross-validated by household; balanced accuracy (chance 0.5) with an
  interval from resampling households (:func:`household_interval`).

The command ``dmdidc smartgrid attacks --out DIR`` (:mod:`simulations.cli.smartgrid_studies`)
runs both against epsilon (and window length) and writes CSV, JSON and a PNG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import as_generator, check_in_interval, check_integer
from dmdidc.private.release import MECHANISMS
from dmdidc.private.sensitivity import PRIVACY_UNITS
from simulations.smartgrid.attack_windows import (
    ATTACK_WINDOW,
    attack_window,
    check_mechanisms,
    fleet_prior,
    privatize_release,
    reconstruct_window,
    releases_reached,
    window_free_dimensions,
    window_starts,
)
from simulations.smartgrid.config import ScenarioConfig
from simulations.smartgrid.occupancy_attack import OccupancyAttackResult, occupancy_attack
from simulations.smartgrid.operation import FleetRecord
from simulations.smartgrid.private_identification import daily_household_statistics

__all__ = ["attack_summary", "chance_epsilon", "household_interval",
           "occupancy_privacy_study", "plot_attacks"]

CHANCE = 0.5


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
    mechanisms = check_mechanisms(mechanisms, alpha)
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
                released = [privatize_release(s, mech, eps, delta=delta, unit=unit,
                                              window=window, alpha=alpha, releases=releases,
                                              rng=rng) for s in days]
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
                   attack_window_steps: int = ATTACK_WINDOW,
                   max_delay: int = ScenarioConfig.max_delay,
                   rng: np.random.Generator | int | None = None) -> dict[str, Any]:
    """Both attacks for the case-study run, plain and privatized at the household's budget.

    Attack (a) on ``household``: three windows of ``attack_window_steps`` periods (default the
    scenario's, :data:`ATTACK_WINDOW`, short enough for the plain statistics to give the
    trajectory away), the adversary holding the fleet model identified from the plain
    statistics as a prior.  Attack (b) on every household's per-day releases.  Both releases
    are privatized with ``mechanism`` so that the household's composed guarantee per ``unit``
    is ``epsilon`` (with ``delta`` for Gaussian).

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
        SaS stability index (default
        :data:`~simulations.smartgrid.attack_windows.DEFAULT_ALPHA`); ``mechanism="sas"`` only.
    attack_window_steps : int, default :data:`ATTACK_WINDOW`
        Periods of the windows attack (a) reconstructs.
    max_delay : int, default ``ScenarioConfig.max_delay``
        Delay bound ``R`` of the shared statistics.
    rng : numpy.random.Generator or int or None

    Returns
    -------
    dict
        ``attack_window`` (periods) and ``attack_window_s``, ``attack_error_plain`` and
        ``attack_error_private`` (median relative error over the windows; 1 = no better than
        the true mean level), ``attack_unknowns``/``attackwindow_free_dimensions``,
        ``attack_accuracy_plain``/``attack_accuracy_private`` (balanced accuracy) with
        ``..._ci`` (95 %, households resampled), ``attack_guarantee_window`` and
        ``attack_guarantee_day`` (the accountant's guarantees), ``attack_trace`` (truth and
        both reconstructions of the first window, for :func:`plot_attacks`),
        ``attack_releases`` (``(household, HouseholdGuarantee)`` of every private release
        per unit: a window of ``household`` per window attacked, each household's days once;
        not JSON, for :func:`~simulations.smartgrid.private_identification.run_guarantee`).

    Raises
    ------
    ParameterError
        Bad mechanism, unit, window, epsilon, delta or household; alpha with a mechanism other
        than SaS.
    dmdidc.private.release / BudgetExceededError
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
    check_mechanisms([mechanism], alpha)
    if unit not in PRIVACY_UNITS:
        raise ParameterError(f"unit must be one of {PRIVACY_UNITS}; got {unit!r}")
    if check_integer("household", household, minimum=0) >= len(record.households):
        raise ParameterError(f"household must be < {len(record.households)}; got {household}")
    if len(record.households) < 5:
        raise ParameterError(f"record must hold at least 5 households for household-level "
                             f"cross-validation; got {len(record.households)}")
    rng = as_generator(rng)
    R = check_integer("max_delay", max_delay, minimum=0)
    K = check_integer("attack_window_steps", attack_window_steps, minimum=1)
    options = {"delta": delta, "unit": unit, "window": window, "alpha": alpha}
    daily = [daily_household_statistics(record, i, max_delay=R)
             for i in range(len(record.households))]
    # attack (a): the household releases windows of K periods back to back
    total = record.days * ((record.steps_per_day - 1) // K)
    releases = releases_reached(unit, window, K, total)
    model = fleet_prior(record, R, daily)
    plain_errors, private_errors, trace, spent = [], [], None, []
    for start in window_starts(record, K, 3, rng):
        target = attack_window(record, household, start=int(start), steps=K, max_delay=R)
        shared, window_guarantee = privatize_release(target.statistics, mechanism, epsilon,
                                                     releases=releases, rng=rng, **options)
        spent.append((household, window_guarantee))
        plain = reconstruct_window(target, target.statistics, model=model, restarts=2, rng=rng)
        private = reconstruct_window(target, shared, model=model, restarts=2, rng=rng)
        plain_errors.append(plain[0])
        private_errors.append(private[0])
        if trace is None:
            trace = {"start": int(start), "first_sample": target.statistics.layout.first_sample,
                     "truth": target.states.tolist(),
                     "plain": plain[1].tolist(), "private": private[1].tolist()}
            unknowns, free = window_free_dimensions(target)
    # attack (b): one release per day
    day_releases = releases_reached(unit, window, record.steps_per_day, record.days)
    released = [[privatize_release(s, mechanism, epsilon, releases=day_releases, rng=rng,
                                   **options) for s in days] for days in daily]
    day_guarantee = released[0][0][1]
    # a day's guarantee already composes the days one unit reaches: once per household
    spent += [(i, days[0][1]) for i, days in enumerate(released)]
    plain_b = occupancy_attack(record, statistics=daily)
    private_b = occupancy_attack(record, statistics=[[p for p, _ in days] for days in released])
    return {"attack_window": K, "attack_window_s": K * record.dt_s,
            "attack_error_plain": float(np.median(plain_errors)),
            "attack_error_private": float(np.median(private_errors)),
            "attack_unknowns": unknowns, "attackwindow_free_dimensions": free,
            "attack_accuracy_plain": plain_b.balanced_accuracy,
            "attack_accuracy_private": private_b.balanced_accuracy,
            "attack_accuracy_plain_ci": household_interval([plain_b], rng=rng),
            "attack_accuracy_private_ci": household_interval([private_b], rng=rng),
            "attack_prior": "fleet model" if model is not None else "none",
            "attack_guarantee_window": window_guarantee.to_dict(),
            "attack_guarantee_day": day_guarantee.to_dict(), "attack_trace": trace,
            "attack_releases": spent}


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
