"""Figures of the seed's SaS chapters, recomputed with this package's rigorous numerics.

Each function takes an output directory, writes one PNG and returns the plotted data as a dict of
numpy arrays, so the numbers can be checked or re-plotted.  Figures use matplotlib's
object-oriented API through :mod:`privacy.plotting` (``Figure`` with its own Agg canvas): the
caller's backend and pyplot state are never touched.

References
----------
Seed Fig. 3.6 (epsilon vs scale), Fig. 3.7 (Cauchy and limits 3.75/3.79), Fig. 4.1 (privacy
curves), Fig. 4.6 (epsilon after N subsampled compositions vs scale).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.plotting import new_figure, save_figure
from privacy import accounting, calibration
from privacy.mechanisms import SaSMechanism, sas_pure_epsilon

__all__ = ["figure_3_6", "figure_3_7", "figure_4_1", "figure_4_6", "calibration_comparison"]


def _new_axes(title: str) -> tuple[Any, Any]:
    """A figure on its own Agg canvas (:mod:`privacy.plotting`) and its titled axes."""
    fig = new_figure((6.0, 4.5))
    ax = fig.add_subplot(1, 1, 1)
    ax.set_title(title, fontsize=10)
    return fig, ax


def _save(fig: Any, ax: Any, out_dir: str | Path, name: str, *,
          legend_size: float | None = None) -> Path:
    """Grid and legend; write ``out_dir/name`` (parents created) and return its path."""
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size)
    return save_figure(fig, Path(out_dir) / name)


def _plain_log_ticks(axis: Any, values: Sequence[float]) -> None:
    """Label a log axis at round values inside the plotted range (a short range has one decade)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    lo, hi = float(np.min(values)), float(np.max(values))
    candidates = np.array([m * 10.0 ** e for e in range(-12, 13) for m in (1, 2, 5)])
    ticks = candidates[(candidates >= lo) & (candidates <= hi)]
    if ticks.size < 3:
        ticks = np.unique(np.round(np.geomspace(lo, hi, 4), 2))
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_formatter(NullFormatter())


def figure_3_6(out_dir: str | Path, *, alphas: Sequence[float] = (1.0, 1.5, 1.9, 1.95, 1.999),
               scales: Sequence[float] | None = None) -> dict[str, np.ndarray]:
    """Pure-DP epsilon vs scale (sensitivity 1), log-log, SaS alphas and Laplace (Fig. 3.6).

    Returns ``{"scale": ..., "laplace": ..., "alpha=<a>": ...}``.

    Examples
    --------
    >>> import tempfile
    >>> data = figure_3_6(tempfile.mkdtemp(), alphas=(1.0,), scales=[0.1, 1.0, 10.0])
    >>> round(float(data["alpha=1.0"][1]), 4)
    0.9624
    """
    scales = np.geomspace(1e-2, 1e2, 41) if scales is None else np.asarray(scales, dtype=float)
    data: dict[str, np.ndarray] = {"scale": scales, "laplace": 1.0 / scales}
    fig, ax = _new_axes("Fig. 3.6: pure-DP epsilon of SaS and Laplace noise vs scale")
    ax.loglog(scales, data["laplace"], "k-", label="Laplace (b = scale)")
    for alpha in alphas:
        eps = np.array([sas_pure_epsilon(alpha, s) for s in scales])
        data[f"alpha={alpha}"] = eps
        ax.loglog(scales, eps, marker=".", label=f"SaS alpha={alpha}")
    ax.set_xlabel("scale gamma (sensitivity 1)")
    ax.set_ylabel("pure-DP epsilon")
    _save(fig, ax, out_dir, "fig3_6_epsilon_vs_scale.png")
    return data


