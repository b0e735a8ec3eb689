"""Messages that name what went wrong (findings of a fresh-eyes trial of OutputDMDidc)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.errors import DimensionError, ParameterError

PLANT = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]], delay=1.3,
                                     dt=0.5)
U = random_excitation(1, 1500, rng=0)
Y = np.array([[1.0, 0.0]]) @ PLANT.simulate([0.0, 0.0], U)[:, :-1]


def test_bad_arguments_are_named():
    with pytest.raises(ParameterError, match="significance must be a real number; got 'x'"):
        OutputDMDidc(max_delay=2, significance="x").fit(Y, U, dt=0.5)
    with pytest.raises(ParameterError, match=r"significance must lie in \(0.0, 1.0\)"):
        OutputDMDidc(max_delay=2, significance=1.0).fit(Y, U, dt=0.5)
    with pytest.raises(ParameterError, match="needs the inputs U with output arrays Y"):
        OutputDMDidc(max_delay=2).fit(Y, dt=0.5)
    with pytest.raises(ParameterError, match="order=11 exceeds max_order=10"):
        OutputDMDidc(max_delay=2, order=11).fit(Y, U, dt=0.5)
    with pytest.raises(ParameterError, match=r"(?s)output-only data.*Hankel DMD.*svd_rank"):
        OutputDMDidc(max_delay=2).fit(Y, np.zeros((0, Y.shape[1])), dt=0.5)


def test_an_order_fixed_at_max_order_is_not_told_to_raise_it():
    """The trial: order == max_order given by the user warned "order N is the largest
    allowed ... raise max_order" (the order was not chosen against the cap)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        OutputDMDidc(max_delay=4, order=2, max_order=2).fit(Y, U, dt=0.5)
    assert not [w for w in caught if "is the largest allowed" in str(w.message)]


def test_an_output_loop_without_measurement_matrix_names_the_option():
    from controllers import DelayedKalmanObserver, OutputFeedback, PredictiveController, lqr_gain
    from simulations.closed_loop import simulate_closed_loop

    loop = OutputFeedback(PredictiveController(PLANT, lqr_gain(PLANT)),
                          DelayedKalmanObserver(PLANT, C=[[1.0, 0.0]]))
    with pytest.raises(ParameterError, match="pass measurement_matrix=C"):
        simulate_closed_loop(PLANT, loop, [1.0, 0.0], 10)
    with pytest.raises(DimensionError, match="reads 1 measured output.*measurement_matrix has "
                                             "2 rows"):
        simulate_closed_loop(PLANT, loop, [1.0, 0.0], 10, measurement_matrix=np.eye(2))
    simulate_closed_loop(PLANT, loop, [1.0, 0.0], 10, measurement_matrix=[[1.0, 0.0]])


def test_the_command_line_names_the_outputs_option(tmp_path, capsys):
    from simulations.cli import main

    table = tmp_path / "log.csv"
    np.savetxt(table, np.vstack([Y, U]).T, delimiter=",", header="y1,u1", comments="")
    assert main(["identify", str(table), "--outputs", "y9", "--inputs", "u1", "--dt", "0.5",
                 "--out", str(tmp_path / "m.json")]) == 2
    assert "--outputs 'y9': 'y9' is not a column" in capsys.readouterr().err
    assert main(["identify", str(table), "--outputs", "y1", "--inputs", "none", "--dt", "0.5",
                 "--out", str(tmp_path / "m.json")]) == 2
    assert "Hankel DMD" in capsys.readouterr().err
