"""Models that keep their signal names, units, intervals and data provenance (format version 4,
older files still load) and export to python-control with those names."""

import json
import warnings

import numpy as np
import pytest

from dmdidc import (
    FORMAT_VERSION,
    DelayedPlant,
    DimensionError,
    DMDidc,
    IdData,
    LogarithmError,
    ModelInfo,
    ParameterError,
)
from tests.dmdidc.test_data import _data, _random_plant


def _fitted(seed=0, **names):
    plant, X, U = _data(seed, K=800, noise=0.01)
    data = IdData(X + 300.0, U + 1.0, dt=0.5, operating_point=([300.0, 300.0], [1.0]),
                  source="rig 3, 2026-11-26", **names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plant, DMDidc(max_delay=3).fit(data)


def test_model_info_checks_its_fields():
    info = ModelInfo.default(2, 1)
    assert info.state_names == ("x0", "x1") and info.input_units == ("",)
    with pytest.raises(DimensionError, match="one unit per name"):
        ModelInfo(("a",), ("u",), ("K", "Pa"), ("",))
    with pytest.raises(ParameterError, match="must be strings"):
        ModelInfo(("a", 3), ("u",), ("", ""), ("",))
    with pytest.raises(ParameterError, match="no field"):
        info.renamed(colour="red")
    with pytest.raises(ParameterError, match="unknown field"):
        ModelInfo.from_dict({**info.to_dict(), "extra": 1})
    with pytest.raises(DimensionError, match="the plant has 1 and 1"):
        DelayedPlant(np.eye(1), np.ones((1, 1, 1)), 1.0, info=info)
    with pytest.raises(ParameterError, match="info must be a ModelInfo"):
        DelayedPlant(np.eye(1), np.ones((1, 1, 1)), 1.0, info={"state_names": ["a"]})


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_saved_model_keeps_everything(tmp_path, suffix):
    plant, est = _fitted(state_names=["T_in", "T_out"], state_units=["K", "K"],
                         input_names=["heater"], input_units=["kW"])
    path = est.save(tmp_path / f"model{suffix}", level=0.9)
    loaded = DelayedPlant.load(path)
    info = loaded.info
    assert info.state_names == ("T_in", "T_out") and info.input_units == ("kW",)
    np.testing.assert_allclose(loaded.operating_point.state, [300.0, 300.0], rtol=1e-6)
    np.testing.assert_array_equal(loaded.A_d, est.A_d)
    delay = info.intervals["delay"]
    assert info.intervals["level"] == 0.9 and delay["unit"] == "s"
    assert np.all(np.array(delay["low"]) <= est.delay) and np.all(est.delay <= delay["high"])
    assert np.all(np.array(delay["low"]) < plant.delay) and np.all(plant.delay < delay["high"])
    provenance = info.provenance
    assert provenance["data"]["source"] == "rig 3, 2026-11-26"
    assert provenance["data"]["samples"] == 800 and provenance["estimator"]["max_delay"] == 3
    assert "dmdidc_version" in provenance
    if suffix == ".json":
        assert json.loads(path.read_text())["format_version"] == FORMAT_VERSION == 4


def test_array_fits_record_provenance_and_default_names(tmp_path):
    _, X, U = _data(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=3).fit(X, U, dt=0.5)
    info = est.model_.info
    assert info.state_names == ("x0", "x1") and info.provenance["data"] is None
    loaded = DelayedPlant.load(est.save(tmp_path / "m.json", level=None))
    assert loaded.info.intervals is None


def test_version_3_files_still_load(tmp_path):
    plant, est = _fitted(1)
    data = est.model_.to_dict()
    del data["info"]
    data["format_version"] = 3
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = DelayedPlant.load(tmp_path / "old.json")
    assert old.info is None and old.signal_info.state_names == ("x0", "x1")
    np.testing.assert_array_equal(old.B_blocks, est.B_blocks)


def test_discrete_export_has_the_names_and_the_exact_gain():
    plant, est = _fitted(2, state_names=["a", "b"], input_names=["valve"])
    sys = est.to_control()
    assert sys.input_labels == ["valve"] and sys.output_labels == ["a", "b"]
    assert sys.state_labels[:2] == ["a", "b"] and sys.state_labels[2] == "valve[k-1]"
    assert sys.dt == 0.5 and sys.nstates == 2 + 3
    # the DC gain of the sampled model is that of the continuous plant, -A_c^-1 B_c
    np.testing.assert_allclose(np.asarray(sys.dcgain()).reshape(2, 1),
                               -np.linalg.solve(est.A_c, est.B_c), rtol=1e-8)


@pytest.mark.parametrize("seed", range(4))
def test_pade_export_matches_the_delay_at_low_frequency(seed):
    plant = _random_plant(np.random.default_rng(seed), n=3, m=2)
    sys = plant.to_control(form="pade", pade_order=6)
    assert sys.isctime()
    continuous, delay = plant.to_control_continuous()
    np.testing.assert_array_equal(delay, plant.delay)
    for w in (0.05, 0.5, 2.0):                  # well below pade_order / delay (>= 6.7 rad/s)
        exact = np.linalg.solve(1j * w * np.eye(3) - plant.A_c, plant.B_c) * np.exp(
            -1j * w * plant.delay)
        np.testing.assert_allclose(sys(1j * w), exact, rtol=1e-6, atol=1e-9)


def test_continuous_export_needs_a_continuous_model():
    discrete = DelayedPlant(np.array([[-0.5]]), np.ones((1, 1, 1)), 1.0)
    with pytest.raises(LogarithmError, match="continuous python-control model"):
        discrete.to_control(form="pade")
    assert discrete.to_control().nstates == 1
    with pytest.raises(ParameterError, match="form must be"):
        discrete.to_control(form="laplace")
