"""Tests of the closed-loop simulator: fast (lifted) vs per-step paths, noise, cost and errors."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy import stats

from dmdidc import DelayedPlant
from privacy.errors import DimensionError, NonFiniteError, ParameterError
from simulations.closed_loop import (
    ClosedLoopResult,
    Controller,
    LinearController,
    NoiseSampler,
    noise_sampler,
    simulate_closed_loop,
)
from simulations.plant import intersample_trajectory, simulate_plant
from tests.seed_example import A_C as SEED_A
from tests.seed_example import B_C as SEED_B


class LinearGain:
    """u_k = K_x y_k + sum_i K_u[i-1] u_{k-i}, keeping its own input history."""

    def __init__(self, K_x, K_u=None):
        self.K_x = np.asarray(K_x, dtype=float)
        m = self.K_x.shape[0]
        self.K_u = np.zeros((0, m, m)) if K_u is None else np.asarray(K_u, dtype=float)
        self.resets = 0
        self.reset()

    def reset(self):
        self.history = [np.zeros(self.K_x.shape[0]) for _ in range(self.K_u.shape[0])]
        self.resets += 1

    def __call__(self, x):
        u = self.K_x @ x
        for i, gain in enumerate(self.K_u):
            u = u + gain @ self.history[-1 - i]
        if self.K_u.shape[0]:
            self.history = self.history[1:] + [u]
        return u

    def feedback_matrices(self):
        return self.K_x, self.K_u


class Opaque:
    """A generic controller (no feedback_matrices) wrapping a function of the measurement."""

    def __init__(self, law):
        self.law = law

    def reset(self):
        pass

    def __call__(self, x):
        return self.law(x)


def stabilizing_gain(plant):
    import control
    K, _, _ = control.dlqr(plant.A_d, plant.B_d, np.eye(plant.n_states), np.eye(plant.n_inputs))
    return -K


@pytest.fixture
def seed_plant():
    return DelayedPlant.from_continuous(SEED_A, SEED_B, [2.5, 3.0], 2.0)


@pytest.fixture
def big_plant():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6)) * 0.4
    B = rng.normal(size=(6, 2))
    return DelayedPlant.from_continuous(A, B, [0.13, 0.27], 0.1)


def relative_gap(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


# ---------------------------------------------------------------------- fast path vs per-step path
@pytest.mark.parametrize("history", [0, 1, 4])   # H < R, H = R, H > R (R = 2 for big_plant)
def test_linear_and_step_paths_agree(big_plant, history):
    rng = np.random.default_rng(history)
    K_x = stabilizing_gain(big_plant)
    K_u = 0.05 * rng.normal(size=(history, 2, 2))
    x0 = rng.normal(size=6)
    fast = simulate_closed_loop(big_plant, LinearGain(K_x, K_u), x0, 400, method="linear")
    slow = simulate_closed_loop(big_plant, LinearGain(K_x, K_u), x0, 400, method="step")
    assert (fast.method, slow.method) == ("linear", "step")
    assert relative_gap(fast.states, slow.states) < 1e-12
    assert relative_gap(fast.inputs, slow.inputs) < 1e-12
    assert abs(fast.cost - slow.cost) <= 1e-12 * slow.cost


def test_paths_agree_with_noise(big_plant):
    K_x = stabilizing_gain(big_plant)
    x0 = np.ones(6)
    kwargs = dict(process_noise=noise_sampler("normal", 0.1),
                  measurement_noise=noise_sampler("t", 0.05, df=3), rng=11)
    fast = simulate_closed_loop(big_plant, LinearGain(K_x), x0, 300, method="linear", **kwargs)
    slow = simulate_closed_loop(big_plant, LinearGain(K_x), x0, 300, method="step", **kwargs)
    assert relative_gap(fast.states, slow.states) < 1e-12
    assert relative_gap(fast.inputs, slow.inputs) < 1e-12
    np.testing.assert_array_equal(fast.measurement_noise, slow.measurement_noise)


@pytest.mark.parametrize("noisy", [False, True])
# long runs take the blocked recursion; 1089 = 33^2 fills its last block exactly
@pytest.mark.parametrize("steps", [1025, 1089, 4099])
def test_blocked_linear_path_agrees_with_step_path(big_plant, noisy, steps):
    K_x = stabilizing_gain(big_plant)
    K_u = np.array([[[0.02, 0.0], [0.01, -0.03]]])
    kwargs = dict(process_noise=noise_sampler("normal", 0.1),
                  measurement_noise=noise_sampler("laplace", 0.05), rng=2) if noisy else {}
    x0 = np.linspace(-1.0, 1.0, 6)
    fast = simulate_closed_loop(big_plant, LinearGain(K_x, K_u), x0, steps, method="linear",
                                **kwargs)
    slow = simulate_closed_loop(big_plant, LinearGain(K_x, K_u), x0, steps, method="step",
                                **kwargs)
    assert fast.states.shape == (6, steps + 1) and fast.inputs.shape == (2, steps)
    assert relative_gap(fast.states, slow.states) < 1e-12
    assert relative_gap(fast.inputs, slow.inputs) < 1e-12
    assert abs(fast.cost - slow.cost) <= 1e-12 * slow.cost


def test_auto_picks_linear_path(seed_plant):
    K_x = stabilizing_gain(seed_plant)
    assert simulate_closed_loop(seed_plant, LinearGain(K_x), [1.0, 0.0], 5).method == "linear"
    opaque = Opaque(lambda x: K_x @ x)
    assert simulate_closed_loop(seed_plant, opaque, [1.0, 0.0], 5).method == "step"


def test_closed_loop_states_are_the_plant_response_to_the_inputs(seed_plant):
    K_x = stabilizing_gain(seed_plant)
    for method in ("linear", "step"):
        result = simulate_closed_loop(seed_plant, LinearGain(K_x), [1.0, -2.0], 30, method=method)
        X = simulate_plant(seed_plant, [1.0, -2.0], result.inputs)
        assert relative_gap(result.states, X) < 1e-12
        np.testing.assert_allclose(result.inputs[:, 0], K_x @ [1.0, -2.0], rtol=1e-14)


def test_loop_with_history_feedback_matches_hand_recursion(seed_plant):
    K_x = stabilizing_gain(seed_plant)
    K_u = np.array([[[0.1, 0.0], [0.0, -0.1]]])
    result = simulate_closed_loop(seed_plant, LinearGain(K_x, K_u), [0.5, 0.5], 20)
    X = np.zeros((2, 21))
    U = np.zeros((2, 20))
    X[:, 0] = [0.5, 0.5]
    B = seed_plant.B_blocks
    for k in range(20):
        previous = U[:, k - 1] if k >= 1 else np.zeros(2)
        U[:, k] = K_x @ X[:, k] + K_u[0] @ previous
        X[:, k + 1] = seed_plant.A_d @ X[:, k] + sum(
            B[j] @ U[:, k - j] for j in range(B.shape[0]) if k - j >= 0)
    assert relative_gap(result.states, X) < 1e-12
    assert relative_gap(result.inputs, U) < 1e-12


def lifted_matrix(plant, controller):
    """The controllers package's exact closed-loop matrix (the lower package owns it)."""
    import controllers.analysis as analysis
    return analysis.closed_loop_matrix(plant, controller)


