"""Federated DMDidc study: delay error against the number of clients, at epsilon = 1 per client.

Clients are copies of the README plant with damping (``A_c = [[-0.3, 1.1], [-1.1, -0.3]]``,
eq. 9.76's ``B_c``, T = 2 s, delays 1.25 T and 1.5 T), each with its own short experiments
from rest (uniform inputs in [-1, 1]) and measurement noise on the states.  Every client
releases its statistics (with input instruments, for the noisy states) once at event level
through :class:`dmdidc.federated.identification.FederatedIdentification`; clients join over
rounds so that after round ``t`` the first ``clients[t]`` have joined, and the server fits
``DMDidc(estimator="iv")`` from :func:`dmdidc.federated.combine_statistics` after every round.
At the same per-client budget it compares

* ``average``: each client fits its own model from its own release (the same noise draw), the
  server averages ``A_d`` and the input blocks (FedAvg-style) and recovers the delay; a block is
  active when its average is 3 standard errors (spread across clients) from zero (a single
  client: its own block test); a channel without an active block gets delay 0, as in
  :func:`dmdidc.recover_continuous` and the estimator;
* ``per_sample``: every client releases every state sample (one n-dimensional Gaussian or
  Laplace release per time step, event level; the inputs public, the most favourable case for
  it), and the server fits IV on the pooled noisy data
  (:mod:`simulations.studies.private_identification`).

A single client is the first point (N = 1) of every curve.

On real Flower processes: ``dmdidc federated serve --algorithm
simulations.studies.federated_identification:deployment_algorithm --algorithm-kwargs
'{"clients": 3}' --data simulations.studies.federated_identification:deployment_partition
--clients 3 --rounds 1 --out DIR``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import check_integer, check_positive

__all__ = ["FederatedIdentificationConfig", "run_federated_identification",
           "summarize_identification", "plot_identification", "client_grid", "BASELINES",
           "deployment_algorithm", "deployment_partition"]

BASELINES = ("average", "per_sample")
A_C = ((-0.3, 1.1), (-1.1, -0.3))
B_C = ((1.0, -1.0), (-1.0, 2.0))


def client_grid(largest: int) -> tuple[int, ...]:
    """``1, 3, 10, 30, ...`` up to ``largest`` (included)."""
    largest = check_integer("largest", largest, minimum=1)
    grid = [n for e in range(7) for n in (10 ** e, 3 * 10 ** e) if n < largest]
    return tuple(grid + [largest])


@dataclass(frozen=True)
class FederatedIdentificationConfig:
    """Settings of the study (defaults: what the README reports)."""

    clients: tuple[int, ...] = (1, 3, 10, 30, 100, 300, 1000)
    experiments: int = 30
    length: int = 200
    noise_db: float = 20.0
    mechanism: str = "gaussian"
    epsilon: float = 1.0
    delta: float = 1e-5
    alpha: float = 1.5
    seeds: int = 5
    seed: int = 0
    state_bound: float = 5.0
    input_bound: float = 1.0
    max_delay: int = 3
    delays_in_periods: tuple[float, ...] = (1.25, 1.5)
    engine: str = "numpy"
    baselines: tuple[str, ...] = BASELINES

    def __post_init__(self) -> None:
        grid = tuple(check_integer("clients", n, minimum=1) for n in self.clients)
        if not grid or list(grid) != sorted(set(grid)):
            raise ParameterError(f"clients must be increasing client counts; got {self.clients}")
        if self.mechanism not in ("gaussian", "laplace", "sas"):
            raise ParameterError(f"mechanism must be gaussian, laplace or sas; got "
                                 f"{self.mechanism!r}")
        if self.engine not in ("numpy", "flower"):
            raise ParameterError(f"engine must be 'numpy' or 'flower'; got {self.engine!r}")
        unknown = set(self.baselines) - set(BASELINES)
        if unknown:
            raise ParameterError(f"baselines must be among {BASELINES}; got {self.baselines}")
        if self.mechanism == "sas" and "per_sample" in self.baselines:
            raise ParameterError("the per-sample baseline supports gaussian and laplace noise")
        for name in ("experiments", "seeds"):
            check_integer(name, getattr(self, name), minimum=1)
        check_integer("length", self.length, minimum=self.max_delay + 10)
        for name in ("epsilon", "delta", "alpha", "state_bound", "input_bound", "noise_db"):
            check_positive(name, getattr(self, name))

    @property
    def dt(self) -> float:
        return 2.0


def _plant(config: FederatedIdentificationConfig):
    from dmdidc import DelayedPlant

    return DelayedPlant.from_continuous(np.array(A_C), np.array(B_C),
                                        np.array(config.delays_in_periods) * config.dt,
                                        config.dt, max_delay=config.max_delay)


def _experiments(config, plant, rng: np.random.Generator, count: int
                 ) -> list[dict[str, np.ndarray]]:
    """``count`` clients' experiments with measurement noise (``noise_db`` below each state's
    rms over the batch)."""
    from simulations.studies.private_identification import simulate_experiments

    E, L = config.experiments, config.length
    U = rng.uniform(-config.input_bound, config.input_bound, (count * E, plant.n_inputs, L))
    X = simulate_experiments(plant, U)
    rms = np.sqrt(np.mean(X ** 2, axis=(0, 2)))[None, :, None]
    X = X + 10 ** (-config.noise_db / 20) * rms * rng.standard_normal(X.shape)
    return [{"X": X[k * E:(k + 1) * E], "U": U[k * E:(k + 1) * E]} for k in range(count)]


def _clients(config, plant, rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
    """Every client's experiments, in batches of 100 clients (bounded memory)."""
    N = config.clients[-1]
    return [client for start in range(0, N, 100)
            for client in _experiments(config, plant, rng, min(100, N - start))]


