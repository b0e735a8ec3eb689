"""Tests of the SIFL privacy examination: the per-element claim and the attacks."""

from __future__ import annotations

import numpy as np
import pytest

from privacy import GaussianMechanism, accounting
from privacy.errors import DimensionError
from privacy.federated.sifl import (
    AggregatorCode,
    ClientData,
    ImmersionCode,
    run_plain_fl,
    run_sifl,
)
from privacy.federated.sifl_attacks import (
    client_difference_attack,
    element_epsilon,
    noise_subspace_attack,
    server_scale_attack,
    subspace_sine,
)
from privacy.federated.sifl_models import LocalOptimizer, SoftmaxRegression

from .test_sifl import _clients

SGD = LocalOptimizer("sgd", 0.3)


def test_element_epsilon_is_the_accountant_on_the_worst_element():
    code = ImmersionCode.random(4, 7, noise_std=2.0, rng=0)
    stds = np.linalg.norm(code.N1, axis=1) * 2.0
    shifts = np.linalg.norm(code.Pi1, axis=1) * 0.5
    j = int(np.argmax(shifts / stds))
    expected = accounting.epsilon(GaussianMechanism(stds[j], shifts[j]), delta=1e-5)
    assert element_epsilon(code, sensitivity=0.5, delta=1e-5) == pytest.approx(expected)
    assert expected > 0.1
    paper = ImmersionCode.random(4, 7, pi_scale=1e-3, kernel_scale=1e3, noise_std=1e3, rng=0)
    assert element_epsilon(paper, sensitivity=0.33, delta=1e-5) == 0.0     # the paper's claim


def test_encoded_vector_is_not_private_once_the_keys_are_known():
    """Pi1L removes the noise exactly: neighbouring models give disjoint outputs (delta = 1)."""
    code = ImmersionCode.random(5, 9, pi_scale=1e-3, kernel_scale=1e3, noise_std=1e3, rng=0)
    w, w_neighbour = np.ones(5), np.ones(5) + np.array([1e-3, 0, 0, 0, 0])
    gen = np.random.default_rng(1)
    decoded = np.array([code.decode(code.encode(w, gen)) for _ in range(200)])
    decoded_neighbour = np.array([code.decode(code.encode(w_neighbour, gen)) for _ in range(200)])
    gap = np.abs(decoded[:, 0] - w[0]).max()
    assert gap < 1e-5 < np.abs(decoded_neighbour[:, 0] - w[0]).min()


def test_aggregator_tells_identical_from_neighbouring_clients_with_certainty():
    base = _clients(k=2, per_client=40)
    twins = [base[0], base[0]]
    replaced_X = base[0].X.copy()
    replaced_X[0] = base[1].X[0]
    neighbours = [base[0], ClientData(replaced_X, base[0].y)]
    model = SoftmaxRegression(30, 2)
    code = ImmersionCode.random(model.size, model.size + 5, pi_scale=1e-3, kernel_scale=1e3,
                                noise_std=1e3, rng=0)
    statistic = {}
    for name, clients in (("twins", twins), ("neighbours", neighbours)):
        uploads = run_sifl(model, SGD, clients, model.init(0), code, rounds=3, rng=1).uploads
        statistic[name] = np.abs(uploads[:, 0] - uploads[:, 1]).max()
    assert statistic["twins"] == 0.0             # the same round noise cancels exactly
    assert statistic["neighbours"] > 1e-6


def test_client_differences_are_noise_free_and_linear_in_the_models():
    clients = _clients(k=4, per_client=30)
    model = SoftmaxRegression(30, 2)
    code = ImmersionCode.random(model.size, model.size + 5, noise_std=10.0, rng=0)
    transcript = run_sifl(model, SGD, clients, model.init(0), code, rounds=12, rng=1)
    attack = client_difference_attack(transcript.uploads, code)
    assert attack.noise_in_differences < 1e-12
    true = (code.decode((transcript.uploads[:, 1:] - transcript.uploads[:, :1])
                        .reshape(-1, code.n_encoded).T)).T
    fit, *_ = np.linalg.lstsq(true, attack.coordinates, rcond=None)
    residual = np.linalg.norm(true @ fit - attack.coordinates) / np.linalg.norm(attack.coordinates)
    assert residual < 1e-10
    with pytest.raises(DimensionError, match="uploads"):
        client_difference_attack(transcript.uploads[:, :1], code)


def test_eavesdropper_removes_the_kernel_noise_from_the_broadcasts():
    clients = _clients(k=3, per_client=40)
    model = SoftmaxRegression(30, 2)
    code = ImmersionCode.random(model.size, model.size + 6, pi_scale=1e-3, kernel_scale=1e3,
                                noise_std=1e3, rng=0)
    theta0 = model.init(0)
    plain = run_plain_fl(model, SGD, clients, theta0, rounds=30)
    transcript = run_sifl(model, SGD, clients, theta0, code, rounds=30, rng=1)
    coords, complement = noise_subspace_attack(np.array(transcript.broadcasts), 6)
    truth = (complement.T @ code.Pi1 @ plain[:-1].T).T
    assert np.linalg.norm(coords - truth) / np.linalg.norm(truth) < 0.05
    with pytest.raises(DimensionError, match="broadcasts"):
        noise_subspace_attack(np.array(transcript.broadcasts)[:5], 6)


def test_server_recovers_algorithm_2_models_up_to_scale():
    clients = _clients(k=3, per_client=40)
    model = SoftmaxRegression(30, 2)
    code = ImmersionCode.random(model.size, model.size + 5, rng=0)
    agg = AggregatorCode.random(2, noise_std=3.0, rng=1)
    theta0 = model.init(0)
    plain = run_plain_fl(model, SGD, clients, theta0, rounds=25)
    transcript = run_sifl(model, SGD, clients, theta0, code, rounds=25, aggregator=agg, rng=2)
    recovered, v = server_scale_attack(transcript.server_view)
    true = plain[1:]
    cosines = np.abs(np.sum(recovered * true, axis=1)) / (np.linalg.norm(recovered, axis=1)
                                                           * np.linalg.norm(true, axis=1))
    assert cosines.min() > 0.999
    np.testing.assert_allclose(agg.N2 @ v, 0, atol=1e-3 * np.linalg.norm(agg.N2))


def test_subspace_sine():
    basis = np.eye(4)[:, :2]
    assert subspace_sine(basis @ np.array([[1.0, 2.0], [0.0, 1.0]]), basis) < 1e-12
    assert subspace_sine(np.eye(4)[:, 2:], basis) == pytest.approx(1.0)
    with pytest.raises(DimensionError):
        subspace_sine(np.eye(4)[:, :1], basis)
