"""The bootstrap over trajectories refits only what determines the model (dmdidc.resampling).

Each resample must give the model vector the whole ``fit`` gives on the resampled data when
that fit takes the same decisions (estimator, instruments, intercept), whatever the speed-up
(summed per-trajectory statistics, or the refined fit without checks)."""

import copy
import pickle
import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, DMDidc, random_excitation
from dmdidc.errors import ContinuousModelWarning
from dmdidc.inference.intervals import model_vector
from dmdidc.resampling import Decisions

T = 1.0


def random_plant(rng: np.random.Generator) -> DelayedPlant:
    """A stable plant, 2-3 states, 1-2 inputs, fractional delays below 2 T."""
    n, m = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    V = rng.standard_normal((n, n)) + 2 * np.eye(n)
    A_c = V @ np.diag(-rng.uniform(0.2, 1.0, n)) @ np.linalg.inv(V)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)),
                                        rng.uniform(0.2, 1.9, m), T, max_delay=3)


def experiments(plant, rng, *, count=6, length=150, snr_db=20.0, offset=0.0):
    Us = [random_excitation(plant.n_inputs, length, rng=rng) for _ in range(count)]
    Xs = [plant.simulate(np.zeros(plant.n_states), U) for U in Us]
    rms = np.sqrt(np.mean(np.concatenate(Xs, axis=1) ** 2, axis=1))[:, None]
    scale = 10 ** (-snr_db / 20) * rms
    return [X + offset * rms + scale * rng.standard_normal(X.shape) for X in Xs], Us


# estimator parameters, offset on the states (in rms), SNR (least squares: small bias)
CASES = {
    "ls plain": (dict(estimator="ls", detrend=None), 0.0, 40.0),
    "ls centred": (dict(estimator="ls"), 3.0, 40.0),
    "iv inputs plain": (dict(estimator="iv", instruments="inputs", detrend=None), 0.0, 20.0),
    "iv inputs centred": (dict(estimator="iv", instruments="inputs"), 3.0, 20.0),
    "iv states plain": (dict(estimator="iv", instruments="states", detrend=None), 0.0, 20.0),
    "iv refined plain": (dict(estimator="iv", detrend=None), 0.0, 20.0),
    "auto": (dict(), 0.0, 20.0),
    # per-trajectory trends: each resample fits its own (as the whole fit on it does)
    "ls constant trends": (dict(estimator="ls", detrend="constant"), 0.0, 40.0),
    "ls linear trends": (dict(estimator="ls", detrend="linear"), 0.0, 40.0),
    "iv inputs constant trends": (dict(estimator="iv", instruments="inputs",
                                       detrend="constant"), 0.0, 20.0),
    "iv refined linear trends": (dict(estimator="iv", detrend="linear"), 0.0, 20.0),
}


def compare_with_whole_refits(params: dict, offset: float, snr_db: float, seed: int) -> None:
    """Resamples of a fit on a random plant against the whole fits of the resampled data."""
    rng = np.random.default_rng(seed)
    plant = random_plant(rng)
    Xs, Us = experiments(plant, rng, offset=offset, snr_db=snr_db)
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        est = DMDidc(max_delay=3, **params).fit(Xs, Us, dt=T)
        assert est._decisions.centred == (offset != 0.0)
        refit, parts = est._trajectory_refit(Xs, Us, None)
        assert parts == len(Xs)
        for _ in range(4):         # (at least two whole refits decide as the fit did)
            counts = np.bincount(rng.integers(0, parts, parts), minlength=parts)
            picked = [k for k, c in enumerate(counts) for _ in range(c)]
            whole = DMDidc(max_delay=3, **params).fit([Xs[k] for k in picked],
                                                       [Us[k] for k in picked], dt=T)
            if whole._decisions != est._decisions:     # the whole fit decided otherwise
                continue
            old, new = model_vector(whole.model_), refit(counts)
            assert (old is None) == (new is None)
            if old is not None:
                np.testing.assert_allclose(new, old, rtol=1e-8, atol=1e-8 * np.abs(old).max())
                compared += 1
    assert compared >= 2


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("seed", range(2))
def test_resamples_equal_whole_refits_with_the_same_decisions(case, seed):
    compare_with_whole_refits(*CASES[case], seed=100 * seed + len(case))