@pytest.mark.parametrize("history", [0, 1, 5])
def test_simulation_iterates_the_controllers_closed_loop_matrix(seed_plant, history):
    rng = np.random.default_rng(history)
    controller = LinearGain(stabilizing_gain(seed_plant), 0.1 * rng.normal(size=(history, 2, 2)))
    M = lifted_matrix(seed_plant, controller)
    z = np.zeros(M.shape[0])
    z[:2] = [1.0, -1.0]
    states = [z[:2]]
    for _ in range(40):
        z = M @ z
        states.append(z[:2])
    for method in ("linear", "step"):
        result = simulate_closed_loop(seed_plant, controller, [1.0, -1.0], 40, method=method)
        assert relative_gap(result.states, np.array(states).T) < 1e-12
    # The delay-naive gain with random history terms destabilizes this plant (radii measured
    # 1.18-1.31): the simulation must diverge accordingly.
    radius = max(abs(np.linalg.eigvals(M)))
    assert radius > 1.05
    result = simulate_closed_loop(seed_plant, controller, [1.0, 1.0], 300)
    assert result.final_norm > 1.0


def test_simulation_converges_when_the_lifted_loop_is_stable(seed_plant):
    from controllers import PredictiveController, lqr_gain

    law = PredictiveController(seed_plant, lqr_gain(seed_plant), prediction="exact")
    controller = LinearGain(*law.feedback_matrices())
    M = lifted_matrix(seed_plant, controller)
    radius = max(abs(np.linalg.eigvals(M)))
    assert radius < 0.95                                       # measured 0.70
    for method in ("linear", "step"):
        result = simulate_closed_loop(seed_plant, controller, [1.0, 1.0], 300, method=method)
        assert result.final_norm < 1e-6
        # and it decays at the rate the lifted matrix predicts: |z_k| <= c rho^k
        norms = np.linalg.norm(result.states, axis=0)
        assert norms[100] < 1e3 * radius ** 100 * norms[0]


def test_controller_is_reset(seed_plant):
    controller = LinearGain(stabilizing_gain(seed_plant))
    before = controller.resets
    simulate_closed_loop(seed_plant, controller, [1.0, 0.0], 3, method="step")
    simulate_closed_loop(seed_plant, controller, [1.0, 0.0], 3, method="linear")
    assert controller.resets == before + 2


def test_protocols_are_runtime_checkable(seed_plant):
    controller = LinearGain(np.zeros((2, 2)))
    assert isinstance(controller, LinearController) and isinstance(controller, Controller)
    assert not isinstance(Opaque(lambda x: x), LinearController)