def figure_3_7(out_dir: str | Path, *, scales: Sequence[float] | None = None
               ) -> dict[str, np.ndarray]:
    """Cauchy epsilon (3.57) with the large-scale limit (3.75) and small-scale limits (Fig. 3.7).

    Both the seed's printed small-scale limit ``2 ln(sqrt(2)/gamma)`` (3.79) and the corrected
    ``2 ln(1/gamma)`` (the expansion of (3.57)) are returned and drawn.
    """
    scales = np.geomspace(1e-3, 1e3, 61) if scales is None else np.asarray(scales, dtype=float)
    exact = np.array([sas_pure_epsilon(1.0, s) for s in scales])
    data = {"scale": scales, "cauchy": exact, "large_scale_3_75": 1.0 / scales,
            "small_scale_3_79_seed": 2.0 * np.log(math.sqrt(2.0) / scales),
            "small_scale_corrected": 2.0 * np.log(1.0 / scales), "laplace": 1.0 / scales}
    fig, ax = _new_axes("Fig. 3.7: Cauchy (alpha = 1) epsilon and its scale limits")
    ax.loglog(scales, exact, "C1-", lw=2, label="Cauchy (3.57)")
    ax.loglog(scales, data["large_scale_3_75"], "C9--", label="large scale (3.75): 1/gamma")
    small = scales < 1.0
    ax.loglog(scales[small], data["small_scale_3_79_seed"][small], "C2--",
              label="small scale, seed (3.79): 2 ln(sqrt2/gamma)")
    ax.loglog(scales[small], data["small_scale_corrected"][small], "C2:",
              label="small scale, corrected: 2 ln(1/gamma)")
    ax.loglog(scales, data["laplace"], "C0-", alpha=0.5, label="Laplace")
    ax.set_xlabel("scale gamma (sensitivity 1)")
    ax.set_ylabel("epsilon")
    _save(fig, ax, out_dir, "fig3_7_cauchy_limits.png", legend_size=8)
    return data


def figure_4_1(out_dir: str | Path, *, alphas: Sequence[float] = (1.9, 1.95, 1.999, 2.0),
               scale: float = 1.0, epsilons: Sequence[float] | None = None,
               delta_floor: float = 1e-10) -> dict[str, np.ndarray]:
    """Single-release privacy curves at one scale, drawn as epsilon against delta (Fig. 4.1).

    ``delta(epsilon)`` is computed on the epsilon grid (:meth:`SaSMechanism.privacy_curve`);
    the plot shows epsilon (linear) against delta (log, down to ``delta_floor``), as in the
    seed: a SaS curve with alpha < 2 levels off at its pure-DP epsilon (dotted line, delta = 0
    beyond it) while the Gaussian's epsilon keeps growing as delta shrinks.

    Returns ``{"epsilon": grid, "alpha=<a>": delta on the grid}``.
    """
    epsilons = (np.linspace(0.0, 8.0, 161) if epsilons is None
                else np.asarray(epsilons, dtype=float))
    data: dict[str, np.ndarray] = {"epsilon": epsilons}
    fig, ax = _new_axes(f"Fig. 4.1: privacy curves of one release, scale {scale:g}, "
                        f"sensitivity 1")
    for i, alpha in enumerate(alphas):
        mech = SaSMechanism(alpha=alpha, scale=scale)
        curve = np.array([mech.privacy_curve(e) for e in epsilons])
        data[f"alpha={alpha}"] = curve
        shown = curve >= delta_floor
        label = (f"alpha={alpha:g} (Gaussian)" if alpha == 2.0
                 else f"alpha={alpha:g}, pure eps={mech.epsilon:.3g}")
        ax.semilogx(curve[shown], epsilons[shown], marker=".", ms=3, color=f"C{i}",
                    label=label)
        if alpha < 2.0:
            ax.axhline(mech.epsilon, color=f"C{i}", linestyle=":", linewidth=1)
    ax.set_xlim(delta_floor, 1.0)
    ax.set_xlabel("delta")
    ax.set_ylabel("epsilon(delta), one release")
    _save(fig, ax, out_dir, "fig4_1_privacy_curves.png")
    return data


