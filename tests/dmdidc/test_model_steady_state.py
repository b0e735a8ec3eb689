"""One steady-state solve (``dmdidc.model.steady_state``): a long simulation settles there, an
integrator is refused by name, and every caller (offset, setpoint, output model, closed loop)
gets the same state."""

from __future__ import annotations

import numpy as np
import pytest

from _toolbox.errors import DimensionError, NoSteadyStateError, ParameterError
from dmdidc import DelayedPlant
from dmdidc.inference.offset import operating_point
from dmdidc.model import INTEGRATOR_RCOND, steady_state
from dmdidc.output.operating_point import input_operating_point

SEEDS = range(6)


def _stable_plant(seed):
    """A random stable 3-state, 2-input plant with fractional delays (modes of time constants
    0.5 to 5 s, non-normal), sampled at 0.5 s."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((3, 3)) + 2.0 * np.eye(3)
    A_c = basis @ np.diag(-rng.uniform(0.2, 2.0, 3)) @ np.linalg.inv(basis)
    B_c = rng.standard_normal((3, 2))
    plant = DelayedPlant.from_continuous(A_c, B_c, rng.uniform(0.2, 2.0, 2), 0.5)
    return plant, rng


def _settling_steps(A_d, tolerance=1e-13):
    """Steps after which a transient of A_d has decayed below ``tolerance`` (with a margin for
    the non-normal growth before the decay)."""
    radius = np.max(np.abs(np.linalg.eigvals(A_d)))
    return int(np.ceil(np.log(tolerance) / np.log(radius))) + 200


@pytest.mark.parametrize("seed", SEEDS)
def test_a_long_simulation_settles_at_the_steady_state(seed):
    plant, rng = _stable_plant(seed)
    u = rng.uniform(-5.0, 5.0, 2)
    K = _settling_steps(plant.A_d)
    X = plant.simulate(rng.standard_normal(3), np.tile(u[:, None], K))
    expected = plant.steady_state(u)
    scale = np.linalg.norm(expected) + np.linalg.norm(X[:, 0])
    assert np.linalg.norm(X[:, -1] - expected) <= 1e-9 * scale
    # the plant's own matrices: the state is at rest there
    assert np.linalg.norm(plant.A_d @ expected + plant.B_d @ u - expected) <= \
        1e-12 * np.linalg.norm(expected) * np.linalg.cond(np.eye(3) - plant.A_d)


@pytest.mark.parametrize("seed", SEEDS)
def test_an_offset_settles_with_the_input(seed):
    """x_{k+1} = A_d x_k + B_d u + c, iterated: the recursion settles at steady_state(u, c)."""
    plant, rng = _stable_plant(seed)
    u, c = rng.uniform(-5.0, 5.0, 2), rng.uniform(-3.0, 3.0, 3)
    x = np.zeros(3)
    for _ in range(_settling_steps(plant.A_d)):
        x = plant.A_d @ x + plant.B_d @ u + c
    expected = plant.steady_state(u, offset=c)
    assert np.linalg.norm(x - expected) <= 1e-9 * np.linalg.norm(expected)
    # linear in the forcing: the input's and the offset's parts add
    np.testing.assert_allclose(expected, plant.steady_state(u) + steady_state(plant.A_d, c),
                               rtol=1e-9, atol=1e-12 * np.linalg.norm(expected))


@pytest.mark.parametrize("seed", SEEDS)
def test_every_caller_gets_the_same_steady_state(seed):
    plant, rng = _stable_plant(seed)
    u, c = rng.uniform(-5.0, 5.0, 2), rng.uniform(-3.0, 3.0, 3)
    expected = plant.steady_state(u, offset=c)
    # the offset test's operating point of an affine fit
    assert np.array_equal(operating_point(plant.A_d, plant.B_blocks, c, u), expected)
    # a setpoint given by its input alone
    held = plant.with_operating_point(input=u).operating_point.state
    np.testing.assert_allclose(held, plant.steady_state(u), rtol=1e-12,
                               atol=1e-12 * np.linalg.norm(held))
    # the output model's equilibrium: from the continuous matrices, -A_c^-1 B_c u
    point = input_operating_point(plant.A_c, plant.B_c, plant.dt, u)
    continuous = -np.linalg.solve(plant.A_c, plant.B_c @ u)
    tolerance = 1e-10 * np.linalg.cond(plant.A_c) * np.linalg.norm(continuous)
    assert np.linalg.norm(point.state - continuous) <= tolerance
    assert np.linalg.norm(point.state - plant.steady_state(u)) <= tolerance


def test_an_integrator_has_no_steady_state_and_says_which_eigenvalue():
    integrator = DelayedPlant.from_continuous([[0.0, 0.0], [1.0, -1.0]], [[1.0], [0.0]],
                                              0.3, 0.5)
    with pytest.raises(NoSteadyStateError, match=r"eigenvalue at 1, an integrator \(1,") as info:
        integrator.steady_state([1.0])
    assert isinstance(info.value, ParameterError) and isinstance(info.value, ValueError)
    assert "state drift" in str(info.value) and "detrend" in str(info.value)
    # the callers: a setpoint says what to give instead; the offset test keeps the mean state
    with pytest.raises(NoSteadyStateError, match="give state= as well"):
        integrator.with_operating_point(input=[1.0])
    assert input_operating_point(integrator.A_c, integrator.B_c, 0.5, np.array([1.0])) is None


def test_an_eigenvalue_within_rounding_of_one_is_an_integrator():
    """An identified integrator's eigenvalue is 1 only to rounding: 1 - 1e-12 beside a mode at
    0.5 makes I - A_d singular to INTEGRATOR_RCOND (condition number 5e11)."""
    A_d = np.array([[1.0 - 1e-12, 0.3], [0.0, 0.5]])
    with pytest.raises(NoSteadyStateError, match=r"\(0\.999999999999, 1e-12 from 1") as info:
        steady_state(A_d, np.array([1.0, 1.0]), remedy="run it in deviations")
    assert str(info.value).endswith("run it in deviations")
    # I - A_d well conditioned but of rounding size: every eigenvalue within 1e-10 of 1 (here
    # a pair, whose imaginary part is named)
    angle = 1e-10
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    with pytest.raises(NoSteadyStateError, match=r"\(1[+-]1e-10j"):
        steady_state(rotation, np.array([1.0, 0.0]))
    with pytest.raises(NoSteadyStateError, match="an integrator"):
        steady_state(np.array([[1.0 - 1e-9]]), np.array([1.0]))


def test_slow_but_stable_modes_are_no_false_alarm():
    """A mode 1e-6 from 1 (a time constant of a million samples) beside a fast one, or every
    mode that slow, is badly damped, not singular: its steady state is solved."""
    assert 1e-6 > 10 * INTEGRATOR_RCOND
    A_d = np.diag([1.0 - 1e-6, 0.0])
    np.testing.assert_allclose(steady_state(A_d, np.array([1e-6, 1.0])), [1.0, 1.0], rtol=1e-9)
    slow = np.array([[1.0 - 1e-6, 1e-7], [0.0, 1.0 - 2e-6]])
    x = steady_state(slow, np.array([1e-6, 2e-6]))
    np.testing.assert_allclose(slow @ x + [1e-6, 2e-6], x, rtol=1e-12)


def _in_other_units(A_d, forcing, scales):
    """``A_d`` and ``f`` with state ``i`` in units ``scales[i]`` times smaller (``D A D^-1``,
    ``D f``), and the map of a steady state back."""
    return (scales[:, None] * A_d / scales[None, :], scales * forcing,
            lambda x: x / scales)


def _scales(rng, n):
    return 10.0 ** rng.uniform(-4.0, 4.0, n)


def _optimal_condition(A_d):
    """rho(|(I - A_d)^-1| |A_d|): the first-order amplification of a relative rounding of
    A_d's entries in the steady state, in the best units of the states."""
    inverse = np.linalg.inv(np.eye(A_d.shape[0]) - A_d)
    return np.max(np.abs(np.linalg.eigvals(np.abs(inverse) @ np.abs(A_d))))


