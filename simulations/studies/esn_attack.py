"""The seed's federated echo-state-network attack and its defence (Ch. 6, Figs. 6.4-6.7).

An adversary intercepts one client's ridge statistics ``(A, B)`` and reconstructs its input
``u_t = 5 sin(t^2 / 60)``: with the seed's gradient descent (6.20), AMSGrad and L-BFGS with exact
gradients, and with the one-pass state-subspace reconstruction
(:func:`privacy.federated.esn_attack.reconstruct_input_subspace`).  The defence adds Gaussian
noise to ``(A, B)`` at the seed's SNR 1:4; its (epsilon, delta) comes from the accountant with the
derived sensitivity (:mod:`privacy.federated.esn_defence`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import check_in_interval, check_integer, check_positive
from privacy.calibration import calibrate_gaussian_sigma
from privacy.federated.esn_attack import (
    EchoStateReservoir,
    reconstruct_input,
    reconstruct_input_subspace,
    relative_error,
    seed_input,
    strongest_attack,
)
from privacy.federated.esn_defence import (
    PRIVACY_UNITS,
    clip_input,
    defence_privacy,
    noise_for_snr,
    privatize_statistics,
)
from privacy.mechanisms import NeighboringRelation

__all__ = ["ESNStudyConfig", "run_esn_study", "plot_esn_study", "write_esn_study"]


@dataclass(frozen=True)
class ESNStudyConfig:
    """Settings (defaults: the seed's Sec. 6.3.3 experiment).

    Attributes
    ----------
    n_nodes, density, spectral_radius, leak, ridge
        Reservoir (100 nodes, 80 % sparse, radius 0.9, a = 0.3).
    steps : int
        Input length ``T`` (20).
    input_bound : float
        Clipping bound ``U`` the client applies and the sensitivity assumes (5: no clipping of
        the seed's input).
    trials : int
        Randomised adversary starts / noise draws (10).
    gd_iterations, learning_rate, momentum
        The seed's gradient descent (6.20): 10 000 iterations, 1e-8, 0.1 (the iteration cap of
        every optimizer in Fig. 6.5).
    restarts : int
        Random L-BFGS restarts of the strongest attack (3).
    snr : float
        Signal-to-noise power ratio of the defence (0.25 = "1:4").
    unit : {"sequence", "step"}
        Privacy unit reported as ``private_epsilon``.
    delta : float
    observations : int
        FedInfer releases of the noisy statistics (composed).
    seed : int
    """

    n_nodes: int = 100
    density: float = 0.2
    spectral_radius: float = 0.9
    leak: float = 0.3
    ridge: float = 1e-2
    steps: int = 20
    input_bound: float = 5.0
    trials: int = 10
    gd_iterations: int = 10_000
    learning_rate: float = 1e-8
    momentum: float = 0.1
    restarts: int = 3
    snr: float = 0.25
    unit: str = "sequence"
    delta: float = 1e-5
    observations: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        check_integer("n_nodes", self.n_nodes, minimum=2)
        check_integer("steps", self.steps, minimum=3)
        check_integer("trials", self.trials, minimum=1)
        check_integer("gd_iterations", self.gd_iterations, minimum=1)
        check_integer("observations", self.observations, minimum=1)
        check_integer("restarts", self.restarts, minimum=0)
        check_positive("input_bound", self.input_bound)
        check_positive("snr", self.snr)
        check_in_interval("delta", self.delta, 0.0, 1.0, low_open=True, high_open=True)
        if self.unit not in PRIVACY_UNITS:
            raise ParameterError(f"unit must be one of {PRIVACY_UNITS}; got {self.unit!r}")


def _mean_error(estimates: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([relative_error(e, truth) for e in estimates]))


def run_esn_study(config: ESNStudyConfig = ESNStudyConfig(), *,
                  progress: Callable[[str], None] | None = None) -> dict:
    """Run the attack, the defence and the accounting; returns summary numbers and arrays.

    ``progress(message)`` is called after each unit of work (for a progress bar).
    """
    tick = progress or (lambda message: None)
    rng = np.random.default_rng(config.seed)
    reservoir = EchoStateReservoir.random(config.n_nodes, density=config.density,
                                          spectral_radius=config.spectral_radius,
                                          leak=config.leak, ridge=config.ridge, rng=rng)
    u = clip_input(seed_input(config.steps), config.input_bound)
    clean = reservoir.statistics(u)
    T = config.steps

    def gd(target, start):
        return reconstruct_input(reservoir, target, steps=T, method="gd",
                                 iterations=config.gd_iterations,
                                 learning_rate=config.learning_rate, momentum=config.momentum,
                                 u0=start)

    curves = {"gd": gd(clean, None)}
    tick("gd from zero")
    curves["amsgrad"] = reconstruct_input(reservoir, clean, steps=T, method="amsgrad",
                                          iterations=config.gd_iterations)
    tick("amsgrad from zero")
    curves["lbfgs"] = reconstruct_input(reservoir, clean, steps=T, method="lbfgs",
                                        iterations=config.gd_iterations, record_every=1)
    subspace = None
    if T - 1 < config.n_nodes:              # the states span a proper subspace
        subspace = reconstruct_input_subspace(reservoir, clean, steps=T)
        curves["subspace+lbfgs"] = reconstruct_input(reservoir, clean, steps=T, method="lbfgs",
                                                     iterations=config.gd_iterations,
                                                     u0=subspace,
                                                     record_every=1)
    tick("lbfgs and subspace")

    starts = rng.normal(0.0, 1.0, (config.trials, T))
    plain_gd, plain_best = [], []
    for start in starts:
        plain_gd.append(gd(clean, start).u)
        plain_best.append(strongest_attack(reservoir, clean, steps=T, rng=rng,
                                           restarts=config.restarts))
        tick("plain trial")

    sigma = noise_for_snr(clean, config.snr)
    private_gd, private_best, weight_errors = [], [], []
    clean_weights = reservoir.output_weights(clean)
    for start in starts:
        noisy = privatize_statistics(clean, sigma, observations=config.observations, rng=rng)
        private_gd.append(gd(noisy, start).u)
        private_best.append(strongest_attack(reservoir, noisy, steps=T, rng=rng,
                                             restarts=config.restarts))
        weight_errors.append(relative_error(reservoir.output_weights(noisy), clean_weights))
        tick("private trial")

    by_unit = {unit: defence_privacy(reservoir, sigma, steps=T, input_bound=config.input_bound,
                                     unit=unit, delta=config.delta,
                                     observations=config.observations)
               for unit in PRIVACY_UNITS}
    chosen = by_unit[config.unit]
    sigma_eps1 = calibrate_gaussian_sigma(1.0, delta=config.delta, steps=config.observations,
                                          sensitivity=chosen.diameter / 2.0,
                                          neighboring=NeighboringRelation.REPLACE_ONE)
    power = float(np.mean(clean.released_vector() ** 2))
    tick("accounting")
    summary = {
        "config": asdict(config),
        "plain_relative_error": _mean_error(np.array(plain_best), u),
        "plain_relative_error_gd": _mean_error(np.array(plain_gd), u),
        "plain_relative_error_by_optimizer_from_zero": {
            name: relative_error(result.u, u) for name, result in curves.items()},
        "subspace_relative_error": None if subspace is None else relative_error(subspace, u),
        "private_relative_error": _mean_error(np.array(private_best), u),
        "private_relative_error_gd": _mean_error(np.array(private_gd), u),
        "private_output_weights_relative_error": float(np.mean(weight_errors)),
        "private_epsilon": chosen.epsilon,
        "private_delta": chosen.delta,
        "privacy_unit": config.unit,
        "neighboring": "replace_one",
        "sensitivity_l2_diameter": chosen.diameter,
        "noise_sigma": sigma,
        "released_rms": float(np.sqrt(power)),
        "private_epsilon_by_unit": {k: v.epsilon for k, v in by_unit.items()},
        "sensitivity_by_unit": {k: v.diameter for k, v in by_unit.items()},
        "sigma_for_epsilon_1": sigma_eps1,
        "snr_for_epsilon_1": power / sigma_eps1 ** 2,
        "reservoir_spectral_norm": float(np.linalg.norm(reservoir.W, 2)),
    }
    arrays = {"u": u, "curves": curves, "plain_gd": np.array(plain_gd),
              "plain_best": np.array(plain_best), "private_gd": np.array(private_gd),
              "private_best": np.array(private_best)}
    return {"summary": summary, "arrays": arrays}


def _true_vs_estimates(ax, u: np.ndarray, groups: dict[str, np.ndarray]) -> None:
    t = np.arange(1, u.size + 1)
    ax.plot(t, u, "-", color="C0", lw=2, label="true input")
    for k, (label, estimates) in enumerate(groups.items()):
        ax.errorbar(t + 0.08 * (k + 1), estimates.mean(axis=0), yerr=estimates.std(axis=0),
                    fmt="--o", ms=3, capsize=2, color=f"C{k + 1}", label=label)
    ax.set_xlabel("t")
    ax.set_ylabel("u_t")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot_esn_study(result: dict, out_dir: str | Path) -> list[Path]:
    """Write Figs. 6.4-6.7 as PNGs into ``out_dir``; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    arrays, summary = result["arrays"], result["summary"]
    u, curves = arrays["u"], arrays["curves"]
    trials = summary["config"]["trials"]
    paths = []

    fig = new_figure()
    ax = fig.add_subplot()
    gd = curves["gd"]
    ax.plot(gd.iterations, gd.iterates, lw=0.8)
    ax.set_xlabel("iteration")
    ax.set_ylabel("estimate of u_t (one line per t)")
    ax.set_title("Fig. 6.4: seed gradient descent (6.20), lr 1e-8, from zero")
    ax.grid(alpha=0.3)
    paths.append(save_figure(fig, out / "esn_fig6_4_gd_iterates.png"))

    fig = new_figure()
    ax = fig.add_subplot()
    for name, res in curves.items():
        mse = np.mean((res.iterates - u) ** 2, axis=1)
        ax.semilogy(np.maximum(res.iterations, 1), np.maximum(mse, 1e-30), label=name)
    ax.set_xscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("MSE of the recovered input")
    ax.set_title("Fig. 6.5: reconstruction error vs iteration")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "esn_fig6_5_error_vs_iteration.png"))

    fig = new_figure()
    _true_vs_estimates(fig.add_subplot(), u, {
        f"seed GD, {trials} random starts": arrays["plain_gd"],
        f"strongest attack, {trials} trials": arrays["plain_best"]})
    fig.axes[0].set_title("Fig. 6.6: true vs recovered input (mean +- std)")
    paths.append(save_figure(fig, out / "esn_fig6_6_recovered.png"))

    fig = new_figure()
    _true_vs_estimates(fig.add_subplot(), u, {
        "seed GD on noisy (A, B)": arrays["private_gd"],
        "strongest attack on noisy (A, B)": arrays["private_best"]})
    fig.axes[0].set_title(f"Fig. 6.7: SNR {summary['config']['snr']:g}, epsilon = "
                          f"{summary['private_epsilon']:.3g} ({summary['privacy_unit']})")
    paths.append(save_figure(fig, out / "esn_fig6_7_private.png"))
    return paths


def write_esn_study(result: dict, out_dir: str | Path) -> list[Path]:
    """Write ``summary.json`` and ``estimates.npz`` (true input, final estimates per trial).

    Existing files are overwritten; returns the paths.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = out / "summary.json"
    summary.write_text(json.dumps(result["summary"], indent=2))
    arrays = {k: v for k, v in result["arrays"].items() if isinstance(v, np.ndarray)}
    estimates = out / "estimates.npz"
    np.savez(estimates, **arrays)
    return [summary, estimates]
