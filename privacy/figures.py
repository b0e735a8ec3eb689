"""Figures of the seed's SaS chapters, recomputed with this package's rigorous numerics.

Each function takes an output directory, writes one PNG (matplotlib, Agg backend) and returns the
plotted data as a dict of numpy arrays, so the numbers can be checked or re-plotted.

References
----------
Seed Fig. 3.6 (epsilon vs scale), Fig. 3.7 (Cauchy and limits 3.75/3.79), Fig. 4.1 (privacy
curves), Fig. 4.6 (epsilon after N subsampled compositions vs scale).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from privacy import accounting, calibration
from privacy.mechanisms import SaSMechanism, sas_pure_epsilon

__all__ = ["figure_3_6", "figure_3_7", "figure_4_1", "figure_4_6", "all_figures",
           "calibration_comparison"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def _out(out_dir: str | Path, name: str) -> Path:
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path / name


def _save(fig, ax, out_dir: str | Path, name: str, *, legend_size: float | None = None) -> None:
    """Grid, legend, layout; write ``out_dir/name`` and free the figure."""
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(_out(out_dir, name), dpi=120)
    fig.clf()
    _pyplot().close(fig)


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
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
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
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
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
               scale: float = 1.0, epsilons: Sequence[float] | None = None
               ) -> dict[str, np.ndarray]:
    """Single-release privacy curves delta(epsilon) at scale 1 (Fig. 4.1)."""
    epsilons = (np.linspace(0.0, 8.0, 81) if epsilons is None
                else np.asarray(epsilons, dtype=float))
    data: dict[str, np.ndarray] = {"epsilon": epsilons}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for alpha in alphas:
        mech = SaSMechanism(alpha=alpha, scale=scale)
        curve = np.array([mech.privacy_curve(e) for e in epsilons])
        data[f"alpha={alpha}"] = curve
        positive = curve > 0
        ax.semilogy(epsilons[positive], curve[positive], marker=".",
                    label=f"alpha={alpha}" + (" (Gaussian)" if alpha == 2.0 else
                                              f", pure eps={mech.epsilon:.3g}"))
    ax.set_xlabel("epsilon")
    ax.set_ylabel("delta(epsilon), one release")
    ax.set_title(f"SaS privacy curves, scale {scale}, sensitivity 1")
    _save(fig, ax, out_dir, "fig4_1_privacy_curves.png")
    return data


def figure_4_6(out_dir: str | Path, *, alphas: Sequence[float] = (2.0, 1.999, 1.95, 1.9),
               scales: Sequence[float] | None = None, steps: int = 1000,
               sampling_rate: float = 1e-3, delta: float = 1e-5) -> dict[str, np.ndarray]:
    """Composed epsilon (PLD upper bound) vs scale after ``steps`` subsampled releases (Fig 4.6).

    Defaults: N = 1000 steps, q = 1e-3, delta = 1e-5 (the seed used 200 compositions).
    """
    scales = (np.geomspace(0.15, 3.0, 12) if scales is None
              else np.asarray(scales, dtype=float))
    data: dict[str, np.ndarray] = {"scale": scales}
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for alpha in alphas:
        eps = np.array([accounting.epsilon(SaSMechanism(alpha=alpha, scale=s), delta=delta,
                                           steps=steps, sampling_rate=sampling_rate)
                        for s in scales])
        data[f"alpha={alpha}"] = eps
        ax.loglog(scales, eps, marker="o", ms=3, label=f"alpha={alpha}")
    from matplotlib.ticker import NullFormatter
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("scale gamma (sensitivity 1)")
    ax.set_ylabel(f"epsilon (delta={delta:g})")
    ax.set_title(f"N={steps} Poisson-subsampled releases, q={sampling_rate:g}")
    _save(fig, ax, out_dir, "fig4_6_composed_epsilon.png")
    return data


def all_figures(out_dir: str | Path) -> dict[str, dict[str, np.ndarray]]:
    """Write all four figures into ``out_dir``; returns their data keyed by figure name."""
    return {"fig3_6": figure_3_6(out_dir), "fig3_7": figure_3_7(out_dir),
            "fig4_1": figure_4_1(out_dir), "fig4_6": figure_4_6(out_dir)}



def calibration_comparison(*, epsilons: Sequence[float] = (1.0, 3.0, 8.0), delta: float = 1e-5,
                           sampling_rate: float = 1e-3, steps: int = 1000,
                           alphas: Sequence[float] = (2.0, 1.999, 1.95), rtol: float = 1e-3
                           ) -> list[dict[str, float]]:
    """Calibrated SaS scale and mean absolute error per (epsilon, alpha), rigorous accountant.

    Tests the seed's claim (Ch. 4) that SaS with alpha close to 2 needs a much smaller scale than
    the Gaussian (alpha = 2, sigma = sqrt(2) scale) for the same composed epsilon.  Each row:
    ``epsilon, alpha, scale`` (smallest scale, within ``rtol``, whose PLD upper bound meets
    epsilon), ``achieved_epsilon``, ``expected_distortion`` (E|noise|, eq. 3.85) and
    ``scale_ratio_to_gaussian``.
    """
    rows: list[dict[str, float]] = []
    for eps in epsilons:
        reference = None
        for alpha in alphas:
            scale = calibration.calibrate_scale(eps, delta=delta, steps=steps,
                                                sampling_rate=sampling_rate, alpha=alpha,
                                                rtol=rtol)
            mech = SaSMechanism(alpha=alpha, scale=scale)
            achieved = accounting.epsilon(mech, delta=delta, steps=steps,
                                          sampling_rate=sampling_rate)
            if alpha == 2.0:
                reference = scale
            rows.append({"epsilon": float(eps), "alpha": float(alpha), "scale": scale,
                         "achieved_epsilon": achieved,
                         "expected_distortion": mech.expected_distortion,
                         "scale_ratio_to_gaussian": (scale / reference if reference
                                                     else math.nan)})
    return rows
