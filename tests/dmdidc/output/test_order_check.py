"""The order checks of OutputDMDidc: likelihood ratios, nested starts, interval axes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import linalg, stats

from dmdidc import DelayedPlant, OutputDMDidc
from dmdidc.output import order_check
from dmdidc.output.order_check import extended_dynamics, hopeless, likelihood_ratio
from dmdidc.output.refine import Refined
from simulations.studies.data_kinds import random_state_matrix
from tests.dmdidc.output.test_estimator import R, T, _experiment


def _refined(A_c, C, rss=1.0, dof=1000):
    n = A_c.shape[0]
    return Refined(A_c=A_c, C=C, B_c=np.ones((n, 1)), delays=np.zeros(1),
                   initial_states=np.zeros((1, n)), D=np.zeros((C.shape[0], 1)),
                   offset=np.zeros(C.shape[0]), covariance=np.zeros((0, 0)), rss=rss, dof=dof,
                   layout={}, converged=True)


@pytest.mark.parametrize("seed", range(10))
def test_likelihood_ratio_is_chi2_with_one_states_parameters(seed):
    rng = np.random.default_rng(seed)
    n, ny = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    smaller = _refined(-np.eye(n), rng.standard_normal((ny, n)), rss=100.0 + rng.random())
    larger = _refined(-np.eye(n + 1), rng.standard_normal((ny, n + 1)), rss=100.0)
    statistic, p_value = likelihood_ratio(smaller, larger, n_experiments=2)
    assert statistic == pytest.approx((smaller.rss - 100.0) / 0.1)
    assert p_value == pytest.approx(stats.chi2.sf(statistic, ny + 1 + 2))
    # a larger fit stuck above the smaller one is no evidence for more states
    stuck = _refined(-np.eye(n + 1), larger.C, rss=smaller.rss * 1.5)
    assert likelihood_ratio(smaller, stuck, n_experiments=2)[1] == 1.0


@pytest.mark.parametrize("seed", range(20))
def test_hopeless_gives_up_only_on_fits_that_cannot_be_significant(seed):
    """The stop rule agrees with the likelihood ratio at its level: a candidate it gives up
    on stays above the critical value even after margin x the model's decrease; one it keeps
    could still get there (or below the smaller fit, which decides on another start)."""
    rng = np.random.default_rng(seed)
    n, ny = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    level = float(rng.choice([1e-3, 0.05]))
    smaller = _refined(-np.eye(n), rng.standard_normal((ny, n)), rss=rng.uniform(10, 1e3),
                       dof=int(rng.integers(500, 20000)))
    stop = hopeless(smaller, level, n_experiments=1)
    added = ny + 1 + 1
    for _ in range(50):
        rss = smaller.rss * rng.uniform(0.98, 1.02)
        gain = smaller.rss * 10 ** rng.uniform(-9, -2)
        best = rss - order_check._MARGIN * gain
        larger = _refined(-np.eye(n + 1), rng.standard_normal((ny, n + 1)), rss=max(best, 1e-9),
                          dof=smaller.dof - added)
        reachable = likelihood_ratio(smaller, larger, n_experiments=1)[1] <= level
        if stop(rss, gain):
            assert not reachable and (rss < smaller.rss) == (best < smaller.rss)
        elif rss < smaller.rss or best > smaller.rss:
            assert reachable


@pytest.mark.parametrize("seed", range(10))
def test_extended_start_keeps_the_fit_and_adds_a_slower_real_mode(seed):
    rng = np.random.default_rng(seed)
    n, ny = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    A_c = -np.diag(rng.uniform(0.2, 3.0, n))
    fit = _refined(A_c, rng.standard_normal((ny, n)))
    (A_d, C), = extended_dynamics(fit, rng.standard_normal((500, ny)), dt=T)
    rates = np.sort(np.log(np.linalg.eigvals(A_d).real) / T)
    old = np.sort(np.diag(A_c))
    assert np.allclose(np.sort(np.r_[old, old.max() / 3.0]), rates)
    assert np.allclose(C[:, :n], fit.C) and np.isclose(np.linalg.norm(C[:, n]), 1.0)
    np.testing.assert_allclose(A_d[:n, :n], linalg.expm(A_c * T))


def test_no_extended_start_from_an_unstable_fit():
    fit = _refined(np.array([[0.1]]), np.ones((1, 1)))
    assert extended_dynamics(fit, np.ones((10, 1)), dt=T) == []


@pytest.mark.parametrize("seed", range(3))
def test_real_eigenvalue_interval_is_z_standard_errors_wide(seed, tmp_path):
    """A real eigenvalue's interval is +- z se along the real axis (not z se / sqrt 2), or
    wider near a whole period, and survives save / load."""
    plant, _, Y, U = _experiment(seed, n=1, m=1, outputs=1, K=1000, snr_db=20.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
    low, high = est.eigenvalue_ci(0.95)[0]
    z = stats.norm.isf(0.025)
    if est._profiles == (None,):
        assert (high - low).real == pytest.approx(2 * z * est.eigenvalue_se_[0])
    else:       # a delay near a whole period: the profile fits' intervals are joined
        assert (high - low).real >= 2 * z * est.eigenvalue_se_[0] * (1 - 1e-12)
    assert (high - low).imag == 0.0
    loaded = OutputDMDidc.load(est.save(tmp_path / "model.json"))
    np.testing.assert_allclose(loaded.eigenvalue_ci(0.95), est.eigenvalue_ci(0.95))
    with pytest.raises(ValueError, match="level"):
        est.eigenvalue_ci(1.5)


def test_order_decisions_do_not_depend_on_giving_up_hopeless_candidates(monkeypatch):
    """Fits with the stop rule choose the same orders, give the same warnings and keep the
    same model as fits whose order-(n + 1) candidates all run to convergence (margin inf);
    a weak third mode and one or two sensors make the candidates matter."""
    stops = []

    def counted(*args, **kwargs):
        rule = original(*args, **kwargs)

        def stop(rss, gain):
            stops.append(rule(rss, gain))
            return stops[-1]
        return stop

    original = order_check.hopeless
    for seed in range(4):
        plant, C, Y, U = _experiment(seed, outputs=1 + seed % 2, K=1500, snr_db=20)
        runs = []
        for margin in (order_check._MARGIN, np.inf):
            monkeypatch.setattr(order_check, "_MARGIN", margin)
            monkeypatch.setattr(order_check, "hopeless", counted)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
            runs.append((est.order_, est.order_rule_, [str(w.message)[:40] for w in caught],
                         est.refined_.rss))
        assert runs[0][:3] == runs[1][:3]
        assert runs[0][3] == pytest.approx(runs[1][3], rel=1e-9)
    assert any(stops)                      # the rule did end some searches early


@pytest.mark.slow
def test_stop_margin_keeps_the_order_warning_of_a_crawling_candidate(monkeypatch):
    """Seed 50 of ``benchmarks/bench_output_loud.py`` (4 states, 3 inputs, 3 sensors, 12 dB,
    K = 6836): order 5 fits better at p = 0.04 after a long crawl, so order 4 is reported
    uncertain.  A stop margin of 30 gave that candidate up too early and the fit went silent
    (``order_check._MARGIN``); the default keeps the warning of the search run to the end."""
    rng = np.random.default_rng(50)
    n, m, ny = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    whole = rng.random() < 0.5
    periods = (np.clip(rng.integers(1, R, m) + rng.uniform(-0.03, 0.03, m), 0.0, R - 0.1)
               if whole else rng.uniform(0.2, R - 0.2, m))
    snr_db, K = float(rng.uniform(10, 40)), int(rng.integers(1000, 8001))
    lowpass = rng.random() < 0.5
    assert (n, m, ny, whole, K, lowpass) == (4, 3, 3, False, 6836, False)
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, n, T),
                                         rng.standard_normal((n, m)), periods * T, T,
                                         max_delay=R)
    U = rng.standard_normal((m, K))
    C = rng.standard_normal((ny, n))
    clean = C @ plant.simulate(rng.standard_normal(n), U)[:, :K]
    Y = clean + clean.std(axis=1, keepdims=True) * 10 ** (-snr_db / 20) * rng.standard_normal(
        clean.shape)
    verdicts = []
    for margin in (order_check._MARGIN, np.inf):
        monkeypatch.setattr(order_check, "_MARGIN", margin)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
        verdicts.append((est.order_, any("order 4 is uncertain" in str(w.message)
                                         for w in caught)))
    assert verdicts[0] == verdicts[1] == (4, True)
