"""Issue 20 (privacy): each reported crash or hang is a reproducer; loud where it must be."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from _toolbox.errors import AccountingError, NonFiniteError, ParameterError
from privacy import GaussianMechanism, LaplaceMechanism, SaSMechanism, accounting
from privacy.composition import pure_dp_delta, pure_dp_epsilon
from privacy.curves import gaussian_epsilon
from privacy.pld import privacy_loss_distribution
from privacy.stable import MIN_ALPHA, sas_pdf, sas_sample


def _quick(call, seconds: float = 10.0):
    start = time.perf_counter()
    value = call()
    assert time.perf_counter() - start < seconds
    return value


def test_a_too_fine_discretization_is_refused_before_allocating():
    """Was a MemoryError (14.6 TiB); the message gives the number and the accepted range."""
    with pytest.raises(ParameterError, match=r"discretization=1e-12.*2e\+12 grid points.*>= 1e-06"):
        accounting.epsilon(LaplaceMechanism(scale=1.0), delta=1e-5, steps=10,
                           discretization=1e-12)
    with pytest.raises(ParameterError, match="discretization"):
        privacy_loss_distribution(GaussianMechanism(sigma=1.0), discretization=1e-10)
    with pytest.raises(ParameterError, match="discretization"):
        privacy_loss_distribution(SaSMechanism(alpha=1.5, scale=1.0), discretization=1e-9)
    # the accepted end of the range works
    eps = accounting.epsilon(LaplaceMechanism(scale=1.0), delta=1e-5, steps=10,
                             discretization=1e-5)
    assert 0.0 < eps <= 10.0


@pytest.mark.parametrize("sigma", [1e300, 1e-300, 1e-30, 1.0])
def test_gaussian_privacy_loss_never_overflows_into_an_exception_or_nan(sigma):
    mech = GaussianMechanism(sigma=sigma)
    x = np.array([-1e300, -1.0, 0.0, 0.5, 1.0, 1e300])
    loss = mech.privacy_loss(x)
    assert not np.any(np.isnan(loss))
    assert loss[3] == 0.0 and np.all(loss[1:] >= loss[:-1])   # increasing, zero at D / 2
    if sigma == 1.0:
        assert np.allclose(loss[1:5], (2 * x[1:5] - 1) / 2)


def test_tiny_subsampled_gaussian_gives_a_finite_upper_bound_fast():
    """Was an OverflowError after 11 s inside dp_accounting (grid spacing 5e53)."""
    g = _quick(lambda: accounting.guarantee(GaussianMechanism(sigma=1e-30), delta=1e-5, steps=10,
                                            sampling_rate=0.01))
    assert g.method == "rdp" and g.epsilon >= 1e59 and math.isfinite(g.epsilon)
    # without subsampling the exact Gaussian answer, about mu^2 / 2 (was out of the bracket)
    exact = accounting.guarantee(GaussianMechanism(sigma=1e-30), delta=1e-5, steps=10)
    assert exact.method == "gaussian-exact" and 0.5 * 1e61 <= exact.epsilon < 1e62
    assert gaussian_epsilon(1e200, 1e-5) == math.inf


@pytest.mark.parametrize("scale", [1e-8, 1e-300])
def test_tiny_laplace_scale_is_bounded_not_overflowed(scale):
    """Was an OverflowError in the randomized-response bound (exp(1e8))."""
    eps = _quick(lambda: accounting.epsilon(LaplaceMechanism(scale=scale), delta=1e-5,
                                            steps=10))
    assert eps == pytest.approx(10 / scale)           # every release reveals its record
    assert accounting.delta(LaplaceMechanism(scale=scale), epsilon=1.0, steps=10) == 1.0


def test_nan_and_inf_outcomes_are_refused_by_every_mechanism():
    for mech in (LaplaceMechanism(scale=1.0), GaussianMechanism(sigma=1.0),
                 SaSMechanism(alpha=1.5, scale=1.0)):
        for bad in (math.nan, math.inf, [0.0, -math.inf]):
            with pytest.raises(NonFiniteError, match="x contains"):
                mech.privacy_loss(bad)
        with pytest.raises(ParameterError):
            mech.privacy_loss(None)
        assert np.isfinite(mech.privacy_loss(0.3))


@pytest.mark.parametrize("alpha", [1e-12, 1e-3, 0.05])
def test_alpha_below_the_supported_minimum_is_refused_at_once(alpha):
    """alpha = 1e-12 hung (> 30 s); 1e-3 failed after 51 s with an internal error."""
    with pytest.raises(ParameterError, match=f"supported minimum {MIN_ALPHA}"):
        _quick(lambda: SaSMechanism(alpha=alpha, scale=1.0), 1.0)
    with pytest.raises(ParameterError, match="alpha"):
        sas_pdf(0.0, alpha)
    with pytest.raises(ParameterError, match="alpha"):   # its samples were inf and NaN
        sas_sample(alpha, size=3, rng=0)
    assert np.all(np.isfinite(sas_sample(MIN_ALPHA, size=1000, rng=0)))


def test_huge_step_counts_use_a_closed_form_upper_bound():
    """steps = 10**30 hung (a step-by-step search over 1e13 counts)."""
    eps = _quick(lambda: accounting.epsilon(LaplaceMechanism(1.0), delta=1e-5, steps=10 ** 30))
    assert math.isfinite(eps) and eps <= 10 ** 30
    # the zCDP bound used beyond 1e9 steps is above the exact composition where both apply
    eps1, steps = 0.01, 10 ** 9
    exact = pure_dp_epsilon(eps1, steps=steps, delta=1e-5)
    rho = 0.5 * steps * eps1 ** 2
    assert exact <= rho + 2 * math.sqrt(rho * math.log(1e5))
    assert pure_dp_epsilon(eps1, steps=steps + 1, delta=1e-5) >= exact
    assert 0.0 <= pure_dp_delta(eps1, steps=10 ** 12, epsilon=10.0) <= 1.0


def test_exact_first_count_for_large_step_counts():
    """The float (N + eps/eps1)/2 is off by many counts for N = 1e9; the rational is exact."""
    from privacy.composition import _first_count_above
    for steps in (1, 2, 7, 10 ** 9, 10 ** 9 + 1):
        for eps1, eps in ((0.1, 0.35), (1.0, 0.0), (0.3, 2.9999)):
            k = _first_count_above(eps1, steps, eps)
            assert eps1 * (2 * k - steps) > eps - 1e-12 * abs(eps) - 1e-300
            assert eps1 * (2 * (k - 1) - steps) <= eps + 1e-9


def test_tiny_sas_scale_subsampled_finishes_in_seconds():
    """Hung (the probe missed the loss peak; a 4e5-point grid composed by dp_accounting)."""
    mech = SaSMechanism(alpha=1.5, scale=1e-8)
    eps = _quick(lambda: accounting.epsilon(mech, delta=1e-5, steps=10, sampling_rate=0.01),
                 20.0)
    one = math.log1p(0.01 * math.expm1(mech.epsilon))
    assert 0.0 < eps <= 10 * one * (1 + 1e-9)    # never above the simple composition


def test_loss_ranges_beyond_any_grid_get_no_pld():
    with pytest.raises(AccountingError, match="spans"):
        privacy_loss_distribution(GaussianMechanism(sigma=1e-5), sampling_rate=0.5)