# ---------------------------------------------------------------------- fine trajectory
@pytest.mark.parametrize("method", ["linear", "step"])
def test_fine_trajectory_passes_through_samples(seed_plant, method):
    K_x = stabilizing_gain(seed_plant)
    result = simulate_closed_loop(seed_plant, LinearGain(K_x), [1.0, 0.0], 15, fine=True,
                                  points_per_step=10, method=method)
    assert result.fine_states.shape == (2, 151) and result.fine_times.shape == (151,)
    np.testing.assert_array_equal(result.fine_states[:, ::10], result.states)
    np.testing.assert_allclose(result.fine_times[::10], result.times, rtol=1e-15)
    t, X_fine = intersample_trajectory(seed_plant, [1.0, 0.0], result.inputs, points_per_step=10)
    assert relative_gap(result.fine_states, X_fine) < 1e-12


def test_fine_is_none_by_default(seed_plant):
    result = simulate_closed_loop(seed_plant, LinearGain(np.zeros((2, 2))), [1.0, 0.0], 4)
    assert result.fine_states is None and result.fine_times is None


def test_fine_trajectory_with_process_noise_jumps_at_samples(seed_plant):
    K_x = stabilizing_gain(seed_plant)
    W = np.random.default_rng(2).normal(size=(2, 6))
    result = simulate_closed_loop(seed_plant, LinearGain(K_x), [1.0, 0.0], 6, fine=True,
                                  points_per_step=4, process_noise=W)
    np.testing.assert_array_equal(result.fine_states[:, ::4], result.states)


# ---------------------------------------------------------------------- cost
def test_cost_is_the_sum_of_stage_costs(seed_plant):
    K_x = stabilizing_gain(seed_plant)
    Q = np.array([[2.0, 0.3], [0.3, 1.0]])
    R = np.array([[0.5, 0.0], [0.0, 3.0]])
    result = simulate_closed_loop(seed_plant, LinearGain(K_x), [1.0, -1.0], 25, Q=Q, R=R)
    X, U = result.states, result.inputs
    expected = sum(X[:, k] @ Q @ X[:, k] + U[:, k] @ R @ U[:, k] for k in range(25))
    assert result.cost == pytest.approx(expected, rel=1e-13)
    assert result.stage_costs.shape == (25,)
    default = simulate_closed_loop(seed_plant, LinearGain(K_x), [1.0, -1.0], 25)
    assert default.cost == pytest.approx(float(np.sum(X[:, :-1] ** 2) + np.sum(U ** 2)),
                                         rel=1e-13)


def test_zero_steps(seed_plant):
    result = simulate_closed_loop(seed_plant, LinearGain(np.ones((2, 2))), [1.0, 2.0], 0,
                                  fine=True)
    assert result.states.shape == (2, 1) and result.inputs.shape == (2, 0)
    assert result.cost == 0.0 and result.final_norm == pytest.approx(np.sqrt(5.0))
    np.testing.assert_array_equal(result.fine_states, [[1.0], [2.0]])


# ---------------------------------------------------------------------- noise and reproducibility
def test_same_seed_same_result(big_plant):
    K_x = stabilizing_gain(big_plant)
    opaque = Opaque(lambda x: K_x @ x)
    runs = [simulate_closed_loop(big_plant, opaque, np.ones(6), 50,
                                 process_noise=noise_sampler("laplace", 0.2),
                                 measurement_noise=noise_sampler("normal", 0.1), rng=seed)
            for seed in (5, 5, 6)]
    np.testing.assert_array_equal(runs[0].states, runs[1].states)
    np.testing.assert_array_equal(runs[0].inputs, runs[1].inputs)
    assert not np.allclose(runs[0].states, runs[2].states)
    generator_run = simulate_closed_loop(big_plant, opaque, np.ones(6), 50,
                                         process_noise=noise_sampler("laplace", 0.2),
                                         measurement_noise=noise_sampler("normal", 0.1),
                                         rng=np.random.default_rng(5))
    np.testing.assert_array_equal(runs[0].states, generator_run.states)


def test_explicit_noise_arrays(seed_plant):
    rng = np.random.default_rng(3)
    W = rng.normal(size=(2, 10))
    V = rng.normal(size=(2, 11))
    K_x = stabilizing_gain(seed_plant)
    result = simulate_closed_loop(seed_plant, LinearGain(K_x), [0.0, 0.0], 10, process_noise=W,
                                  measurement_noise=V)
    np.testing.assert_allclose(result.measurements, result.states + V, rtol=1e-15)
    np.testing.assert_allclose(result.inputs, K_x @ (result.states + V)[:, :10], rtol=1e-12,
                               atol=1e-12)
    short = simulate_closed_loop(seed_plant, LinearGain(K_x), [0.0, 0.0], 10, process_noise=W,
                                 measurement_noise=V[:, :10])
    np.testing.assert_array_equal(short.measurement_noise[:, -1], [0.0, 0.0])
    np.testing.assert_allclose(short.states, result.states, rtol=1e-15)


