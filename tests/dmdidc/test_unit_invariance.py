"""The fit is the same in any units of the states: ``fit(S X)`` for a diagonal ``S`` gives
the same delays, modes, intervals and verdicts as ``fit(X)``, and ``S``-scaled ``B_c``.

Unweighted, the delay fit let the state in the largest units decide (a record in K, Pa and
m^3/s read a delay of 2.30 T as 2.82 T with a confident interval), and the IV projection's
pseudo-inverse cut regressors in micro-units (the block test 2.9 -> 50, a false alarm).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DMDidc
from simulations.studies.data_kinds import make_data, random_plant


def _fit(X, U, estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=4, estimator=estimator).fit(X, U, dt=0.5)


def _failed(est):
    return sorted(c.name for c in est.diagnostics_.failed)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["white", "closed_loop"])
def test_fits_in_other_units_of_the_states_agree(seed, kind):
    rng = np.random.default_rng(seed)
    plant = random_plant(rng)
    data = make_data(kind, plant, samples=3000, rng=rng)
    scale = 10.0 ** rng.uniform(-3, 3, plant.n_states)
    for estimator in ("auto", "ls"):
        base, moved = _fit(data.X, data.U, estimator), _fit(scale[:, None] * data.X, data.U,
                                                            estimator)
        assert base.diagnostics_.estimator == moved.diagnostics_.estimator
        assert _failed(base) == _failed(moved)
        np.testing.assert_allclose(moved.delay, base.delay, rtol=1e-6, atol=1e-9)
        if not base.model_.has_continuous:
            assert not moved.model_.has_continuous
            continue
        np.testing.assert_allclose(np.sort_complex(np.linalg.eigvals(moved.A_c)),
                                   np.sort_complex(np.linalg.eigvals(base.A_c)), rtol=1e-6)
        np.testing.assert_allclose(moved.B_c, scale[:, None] * base.B_c, rtol=1e-5,
                                   atol=1e-9 * np.abs(scale[:, None] * base.B_c).max())
        a, b = base.delay_ci(), moved.delay_ci()
        np.testing.assert_allclose(b.low, a.low, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(b.high, a.high, rtol=1e-5, atol=1e-9)


def test_delay_fit_weights_are_checked_where_they_enter():
    from dmdidc.errors import DimensionError, ParameterError
    from dmdidc.inference.branches import recover_branch
    from dmdidc.inference.recovery import pair_delay, recover_channel
    from dmdidc.model import DelayedPlant

    plant = DelayedPlant.from_continuous([[-1.0, 2.0], [-2.0, -1.0]], [[1.0], [0.5]], 0.7, 0.5)
    columns = plant.B_blocks[:, :, 0]
    for bad, error in (([0.0, 0.0], ParameterError), ([1.0, -1.0], ParameterError),
                       ([1.0], DimensionError)):
        with pytest.raises(error, match="weights"):
            pair_delay(plant.A_c, columns, 1, 0.5, weights=np.array(bad))
        with pytest.raises(error, match="weights"):
            recover_channel(plant.A_c, columns, 0.5, 1, weights=np.array(bad))
        with pytest.raises(error, match="weights"):
            recover_branch(plant.A_d, plant.B_blocks, 0.5, active=plant.B_blocks.any(axis=1),
                           block_variance=0.0, weights=bad)
    # any positive weights recover exact blocks exactly
    assert pair_delay(plant.A_c, columns, 1, 0.5, weights=np.array([1e-3, 1e3]))[1] == \
        pytest.approx(0.7, abs=1e-9)
