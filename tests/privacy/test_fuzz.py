"""Fuzz (issue 20): every public entry point of ``privacy`` on hostile arguments.

Each call must raise a toolbox ``ValueError`` (naming the argument) or return a sane result
(no NaN; accountants: epsilon in ``[0, inf]``, delta in ``[0, 1]``; releases finite), within a
deadline, never another exception type.  Bounded: derandomized examples, about 30 s in all.
The SaS indices are drawn from a few values so that the per-alpha tables are built once.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privacy import (
    GaussianMechanism,
    LaplaceMechanism,
    NeighboringRelation,
    SaSMechanism,
    accounting,
)
from privacy.accountant import Accountant
from privacy.events import EpsilonDeltaDpEvent, SaSDpEvent, VectorLaplaceDpEvent
from privacy.noise import GaussianNoise, LaplaceNoise, SaSNoise
from tests.privacy.fuzz_guard import assert_bound, assert_not_nan, outcome

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

#: floats from every corner: subnormals, huge, negative, zero, nan, inf
WILD = st.floats(allow_nan=True, allow_infinity=True)
POSITIVE = st.one_of(st.floats(min_value=1e-300, max_value=1e300),
                     st.sampled_from([1e-12, 1e-8, 1e-3, 1.0, 30.0, 1e8, 1e300]))
ANYTHING = st.one_of(WILD, POSITIVE, st.integers(-3, 3), st.none(), st.just("1"),
                     st.booleans())
ALPHAS = st.sampled_from([1.0, 1.5, 1.95, 2.0, 0.0, 1e-12, 0.05, 2.5, math.nan, -1.0])
STEPS = st.one_of(st.integers(-2, 50), st.sampled_from([10 ** 4, 10 ** 9, 10 ** 30]),
                  st.just(2.5), st.none())
RATES = st.one_of(st.sampled_from([1.0, 0.5, 0.01, 1e-6]), WILD)
KINDS = st.sampled_from(["laplace", "gaussian", "sas"])


def _mechanism(kind, alpha, scale, sensitivity, dimension):
    if kind == "laplace":
        return LaplaceMechanism(scale=scale, sensitivity=sensitivity, dimension=dimension)
    if kind == "gaussian":
        return GaussianMechanism(sigma=scale, sensitivity=sensitivity, dimension=dimension)
    return SaSMechanism(alpha=alpha, scale=scale, sensitivity=sensitivity, dimension=dimension)


@settings(max_examples=60, **SETTINGS)
@given(kind=KINDS, alpha=ALPHAS, scale=st.one_of(POSITIVE, ANYTHING),
       sensitivity=st.one_of(st.just(1.0), ANYTHING), dimension=st.sampled_from([1, 2, 0, 1.5]),
       x=st.one_of(WILD, st.lists(WILD, max_size=4), st.none()),
       value=st.one_of(WILD, st.lists(WILD, min_size=1, max_size=3), st.none(), st.just("a")))
def test_mechanisms(kind, alpha, scale, sensitivity, dimension, x, value):
    what = f"{kind}(alpha={alpha!r}, scale={scale!r}, D={sensitivity!r}, m={dimension!r})"
    mech = outcome(lambda: _mechanism(kind, alpha, scale, sensitivity, dimension), 5.0, what)
    if mech is None:
        return
    eps = outcome(lambda: mech.epsilon, 10.0, f"{what}.epsilon")
    if eps is not None:
        assert_bound(eps, 0.0, math.inf, f"{what}.epsilon")
    loss = outcome(lambda: mech.privacy_loss(x), 5.0, f"{what}.privacy_loss({x!r})")
    if loss is not None:
        assert_not_nan(loss, f"{what}.privacy_loss({x!r})")
    noisy = outcome(lambda: mech.randomize(value, rng=0), 5.0, f"{what}.randomize({value!r})")
    if noisy is not None:
        assert np.all(np.isfinite(noisy)), f"{what}.randomize({value!r}) gave {noisy!r}"
    outcome(lambda: mech.to_dp_event((mech.dimension, 3)), 5.0, f"{what}.to_dp_event")


@settings(max_examples=25, **SETTINGS)
@given(kind=KINDS, alpha=st.sampled_from([1.0, 1.5, 2.0]), scale=POSITIVE,
       delta=st.one_of(st.sampled_from([1e-5, 0.0, 0.5]), WILD),
       epsilon=st.one_of(st.sampled_from([1.0, 0.1, 50.0]), WILD), steps=STEPS, rate=RATES,
       neighboring=st.sampled_from(list(NeighboringRelation)),
       discretization=st.one_of(st.none(), st.sampled_from([1e-3, 1e-12]), WILD))
def test_accounting(kind, alpha, scale, delta, epsilon, steps, rate, neighboring,
                    discretization):
    mech = _mechanism(kind, alpha, scale, 1.0, 1)
    what = (f"{mech!r} steps={steps!r} q={rate!r} {neighboring.name} "
            f"discretization={discretization!r}")
    common = dict(steps=steps, sampling_rate=rate, neighboring=neighboring,
                  discretization=discretization)
    eps = outcome(lambda: accounting.epsilon(mech, delta=delta, **common), 15.0,
                  f"epsilon({what}, delta={delta!r})")
    if eps is not None:
        assert_bound(eps, 0.0, math.inf, f"epsilon({what})")
    dlt = outcome(lambda: accounting.delta(mech, epsilon=epsilon, **common), 15.0,
                  f"delta({what}, epsilon={epsilon!r})")
    if dlt is not None:
        assert_bound(dlt, 0.0, 1.0, f"delta({what})")


EVENTS = st.one_of(
    st.builds(dp_event.GaussianDpEvent, noise_multiplier=ANYTHING),
    st.builds(dp_event.LaplaceDpEvent, noise_multiplier=ANYTHING),
    st.builds(SaSDpEvent, alpha=ALPHAS, noise_multiplier=ANYTHING,
              dimension=st.sampled_from([1, 2, 0, 2.5])),
    st.builds(VectorLaplaceDpEvent, noise_multiplier=ANYTHING,
              dimension=st.sampled_from([1, 3, -1])),
    st.builds(EpsilonDeltaDpEvent, epsilon=ANYTHING, delta=ANYTHING),
    st.just(dp_event.NonPrivateDpEvent()), st.just(dp_event.NoOpDpEvent()),
    st.just("not an event"))


@settings(max_examples=30, **SETTINGS)
@given(events=st.lists(st.tuples(EVENTS, st.one_of(st.none(), RATES),
                                 st.one_of(st.integers(-1, 20), st.just(10 ** 12), ANYTHING)),
                       min_size=1, max_size=3),
       target=st.one_of(st.sampled_from([1e-5, 0.0]), WILD))
def test_accountant_and_events(events, target):
    accountant = Accountant()
    for event, rate, count in events:
        if rate is not None and not isinstance(event, str):
            event = dp_event.PoissonSampledDpEvent(rate, event)
        outcome(lambda e=event, c=count: accountant.compose(e, c), 5.0,
                f"compose({event!r}, {count!r})")
    eps = outcome(lambda: accountant.epsilon(target), 15.0, f"{events!r}: epsilon({target!r})")
    if eps is not None:
        assert_bound(eps, 0.0, math.inf, f"{events!r}: epsilon")
    dlt = outcome(lambda: accountant.delta(target), 15.0, f"{events!r}: delta({target!r})")
    if dlt is not None:
        assert_bound(dlt, 0.0, 1.0, f"{events!r}: delta")


@settings(max_examples=40, **SETTINGS)
@given(kind=KINDS, alpha=ALPHAS, scale=st.one_of(POSITIVE, ANYTHING),
       x=st.one_of(WILD, st.lists(WILD, max_size=4), st.none()),
       edges=st.one_of(st.lists(WILD, min_size=1, max_size=5), st.just([[0.0, 1.0]])),
       mass=st.one_of(st.sampled_from([1e-19, 0.5]), ANYTHING),
       shape=st.one_of(st.tuples(st.integers(0, 3)), st.just((-1,)), st.just((2, 2))))
def test_noise_laws(kind, alpha, scale, x, edges, mass, shape):
    def law():
        if kind == "laplace":
            return LaplaceNoise(scale)
        return GaussianNoise(scale) if kind == "gaussian" else SaSNoise(alpha, scale)
    noise = outcome(law, 5.0, f"{kind} noise({alpha!r}, {scale!r})")
    if noise is None:
        return
    for name, call in [("logpdf", lambda: noise.logpdf(x)), ("cdf", lambda: noise.cdf(x)),
                       ("sf", lambda: noise.sf(x)),
                       ("cell_masses", lambda: noise.cell_masses(edges)),
                       ("tail_bound", lambda: noise.tail_bound(mass)),
                       ("sample", lambda: noise.sample(shape, rng=0))]:
        value = outcome(call, 10.0, f"{noise!r}.{name}")
        if value is not None:
            assert_not_nan(value, f"{noise!r}.{name}")


@settings(max_examples=30, **SETTINGS)
@given(epsilon=st.one_of(st.sampled_from([1.0, 0.5, 1e-6, 500.0]), ANYTHING),
       delta=st.one_of(st.sampled_from([1e-5, 0.5]), ANYTHING),
       alpha=ALPHAS, sensitivity=st.one_of(st.just(1.0), POSITIVE, ANYTHING))
def test_calibration_and_curves(epsilon, delta, alpha, sensitivity):
    for name, call in [
            ("gaussian.from_epsilon_delta",
             lambda: GaussianMechanism.from_epsilon_delta(epsilon, delta,
                                                          sensitivity=sensitivity).sigma),
            ("sas.from_epsilon",
             lambda: SaSMechanism.from_epsilon(epsilon, alpha=alpha,
                                               sensitivity=sensitivity).scale),
            ("gaussian.delta_for_epsilon",
             lambda: GaussianMechanism(sigma=sensitivity).delta_for_epsilon(epsilon)),
            ("gaussian.epsilon_for_delta",
             lambda: GaussianMechanism(sigma=sensitivity).epsilon_for_delta(delta)),
            ("sas.privacy_curve",
             lambda: SaSMechanism(alpha=alpha, scale=sensitivity).privacy_curve(epsilon))]:
        value = outcome(call, 10.0, f"{name}(eps={epsilon!r}, delta={delta!r}, "
                                    f"alpha={alpha!r}, D={sensitivity!r})")
        if value is not None:
            assert_bound(float(value), 0.0, math.inf, name)
