"""Tests of privacy.figures (small grids; alpha = 1 and 2 use closed forms)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privacy import figures


def test_figure_3_6_and_3_7(tmp_path):
    data = figures.figure_3_6(tmp_path, alphas=(1.0,), scales=[0.1, 1.0, 10.0])
    assert (tmp_path / "fig3_6_epsilon_vs_scale.png").stat().st_size > 1000
    np.testing.assert_allclose(data["laplace"], [10.0, 1.0, 0.1])
    assert np.all(np.diff(data["alpha=1.0"]) < 0)
    lim = figures.figure_3_7(tmp_path, scales=[1e-3, 1e3])
    assert (tmp_path / "fig3_7_cauchy_limits.png").exists()
    assert lim["cauchy"][0] == pytest.approx(lim["small_scale_corrected"][0], rel=1e-6)
    assert lim["cauchy"][1] == pytest.approx(lim["large_scale_3_75"][1], rel=1e-6)
    assert lim["small_scale_3_79_seed"][0] - lim["cauchy"][0] == pytest.approx(math.log(2),
                                                                             rel=1e-4)


def test_figure_4_1_and_4_6(tmp_path):
    curves = figures.figure_4_1(tmp_path, alphas=(1.0, 2.0), epsilons=[0.0, 0.5, 1.0, 2.0])
    assert (tmp_path / "fig4_1_privacy_curves.png").exists()
    assert curves["alpha=1.0"][-1] == 0.0  # beyond the pure epsilon 0.962
    assert np.all(curves["alpha=2.0"] > 0)
    comp = figures.figure_4_6(tmp_path, alphas=(2.0,), scales=[1.0, 2.0], steps=10)
    assert (tmp_path / "fig4_6_composed_epsilon.png").exists()
    assert comp["alpha=2.0"][0] > comp["alpha=2.0"][1] > 0
