"""Output feedback is right or loud: the loop's sensors must be given, and a state controller of
an output model does not act on the plant's states."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from controllers import (
    DelayedKalmanObserver,
    DelayedMPC,
    OutputFeedback,
    closed_loop_matrix,
    make_controller,
    spectral_radius,
)
from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.errors import ParameterError
from simulations.closed_loop import simulate_closed_loop


def random_plant(rng, n=None, m=None):
    n = int(rng.integers(2, 5)) if n is None else n
    m = int(rng.integers(1, 3)) if m is None else m
    A_c = rng.standard_normal((n, n)) - 1.0 * np.eye(n)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)),
                                        rng.uniform(0.0, 1.5, m), float(rng.uniform(0.3, 1.0)))


class OutputModel:
    """An output model as the controllers read it: a plant in its own basis and its ``C``."""

    def __init__(self, plant, C):
        self.model_, self.C = plant, np.asarray(C, dtype=float)


@pytest.mark.parametrize("seed", range(4))
def test_an_output_loop_without_its_sensors_is_refused_even_with_as_many_outputs_as_states(
        seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(rng)
    n = plant.n_states
    C = rng.standard_normal((n, n))                      # as many sensors as states
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loop = OutputFeedback(make_controller("fractional", plant),
                              DelayedKalmanObserver(plant, C=C))
    x0 = rng.standard_normal(n)
    with pytest.raises(ParameterError, match=rf"measurement_matrix is missing; pass "
                                             rf"measurement_matrix=C.*np.eye\({n}\)"):
        simulate_closed_loop(plant, loop, x0, 20)
    run = simulate_closed_loop(plant, loop, x0, 20, measurement_matrix=C)
    assert np.all(np.isfinite(run.states))


@pytest.mark.parametrize("seed", range(4))
def test_a_state_controller_of_an_output_model_does_not_act_on_the_plants_states(seed):
    rng = np.random.default_rng(seed)
    plant = random_plant(rng)
    n = plant.n_states
    T = rng.standard_normal((n, n)) + 3 * np.eye(n)      # the model's basis: z = T x
    model_plant = DelayedPlant(T @ plant.A_d @ np.linalg.inv(T),
                               np.einsum("ij,kjm->kim", T, plant.B_blocks), plant.dt)
    C_true = rng.standard_normal((1, n))
    model = OutputModel(model_plant, C_true @ np.linalg.inv(T))
    x0 = rng.standard_normal(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = [make_controller(name, model) for name in ("exact", "naive")]
        built.append(DelayedMPC(model, horizon=4))
    for controller in built:
        assert np.allclose(controller.output_matrix, model.C)
        for C in (None, C_true):
            with pytest.raises(ParameterError, match=r"designed on an output model.*"
                                                     r"OutputFeedback\(controller, "
                                                     r"DelayedKalmanObserver\(model\)\)"):
                simulate_closed_loop(plant, controller, x0, 10, measurement_matrix=C)
        # on its own model (a nominal check) its states are its own
        simulate_closed_loop(model_plant, controller, T @ x0, 10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loop = OutputFeedback(controller, DelayedKalmanObserver(model))
        run = simulate_closed_loop(plant, loop, x0, 10, measurement_matrix=C_true)
        assert np.all(np.isfinite(run.states))
    for controller in built[:2]:
        with pytest.raises(ParameterError, match="designed on an output model"):
            spectral_radius(plant, controller)
        closed_loop_matrix(model_plant, controller)            # its own model: fine
        # re-designed on a plain model, it acts on that model's states
        assert controller.with_model(model_plant).output_matrix is None
        assert controller.with_model(model).output_matrix is not None
    assert built[2].with_model(model_plant).output_matrix is None
    # a controller of a plant of the same states records none
    assert make_controller("fractional", plant).output_matrix is None


def test_the_identified_output_models_controller_is_refused_on_the_plants_states():
    plant = DelayedPlant.from_continuous([[0, 1.0], [-1.0, -0.3]], [[0.0], [1.0]], 0.65, 0.5)
    U = random_excitation(1, 800, rng=0)
    X = plant.simulate(np.zeros(2), U)
    Y = X[:, :-1] + 0.01 * np.random.default_rng(1).standard_normal((2, 800))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = OutputDMDidc(max_delay=4).fit(Y, U, dt=0.5)
    controller = make_controller("fractional", est)
    with pytest.raises(ParameterError, match="designed on an output model"):
        simulate_closed_loop(plant, controller, [1.0, 0.0], 50)
    loop = OutputFeedback(controller, DelayedKalmanObserver(est))
    run = simulate_closed_loop(plant, loop, [1.0, 0.0], 100, measurement_matrix=np.eye(2))
    assert run.final_norm < 0.05
