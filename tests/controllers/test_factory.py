"""Controllers by name: what make_controller builds, what it refuses, and what it imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from controllers import (
    CONTROLLER_NAMES,
    DelayedMPC,
    FractionalDelayController,
    NaiveStateFeedback,
    PredictiveController,
    lqr_gain,
    make_controller,
)
from dmdidc import DelayedPlant
from privacy.errors import ParameterError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plant() -> DelayedPlant:
    return DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], delay=2.5,
                                        dt=2.0)


def test_every_name_builds_its_controller_with_the_lqr_gain(plant):
    K = lqr_gain(plant)
    expected = {"fractional": FractionalDelayController, "truncated": PredictiveController,
                "exact": PredictiveController, "naive": NaiveStateFeedback, "mpc": DelayedMPC}
    assert set(expected) == set(CONTROLLER_NAMES)
    for name in CONTROLLER_NAMES:
        options = {"horizon": 5} if name == "mpc" else {}
        controller = make_controller(name, plant, **options)
        assert type(controller) is expected[name]
        if name != "mpc":
            np.testing.assert_array_equal(controller.K, K)
    assert make_controller("truncated", plant).prediction == "truncated"
    assert make_controller("exact", plant).prediction == "exact"


def test_refusals_name_what_is_accepted(plant):
    with pytest.raises(ParameterError, match=r"one of \('fractional'.*got 'lqr'"):
        make_controller("lqr", plant)
    with pytest.raises(ParameterError, match=r"'naive' controller takes no option\(s\) "
                                             r"\['horizon'\]; it accepts none"):
        make_controller("naive", plant, horizon=5)
    with pytest.raises(ParameterError, match=r"takes no option\(s\) \['u_max'\]; it accepts "
                                             r"\['reference_delay'\]"):
        make_controller("fractional", plant, u_max=1.0)
    with pytest.raises(ParameterError, match="takes no gain K"):
        make_controller("mpc", plant, K=lqr_gain(plant), horizon=5)


def test_linear_controllers_and_their_analysis_do_not_load_the_mpc_solver():
    # cvxpy costs ~1.5 s to import; only an MPC needs it.
    code = ("import sys\n"
            "from dmdidc import DelayedPlant\n"
            "from controllers import make_controller, spectral_radius, LINEAR_CONTROLLER_NAMES\n"
            "p = DelayedPlant.from_continuous([[-1.0]], [[1.0]], delay=0.5, dt=1.0)\n"
            "[spectral_radius(p, make_controller(n, p)) for n in LINEAR_CONTROLLER_NAMES]\n"
            "print('cvxpy' in sys.modules, 'controllers.mpc' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.split() == ["False", "False"], done.stdout + done.stderr