def _algorithm(config):
    from dmdidc.federated.identification import FederatedIdentification

    joins = np.searchsorted(np.array(config.clients), np.arange(config.clients[-1]),
                            side="right")
    return FederatedIdentification(
        num_clients=config.clients[-1], n_states=2, n_inputs=2, max_delay=config.max_delay,
        state_bound=config.state_bound, input_bound=config.input_bound,
        mechanism=config.mechanism, epsilon=config.epsilon,
        delta=None if config.mechanism == "laplace" else config.delta,
        alpha=config.alpha if config.mechanism == "sas" else None, unit="sample",
        join_round=joins.tolist(), instruments="inputs")


def deployment_algorithm(*, clients: int, **settings: Any):
    """Factory for ``dmdidc federated serve --algorithm`` (real Flower processes): the
    study's :class:`~dmdidc.federated.identification.FederatedIdentification` with every
    client joining in round 0; ``settings`` are :class:`FederatedIdentificationConfig`
    fields (mechanism, epsilon, delta, alpha, state_bound, ...)."""
    return _algorithm(FederatedIdentificationConfig(clients=(clients,), **settings))


def deployment_partition(partition_id: int, num_partitions: int, *, seed: int = 0,
                         **settings: Any) -> dict[str, np.ndarray]:
    """Factory for ``dmdidc federated serve --data``: node ``partition_id``'s own experiments
    (its own generator, seeded by ``(seed, partition_id)``)."""
    config = FederatedIdentificationConfig(clients=(num_partitions,), **settings)
    rng = np.random.default_rng((seed, check_integer("partition_id", partition_id, minimum=0)))
    return _experiments(config, _plant(config), rng, 1)[0]


def _errors(delays: np.ndarray, truth: np.ndarray, dt: float) -> float:
    return float(np.max(np.abs(delays - truth)) / dt)


def _quietly(fit: Callable[[], Any]) -> Any:
    from _toolbox.errors import ToolboxError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fit()
        except (ToolboxError, np.linalg.LinAlgError):
            return None


