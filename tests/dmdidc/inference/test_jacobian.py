"""The analytic delta method gives the numbers of central differences, and the factored
eigenvalue and restriction covariances those of the dense Kronecker formulas."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dmdidc.inference.intervals as intervals
from dmdidc import DelayedPlant, DMDidc, random_excitation
from dmdidc.inference.diagnostics import eigenvalue_standard_errors, restricted_solution
from simulations.studies.data_kinds import nonnormal_plant


def fitted(seed, n, m, noise=1e-3, K=3000, estimator="auto"):
    rng = np.random.default_rng(seed)
    plant = nonnormal_plant(rng, n, m)
    U = random_excitation(m, K, rng=rng)
    X = plant.simulate(np.zeros(n), U)
    X = X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return plant, DMDidc(max_delay=plant.max_delay, estimator=estimator).fit(X, U,
                                                                                 dt=plant.dt)


@pytest.mark.parametrize("seed, n, m, estimator", [(0, 2, 1, "ls"), (1, 3, 2, "auto"),
                                                   (2, 4, 2, "iv"), (3, 5, 3, "ls"),
                                                   (4, 3, 1, "auto"), (5, 6, 2, "auto")])
def test_analytic_intervals_equal_central_differences(seed, n, m, estimator, monkeypatch):
    _, est = fitted(seed, n, m, estimator=estimator)
    if not est.model_.has_continuous:
        pytest.skip("no continuous model on this draw")
    analytic = est.confidence_intervals()
    monkeypatch.setattr(intervals, "model_jacobian", lambda *args: None)
    numeric = est.confidence_intervals()
    for name in ("delay", "A_c", "B_c"):
        a, b = getattr(analytic, name), getattr(numeric, name)
        np.testing.assert_array_equal(np.isnan(a.standard_error), np.isnan(b.standard_error))
        finite = np.isfinite(b.standard_error)
        # central differences with a step of 1e-3 standard errors are accurate to ~1e-6
        np.testing.assert_allclose(a.standard_error[finite], b.standard_error[finite],
                                   rtol=1e-5)
        np.testing.assert_array_equal(a.value, b.value)


@pytest.mark.parametrize("seed", range(5))
def test_intervals_cover_the_delay_on_random_plants(seed):
    plant, est = fitted(seed + 10, 3, 2, noise=1e-3, K=4000)
    ci = est.delay_ci(0.999)
    inside = (ci.low <= plant.delay) & (plant.delay <= ci.high)
    assert inside[np.isfinite(ci.standard_error)].all(), (plant.delay, str(ci))


@pytest.mark.parametrize("seed", range(5))
def test_factored_eigenvalue_errors_equal_the_dense_formula(seed):
    _, est = fitted(seed, 4, 2, estimator="auto")
    solution, A_d = est.regression_, est.model_.A_d
    n, p = solution.coefficients.shape
    rounding = np.finfo(float).eps * solution.target_rms
    cov = solution.covariance() + np.kron(np.diag(rounding ** 2), solution.unscaled_covariance)
    cov = cov.reshape(n, p, n, p)[:, :n, :, :n].reshape(n * n, n * n)
    values, right = np.linalg.eig(A_d)
    left = np.linalg.inv(right)
    gradients = np.einsum("ia,bi->iab", left, right).reshape(n, n * n)
    dense = np.sqrt(np.abs(np.einsum("ij,jk,ik->i", gradients, cov, gradients.conj())))
    got_values, got = eigenvalue_standard_errors(solution, A_d)
    np.testing.assert_array_equal(got_values, values)
    np.testing.assert_allclose(got, dense, rtol=1e-9)


@pytest.mark.parametrize("seed", range(3))
def test_factored_restriction_equals_the_dense_projection(seed):
    _, est = fitted(seed, 3, 2)
    solution = est.regression_
    n, p = solution.coefficients.shape
    kept = est.block_test_.active
    restricted = restricted_solution(solution, kept)
    from dmdidc.inference.blocks import restriction_projector

    P = restriction_projector(solution, n, kept)
    dense = np.einsum("apbq,pc,qd->acbd", solution.covariance().reshape(n, p, n, p), P, P)
    np.testing.assert_allclose(restricted.covariance(), dense.reshape(n * p, n * p),
                               rtol=1e-9, atol=1e-12 * np.abs(dense).max())


@pytest.mark.parametrize("seed, n, m, estimator", [(1, 3, 2, "auto"), (2, 4, 2, "iv"),
                                                   (3, 5, 3, "ls"), (6, 8, 3, "iv")])
def test_delay_ci_differentiates_the_delays_alone_to_the_same_numbers(seed, n, m, estimator,
                                                                       monkeypatch):
    from dmdidc.regression.covariance import KroneckerCovariance

    _, est = fitted(seed, n, m, estimator=estimator)
    if not est.model_.has_continuous:
        pytest.skip("no continuous model on this draw")
    whole = est.confidence_intervals(0.9).delay

    def refused(*args, **kwargs):
        raise AssertionError("delay_ci computed the variances of A_c")

    monkeypatch.setattr(KroneckerCovariance, "frechet_variances", refused)
    alone = est.delay_ci(0.9)
    for field in ("value", "low", "high", "standard_error"):
        np.testing.assert_allclose(getattr(alone, field), getattr(whole, field), rtol=1e-12)


def test_delay_ci_under_a_pretest_equals_the_whole_computation():
    # closed loop: least squares kept by Hausman's pretest, widened by IV's difference
    from simulations.studies.data_kinds import make_data
    from simulations.studies.data_kinds import random_plant as loop_plant

    rng = np.random.default_rng(301)
    plant = loop_plant(rng, n_states=4, n_inputs=2, dt=1.0, max_delay=4)
    data = make_data("closed_loop", plant, samples=3000, snr_db=30.0, rng=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=4).fit(data.X, data.U, dt=1.0)
    assert est._pretest_iv is not None
    whole, alone = est.confidence_intervals().delay, est.delay_ci()
    for field in ("value", "low", "high", "standard_error"):
        np.testing.assert_allclose(getattr(alone, field), getattr(whole, field), rtol=1e-12)


def test_a_second_request_recovers_no_block_structure_again(monkeypatch):
    # both structures the intervals span are remembered: before, only the last was, and each
    # request after the first searched both again (0.8 of 0.9 s at n = 30, m = 5)
    from dmdidc.inference import branches
    from dmdidc.inference.blocks import with_earlier_blocks

    _, est = fitted(1, 3, 2)
    active = est.block_test_.active
    assert not np.array_equal(with_earlier_blocks(active, active), active)   # two structures
    first = est.confidence_intervals()
    calls, search = [], branches.choose_branch

    def counted(*args, **kwargs):
        calls.append(1)
        return search(*args, **kwargs)

    monkeypatch.setattr(branches, "choose_branch", counted)
    again = est.confidence_intervals()
    est.delay_ci()
    assert calls == []
    np.testing.assert_array_equal(again.delay.low, first.delay.low)


def test_intervals_of_many_states_never_form_an_n2_by_n2_matrix():
    # the former delta method held the logarithm's (n^2, n^2) Jacobian and the whole model's:
    # 91 MB at n = 40, m = 2; the factored one stays below one such matrix (20 MB)
    import tracemalloc

    n, m, dt = 40, 2, 0.5
    rng = np.random.default_rng(0)
    A = np.zeros((n, n))
    for i, (w, s) in enumerate(zip(rng.uniform(0.3, 2.0, n // 2), rng.uniform(0.05, 0.5, n // 2),
                                   strict=True)):
        A[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[-s, w], [-w, -s]]
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    plant = DelayedPlant.from_continuous(Q @ A @ Q.T, rng.standard_normal((n, m)),
                                         [0.3, 1.2], dt, max_delay=3)
    U = random_excitation(m, 2000, rng=1)
    X = plant.simulate(np.zeros(n), U)
    X = X + 1e-4 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=3, estimator="ls").fit(X, U, dt=dt)
    tracemalloc.start()
    try:
        ci = est.confidence_intervals()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * n ** 4, peak / 2 ** 20
    assert np.isfinite(ci.A_c.standard_error).all() and np.isfinite(ci.delay.standard_error).all()


def test_a_model_jacobian_compares_and_hashes_by_identity():
    # a generated __eq__ over its array fields raised (ambiguous truth value) and hash() too
    from dmdidc.inference import model_jacobian

    J = model_jacobian(np.array([[-0.5]]), np.array([[1.0]]), np.array([0.7]),
                       [(np.array([0.3]), np.array([0.5]))], dt=1.0)
    same = model_jacobian(np.array([[-0.5]]), np.array([[1.0]]), np.array([0.7]),
                          [(np.array([0.3]), np.array([0.5]))], dt=1.0)
    assert J == J and J != same and len({J, J, same}) == 2
    np.testing.assert_array_equal(J.dense(), same.dense())   # the same numbers all the same


@pytest.mark.parametrize("split", [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8])
def test_the_eigenbasis_is_used_only_where_it_agrees_with_the_block_logarithm(split):
    # two eigenvalues `split` apart in a non-normal A_c: cond(V) ~ 3 / split, every one below
    # the 1e8 limit, yet the eigenbasis derivative of logm was 1e-4 wrong at split 1e-4 and
    # 7x at 1e-6. The ground truth never uses the eigenbasis: logm([[A, E], [0, A]]) holds
    # the Frechet derivative L(A, E) in its top right block
    from scipy.linalg import expm, logm

    from dmdidc.inference import jacobian

    rng, n, dt = np.random.default_rng(0), 3, 0.5
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = Q @ np.array([[-0.5, 1.0, 0.3], [0.0, -0.5 - split, 0.7], [0.0, 0.0, -1.3]]) @ Q.T
    A_d = expm(A_c * dt)
    mu, V = np.linalg.eig(A_c)
    W, exp_T = np.linalg.inv(V), np.exp(mu * dt)
    D_exp = jacobian._divided(exp_T, dt * exp_T, mu)
    truth = np.zeros((n * n, n * n))          # d vec A_c / d vec A_d, column by column
    for k in range(n * n):
        E = np.eye(n * n)[k].reshape(n, n)
        truth[:, k] = (logm(np.block([[A_d, E], [np.zeros((n, n)), A_d]]))[:n, n:].real
                       / dt).ravel()
    formula = jacobian.frechet_matrix(V, W, 1 / D_exp).real      # the eigenbasis formula
    error = np.abs(formula - truth).max() / np.abs(truth).max()
    J = jacobian.model_jacobian(A_c, rng.standard_normal((n, 1)), np.array([0.3]),
                                [(np.ones(n), np.ones(n))], dt)
    rows = J.log_adjoint(np.eye(n * n).reshape(-1, n, n)).reshape(n * n, n * n)
    ours = np.abs(rows - truth).max() / np.abs(truth).max()
    if J.schur is None:         # the eigenbasis: only where it is close to the truth
        assert error < 1e-4 and ours < 1e-4
    else:                       # the Schur basis: the truth to rounding, however close
        assert ours < 1e-9
    # the dense matrix holds the same rows (its own formula on the eigenbasis route)
    np.testing.assert_allclose(J.dense()[1:1 + n * n, :n * n], rows, rtol=0,
                               atol=1e-8 * np.abs(truth).max())
    # the eigenbasis down to split 1e-3 (error 4e-8), the Schur basis from 1e-5 (the
    # eigenbasis 0.15 wrong); at 1e-4 (6e-5, near the tolerance) either is right
    assert J.schur is None if split >= 1e-3 else J.schur is not None if split <= 1e-5 else True


def near_defective_fit(noise, seed=3):
    """Two equal lags in series (a defective A_c): the fitted A_c's eigenvalues lie about
    ``noise`` apart (9e-7 at 1e-9, cond(V) 3e6)."""
    A_c = np.array([[-0.5, 0.0, 0.0], [1.0, -0.5, 0.0], [0.0, 0.4, -1.2]])
    B_c = np.array([[1.0, 0.2], [0.0, 0.5], [0.3, 1.0]])
    plant = DelayedPlant.from_continuous(A_c, B_c, [0.7, 1.3], 0.5, max_delay=4)
    rng = np.random.default_rng(seed)
    U = random_excitation(2, 4000, rng=rng)
    X = plant.simulate(np.zeros(3), U)
    X = X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=4, estimator="ls").fit(X, U, dt=0.5)


def test_a_near_defective_fit_gets_exact_intervals_without_the_eigenbasis(monkeypatch):
    # the eigenbasis derivatives of these fits disagree with the block exponential (1e-5 at
    # noise 1e-7); the Schur-basis ones are used. Central differences of the recovery lose
    # digits with the tiny steps (1e-3 standard errors) such data take: 9e-5 at noise 1e-7,
    # 1.3e-2 at 1e-9, where the delta method's standard errors still scale with the noise
    from dmdidc.inference import jacobian

    fitted = near_defective_fit(1e-9).model_
    assert np.linalg.cond(np.linalg.eig(fitted.A_c)[1]) < jacobian.MAX_EIGENVECTOR_CONDITION
    J = jacobian.model_jacobian(fitted.A_c, fitted.B_c, fitted.delay,
                                [(np.ones(3), np.ones(3))] * 2, 0.5)
    assert J is not None and J.schur is not None
    ours = {}
    with monkeypatch.context() as patch:        # (at 1e-7 the eigenbasis is near its limit)
        patch.setattr(jacobian, "MAX_EIGENBASIS_ERROR", -1.0)
        for noise in (1e-7, 1e-9):
            ours[noise] = near_defective_fit(noise).confidence_intervals()
    with monkeypatch.context() as patch:
        patch.setattr(intervals, "model_jacobian", lambda *args: None)
        numeric = near_defective_fit(1e-7).confidence_intervals()
    for name in ("delay", "A_c", "B_c"):
        a, b = getattr(ours[1e-7], name).standard_error, getattr(numeric, name).standard_error
        np.testing.assert_allclose(a, b, rtol=1e-3)
        # 100x less noise, the same fit to 1e-9: 100x smaller standard errors
        np.testing.assert_allclose(100 * getattr(ours[1e-9], name).standard_error, a,
                                   rtol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_the_schur_route_gives_the_intervals_of_central_differences(seed, monkeypatch):
    # random near-defective plants at noise 1e-3 (where central differences are accurate to
    # ~1e-6): the Schur-basis route, forced, agrees with them
    from dmdidc.inference import jacobian

    rng = np.random.default_rng(seed)
    n, m = 4, 2
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    lags = np.diag(np.full(n, -0.6)) + np.diag(np.ones(n - 1), -1)   # equal lags in series
    plant = DelayedPlant.from_continuous(Q @ lags @ Q.T, rng.standard_normal((n, m)),
                                         rng.uniform(0.1, 1.4, m), 0.5, max_delay=4)
    U = random_excitation(m, 4000, rng=rng)
    X = plant.simulate(np.zeros(n), U)
    X = X + 1e-3 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=4, estimator="ls").fit(X, U, dt=0.5)
    if not est.model_.has_continuous:
        pytest.skip("no continuous model on this draw")
    with monkeypatch.context() as patch:
        patch.setattr(jacobian, "MAX_EIGENBASIS_ERROR", -1.0)      # never the eigenbasis
        ours = est.confidence_intervals()
    monkeypatch.setattr(intervals, "model_jacobian", lambda *args: None)
    numeric = est.confidence_intervals()
    for name in ("delay", "A_c", "B_c"):
        a, b = getattr(ours, name).standard_error, getattr(numeric, name).standard_error
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a[np.isfinite(b)], b[np.isfinite(b)], rtol=1e-5)


@pytest.mark.parametrize("seed, n", [(0, 5), (1, 12), (2, 30)])
def test_the_schur_route_equals_the_eigenbasis_where_that_is_well_conditioned(seed, n,
                                                                               monkeypatch):
    from dmdidc.inference import jacobian

    rng = np.random.default_rng(seed)
    plant = nonnormal_plant(rng, n, 2)
    pairs = [(rng.standard_normal(n), rng.standard_normal(n)) for _ in range(2)]
    args = (plant.A_c, plant.B_c, np.array([0.3, 0.8]), pairs, plant.dt)
    eigen = jacobian.model_jacobian(*args)
    assert eigen.schur is None
    monkeypatch.setattr(jacobian, "MAX_EIGENBASIS_ERROR", -1.0)
    schur = jacobian.model_jacobian(*args)
    assert schur.schur is not None
    for i in range(2):
        a, b = schur.channel(i), eigen.channel(i)
        assert np.abs(a - b).max() <= 1e-8 * np.abs(b).max()
    G = rng.standard_normal((3, n, n))
    a, b = schur.log_adjoint(G), eigen.log_adjoint(G)
    assert np.abs(a - b).max() <= 1e-8 * np.abs(b).max()