@pytest.mark.parametrize("seed", [200, 201])
def test_refined_resamples_keep_the_intercept(seed):
    # a state offset c (intercept (I - A_d) c) that the refined fit detects on these plants
    # (its test has little power for state offsets on others): every resample keeps it
    compare_with_whole_refits(dict(estimator="iv"), 3.0, 20.0, seed)


@pytest.mark.parametrize("seed", range(3))
def test_detrended_bootstrap_is_blind_to_the_order_of_the_trajectories(seed):
    # the bootstrap subtracted the fit's stored trend shifts by the trajectories' order: the
    # data passed in another order got other trajectories' operating points (offsets of
    # several rms apart here).  Each resample now fits its own trends: a resample is the same
    # multiset of trajectories in any order, and all of them once is the fit.
    rng = np.random.default_rng(300 + seed)
    plant = random_plant(rng)
    Xs, Us = experiments(plant, rng, count=5, snr_db=30.0)
    Xs = [X + 5.0 * rng.standard_normal((X.shape[0], 1)) for X in Xs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        est = DMDidc(max_delay=3, estimator="ls", detrend="constant").fit(Xs, Us, dt=T)
        assert est._decisions == Decisions("ls", None, False, trend="constant")
        refit, _ = est._trajectory_refit(Xs, Us, None)
        backwards, _ = est._trajectory_refit(Xs[::-1], Us[::-1], None)
        whole = model_vector(est.model_)
        scale = np.abs(whole).max()
        np.testing.assert_allclose(refit(np.ones(5, int)), whole, atol=1e-9 * scale)
        np.testing.assert_allclose(backwards(np.ones(5, int)), whole, atol=1e-9 * scale)
        counts = np.array([2, 0, 1, 0, 2])
        np.testing.assert_allclose(backwards(counts[::-1]), refit(counts), atol=1e-9 * scale)
        ci = est.confidence_intervals(method="bootstrap", X=Xs[::-1], U=Us[::-1],
                                      n_resamples=30, rng=seed)
    assert np.all((ci.delay.low <= est.delay) & (est.delay <= ci.delay.high))


def test_decisions_are_those_of_the_reported_fit():
    rng = np.random.default_rng(7)
    plant = random_plant(rng)
    Xs, Us = experiments(plant, rng, snr_db=60.0)
    exact = [plant.simulate(np.zeros(plant.n_states), U) for U in Us]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        noisy = DMDidc(max_delay=3).fit(Xs, Us, dt=T)
        clean = DMDidc(max_delay=3).fit(exact, Us, dt=T)
        inputs = DMDidc(max_delay=3, estimator="iv", instruments="inputs").fit(Xs, Us, dt=T)
    assert noisy._decisions == Decisions("iv", "model", False)
    assert clean._decisions == Decisions("ls", None, False)      # exact data: least squares
    assert inputs._decisions.additive and not noisy._decisions.additive


def test_bootstrap_data_must_be_the_fitted_kind():
    rng = np.random.default_rng(3)
    plant = DelayedPlant.from_continuous([[-0.3, 1.1], [-1.1, -0.3]], [[1, -1], [-1, 2]],
                                         delay=2.5, dt=2.0)
    Xs, Us = experiments(plant, rng)
    est = DMDidc(max_delay=3, estimator="iv").fit(Xs, Us, dt=2.0)
    with pytest.raises(ValueError, match="inputs; the fit had"):
        est.confidence_intervals(method="bootstrap", X=Xs, U=[np.vstack([U, U]) for U in Us])


def two_path_experiments(rng, lengths):
    """A structure the model does not hold (a second path 2 periods after the first): it
    fails checks on every fit."""
    plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], 0.5, T, max_delay=3)
    blocks = plant.B_blocks.copy()
    blocks[3] = 0.5
    two_paths = DelayedPlant(plant.A_d, blocks, T)
    Us = [random_excitation(1, length, rng=rng) for length in lengths]
    return [two_paths.simulate([0.0], U) + 0.05 * rng.standard_normal((1, U.shape[1] + 1))
            for U in Us], Us


