"""DMDidc(svd_rank=r) in the sensors' space: offsets, names, model files."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DMDidc, random_excitation
from simulations.studies.data_kinds import random_plant

T, R, SENSORS, STATES = 0.5, 3, 600, 3


def _sensors(seed: int, K: int = 1200, noise: float = 0.01):
    """A random plant seen by many sensors, ``X = C z + noise``, with the sensor matrix."""
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=STATES, n_inputs=2, dt=T, max_delay=R,
                         delay_periods=(0.2, 2.8))
    U = random_excitation(2, K, rng=rng)
    C = rng.standard_normal((SENSORS, STATES))
    X = C @ plant.simulate(rng.standard_normal(STATES), U)
    return plant, C, X + noise * X.std() * rng.standard_normal(X.shape), U


def _fit(X, U, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=R, svd_rank=STATES, **params).fit(X, U, dt=T)


def _angle(basis, modes):
    """Largest principal angle's sine between span(basis) and span(modes)."""
    Q = np.linalg.qr(basis)[0]
    return np.linalg.norm(Q - modes @ (modes.T @ Q), 2)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sensor_offsets_take_no_pod_mode(seed):
    """Finding 1 of the high-dimensional trial: uncentred, a sensor offset (3 sd per sensor)
    took one of the r modes (angle to the sensors' subspace 0.003 -> 1, DC gain 10 % off, no
    warning).  The POD now centres the snapshots (detrend="auto"): the offset data's fit is
    the fit of the mean-subtracted data, and its predictions those plus the mean."""
    plant, C, X, U = _sensors(seed)
    offset = 3 * X.std() * np.random.default_rng(seed + 100).standard_normal((SENSORS, 1))
    shifted = _fit(X + offset, U)
    centred = _fit(X + offset - (X + offset).mean(axis=1, keepdims=True), U)
    clean = _fit(X, U)
    assert _angle(C, shifted.modes_) < 0.05
    assert _angle(clean.modes_, shifted.modes_) < 1e-6     # the same snapshots, centred
    spread = X.std()
    V = random_excitation(2, 40, rng=seed)
    x0 = X[:, 0] + offset[:, 0]
    P = shifted.predict(x0, V)
    mean = (X + offset).mean(axis=1)
    np.testing.assert_allclose(P, centred.predict(x0 - mean, V) + mean[:, None],
                               atol=1e-6 * spread)
    np.testing.assert_allclose(P, clean.predict(X[:, 0], V) + offset, atol=1e-6 * spread)
    np.testing.assert_allclose(np.sort_complex(shifted.eigs), np.sort_complex(clean.eigs),
                               atol=1e-8)
    np.testing.assert_allclose(shifted.delay, plant.delay, atol=0.05 * T)


@pytest.mark.parametrize("seed", [4, 5])
def test_streamed_pod_centres_as_the_batch_fit(seed):
    """partial_fit's incremental POD centres on the running mean as fit does: on offset data
    the streamed modes, eigenvalues and sensor-space predictions agree with the batch fit's."""
    plant, C, X, U = _sensors(seed)
    X = X + 3 * X.std() * np.random.default_rng(seed).standard_normal((SENSORS, 1))
    batch = _fit(X, U)
    stream = DMDidc(max_delay=R, svd_rank=STATES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in range(0, U.shape[1], 300):
            stream.partial_fit(X[:, a:a + 301], U[:, a:a + 300], dt=T)
    assert _angle(batch.modes_, stream.modes_) < 1e-4
    assert _angle(C, stream.modes_) < 0.05
    np.testing.assert_allclose(np.sort_complex(stream.eigs), np.sort_complex(batch.eigs),
                               rtol=2e-3)
    np.testing.assert_allclose(stream.delay, plant.delay, atol=0.05 * T)
    V = random_excitation(2, 40, rng=seed)
    P, Q = stream.predict(X[:, 0], V), batch.predict(X[:, 0], V)
    assert np.abs(P - Q).max() < 1e-2 * np.abs(Q - Q.mean(axis=1, keepdims=True)).max()
