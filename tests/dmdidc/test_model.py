"""The DelayedPlant value type (dmdidc.model)."""

from __future__ import annotations

import dataclasses
import json

import control
import numpy as np
import pytest
from scipy.signal import cont2discrete

from dmdidc import (
    FORMAT_VERSION,
    ContinuousModelWarning,
    DelayedPlant,
    DimensionError,
    InconsistentModelError,
    LogarithmError,
    NonFiniteError,
    ParameterError,
    as_plant,
)
from tests.seed_example import A_C as A_SEED
from tests.seed_example import B_C as B_SEED


@pytest.fixture
def plant():
    # Two channels with different fractional delays: w = (1, 0), p = (0.25, 0.6).
    return DelayedPlant.from_continuous(A_SEED, B_SEED, delay=[2.5, 1.2], dt=2.0)


def reference_simulation(A_c, B_c, delay, dt, x0, U, U_past):
    """Sample-exact response by stepping through every instant at which an input switches.

    Within period k, channel j applies u_{k-w_j-1} for s < p_j T and u_{k-w_j} afterwards;
    each piece is propagated with scipy's ZOH (independent of dmdidc).
    """
    n, m = B_c.shape
    K = U.shape[1]
    R = U_past.shape[1]
    u_all = np.concatenate([U_past, U], axis=1)        # column R + k is u_k
    ratio = np.asarray(delay) / dt
    w = np.floor(ratio + 1e-12).astype(int)
    p = ratio - w
    p[np.abs(p) < 1e-12] = 0.0
    X = np.zeros((n, K + 1))
    X[:, 0] = x0
    for k in range(K):
        x = X[:, k]
        cuts = np.unique(np.concatenate([[0.0], p[p > 0] * dt, [dt]]))
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            mid = 0.5 * (a + b)
            u = np.array([u_all[j, R + k - w[j] - (1 if mid < p[j] * dt else 0)]
                          for j in range(m)])
            Ad, Bd, *_ = cont2discrete((A_c, B_c, np.eye(n), np.zeros((n, m))), b - a,
                                       method="zoh")
            x = Ad @ x + Bd @ u
        X[:, k + 1] = x
    return X