def test_resamples_raise_no_diagnostic_warnings():
    # checks fail on every fit; the bootstrap's resamples run none and warn nothing
    Xs, Us = two_path_experiments(np.random.default_rng(5), [200] * 10)
    with pytest.warns(ContinuousModelWarning):
        est = DMDidc(max_delay=3, estimator="ls").fit(Xs, Us, dt=T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ci = est.confidence_intervals(method="bootstrap", X=Xs, U=Us, n_resamples=20, rng=0)
    assert caught == [] and ci.resamples == 20


@pytest.mark.parametrize("estimator", ["ls", "iv"])
def test_a_resample_without_enough_samples_is_a_failure_not_an_error(estimator):
    rng = np.random.default_rng(11)
    plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], 1.5, T, max_delay=3)
    Us = [random_excitation(1, length, rng=rng) for length in (300, 300, 4)]
    Xs = [plant.simulate([0.0], U) + 0.05 * rng.standard_normal((1, U.shape[1] + 1))
          for U in Us]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        est = DMDidc(max_delay=3, estimator=estimator).fit(Xs, Us, dt=T)
    refit, _ = est._trajectory_refit(Xs, Us, None)
    assert refit(np.array([0, 0, 3])) is None           # 3 samples for 5 regressors
    assert refit(np.array([1, 1, 1])) is not None


def _parts(rng, count=3, **kwargs):
    from dmdidc import SufficientStatistics
    return [SufficientStatistics.from_data(rng.standard_normal((2, 41)),
                                           rng.standard_normal((1, 40)), max_delay=2, **kwargs)
            for _ in range(count)]


