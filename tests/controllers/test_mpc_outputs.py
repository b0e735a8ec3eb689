"""Output bounds of DelayedMPC: y_min <= C x + c <= y_max on an identified output model."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from controllers import DelayedKalmanObserver, DelayedMPC, OutputFeedback
from controllers.errors import SolverError
from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.errors import DimensionError, ParameterError
from simulations.closed_loop import simulate_closed_loop
from tests.controllers.test_observer import _physical_plant

T = 0.5
SOLVERS = ("DAQP", "OSQP", "CLARABEL", "CVXPY")


def _physical(seed: int, sensors: int = 1):
    """The plant of :func:`_physical_plant` (a random stable 3-state, 2-input plant with
    fractional delays at a physical operating point), ``sensors`` random sensors with an
    offset, and an output model fitted to 3000 samples of its outputs at 30 dB."""
    plant, C, rng = _physical_plant(seed, sensors)
    x_op, u_op = plant.operating_point.state, plant.operating_point.input
    E = random_excitation(2, 3000, rng=rng)
    U = u_op[:, None] + E - E.mean(axis=1, keepdims=True)
    Y = C @ plant.simulate(x_op, U)[:, :-1] + 2.0              # sensors read 2 too high
    Y = Y + 0.03 * Y.std(axis=1, keepdims=True) * rng.standard_normal(Y.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the fit's own findings are not under test
        est = OutputDMDidc(max_delay=4).fit(Y, U, dt=T)
    return plant, C, est, rng


def _level(est) -> np.ndarray:
    """The model's output at its operating point, ``C x_op + c``."""
    return est.C @ est.operating_point_.state + est.offset_


def _outputs(est, result) -> np.ndarray:
    return est.C @ result.states + est.offset_[:, None]


@pytest.mark.parametrize("seed", [2, 6, 8])
def test_hard_output_bounds_hold_in_every_solver_and_the_solvers_agree(seed):
    """(Plants whose rise the inputs can shape: on others the peak comes before any input acts,
    and a bound between what two designs reach is nearly degenerate, where OSQP needs 1e5
    iterations or calls it infeasible; DAQP and Clarabel solve those too.)"""
    plant, C, est, rng = _physical(seed)
    op, order = est.operating_point_, est.order_
    # from a state whose output starts at the level and rises (C v = 0, C A v > 0)
    v = np.linalg.svd(est.C)[2][-1]
    v = v * np.sign(est.C[0] @ est.plant().A_d @ v)
    x = op.state + 3.0 * v
    Q_y = est.C.T @ est.C / np.sum(est.C ** 2) + 1e-9 * np.eye(order)
    inputs = dict(u_min=-100.0, u_max=150.0)
    # a bound that is feasible (an output-heavy design keeps it) and that the lazy design,
    # which spends more on inputs, breaks (the test's premise)
    heavy = DelayedMPC(est, horizon=12, Q=1e3 * Q_y, **inputs)
    kept = _outputs(est, heavy.solve(x))[:, heavy.dead_steps + 1:].max(axis=1)
    lazy = DelayedMPC(est, horizon=12, Q=Q_y, **inputs)
    broken = _outputs(est, lazy.solve(x))[:, lazy.dead_steps + 1:].max(axis=1)
    assert np.all(broken - kept > 0.1 * (broken - _level(est)))
    y_max = kept + 0.25 * (broken - kept)
    moves = {}
    for solver in SOLVERS:
        mpc = DelayedMPC(est, horizon=12, Q=Q_y, y_max=y_max, solver=solver, **inputs)
        result = mpc.solve(x)
        y = _outputs(est, result)[:, mpc.dead_steps + 1:]
        assert np.all(y <= y_max[:, None] + 1e-6 * max(1.0, float(np.abs(y_max).max())))
        assert np.any(y >= y_max[:, None] - 1e-4 * max(1.0, float(np.abs(y_max).max())))
        moves[solver] = result.inputs[:, 0]
    for solver in SOLVERS[1:]:
        np.testing.assert_allclose(moves[solver], moves["DAQP"], atol=1e-4, rtol=1e-4)


