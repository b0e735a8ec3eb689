"""OutputDMDidc on noise-free and degenerate data (issue 19): right at every scale, or loud."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.errors import DiagnosticWarning, InsufficientExcitationError, LogarithmError
from simulations.studies.data_kinds import random_plant
from tests.dmdidc.output.test_loud import named_ties, second_delay_misfit

T, R = 0.5, 4


def _issue_data(K: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """The audit's case: one sensor of a damped oscillator, delay 1.3 s, noise-free."""
    plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]],
                                         delay=1.3, dt=T)
    U = random_excitation(1, K, rng=0)
    return np.array([[1.0, 0.0]]) @ plant.simulate([0.0, 0.0], U)[:, :-1], U


def _quiet_fit(Y, U, **settings) -> OutputDMDidc:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiagnosticWarning)
        return OutputDMDidc(max_delay=R, **settings).fit(Y, U, dt=T)


@pytest.mark.parametrize("y_scale,u_scale", [(1.0, 1.0), (1e3, 1e3), (1e-3, 1e-3), (1e3, 1.0),
                                             (1.0, 1e3)])
def test_the_audit_case_has_order_two_at_every_scale(y_scale, u_scale):
    # before: order 3 with a spurious eigenvalue and no warning at scale 1, a false "no order
    # leaves residuals independent" at 1e3 (the exactness threshold sat at rounding level)
    Y, U = _issue_data()
    est = _quiet_fit(Y * y_scale, U * u_scale)
    assert est.order_ == 2
    np.testing.assert_allclose(np.sort(est.eigenvalues_.imag), [-1.0, 1.0], rtol=1e-4)
    assert abs(est.delay[0] - 1.3) < 1e-3


@pytest.mark.parametrize("seed", range(8))
def test_exact_data_of_random_plants_at_scales_1e_6_to_1e6(seed):
    rng = np.random.default_rng(100 + seed)
    n, m, outputs = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    plant = random_plant(rng, n_states=n, n_inputs=m, dt=T, max_delay=R,
                         delay_periods=(0.2, 2.8))
    K = int(rng.integers(500, 900))
    U = random_excitation(m, K, rng=rng)
    C = rng.standard_normal((outputs, n))
    Y = C @ plant.simulate(rng.standard_normal(n), U)[:, :K]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=R).fit(Y * 10.0 ** rng.uniform(-6, 6),
                                            U * 10.0 ** rng.uniform(-6, 6), dt=T)
    assert est.order_ == n
    np.testing.assert_allclose(est.delay, plant.delay, atol=1e-3 * T)
    # The only warning allowed is true of the plant: seed 6 (2 states, 2 inputs, 1 sensor)
    # has a second delay of channel 1, 1.490 s besides 1.027 s (relative residual 3e-17 there,
    # 1e-4 at 0.01 T from it, 0.02 at 1.40 s), which one sensor cannot tell apart.
    messages = [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]
    ties = named_ties(messages)
    assert len(ties) == len(messages), messages
    assert all("both fit the noise-free data exactly" in text for text in messages)
    for i, _, second in ties:
        assert second_delay_misfit(plant, C, Y, U, i, second) < 1e-12


@pytest.mark.parametrize("order", [3, 4])
def test_a_fixed_order_above_what_exact_data_need_says_so(order):
    """Loud either way: "higher than the noise-free data need" when the over-fit reaches
    rounding; at order 3 the fit of these order-2 data ends at a relative residual of 2.5e-8
    or 1e-9 depending only on the rounding of the output scaling (against the exact-fit
    threshold 1e-8), and then the residual check fails instead (a true, if less precise,
    finding: that fit is not exact)."""
    Y, U = _issue_data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        OutputDMDidc(max_delay=R, order=order).fit(Y, U, dt=T)
    messages = [str(w.message) for w in caught]
    named = any("higher than the noise-free data need" in m and "order=2" in m
                for m in messages)
    assert named or (order == 3 and any("residual check failed" in m for m in messages)), \
        messages
    if order == 4:
        assert not any("residual check failed" in m for m in messages), messages


def test_the_right_and_a_too_low_order_of_exact_data():
    Y, U = _issue_data()
    assert _quiet_fit(Y, U, order=2).order_ == 2           # the right order: silent
    with pytest.warns(DiagnosticWarning, match="residual check failed"):
        OutputDMDidc(max_delay=R, order=1).fit(Y, U, dt=T)   # too low: still loud


@pytest.mark.parametrize("kind", ["zero", "1e-200", "constant", "constant to rounding"])
def test_outputs_without_signal_are_refused(kind):
    Y, U = _issue_data()
    dead = {"zero": 0.0 * Y, "1e-200": Y * 1e-200, "constant": np.full_like(Y, 3.0),
            "constant to rounding": 3.0 + 1e-15 * Y}[kind]
    with pytest.raises(InsufficientExcitationError, match=r"Y row 0 has no signal.*sensor"):
        OutputDMDidc(max_delay=R).fit(dead, U, dt=T)
    both = np.vstack([Y, dead])                             # one dead sensor of two
    with pytest.raises(InsufficientExcitationError, match=r"Y row 1 has no signal"):
        OutputDMDidc(max_delay=R).fit(both, U, dt=T)