def _fedinfer_metrics(algo, config, plant, exact: dict[int, np.ndarray]
                      ) -> Callable[[dict], dict[str, float]]:
    """Metrics after a round: the delay and its interval, and the relative error of the
    server's statistics against the exact sum of the joined clients' (``exact`` by N)."""
    from dmdidc import DMDidc

    def evaluate(model: dict) -> dict[str, float]:
        stats = algo.statistics_from_model(model)
        truth = exact[stats.n_trajectories // config.experiments]
        est = _quietly(lambda: DMDidc(max_delay=config.max_delay, estimator="iv")
                       .fit_statistics(stats, dt=config.dt))
        out = {"n": float(stats.n_samples), "statistics_error": float(
            np.linalg.norm(stats.to_vector() - truth) / np.linalg.norm(truth))}
        if est is None or not est.model_.has_continuous:
            return {**out, "error": math.inf}
        ci = _quietly(est.delay_ci)
        low = ci.low if ci is not None else np.full(2, np.nan)
        high = ci.high if ci is not None else np.full(2, np.nan)
        covered = bool(np.all((low <= plant.delay) & (plant.delay <= high)))
        width = high - low
        out.update(error=_errors(est.delay, plant.delay, config.dt),
                   half_width=(float(np.max(width) / 2 / config.dt)
                               if np.all(np.isfinite(width)) else math.nan),
                   covered=float(covered) if np.all(np.isfinite(low)) else math.nan)
        out.update({f"delay{j}": float(v) for j, v in enumerate(est.delay)})
        out.update({f"low{j}": float(v) for j, v in enumerate(low)})
        out.update({f"high{j}": float(v) for j, v in enumerate(high)})
        return out
    return evaluate


def _averaged(fits: list, count: int, plant, config) -> float:
    """Delay error of the FedAvg-style average of the first ``count`` clients' models."""
    from dmdidc.inference.recovery import recover_continuous

    models = [f for f in fits[:count] if f is not None]
    if not models:
        return math.inf
    A = np.mean([f[0] for f in models], axis=0)
    B = np.array([f[1] for f in models])
    mean = B.mean(axis=0)
    if len(models) == 1:
        active = models[0][2]
    else:
        error = B.std(axis=0, ddof=1) / math.sqrt(len(models))
        norm = np.linalg.norm(mean, axis=1)
        spread = np.sqrt(np.sum(error ** 2, axis=1))
        active = norm > 3.0 * spread
    result = _quietly(lambda: recover_continuous(A, mean, config.dt, active=active))
    return math.inf if result is None else _errors(result[2], plant.delay, config.dt)


def _client_fits(algo, statistics: list, config, seed: int) -> list:
    """Each client's own model from its own release (``statistics``: each client's
    statistics before the noise): the noise the simulated client drew in the run (its
    generator keyed by its simulated secret, as in :func:`run_client`)."""
    from dmdidc import DMDidc
    from privacy.federated.protocol import derive_rng, simulation_secret

    fits = []
    for k, own in enumerate(statistics):
        rng = derive_rng(simulation_secret(seed, k), "client", k, algo.join_round[k])
        private = own.privatize(**algo._release_options(k), rng=rng)
        est = _quietly(lambda p=private: DMDidc(max_delay=config.max_delay, estimator="iv")
                       .fit_statistics(p, dt=config.dt))
        fits.append(None if est is None else
                    (est.A_d, est.B_blocks, est.block_test_.active))
    return fits


def _per_sample(data, count: int, config, plant, rng: np.random.Generator) -> float:
    from dmdidc import DMDidc
    from simulations.studies.private_identification import privatize_samples

    X = np.concatenate([d["X"] for d in data[:count]])
    U = np.concatenate([d["U"] for d in data[:count]])
    noisy, _, _ = privatize_samples(X, state_bound=config.state_bound,
                                    mechanism=config.mechanism, epsilon=config.epsilon,
                                    delta=config.delta, alpha=config.alpha, steps=1, rng=rng)
    est = _quietly(lambda: DMDidc(max_delay=config.max_delay, estimator="iv")
                   .fit(list(noisy), list(U), dt=config.dt))
    if est is None or not est.model_.has_continuous:
        return math.inf
    return _errors(est.delay, plant.delay, config.dt)


def run_federated_identification(config: FederatedIdentificationConfig, *,
                                 progress: Callable[[int], None] | None = None
                                 ) -> dict[str, Any]:
    """Run the study: one row per (seed, number of clients, method).

    Returns
    -------
    dict
        ``rows`` (list of dicts: seed, clients, method, error in T, and for ``fedinfer`` the
        interval and coverage), ``epsilon`` (each client's composed epsilon after the run,
        from the accountant, seed 0), ``delta``, ``unit``, ``noise`` (a simulation: the
        clients' noise derives from the seed, so the experimenter knows it).
    """
    from privacy.federated import run_sync
    from privacy.federated.protocol import derive_rng
    from privacy.federated.results import SEEDED_NOISE_NOTE

    plant = _plant(config)
    algo = _algorithm(config)
    rows: list[dict[str, Any]] = []
    epsilons = None
    for s in range(config.seeds):
        seed = config.seed + s
        data = _clients(config, plant, derive_rng(seed, "network", 1, 0))
        # the clients' statistics once: the exact sums and the average's own releases
        statistics = [algo.client_statistics(d) for d in data]
        running = np.cumsum([s.to_vector() for s in statistics], axis=0)
        exact = {n: running[n - 1] for n in config.clients}
        evaluate = _fedinfer_metrics(algo, config, plant, exact)
        rounds = len(config.clients)
        if config.engine == "flower":
            from privacy.federated.flower import run_inprocess_sync
            run = run_inprocess_sync(algo, data, rounds=rounds, seed=seed, evaluate=evaluate)
        else:
            run = run_sync(algo, data, rounds=rounds, seed=seed, evaluate=evaluate)
        if epsilons is None:
            epsilons = run.final_epsilon()
        for record, count in zip(run.history, config.clients, strict=True):
            rows.append({"seed": seed, "clients": count, "method": "fedinfer",
                         **dict(record.metrics)})
        if "average" in config.baselines:
            fits = _client_fits(algo, statistics, config, seed)
            rows += [{"seed": seed, "clients": count, "method": "average",
                      "error": _averaged(fits, count, plant, config)}
                     for count in config.clients]
        if "per_sample" in config.baselines:
            rows += [{"seed": seed, "clients": count, "method": "per_sample",
                      "error": _per_sample(data, count, config, plant,
                                           derive_rng(seed, "network", 2, count))}
                     for count in config.clients]
        if progress is not None:
            progress(s)
    account = algo.client_dp(0)
    return {"rows": rows, "epsilon": [float(e) for e in epsilons],
            "delta": account.delta_per_release, "unit": account.unit,
            "noise": SEEDED_NOISE_NOTE,
            "config": asdict(config)}


def _slope(counts: np.ndarray, errors: np.ndarray) -> float:
    """Least-squares slope of log(median error) on log(N) where the median has the whole delay
    right (error below 0.25 T: below it the error is the fraction's, above it a whole period
    misread, which does not follow a rate)."""
    keep = np.isfinite(errors) & (errors > 0) & (errors < 0.25)
    if keep.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(counts[keep]), np.log(errors[keep]), 1)[0])