def test_output_bounds_are_state_bounds_in_the_outputs_basis():
    """With as many independent sensors as states, ``z = C x`` is a state: bounds on the
    outputs of the model are bounds on the states of the same plant written in z (and the
    same cost), so the two MPCs move alike."""
    plant, C, est, rng = _physical(4, sensors=3)
    assert est.order_ == 3
    Cm, c = est.C, est.offset_
    Ci = np.linalg.inv(Cm)
    model = est.plant()
    op = model.operating_point
    in_z = DelayedPlant(Cm @ model.A_d @ Ci, np.einsum("ij,rjm->rim", Cm, model.B_blocks),
                        T, operating_point=(Cm @ op.state + c, op.input))
    Q = est.C.T @ est.C
    y_op = _level(est)
    bounds = dict(u_min=-100.0, u_max=150.0)
    x = op.state + rng.normal(0.0, 1.0, 3)
    free = DelayedMPC(est, horizon=8, Q=Q, **bounds).solve(x)
    # bounds at 90 % of the unbounded prediction's excursion: feasible (hard too) and active
    reach = np.abs(_outputs(est, free)[:, free.dead_steps + 1:] - y_op[:, None]).max(axis=1)
    low, high = y_op - 0.9 * reach, y_op + 0.9 * reach
    for soft in (False, True):
        outputs = DelayedMPC(est, horizon=8, Q=Q, y_min=low, y_max=high,
                             soft_state_constraints=soft, **bounds).solve(x).inputs
        assert np.abs(outputs[:, 0] - free.inputs[:, 0]).max() > 1e-3       # they bind
        states = DelayedMPC(in_z, horizon=8, Q=np.eye(3), x_min=low, x_max=high,
                            soft_state_constraints=soft, **bounds)
        np.testing.assert_allclose(outputs, states.solve(Cm @ x + c).inputs, atol=1e-6,
                                   rtol=1e-6)


@pytest.mark.parametrize("seed", [1, 3])
def test_output_bounds_take_the_overshoot_out_of_a_setpoint_step(seed):
    """Identify from outputs, then move the plant to a new setpoint by MPC through the
    observer, on the true plant: an aggressive design overshoots the new output level (by 2 %
    and 13 % of the step on these plants), and output bounds at 30 % of that overshoot keep
    the true output below them, to the model's error.  The setpoint model (a DelayedPlant)
    carries no C: the bounds read the outputs through est.C and est.offset_ given."""
    plant, C, est, rng = _physical(seed)
    op = plant.operating_point
    gain = C @ np.linalg.solve(np.eye(3) - plant.A_d, plant.B_d)
    step = 3.0
    target = est.plant().with_operating_point(input=op.input + np.linalg.pinv(gain)[:, 0]
                                              * step)
    y_new = float((est.C @ target.operating_point.state + est.offset_)[0])
    Q = est.C.T @ est.C + 1e-6 * np.eye(est.order_)
    noise = np.full((1, 41), 2.0) + 0.001 * rng.standard_normal((1, 41))

    def loop(**bounds):
        mpc = DelayedMPC(target, horizon=15, Q=Q, R=1e-3 * np.eye(2), **bounds)
        run = simulate_closed_loop(plant, OutputFeedback(mpc, DelayedKalmanObserver(est)),
                                   op.state, 40, measurement_matrix=C, measurement_noise=noise)
        return (C @ run.states)[0] + 2.0

    overshoot = loop().max() - y_new
    assert overshoot > 0.01 * step                                   # the premise
    held = loop(y_max=[y_new + 0.3 * overshoot], soft_state_constraints=True, C=est.C,
                output_offset=est.offset_)
    assert held.max() - y_new <= 0.3 * overshoot + 0.01 * step
    assert abs(held[-1] - y_new) < 0.01 * step                        # it still gets there


