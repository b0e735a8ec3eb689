"""Empirical audits of this package's mechanisms and of DP-SGD against the accountant's claims.

Each audit draws outputs on two neighbouring inputs, scores them (the exact privacy loss when the
densities are known, canary statistics for DP-SGD) and certifies a lower bound on epsilon with
:func:`privacy.audit.epsilon_lower_bound`.  The list contains *correct* mechanisms (the bound must
stay below the claim) and *deliberately wrong* claims (``claim_known_wrong``: noise halved with the
claim unchanged, or i.i.d. SaS vector noise accounted with the scalar accountant as in the seed):
there a powerful enough audit exceeds the claim (a weak observer, e.g. black-box, may not).

A new release (e.g. privatized sufficient statistics) is audited the same way: write a sampler
``sampler(n, rng) -> (outputs_D, outputs_D')`` and call :func:`privacy.audit.audit`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import as_generator, check_integer
from privacy import GaussianMechanism, LaplaceMechanism, SaSMechanism, stable
from privacy.accounting import epsilon as accountant_epsilon
from privacy.audit import AuditResult, audit, epsilon_lower_bound
from privacy.dpsgd import DPSGDConfig, GradientNoise, calibrate_noise, dpsgd_epsilon
from privacy.dpsgd.canary import canary_scores
from privacy.vector_sas import sas_gaussian_equivalent_sigma
from simulations.studies.statistics_audit import STATISTICS_AUDIT_NAMES, statistics_audits

__all__ = ["AUDIT_NAMES", "run_audits", "plot_audits"]


@dataclass(frozen=True)
class _Spec:
    name: str
    kind: str            # "mechanism", "vector", "dpsgd"
    expected_violation: bool = False


AUDIT_NAMES = (
    "laplace", "gaussian", "sas_1.999", "sas_1.9", "sas_1.5",
    "laplace_scale_halved", "gaussian_sigma_halved",
    "sas_1.9_subsampled", "sas_1.5_vector16",
    "dpsgd_gaussian", "dpsgd_gaussian_noise_halved", "dpsgd_sas_1.5_spread16",
) + STATISTICS_AUDIT_NAMES


def _record(name: str, res: AuditResult, claimed: float, *, claim_known_wrong: bool,
            note: str, samples: int) -> dict:
    return {"name": name, "epsilon_claimed": claimed,
            "epsilon_lower_bound": res.epsilon_lower_bound, "confidence": res.confidence,
            "delta": res.delta, "samples_per_neighbour": samples,
            "violation": bool(res.epsilon_lower_bound > claimed),
            "claim_known_wrong": claim_known_wrong, "note": note}


def _shift_sampler(mech) -> Callable:
    def sampler(n, rng):
        # n scalar releases on each neighbour: a (1, n) batch of the dimension-1 mechanism
        return (mech.randomize(np.zeros((1, n)), rng)[0],
                mech.randomize(np.ones((1, n)), rng)[0])
    return sampler


def _mechanism_audits(names: set[str], samples: int, confidence: float,
                      gen: np.random.Generator) -> Iterable[dict]:
    # scalar releases, sensitivity 1, neighbours 0 and 1; score = x or the exact privacy loss
    gauss = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    table = {
        "laplace": (LaplaceMechanism(1.0), 1.0, 0.0, False, "Laplace, scale 1: pure epsilon 1"),
        "gaussian": (gauss, 1.0, 1e-5, False, "analytic Gaussian for (1, 1e-5)"),
        "laplace_scale_halved": (LaplaceMechanism(0.5), 1.0, 0.0, True,
                                 "scale halved (true epsilon 2), claim kept at 1"),
        "gaussian_sigma_halved": (GaussianMechanism(gauss.sigma / 2), 1.0, 1e-5, True,
                                  "sigma halved (true epsilon 2.15), claim kept at 1"),
    }
    for alpha in (1.999, 1.9, 1.5):
        if f"sas_{alpha:g}" not in names:
            continue                      # calibration takes seconds: only when asked for
        mech = SaSMechanism.from_epsilon(1.0, alpha=alpha)
        table[f"sas_{alpha:g}"] = (mech, 1.0, 0.0, False,
                                   f"SaS alpha={alpha:g}, scale {mech.scale:.4g}: pure eps 1")
    for name, (mech, claim, delta, known_wrong, note) in table.items():
        if name not in names:
            continue
        score = mech.privacy_loss if isinstance(mech, SaSMechanism) else None
        res = audit(_shift_sampler(mech), samples=samples, delta=delta, confidence=confidence,
                    score=score, rng=gen)
        yield _record(name, res, claim, claim_known_wrong=known_wrong, note=note,
                      samples=samples)


def _subsampled_audit(samples: int, confidence: float, gen: np.random.Generator) -> dict:
    """Five Poisson-subsampled (q = 0.5) scalar SaS releases: audits the PLD accountant's
    subsampling and composition of SaS (privacy.accounting.epsilon) at delta = 1e-3."""
    alpha, q, steps, delta = 1.9, 0.5, 5, 1e-3
    mech = SaSMechanism(alpha=alpha, scale=1.0)

    def sampler(n, rng):
        noise = stable.sas_sample(alpha, 1.0, size=(2, n, steps), rng=rng)
        return noise[0], noise[1] + (rng.random((n, steps)) < q)

    def loss(x):   # exact log-likelihood ratio of the subsampled trajectory
        step = stable.sas_logpdf(x - 1.0, alpha, 1.0) - stable.sas_logpdf(x, alpha, 1.0)
        return np.logaddexp(math.log(q) + step, math.log1p(-q)).sum(axis=1)
    res = audit(sampler, samples=samples, delta=delta, confidence=confidence, score=loss,
                rng=gen)
    claim = accountant_epsilon(mech, delta=delta, steps=steps, sampling_rate=q)
    return _record("sas_1.9_subsampled", res, claim, claim_known_wrong=False,
                   note="5 releases of SaS alpha=1.9, scale 1, Poisson q=0.5: the SaS PLD "
                        "accountant's composed epsilon", samples=samples)


def _vector_audits(samples: int, confidence: float, gen: np.random.Generator
                   ) -> Iterable[dict]:
    """i.i.d. SaS on a 16-vector, shift (1, ..., 1)/4 (l2 norm 1), scale from the scalar claim."""
    alpha, k, delta = 1.5, 16, 1e-5
    mech = SaSMechanism.from_epsilon(1.0, alpha=alpha)
    gamma, shift = mech.scale, 1.0 / math.sqrt(k)

    def sampler(n, rng):
        return (stable.sas_sample(alpha, gamma, size=(n, k), rng=rng),
                stable.sas_sample(alpha, gamma, size=(n, k), rng=rng) + shift)

    def loss(x):
        return (stable.sas_logpdf(x - shift, alpha, gamma)
                - stable.sas_logpdf(x, alpha, gamma)).sum(axis=1)
    res = audit(sampler, samples=samples, delta=delta, confidence=confidence, score=loss,
                rng=gen, batch_size=50_000)
    scalar = accountant_epsilon(mech, delta=delta)
    certified = accountant_epsilon(
        GaussianMechanism(sas_gaussian_equivalent_sigma(alpha, gamma)), delta=delta)
    base = f"i.i.d. SaS alpha=1.5, scale {gamma:.4g}, 16 coordinates, l2 shift 1 spread evenly"
    yield _record("sas_1.5_vector16_scalar_accounting", res, scalar, claim_known_wrong=True,
                  note=base + ": claim of the scalar accountant (seed's method)",
                  samples=samples)
    yield _record("sas_1.5_vector16_certified", res, certified, claim_known_wrong=False,
                  note=base + ": certified vector bound (privacy.vector_sas)", samples=samples)


def _dpsgd_data() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    idx = np.random.default_rng(0).choice(len(y), 200, replace=False)
    return X[idx], y[idx]


def _dpsgd_audits(names: set[str], runs: int, confidence: float, gen: np.random.Generator
                  ) -> Iterable[dict]:
    """Logistic regression on 200 breast-cancer examples with a canary, audited at delta 1e-3
    (resolvable with ~1e4 runs; the claim is the accountant's epsilon at the same delta)."""
    X, y = _dpsgd_data()
    delta = 1e-3
    q, steps, target = 0.5, 10, 2.0
    config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=q, steps=steps)
    run = dict(clip_norm=1.0, steps=steps, sampling_rate=q)
    cases = []
    if names & {"dpsgd_gaussian", "dpsgd_gaussian_noise_halved"}:
        good = calibrate_noise(target, law="gaussian", delta=1e-5, **run)
        claim = dpsgd_epsilon(good, delta=delta, **run)
        desc = f"q={q}, {steps} steps, sigma calibrated to (2, 1e-5)"
        cases += [("dpsgd_gaussian", config, good, 1, claim, False, desc),
                  ("dpsgd_gaussian_noise_halved", config,
                   GradientNoise("gaussian", good.scale / 2), 1, claim, True,
                   desc + "; noise halved, claim kept")]
    if "dpsgd_sas_1.5_spread16" in names:
        single = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=1.0, steps=1)
        mech = SaSMechanism.from_epsilon(1.0, alpha=1.5)
        noise = GradientNoise("sas", mech.scale, 1.5)
        scalar = accountant_epsilon(mech, delta=delta)
        certified = dpsgd_epsilon(noise, clip_norm=1.0, steps=1, sampling_rate=1.0,
                                  delta=delta)
        desc = ("one full-batch step, SaS alpha=1.5 at the scale the scalar accountant gives "
                "pure epsilon 1, canary gradient spread over 16 coordinates")
        cases += [("dpsgd_sas_1.5_spread16_scalar_accounting", single, noise, 16, scalar, True,
                   desc + ": scalar claim"),
                  ("dpsgd_sas_1.5_spread16_certified", single, noise, 16, certified, False,
                   desc + ": certified claim")]
    cache: dict[tuple, dict] = {}
    for name, cfg, noise, dims, claim, known_wrong, note in cases:
        key = (cfg, noise, dims)
        if key not in cache:
            cache[key] = canary_scores(X, y, config=cfg, noise=noise, runs=runs,
                                       canary_dims=dims, rng=gen)
        for observer, pair in cache[key].items():
            res = epsilon_lower_bound(*pair, delta=delta, confidence=confidence, rng=gen)
            yield _record(f"{name}_{observer}", res, claim, claim_known_wrong=known_wrong,
                          note=f"{note}; {observer.replace('_', '-')} canary score",
                          samples=runs)


