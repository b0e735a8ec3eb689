"""Hostile inputs to every public entry point of controllers (issue 20 items 1-2).

Each call must either refuse its input with a toolbox ``ValueError`` (naming the argument) or
return a finite result, within seconds (:func:`tests.fuzzing.check_call`).  Gain design and the
MPC may also raise :class:`SolverError` (their documented answer when a valid problem has no
solution, e.g. an unstabilizable pair or infeasible bounds).  The reported failures come first;
then hypothesis over the gain design, the linear controllers (construction, ``__call__``,
``reset``), the MPC (construction and ``solve``), the factory and the closed-loop analysis.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _toolbox.errors import NonFiniteError, ParameterError, SolverError
from controllers import (
    DelayedMPC,
    FractionalDelayController,
    NaiveStateFeedback,
    PredictiveController,
    closed_loop_matrix,
    delay_mismatch_study,
    is_schur,
    lqr_gain,
    make_controller,
    place_gain,
    reduced_input_matrix,
    spectral_radius,
)
from dmdidc import DelayedPlant
from tests.fuzzing import FUZZ_SETTINGS, HOSTILE_SCALARS, check_call, hostile_arrays

A_C = np.array([[0.0, 1.1], [-1.1, 0.0]])
B_C = np.array([[1.0], [-1.0]])
PLANT = DelayedPlant.from_continuous(A_C, B_C, delay=2.5, dt=2.0)
K = lqr_gain(PLANT)
X0 = np.array([0.3, -0.2])
LINEAR = st.sampled_from(["naive", "truncated", "exact", "fractional"])
DESIGN = (SolverError,)          # a design or a QP without solution: the documented answer


# ------------------------------------------------------------------ the reported failures
def test_a_huge_mpc_horizon_is_refused_at_once():
    start = time.perf_counter()
    with pytest.raises(ParameterError, match=r"horizon = 1000000 .* accepted: horizon <= \d+"
                       ) as caught:
        DelayedMPC(PLANT, horizon=10 ** 6)
    assert time.perf_counter() - start < 1.0
    largest = int(re.search(r"horizon <= (\d+)", str(caught.value)).group(1))
    assert largest >= 1_000
    DelayedMPC(PLANT, horizon=largest)            # the limit itself is accepted (not solved:
    with pytest.raises(ParameterError):           # that takes seconds), one more is not
        DelayedMPC(PLANT, horizon=largest + 1)
    assert check_call(lambda: DelayedMPC(PLANT, horizon=20).solve(X0)) is not None  # no alarm


def test_a_huge_reference_delay_is_refused_not_nan():
    with pytest.raises(NonFiniteError, match="reference_delay = 1e\\+300"):
        FractionalDelayController(PLANT, K, reference_delay=1e300)
    with pytest.raises(NonFiniteError, match="reference_delay"):
        reduced_input_matrix(PLANT, 1e300)
    ctrl = check_call(FractionalDelayController, PLANT, K, reference_delay=3.0)
    assert np.all(np.isfinite(ctrl(X0)))                                         # no alarm


@pytest.mark.parametrize("x", [X0 + 1j, [0.3 + 0.5j, 0.0]])
def test_complex_states_are_refused(x):
    with pytest.raises(ParameterError, match="complex"):
        FractionalDelayController(PLANT, K)(x)
    np.testing.assert_array_equal(NaiveStateFeedback(PLANT, K)(X0 + 0j),
                                  NaiveStateFeedback(PLANT, K)(X0))


# ------------------------------------------------------------------ hypothesis: gain design
@FUZZ_SETTINGS
@given(hostile_arrays(PLANT.A_d), hostile_arrays(PLANT.B_d),
       st.one_of(st.none(), HOSTILE_SCALARS, hostile_arrays(np.eye(2))),
       st.one_of(st.none(), HOSTILE_SCALARS, hostile_arrays(np.eye(1))))
def test_lqr_gain(A, B, Q, R):
    check_call(lqr_gain, A, B, Q=Q, R=R, allowed=DESIGN)


@FUZZ_SETTINGS
@given(hostile_arrays(PLANT.A_d), hostile_arrays(PLANT.B_d),
       st.one_of(hostile_arrays(np.array([0.2, 0.3])), HOSTILE_SCALARS))
def test_place_gain(A, B, poles):
    check_call(place_gain, A, B, poles=poles, allowed=DESIGN)


@FUZZ_SETTINGS
@given(hostile_arrays(PLANT.A_d), st.one_of(st.just(1e-10), HOSTILE_SCALARS))
def test_is_schur(matrix, margin):
    check_call(is_schur, matrix, margin=margin)


# ------------------------------------------------------------------ hypothesis: linear feedback
@FUZZ_SETTINGS
@given(LINEAR, hostile_arrays(K), st.one_of(st.none(), HOSTILE_SCALARS),
       hostile_arrays(X0), st.one_of(st.none(), hostile_arrays(np.zeros((1, 2)))))
def test_linear_controllers(name, gain, reference_delay, x, u_past):
    def build_and_step():
        if name == "naive":
            ctrl = NaiveStateFeedback(PLANT, gain)
        elif name == "fractional":
            ctrl = FractionalDelayController(PLANT, gain, reference_delay=reference_delay)
        else:
            ctrl = PredictiveController(PLANT, gain, prediction=name)
        ctrl.reset(u_past)
        return ctrl(x), ctrl.feedback_matrices()
    check_call(build_and_step)


@FUZZ_SETTINGS
@given(st.one_of(LINEAR, st.just("mpc"), HOSTILE_SCALARS),
       st.one_of(st.none(), hostile_arrays(K)),
       st.dictionaries(st.sampled_from(["horizon", "reference_delay", "u_max", "bogus"]),
                       st.one_of(st.integers(1, 5), HOSTILE_SCALARS), max_size=2))
def test_make_controller(name, gain, options):
    check_call(lambda: make_controller(name, PLANT, gain, **options)(X0), allowed=DESIGN)


# ------------------------------------------------------------------ hypothesis: MPC
@FUZZ_SETTINGS
@given(st.one_of(st.integers(1, 8), HOSTILE_SCALARS),
       st.one_of(st.none(), HOSTILE_SCALARS, hostile_arrays(np.eye(2))),
       st.one_of(st.none(), HOSTILE_SCALARS, hostile_arrays(np.ones(1))),
       st.one_of(st.none(), HOSTILE_SCALARS), st.one_of(st.none(), HOSTILE_SCALARS),
       st.booleans())
def test_mpc_construction(horizon, Q, R, u_max, x_max, soft):
    def build():
        return DelayedMPC(PLANT, horizon=horizon, Q=Q, R=R, u_max=u_max, x_max=x_max,
                          soft_state_constraints=soft and x_max is not None)
    check_call(build, finite=lambda mpc: mpc.terminal_weight, allowed=DESIGN)


MPC = DelayedMPC(PLANT, horizon=6, u_min=-1.0, u_max=1.0)


@FUZZ_SETTINGS
@given(hostile_arrays(X0), st.one_of(st.none(), hostile_arrays(np.zeros((1, PLANT.max_delay)))))
def test_mpc_solve(x, u_history):
    check_call(MPC.solve, x, u_history, finite=lambda result: result.first_input,
               allowed=DESIGN)


# ------------------------------------------------------------------ hypothesis: analysis
@FUZZ_SETTINGS
@given(hostile_arrays(A_C), hostile_arrays(B_C), st.one_of(st.just(2.0), HOSTILE_SCALARS),
       st.one_of(st.just(2.5), HOSTILE_SCALARS),
       st.one_of(st.none(), hostile_arrays(np.array([-0.2, 0.0, 0.2]))))
def test_delay_mismatch_study(A_c, B_c, dt, true_delay, offsets):
    check_call(delay_mismatch_study, A_c, B_c, dt, true_delay, offsets=offsets,
               controllers=("truncated", "fractional"),
               finite=lambda study: study.spectral_radius, allowed=DESIGN)


@FUZZ_SETTINGS
@given(hostile_arrays(PLANT.A_d), hostile_arrays(PLANT.B_blocks), hostile_arrays(K))
def test_closed_loop_analysis(A_d, B_blocks, gain):
    def analyse():
        true = DelayedPlant(A_d, B_blocks, PLANT.dt)
        ctrl = NaiveStateFeedback(true, gain)
        return closed_loop_matrix(true, ctrl), spectral_radius(true, ctrl)
    check_call(analyse)
