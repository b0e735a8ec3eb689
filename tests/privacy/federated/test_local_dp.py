"""LocalDP: releases, composed accounting from privacy.accounting, calibration, budgets."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

from privacy import GaussianMechanism, LaplaceMechanism, SaSMechanism
from privacy.accounting import epsilon as accountant_epsilon
from privacy.errors import AccountingError, ParameterError
from privacy.federated.local_dp import LocalDP, _grid_point


def test_per_update_calibration_meets_target_with_the_accountant():
    dp = LocalDP.per_update("gaussian", epsilon=0.5, delta=1e-4, sensitivity=0.3, dimension=7)
    exact = accountant_epsilon(GaussianMechanism(dp.scale, 0.3), delta=1e-4)
    assert exact <= 0.5 and exact > 0.5 * (1 - 3e-3)
    assert dp.epsilon(1) == pytest.approx(exact, rel=1e-12)
    # two releases per update (FedLin): the pair composes to the target
    two = LocalDP.per_update("gaussian", epsilon=0.5, delta=1e-4, sensitivity=0.3, releases=2)
    assert two.scale > dp.scale and two.epsilon(2) <= 0.5


@pytest.mark.parametrize("noise, mech", [
    ("gaussian", lambda s, d: GaussianMechanism(s, d)),
    ("laplace", lambda s, d: LaplaceMechanism(s, d)),
    ("sas", lambda s, d: SaSMechanism(1.5, s, d)),
])
def test_composed_epsilon_is_the_accountants(noise, mech):
    dp = LocalDP(noise, 2.0, 0.5, dimension=1, alpha=1.5, delta=1e-5)
    for n in (1, 7, 40):
        assert dp.epsilon(n) == pytest.approx(
            accountant_epsilon(mech(2.0, 0.5), delta=1e-5, steps=n), rel=1e-9)
    assert dp.epsilon(0) == 0.0
    g = dp.guarantee(7)
    assert g.epsilon == pytest.approx(dp.epsilon(7), rel=1e-9) and g.unit == "record"
    assert dp.to_dp_event() == mech(2.0, 0.5).to_dp_event()


def test_fast_bound_is_an_upper_bound_close_to_exact():
    dp = LocalDP("gaussian", 4.0, 1.0, delta=1e-5)
    assert [_grid_point(n) for n in (1, 64, 65, 100)] == [1, 64, 67, 103]
    for n in (1, 30, 64, 65, 100, 250):
        exact, fast = dp.epsilon(n), dp.epsilon_bound(n)
        assert exact <= fast <= exact * 1.03


@pytest.mark.slow
def test_vector_sas_uses_the_certified_pure_bound():
    dp = LocalDP("sas", 3.0, 1.0, dimension=3, alpha=1.7)
    mech = SaSMechanism(1.7, 3.0, 1.0, dimension=3)
    one = mech.epsilon
    try:   # the accountant's own answer for vector SaS where it gives one
        five = accountant_epsilon(mech, delta=1e-5, steps=5)
    except AccountingError:
        five = 5 * one   # otherwise simple composition of the certified pure-DP bound
    assert dp.epsilon(1) <= one * (1 + 1e-12) and dp.epsilon(5) == pytest.approx(five)
    assert five <= 5 * one * (1 + 1e-12)
    assert one >= SaSMechanism(1.7, 3.0, 1.0).epsilon   # a split shift is never cheaper here


def _laplace_loss_parts(d: float, b: float):
    """Privacy loss L = (|x| - |x - d|) / b of x ~ Laplace(d, b): two atoms and a density."""
    atoms = [(d / b, 0.5), (-d / b, 0.5 * np.exp(-d / b))]
    density = (lambda x: np.exp(-(d - x) / b) / (2 * b), (2 * 0.0 - d) / b, d)  # x in (0, d)
    return atoms, density


def _delta_split(d1: float, d2: float, eps: float, b: float = 1.0) -> float:
    """delta(eps) = E[(1 - e^(eps - L1 - L2))_+] for a 2-D Laplace release, by quadrature."""
    hinge = lambda total: max(0.0, 1.0 - np.exp(eps - total))  # noqa: E731
    (a1, (f1, _, e1)), (a2, (f2, _, e2)) = _laplace_loss_parts(d1, b), _laplace_loss_parts(d2, b)
    loss1 = lambda x: (2 * x - d1) / b  # noqa: E731
    loss2 = lambda x: (2 * x - d2) / b  # noqa: E731
    value = sum(p * q * hinge(l1 + l2) for l1, p in a1 for l2, q in a2)
    value += sum(p * integrate.quad(lambda x, l1=l1: f2(x) * hinge(l1 + loss2(x)), 0, e2)[0]
                 for l1, p in a1)
    value += sum(q * integrate.quad(lambda x, l2=l2: f1(x) * hinge(loss1(x) + l2), 0, e1)[0]
                 for l2, q in a2)
    value += integrate.dblquad(lambda y, x: f1(x) * f2(y) * hinge(loss1(x) + loss2(y)),
                               0, e1, 0, e2)[0]
    return value


def test_laplace_vector_release_is_dominated_by_the_scalar_pair():
    """A 2-D Laplace release whose l1 shift D is split (a, D - a) leaks no more than shift D."""
    for eps in (0.0, 0.3, 0.7):
        scalar = _delta_split(1.0, 0.0 + 1e-12, eps)
        assert scalar == pytest.approx(max(0.0, 1 - np.exp((eps - 1) / 2)), abs=1e-7)
        for a in (0.5, 0.2):
            assert _delta_split(a, 1.0 - a, eps) <= scalar + 1e-9


def test_budget_and_randomize_and_config():
    dp = LocalDP("laplace", 1.0, 0.5, dimension=4, budget=1.6)   # 0.5 per release
    assert dp.allows(2) and not dp.allows(3)
    noisy = dp.randomize(np.zeros((2, 2)), np.random.default_rng(0))
    assert noisy.shape == (2, 2) and np.all(noisy != 0)
    with pytest.raises(ParameterError, match="dimension=4"):
        dp.randomize(np.zeros(3), np.random.default_rng(0))
    assert LocalDP.from_config(dp.to_config()) == dp
    assert LocalDP.from_config({}) is None
    with pytest.raises(ParameterError, match="noise"):
        LocalDP("cauchy", 1.0, 1.0)
    with pytest.raises(ParameterError, match="unit"):
        LocalDP("gaussian", 1.0, 1.0, unit="household")
