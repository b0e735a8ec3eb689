"""From a regression to the identified plant: which blocks act, the continuous model, the
operating point.

:func:`identified_model` is the last step of every fit (data, streamed chunks or statistics):
the block test decides each channel's whole delay, the model keeps the blocks ``w`` and
``w + 1`` (:func:`~dmdidc.inference.blocks.kept_blocks`), the continuous plant and the
fractional delays are recovered with the logarithm the data support
(:func:`~dmdidc.inference.branches.recover_branch`), and the operating point of an affine fit
is attached (:func:`~dmdidc.inference.offset.operating_point_of`).  Without a real logarithm
the model is the discrete one with the significant blocks, and the error says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmdidc.errors import LogarithmError
from dmdidc.inference.blocks import (
    BlockTest,
    block_test,
    kept_blocks,
    restricted_coefficients,
)
from dmdidc.inference.branches import recover_branch
from dmdidc.inference.diagnostics import logarithm_evidence
from dmdidc.inference.offset import operating_point_of
from dmdidc.inference.recovery import finite_recovery, solution_weights
from dmdidc.model import DelayedPlant
from dmdidc.regression.solution import coefficient_blocks

__all__ = ["Identified", "identified_model"]


@dataclass(frozen=True, eq=False)
class Identified:
    """The plant a fit identified, with the decisions behind it.

    Attributes
    ----------
    test : BlockTest
    kept : ndarray of bool, shape (R + 1, m)
        The blocks the model keeps (its restriction).
    model : DelayedPlant
    log_error : LogarithmError or None
        Why there is no continuous model, if there is none.
    block_variance : float or None
        Variance of one kept block entry (the branch choice's noise level; ``None`` without a
        continuous model).
    """

    test: BlockTest
    kept: np.ndarray
    model: DelayedPlant
    log_error: LogarithmError | None
    block_variance: float | None


def _restricted(solution, n: int, m: int, R: int, kept: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    return coefficient_blocks(restricted_coefficients(solution, n, kept), n, m, R)


def identified_model(outcome, *, n_states: int, n_inputs: int, max_delay: int, dt: float,
                     significance: float, block_rtol: float | None) -> Identified:
    """The identified plant of a fit (module notes).

    Parameters
    ----------
    outcome : dmdidc.fitting.FitOutcome
        The regression and what the fit decided (a note is added when an alias is chosen).
    n_states, n_inputs, max_delay : int
    dt : float
    significance : float
        Family-wise level of the block test.
    block_rtol : float or None
        The block test's explicit override.

    Returns
    -------
    Identified
    """
    n, m, R = n_states, n_inputs, max_delay
    solution = outcome.solution
    test = block_test(solution, n, m, R, significance=significance, block_rtol=block_rtol)
    kept = kept_blocks(test.active)
    A_d, blocks = _restricted(solution, n, m, R, kept)
    variance = solution.standard_errors[:, n:] ** 2
    columns = kept.reshape(-1)                 # column n + j m + i is block j, channel i
    block_variance = float(np.mean(variance[:, columns])) if columns.any() else 0.0
    try:
        A_c, B_c, delay = finite_recovery(recover_branch, A_d, blocks, dt, active=test.active,
                                          block_variance=block_variance, notes=outcome.notes,
                                          weights=solution_weights(solution))
    except LogarithmError as exc:
        evidence = logarithm_evidence(solution, A_d)
        log_error = LogarithmError(f"{evidence}. {exc}" if evidence else str(exc))
        # No fractional delay to recover: the discrete model keeps the significant blocks.
        A_d, blocks = _restricted(solution, n, m, R, test.active)
        model = DelayedPlant(A_d, blocks, dt, continuous_note=str(log_error),
                             operating_point=operating_point_of(outcome, A_d, blocks))
        return Identified(test, test.active, model, log_error, None)
    model = DelayedPlant.from_continuous(A_c, B_c, delay, dt, max_delay=R,
                                         operating_point=operating_point_of(outcome, A_d,
                                                                            blocks))
    return Identified(test, kept, model, None, block_variance)

