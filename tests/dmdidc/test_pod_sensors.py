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


def _fit(X, U=None, **params):
    """The svd_rank fit of arrays ``X``, ``U`` or of an IdData ``X``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=R, svd_rank=STATES, **params)
        return est.fit(X) if U is None else est.fit(X, U, dt=T)


def _angle(basis, modes):
    """Largest principal angle's sine between span(basis) and span(modes)."""
    Q = np.linalg.qr(basis)[0]
    return np.linalg.norm(Q - modes @ (modes.T @ Q), 2)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sensor_offsets_take_no_pod_mode(seed):
    """Finding 1 of the high-dimensional trial: uncentred, a sensor offset (3 sd per sensor)
    took one of the r modes (angle to the sensors' subspace 0.003 -> 1, DC gain 10 % off, no
    warning).  The modes are now those of the centred snapshots (detrend="auto"): an
    offset's fit is affine (an operating point) and shift-equivariant, so two offsets'
    predictions differ by the offsets; offset-free data keep their fit through the origin."""
    plant, C, X, U = _sensors(seed)
    rng = np.random.default_rng(seed + 100)
    first, second = (3 * X.std() * rng.standard_normal((SENSORS, 1)) for _ in range(2))
    shifted, other, clean = _fit(X + first, U), _fit(X + second, U), _fit(X, U)
    assert _angle(C, shifted.modes_) < 0.05
    assert _angle(clean.modes_, shifted.modes_) < 1e-6     # the same snapshots, centred
    assert shifted.model_.operating_point is not None
    assert clean.model_.operating_point is None            # no offset, no intercept
    V = random_excitation(2, 40, rng=seed)
    P = shifted.predict(X[:, 0] + first[:, 0], V)
    np.testing.assert_allclose(P - first, other.predict(X[:, 0] + second[:, 0], V) - second,
                               atol=1e-6 * X.std())
    # the offset's fit finds the plant as the offset-free fit does (eigenvalues of A_d within
    # 1e-3, far inside the 1-10 % errors of the uncentred fits)
    np.testing.assert_allclose(np.sort_complex(shifted.eigs), np.sort_complex(clean.eigs),
                               atol=1e-3)
    np.testing.assert_allclose(shifted.delay, plant.delay, atol=0.05 * T)
    truth = C @ plant.simulate(np.linalg.lstsq(C, X[:, 0], rcond=None)[0], V)
    for prediction, fit in ((P - first, shifted), (clean.predict(X[:, 0], V), clean)):
        assert np.abs(prediction - truth).max() < 0.05 * np.abs(truth).max(), fit


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


def _named(seed: int, **options):
    from dmdidc import IdData

    _, C, X, U = _sensors(seed)
    names = [f"probe_{i}" for i in range(SENSORS)]
    return C, IdData(X, U, dt=T, state_names=names, state_units=["K"] * SENSORS,
                     input_names=["heater", "fan"], **options)


def test_svd_rank_fits_an_iddata_with_generic_state_names():
    """Finding 2: svd_rank with any IdData raised, after the whole fit, 'model info names 600
    states and 2 inputs; the plant has 3 and 2'.  The model's states are the POD coordinates
    z0 .. z{r-1} (in the sensors' unit); the sensors' names stay with the modes."""
    C, data = _named(6)
    est = _fit(data)
    info = est.model_.info
    assert info.state_names == ("z0", "z1", "z2") and info.state_units == ("K",) * 3
    assert info.input_names == ("heater", "fan")
    assert info.sensors.names == data.state_names and info.sensors.units == ("K",) * SENSORS
    np.testing.assert_array_equal(info.sensors.modes, est.modes_)
    assert _angle(C, est.modes_) < 0.05
    # a known operating point: its state joins the sensors' centre, its input the model's
    from dmdidc import IdData

    X, U = data.arrays()
    op_state, op_input = np.linspace(10.0, 20.0, SENSORS), np.array([1.0, -2.0])
    shifted = IdData(X + op_state[:, None], U + op_input[:, None], dt=T,
                     operating_point=(op_state, op_input))
    moved = _fit(shifted)
    np.testing.assert_allclose(moved.pod_centre_, est.pod_centre_ + op_state, atol=1e-9)
    V = random_excitation(2, 30, rng=6)
    np.testing.assert_allclose(moved.predict(X[:, 0] + op_state, V + op_input[:, None]),
                               est.predict(X[:, 0], V) + op_state[:, None],
                               atol=1e-6 * X.std())


