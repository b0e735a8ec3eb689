"""Empirical audit of the privatized sufficient statistics (``SufficientStatistics.privatize``).

The release adds noise once to the vector ``v = stats.to_vector()``, calibrated from the derived
sensitivity of :mod:`dmdidc.private.sensitivity` for a privacy unit.  The audit checks that
claim from below, end to end:

1. **Neighbours near the worst case.**  :func:`adversarial_neighbours` searches data sets
   ``D, D'`` (one short trajectory in the unit box, ``n = m = 1``) that differ in one unit and
   move ``v`` as far as possible in the norm the mechanism is calibrated for (l2 for Gaussian,
   l1 for Laplace and SaS): greedy coordinate ascent over the vertices ``{-1, 0, 1}`` from many
   random starts (the brute force that also checks the derived bound,
   ``tests/dmdidc/private/test_sensitivity.py``).  The change found is 0.6-1.0 of the bound.
2. **Releases through the real path.**  Every output is one call of
   ``stats.privatize(...)`` on ``D`` or on ``D'`` (calibration, sensitivity and noise exactly as a
   user gets them); the claimed epsilon is that release's ``privacy.epsilon``.
3. **Score: the exact privacy loss** ``log p_D'(o) / p_D(o)`` of the noisy vector ``o`` given the
   two noiseless vectors ``a = v(D)``, ``b = v(D')`` - the most powerful test between the two
   (Neyman-Pearson).  For Gaussian noise it is the projection of ``o - a`` on ``b - a``; for
   Laplace ``sum_i (|o_i - a_i| - |o_i - b_i|) / scale``; for SaS the sum of the log-density
   differences per coordinate.
4. :func:`privacy.audit.audit` selects a half line of the score and certifies a lower bound on
   epsilon (Clopper-Pearson) at the release's delta.

The derived sensitivity is an upper bound, so a correct release audits below its claim, and the
gap includes both the audit's sampling error and the slack of the bound for these neighbours.
A mis-calibrated release (a sensitivity under-estimated, or trajectory-sized neighbours released
with a sample-level claim) moves the outputs more than claimed and the bound exceeds the claim.

Examples
--------
>>> from simulations.studies.statistics_audit import adversarial_neighbours, audit_release
>>> pair = adversarial_neighbours("sample", norm=2, starts=2, rng=0)
>>> record = audit_release(pair, "gaussian", epsilon=1.0, delta=1e-5, samples=2000, rng=0)
>>> record["epsilon_lower_bound"] <= record["epsilon_claimed"]
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import as_generator, check_integer
from dmdidc import SufficientStatistics
from privacy import stable
from privacy.audit import audit

__all__ = ["NeighbourPair", "adversarial_neighbours", "audit_release", "release_sampler",
           "privacy_loss_score", "pair_epsilon", "statistics_audits", "STATISTICS_AUDIT_NAMES"]

#: Releases audited by ``dmdidc privacy audit``: ``(mechanism, privatize options, norm)``.
#: Gaussian is audited at delta 1e-3 against the accountant's epsilon of the released
#: mechanism there (resolvable with 1e4 samples; the release targets (1, 1e-5)).
_RELEASES = {"gaussian": (dict(delta=1e-5), dict(audit_delta=1e-3), 2),
             "laplace": ({}, {}, 1),
             "sas_1.5": (dict(alpha=1.5), {}, 1)}
_UNITS = {"sample": None, "window": 2, "trajectory": None}
#: Inputs of the trajectory whose replacement is released with a sample-level claim.
_MISMATCH_SAMPLES = 12

STATISTICS_AUDIT_NAMES = tuple(
    [f"statistics_{m}_{u}" for m in _RELEASES for u in _UNITS]
    + [f"statistics_{m}_trajectory_vs_sample_claim" for m in _RELEASES])

_VERTICES = np.array([-1.0, 0.0, 1.0])


@dataclass(frozen=True)
class NeighbourPair:
    """Two data sets that differ in one privacy unit (one trajectory each, time on the last axis).

    Attributes
    ----------
    X, U : ndarray, shape (n, K + 1) and (m, K)
        Data set ``D``.
    X2, U2 : ndarray
        Data set ``D'``: ``D`` with the unit's time steps replaced.
    unit : str
        ``"sample"``, ``"window"`` or ``"trajectory"``.
    window : int or None
    norm : int
        1 or 2: the norm that was maximised.
    change : float
        ``||v(D') - v(D)||`` in that norm.
    max_delay, detrend, instruments :
        How the statistics are built (``from_data`` arguments; bounds are 1).
    """

    X: np.ndarray
    U: np.ndarray
    X2: np.ndarray
    U2: np.ndarray
    unit: str
    window: int | None
    norm: int
    change: float
    max_delay: int = 1
    detrend: str | None = None
    instruments: str | None = None

    def statistics(self) -> tuple[SufficientStatistics, SufficientStatistics]:
        """The plain statistics of ``D`` and ``D'`` (unit bounds)."""
        return (_statistics(self.X, self.U, self.max_delay, self.detrend, self.instruments),
                _statistics(self.X2, self.U2, self.max_delay, self.detrend, self.instruments))


def _statistics(X, U, max_delay, detrend, instruments) -> SufficientStatistics:
    return SufficientStatistics.from_data(X, U, max_delay=max_delay, state_bound=1.0,
                                          input_bound=1.0, detrend=detrend,
                                          instruments=instruments,
                                          instrument_lags=1 if instruments else None)


def adversarial_neighbours(unit: str, *, norm: int, window: int | None = None,
                           samples: int = 6, max_delay: int = 1, detrend: str | None = None,
                           instruments: str | None = None, starts: int = 25,
                           rng: np.random.Generator | int | None = 0) -> NeighbourPair:
    """Neighbouring data sets that move the released statistics nearly as far as possible.

    One trajectory of ``samples`` inputs (``n = m = 1``, values in the unit box); the unit's
    time steps (a random start) are replaced.  Greedy coordinate ascent over the vertices
    ``{-1, 0, 1}`` of every value of ``D`` and of the replaced values, from ``starts`` random
    starts; the best pair found is returned.

    Parameters
    ----------
    unit : {"sample", "window", "trajectory"}
    norm : {1, 2}
        Maximise the l1 (Laplace, SaS) or the l2 (Gaussian) change of ``to_vector``.
    window : int, optional
        Time steps per window (``unit="window"``).
    samples : int, default 6
        ``K``, inputs of the trajectory.
    max_delay : int, default 1
    detrend : {None, "constant"}
    instruments : {None, "inputs", "states"}
    starts : int, default 25
    rng : numpy.random.Generator, int or None

    Returns
    -------
    NeighbourPair

    Raises
    ------
    ParameterError
        Unknown unit or norm, or a window with another unit.
    """
    if unit not in ("sample", "window", "trajectory"):
        raise ParameterError(f"unit must be 'sample', 'window' or 'trajectory'; got {unit!r}")
    if norm not in (1, 2):
        raise ParameterError(f"norm must be 1 or 2; got {norm!r}")
    if (unit == "window") != (window is not None):
        raise ParameterError(f"window is needed with unit='window' and only there; got "
                             f"window={window!r} with unit={unit!r}")
    K = check_integer("samples", samples, minimum=max_delay + 2)
    starts = check_integer("starts", starts, minimum=1)
    gen = as_generator(rng)
    width = {"sample": 1, "window": window, "trajectory": K + 1}[unit]
    build = (max_delay, detrend, instruments)

    # the ascent revisits data sets (every sweep tries each value's current vertex again, and
    # moving a replaced value leaves D as it was): their statistics are computed once
    vectors: dict[bytes, np.ndarray] = {}

    def vector(X, U):
        key = X.tobytes() + U.tobytes()          # fixed shapes: the bytes identify (X, U)
        if key not in vectors:
            vectors[key] = _statistics(X, U, *build).to_vector()
        return vectors[key]

    def change(X, U, X2, U2, keep_x, keep_u):
        # D' has D's values outside the replaced time steps (keep_x, keep_u)
        X2[0, keep_x], U2[0, keep_u] = X[0, keep_x], U[0, keep_u]
        return float(np.linalg.norm(vector(X2, U2) - vector(X, U), ord=norm))

    best, best_pair = -1.0, None
    for _ in range(starts):
        X, U = gen.choice(_VERTICES, (1, K + 1)), gen.choice(_VERTICES, (1, K))
        t = int(gen.integers(0, K + 2 - min(width, K + 1)))
        steps = np.arange(t, min(t + width, K + 1))
        X2, U2 = X.copy(), U.copy()
        X2[0, steps] = gen.choice(_VERTICES, steps.size)
        inside = steps[steps < K]
        U2[0, inside] = gen.choice(_VERTICES, inside.size)
        variables = ([(X, (0, j)) for j in range(K + 1)] + [(U, (0, j)) for j in range(K)]
                     + [(X2, (0, j)) for j in steps] + [(U2, (0, j)) for j in inside])
        args = (X, U, X2, U2, np.setdiff1d(np.arange(K + 1), steps),
                np.setdiff1d(np.arange(K), inside))
        current = change(*args)
        improved = True
        while improved:
            improved = False
            for array, index in variables:
                keep = array[index]
                for candidate in _VERTICES:
                    array[index] = candidate
                    trial = change(*args)
                    if trial > current + 1e-12:
                        current, keep, improved = trial, candidate, True
                array[index] = keep
            current = change(*args)
        if current > best:
            best, best_pair = current, (X.copy(), U.copy(), X2.copy(), U2.copy())
    return NeighbourPair(*best_pair, unit=unit, window=window, norm=norm, change=best,
                         max_delay=max_delay, detrend=detrend, instruments=instruments)


def privacy_loss_score(mechanism, null_vector: np.ndarray, alt_vector: np.ndarray
                       ) -> Callable[[np.ndarray], np.ndarray]:
    """The exact privacy loss ``log p_alt(o) / p_null(o)`` of noisy vectors ``o`` (rows), up to a
    positive factor and an offset (which change no half line of the score).

    ``mechanism`` is the release's (``PrivacyRelease.mechanism``): Gaussian (the projection on
    ``alt - null``), Laplace or SaS (i.i.d. noise per entry).
    """
    a, b = np.asarray(null_vector, dtype=float), np.asarray(alt_vector, dtype=float)
    kind = type(mechanism).__name__
    if kind == "GaussianMechanism":
        return lambda o: (o - a) @ (b - a)
    if kind == "LaplaceMechanism":
        return lambda o: np.sum(np.abs(o - a) - np.abs(o - b), axis=1) / mechanism.scale
    if kind == "SaSMechanism":
        alpha, gamma = mechanism.alpha, mechanism.scale
        return lambda o: np.sum(stable.sas_logpdf(o - b, alpha, gamma)
                                - stable.sas_logpdf(o - a, alpha, gamma), axis=1)
    raise ParameterError(f"no privacy loss for a {kind}; expected a Gaussian, Laplace or SaS "
                         f"mechanism")


def pair_epsilon(mechanism, null_vector: np.ndarray, alt_vector: np.ndarray, *,
                 delta: float) -> float:
    """Epsilon of the release for exactly these two neighbours (not the worst case): how much
    of the claim the pair can reveal at most, from :mod:`privacy`.

    Gaussian: the accountant's epsilon at ``delta`` with the pair's l2 shift as sensitivity;
    Laplace: ``||b - a||_1 / scale``; SaS: the sum of the scalar pure epsilons of the
    coordinates' shifts (the privacy loss of independent coordinates adds up, and so do its
    maxima).  The pure-DP values hold at every delta.
    """
    from privacy import GaussianMechanism, SaSMechanism, accounting

    shift = np.abs(np.asarray(alt_vector, dtype=float) - np.asarray(null_vector, dtype=float))
    kind = type(mechanism).__name__
    if kind == "GaussianMechanism":
        return accounting.epsilon(GaussianMechanism(mechanism.sigma,
                                                    sensitivity=float(np.linalg.norm(shift))),
                                  delta=delta)
    if kind == "LaplaceMechanism":
        return float(shift.sum() / mechanism.scale)
    if kind == "SaSMechanism":
        return float(sum(SaSMechanism(mechanism.alpha, mechanism.scale, sensitivity=s).epsilon
                         for s in shift[shift > 0]))
    raise ParameterError(f"no pair epsilon for a {kind}; expected a Gaussian, Laplace or SaS "
                         f"mechanism")


def release_sampler(pair: NeighbourPair, **privatize_kwargs) -> Callable:
    """``sampler(n, rng) -> (outputs on D, outputs on D')``, each of shape (n, dimension): one
    call of ``SufficientStatistics.privatize(**privatize_kwargs)`` per output."""
    stats_null, stats_alt = pair.statistics()

    def sampler(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        # the audit samples one release's law: its many draws are not a disclosure
        return tuple(np.array([stats.privatize(rng=rng, accounted=True,
                                               **privatize_kwargs).to_vector()
                               for _ in range(n)]) for stats in (stats_null, stats_alt))
    return sampler


def audit_release(pair: NeighbourPair, mechanism: str, *, epsilon: float,
                  delta: float | None = None, alpha: float | None = None,
                  unit: str | None = None, window: int | None = None, samples: int = 20_000,
                  audit_delta: float | None = None, confidence: float = 0.95,
                  rng: np.random.Generator | int | None = None) -> dict:
    """Audit ``privatize(mechanism, epsilon=..., unit=...)`` on a neighbour pair.

    Parameters
    ----------
    pair : NeighbourPair
    mechanism : {"gaussian", "laplace", "sas"}
    epsilon, delta, alpha :
        As in ``SufficientStatistics.privatize``.
    unit, window : optional
        The unit the release is calibrated (and claimed) for; default the pair's.  A different
        unit is a mis-calibration (e.g. trajectory neighbours with a sample-level claim).
    samples : int, default 20000
        Releases per neighbour (each a ``privatize`` call, ~0.3 ms).
    audit_delta : float, optional
        Audit at this delta instead of the release's ((epsilon, delta) releases only: the claim
        is then the accountant's epsilon of the release's ``accounted_mechanism`` at
        ``audit_delta``; a larger delta, e.g. 1e-3, is resolvable with fewer samples).
    confidence : float, default 0.95
    rng : numpy.random.Generator, int or None

    Returns
    -------
    dict
        ``epsilon_claimed`` and ``delta`` (the release's ``privacy``), ``epsilon_lower_bound``,
        ``confidence``, ``epsilon_pair`` (:func:`pair_epsilon`), ``samples_per_neighbour``,
        ``violation``, ``change`` and ``sensitivity`` (the pair's change and the derived
        bound, in the mechanism's norm), ``unit`` and ``neighbours_unit``.
    """
    gen = as_generator(rng)
    if unit is None:
        unit, window = pair.unit, pair.window
    kwargs = dict(mechanism=mechanism, epsilon=epsilon, delta=delta, alpha=alpha, unit=unit,
                  window=window)
    stats_null, stats_alt = pair.statistics()
    release = stats_null.privatize(rng=gen, accounted=True, **kwargs).privacy
    claimed, at_delta = release.epsilon, release.delta
    if audit_delta is not None and audit_delta != release.delta:
        if release.delta == 0.0:
            raise ParameterError(f"audit_delta applies to (epsilon, delta) releases only "
                                 f"(Gaussian, or SaS given delta); this {mechanism} release is "
                                 f"pure DP (delta 0); got audit_delta={audit_delta!r}")
        from privacy import accounting
        claimed = accounting.epsilon(release.accounted_mechanism, delta=audit_delta)
        at_delta = audit_delta
    null_vector, alt_vector = stats_null.to_vector(), stats_alt.to_vector()
    score = privacy_loss_score(release.mechanism, null_vector, alt_vector)
    res = audit(release_sampler(pair, **kwargs), samples=samples, delta=at_delta,
                confidence=confidence, score=score, batch_size=max(samples // 4, 1), rng=gen)
    change = np.linalg.norm(alt_vector - null_vector, ord=2 if release.norm == "l2" else 1)
    return {"epsilon_claimed": claimed, "delta": at_delta,
            "epsilon_lower_bound": res.epsilon_lower_bound, "confidence": res.confidence,
            "epsilon_pair": pair_epsilon(release.mechanism, null_vector, alt_vector,
                                         delta=at_delta),
            "samples_per_neighbour": samples,
            "violation": bool(res.epsilon_lower_bound > claimed),
            "change": float(change), "sensitivity": release.sensitivity,
            "unit": release.unit, "neighbours_unit": pair.unit}


def statistics_audits(names: Iterable[str], samples: int, confidence: float,
                      gen: np.random.Generator) -> Iterable[dict]:
    """The named audits of ``STATISTICS_AUDIT_NAMES`` as records of
    ``simulations.studies.audit.run_audits``: every mechanism at every unit (epsilon 1,
    neighbours from :func:`adversarial_neighbours` on a 6-step trajectory, ``max_delay=1``),
    and each mechanism with trajectory neighbours (12 steps) but a sample-level release (a
    claim known to be wrong)."""
    names = set(names)
    pairs: dict[tuple, NeighbourPair] = {}

    def neighbours(unit: str, norm: int, steps: int = 6) -> NeighbourPair:
        key = (unit, norm, steps)
        if key not in pairs:
            pairs[key] = adversarial_neighbours(unit, norm=norm, window=_UNITS[unit],
                                                samples=steps, rng=0)
        return pairs[key]

    for label, (options, audit_options, norm) in _RELEASES.items():
        mechanism = label.split("_")[0]
        cases = [(f"statistics_{label}_{unit}", (unit, norm), {}, False,
                  f"privatize('{mechanism}', epsilon=1, unit='{unit}') on near worst-case "
                  f"neighbours") for unit in _UNITS]
        cases.append((f"statistics_{label}_trajectory_vs_sample_claim",
                      ("trajectory", norm, _MISMATCH_SAMPLES),
                      dict(unit="sample", window=None), True,
                      f"privatize('{mechanism}', epsilon=1, unit='sample') on neighbours "
                      f"differing in a whole {_MISMATCH_SAMPLES}-step trajectory"))
        for name, pair_key, override, known_wrong, note in cases:
            if name not in names:
                continue
            record = audit_release(neighbours(*pair_key), mechanism, epsilon=1.0,
                                   samples=samples, confidence=confidence, rng=gen,
                                   **options, **audit_options, **override)
            yield {"name": name, **record, "claim_known_wrong": known_wrong,
                   "note": note + f" (change {record['change']:.4g} of sensitivity "
                                  f"{record['sensitivity']:.4g}; this pair's epsilon "
                                  f"{record['epsilon_pair']:.3g})"}