# ---------------------------------------------------------------------- immutability
def test_arrays_are_read_only_copies():
    A_d = np.diag([0.5, 0.2])
    B = np.ones((2, 2, 1))
    plant = DelayedPlant(A_d, B, 1.0)
    A_d[0, 0] = 99.0                                     # the caller's array is not shared
    B[0, 0, 0] = 99.0
    assert plant.A_d[0, 0] == 0.5 and plant.B_blocks[0, 0, 0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        plant.A_d[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        plant.B_blocks[...] = 0.0


def test_continuous_arrays_read_only(plant):
    for name in ("A_c", "B_c", "delay"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(plant, name)[0] = 0.0


def test_frozen_fields(plant):
    with pytest.raises(dataclasses.FrozenInstanceError):
        plant.dt = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        plant.A_d = np.eye(2)


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(A_d=np.ones((2, 3)), B_blocks=np.ones((1, 2, 1)), dt=1.0), DimensionError, "square"),
    (dict(A_d=np.eye(2), B_blocks=np.ones((1, 3, 1)), dt=1.0), DimensionError,
     "3 rows; expected 2"),
    (dict(A_d=np.eye(2), B_blocks=np.ones((1, 1, 2, 1)), dt=1.0), DimensionError,
     r"\(R \+ 1, n, m\)"),
    (dict(A_d=[[np.nan, 0.0], [0.0, 1.0]], B_blocks=np.ones((1, 2, 1)), dt=1.0),
     NonFiniteError, "A_d contains 1 NaN"),
    (dict(A_d=np.eye(2), B_blocks=[[[np.inf], [0.0]]], dt=1.0), NonFiniteError, "B_blocks"),
    (dict(A_d=np.eye(2), B_blocks=np.ones((1, 2, 1)), dt=0.0), ParameterError, "dt must be > 0"),
    (dict(A_d=np.eye(2), B_blocks=np.ones((1, 2, 1)), dt=1.0, A_c=np.eye(2)), ValueError,
     "together"),
    (dict(A_d=np.eye(2), B_blocks=np.ones((1, 2, 1)), dt=1.0, A_c=np.eye(3),
          B_c=np.ones((2, 1)), delay=0.0), DimensionError, "A_c has shape"),
    (dict(A_d=np.eye(2), B_blocks=np.ones((1, 2, 1)), dt=1.0, A_c=np.eye(2),
          B_c=np.ones((2, 2)), delay=0.0), DimensionError, "B_c has shape"),
])
def test_constructor_errors(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        DelayedPlant(**kwargs)


def test_two_dimensional_b_is_a_single_block():
    plant = DelayedPlant(np.eye(2) * 0.5, np.ones((2, 3)), 1.0)
    assert plant.B_blocks.shape == (1, 2, 3)
    assert (plant.n_states, plant.n_inputs, plant.max_delay) == (2, 3, 0)


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(A_c=np.ones((2, 3)), B_c=np.ones((2, 1)), delay=0.0), DimensionError, "square"),
    (dict(A_c=np.eye(2), B_c=np.ones((3, 1)), delay=0.0), DimensionError, "3 rows; expected 2"),
    (dict(A_c=np.eye(2), B_c=np.ones((2, 2)), delay=[0.1, 0.2, 0.3]), DimensionError,
     r"one per input"),
    (dict(A_c=np.eye(2), B_c=np.ones((2, 1)), delay=-0.5), ValueError, ">= 0"),
    (dict(A_c=np.eye(2), B_c=np.ones((2, 1)), delay=np.nan), NonFiniteError, "delay"),
    (dict(A_c=np.eye(2), B_c=np.ones((2, 1)), delay=0.1, max_delay=1.5), ValueError,
     "max_delay"),
    (dict(A_c=np.eye(2), B_c=np.ones((2, 1)), delay=0.1, max_delay=True), ValueError,
     "max_delay"),
    (dict(A_c=np.eye(2), B_c=np.ones((2, 1)), delay=0.1, max_delay=-1), ValueError,
     "max_delay"),
])
def test_from_continuous_errors(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        DelayedPlant.from_continuous(dt=1.0, **kwargs)


# ---------------------------------------------------------------------- construction
def test_from_continuous_scalar_delay_equals_vector():
    scalar = DelayedPlant.from_continuous(A_SEED, B_SEED, delay=2.5, dt=2.0)
    vector = DelayedPlant.from_continuous(A_SEED, B_SEED, delay=[2.5, 2.5], dt=2.0)
    np.testing.assert_array_equal(scalar.delay, [2.5, 2.5])
    np.testing.assert_array_equal(scalar.B_blocks, vector.B_blocks)
    np.testing.assert_array_equal(scalar.delay_steps, [1, 1])
    np.testing.assert_allclose(scalar.delay_fraction, [0.25, 0.25], atol=1e-15)


def test_derived_quantities(plant):
    assert (plant.n_states, plant.n_inputs, plant.max_delay) == (2, 2, 2)
    np.testing.assert_array_equal(plant.delay_steps, [1, 0])
    np.testing.assert_allclose(plant.delay_fraction, [0.25, 0.6], atol=1e-14)
    _, Bd_ref, *_ = cont2discrete((A_SEED, B_SEED, np.eye(2), np.zeros((2, 2))), 2.0,
                                  method="zoh")
    np.testing.assert_allclose(plant.B_d, Bd_ref, atol=1e-13)
    # Eigenvalues of expm(2 A_c) = e^{+-2.2 i}.
    np.testing.assert_allclose(np.sort(plant.eigs.imag), [-np.sin(2.2), np.sin(2.2)],
                               atol=1e-14)
    np.testing.assert_allclose(plant.eigs.real, np.cos(2.2), atol=1e-14)
    assert plant.has_continuous


def test_discrete_only_plant_has_no_continuous_model():
    plant = DelayedPlant(np.diag([0.5, 0.2]), np.ones((1, 2, 1)), 1.0)
    assert not plant.has_continuous
    for name in ("A_c", "B_c", "delay", "delay_fraction"):
        with pytest.raises(LogarithmError, match="discrete matrices only"):
            getattr(plant, name)
    with pytest.raises(LogarithmError, match="the fractional controller needs the continuous"):
        plant.require_continuous("the fractional controller")
    noted = DelayedPlant(np.diag([-0.5, 0.2]), np.ones((1, 2, 1)), 1.0,
                         continuous_note="negative real eigenvalue")
    with pytest.raises(LogarithmError, match="negative real eigenvalue"):
        _ = noted.A_c


# ---------------------------------------------------------------------- simulation
def test_simulate_matches_piecewise_continuous_reference(plant):
    rng = np.random.default_rng(5)
    U = rng.standard_normal((2, 25))
    U_past = rng.standard_normal((2, 2))
    x0 = rng.standard_normal(2)
    X = plant.simulate(x0, U, U_past=U_past)
    X_ref = reference_simulation(A_SEED, B_SEED, [2.5, 1.2], 2.0, x0, U, U_past)
    assert X.shape == (2, 26)
    np.testing.assert_allclose(X, X_ref, rtol=1e-10, atol=1e-10)


def test_simulate_default_history_is_zero(plant):
    rng = np.random.default_rng(6)
    U = rng.standard_normal((2, 10))
    np.testing.assert_array_equal(plant.simulate(np.ones(2), U),
                                  plant.simulate(np.ones(2), U, U_past=np.zeros((2, 2))))


def test_simulate_u_past_is_oldest_first():
    # Pure delay of one period on a scalar integrator-free plant: x_{k+1} = a x_k + b u_{k-1}.
    plant = DelayedPlant(np.array([[0.5]]), np.array([[[0.0]], [[1.0]]]), 1.0)
    X = plant.simulate(np.zeros(1), np.array([[0.0, 0.0]]), U_past=np.array([[7.0]]))
    np.testing.assert_allclose(X[0], [0.0, 7.0, 3.5])
    plant2 = DelayedPlant(np.array([[0.0]]), np.array([[[0.0]], [[0.0]], [[1.0]]]), 1.0)
    X2 = plant2.simulate(np.zeros(1), np.array([[0.0, 0.0]]), U_past=np.array([[3.0, 5.0]]))
    np.testing.assert_allclose(X2[0], [0.0, 3.0, 5.0])    # u_{-2} = 3 acts first


@pytest.mark.parametrize("args, error, pattern", [
    ((np.zeros(3), np.zeros((2, 4))), DimensionError, r"x0 has shape \(3,\)"),
    ((np.zeros(2), np.zeros((4, 2))), DimensionError, "U has 4 rows; expected 2"),
    ((np.zeros(2), np.zeros(4)), DimensionError, "U must be 2-dimensional"),
    ((np.zeros(2), np.full((2, 4), np.nan)), NonFiniteError, "U contains 8 NaN"),
    ((np.zeros(2), np.zeros((2, 4)), np.zeros((2, 1))), DimensionError, "U_past has shape"),
])
def test_simulate_errors(plant, args, error, pattern):
    with pytest.raises(error, match=pattern):
        plant.simulate(*args)


# ---------------------------------------------------------------------- lifted form / control
def test_statespace_forced_response_equals_simulate(plant):
    rng = np.random.default_rng(7)
    K = 30
    U = rng.standard_normal((2, K))
    U_past = rng.standard_normal((2, 2))           # u_{-2}, u_{-1}
    x0 = rng.standard_normal(2)
    sys = plant.to_statespace()
    assert isinstance(sys, control.StateSpace)
    assert sys.dt == 2.0 and sys.nstates == 2 + 2 * 2
    assert (sys.ninputs, sys.noutputs) == (2, 2)
    # Lifted state z_0 = [x_0, u_{-1}, u_{-2}] (newest first).
    z0 = np.concatenate([x0, U_past[:, 1], U_past[:, 0]])
    response = control.forced_response(sys, U=U, X0=z0)
    X = plant.simulate(x0, U, U_past=U_past)
    np.testing.assert_allclose(response.outputs, X[:, :K], rtol=1e-12, atol=1e-12)


def test_lifted_matrices_structure():
    blocks = np.arange(1, 1 + 3 * 2 * 1, dtype=float).reshape(3, 2, 1)   # R = 2, n = 2, m = 1
    plant = DelayedPlant(np.array([[0.1, 0.2], [0.3, 0.4]]), blocks, 1.0)
    F, G = plant.lifted_matrices()
    expected_F = np.array([[0.1, 0.2, 3, 5],
                           [0.3, 0.4, 4, 6],
                           [0, 0, 0, 0],
                           [0, 0, 1, 0]], dtype=float)
    expected_G = np.array([[1], [2], [1], [0]], dtype=float)
    np.testing.assert_array_equal(F, expected_F)
    np.testing.assert_array_equal(G, expected_G)
    F0, G0 = DelayedPlant(np.eye(2), np.ones((2, 1)), 1.0).lifted_matrices()
    np.testing.assert_array_equal(F0, np.eye(2))
    np.testing.assert_array_equal(G0, np.ones((2, 1)))


# ---------------------------------------------------------------------- serialization
@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_save_load_round_trip(plant, tmp_path, suffix):
    path = plant.save(tmp_path / f"plant{suffix}")
    loaded = DelayedPlant.load(path)
    for name in ("A_d", "B_blocks", "A_c", "B_c", "delay"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(plant, name))
    assert loaded.dt == plant.dt and isinstance(loaded.dt, float)
    assert not loaded.A_d.flags.writeable


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_save_load_discrete_only_keeps_note(tmp_path, suffix):
    plant = DelayedPlant(np.diag([-0.5, 0.3]), np.ones((2, 2, 1)), 0.1,
                         continuous_note="eigenvalue -0.5 on the negative real axis")
    loaded = DelayedPlant.load(plant.save(tmp_path / f"d{suffix}"))
    assert not loaded.has_continuous
    np.testing.assert_array_equal(loaded.B_blocks, plant.B_blocks)
    with pytest.raises(LogarithmError, match="negative real axis"):
        _ = loaded.A_c


def test_to_dict_is_plain_json(plant):
    data = json.loads(json.dumps(plant.to_dict()))
    again = DelayedPlant.from_dict(data)
    np.testing.assert_array_equal(again.B_blocks, plant.B_blocks)
    assert data["format_version"] == FORMAT_VERSION == 4
    with pytest.raises(ParameterError, match=r"missing the field\(s\) \['A_d'\]"):
        DelayedPlant.from_dict({"dt": 1.0, "B_blocks": [[[1.0]]]})


def test_save_load_errors(plant, tmp_path):
    with pytest.raises(ValueError, match=r"\.json or \.npz"):
        plant.save(tmp_path / "plant.txt")
    with pytest.raises(ValueError, match="cannot read"):
        DelayedPlant.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read"):
        DelayedPlant.load(bad)


def test_as_plant(plant):
    assert as_plant(plant) is plant
    with pytest.raises(ParameterError, match="DelayedPlant"):
        as_plant(np.eye(2))


def test_delay_must_fit_in_the_blocks():
    plant = DelayedPlant.from_continuous([[-1.0]], [[1.0]], 2.5, 1.0)
    with pytest.raises(DimensionError, match="needs 4 input blocks"):
        DelayedPlant(plant.A_d, plant.B_blocks[:1], 1.0, A_c=plant.A_c, B_c=plant.B_c,
                     delay=[2.5])


# ---------------------------------------------------------------------- facts decided once
def test_active_blocks_and_whole_delay_come_from_the_blocks():
    blocks = np.zeros((4, 2, 3))
    blocks[1, :, 0] = [1.0, 0.0]
    blocks[2, :, 0] = [0.5, 0.5]
    blocks[0, 1, 1] = 1e-300                 # any non-zero entry is an effect
    plant = DelayedPlant(np.diag([-0.5, 0.2]), blocks, 1.0)     # no logarithm: discrete only
    np.testing.assert_array_equal(plant.active_blocks[:, 0], [False, True, True, False])
    np.testing.assert_array_equal(plant.delay_steps, [1, 0, 0])     # silent channel 2: 0
    assert not plant.active_blocks[:, 2].any()


@pytest.mark.parametrize("delay", [[2.5, 1.2], [0.0, 4.0], [3.999, 0.01]])
def test_whole_delay_from_blocks_equals_floor_of_continuous_delay(delay):
    plant = DelayedPlant.from_continuous(A_SEED, B_SEED, delay=delay, dt=2.0, max_delay=3)
    np.testing.assert_array_equal(plant.delay_steps, np.floor(np.array(delay) / 2.0))


# ---------------------------------------------------------------------- consistency
def test_discrete_and_continuous_parts_must_agree(plant):
    kwargs = dict(A_c=plant.A_c, B_c=plant.B_c, delay=plant.delay)
    # Rounding-level differences (a JSON round trip) are accepted ...
    DelayedPlant(plant.A_d * (1 + 1e-13), plant.B_blocks, 2.0, **kwargs)
    # ... anything a hand edit or an inconsistent estimate produces is not.
    A_d = np.array(plant.A_d)
    A_d[0, 1] += 1e-3
    with pytest.raises(InconsistentModelError,
                       match=r"A_d does not equal expm\(A_c T\).*relative difference 0.000707.*"
                             r"entry \(0, 1\)"):
        DelayedPlant(A_d, plant.B_blocks, 2.0, **kwargs)
    blocks = np.array(plant.B_blocks)
    blocks[0, :, 0] = 1e-2                     # a block before channel 0's delay
    with pytest.raises(InconsistentModelError, match=r"B_blocks are not the discretization.*"
                                                     r"block B\^\(0\), channel 0"):
        DelayedPlant(plant.A_d, blocks, 2.0, **kwargs)
    with pytest.raises(InconsistentModelError, match="B_blocks"):
        DelayedPlant(plant.A_d, plant.B_blocks, 2.0, A_c=plant.A_c, B_c=plant.B_c,
                     delay=[2.4, 1.2])
    assert issubclass(InconsistentModelError, ValueError)


def test_rounding_level_block_where_the_delay_has_none_is_inconsistent(plant, tmp_path):
    # 1e-14 is far inside the value tolerance, but it would make B^(0) active: the whole delay
    # read from the blocks (0) would contradict the delay (2.5 s = 1.25 T), and the MPC and the
    # fractional controller would act on different delays.
    blocks = np.array(plant.B_blocks)
    blocks[0, 1, 0] = 1e-14
    kwargs = dict(A_c=plant.A_c, B_c=plant.B_c, delay=plant.delay)
    with pytest.raises(InconsistentModelError,
                       match=r"channel 0 acts through blocks \[0, 1, 2\] of B_blocks \(whole "
                             r"delay 0\) but through \[1, 2\] in the discretization of its "
                             r"delay 2.5 s \(whole delay 1\)"):
        DelayedPlant(plant.A_d, blocks, 2.0, **kwargs)
    path = tmp_path / "rounded.json"
    path.write_text(json.dumps(dict(plant.to_dict(), B_blocks=blocks.tolist())))
    with pytest.raises(InconsistentModelError, match="whole delay 0"):
        DelayedPlant.load(path)


def test_format_versions_and_hand_written_files(plant, tmp_path):
    data = plant.to_dict()
    # Version 2 (what we write): inconsistent parts are an error, on load too.
    edited = dict(data, A_c=(np.array(plant.A_c) * 1.01).tolist())
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(edited))
    with pytest.raises(InconsistentModelError, match="A_d does not equal"):
        DelayedPlant.load(path)
    # Only the continuous part (a hand-written true plant): the discrete part is derived.
    continuous = {"dt": 2.0, "A_c": A_SEED.tolist(), "B_c": B_SEED.tolist(), "delay": [2.5, 1.2]}
    derived = DelayedPlant.from_dict(continuous)
    np.testing.assert_array_equal(derived.B_blocks, plant.B_blocks)
    assert DelayedPlant.from_dict(dict(continuous, max_delay=4)).max_delay == 4
    # Version 1 (no format_version; identified models stored least-squares blocks next to the
    # recovered continuous model): still loads, the discrete part re-derived, with a warning.
    old = {k: v for k, v in data.items() if k != "format_version"}
    old["B_blocks"] = (np.array(plant.B_blocks) + 1e-3).tolist()
    with pytest.warns(ContinuousModelWarning, match=r"version 1.*B_blocks 0.00095.*re-derived"):
        loaded = DelayedPlant.from_dict(old)
    np.testing.assert_array_equal(loaded.B_blocks, plant.B_blocks)
    consistent_old = {k: v for k, v in data.items() if k != "format_version"}
    np.testing.assert_allclose(DelayedPlant.from_dict(consistent_old).A_d, plant.A_d, rtol=1e-14)
    with pytest.raises(ParameterError, match="format_version 5"):
        DelayedPlant.from_dict(dict(data, format_version=5))
    # versions 2 (before the operating point) and 3 (before the info) load as written
    assert DelayedPlant.from_dict(dict(data, format_version=2)).operating_point is None
    assert DelayedPlant.from_dict(dict(data, format_version=3)).info is None