def test_sampler_draws_process_then_measurement_noise(seed_plant):
    calls = []

    def sampler(rng, shape):
        calls.append(shape)
        return rng.normal(size=shape)

    simulate_closed_loop(seed_plant, LinearGain(np.zeros((2, 2))), [0.0, 0.0], 7,
                         process_noise=sampler, measurement_noise=sampler, rng=0)
    assert calls == [(2, 7), (2, 8)]


def test_noise_sampler_distributions():
    import scipy.stats as scipy_stats
    rng = np.random.default_rng(0)
    normal = noise_sampler("gaussian", 2.0, loc=1.0)
    draws = normal(rng, (200_000,))
    assert abs(draws.mean() - 1.0) < 0.03 and abs(draws.std() - 2.0) < 0.03
    laplace = noise_sampler("laplace", 0.5)(rng, (200_000,))
    assert abs(np.mean(np.abs(laplace)) - 0.5) < 0.01
    t3 = noise_sampler("t", 1.0, df=3)
    assert isinstance(t3, NoiseSampler) and t3(rng, (3, 4)).shape == (3, 4)
    frozen = noise_sampler(scipy_stats.cauchy(), 0.1)(1, (5,))
    np.testing.assert_allclose(frozen, 0.1 * scipy_stats.cauchy().rvs(size=5, random_state=
                                                                        np.random.default_rng(1)))
    unfrozen = noise_sampler(scipy_stats.uniform, 2.0, loc=-1.0)(rng, (1000,))
    assert unfrozen.min() >= -1.0 and unfrozen.max() <= 1.0
    first = noise_sampler("t", 1.0, df=2)(7, (10,))
    np.testing.assert_array_equal(first, noise_sampler("t", 1.0, df=2)(7, (10,)))


def test_noise_sampler_bad_arguments():
    with pytest.raises(ParameterError, match="distribution"):
        noise_sampler("no_such_distribution")
    with pytest.raises(ParameterError, match="scale"):
        noise_sampler("normal", 0.0)
    with pytest.raises(ParameterError, match="distribution"):
        noise_sampler(3.0)


@pytest.mark.parametrize(("args", "params", "message"), [
    (("sas", 0.5), {"alpha": 3.0}, r"alpha must lie in \(0.0, 2.0\]; got 3.0"),
    (("sas", 0.5), {"alpha": 0.0}, "alpha must lie in"),
    (("sas", 0.5), {"alpha": float("nan")}, "alpha must be finite"),
    (("sas", 0.5), {}, "needs the stability index alpha"),
    (("sas", 0.5), {"alpha": 1.5, "beta": 0.5}, r"takes only alpha; got \['beta'\]"),
    (("normal", 0.5), {"alpha": 1.5}, "takes no shape parameters"),
    (("laplace", 0.5), {"df": 3}, "takes no shape parameters"),
    (("t", 0.5), {"df": -1.0}, r"\(df=-1.0\) are outside the domain of the scipy.stats t"),
    (("t", 0.5), {}, "its shape parameters: df"),
    (("t", 0.5), {"df": 3, "nu": 2}, "unexpected keyword argument 'nu'"),
    (("levy_stable", 0.5), {"alpha": 3.0, "beta": 0.0}, "outside the domain"),
    (("poisson", 0.5), {"mu": 2.0}, "continuous scipy.stats distribution"),
    (("normal", 0.5), {"loc": float("inf")}, "loc must be finite"),
])
def test_noise_sampler_refuses_bad_parameters_at_construction(args, params, message):
    """Every parameter is checked when the sampler is made, not first when it draws."""
    with pytest.raises(ParameterError, match=message):
        noise_sampler(*args, **params)


def test_noise_sampler_refuses_bad_scipy_objects():
    import scipy.stats as scipy_stats
    with pytest.raises(ParameterError, match=r"\(-1\) are outside the domain"):
        noise_sampler(scipy_stats.t(-1), 0.1)
    with pytest.raises(ParameterError, match="frozen scipy.stats t distribution takes no"):
        noise_sampler(scipy_stats.t(3), 0.1, df=2)
    with pytest.raises(ParameterError, match=r"\(df=0\) are outside the domain"):
        noise_sampler(scipy_stats.t, 0.1, df=0)


def test_sas_noise_sampler():
    from privacy.stable import sas_sample
    sampler = noise_sampler("sas", 0.5, alpha=1.5)
    draws = sampler(3, (2, 100))
    np.testing.assert_array_equal(draws, sas_sample(1.5, scale=0.5, size=(2, 100), rng=3))
    assert sampler.params == {"alpha": 1.5}