def summarize_identification(result: dict[str, Any]) -> dict[str, Any]:
    """Per method and number of clients: median and 10/90 % delay error (T), fraction
    identified, and for ``fedinfer`` the interval coverage; the measured rate per method."""
    rows = result["rows"]
    methods = sorted({r["method"] for r in rows}, key=["fedinfer", *BASELINES].index)
    counts = sorted({r["clients"] for r in rows})
    table: dict[str, list[dict[str, float]]] = {}
    for method in methods:
        table[method] = []
        for n in counts:
            errors = np.array([r["error"] for r in rows if r["method"] == method
                               and r["clients"] == n], dtype=float)
            entry = {"clients": n, "median": float(np.median(errors)),
                     "p10": float(np.quantile(errors, 0.1, method="nearest")),
                     "p90": float(np.quantile(errors, 0.9, method="nearest")),
                     "identified": float(np.mean(np.isfinite(errors)))}
            if method == "fedinfer":
                covered = [r.get("covered", math.nan) for r in rows
                           if r["method"] == method and r["clients"] == n]
                widths = [r.get("half_width", math.nan) for r in rows
                          if r["method"] == method and r["clients"] == n]
                entry["coverage"] = float(np.nanmean(covered)) if np.any(
                    np.isfinite(covered)) else math.nan
                entry["half_width"] = float(np.nanmedian(widths)) if np.any(
                    np.isfinite(widths)) else math.nan
                entry["statistics_error"] = float(np.median(
                    [r["statistics_error"] for r in rows
                     if r["method"] == method and r["clients"] == n]))
            table[method].append(entry)
    n = np.array(counts, dtype=float)
    rates = {m: _slope(n, np.array([e["median"] for e in table[m]])) for m in methods}
    widths = np.array([e["half_width"] for e in table["fedinfer"]])
    rates["fedinfer_interval"] = _slope(n, widths)
    noise = np.array([e["statistics_error"] for e in table["fedinfer"]])
    rates["fedinfer_statistics"] = (float(np.polyfit(np.log(n), np.log(noise), 1)[0])
                                    if n.size > 1 else math.nan)
    config = result["config"]
    expected = (-0.5 if config["mechanism"] != "sas"
                else 1.0 / config["alpha"] - 1.0)
    last = [r for r in rows if r["method"] == "fedinfer" and r["clients"] == counts[-1]]
    identified = [{"seed": r["seed"],
                   "delay_s": [r.get(f"delay{j}", math.nan) for j in range(2)],
                   "ci_s": [[r.get(f"low{j}", math.nan), r.get(f"high{j}", math.nan)]
                            for j in range(2)]} for r in last]
    return {"table": table, "rate_measured": rates, "rate_expected": expected,
            "identified_at_largest_N": identified}