def test_small_or_offset_outputs_with_signal_are_fitted():
    Y, U = _issue_data()
    for scaled in (Y * 1e-150, Y + 1e6):
        est = _quiet_fit(scaled, U)
        assert est.order_ == 2 and abs(est.delay[0] - 1.3) < 1e-3


@pytest.mark.parametrize("seed", range(4))
def test_a_delay_beyond_max_delay_0_that_leaves_no_logarithm_says_increase_max_delay(seed):
    # before: "no order from 5 gives dynamics with a real logarithm ... sample faster or fix
    # order" (the inputs in flight are states with eigenvalues near 0), or scipy's bare
    # ValueError "array must not contain infs or NaNs"
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=2, n_inputs=1, dt=T, max_delay=R,
                         delay_periods=(1.2, 2.8))
    U = random_excitation(1, 600, rng=rng)
    Y = rng.standard_normal((1, 2)) @ plant.simulate(rng.standard_normal(2), U)[:, :-1]
    with pytest.raises(LogarithmError, match="increase max_delay"):
        OutputDMDidc(max_delay=0).fit(Y, U, dt=T)


def test_unstable_dynamics_of_one_order_are_a_clear_error_not_a_bare_linalgerror():
    # closed-loop data gave order 4 subspace dynamics with a mode of magnitude 1.07: over 5870
    # samples the lag moments overflowed and np.linalg.eigh raised a bare LinAlgError
    from dmdidc.errors import NonFiniteError
    from dmdidc.output.subspace import subspace_basis

    Y, U = _issue_data(K=6000)
    est = OutputDMDidc(max_delay=R)
    est.dt = T
    experiments = [(Y / np.sqrt(np.mean(Y ** 2)), U)]
    basis = subspace_basis(experiments, R, horizon=10, offset=True)
    A_d, C = basis.dynamics(2)
    unstable = 1.07 * A_d / np.max(np.abs(np.linalg.eigvals(A_d)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)       # no overflow warning leaks either
        with pytest.raises(NonFiniteError, match=r"spectral radius is 1\.07.*stable dynamics"):
            est._fit_order(basis, experiments, R, T, 2, (unstable, C))
    # the stable dynamics of the same basis fit (no false alarm)
    assert est._fit_order(basis, experiments, R, T, 2)[1].rss < 1e-12 * Y.size


def test_a_stream_without_signal_says_so_when_its_results_are_read():
    Y, U = _issue_data()
    est = OutputDMDidc(max_delay=R).partial_fit(np.zeros_like(Y), U, dt=T)
    with pytest.raises(InsufficientExcitationError, match="Y row 0 has no signal"):
        est.delay_ci()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiagnosticWarning)
        assert OutputDMDidc(max_delay=R).partial_fit(Y, U, dt=T).order_ == 2    # signal: fitted


@pytest.mark.parametrize("held", [0.0, 1.0])
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_an_input_held_constant_is_named_as_such(seed, held):
    """Review findings: noise-free data with input 1 held at 0 warned "no significant effect
    (chi^2 = -7.81e+17 ...)", or (seed 5) nothing of the kind; held at 1 (from the steady
    state) it warned "at the bound ... raise max_delay" (seed 3) or only "not determined".
    A held input's effect is a constant, which the offset and the initial state also fit:
    the channel is named as held, the acting one is not."""
    plant = random_plant(seed)
    U = random_excitation(2, 3000, rng=11)
    U[1] = held
    x0 = np.linalg.solve(-plant.A_c, plant.B_c[:, 1] * held)      # at rest under the input
    Y = np.array([[1.0, -0.5, 0.3]]) @ plant.simulate(x0, U)[:, :-1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
    messages = [str(w.message) for w in caught]
    named = [m for m in messages if "the input is held at" in m]
    assert [m.split(":")[0] for m in named] == ["channel 1"], messages
    assert not [m for m in messages if "raise max_delay" in m or "no significant" in m]


def test_the_effect_statistic_is_never_negative():
    """The Wald statistic of the channel test on a covariance singular to rounding (a
    negative eigenvalue of -1e-12): lstsq gives -1e+12, which passes any acting channel off
    as "no effect"."""
    from dmdidc.output.estimator import _wald

    cov = np.array([[1.0, 0.0], [0.0, -1e-12]])
    assert float(np.array([0.0, 1.0]) @ np.linalg.lstsq(cov, [0.0, 1.0], rcond=None)[0]) < 0
    assert _wald(np.array([0.0, 1.0]), cov) == 0.0
    assert _wald(np.array([2.0, 1.0]), cov) == 4.0