def test_sas_noise_through_the_loop(big_plant):
    from privacy.stable import sas_sample
    K_x = stabilizing_gain(big_plant)
    kwargs = dict(process_noise=noise_sampler("sas", 0.01, alpha=1.7),
                  measurement_noise=noise_sampler("sas", 0.01, alpha=1.2), rng=4)
    fast = simulate_closed_loop(big_plant, LinearGain(K_x), np.zeros(6), 1500, method="linear",
                                **kwargs)
    slow = simulate_closed_loop(big_plant, LinearGain(K_x), np.zeros(6), 1500, method="step",
                                **kwargs)
    assert relative_gap(fast.states, slow.states) < 1e-12
    # process noise is drawn first; both delays exceed dt, so x_1 = w_0 exactly
    expected = sas_sample(1.7, scale=0.01, size=(6, 1500), rng=np.random.default_rng(4))
    np.testing.assert_allclose(fast.states[:, 1], expected[:, 0], rtol=1e-12)


def test_heavy_tailed_noise_runs_through_the_loop(big_plant):
    K_x = stabilizing_gain(big_plant)
    result = simulate_closed_loop(big_plant, LinearGain(K_x), np.zeros(6), 200,
                                  measurement_noise=noise_sampler("levy_stable", 0.01,
                                                                  alpha=1.5, beta=0.0),
                                  rng=0)
    # the loop is the plant driven by u_k = K_x (x_k + v_k), with the recorded heavy-tailed v
    V = result.measurement_noise
    assert relative_gap(result.inputs, K_x @ (result.states + V)[:, :-1]) < 1e-12
    assert relative_gap(result.states, big_plant.simulate(np.zeros(6), result.inputs)) < 1e-12
    # and it is scipy's levy_stable draw (scale 0.01), with its tail: the largest of 1206
    # |draws| is 126x the median, where a normal sample gives ~6x
    reference = stats.levy_stable.rvs(1.5, 0.0, scale=0.01, size=V.shape,
                                      random_state=np.random.default_rng(0))
    np.testing.assert_array_equal(V, reference)
    assert np.max(np.abs(V)) > 20 * np.median(np.abs(V))


# ---------------------------------------------------------------------- result object
def test_result_is_immutable_and_serializable(seed_plant, tmp_path):
    result = simulate_closed_loop(seed_plant, LinearGain(stabilizing_gain(seed_plant)),
                                  [1.0, 0.0], 6, measurement_noise=np.full((2, 7), 0.01),
                                  fine=True, points_per_step=3)
    assert isinstance(result, ClosedLoopResult)
    with pytest.raises(ValueError):
        result.states[0, 0] = 5.0
    with pytest.raises(AttributeError):
        result.cost = 0.0
    data = json.loads(json.dumps(result.to_dict()))
    assert np.allclose(data["states"], result.states) and len(data["fine_times"]) == 19
    path = result.to_csv(tmp_path / "run.csv")
    lines = path.read_text().splitlines()
    assert lines[0] == "t,x_1,x_2,y_1,y_2,u_1,u_2"
    assert len(lines) == 8 and lines[-1].endswith(",,")
    table = np.genfromtxt(path, delimiter=",", skip_header=1)
    np.testing.assert_array_equal(table[:, 1:3], result.states.T)
    np.testing.assert_array_equal(table[:-1, 5:7], result.inputs.T)
    assert result.steps == 6 and result.state_norms.shape == (7,)


def test_progress_bar(seed_plant, capsys):
    result = simulate_closed_loop(seed_plant, LinearGain(np.zeros((2, 2))), [1.0, 0.0], 10,
                                  progress=True)
    assert result.states.shape == (2, 11)
    assert "closed loop" in capsys.readouterr().err


@pytest.mark.parametrize("steps", [1025, 1089, 2000, 4099])
def test_blocked_recursion_matches_plain_loop_and_counts_steps(steps):
    from simulations.closed_loop import _linear_trajectory

    class Counter:
        total = 0

        def update(self, count):
            assert count >= 0
            self.total += count

    rng = np.random.default_rng(steps)
    A = 0.2 * rng.normal(size=(5, 5))
    z0 = rng.normal(size=5)
    # with forcing (block starts, then the blocks stepped together) and without (every block's
    # rows one product of its start with the powers of A)
    for forcing in (rng.normal(size=(steps, 5)), None):
        bar = Counter()
        Z = _linear_trajectory(A, z0, forcing, steps, bar)
        plain = _linear_trajectory(A, z0, forcing, steps, None, blocked=False)
        assert Z.shape == plain.shape == (steps + 1, 5) and bar.total == steps
        assert relative_gap(Z, plain) < 1e-12


# ---------------------------------------------------------------------- errors
@pytest.mark.parametrize("steps", [-1, 2.5, True, "10", None])
def test_bad_steps(seed_plant, steps):
    with pytest.raises(ParameterError, match="steps"):
        simulate_closed_loop(seed_plant, LinearGain(np.zeros((2, 2))), [1.0, 0.0], steps)