def plot_identification(summary: dict[str, Any], path: Any, *, title: str = "") -> None:
    """Delay error against N (log-log): medians with 10-90 % bands, the interval half-width
    and the expected rate through the last point (matplotlib OO API)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    labels = {"fedinfer": "FedInfer on statistics", "average": "average of client models",
              "per_sample": "per-sample privatization"}
    for method, entries in summary["table"].items():
        n = np.array([e["clients"] for e in entries], dtype=float)
        med = np.array([e["median"] for e in entries])
        shown = np.isfinite(med)
        label = labels[method] + ("" if shown.any() else " (never identified)")
        line, = ax.plot(n[shown], med[shown], "o-", label=label)
        lo = np.array([e["p10"] for e in entries])
        hi = np.array([e["p90"] for e in entries])
        band = np.isfinite(lo) & np.isfinite(hi)
        ax.fill_between(n[band], lo[band], hi[band], color=line.get_color(), alpha=0.2)
        if method == "fedinfer":
            half = np.array([e.get("half_width", np.nan) for e in entries])
            ok = np.isfinite(half)
            ax.plot(n[ok], half[ok], ":", color=line.get_color(),
                    label="95 % interval half-width")
            noise = np.array([e["statistics_error"] for e in entries])
            ax.plot(n, noise, "s:", color="gray", ms=3,
                    label="relative error of the statistics")
            if shown.any():
                last = np.flatnonzero(shown)[-1]
                rate = summary["rate_expected"]
                ref = med[last] * (n / n[last]) ** rate
                ax.plot(n, ref, "k--", lw=0.8, label=f"N^{rate:.2f} (expected)")
    if any(np.isfinite(e["median"]) and e["median"] > 0
           for entries in summary["table"].values() for e in entries):
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "no delay identified at these N", transform=ax.transAxes,
                ha="center")
    ax.set_xlabel("clients N (each epsilon = 1, one time step)")
    ax.set_ylabel("delay error |r - r_hat| / T (worst channel)")
    ax.set_title(title or "Federated identification: delay error against N")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