@pytest.mark.parametrize("seed", range(12))
def test_the_units_of_the_states_change_neither_the_verdict_nor_the_steady_state(seed):
    """Review finding: the integrator test was a singular value of I - A_d, so x2 in mA
    instead of A refused a stable plant.  Random stable non-normal plants with modes 1e-4 to
    0.5 from 1, each state rescaled by 1e-4..1e4: solved, the same state after scaling back
    (to the rounding of the solve: eps times the condition in the best units, and n)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    basis = rng.standard_normal((n, n)) + 2.0 * np.eye(n)
    A_d = basis @ np.diag(1.0 - 10.0 ** rng.uniform(-4.0, -0.3, n)) @ np.linalg.inv(basis)
    forcing = rng.standard_normal(n)
    expected = steady_state(A_d, forcing)
    tolerance = 10 * n * np.finfo(float).eps * _optimal_condition(A_d)
    assert tolerance < 1e-6                            # well posed: a real check
    for _ in range(5):
        scaled, scaled_forcing, back = _in_other_units(A_d, forcing, _scales(rng, n))
        state = back(steady_state(scaled, scaled_forcing))
        assert np.max(np.abs(state - expected)) <= tolerance * np.max(np.abs(expected))


@pytest.mark.parametrize("scale", [1e-4, 1e-2, 1e2, 1e3, 1e4])
def test_a_slow_non_normal_plant_in_other_units_is_solved(scale):
    """The review's repro: eigenvalues 0.99 (twice), x_ss = (1e4, 100) under f = (0, 1), with
    x2 rescaled; refused as an integrator from 1e2 on before."""
    A_d, forcing = np.array([[0.99, 1.0], [0.0, 0.99]]), np.array([0.0, 1.0])
    scaled, scaled_forcing, back = _in_other_units(A_d, forcing, np.array([1.0, 1.0 / scale]))
    state = back(steady_state(scaled, scaled_forcing))
    np.testing.assert_allclose(state, [1e4, 100.0], rtol=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_integrators_stay_refused_in_any_units(seed):
    """The integrators above, and a double integrator (a Jordan block at 1, in a random basis:
    its computed eigenvalues are 1e-8 from 1, beyond a test on their distance), are refused
    with every state rescaled by 1e-4..1e4."""
    rng = np.random.default_rng(seed)
    angle = 1e-10
    basis = rng.standard_normal((3, 3)) + 2.0 * np.eye(3)
    jordan = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.3]])
    integrators = [np.array([[1.0 - 1e-12, 0.3], [0.0, 0.5]]),
                   np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]),
                   np.array([[1.0, 0.0], [0.5, 0.6]]),
                   basis @ jordan @ np.linalg.inv(basis)]
    for A_d in integrators:
        n = A_d.shape[0]
        for _ in range(3):
            scaled, scaled_forcing, _ = _in_other_units(A_d, np.ones(n), _scales(rng, n))
            with pytest.raises(NoSteadyStateError, match="an integrator"):
                steady_state(scaled, scaled_forcing)


def test_wrong_shapes_are_refused_by_name():
    plant, _ = _stable_plant(0)
    with pytest.raises(DimensionError, match=r"input has shape \(3,\); expected \(2,\)"):
        plant.steady_state([1.0, 2.0, 3.0])
    with pytest.raises(DimensionError, match=r"offset has shape \(2,\); expected \(3,\)"):
        plant.steady_state([1.0, 2.0], offset=[1.0, 2.0])
