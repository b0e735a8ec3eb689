"""Attack (b): infer from per-day statistics on which days a house was occupied.

A household that shares its DMDidc statistics once per day (or per window) leaks its daily life
through them: occupants heat the air (people, appliances), the thermostat answers with less heat
pump power, an away mode lowers the setpoint.  The adversary here is a classifier trained on
households whose occupancy it knows (a panel, or its own data) and applied to others: logistic
regression (scikit-learn, class-balanced) on the normalised entries of each day's Gram blocks
plus public side information (the day's mean outdoor temperature), features standardised
within each household (the adversary sees many days of the household it attacks).  It is
cross-validated by household (``GroupKFold``: no household is in both training and test) or by
day, and scored by balanced accuracy (chance = 0.5 whatever the share of occupied days).

The same function takes what households actually share: their per-day
:class:`dmdidc.SufficientStatistics`, plain or privatized, passed as ``statistics`` (the
features are then every shared entry, instrument blocks and sums included).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import as_generator, check_integer, read_only
from dmdidc.statistics import SufficientStatistics
from simulations.smartgrid.operation import FleetRecord
from simulations.smartgrid.reconstruction import gram_blocks

__all__ = ["OccupancyAttackResult", "daily_statistics", "occupancy_attack", "statistics_features"]

_CV = ("household", "day")


@dataclass(frozen=True, eq=False)
class OccupancyAttackResult:
    """Outcome of :func:`occupancy_attack`.

    Attributes
    ----------
    balanced_accuracy : float
        Over all out-of-fold predictions (0.5 = chance).
    fold_accuracies : tuple of float
        Balanced accuracy per fold (folds holding both classes).
    occupied_share : float
        Share of occupied days in the data.
    n_days : int
        Household-days classified.
    cv : str
        ``"household"`` or ``"day"``.
    labels, predicted, households : ndarray of int, shape (n_days,)
        Every household-day's true label, out-of-fold prediction and household index (for
        intervals that resample households).
    """

    balanced_accuracy: float
    fold_accuracies: tuple[float, ...]
    occupied_share: float
    n_days: int
    cv: str
    labels: np.ndarray = field(repr=False)
    predicted: np.ndarray = field(repr=False)
    households: np.ndarray = field(repr=False)


def daily_statistics(record: FleetRecord, max_delay: int) -> list[list[Any]]:
    """Plain per-day statistics of every household: ``[household][day] -> GramBlocks``."""
    R = check_integer("max_delay", max_delay, minimum=0)
    return [[gram_blocks(X, U, R) for X, U in zip(*record.trajectories(i), strict=True)]
            for i in range(len(record.households))]


def statistics_features(blocks: Any) -> np.ndarray:
    """Feature vector of one window's statistics: the upper triangle of
    ``[[G, C^T], [C, S]] / N`` (any object with ``gram``, ``cross``, ``target_gram`` and
    ``n_samples`` attributes, plain or privatized); for :class:`dmdidc.SufficientStatistics`
    every shared entry in the data's units (upper triangle of the Gram, then the sums) over
    ``N``."""
    if isinstance(blocks, SufficientStatistics):
        gram, sums = blocks.moments()
        return np.concatenate([gram[np.triu_indices(gram.shape[0])], sums]) / blocks.n_samples
    gram = np.asarray(blocks.gram, dtype=float)
    cross = np.asarray(blocks.cross, dtype=float)
    target = np.asarray(blocks.target_gram, dtype=float)
    M = np.block([[gram, cross.T], [cross, target]]) / float(blocks.n_samples)
    return M[np.triu_indices(M.shape[0])]


def occupancy_attack(record: FleetRecord, *, max_delay: int = 3,
                     statistics: Sequence[Sequence[Any]] | None = None, cv: str = "household",
                     folds: int = 5, rng: np.random.Generator | int | None = None
                     ) -> OccupancyAttackResult:
    """Cross-validated occupancy inference from per-day statistics.

    Parameters
    ----------
    record : FleetRecord
        Fleet operation data with the ground-truth occupancy (``record.occupancy``).
    max_delay : int, default 3
        ``R`` of the statistics computed when ``statistics`` is not given.
    statistics : nested sequence, optional
        ``statistics[household][day]``: what each household shared that day (plain
        :func:`daily_statistics` by default; :class:`dmdidc.SufficientStatistics`, plain or
        privatized, from the pipeline).
    cv : {"household", "day"}, default "household"
        Cross-validate by household (unseen houses) or by day (stratified, pooled).
    folds : int, default 5
    rng : numpy.random.Generator or int or None
        Shuffles the day folds.

    Returns
    -------
    OccupancyAttackResult

    Raises
    ------
    ParameterError
        For an unknown ``cv``, too few households for the folds, or a single class (overall
        or in a training fold).
    DimensionError
        If ``statistics`` does not have one entry per household and day.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    if cv not in _CV:
        raise ParameterError(f"cv must be one of {_CV}; got {cv!r}")
    folds = check_integer("folds", folds, minimum=2)
    if statistics is None:
        statistics = daily_statistics(record, max_delay)
    H, days = len(record.households), record.days
    if len(statistics) != H or any(len(s) != days for s in statistics):
        raise DimensionError(f"statistics must hold {days} days for each of {H} households")
    outdoor = record.D[0, 0].reshape(days, -1).mean(axis=1)
    features, labels, groups = [], [], []
    for i in range(H):
        rows = np.array([statistics_features(b) for b in statistics[i]])
        rows = np.column_stack([rows, outdoor])
        spread = rows.std(axis=0)
        features.append((rows - rows.mean(axis=0)) / np.where(spread > 0, spread, 1.0))
        labels.append(record.occupancy[i].occupied_day)
        groups.append(np.full(days, i))
    X, y, g = np.concatenate(features), np.concatenate(labels), np.concatenate(groups)
    if np.unique(y).size < 2:
        raise ParameterError("every day has the same occupancy label; nothing to infer")
    if cv == "household":
        if H < folds:
            raise ParameterError(f"cv='household' with {folds} folds needs >= {folds} "
                                 f"households; got {H}")
        splits = GroupKFold(n_splits=folds).split(X, y, g)
    else:
        seed = int(as_generator(rng).integers(2**31 - 1))
        splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(X, y)
    predicted = np.empty_like(y)
    scores = []
    for train, test in splits:
        if np.unique(y[train]).size < 2:
            raise ParameterError(f"a training fold holds days of one class only ({y.size} "
                                 f"household-days, {int(y.sum())} occupied); use more "
                                 f"households or days")
        # Newton steps: the same convex optimum as lbfgs, ~5x faster for many days, few features
        model = LogisticRegression(class_weight="balanced", solver="newton-cholesky",
                                   max_iter=200)
        model.fit(X[train], y[train])
        predicted[test] = model.predict(X[test])
        if np.unique(y[test]).size == 2:            # a one-class fold has no balanced accuracy
            scores.append(float(balanced_accuracy_score(y[test], predicted[test])))
    return OccupancyAttackResult(float(balanced_accuracy_score(y, predicted)), tuple(scores),
                                 float(y.mean()), int(y.size), cv, read_only(y),
                                 read_only(predicted), read_only(g))