def run_audits(*, names: Iterable[str] = AUDIT_NAMES, samples: int = 1_000_000,
               vector_samples: int = 400_000, runs: int = 20_000,
               statistics_samples: int = 20_000, confidence: float = 0.95,
               rng: np.random.Generator | int | None = 0,
               progress: Callable | None = None) -> list[dict]:
    """Run the named audits; return one record per audit (see the module docstring).

    ``samples``: outputs per neighbour for scalar mechanisms; ``vector_samples`` for the
    16-dimensional SaS release; ``runs``: DP-SGD trainings per neighbour;
    ``statistics_samples``: privatized sufficient statistics per neighbour
    (:mod:`simulations.studies.statistics_audit`).
    """
    names = set(names)
    unknown = names - set(AUDIT_NAMES)
    if unknown:
        # a record's name (auditing.md's first column) names the audit it comes from: say which
        records = {name: max(known, key=len) for name in sorted(unknown)
                   if (known := [a for a in AUDIT_NAMES if name.startswith(a + "_")])}
        hint = "".join(f"; {name!r} is a record of the audit {audit!r}"
                       for name, audit in records.items())
        raise ParameterError(f"unknown audits {sorted(unknown)}{hint}; choose from "
                             f"{AUDIT_NAMES}")
    statistics_samples = check_integer("statistics_samples", statistics_samples, minimum=4)
    gen = as_generator(rng)
    groups = [("mechanisms", lambda: _mechanism_audits(names, samples, confidence, gen)),
              ("subsampled SaS", lambda: [_subsampled_audit(samples, confidence, gen)]
               if "sas_1.9_subsampled" in names else []),
              ("vector SaS", lambda: _vector_audits(vector_samples, confidence, gen)
               if "sas_1.5_vector16" in names else []),
              ("DP-SGD", lambda: _dpsgd_audits(names, runs, confidence, gen)),
              ("sufficient statistics",
               lambda: statistics_audits(names, statistics_samples, confidence, gen))]
    records: list[dict] = []
    for _, make in (progress or (lambda g: g))(groups):
        records.extend(make())
    return records


def plot_audits(records: list[dict], path) -> None:
    """Horizontal bars: certified lower bound vs claimed epsilon for every audit."""
    from _toolbox.plotting import new_figure, save_figure

    fig = new_figure((10.5, 0.36 * len(records) + 1.2))
    ax = fig.subplots()
    y = np.arange(len(records))[::-1]
    claimed = [r["epsilon_claimed"] for r in records]
    lower = [r["epsilon_lower_bound"] for r in records]
    colors = ["tab:red" if r["violation"] else "tab:blue" for r in records]
    ax.barh(y, lower, color=colors, alpha=0.7, label="audit lower bound (red: above claim)")
    ax.scatter(claimed, y, marker="|", s=250, color="k", label="claimed epsilon")
    ax.set_yticks(y, [f"{r['name']} (delta={r['delta']:g})" for r in records], fontsize=7)
    ax.set_xlabel(f"epsilon (confidence {records[0]['confidence']:g})")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    save_figure(fig, path, dpi=90)
