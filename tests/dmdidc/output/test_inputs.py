"""Collinear or copied input channels are refused by OutputDMDidc; results before a fit say so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import OutputDMDidc, random_excitation
from dmdidc.errors import InsufficientExcitationError, NotFittedError
from dmdidc.output.inputs import refuse_collinear_inputs
from simulations.studies.data_kinds import DATA_KINDS, make_data, random_plant


def _outputs(plant, U, seed):
    """Two sensors of the plant's states at 30 dB."""
    rng = np.random.default_rng([seed, 15])
    C = rng.standard_normal((2, plant.n_states))
    Y = C @ plant.simulate(np.zeros(plant.n_states), U)[:, :-1]
    return Y + 0.03 * Y.std(axis=1, keepdims=True) * rng.standard_normal(Y.shape)


def _dependent(U, how):
    u = U[0]
    if how == "multiple":                       # the trial's case: u_2 = 2 u_1
        return np.vstack([u, 2.0 * u, U[2]])
    if how == "combination":                    # u_3 = u_1 - 0.5 u_2
        return np.vstack([U[0], U[1], U[0] - 0.5 * U[1]])
    shift = int(how)                            # u_2 = -u_1 delayed by `shift` samples
    return np.vstack([u, -np.r_[np.zeros(shift), u[:-shift]], U[2]])


@pytest.mark.parametrize("how", ["multiple", "combination", "1", "3"])
def test_dependent_or_copied_channels_are_refused_naming_them(how):
    """Review finding: u_2 = 2 u_1 gave two channels each other's delays (0.656 / 1.365 s
    against 1.353 / 0.682 s) with tight intervals and no warning."""
    plant = random_plant(1302, n_states=3, n_inputs=3)
    U = _dependent(random_excitation(3, 3000, rng=2), how)
    Y = _outputs(plant, U, 2)
    named = "linearly dependent" if how in ("multiple", "combination") else (
        f"delayed by {how} sample")
    with pytest.raises(InsufficientExcitationError, match=named):
        OutputDMDidc(max_delay=4).fit(Y, U, dt=0.5)
    stream = OutputDMDidc(max_delay=4).partial_fit(Y, U, dt=0.5)
    with pytest.raises(NotFittedError, match=rf"not enough data streamed yet: .*{named}"):
        _ = stream.delay
    with pytest.raises(InsufficientExcitationError, match=named):
        stream.delay_ci()


@pytest.mark.parametrize("kind", DATA_KINDS)
def test_independent_inputs_of_every_kind_are_not_refused(kind):
    for seed in range(6):
        plant = random_plant(seed, n_states=3, n_inputs=2, max_delay=4)
        data = make_data(kind, plant, samples=3000, rng=seed)
        inputs = data.U if isinstance(data.U, list) else [data.U]
        for R in (1, 4, 10):
            refuse_collinear_inputs([np.asarray(U) for U in inputs], R)


def test_nearly_collinear_inputs_are_fitted():
    """u_2 = u_1 + 1 % of an independent signal: far from the tolerance, and identifiable."""
    plant = random_plant(1302, n_states=3, n_inputs=2)
    U = random_excitation(2, 3000, rng=2)
    U = np.vstack([U[0], U[0] + 0.01 * U[1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = OutputDMDidc(max_delay=4).fit(_outputs(plant, U, 2), U, dt=0.5)
    assert np.all(np.abs(est.delay - plant.delay) < 0.15 * plant.dt)


def test_results_before_a_fit_raise_not_fitted():
    est = OutputDMDidc(max_delay=2)
    for name in ("delay", "A_c", "order_", "noise_std_"):
        with pytest.raises(NotFittedError, match=f"{name} is not available: this OutputDMDidc "
                                                 f"is not fitted yet"):
            getattr(est, name)
    assert not hasattr(est, "order_")
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        _ = est.no_such_thing


def test_an_error_inside_a_fitted_models_property_is_not_masked():
    """Review finding: __getattr__ turned any AttributeError raised inside a property of a
    fitted model into 'not fitted yet'."""
    plant = random_plant(0, n_states=2, n_inputs=1)
    U = random_excitation(1, 1500, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = OutputDMDidc(max_delay=4).fit(_outputs(plant, U, 0), U, dt=0.5)
    del est.detrend                         # what the _offset property reads
    with pytest.raises(AttributeError, match="detrend") as caught:
        _ = est._offset
    assert not isinstance(caught.value, NotFittedError)
