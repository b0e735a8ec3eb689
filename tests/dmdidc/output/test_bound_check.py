"""max_delay=0 cannot hold a delay: the fit's stand-in modes are found by a refit with room
for it (dmdidc.output.bound_check), and undelayed plants stay quiet."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from dmdidc import DelayedPlant, OutputDMDidc, random_excitation
from dmdidc.errors import DiagnosticWarning

T = 0.5


def _clean(rng: np.random.Generator, periods: float) -> tuple[np.ndarray, np.ndarray]:
    """Noise-free outputs (two sensors) and inputs of a random lightly damped order-3 plant
    delayed by ``periods`` T."""
    omega, rate = rng.uniform(0.5, 2.0), rng.uniform(0.1, 0.6)
    A = [[-rate, omega, 0.0], [-omega, -rate, 0.0], [0.0, 0.0, -rng.uniform(0.2, 1.0)]]
    plant = DelayedPlant.from_continuous(A, rng.standard_normal((3, 1)), delay=periods * T,
                                         dt=T, max_delay=2)
    U = random_excitation(1, 1500, rng=rng)
    return rng.standard_normal((2, 3)) @ plant.simulate(np.zeros(3), U)[:, :-1], U


def _fit(seed: int, periods: float) -> tuple[OutputDMDidc, list[str]]:
    """A random lightly damped order-3 plant (two sensors, 20-40 dB) delayed by ``periods``
    T, fitted with max_delay=0."""
    rng = np.random.default_rng(seed)
    clean, U = _clean(rng, periods)
    snr = 10 ** (-rng.uniform(20, 40) / 20)
    Y = clean + snr * clean.std(axis=1, keepdims=True) * rng.standard_normal(clean.shape)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=0).fit(Y, U, dt=T)
    return est, [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]


@pytest.mark.parametrize("seed", range(4))
def test_a_delay_max_delay_zero_cannot_hold_is_loud(seed):
    """Delays of 0.2-0.9 T and 1.1-1.9 T: a warning names max_delay and how far to raise it
    (at least 2 for a delay beyond one period: the refit with 1 sits at its bound)."""
    rng = np.random.default_rng(100 + seed)
    for periods, at_least in ((rng.uniform(0.2, 0.9), (1,)), (rng.uniform(1.1, 1.9), (2,))):
        est, messages = _fit(seed, periods)
        found = [m for m in messages if m.startswith("max_delay=0 leaves no room")]
        assert found, (seed, periods, est.order_, messages)
        assert any(f"raise max_delay to at least {k}" in found[0] for k in at_least), found[0]


@pytest.mark.parametrize("seed", range(4))
def test_an_undelayed_plant_raises_no_false_alarm(seed):
    est, messages = _fit(seed, 0.0)
    assert est.order_ == 3
    assert not [m for m in messages if "max_delay" in m], messages


def _streamed(seed: int, periods: float) -> list[list[str]]:
    """``_fit``'s data streamed in three chunks: per chunk, the max_delay warnings."""
    rng = np.random.default_rng(seed)
    clean, U = _clean(rng, periods)
    Y = clean + 0.03 * clean.std(axis=1, keepdims=True) * rng.standard_normal(clean.shape)
    est, per_chunk = OutputDMDidc(max_delay=0), []
    for a in range(0, 1500, 500):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.partial_fit(Y[:, a:a + 500], U[:, a:a + 500], dt=T)
        per_chunk.append([str(w.message) for w in caught if "max_delay=0 leaves" in str(w.message)])
    return per_chunk


@pytest.mark.parametrize("seed", range(2))
def test_streaming_warns_a_hidden_delay_once(seed):
    """partial_fit checks as fit does, on the samples it refines on, and a finding that
    stands is not repeated at every chunk; an undelayed plant stays quiet."""
    per_chunk = _streamed(seed, 0.6)
    assert sum(len(c) for c in per_chunk) == 1, per_chunk
    assert not any(_streamed(seed, 0.0))


@pytest.mark.parametrize("seed", [4, 9])
def test_a_delay_of_two_and_a_half_periods_is_loud(seed):
    """Review finding: a delay of 2.6-2.7 T on a plant with ``C B = 0`` (relative degree 2):
    the refit with max_delay=1 kept order 4 with an interior delay (0.25 T), and the search
    stopped there ("a delay within reach would have shown"), so the order-4 fit with two
    stand-in modes near -3 1/s went out silently (seed 9).  The refits go on to 2 and 3 unless
    the refit finds no delay; the warning asks for max_delay 3 or more."""
    rng = np.random.default_rng(seed)
    delay = rng.uniform(1.2, 2.8) * T
    plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]],
                                         delay=delay, dt=T)
    U = random_excitation(1, 2000, rng=rng)
    Y = np.array([[1.0, 0.0]]) @ plant.simulate([0.0, 0.0], U)[:, :-1]
    Y = Y + 0.05 * Y.std() * rng.standard_normal(Y.shape)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=0).fit(Y, U, dt=T)
    found = [str(w.message) for w in caught if "max_delay=0 leaves no room" in str(w.message)]
    assert delay > 2.5 * T and est.order_ > 2
    assert found and "raise max_delay to at least 3" in found[0], (est.order_, found)


def test_a_refit_that_merges_two_fast_modes_into_a_tiny_delay_is_no_alarm():
    """benchmarks/bench_output_max_delay0.py's undelayed seed 59 (4 states, two real modes
    near -1.8 and -2 1/s): once the refits went on past max_delay=1, the one with 2 reached
    order 3 with delays of 0.007 T and 0.06 T and warned.  A larger bound counts only when its
    delay uses the room the smaller one lacked."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    from bench_output_max_delay0 import run

    assert run(59, delayed=False) == ("quiet", "")


def test_the_likelihood_ratio_compares_residuals_in_one_output_scaling():
    """Review finding: partial_fit scales the outputs by the whole stream's rms, the refit by
    the kept samples', and the ratio mixed the two.  Here the same physical residual sums
    (S = 1000 for the refit, R = 995 for the fit) reach the comparison in scalings 1 and 2:
    the ratio must be (S - R) / (S / dof) = 5 (a warning), not (S - R / 4) / (S / dof)."""
    from types import SimpleNamespace

    from dmdidc.output.bound_check import _compared

    bound, dof = 1, 1000
    small = np.r_[np.full(999, np.sqrt(1000 / 1000)), [np.sqrt(1000 - 999)]][:, None]
    fitted = np.r_[[0.0], np.full(1000, np.sqrt(995 / 1000))][:, None] / 2.0  # in scaling 2
    est = SimpleNamespace(refined_=SimpleNamespace(residuals=[fitted], covariance=np.eye(7)),
                          scale_=np.array([2.0]), order_=4,
                          eigenvalues_=np.array([-3.0, -2.0, -0.5, -0.4]))
    other = SimpleNamespace(refined_=SimpleNamespace(residuals=[small], covariance=np.eye(5),
                                                     rss=1000.0, dof=dof),
                            scale_=np.array([1.0]), max_delay=bound, order_=2,
                            at_bound_=np.array([False]), delay=np.array([0.7]))
    text = _compared(est, other, 1e-3)
    assert text is not None and "likelihood ratio 5 " in text, text
