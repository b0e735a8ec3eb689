"""Controllers by name: what make_controller builds, what it refuses, and what it imports."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from controllers import (
    CONTROLLER_NAMES,
    LINEAR_CONTROLLER_NAMES,
    DelayedMPC,
    FractionalDelayController,
    NaiveStateFeedback,
    PredictiveController,
    UnstableLoopWarning,
    lqr_gain,
    make_controller,
    reduced_input_matrix,
    spectral_radius,
    whole_delay_input_matrix,
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
                                             r"\['horizon'\]; it accepts \['Q', 'R'\]"):
        make_controller("naive", plant, horizon=5)
    with pytest.raises(ParameterError, match=r"takes no option\(s\) \['u_max'\]; it accepts "
                                             r"\['Q', 'R', 'reference_delay'\]"):
        make_controller("fractional", plant, u_max=1.0)
    with pytest.raises(ParameterError, match=r"Q and R weigh the default LQR design of K; got "
                                             r"K and \['Q'\]"):
        make_controller("exact", plant, K=lqr_gain(plant), Q=2.0)
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


# ------------------------------------------------------------------ the default gain
README = dict(A_c=[[0, 1.1], [-1.1, 0]], B_c=[[1, -1], [-1, 2.0]], dt=2.0)


def random_plant(rng: np.random.Generator, family: str) -> DelayedPlant:
    """Fast modes (|eig A_c| T up to ~5), 2-3 inputs; 'fractional': delays U(0, 3T) per
    channel (unequal fractions), 'whole': whole delays 0..3 T per channel."""
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    A_c = rng.standard_normal((n, n)) * rng.uniform(0.5, 5.0) / np.sqrt(n)
    A_c -= (np.max(np.linalg.eigvals(A_c).real) - rng.uniform(-0.3, 0.3)) * np.eye(n)
    delay = rng.uniform(0, 3, m) if family == "fractional" else rng.integers(0, 4, m) * 1.0
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay=delay, dt=1.0)


def built_quietly(name, plant, **options):
    """The controller, failing the test on an UnstableLoopWarning (a false alarm here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnstableLoopWarning)
        return make_controller(name, plant, **options)


def test_default_fractional_uses_the_reference_delay_design_when_fractions_differ():
    # README plant, delays 1 and 1.45 periods: K from (A_d, B_d) gave radius 1.18 on the model
    plant = DelayedPlant.from_continuous(README["A_c"], README["B_c"], delay=[2.0, 2.9],
                                         dt=README["dt"])
    ctrl = built_quietly("fractional", plant)
    assert ctrl.reference_delay == 2.9
    expected = lqr_gain(plant.A_d, reduced_input_matrix(plant, 2.9))
    np.testing.assert_allclose(ctrl.K, expected, rtol=1e-10, atol=1e-12)
    assert spectral_radius(plant, ctrl) < 0.5
    # an explicit reference delay gets the gain designed for it, not the (A_d, B_d) one
    own = built_quietly("fractional", plant, reference_delay=3.5)
    np.testing.assert_allclose(own.K, lqr_gain(plant.A_d, reduced_input_matrix(plant, 3.5)),
                               rtol=1e-10, atol=1e-12)
    assert spectral_radius(plant, own) < 1
    # a common fraction keeps the (A_d, B_d) design, where eq. 9.75 holds
    whole = DelayedPlant.from_continuous(README["A_c"], README["B_c"], delay=[2.5, 4.5],
                                         dt=README["dt"])
    assert built_quietly("fractional", whole).reference_delay is None
    np.testing.assert_array_equal(built_quietly("fractional", whole).K, lqr_gain(whole))


@pytest.mark.parametrize("name", ["exact", "truncated"])
def test_default_predictive_gain_is_designed_on_the_whole_delay_input_matrix(name):
    # whole delays 1 and 2 periods: K from (A_d, B_d) gave radius 1.94 on the model
    plant = DelayedPlant.from_continuous(README["A_c"], README["B_c"], delay=[2.0, 4.0],
                                         dt=README["dt"])
    ctrl = built_quietly(name, plant)
    B_eff = whole_delay_input_matrix(plant)
    np.testing.assert_allclose(ctrl.K, lqr_gain(plant.A_d, B_eff), rtol=1e-10, atol=1e-12)
    # the loop on the model is exactly A_d - B_eff K (lifted: plus zeros)
    target = np.max(np.abs(np.linalg.eigvals(plant.A_d - B_eff @ ctrl.K)))
    assert spectral_radius(plant, ctrl) == pytest.approx(target, rel=1e-6)
    # independently: B_eff[:, j] moves channel j's command to the slowest channel's instant
    np.testing.assert_allclose(B_eff[:, 0], plant.A_d @ plant.B_d[:, 0], rtol=1e-12)
    np.testing.assert_allclose(B_eff[:, 1], plant.B_d[:, 1], rtol=1e-12)


def test_default_weights_Q_R_reach_the_design():
    plant = DelayedPlant.from_continuous(README["A_c"], README["B_c"], delay=[2.0, 2.9],
                                         dt=README["dt"])
    Q, R = np.diag([3.0, 0.5]), 2.0 * np.eye(2)
    ctrl = built_quietly("fractional", plant, Q=Q, R=R)
    np.testing.assert_allclose(ctrl.K, lqr_gain(plant.A_d, reduced_input_matrix(plant, 2.9),
                                                 Q=Q, R=R), rtol=1e-10, atol=1e-12)
    with pytest.warns(UnstableLoopWarning, match="ignores the model's delays"):
        naive = make_controller("naive", plant, Q=Q, R=R)     # delay-naive: unstable here
    np.testing.assert_allclose(naive.K, lqr_gain(plant, Q=Q, R=R), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("family", ["fractional", "whole"])
def test_default_gains_are_stable_on_their_model_and_warnings_fire_exactly_when_not(family):
    """On random plants the default designs never warn (well-posed: no false alarm) and are
    stable on their own model; every linear controller warns exactly when its loop on its own
    model is unstable (naive and truncated often are).  Before the reference and whole-delay
    designs, 'exact' and 'truncated' were unstable on ~8 % of the 'whole' plants and the
    fractional controller on ~2 % of the 'fractional' ones."""
    rng = np.random.default_rng(11 if family == "fractional" else 12)
    guaranteed = ("fractional",) if family == "fractional" else ("fractional", "exact",
                                                                 "truncated")
    warned = 0
    for _ in range(40):
        plant = random_plant(rng, family)
        for name in LINEAR_CONTROLLER_NAMES:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                ctrl = make_controller(name, plant)
            flagged = any(issubclass(w.category, UnstableLoopWarning) for w in caught)
            rho = spectral_radius(plant, ctrl)
            assert ctrl.nominal_spectral_radius == pytest.approx(rho, rel=1e-6, abs=1e-6)
            if name in guaranteed:
                assert rho < 1 and not flagged, (name, rho)
            elif abs(rho - 1) > 1e-6:           # the borderline is rounding's to decide
                assert flagged == (rho > 1), (name, rho)
            warned += flagged
    assert warned > 0                            # the check does fire on these plants