def figure_4_6(out_dir: str | Path, *, alphas: Sequence[float] = (2.0, 1.999, 1.95, 1.9),
               scales: Sequence[float] | None = None, steps: int = 1000,
               sampling_rate: float = 1e-3, delta: float = 1e-5,
               progress: Callable[[], None] | None = None) -> dict[str, np.ndarray]:
    """Composed epsilon (upper bound) vs scale after ``steps`` subsampled releases (Fig. 4.6).

    Defaults: N = 1000 steps, q = 1e-3, delta = 1e-5 (the seed used 200 compositions).
    ``progress`` is called after each (alpha, scale) point.
    """
    scales = (np.geomspace(0.15, 3.0, 12) if scales is None
              else np.asarray(scales, dtype=float))
    data: dict[str, np.ndarray] = {"scale": scales}
    fig, ax = _new_axes(f"Fig. 4.6: epsilon after N={steps} Poisson-subsampled releases, "
                        f"q={sampling_rate:g}")
    for alpha in alphas:
        eps = []
        for s in scales:
            eps.append(accounting.epsilon(SaSMechanism(alpha=alpha, scale=s), delta=delta,
                                          steps=steps, sampling_rate=sampling_rate))
            if progress is not None:
                progress()
        data[f"alpha={alpha}"] = np.array(eps)
        ax.loglog(scales, data[f"alpha={alpha}"], marker="o", ms=3, label=f"alpha={alpha:g}")
    _plain_log_ticks(ax.xaxis, scales)
    finite = np.concatenate([v[np.isfinite(v) & (v > 0)] for k, v in data.items()
                             if k != "scale"])
    if finite.size:
        _plain_log_ticks(ax.yaxis, finite)
    ax.set_xlabel("scale gamma (sensitivity 1)")
    ax.set_ylabel(f"epsilon (delta={delta:g})")
    _save(fig, ax, out_dir, "fig4_6_composed_epsilon.png")
    return data


def calibration_comparison(*, epsilons: Sequence[float] = (1.0, 3.0, 8.0), delta: float = 1e-5,
                           sampling_rate: float = 1e-3, steps: int = 1000,
                           alphas: Sequence[float] = (2.0, 1.999, 1.95), rtol: float = 1e-3,
                           progress: Callable[[dict[str, float]], None] | None = None
                           ) -> list[dict[str, float]]:
    """Calibrated SaS scale and mean absolute error per (epsilon, alpha), rigorous accountant.

    Tests the seed's claim (Ch. 4) that SaS with alpha close to 2 needs a much smaller scale than
    the Gaussian (alpha = 2, sigma = sqrt(2) scale) for the same composed epsilon.  Each row:
    ``epsilon, alpha, scale`` (smallest scale, within ``rtol``, whose accountant upper bound
    meets epsilon), ``achieved_epsilon``, ``expected_distortion`` (E|noise|, eq. 3.85) and
    ``scale_ratio_to_gaussian`` (the Gaussian is calibrated for every epsilon, also when 2 is
    not among ``alphas``; its row is reported only if it is).  ``progress`` is called with each
    row as it is computed.

    Examples
    --------
    Cauchy noise against the Gaussian over 10 releases without subsampling (a subsampled
    Gaussian PLD costs seconds per trial of the search; the study's default q = 1e-3 is the
    slow case):

    >>> rows = calibration_comparison(epsilons=(2.0,), alphas=(1.0,), steps=10,
    ...                               sampling_rate=1.0, rtol=1e-2)
    >>> row = rows[0]
    >>> 0.0 < row["scale_ratio_to_gaussian"] < 1.0, row["achieved_epsilon"] <= 2.0
    (True, True)
    """
    rows: list[dict[str, float]] = []

    def calibrated(eps: float, alpha: float) -> dict[str, float]:
        scale = calibration.calibrate_scale(eps, delta=delta, steps=steps,
                                            sampling_rate=sampling_rate, alpha=alpha, rtol=rtol)
        mech = SaSMechanism(alpha=alpha, scale=scale)
        achieved = accounting.epsilon(mech, delta=delta, steps=steps,
                                      sampling_rate=sampling_rate)
        return {"epsilon": float(eps), "alpha": float(alpha), "scale": scale,
                "achieved_epsilon": achieved, "expected_distortion": mech.expected_distortion}

    for eps in epsilons:
        gaussian = calibrated(eps, 2.0)
        for alpha in alphas:
            row = dict(gaussian) if alpha == 2.0 else calibrated(eps, alpha)
            row["scale_ratio_to_gaussian"] = row["scale"] / gaussian["scale"]
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows
