"""Privacy-utility study: private identification from statistics versus from privatized samples.

For the README plant (dissertation eq. 9.76, T = 2 s, r = 1.25 T) and experiments of 300 samples
from rest (i.i.d. normal inputs), each sweep point (epsilon, privacy unit, data size K,
mechanism, seed) is identified two ways at the same guarantee:

* **statistics**: :class:`~dmdidc.SufficientStatistics` of all experiments (states and inputs
  clipped to declared bounds), privatized once (:meth:`~dmdidc.SufficientStatistics.privatize`)
  and fitted with ``DMDidc.fit_statistics`` (least squares);
* **per-sample**: every state sample ``x_t`` (clipped to the same bound) released through the
  same mechanism (one release of dimension ``n`` per time step; the inputs are treated as public,
  the most favourable case for this approach), then fitted with ``DMDidc(estimator="iv")``
  (consistent under the added white noise).  A unit of ``w`` time steps is ``w`` releases,
  composed by the accountant (Gaussian: ``privacy.calibration``) or by pure-DP composition.

Errors: ``|r_hat - r| / T`` (worst channel) and the relative Frobenius error of ``A_c``; a fit
without a continuous model counts as failed (error ``inf``).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PrivacyStudyConfig", "run_privacy_study", "summarize_study", "plot_privacy_study",
           "write_privacy_study", "simulate_experiments", "privatize_samples",
           "identification_errors", "APPROACHES"]

APPROACHES = ("statistics", "per-sample")


@dataclass(frozen=True)
class PrivacyStudyConfig:
    """Sweep of the privacy-utility study (validated on construction).

    Attributes
    ----------
    epsilons : tuple of float
    units : tuple of str
        ``"sample"``, ``"window"`` and/or ``"trajectory"``.
    window : int
        Time steps of a window.
    samples : tuple of int
        Data sizes ``K`` (multiples of ``length``).
    mechanisms : tuple of str
        ``"gaussian"``, ``"laplace"``, ``"sas"``.
    approaches : tuple of str
        ``"statistics"`` and/or ``"per-sample"``.
    alpha : float
        SaS stability index.
    delta : float
        Target delta (Gaussian; reported for the others).
    seeds : int
        Repetitions per point.
    delay_periods : float
        True delay in periods.
    length : int
        Samples per experiment.
    state_bound, input_bound : float
        Declared bounds (clip levels) of states and inputs.
    max_delay : int
    seed : int
        Root seed.
    """

    epsilons: tuple[float, ...] = (0.3, 1.0, 3.0, 10.0)
    units: tuple[str, ...] = ("sample", "window", "trajectory")
    window: int = 12
    samples: tuple[int, ...] = (30_000, 300_000, 3_000_000)
    mechanisms: tuple[str, ...] = ("gaussian", "laplace", "sas")
    approaches: tuple[str, ...] = APPROACHES
    alpha: float = 1.5
    delta: float = 1e-5
    seeds: int = 5
    delay_periods: float = 1.25
    length: int = 300
    state_bound: float = 150.0
    input_bound: float = 4.0
    max_delay: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        from _toolbox.errors import ParameterError
        from _toolbox.validation import check_integer, check_positive
        from dmdidc.private.release import MECHANISMS
        from dmdidc.private.sensitivity import PRIVACY_UNITS

        for name, allowed in (("units", PRIVACY_UNITS), ("mechanisms", MECHANISMS),
                              ("approaches", APPROACHES)):
            values = getattr(self, name)
            if not values or any(v not in allowed for v in values):
                raise ParameterError(f"{name} must be a non-empty selection of {allowed}; got "
                                     f"{values!r}")
        for epsilon in self.epsilons:
            check_positive("epsilon", epsilon)
        if not self.epsilons:
            raise ParameterError("epsilons must not be empty")
        check_integer("length", self.length, minimum=self.max_delay + 10)
        for K in self.samples:
            if check_integer("samples", K, minimum=self.length) % self.length:
                raise ParameterError(f"samples must be multiples of length={self.length}; got "
                                     f"{K}")
        check_integer("window", self.window, minimum=1)
        check_integer("seeds", self.seeds, minimum=1)
        for name in ("alpha", "delta", "state_bound", "input_bound", "delay_periods"):
            check_positive(name, getattr(self, name))


def _plant(config: PrivacyStudyConfig):
    from dmdidc import DelayedPlant
    from simulations.studies.fractional_delay import SEED_A_C, SEED_B_C

    dt = 2.0
    return DelayedPlant.from_continuous(np.array(SEED_A_C), np.array(SEED_B_C),
                                        config.delay_periods * dt, dt,
                                        max_delay=config.max_delay)


def simulate_experiments(plant, U: np.ndarray) -> np.ndarray:
    """Exact responses of many experiments from rest at once.

    Parameters
    ----------
    plant : DelayedPlant
    U : ndarray, shape (E, m, L)
        Inputs of ``E`` experiments.

    Returns
    -------
    X : ndarray, shape (E, n, L + 1)
        ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j}`` from ``x_0 = 0`` (inputs before 0 are 0).
    """
    E, m, L = U.shape
    R = plant.B_blocks.shape[0] - 1
    padded = np.concatenate([np.zeros((E, m, R)), U], axis=2)
    drive = sum(np.einsum("nm,emk->enk", plant.B_blocks[j], padded[:, :, R - j:R - j + L])
                for j in range(R + 1))
    X = np.zeros((E, plant.n_states, L + 1))
    for k in range(L):
        X[:, :, k + 1] = X[:, :, k] @ plant.A_d.T + drive[:, :, k]
    return X


@functools.lru_cache(maxsize=256)
def _sample_mechanism(mechanism: str, epsilon: float, delta: float, alpha: float,
                      bound_l1: float, bound_l2: float, dimension: int, steps: int):
    """Per-time-step mechanism whose ``steps``-fold composition meets ``(epsilon, delta)``;
    returns ``(mechanism, guarantee epsilon, guarantee delta)``."""
    from dmdidc.private.release import calibrate_release
    from privacy import accounting
    from privacy.calibration import calibrate_gaussian_sigma

    if mechanism == "gaussian":
        mech = calibrate_release("gaussian", epsilon, delta=delta, alpha=None, l1=bound_l1,
                                 l2=bound_l2, dimension=dimension)[0]
        if steps > 1:             # the accountant calibrates the composition of the releases
            mech = dataclasses.replace(mech, sigma=calibrate_gaussian_sigma(
                epsilon, delta=delta, steps=steps, sensitivity=bound_l2))
        return mech, accounting.epsilon(mech, delta=delta, steps=steps), delta
    mech = calibrate_release(
        mechanism, epsilon / steps, delta=None, alpha=alpha if mechanism == "sas" else None,
        l1=bound_l1, l2=bound_l2, dimension=dimension)[0]
    return mech, accounting.epsilon(mech, delta=0.0, steps=steps), 0.0


def privatize_samples(X: np.ndarray, *, state_bound: float, mechanism: str, epsilon: float,
                      delta: float, alpha: float, steps: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    """Release every state sample with noise (the per-sample baseline).

    Parameters
    ----------
    X : ndarray, shape (E, n, L + 1)
    state_bound : float
        Clip level; replacing one sample moves it by at most ``2 state_bound`` per coordinate.
    mechanism, epsilon, delta, alpha
        As in :meth:`dmdidc.SufficientStatistics.privatize`.
    steps : int
        Time steps per privacy unit (composed releases).
    rng : numpy.random.Generator

    Returns
    -------
    noisy : ndarray, shape (E, n, L + 1)
    epsilon, delta : float
        The guarantee per unit.
    """
    n = X.shape[1]
    mech, achieved, achieved_delta = _sample_mechanism(
        mechanism, epsilon, delta, alpha, 2.0 * state_bound * n,
        2.0 * state_bound * math.sqrt(n), n, steps)
    clipped = np.clip(X, -state_bound, state_bound)
    # One n-dimensional release per time step (the accounting above); the coordinates get
    # i.i.d. noise of the mechanism's law, drawn in one batch of scalar releases.
    scalar = (dataclasses.replace(mech, dimension=1)
              if "dimension" in {f.name for f in dataclasses.fields(mech)} else mech)
    noisy = np.asarray(scalar.randomize(clipped.reshape(1, -1), rng=rng)).reshape(X.shape)
    return noisy, float(achieved), float(achieved_delta)


def identification_errors(estimator, plant) -> tuple[float, float, bool]:
    """``(|r_hat - r| / T worst channel, relative A_c error, whole delay right)``; a fit without
    a continuous model has infinite errors."""
    model = estimator.model_
    right = bool(np.array_equal(model.delay_steps, plant.delay_steps))
    if not model.has_continuous:
        return math.inf, math.inf, right
    return (float(np.max(np.abs(model.delay - plant.delay)) / plant.dt),
            float(np.linalg.norm(model.A_c - plant.A_c) / np.linalg.norm(plant.A_c)), right)


def _fit(make: Callable[[], Any], plant) -> tuple[float, float, bool]:
    from _toolbox.errors import ToolboxError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return identification_errors(make(), plant)
        except (ToolboxError, np.linalg.LinAlgError):
            return math.inf, math.inf, False


def run_privacy_study(config: PrivacyStudyConfig,
                      progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Run the sweep (module notes); one row per (approach, unit, mechanism, K, epsilon, seed).

    Parameters
    ----------
    config : PrivacyStudyConfig
    progress : callable, optional
        Called with a short message after every fit (a progress bar).

    Returns
    -------
    list of dict
        Keys: ``approach, unit, mechanism, samples, epsilon, seed, delay_error_T, A_c_error,
        right_whole_delay, guarantee_epsilon, guarantee_delta, seconds``.
    """
    from dmdidc import DMDidc, SufficientStatistics

    plant = _plant(config)
    T, R, L = plant.dt, config.max_delay, config.length
    steps_of = {"sample": 1, "window": config.window, "trajectory": L + 1}
    rows = []
    root = np.random.SeedSequence(config.seed)
    for K in config.samples:
        for seed, child in enumerate(root.spawn(config.seeds)):
            rng = np.random.default_rng(child)
            U = rng.standard_normal((K // L, plant.n_inputs, L))
            X = simulate_experiments(plant, U)
            stats = (SufficientStatistics.from_data(list(X), list(U), max_delay=R,
                                                    state_bound=config.state_bound,
                                                    input_bound=config.input_bound)
                     if "statistics" in config.approaches else None)
            for unit in config.units:
                window = config.window if unit == "window" else None
                for mechanism in config.mechanisms:
                    alpha = config.alpha if mechanism == "sas" else None
                    delta = config.delta if mechanism == "gaussian" else None
                    for epsilon in config.epsilons:
                        for approach in config.approaches:
                            start = time.perf_counter()
                            if approach == "statistics":
                                # each point stands for one release (a study on
                                # simulated data): the repetitions are accounted as such
                                private = stats.privatize(mechanism, epsilon=epsilon,
                                                          delta=delta, unit=unit,
                                                          window=window, alpha=alpha, rng=rng,
                                                          accounted=True)
                                guarantee = (private.privacy.epsilon, private.privacy.delta)
                                errors = _fit(lambda p=private: DMDidc(
                                    max_delay=R).fit_statistics(p, dt=T), plant)
                            else:
                                noisy, *guarantee = privatize_samples(
                                    X, state_bound=config.state_bound, mechanism=mechanism,
                                    epsilon=epsilon, delta=config.delta, alpha=config.alpha,
                                    steps=steps_of[unit], rng=rng)
                                errors = _fit(lambda Xn=noisy, Un=U: DMDidc(
                                    max_delay=R, estimator="iv").fit(list(Xn), list(Un), dt=T),
                                    plant)
                            rows.append({
                                "approach": approach, "unit": unit, "mechanism": mechanism,
                                "samples": K, "epsilon": epsilon, "seed": seed,
                                "delay_error_T": errors[0], "A_c_error": errors[1],
                                "right_whole_delay": errors[2],
                                "guarantee_epsilon": float(guarantee[0]),
                                "guarantee_delta": float(guarantee[1]),
                                "seconds": time.perf_counter() - start})
                            if progress is not None:
                                progress(f"{approach} {unit} {mechanism} K={K} eps={epsilon}")
    return rows


def summarize_study(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median and quartiles over seeds per point, and the per-sample / statistics ratio.

    Returns
    -------
    list of dict
        Keys: ``approach, unit, mechanism, samples, epsilon, delay_median, delay_q25,
        delay_q75, A_c_median, A_c_q25, A_c_q75, right_whole_delay, failed, ratio`` (``ratio``:
        median delay error of per-sample over statistics at the same point, on the statistics
        row; ``inf`` when the per-sample fits fail, ``nan`` when the statistics' fail).
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        key = (row["approach"], row["unit"], row["mechanism"], row["samples"], row["epsilon"])
        groups.setdefault(key, []).append(row)
    out = []
    for key, members in groups.items():
        delay = np.array([r["delay_error_T"] for r in members])
        a_err = np.array([r["A_c_error"] for r in members])
        entry = dict(zip(("approach", "unit", "mechanism", "samples", "epsilon"), key,
                         strict=True))
        for name, values in (("delay", delay), ("A_c", a_err)):
            q25, median, q75 = np.percentile(values, [25, 50, 75], method="nearest")
            entry.update({f"{name}_median": float(median), f"{name}_q25": float(q25),
                          f"{name}_q75": float(q75)})
        entry["right_whole_delay"] = float(np.mean([r["right_whole_delay"] for r in members]))
        entry["failed"] = int(np.sum(~np.isfinite(delay)))
        out.append(entry)
    by_key = {(e["approach"],) + tuple(e[k] for k in ("unit", "mechanism", "samples",
                                                       "epsilon")): e for e in out}
    for entry in out:
        if entry["approach"] == "statistics":
            other = by_key.get(("per-sample", entry["unit"], entry["mechanism"],
                                entry["samples"], entry["epsilon"]))
            if other is not None:       # nan when the statistics fail too
                finite = math.isfinite(entry["delay_median"]) and entry["delay_median"] > 0
                entry["ratio"] = (other["delay_median"] / entry["delay_median"] if finite
                                  else math.nan)
    return out


def plot_privacy_study(summary: list[dict[str, Any]], path: str | Path, *,
                       samples: int | None = None, dpi: int = 75) -> Path:
    """Delay and ``A_c`` errors against epsilon (one column per unit) at one data size.

    Lines: median over seeds; bands: 25-75 % of seeds; solid statistics, dashed per-sample;
    failed fits plotted at the top of the axis.
    """
    from _toolbox.plotting import new_figure, save_figure

    samples = samples or max(e["samples"] for e in summary)
    chosen = [e for e in summary if e["samples"] == samples]
    units = sorted({e["unit"] for e in chosen}, key=["sample", "window", "trajectory"].index)
    mechanisms = sorted({e["mechanism"] for e in chosen})
    fig = new_figure((4.0 * len(units), 6.5))
    axes = fig.subplots(2, len(units), squeeze=False, sharex=True)
    colors = {"gaussian": "tab:blue", "laplace": "tab:orange", "sas": "tab:green"}
    caps = {"delay": 1.0, "A_c": 3.0}
    for col, unit in enumerate(units):
        for row, (name, label) in enumerate((("delay", "delay error |r - r_hat| / T"),
                                             ("A_c", "relative A_c error"))):
            ax = axes[row, col]
            for mechanism in mechanisms:
                for approach, style in (("statistics", "-"), ("per-sample", "--")):
                    points = sorted((e for e in chosen if e["unit"] == unit
                                     and e["mechanism"] == mechanism
                                     and e["approach"] == approach), key=lambda e: e["epsilon"])
                    if not points:
                        continue
                    eps = [e["epsilon"] for e in points]
                    cap = caps[name]
                    median = [min(e[f"{name}_median"], cap) for e in points]
                    ax.plot(eps, median, style, color=colors[mechanism], marker="o",
                            markersize=3, label=f"{approach}, {mechanism}")
                    ax.fill_between(eps, [min(e[f"{name}_q25"], cap) for e in points],
                                    [min(e[f"{name}_q75"], cap) for e in points],
                                    color=colors[mechanism], alpha=0.15)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_ylim(1e-4, caps[name] * 1.5)
            ax.grid(True, which="both", alpha=0.3)
            if row == 0:
                ax.set_title(f"unit = {unit}")
            if row == 1:
                ax.set_xlabel("epsilon")
            if col == 0:
                ax.set_ylabel(label)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"Private identification, README plant, K = {samples:,} samples (median, "
                 f"band 25-75 % of seeds; failed fits at the top)", fontsize=10)
    return save_figure(fig, path, dpi=dpi)


def write_privacy_study(rows: list[dict[str, Any]], summary: list[dict[str, Any]],
                        config: PrivacyStudyConfig, out: str | Path) -> dict[str, Path]:
    """Write ``privacy_study.csv`` (every fit), ``privacy_study.json`` (config and summary)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / "privacy_study.csv", out / "privacy_study.json"
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    def finite(value: Any) -> Any:
        return value if not isinstance(value, float) or math.isfinite(value) else str(value)
    json_path.write_text(json.dumps({"config": asdict(config),
                                     "summary": [{k: finite(v) for k, v in e.items()}
                                                 for e in summary]}, indent=1))
    return {"csv": csv_path, "json": json_path}