def test_bad_arguments(seed_plant):
    gain = LinearGain(np.zeros((2, 2)))
    with pytest.raises(DimensionError, match=r"x0 has shape \(3,\)"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0, 0.0], 5)
    with pytest.raises(DimensionError, match="x0"):
        simulate_closed_loop(seed_plant, gain, [[1.0, 0.0]], 5)
    with pytest.raises(NonFiniteError, match="x0"):
        simulate_closed_loop(seed_plant, gain, [np.nan, 0.0], 5)
    with pytest.raises(ParameterError, match="method"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0], 5, method="fast")
    with pytest.raises(ParameterError, match="feedback_matrices"):
        simulate_closed_loop(seed_plant, Opaque(lambda x: x), [1.0, 0.0], 5, method="linear")
    with pytest.raises(ParameterError, match="controller"):
        simulate_closed_loop(seed_plant, object(), [1.0, 0.0], 5)
    with pytest.raises(DimensionError, match="process_noise"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0], 5, process_noise=np.zeros((5, 2)))
    with pytest.raises(DimensionError, match="measurement_noise"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0], 5,
                             measurement_noise=np.zeros((2, 4)))
    with pytest.raises(DimensionError, match="Q has shape"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0], 5, Q=np.eye(3))
    with pytest.raises(DimensionError, match="R has shape"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0], 5, R=np.eye(1))
    with pytest.raises(ParameterError, match="points_per_step"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0], 5, fine=True, points_per_step=0)
    with pytest.raises(ParameterError, match="points_per_step needs fine=True"):
        simulate_closed_loop(seed_plant, gain, [1.0, 0.0], 5, points_per_step=10)
    with pytest.raises(ParameterError, match="plant"):
        simulate_closed_loop(np.eye(2), gain, [1.0, 0.0], 5)


@pytest.mark.parametrize("returned, error, message", [
    (np.zeros(3), DimensionError, r"controller at step 0 returned shape \(3,\); expected \(2,\)"),
    (np.zeros((2, 1)), DimensionError, r"shape \(2, 1\)"),
    (np.array([np.nan, 0.0]), NonFiniteError,
     r"step 0 returned NaN or infinite values \[nan, 0.0\] \(norm of the measured state: 1"),
    ("abc", DimensionError, r"returned str, not a numeric array of shape \(2,\)"),
    (None, DimensionError, r"shape \(\)"),
])
def test_controller_returning_garbage(seed_plant, returned, error, message):
    with pytest.raises(error, match=message):
        simulate_closed_loop(seed_plant, Opaque(lambda x: returned), [1.0, 0.0], 5)


def test_bad_feedback_matrices(seed_plant):
    with pytest.raises(DimensionError, match="K_x has shape"):
        simulate_closed_loop(seed_plant, LinearGain(np.zeros((2, 3))), [1.0, 0.0], 5)

    class BadHistory(LinearGain):
        def feedback_matrices(self):
            return self.K_x, np.zeros((2, 3))

    with pytest.raises(DimensionError, match="K_u has shape"):
        simulate_closed_loop(seed_plant, BadHistory(np.zeros((2, 2))), [1.0, 0.0], 5)
    with pytest.raises(NonFiniteError, match="K_x"):
        simulate_closed_loop(seed_plant, LinearGain(np.full((2, 2), np.inf)), [1.0, 0.0], 5)


@pytest.mark.parametrize("method", ["linear", "step"])
def test_divergence_is_reported(method):
    plant = DelayedPlant.from_continuous([[1.0]], [[1.0]], 0.0, 1.0)
    gain = LinearGain([[5.0]])   # pushes the unstable plant further out
    with pytest.raises(NonFiniteError, match=r"no longer finite at step|at step \d+ returned NaN"):
        simulate_closed_loop(plant, gain, [1.0], 2000, method=method)