@pytest.mark.parametrize("content, error, pattern", [
    ("[1, 2, 3]", ParameterError, "must be a JSON object"),
    ('"model"', ParameterError, "must be a JSON object"),
    ('{"A_d": [[1.0]], "B_blocks": [[[1.0]]]}', ParameterError, "missing the field 'dt'"),
    ('{"dt": 1.0, "A_d": [[1.0]]}', ParameterError, r"\['B_blocks'\]"),
    ('{"dt": 1.0, "A_d": [[1.0]], "B_blocks": [[[1.0]]], "A_c": [[0.0]]}', ParameterError,
     "partial continuous model"),
    ('{"dt": 1.0, "A_d": [[1.0, 2.0]], "B_blocks": [[[1.0]]]}', DimensionError, "square"),
    ('{"dt": 1.0, "A_d": [["a"]], "B_blocks": [[[1.0]]]}', DimensionError, "numeric array"),
    ('{"dt": 1.0, "A_d": [[1.0], [2.0, 3.0]], "B_blocks": [[[1.0]]]}', DimensionError,
     "numeric array"),
    ('{"dt": "2", "A_d": [[1.0]], "B_blocks": [[[1.0]]]}', ParameterError, "dt must be a real"),
    ('{"dt": 1.0, "A_c": [[0.0]], "B_c": [[1.0]], "delay": [1.0, 2.0]}', DimensionError,
     r"delay has shape \(2,\); expected a scalar or \(1,\)"),
    ('{"dt": 1.0, "A_c": [[0.0]], "B_c": [[1.0]], "delay": -1}', ParameterError, ">= 0"),
    # a misspelt field would otherwise be dropped: here the continuous model
    ('{"dt": 1.0, "A_d": [[1.0]], "B_blocks": [[[1.0]]], "A_C": [[0.0]], "B_C": [[1.0]], '
     '"delay": 0}', ParameterError, r"unknown field\(s\) \['A_C', 'B_C'\].*accepted: "),
    ('{"dt": 1.0, "A_d": [[1.0]], "B_blocks": [[[1.0]]], "max_delay": 3}', ParameterError,
     r"max_delay 3 .* B_blocks has 1 block\(s\), so max_delay 0"),
])
def test_malformed_model_files_give_toolbox_errors(tmp_path, content, error, pattern):
    path = tmp_path / "model.json"
    path.write_text(content)
    with pytest.raises(error, match=pattern):
        DelayedPlant.load(path)