@pytest.mark.parametrize("seed", range(4))
def test_weighted_total_equals_the_sum_of_the_repeated_parts(seed):
    # no false alarm, and the same value as sum() of the repetitions (clipped counts, centring)
    from dmdidc.resampling import weighted_total

    rng = np.random.default_rng(seed)
    bounded = dict(state_bound=1.5, input_bound=1.5) if seed % 2 else {}
    parts = _parts(rng, 4, detrend="constant" if seed >= 2 else None, **bounded)
    counts = np.bincount(rng.integers(0, 4, 4), minlength=4)
    repeated = [p for p, c in zip(parts, counts, strict=True) for _ in range(c)]
    expected, total = sum(repeated[1:], repeated[0]), weighted_total(parts, counts)
    np.testing.assert_allclose(total.gram, expected.gram, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(total.sums, expected.sums, rtol=1e-13, atol=1e-13)
    for field in ("n_samples", "n_trajectories", "intercepts", "clipped", "centering",
                  "min_trajectory_samples", "max_trajectory_samples"):
        assert getattr(total, field) == getattr(expected, field), field


def test_weighted_total_refuses_what_a_sum_would_not_give():
    # parts of other layouts or bounds and counts that are no resample: loud, naming the
    # argument
    from dmdidc.errors import DimensionError, ParameterError
    from dmdidc.resampling import weighted_total

    rng = np.random.default_rng(0)
    parts = _parts(rng)
    other = _parts(rng, 1, instruments="inputs")[0]
    with pytest.raises(DimensionError, match="layouts"):
        weighted_total([*parts[:2], other], np.array([1, 1, 1]))
    for counts, message in ((np.array([1, 1]), "counts has 2"),
                            (np.array([1, -1, 2]), "counts"),
                            (np.array([0.5, 1, 1.5]), "counts"),
                            (np.zeros(3, int), "counts")):
        with pytest.raises(ParameterError, match=message):
            weighted_total(parts, counts)
    with pytest.raises(ParameterError, match="parts"):
        weighted_total([], np.array([], int))


# the bootstrap over fit_statistics parts: the same rule (decisions kept, summed, no checks)
PART_CASES = {
    "ls plain": (dict(estimator="ls"), dict()),
    "ls centred parts": (dict(estimator="ls"), dict(detrend="constant")),
    "iv inputs": (dict(estimator="iv"), dict(instruments="inputs")),
    "iv states centred parts": (dict(estimator="iv"), dict(instruments="states",
                                                            detrend="constant")),
    "auto (iv)": (dict(), dict(instruments="inputs")),
    "auto (ls)": (dict(), dict()),
    "ls privatized": (dict(estimator="ls"), dict(privatized=True)),
}


def statistics_parts(plant, rng, *, privatized=False, **kwargs):
    from dmdidc import SufficientStatistics

    Xs, Us = experiments(plant, rng, count=8, length=300)
    if not privatized:
        return [SufficientStatistics.from_data(X, U, max_delay=3, **kwargs)
                for X, U in zip(Xs, Us, strict=True)]
    bound = float(np.abs(np.concatenate(Xs, axis=1)).max()) + 1.0
    return [SufficientStatistics.from_data(X, U, max_delay=3, state_bound=bound,
                                           input_bound=5.0, **kwargs)
            .privatize("gaussian", epsilon=1e3, delta=1e-5, rng=k)
            for k, (X, U) in enumerate(zip(Xs, Us, strict=True))]


@pytest.mark.parametrize("case", list(PART_CASES))
@pytest.mark.parametrize("seed", range(2))
def test_parts_resamples_equal_whole_fit_statistics_with_the_same_decisions(case, seed):
    from dmdidc.resampling import weighted_total

    params, build = PART_CASES[case]
    rng = np.random.default_rng(300 + 10 * seed + len(case))
    plant = random_plant(rng)
    parts = statistics_parts(plant, rng, **build)
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        est = DMDidc(max_delay=3, **params).fit_statistics(parts, dt=T)
        refit, count = est._parts_refit()
        assert count == len(parts)
        for _ in range(3):
            counts = np.bincount(rng.integers(0, count, count), minlength=count)
            repeated = [p for p, c in zip(parts, counts, strict=True) for _ in range(c)]
            # (a privatized part drawn twice is one release twice: `+` refuses it)
            total = (weighted_total(parts, counts) if build.get("privatized")
                     else sum(repeated))
            whole = DMDidc(max_delay=3, **params).fit_statistics(total, dt=T)
            assert whole._decisions == est._decisions     # (statistics decide nothing else)
            old, new = model_vector(whole.model_), refit(counts)
            assert (old is None) == (new is None)
            if old is not None:
                np.testing.assert_allclose(new, old, rtol=1e-8, atol=1e-8 * np.abs(old).max())
                compared += 1
    assert compared >= 1


def test_parts_bootstrap_warns_nothing_and_counts_failures():
    # checks fail on every whole fit; the resamples run none; a resample of too few samples
    # is a counted failure, not an error
    from dmdidc import SufficientStatistics

    Xs, Us = two_path_experiments(np.random.default_rng(5), [200] * 9 + [4])
    parts = [SufficientStatistics.from_data(X, U, max_delay=3)
             for X, U in zip(Xs, Us, strict=True)]
    with pytest.warns(ContinuousModelWarning):
        est = DMDidc(max_delay=3, estimator="ls").fit_statistics(parts, dt=T)
    refit, _ = est._parts_refit()
    assert refit(np.array([0] * 9 + [10])) is None       # one 1-sample part ten times: rank 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ci = est.confidence_intervals(method="bootstrap", n_resamples=20, rng=0)
    assert caught == [] and ci.resamples == 20


@pytest.mark.parametrize("seed", range(2))
def test_a_privatized_resample_hidden_by_its_noise_is_a_failure_not_an_error(seed):
    # eight copies of one 1-sample release: the repaired Gram is rank-deficient (the whole
    # fit_statistics raises InsufficientExcitationError, which used to stop the bootstrap)
    from dmdidc import SufficientStatistics

    rng = np.random.default_rng(seed)
    plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], 1.5, T, max_delay=3)
    Us = [random_excitation(1, length, rng=rng) for length in [400] * 7 + [4]]
    parts = [SufficientStatistics.from_data(
        plant.simulate([0.0], U) + 0.05 * rng.standard_normal((1, U.shape[1] + 1)), U,
        max_delay=3, state_bound=5.0, input_bound=5.0).privatize(
            "gaussian", epsilon=10.0, delta=1e-5, rng=k) for k, U in enumerate(Us)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        est = DMDidc(max_delay=3, estimator="ls").fit_statistics(parts, dt=T)
    refit, _ = est._parts_refit()
    assert refit(np.array([0] * 7 + [8])) is None
    assert refit(np.ones(8, int)) is not None


def bounded_parts(rng, count):
    """Plain statistics of ``count`` experiments of a random plant, with bounds (to privatize)."""
    from dmdidc import SufficientStatistics

    plant = random_plant(rng)
    Xs, Us = experiments(plant, rng, count=count, length=200)
    bound = float(np.abs(np.concatenate(Xs, axis=1)).max()) + 1.0
    return plant, [SufficientStatistics.from_data(X, U, max_delay=3, state_bound=bound,
                                                  input_bound=5.0)
                   for X, U in zip(Xs, Us, strict=True)]


@pytest.mark.parametrize("seed", range(4))
def test_a_privatized_resample_declares_the_variance_of_its_noise(seed, monkeypatch):
    # a part drawn c times holds its noise c times (variance c^2 sigma^2): the declared
    # variance of the resample matches the noise it holds, over repeated privatizations (the
    # sum of the repeated releases declared sum c sigma^2: half of it for counts 2, 1, 1)
    from dmdidc import resampling
    from dmdidc.resampling import weighted_total

    rng = np.random.default_rng(40 + seed)
    _, plain = bounded_parts(rng, 4)
    counts = np.array([2, 0, 1, 1]) if seed % 2 else np.array([3, 1, 0, 0])
    exact = weighted_total(plain, counts).to_vector()
    noise, declared = [], set()
    for _ in range(30):
        # 30 draws of one release's noise (its law is the subject): accounted
        private = [part.privatize("gaussian", epsilon=1.0, delta=1e-5,
                                  rng=rng.integers(2 ** 32), accounted=True) for part in plain]
        total = weighted_total(private, counts)
        noise.append(total.to_vector() - exact)
        declared.add(total.noise_variance)
        assert total.noise_variance == pytest.approx(
            sum(c ** 2 * p.noise_variance for p, c in zip(private, counts, strict=True)))
    assert len(declared) == 1          # (the variance is public: the same for every draw)
    ratio = np.var(noise) / declared.pop()
    assert 0.85 < ratio < 1.15, ratio       # 30 x >= 300 entries: ratio 1 +- 0.015
    # the bootstrap refit solves exactly this resample
    seen = []
    solve = resampling._solve
    monkeypatch.setattr(resampling, "_solve", lambda stats, *a, **k: seen.append(stats)
                        or solve(stats, *a, **k))
    refit = resampling.parts_refit(Decisions("ls", None, False), private, max_delay=3, dt=T,
                                   svd_rank=None, rank_rtol=1e-10, significance=1e-3,
                                   block_rtol=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContinuousModelWarning)
        refit(counts)
    assert seen[0].noise_variance == total.noise_variance
    np.testing.assert_array_equal(seen[0].to_vector(), total.to_vector())


def test_a_resampled_sas_release_counts_as_one_realization_scaled():
    # SaS noise has no variance: the effective one comes from the releases' scales; a release
    # drawn c times is scale c gamma (c^alpha gamma^alpha), not c independent ones
    from dmdidc.resampling import weighted_total
    from dmdidc.statistics.fit import effective_noise_variance

    rng = np.random.default_rng(7)
    _, plain = bounded_parts(rng, 3)
    private = [part.privatize("sas", epsilon=5.0, delta=1e-5, alpha=1.5, rng=k)
               for k, part in enumerate(plain)]
    gammas = np.array([p.releases[0].mechanism.scale for p in private])
    for counts in (np.array([1, 1, 1]), np.array([3, 0, 0]), np.array([2, 1, 0])):
        total = weighted_total(private, counts)
        power = np.sum((counts * gammas) ** 1.5)
        assert effective_noise_variance(total) == pytest.approx(2.0 * power ** (2.0 / 1.5))
    single = effective_noise_variance(private[0])
    assert effective_noise_variance(weighted_total(private, np.array([3, 0, 0]))) == \
        pytest.approx(9.0 * single)


def test_one_release_added_to_itself_is_refused():
    # p + p would hold one noise realization twice and declare two independent ones
    from dmdidc.errors import ParameterError
    from dmdidc.resampling import weighted_total

    _, plain = bounded_parts(np.random.default_rng(8), 2)
    private = [part.privatize(epsilon=1.0, delta=1e-5, rng=k) for k, part in enumerate(plain)]
    with pytest.raises(ParameterError, match="share a privatized release"):
        private[0] + private[0]
    with pytest.raises(ParameterError, match="share a privatized release"):
        sum([private[0], private[1], private[0]])
    with pytest.raises(ParameterError, match="share a privatized release"):
        DMDidc(max_delay=3).fit_statistics([private[0], private[0]], dt=T)
    # a pickled or deep-copied release is the same noise realization (it was taken for a
    # second one: variance 2 sigma^2 declared for noise of variance 4 sigma^2)
    for copied in (pickle.loads(pickle.dumps(private[0])), copy.deepcopy(private[0])):
        with pytest.raises(ParameterError, match="share a privatized release"):
            private[0] + copied
        with pytest.raises(ParameterError, match="share a privatized release"):
            weighted_total([private[0], copied], np.array([1, 1]))
    both = private[0] + private[1]             # distinct releases: no false alarm
    assert both.noise_variance == pytest.approx(private[0].noise_variance
                                                + private[1].noise_variance)


def test_weighted_total_refuses_parts_that_share_a_release():
    # as `+` does: parts [p, p] drawn once each hold p's one noise realization twice (variance
    # 4 sigma^2) and declared 2 sigma^2; a part listed twice is a part drawn twice (counts);
    # distinct releases of the same data raise no false alarm
    from dmdidc.errors import ParameterError
    from dmdidc.resampling import weighted_total

    _, plain = bounded_parts(np.random.default_rng(9), 2)
    private = [part.privatize(epsilon=1.0, delta=1e-5, rng=k) for k, part in enumerate(plain)]
    again = plain[0].privatize(epsilon=1.0, delta=1e-5, rng=5, accounted=True)
    for parts, counts in (([private[0], private[0]], [1, 1]),
                          ([private[0], private[1], private[0] + private[1]], [1, 0, 1]),
                          ([private[0], private[1], private[0]], [0, 1, 1])):
        with pytest.raises(ParameterError, match="share a privatized release"):
            weighted_total(parts, np.array(counts))
    total = weighted_total([private[0], again, private[1]], np.array([1, 1, 2]))
    assert total.noise_variance == pytest.approx(private[0].noise_variance
                                                 + again.noise_variance
                                                 + 4 * private[1].noise_variance)