@pytest.mark.parametrize("method", ["linear", "step"])
def test_cost_beyond_the_float_range_is_inf_without_numpy_warnings(method):
    # states grow by 5 + 6 (e - 1) ~ 15.3 a step: x_200 ~ 1e237 is finite, x_200^2 is not
    plant = DelayedPlant.from_continuous([[1.0]], [[1.0]], 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = simulate_closed_loop(plant, LinearGain([[5.0]]), [1.0], 200, method=method)
    assert np.isfinite(result.states).all() and abs(result.states[0, -1]) > 1e200
    assert result.cost == np.inf
    assert result.final_norm == pytest.approx(abs(result.states[0, -1]), rel=1e-15)


# ---------------------------------------------------------------------- seed example (Ch. 9.4.3)
class FractionalPredictor:
    """u_k = -K x(kT + r) with the state predicted over the (fractional) delay (eqs. 9.70-9.74).

    The prediction is linear in x_k and the past inputs, so the controller is linear and exposes
    its feedback matrices; the prediction itself is read off the exact inter-sample solution.
    """

    def __init__(self, plant, K):
        self.plant, self.K = plant, K
        n, m, R = plant.n_states, plant.n_inputs, plant.max_delay
        self.delay = float(plant.delay[0])
        self.M = np.column_stack([self._predict(e, np.zeros((m, R))) for e in np.eye(n)])
        self.N = np.zeros((R, n, m))
        for i in range(1, R + 1):
            for j in range(m):
                past = np.zeros((m, R))
                past[j, R - i] = 1.0          # u_{k-i}
                self.N[i - 1, :, j] = self._predict(np.zeros(n), past)
        self.reset()

    def _predict(self, x, past):
        m, R = self.plant.n_inputs, self.plant.max_delay
        _, X = intersample_trajectory(self.plant, x, np.zeros((m, max(R, 1))), U_past=past,
                                      times=[self.delay])
        return X[:, 0]

    def reset(self):
        self.history = np.zeros((self.plant.max_delay, self.plant.n_inputs))  # u_{k-1}, ...

    def __call__(self, x):
        predicted = self.M @ x + sum(N @ u for N, u in zip(self.N, self.history, strict=True))
        u = -self.K @ predicted
        if len(self.history):
            self.history = np.vstack([u, self.history[:-1]])
        return u

    def feedback_matrices(self):
        return -self.K @ self.M, np.stack([-self.K @ N for N in self.N])


@pytest.mark.parametrize("delay_periods", [1.0, 1.25, 1.5])
def test_seed_fractional_predictor_gives_delay_free_loop(delay_periods):
    """Eq. (9.75): with u_k = -K x(kT + r), x((k+1)T + r) = (A_d - B_d K) x(kT + r)."""
    import control
    T = 2.0
    plant = DelayedPlant.from_continuous(SEED_A, SEED_B, delay_periods * T, T)
    K, _, _ = control.dlqr(plant.A_d, plant.B_d, np.eye(2), np.eye(2))
    controller = FractionalPredictor(plant, K)
    x0 = np.array([1.0, -0.5])
    fast = simulate_closed_loop(plant, controller, x0, 12, method="linear")
    slow = simulate_closed_loop(plant, controller, x0, 12, method="step")
    assert relative_gap(fast.states, slow.states) < 1e-12
    r = delay_periods * T
    times = np.arange(12) * T + r
    times = times[times <= 12 * T]
    _, X_r = intersample_trajectory(plant, x0, fast.inputs, times=times)
    A_target = plant.A_d - plant.B_d @ K
    np.testing.assert_allclose(X_r[:, 1:], A_target @ X_r[:, :-1], rtol=1e-9, atol=1e-12)
    # the lifted loop's nonzero poles are those of A_d - B_d K (finite spectrum assignment)
    poles = np.linalg.eigvals(lifted_matrix(plant, controller))
    nonzero = np.sort_complex(poles[np.abs(poles) > 1e-6])
    np.testing.assert_allclose(nonzero, np.sort_complex(np.linalg.eigvals(A_target)), atol=1e-8)


def test_caller_noise_array_is_copied_and_weights_checked():
    plant = DelayedPlant.from_continuous([[0.0, 1.0], [-1.0, 0.0]], np.eye(2), 0.5, 1.0)

    class Zero:
        def reset(self):
            pass

        def __call__(self, x):
            return np.zeros(2)

    V = np.zeros((2, 11))
    result = simulate_closed_loop(plant, Zero(), [1.0, 0.0], 10, measurement_noise=V)
    V[0, 0] = 5.0                                   # the caller's array stays writeable
    assert result.measurement_noise[0, 0] == 0.0
    with pytest.raises(ValueError, match="positive semidefinite"):
        simulate_closed_loop(plant, Zero(), [1.0, 0.0], 5, Q=-np.eye(2))


@pytest.mark.parametrize("seed", range(6))
def test_unforced_readouts_equal_the_plain_loop_read_out(seed):
    """The closed loop without noise reads states and inputs straight from the block starts
    (every block's samples of one signal one product): equal to the plain loop's trajectory
    read out by the same matrices, for lengths that do and do not fill the last block."""
    from simulations.closed_loop import _linear_trajectory, _unforced_readouts

    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 20))
    n, m = int(rng.integers(1, size + 1)), int(rng.integers(1, 4))
    A = rng.standard_normal((size, size))
    A *= rng.uniform(0.5, 0.999) / np.max(np.abs(np.linalg.eigvals(A)))
    z0, C, steps = rng.standard_normal(size), rng.standard_normal((m, size)), 1100 + 997 * seed
    X, U = _unforced_readouts(A, z0, steps, (np.eye(n, size), C), None)
    Z = _linear_trajectory(A, z0, None, steps, None, blocked=False)
    assert X.shape == (n, steps + 1) and U.shape == (m, steps + 1)
    assert relative_gap(X, Z[:, :n].T) < 1e-12 and relative_gap(U, C @ Z.T) < 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_a_controller_for_another_sampling_period_is_refused(seed):
    """Review finding: a controller designed at T = 1 s ran on the README plant at T = 2 s
    (cost 1.75e9, the MPC's 1.8e13) without a word; the loop now compares the periods, as the
    command line did, for state and output feedback and with an operating point."""
    from controllers import (
        DelayedKalmanObserver,
        OutputFeedback,
        UnstableLoopWarning,
        make_controller,
    )

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    A_c = rng.standard_normal((n, n)) - 0.3 * np.eye(n)
    B_c = rng.standard_normal((n, 2))
    delay = rng.uniform(0.3, 2.0, 2)
    dt = float(rng.uniform(0.4, 1.0))
    plant = DelayedPlant.from_continuous(A_c, B_c, delay, dt)
    model = DelayedPlant.from_continuous(A_c, B_c, delay, dt * rng.choice([0.5, 2.0]))
    x0 = rng.standard_normal(n)
    C = rng.standard_normal((1, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnstableLoopWarning)
        built = [make_controller(name, model, **({"horizon": 4} if name == "mpc" else {}))
                 for name in ("fractional", "exact", "naive", "mpc")]
        built.append(OutputFeedback(make_controller("exact", model),
                                    DelayedKalmanObserver(model, C=C)))
    for controller in built:
        with pytest.raises(ParameterError, match=rf"sampled at T = {model.dt:g} s and the "
                                                 rf"plant is sampled at T = {plant.dt:g} s"):
            simulate_closed_loop(plant, controller, x0, 5,
                                 measurement_matrix=C if hasattr(controller, "observer")
                                 else None)
    x_op = plant.steady_state([1.0, 2.0])
    physical = DelayedPlant.from_continuous(A_c, B_c, delay, dt * 2,
                                            operating_point=(x_op, [1.0, 2.0]))
    with pytest.raises(ParameterError, match="sampled at"):
        simulate_closed_loop(physical, make_controller("fractional", plant.with_operating_point(
            input=[1.0, 2.0])), x_op, 5)
    # the same period passes
    simulate_closed_loop(plant, make_controller("fractional", plant), x0, 5)


class Recorder:
    """Output feedback of one's own, ``u = u_level + G (y - y_level)``, that records every
    measurement it is given."""

    def __init__(self, gain, y_level=0.0, u_level=0.0):
        self.gain, self.y_level, self.u_level = np.asarray(gain, dtype=float), y_level, u_level
        self.seen = []

    def reset(self):
        self.seen = []

    def __call__(self, y):
        self.seen.append(np.array(y, dtype=float))
        return self.u_level + self.gain @ (y - self.y_level)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("sensors", [1, 2, 4])
def test_measurements_are_the_outputs_the_controller_saw(seed, sensors, tmp_path):
    """Review finding: with measurement_matrix the result's measurements were states + v (one
    sensor: (n, K+1) rows; two: a broadcast error); they are C x + v, what the controller was
    given, for l outputs other than n states, with and without an operating point."""
    rng = np.random.default_rng(seed)
    n = 3
    A_c = rng.standard_normal((n, n)) - np.eye(n)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((n, 2)),
                                         rng.uniform(0.2, 1.5, 2), 0.5)
    u_op = rng.uniform(1.0, 5.0, 2)
    physical = DelayedPlant.from_continuous(A_c, plant.B_c, plant.delay, 0.5,
                                            operating_point=(plant.steady_state(u_op), u_op))
    C = rng.standard_normal((sensors, n))
    steps = 12
    for true, noise in ((plant, None), (plant, 0.01 * rng.standard_normal((sensors, steps + 1))),
                        (physical, 0.01 * rng.standard_normal((sensors, steps + 1)))):
        op = true.operating_point
        gain = 0.1 * rng.standard_normal((2, sensors))
        controller = Recorder(gain) if op is None else Recorder(gain, C @ op.state, op.input)
        if op is not None:
            controller.operating_point = op            # it measures and commands physically
        x0 = rng.standard_normal(n) + (0.0 if op is None else op.state)
        result = simulate_closed_loop(true, controller, x0, steps, measurement_matrix=C,
                                      measurement_noise=noise)
        seen = np.array(controller.seen).T                               # (l, steps)
        assert result.measurements.shape == (sensors, steps + 1)
        np.testing.assert_allclose(result.measurements[:, :steps], seen, rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_array_equal(result.measurement_matrix, C)
        data = json.loads(json.dumps(result.to_dict()))
        assert np.array(data["measurements"]).shape == (sensors, steps + 1)
        assert np.array(data["measurement_matrix"]).shape == (sensors, n)
        path = result.to_csv(tmp_path / "run.csv", state_labels=["a", "b", "c"])
        header = path.read_text().splitlines()[0].split(",")
        assert header == ["t", "a", "b", "c", *[f"y_{i + 1}" for i in range(sensors)],
                          "u_1", "u_2"]
        table = np.genfromtxt(path, delimiter=",", skip_header=1)
        np.testing.assert_allclose(table[:, 4:4 + sensors], result.measurements.T, rtol=1e-15)
