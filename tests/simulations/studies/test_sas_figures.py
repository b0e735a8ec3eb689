"""Tests of simulations.studies.sas_figures: the plotted content, not only the files (small
grids, alpha = 1, 2 use closed forms)."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest

from privacy import SaSMechanism
from simulations.studies import sas_figures as figures


@pytest.fixture
def drawn(monkeypatch):
    """Capture every (figure, axes) that simulations.studies.sas_figures writes, and draw it."""
    captured = []
    save = figures._save

    def spy(fig, ax, *args, **kwargs):
        captured.append((fig, ax))
        return save(fig, ax, *args, **kwargs)
    monkeypatch.setattr(figures, "_save", spy)
    return captured


def _lines(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def test_figures_leave_pyplot_and_the_backend_alone(tmp_path, drawn):
    import matplotlib.pyplot as plt
    backend = matplotlib.get_backend()
    figures.figure_3_7(tmp_path, scales=[1e-2, 1.0, 1e2])
    assert matplotlib.get_backend() == backend
    assert plt.get_fignums() == []
    fig, _ = drawn[0]
    assert type(fig.canvas).__name__ == "FigureCanvasAgg"


def test_figure_3_6_content(tmp_path, drawn):
    data = figures.figure_3_6(tmp_path, alphas=(1.0,), scales=[0.1, 1.0, 10.0])
    assert (tmp_path / "fig3_6_epsilon_vs_scale.png").stat().st_size > 10_000
    np.testing.assert_allclose(data["laplace"], [10.0, 1.0, 0.1])
    np.testing.assert_allclose(data["alpha=1.0"], 2 * np.arcsinh(0.5 / np.array([0.1, 1, 10])),
                               rtol=1e-12)
    _, ax = drawn[0]
    assert "Fig. 3.6" in ax.get_title()
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert "scale" in ax.get_xlabel() and "epsilon" in ax.get_ylabel()
    lines = _lines(ax)
    assert set(lines) == {"Laplace (b = scale)", "SaS alpha=1.0"}
    np.testing.assert_allclose(lines["SaS alpha=1.0"].get_ydata(), data["alpha=1.0"])


def test_figure_3_7_content(tmp_path, drawn):
    lim = figures.figure_3_7(tmp_path, scales=[1e-3, 1e3])
    assert lim["cauchy"][0] == pytest.approx(lim["small_scale_corrected"][0], rel=1e-6)
    assert lim["cauchy"][1] == pytest.approx(lim["large_scale_3_75"][1], rel=1e-6)
    assert lim["small_scale_3_79_seed"][0] - lim["cauchy"][0] == pytest.approx(math.log(2),
                                                                             rel=1e-4)
    _, ax = drawn[0]
    assert "Fig. 3.7" in ax.get_title() and "Cauchy" in ax.get_title()
    assert any("(3.57)" in label for label in _lines(ax))


def test_figure_4_1_shows_the_curves_and_their_asymptotes(tmp_path, drawn):
    epsilons = np.linspace(0.0, 4.0, 21)
    curves = figures.figure_4_1(tmp_path, alphas=(1.0, 2.0), epsilons=epsilons)
    assert curves["alpha=1.0"][-1] == 0.0  # beyond the pure epsilon 0.962
    assert np.all(curves["alpha=2.0"] > 0)
    fig, ax = drawn[0]
    assert "Fig. 4.1" in ax.get_title()
    assert ax.get_xscale() == "log" and ax.get_xlim() == pytest.approx((1e-10, 1.0))
    assert ax.get_xlabel() == "delta" and "epsilon" in ax.get_ylabel()
    # epsilon on the linear axis: the plotted range is the epsilon grid, not 30 decades of delta
    y_lo, y_hi = ax.get_ylim()
    assert y_lo <= 0.0 and 4.0 <= y_hi <= 5.0
    cauchy_line = next(v for k, v in _lines(ax).items() if k.startswith("alpha=1"))
    assert np.all(cauchy_line.get_xdata() >= 1e-10)
    pure = SaSMechanism(alpha=1.0, scale=1.0).epsilon
    assert any(np.allclose(line.get_ydata(), pure) for line in ax.get_lines())  # asymptote


def test_figure_4_6_has_readable_ticks(tmp_path, drawn):
    ticks = []
    comp = figures.figure_4_6(tmp_path, alphas=(2.0,), scales=[0.5, 1.0, 2.0], steps=10,
                              progress=lambda: ticks.append(1))
    assert len(ticks) == 3
    assert comp["alpha=2.0"][0] > comp["alpha=2.0"][1] > comp["alpha=2.0"][2] > 0
    fig, ax = drawn[0]
    fig.canvas.draw()
    x_labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    y_labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert len(x_labels) >= 3 and len(y_labels) >= 3
    assert "N=10" in ax.get_title()
    np.testing.assert_allclose(_lines(ax)["alpha=2"].get_ydata(), comp["alpha=2.0"])