def test_output_bounds_follow_a_new_model():
    """with_model re-reads the new output model's own C and level (a new identification is a
    new basis): the same moves as a controller built on it, not those of the old C."""
    plant, C, est, rng = _physical(2)
    E = random_excitation(2, 3000, rng=9)
    U = plant.operating_point.input[:, None] + E - E.mean(axis=1, keepdims=True)
    Y = C @ plant.simulate(plant.operating_point.state, U)[:, :-1] + 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = OutputDMDidc(max_delay=4).fit(Y + 0.05 * rng.standard_normal(Y.shape), U,
                                              dt=T)
    y_max = _level(est) + 0.05
    mpc = DelayedMPC(est, horizon=6, y_max=y_max, soft_state_constraints=True)
    updated = mpc.with_model(other)
    fresh = DelayedMPC(other, horizon=6, y_max=y_max, soft_state_constraints=True, Q=mpc.Q)
    stale = DelayedMPC(other.plant(), horizon=6, y_max=y_max, soft_state_constraints=True,
                       Q=mpc.Q, C=est.C, output_offset=est.offset_)
    # a state whose output starts 3 above the level (0.19 above it at the first step the
    # inputs reach): the bound 0.05 above it binds
    x = other.operating_point_.state + 3.0 * other.C[0] / np.sum(other.C[0] ** 2)
    moves = updated.solve(x).inputs
    free = DelayedMPC(other, horizon=6, Q=mpc.Q).solve(x).inputs
    assert np.abs(moves - free).max() > 1e-3                         # the bound binds
    np.testing.assert_allclose(moves, fresh.solve(x).inputs, atol=1e-8)
    assert np.abs(moves - stale.solve(x).inputs).max() > 1e-3       # not the old basis' C
    with pytest.raises(ParameterError, match="has none; or bound its states"):
        mpc.with_model(other.plant())
    with pytest.raises(ParameterError, match="read the outputs through the C given"):
        stale.with_model(other.plant())


def test_bad_output_bounds_are_refused():
    plant, C, est, _ = _physical(3)
    y_op = _level(est)
    with pytest.raises(ParameterError, match=r"y_min/y_max bound the outputs.*give C.*"
                                             r"DelayedPlant.*x_min/x_max"):
        DelayedMPC(plant, horizon=5, y_max=1.0)
    with pytest.raises(ParameterError, match="output_offset is the outputs' level"):
        DelayedMPC(est, horizon=5, output_offset=[0.0])
    with pytest.raises(ParameterError, match="C is the outputs' measurement matrix"):
        DelayedMPC(est.plant(), horizon=5, C=est.C)
    with pytest.raises(ParameterError, match="C differs from the measurement matrix"):
        DelayedMPC(est, horizon=5, y_max=y_op + 1.0, C=2.0 * est.C)
    with pytest.raises(DimensionError, match="C has shape"):
        DelayedMPC(est.plant(), horizon=5, y_max=1.0, C=np.ones((1, est.order_ + 1)))
    with pytest.raises(ParameterError, match=r"y_min > y_max in component\(s\) \[0\]"):
        DelayedMPC(est, horizon=5, y_min=y_op + 1.0, y_max=y_op - 1.0)
    with pytest.raises(ParameterError, match=r"y_op = .* lies outside \[y_min, y_max\]"):
        DelayedMPC(est, horizon=5, y_max=y_op - 1.0)
    with pytest.raises(DimensionError):
        DelayedMPC(est, horizon=5, y_max=[1.0, 2.0])
    with pytest.raises(ParameterError, match="state bounds .* or output bounds .*, not both"):
        DelayedMPC(est.plant(), horizon=5, x_max=10.0, y_max=y_op + 1.0, C=est.C,
                   output_offset=est.offset_)
    with pytest.raises(ParameterError, match=r"output_offset is required with C= .*"
                                             r"DelayedPlant has no offset_"):
        DelayedMPC(est.plant(), horizon=5, y_max=y_op + 1.0, C=est.C)
    DelayedMPC(est.plant(), horizon=5, y_max=y_op + 1.0, C=est.C, output_offset=est.offset_)
    # the refusal above asks for "0 for outputs y = C x": a scalar is every output's level
    # (it was refused as "must be 1-dimensional")
    scalar = DelayedMPC(est.plant(), horizon=5, y_max=y_op + 1.0, C=est.C,
                        output_offset=float(est.offset_[0]))
    vector = DelayedMPC(est.plant(), horizon=5, y_max=y_op + 1.0, C=est.C,
                        output_offset=np.full(est.C.shape[0], est.offset_[0]))
    assert np.array_equal(scalar.y_max, vector.y_max)
    assert np.array_equal(scalar._x_hi, vector._x_hi)
    with pytest.raises(DimensionError, match="expected a scalar or"):
        DelayedMPC(est.plant(), horizon=5, y_max=y_op + 1.0, C=est.C,
                   output_offset=np.zeros((1, 1)))
    with pytest.raises(ParameterError, match="soft_state_constraints needs state bounds"):
        DelayedMPC(est, horizon=5, soft_state_constraints=True)
    DelayedMPC(est, horizon=5, y_max=y_op + 1.0, soft_state_constraints=True)


