"""Eigenvalue boxes of a pair near coalescence (dmdidc.output.pairs)."""

import warnings

import numpy as np
import pytest
from scipy import stats

from dmdidc import DelayedPlant, OutputDMDidc
from dmdidc.output.intervals import joined_boxes
from dmdidc.output.pairs import _coefficients, coalescing_pairs

T = 0.5


def _fit(imag: float, seed: int, noise: float = 0.1):
    """``1 / ((s + 0.6)^2 + imag^2)`` (no zero), one sensor, a fractional delay of 1.4 T."""
    A_c = np.array([[0.0, 1.0], [-(0.36 + imag ** 2), -1.2]])
    rng = np.random.default_rng([7, seed])
    plant = DelayedPlant.from_continuous(A_c, np.array([[0.0], [1.0]]), np.array([1.4 * T]), T,
                                         max_delay=3)
    U = rng.standard_normal((1, 2000))
    clean = np.array([[1.0, 0.0]]) @ plant.simulate(np.zeros(2), U)[:, :2000]
    Y = clean + noise * clean.std() * rng.standard_normal(clean.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return OutputDMDidc(max_delay=3, order=2).fit(Y, U, dt=T)


def _wald_boxes(est, level=0.95):
    parts = np.where(est.eigenvalues_.imag != 0, np.sqrt(level), level)
    z = stats.norm.isf((1.0 - parts) / 2.0)
    axes = est._axes_se()
    spread = z * (axes[:, 0] + 1j * axes[:, 1])
    return est.eigenvalues_ - spread, est.eigenvalues_ + spread


def _covers(low, high, truth):
    order = np.argsort(low + high)          # the members by their centres, as the truth
    low, high, truth = low[order], high[order], np.sort_complex(truth)
    return bool(np.all((low.real <= truth.real) & (truth.real <= high.real)
                       & (low.imag <= truth.imag) & (truth.imag <= high.imag)))


def test_the_coefficients_are_smooth_where_the_eigenvalues_are_not():
    """At a nearly defective pair the eigenvalues' gradients blow up; the restricted trace and
    determinant have bounded gradients that match finite differences (3 x 3, random basis)."""
    rng = np.random.default_rng(0)
    for gap in (1e-2, 1e-4):
        S = rng.standard_normal((3, 3))
        J = np.array([[-0.5, 1.0, 0.0], [-gap ** 2, -0.5, 0.0], [0.0, 0.0, -2.0]])
        A = S @ J @ np.linalg.inv(S)
        values = np.linalg.eigvals(A)
        pair = np.flatnonzero(np.abs(values + 0.5) < 0.1)
        centre, gradients = _coefficients(A, pair)
        np.testing.assert_allclose(centre, [-1.0, 0.25 + gap ** 2], atol=1e-8)
        step = 1e-6
        for k in rng.choice(9, 4, replace=False):
            E = np.zeros(9)
            E[k] = step
            moved, _ = _coefficients(A + E.reshape(3, 3), pair)
            np.testing.assert_allclose((moved - centre) / step, gradients[:, k], atol=1e-4,
                                       rtol=1e-4)
        assert np.abs(gradients).max() < 1e3


@pytest.mark.slow
@pytest.mark.statistical
def test_a_nearly_real_pair_is_covered_at_the_level():
    """A complex pair with imaginary part 0.02 (20 dB, one sensor): noise makes about a third
    of the fits real, whose boxes (no imaginary width) cannot hold the truth; the boxes of the
    characteristic polynomial's region hold it (measured on 60 fits: 0.63 -> 0.97)."""
    truth = np.array([-0.6 - 0.02j, -0.6 + 0.02j])
    wald, joined, real = [], [], 0
    for seed in range(24):
        est = _fit(0.02, seed)
        real += bool(np.all(est.eigenvalues_.imag == 0))
        wald.append(_covers(*_wald_boxes(est), truth))
        joined.append(_covers(*est.eigenvalue_ci().T, truth))
        assert len(est._pairs) == 1
    assert real >= 4
    assert np.mean(joined) >= 0.85 and np.mean(joined) >= np.mean(wald) + 0.15


@pytest.mark.parametrize("seed", range(3))
def test_a_pair_far_from_coalescence_keeps_its_boxes(seed, tmp_path):
    """No false alarm: an imaginary part of 0.3 is many standard errors from coalescence; the
    boxes stay as before (Wald, joined near a whole period); a loaded model gives the same
    boxes as the fitted one."""
    est = _fit(0.3, seed)
    assert est._pairs == ()
    low, high = _wald_boxes(est)
    parts = np.where(est.eigenvalues_.imag != 0, np.sqrt(0.95), 0.95)
    low, high = joined_boxes(low, high, est._profiles, 0.95, stats.norm.isf((1 - parts) / 2))
    np.testing.assert_allclose(est.eigenvalue_ci(), np.stack([low, high], axis=1), rtol=1e-12)
    near = _fit(0.02, seed)
    loaded = OutputDMDidc.load(near.save(tmp_path / "model.json"))
    np.testing.assert_array_equal(loaded.eigenvalue_ci(0.9), near.eigenvalue_ci(0.9))


def test_only_pairs_near_coalescence_are_kept():
    values = np.diag([-1.0, -1.001, -3.0])
    pairs = coalescing_pairs(values, 1e-4 * np.eye(9))
    assert len(pairs) == 1 and {pairs[0].lower, pairs[0].upper} == {0, 1}
    assert coalescing_pairs(values, 1e-14 * np.eye(9)) == ()
