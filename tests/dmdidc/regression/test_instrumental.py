"""DMDidc(estimator="iv"): instrumental variables on noisy states (dmdidc.regression.instrumental).

The 2SLS algebra is checked against an explicit two-stage least squares in test_statistics.py;
here: streaming equals the batch fit, IV removes the errors-in-variables bias of least squares
(a random plant where least squares is off by 0.43 T), exogenous instruments in closed loop, and
the options are validated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc, ParameterError, random_excitation

T = 1.0


def random_plant(seed: int) -> DelayedPlant:
    """A stable 4-state, 2-input plant as in the issue's measurements (eigenvalues 0.4-0.9)."""
    rng = np.random.default_rng(seed)
    n, m = 4, 2
    J = np.zeros((n, n))
    J[:2, :2] = [[-0.7, 1.2], [-1.2, -0.7]]
    J[2, 2], J[3, 3] = -0.5, -0.9
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    V = Q @ np.diag(rng.uniform(1, 3, n)) @ np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = V @ J @ np.linalg.inv(V)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), [0.4, 1.7], T,
                                        max_delay=3)


def noisy_experiments(plant, experiments, snr_db, seed, length=300):
    rng = np.random.default_rng(seed)
    Us = [random_excitation(plant.n_inputs, length, rng=rng) for _ in range(experiments)]
    Xs = [plant.simulate(np.zeros(plant.n_states), U) for U in Us]
    rms = np.sqrt(np.mean(np.concatenate(Xs, axis=1) ** 2, axis=1))[:, None]
    noise = 10 ** (-snr_db / 20)
    return [X + noise * rms * rng.standard_normal(X.shape) for X in Xs], Us


@pytest.mark.statistical
def test_iv_removes_the_errors_in_variables_bias_of_least_squares():
    plant = random_plant(2)
    Xs, Us = noisy_experiments(plant, 100, 10.0, seed=0)          # K = 30 000 at 10 dB
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ls = DMDidc(max_delay=3, estimator="ls").fit(Xs, Us, dt=T)
        iv = DMDidc(max_delay=3, estimator="iv").fit(Xs, Us, dt=T)
    error = {name: np.max(np.abs(est.delay - plant.delay)) / T
             for name, est in (("ls", ls), ("iv", iv))}
    a_error = np.linalg.norm(iv.A_c - plant.A_c) / np.linalg.norm(plant.A_c)
    # measured: least squares 0.43 T (biased), IV 0.003 T; IV A_c error 0.028
    assert error["ls"] > 0.2 and error["iv"] < 0.03 and a_error < 0.1
    np.testing.assert_array_equal(iv.delay_steps, plant.delay_steps)
    assert iv.regression_.estimator == "iv" and iv.regression_.instrument_strength > 0
    interval = iv.delay_ci(0.99)
    assert np.all((interval.low < plant.delay) & (plant.delay < interval.high))