def test_a_detrended_output_model_needs_the_output_level():
    plant, C, est, rng = _physical(0)
    E = random_excitation(2, 2000, rng=rng)
    Y = C @ plant.deviation_model().simulate(np.zeros(3), E)[:, :-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        centred = OutputDMDidc(max_delay=4, detrend="constant").fit(Y, E, dt=T)
    with pytest.raises(ParameterError, match=r"detrend='constant'.*pass output_offset="):
        DelayedMPC(centred, horizon=5, y_max=[1.0])
    mpc = DelayedMPC(centred, horizon=5, y_max=[1.0], output_offset=[0.5])
    result = mpc.solve(np.zeros(centred.order_) + 0.1)
    y = centred.C @ result.states[:, mpc.dead_steps + 1:] + 0.5
    assert np.all(y <= 1.0 + 1e-6)


def test_unreachable_hard_output_bounds_name_the_output():
    plant, C, est, _ = _physical(0)
    y_op = _level(est)
    mpc = DelayedMPC(est, horizon=4, u_min=plant.operating_point.input - 0.01,
                     u_max=plant.operating_point.input + 0.01, y_min=y_op - 0.01,
                     y_max=y_op + 0.01)
    x = est.operating_point_.state + 5.0 * est.C[0] / np.linalg.norm(est.C[0]) ** 2
    with pytest.raises(SolverError, match=r"(?s)hard output bounds y_min=.*the first bound that "
                                          r"cannot be met is y_(min|max)\[0\]"):
        mpc.solve(x)


def test_a_setpoint_of_the_output_model_keeps_its_outputs():
    """est.with_operating_point keeps C, the output level and the output weight: the same
    moves as the setpoint DelayedPlant given C=, output_offset= and Q = output_weight(C)."""
    from controllers.gains import output_weight

    plant, C, est, rng = _physical(3)
    u = est.operating_point_.input + np.array([1.0, -0.5])
    setpoint = est.with_operating_point(input=u)
    assert setpoint.C is est.C and est.operating_point_.input is not u
    np.testing.assert_allclose(setpoint.operating_point_.input, u)
    bare = est.plant().with_operating_point(input=u)
    np.testing.assert_allclose(setpoint.plant().operating_point.state,
                               bare.operating_point.state, rtol=1e-12)
    y_new = est.C @ setpoint.operating_point_.state + est.offset_
    x = est.operating_point_.state                    # at the old equilibrium
    ours = DelayedMPC(setpoint, horizon=8, y_max=y_new + 0.05, soft_state_constraints=True)
    theirs = DelayedMPC(bare, horizon=8, y_max=y_new + 0.05, soft_state_constraints=True,
                        C=est.C, output_offset=est.offset_, Q=output_weight(est.C))
    np.testing.assert_allclose(ours.Q, theirs.Q, rtol=1e-12)
    np.testing.assert_allclose(ours.solve(x).inputs, theirs.solve(x).inputs, atol=1e-8)
    loop = OutputFeedback(ours, DelayedKalmanObserver(est))      # the observer's model: est's
    loop.reset()
    assert loop(est.C @ x + est.offset_).shape == (2,)


def test_a_setpoint_copy_streams_on_its_own():
    """Chunks streamed into a setpoint copy of a partial_fit model do not enter the original
    (its stream is updated in place)."""
    plant, C, est, rng = _physical(3)
    E = random_excitation(2, 3000, rng=4)
    U = plant.operating_point.input[:, None] + E - E.mean(axis=1, keepdims=True)
    Y = C @ plant.simulate(plant.operating_point.state, U)[:, :-1] + 2.0
    Y = Y + 0.03 * Y.std() * rng.standard_normal(Y.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stream = OutputDMDidc(max_delay=4).partial_fit(Y[:, :2000], U[:, :2000], dt=T)
        samples = stream.samples_
        moved = stream.with_operating_point(input=stream.operating_point_.input + 1.0)
        moved.partial_fit(Y[:, 2000:], U[:, 2000:], dt=T)
    assert moved.samples_ == 3000 and stream.samples_ == samples == 2000
    assert stream._stream.samples == 2000          # the original's statistics, untouched
