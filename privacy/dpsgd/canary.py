"""Canary experiments for auditing DP-SGD end to end (insert or remove one crafted example).

The canary is a real training example run through the real trainer (per-example gradient,
clipping, Poisson sampling, noise).  The data get ``k`` extra feature columns that are zero for
every genuine example; the canary's features are zero except ``canary_norm / sqrt(k)`` on those
``k`` columns (label 1), so its gradient lives, after clipping, on the ``k`` canary weights (plus
the bias), where no other example moves the model.  ``k = 1`` is a "Dirac" canary; ``k > 1``
spreads the canary's gradient evenly over ``k`` coordinates - the direction in which i.i.d. SaS
noise is weakest (:mod:`privacy.vector_sas`).

Two observers, each giving one score per training run (higher = "canary present"):

* ``white_box`` - the threat model of the DP-SGD accountant: the adversary sees every
  intermediate model, hence every noisy sum on the canary coordinates, and knows the canary's
  clipped gradient ``g_t`` at each step; its score is the exact log-likelihood ratio of the whole
  trajectory, ``sum_t log(q exp(L_t) + 1 - q)`` with ``L_t = sum_i log p(u_ti - g_ti) - log
  p(u_ti)`` (``p`` the noise density).
* ``black_box`` - only the final model: minus the canary's cross-entropy.

Feed the score pairs to :func:`privacy.audit.epsilon_lower_bound`.

References
----------
M. Nasr et al., "Tight auditing of differentially private machine learning", USENIX Security 2023
(gradient canaries, white-box auditing).  M. Jagielski et al., NeurIPS 2020 (black-box canaries).
"""

from __future__ import annotations

import math

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_integer,
    check_magnitude,
    check_positive,
)
from privacy.dpsgd.models import LogisticModel, cross_entropy
from privacy.dpsgd.noise import GradientNoise
from privacy.dpsgd.train import DPSGDConfig, dpsgd_train

__all__ = ["canary_scores"]


def canary_scores(X: np.ndarray, y: np.ndarray, *, config: DPSGDConfig, noise: GradientNoise,
                  runs: int, canary_dims: int = 1, canary_norm: float = 1e3,
                  batch_runs: int = 2000, rng: np.random.Generator | int | None = None
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Scores of ``runs`` DP-SGD runs of logistic regression without and with the canary.

    Parameters
    ----------
    X : array (n, F), y : array (n,)
        Genuine training data (binary labels).
    config : DPSGDConfig
        Hyperparameters; ``expected_batch_size`` defaults to ``q n`` of the data *without* the
        canary and is used for both neighbours (a public constant).
    noise : GradientNoise
    runs : int
        Training runs per neighbour.
    canary_dims : int, default 1
        Number ``k`` of coordinates the canary's gradient is spread over.
    canary_norm : float, default 1e3
        Norm of the canary's features (large, so its gradient is clipped to ``clip_norm``).
    batch_runs : int, default 2000
        Runs trained together (memory).
    rng : Generator, int or None

    Returns
    -------
    dict
        ``{"white_box": (null, alt), "black_box": (null, alt)}``, each an ``(runs,)`` array;
        ``null`` without the canary, ``alt`` with it.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.dpsgd import DPSGDConfig, GradientNoise
    >>> from privacy.dpsgd.canary import canary_scores
    >>> from privacy.audit import epsilon_lower_bound
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(50, 3)), rng.integers(0, 2, 50)
    >>> config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=0.2, steps=5)
    >>> scores = canary_scores(X, y, config=config, noise=GradientNoise("gaussian", 1.0),
    ...                        runs=2000, rng=1)
    >>> res = epsilon_lower_bound(*scores["white_box"], delta=1e-5, rng=2)
    >>> res.epsilon_lower_bound >= 0
    True
    """
    X = check_finite_array("X", X, ndim=2)
    y = np.asarray(y)
    if not isinstance(noise, GradientNoise):
        raise ParameterError(f"noise must be a GradientNoise; got {type(noise).__name__}")
    runs = check_integer("runs", runs, minimum=1)
    k = check_integer("canary_dims", canary_dims, minimum=1)
    canary_norm = check_positive("canary_norm", canary_norm)
    # the canary's entries are training data: the same limit as dpsgd_train's X, named here
    check_magnitude("the canary (canary_norm / sqrt(canary_dims))", canary_norm / math.sqrt(k),
                    "its scores would overflow float64",
                    "a canary_norm well above clip_norm suffices (the default 1e3)")
    batch_runs = check_integer("batch_runs", batch_runs, minimum=1)
    gen = as_generator(rng)
    n, F = X.shape
    model = LogisticModel(F + k)
    coords = slice(F, F + k)
    X_null = np.hstack([X, np.zeros((n, k))])
    x_canary = np.concatenate([np.zeros(F), np.full(k, canary_norm / math.sqrt(k))])
    X_alt, y_alt = np.vstack([X_null, x_canary]), np.append(y, 1)
    batch = (config.sampling_rate * n if config.expected_batch_size is None
             else config.expected_batch_size)
    fixed = DPSGDConfig(clip_norm=config.clip_norm, learning_rate=config.learning_rate,
                        sampling_rate=config.sampling_rate, steps=config.steps,
                        weight_decay=config.weight_decay, expected_batch_size=batch)
    q, lr, wd = fixed.sampling_rate, fixed.learning_rate, fixed.weight_decay
    log_q, log_not_q = math.log(q), (math.log1p(-q) if q < 1.0 else -math.inf)

    def one_side(data: tuple[np.ndarray, np.ndarray], size: int) -> tuple[np.ndarray, ...]:
        init = model.init(size)
        prev = init.copy()
        white = np.zeros(size)
        canary_batch = np.broadcast_to(x_canary, (size, 1, F + k))
        ones = np.ones((size, 1), dtype=bool)

        def observe(step: int, params: np.ndarray) -> None:
            # the noisy sum on the canary coordinates, recovered from the update rule
            released = -(batch / lr) * (params[:, coords] - prev[:, coords]) \
                - batch * wd * prev[:, coords]
            shift = model.clipped_gradient_sum(prev, canary_batch, np.ones((size, 1)), ones,
                                               fixed.clip_norm)[:, coords]
            loss = (noise.logpdf(released - shift) - noise.logpdf(released)).sum(axis=1)
            white[:] += np.logaddexp(log_q + loss, log_not_q)
            prev[:] = params

        result = dpsgd_train(model, *data, config=fixed, noise=noise, replicates=size, rng=gen,
                             init=init, callback=observe)
        black = -cross_entropy(model.logits(result.params, x_canary[None, :]),
                               np.array([1]))[:, 0]
        return white, black

    out: dict[str, list[list[np.ndarray]]] = {"white_box": [[], []], "black_box": [[], []]}
    for start in range(0, runs, batch_runs):
        size = min(batch_runs, runs - start)
        for side, data in enumerate(((X_null, y), (X_alt, y_alt))):
            white, black = one_side(data, size)
            out["white_box"][side].append(white)
            out["black_box"][side].append(black)
    return {key: (np.concatenate(parts[0]), np.concatenate(parts[1]))
            for key, parts in out.items()}