def test_streaming_iv_equals_the_batch_fit():
    plant = random_plant(3)
    Xs, Us = noisy_experiments(plant, 2, 20.0, seed=1, length=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = DMDidc(max_delay=3, estimator="iv", instruments="inputs",
                       instrument_lags=3).fit(Xs, Us, dt=T)
        stream = DMDidc(max_delay=3, estimator="iv", instruments="inputs", instrument_lags=3)
        for X, U in zip(Xs, Us, strict=True):
            for i, (a, b) in enumerate(((0, 5), (5, 77), (77, 200))):
                stream.partial_fit(X[:, a:b + 1], U[:, a:b], dt=T, new_trajectory=i == 0)
    np.testing.assert_allclose(stream.regression_.coefficients, batch.regression_.coefficients,
                               rtol=1e-9, atol=1e-12)
    assert stream.regression_.n_samples == batch.regression_.n_samples == 2 * (200 - 6)


def closed_loop(plant, seed, experiments=20, length=500, noise=1.0):
    """u_k = -0.4 x~_k[0] + 0.3 e_k: commands computed from noisy measurements (endogenous)."""
    rng = np.random.default_rng(seed)
    Xs, Us, Es = [], [], []
    for _ in range(experiments):
        e = rng.standard_normal((1, length))
        x, states, inputs = np.zeros(2), [np.zeros(2)], []
        history = np.zeros((1, plant.max_delay + 1))
        for k in range(length):
            u = -0.4 * (x[0] + noise * rng.standard_normal()) + 0.3 * e[0, k]
            history = np.roll(history, 1, axis=1)
            history[0, 0] = u
            x = plant.A_d @ x + np.einsum("jnm,mj->n", plant.B_blocks, history)
            states.append(x)
            inputs.append(u)
        Xs.append(np.array(states).T + noise * rng.standard_normal((2, length + 1)))
        Us.append(np.array(inputs)[None])
        Es.append(e)
    return Xs, Us, Es


def test_exogenous_instruments_identify_a_closed_loop():
    plant = DelayedPlant.from_continuous([[-0.3, 1.0], [-1.0, -0.3]], [[1.0], [0.5]],
                                         delay=1.4, dt=T, max_delay=3)
    Xs, Us, Es = closed_loop(plant, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ls = DMDidc(max_delay=3, estimator="ls").fit(Xs, Us, dt=T)
        exogenous = DMDidc(max_delay=3, estimator="iv", instruments="exogenous").fit(
            Xs, Us, dt=T, reference=Es)
    # measured: least squares 0.41 s off (A_c error 2.1), exogenous IV 0.029 s (0.028)
    assert abs(ls.delay[0] - 1.4) > 0.3
    assert abs(exogenous.delay[0] - 1.4) < 0.05
    assert np.linalg.norm(exogenous.A_c - plant.A_c) < 0.1 * np.linalg.norm(plant.A_c)


def test_iv_options_are_checked():
    plant = random_plant(4)
    Xs, Us = noisy_experiments(plant, 1, 20.0, seed=2, length=100)
    with pytest.raises(ParameterError, match="needs the instrument signals"):
        DMDidc(max_delay=3, estimator="iv", instruments="exogenous").fit(Xs, Us, dt=T)
    with pytest.raises(ParameterError, match="reference needs instrumental variables"):
        DMDidc(max_delay=3, estimator="ls").fit(Xs, Us, dt=T, reference=Us)
    with pytest.raises(ParameterError, match="explicit snapshot pairs Y need estimator='ls'"):
        DMDidc(max_delay=0, estimator="iv").fit(Xs[0][:, :-1], Us[0], dt=T, Y=Xs[0][:, 1:])
    with pytest.raises(ParameterError, match="at least as many instruments as regressors"):
        DMDidc(max_delay=3, estimator="iv", instruments="exogenous", instrument_lags=0).fit(
            Xs, Us, dt=T, reference=[U[:1] for U in Us])


@pytest.mark.parametrize("lags", [0, 5, 130])
def test_autocovariances_direct_and_fft_agree(lags, monkeypatch):
    from dmdidc.regression import lag_products

    rng = np.random.default_rng(lags)
    series = [rng.standard_normal((3, 400)), rng.standard_normal((3, 90))]   # one shorter
    expected = np.zeros((lags + 1, 3))
    for s in series:
        for tau in range(min(lags, s.shape[1] - 1) + 1):
            expected[tau] += np.sum(s[:, tau:] * s[:, :s.shape[1] - tau], axis=1)
    for direct in (0, 10**6):                       # force the FFT, then the direct sums
        monkeypatch.setattr(lag_products, "_DIRECT_SPAN", direct)
        np.testing.assert_allclose(lag_products.autocovariances(series, lags), expected,
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_without_strength_the_iv_fit_is_the_same(seed):
    """``strength=False`` (the IV twin of a least-squares fit) skips only the canonical
    correlations: coefficients, covariance and residuals are bit-identical, the strength None."""
    from dmdidc.regression.instrumental import instrumental_solution

    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((4, 800))
    Phi = rng.standard_normal((3, 4)) @ Z + 0.3 * rng.standard_normal((3, 800))
    Y = rng.standard_normal((2, 3)) @ Phi + 0.1 * rng.standard_normal((2, 800))
    V = np.vstack([Phi, Y, Z])
    args = (V @ V.T, V.sum(axis=1), 800)
    options = dict(n_states=2, n_regressors=3, instruments=np.arange(5, 9))
    full = instrumental_solution(*args, **options)
    bare = instrumental_solution(*args, **options, strength=False)
    assert 0.0 < full.instrument_strength <= 1.0 and bare.instrument_strength is None
    for name in ("coefficients", "unscaled_covariance", "residual_covariance",
                 "singular_values", "standard_errors"):
        assert np.array_equal(getattr(full, name), getattr(bare, name)), name


@pytest.mark.parametrize("seed", range(3))
def test_first_stage_f_refuses_a_solution_solved_without_strength(seed):
    from dmdidc.regression.instrumental import first_stage_f
    from dmdidc.statistics import SufficientStatistics
    from dmdidc.statistics.fit import regression_from_statistics

    plant = random_plant(seed)
    (X,), (U,) = noisy_experiments(plant, 1, snr_db=30, seed=seed)
    stats = SufficientStatistics.from_data(X, U, max_delay=3, instruments="inputs")
    measured = regression_from_statistics(stats, 3, estimator="iv")
    assert np.isfinite(first_stage_f(measured)) and first_stage_f(measured) > 0
    unmeasured = regression_from_statistics(stats, 3, estimator="iv", strength=False)
    with pytest.raises(ParameterError, match="strength=True"):
        first_stage_f(unmeasured)
