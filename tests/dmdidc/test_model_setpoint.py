"""DelayedPlant.with_operating_point: a requested equilibrium, checked (walkthrough finding 13)."""

from __future__ import annotations

import numpy as np
import pytest

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from dmdidc import DelayedPlant


def _plant(seed, operating_point=True):
    """A random stable 3-state, 2-input plant with fractional delays, around a random physical
    operating point (or none)."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((3, 3)) - 2.0 * np.eye(3)
    B_c = rng.standard_normal((3, 2))
    delay = rng.uniform(0.2, 2.0, 2)
    base = DelayedPlant.from_continuous(A_c, B_c, delay, 0.5)
    if not operating_point:
        return base, rng
    u_op = rng.uniform(10.0, 50.0, 2)
    x_op = np.linalg.solve(np.eye(3) - base.A_d, base.B_d @ u_op)
    return DelayedPlant.from_continuous(A_c, B_c, delay, 0.5,
                                        operating_point=(x_op, u_op)), rng


def _is_equilibrium(plant):
    op = plant.operating_point
    return np.allclose(plant.A_d @ op.state + plant.B_d @ op.input, op.state,
                       rtol=1e-9, atol=1e-9 * max(1.0, np.abs(op.state).max()))


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("physical", [True, False])
def test_an_input_or_a_reachable_state_gives_an_equilibrium(seed, physical):
    plant, rng = _plant(seed, physical)
    u = rng.uniform(0.0, 60.0, 2)
    moved = plant.with_operating_point(input=u)
    assert _is_equilibrium(moved)
    np.testing.assert_array_equal(moved.operating_point.input, u)
    np.testing.assert_array_equal(moved.A_d, plant.A_d)
    np.testing.assert_array_equal(moved.delay, plant.delay)
    # the state it holds, asked for alone, gives the same input back
    back = plant.with_operating_point(state=moved.operating_point.state)
    np.testing.assert_allclose(back.operating_point.input, u, rtol=1e-8)
    both = plant.with_operating_point(moved.operating_point.state, u)
    assert both.operating_point.state.tolist() == moved.operating_point.state.tolist()


@pytest.mark.parametrize("seed", range(8))
def test_a_state_no_input_holds_is_refused_with_the_nearest(seed):
    # three states, two inputs: a generic state is not an equilibrium
    plant, rng = _plant(seed)
    wanted = plant.operating_point.state + rng.normal(0.0, 1.0, 3)
    with pytest.raises(ParameterError, match=r"is not an equilibrium of the model .*2 "
                                             r"input\(s\) for 3 states.*holds"):
        plant.with_operating_point(state=wanted)
    u = plant.operating_point.input + 1.0
    with pytest.raises(ParameterError, match="not an equilibrium"):
        plant.with_operating_point(state=plant.operating_point.state, input=u)


def test_bad_requests_are_named():
    plant, _ = _plant(0)
    with pytest.raises(ParameterError, match="needs the requested state=, input="):
        plant.with_operating_point()
    with pytest.raises(DimensionError, match=r"input has shape \(3,\); expected \(2,\)"):
        plant.with_operating_point(input=[1.0, 2.0, 3.0])
    with pytest.raises(NonFiniteError):
        plant.with_operating_point(state=[np.nan, 0.0, 0.0])
    with pytest.raises(ParameterError, match="rtol"):
        plant.with_operating_point(input=[1.0, 2.0], rtol=0.0)
    integrator = DelayedPlant.from_continuous([[0.0]], [[1.0]], 0.3, 0.5)
    with pytest.raises(ParameterError, match="eigenvalue at 1"):
        integrator.with_operating_point(input=[1.0])
    assert integrator.with_operating_point(state=[5.0]).operating_point.input.tolist() == [0.0]


def test_an_inconsistent_pair_is_not_blamed_on_too_few_inputs():
    # review: with as many inputs as states the refusal said only some states can be held
    plant = DelayedPlant.from_continuous([[-1.0, 0.0], [0.0, -0.5]], np.eye(2), [0.3, 0.6], 0.5)
    with pytest.raises(ParameterError, match="the pair is not consistent") as info:
        plant.with_operating_point(state=[1.0, 1.0], input=[0.0, 0.0])
    assert "only some states" not in str(info.value)


def test_shifted_by_adds_the_point_to_the_fitted_operating_point_and_keeps_the_rest():
    from dmdidc import DelayedPlant, ModelInfo

    plant = DelayedPlant.from_continuous([[-1.0, 0.2], [0.0, -0.5]], [[1.0], [0.5]], delay=0.7,
                                         dt=0.5)
    plant = plant.with_operating_point(input=[2.0]).with_info(
        ModelInfo(("a", "b"), ("u",), ("K", "K"), ("W",)))
    shifted = plant.shifted_by([20.0, 21.0], [1.0])
    np.testing.assert_allclose(shifted.operating_point.state,
                               plant.operating_point.state + [20.0, 21.0])
    np.testing.assert_allclose(shifted.operating_point.input, [3.0])
    assert shifted.info == plant.info
    np.testing.assert_array_equal(shifted.delay_, plant.delay_)
    # an equilibrium of the shifted model in physical values, as the fitted one of deviations
    op = shifted.operating_point
    np.testing.assert_allclose(shifted.A_d @ (op.state - [20.0, 21.0])
                               + shifted.B_d @ (op.input - [1.0]),
                               op.state - [20.0, 21.0], atol=1e-9)
    with pytest.raises(ValueError, match="state"):
        plant.shifted_by([1.0], [1.0])