def test_svd_rank_partial_fit_and_dropped_samples_of_an_iddata():
    """Finding 2: partial_fit(IdData) and IdData(..., missing="drop") (the remedy the
    non-finite error names) with svd_rank raised the same DimensionError."""
    C, data = _named(7)
    stream = DMDidc(max_delay=R, svd_rank=STATES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stream.partial_fit(data)
    assert stream.model_.info.state_names == ("z0", "z1", "z2")
    assert stream.model_.info.sensors.names == data.state_names
    assert _angle(C, stream.modes_) < 0.05
    X, U = data.arrays()
    X = X.copy()
    X[:, 500] = np.nan
    gappy = _fit(type(data)(X, U, dt=T, missing="drop", state_names=data.state_names))
    assert gappy.model_.info.sensors.names == data.state_names
    assert _angle(C, gappy.modes_) < 0.05


def test_cli_identify_with_svd_rank_reads_a_named_archive(tmp_path, capsys):
    """Finding 2: `dmdidc identify hidim.npz --svd-rank 4` of an IdData archive exited 2
    (the same DimensionError) after printing 600 state names."""
    from dmdidc import DelayedPlant
    from simulations.cli import main

    _, data = _named(8)
    data.save(tmp_path / "sensors.npz")
    out = tmp_path / "m.json"
    assert main(["identify", str(tmp_path / "sensors.npz"), "--max-delay", str(R),
                 "--svd-rank", str(STATES), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "probe_599" in printed and "probe_300" not in printed    # shortened, not 600
    assert "states z0 [K], z1 [K], z2 [K] (POD coordinates of the 600 sensors" in printed
    model = DelayedPlant.load(out)
    assert model.info.sensors.names == data.state_names
    assert model.info.input_names == ("heater", "fan")


@pytest.mark.parametrize("suffix,named", [(".json", True), (".npz", True), (".json", False),
                                          (".npz", False)])
def test_a_saved_svd_rank_model_predicts_the_sensors(tmp_path, suffix, named):
    """Finding 3: est.save of an svd_rank model wrote the r-state model in POD coordinates
    without modes_ or centre, so predictions in sensor space could not be reproduced from the
    file.  The file now keeps the SensorMap; its round trip is exact (JSON writes the
    shortest repr of each float), and the loaded model predicts what the estimator does."""
    import json

    from dmdidc import DelayedPlant

    _, data = _named(9)
    X, U = data.arrays()
    X = X + 5 * X.std()                               # an offset: the centre matters
    from dmdidc import IdData

    data = IdData(X, U, dt=T, state_names=data.state_names, state_units=data.state_units)
    est = _fit(data) if named else _fit(X, U)
    path = est.save(tmp_path / f"model{suffix}")
    loaded = DelayedPlant.load(path)
    sensors = loaded.info.sensors
    assert sensors == est.model_.info.sensors
    assert sensors.names == (data.state_names if named else tuple(f"x{i}"
                                                                  for i in range(SENSORS)))
    np.testing.assert_array_equal(sensors.centre, est.pod_centre_)
    assert loaded.info.intervals is not None and loaded.info.state_names[0] == "z0"
    V = random_excitation(2, 30, rng=9)
    np.testing.assert_array_equal(sensors.expand(loaded.simulate(sensors.project(X[:, 0]), V)),
                                  est.predict(X[:, 0], V))
    # a model of the measured states writes no sensors: its file reads as before
    plain = DMDidc(max_delay=R).fit(X[:3], U, dt=T).save(tmp_path / "plain.json")
    assert "sensors" not in json.loads(plain.read_text())["info"]
    assert DelayedPlant.load(plain).info.sensors is None


@pytest.mark.parametrize(("units", "expected"), [(["K", "K", "K"], "K"), (["K", "K", "W"], ""),
                                                 (["", "", ""], "")])
def test_pod_coordinates_take_the_unit_the_sensors_share(units, expected):
    from dmdidc import SensorMap

    modes = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 2)))[0]
    sensors = SensorMap(["a", "b", "c"], units, modes, np.zeros(3))
    assert sensors.coordinate_unit == expected
