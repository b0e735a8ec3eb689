"""bench_output's paired comparison: the statistics and the frequency responses it compares."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_output import _data, _errors, _lifted_response, _response, paired  # noqa: E402

from simulations.studies.data_kinds import random_plant  # noqa: E402


def test_paired_statistics_see_a_consistent_winner_and_no_winner_between_equals():
    rng = np.random.default_rng(0)
    peer = rng.lognormal(size=60)
    win, sign_p, wilcoxon_p = paired(0.7 * peer * rng.lognormal(0, 0.2, 60), peer)
    assert win > 0.9 and sign_p < 1e-6 and wilcoxon_p < 1e-6
    for seed in range(20):                      # the same distribution: no false winner
        rng = np.random.default_rng(seed)
        win, sign_p, wilcoxon_p = paired(rng.lognormal(size=60), rng.lognormal(size=60))
        assert 0.2 < win < 0.8 and sign_p > 1e-3 and wilcoxon_p > 1e-3


def test_the_true_plant_and_its_lifted_realization_as_a_peer_have_no_error():
    for seed in range(5):
        rng = np.random.default_rng(seed)
        plant = random_plant(rng, n_states=3, n_inputs=2, dt=0.5, max_delay=4)
        C = rng.standard_normal((2, 3))
        F, G = plant.lifted_matrices()
        lifted_C = np.hstack([C, np.zeros((2, F.shape[0] - 3))])
        response = _response(F, G, lifted_C, np.zeros((2, 2)))
        np.testing.assert_allclose(response, _lifted_response(plant, C, np.zeros((2, 2))))
        dc = C @ np.linalg.solve(-plant.A_c, plant.B_c)
        eig, dc_error, freq = _errors(plant, C, np.linalg.eigvals(plant.A_c), dc, response)
        assert max(eig, dc_error, freq) < 1e-12
        # a wrong delay shows in the frequency response though the DC gain is the same
        late = random_plant(np.random.default_rng(seed), n_states=3, n_inputs=2, dt=0.5,
                            max_delay=4, delay_periods=(1.2, 3.8))
        assert _errors(plant, C, np.linalg.eigvals(plant.A_c), dc,
                       _lifted_response(late, C, np.zeros((2, 2))))[2] > 0.05


def test_a_fresh_draw_keeps_the_plant_and_sensors_and_changes_the_data():
    plant, C, Y, U = _data(2, 500, 20.0)
    for draw in range(3):
        other, C_other, Y_other, U_other = _data(2, 500, 20.0, draw)
        np.testing.assert_array_equal(other.A_c, plant.A_c)
        np.testing.assert_array_equal(other.delay, plant.delay)
        np.testing.assert_array_equal(C_other, C)
        assert U_other.shape == U.shape and Y_other.shape == Y.shape
        assert not np.allclose(U_other, U) and not np.allclose(Y_other, Y)
