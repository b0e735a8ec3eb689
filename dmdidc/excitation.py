"""Excitation inputs and a check that recorded data can identify the delayed plant.

Theorem 9.4.5 of the dissertation: for a controllable plant excited by i.i.d. inputs from a
continuous distribution, ``n + m (R + 1)`` regression samples (time steps ``k = R .. K-1``)
make the augmented data matrix (9.50) invertible with probability one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox import validation
from _toolbox.validation import (
    as_generator,
    check_allocation,
    check_finite_array,
    check_integer,
    check_positive,
)
from dmdidc.data import data_arrays
from dmdidc.errors import DimensionError, NonFiniteError, ParameterError
from dmdidc.regression.solution import QRAccumulator
from dmdidc.trajectories import as_trajectories

__all__ = ["ExcitationReport", "check_excitation", "random_excitation", "samples_needed"]


def samples_needed(n_states: int, n_inputs: int, max_delay: int) -> int:
    """Regression samples that suffice, ``n + m (R + 1)`` (Theorem 9.4.5).

    A single trajectory needs ``K = R + n + m (R + 1)`` inputs (the first ``R`` only fill the
    input history).

    Examples
    --------
    >>> samples_needed(2, 2, 3)
    10
    """
    return (check_integer("n_states", n_states, minimum=1)
            + check_integer("n_inputs", n_inputs, minimum=0)     # 0: autonomous data
            * (check_integer("max_delay", max_delay, minimum=0) + 1))


def random_excitation(n_inputs: int, n_steps: int, *, distribution: Any = None,
                      scale: float = 1.0, rng: np.random.Generator | int | None = None
                      ) -> np.ndarray:
    """I.i.d. random excitation inputs, one draw per channel and sampling period.

    Parameters
    ----------
    n_inputs : int
        Number of input channels ``m``.
    n_steps : int
        Number of held inputs ``K``.
    distribution : scipy.stats distribution, callable or None
        A frozen ``scipy.stats`` distribution (anything with ``rvs(size=..., random_state=...)``)
        or a callable ``sampler(rng, shape) -> ndarray``.  Default: standard normal.  Any
        continuous distribution satisfies Theorem 9.4.5.
    scale : float, default 1.0
        Multiplies the draws.
    rng : numpy.random.Generator, int or None
        Random generator or seed.

    Returns
    -------
    U : ndarray, shape (n_inputs, n_steps)

    Raises
    ------
    ParameterError
        A size that is not a positive integer, or an array beyond
        :data:`~_toolbox.validation.ALLOCATION_LIMIT_BYTES` (refused before drawing).

    Examples
    --------
    >>> from scipy import stats
    >>> U = random_excitation(2, 5, distribution=stats.uniform(-1, 2), rng=0)
    >>> U.shape
    (2, 5)
    """
    m = check_integer("n_inputs", n_inputs, minimum=1)
    K = check_integer("n_steps", n_steps, minimum=1)
    scale = check_positive("scale", scale)
    generator = as_generator(rng)
    shape = (m, K)
    largest = validation.ALLOCATION_LIMIT_BYTES // (8 * m)
    check_allocation(f"n_inputs = {m}, n_steps = {K}", shape,
                     accepted=f"n_steps <= {largest} for {m} inputs")
    if distribution is None:
        draws = generator.standard_normal(shape)
    elif hasattr(distribution, "rvs"):
        draws = distribution.rvs(size=shape, random_state=generator)
    elif isinstance(distribution, Callable):
        draws = distribution(generator, shape)
    else:
        raise ParameterError(f"distribution must be a scipy.stats distribution, a callable "
                             f"(rng, shape) -> array, or None; got {type(distribution).__name__}")
    try:
        draws = check_finite_array("the distribution's draws", draws)   # complex: refused
    except (DimensionError, NonFiniteError):
        draws = np.full(np.shape(draws), np.nan)        # the message below says what is wrong
    if draws.shape != shape or not np.all(np.isfinite(draws)):
        raise ParameterError(f"distribution produced an array of shape {draws.shape} with "
                             f"non-finite entries or the wrong shape; expected finite {shape}")
    with np.errstate(over="ignore"):
        scaled = scale * draws
    if not np.all(np.isfinite(scaled)):
        raise ParameterError(f"scale = {scale!r} times the draws (up to "
                             f"{np.max(np.abs(draws)):.3g}) overflows float64; accepted: "
                             f"scale below {np.finfo(float).max / np.max(np.abs(draws)):.3g}")
    return scaled


@dataclass(frozen=True)
class ExcitationReport:
    """How well recorded data excite the DMDidc regression.

    Attributes
    ----------
    n_regressors : int
        Columns of the regression, ``n + m (R + 1)``.
    n_samples : int
        Regression samples available.
    samples_needed : int
        ``n + m (R + 1)`` (Theorem 9.4.5).
    rank : int
        Numerical rank of the column-equilibrated regression matrix.
    smallest_singular_value, largest_singular_value : float
        Extreme singular values of the equilibrated regression matrix.
    condition_number : float
        Their ratio; inf when the data are rank-deficient (the smallest singular value is then
        rounding, and its ratio meaningless).
    """

    n_regressors: int
    n_samples: int
    samples_needed: int
    rank: int
    smallest_singular_value: float
    largest_singular_value: float
    condition_number: float

    @property
    def sufficient(self) -> bool:
        """Full rank with at least the needed number of samples."""
        return self.rank == self.n_regressors and self.n_samples >= self.samples_needed

    def __str__(self) -> str:
        verdict = "sufficient" if self.sufficient else "INSUFFICIENT"
        return (f"excitation {verdict}: rank {self.rank}/{self.n_regressors}, "
                f"{self.n_samples} samples (need {self.samples_needed}), singular values "
                f"[{self.smallest_singular_value:.3g}, {self.largest_singular_value:.3g}], "
                f"condition number {self.condition_number:.3g}")


def check_excitation(X: Any, U: Any = None, max_delay: int | None = None, *,
                     rank_rtol: float = 1e-10) -> ExcitationReport:
    """Report rank, singular values and sample count of the DMDidc regression data.

    Parameters
    ----------
    X : array_like, shape (n, K + 1), list of such, or IdData
    U : array_like, shape (m, K), or list of such (with arrays)
    max_delay : int
        ``R`` (required).
    rank_rtol : float
        Relative singular-value threshold for the rank.

    Returns
    -------
    ExcitationReport

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[-1.0]], [[1.0]], delay=0.5, dt=1.0)
    >>> U = random_excitation(1, 10, rng=1)
    >>> check_excitation(plant.simulate([0.0], U), U, max_delay=1).sufficient
    True
    """
    if max_delay is None:
        raise ParameterError("check_excitation needs max_delay (the delay bound R, periods)")
    R = check_integer("max_delay", max_delay, minimum=0)
    check_positive("rank_rtol", rank_rtol)
    trajectories = as_trajectories(*data_arrays(X, U, caller="check_excitation"))
    n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
    accumulator = QRAccumulator(n, m, R)
    for Xi, Ui in trajectories:
        accumulator.new_trajectory()
        accumulator.update(Xi, Ui)
    singular = accumulator.singular_values()
    rank = int(np.count_nonzero(singular > max(rank_rtol, np.finfo(float).eps * accumulator.p)
                                * singular[0])) if singular[0] > 0 else 0
    smallest = float(singular[-1])
    return ExcitationReport(
        n_regressors=accumulator.p, n_samples=accumulator.n_samples,
        samples_needed=samples_needed(n, m, R), rank=rank, smallest_singular_value=smallest,
        largest_singular_value=float(singular[0]),
        condition_number=(float(singular[0] / smallest) if rank == accumulator.p
                          else float("inf")))
