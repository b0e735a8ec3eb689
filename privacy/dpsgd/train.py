"""DP-SGD with Poisson subsampling, per-example l2 clipping and Gaussian or SaS noise.

One step, for each replicate independently (seed ``002`` Algorithm 1, Abadi et al. 2016):

1. Poisson sampling: every example joins the batch with probability ``q`` (the accountant
   assumes exactly this; fixed-size batches would need a different analysis);
2. per-example gradients ``g_i``, clipped to ``g_i min(1, C / ||g_i||_2)``;
3. noisy sum ``U = sum_i clip(g_i) + Z``, ``Z`` i.i.d. Gaussian or SaS per coordinate;
4. ``w <- w - lr (U / B + weight_decay w)`` with ``B`` the expected batch size (``q n`` by
   default), so the step is unbiased and the realised batch size is never released.  The
   accountant (add-or-remove, one example) covers the noisy sums ``U`` only, so ``B`` must be
   public: the default ``q n`` treats the data set's size ``n`` as public (Abadi et al.'s and
   Opacus' convention; see :class:`DPSGDConfig`); pass ``expected_batch_size`` when ``n``
   itself is private.

``R`` replicates (seeds) run in one vectorized loop: each step draws a Poisson batch per
replicate, pads the batches to the largest one (padding is masked out of the clipped sum) and
computes the clipped sums with batched matrix products (``clipped_gradient_sum`` of the model).
The privacy of each replicate is that of a single run (:meth:`DPSGDResult.epsilon`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_integer,
    check_magnitude,
    check_nonnegative,
    check_positive,
    check_probability,
    read_only,
)
from privacy.dpsgd.models import Model, check_labels
from privacy.dpsgd.noise import GradientNoise, dpsgd_epsilon

__all__ = ["DPSGDConfig", "DPSGDResult", "dpsgd_train", "poisson_batches"]


@dataclass(frozen=True)
class DPSGDConfig:
    """Hyperparameters of a DP-SGD run.

    Parameters
    ----------
    clip_norm : float
        l2 bound ``C`` on each per-example gradient (the sensitivity of a step).
    learning_rate : float
        Step size ``lr > 0``.
    sampling_rate : float
        Poisson sampling probability ``q`` in ``(0, 1]``.
    steps : int
        Number of steps ``N`` (``epochs = N q``).
    weight_decay : float, default 0
        l2 penalty applied outside the noisy sum (data independent, so free of privacy cost).
    expected_batch_size : float, optional
        Normaliser ``B`` of the noisy sum; default ``sampling_rate * len(X)``, which treats
        the data set's size as public.  The accounted epsilon (add-or-remove, one example)
        covers the noisy sums; a step divides them by ``B``, so the released parameters are
        also a function of ``B``.  With the default they depend on ``len(X)``, which adding
        or removing the example changes (every step's scale by ``n / (n + 1)``), and epsilon
        does not account for that: it bounds what the run reveals about one example beyond
        the size, which it treats as published with the model (the convention of Abadi et
        al. 2016 and Opacus).  When the size itself is private (e.g. the number of patients
        with a condition), fix ``B`` before seeing the data, from public information only
        (``q`` times a public size estimate); the run is then post-processing of the
        accounted releases whatever ``n`` is.
    """

    clip_norm: float
    learning_rate: float
    sampling_rate: float
    steps: int
    weight_decay: float = 0.0
    expected_batch_size: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "clip_norm", check_positive("clip_norm", self.clip_norm))
        object.__setattr__(self, "learning_rate", check_positive("learning_rate",
                                                                 self.learning_rate))
        object.__setattr__(self, "sampling_rate", check_probability(
            "sampling_rate", self.sampling_rate, allow_zero=False))
        object.__setattr__(self, "steps", check_integer("steps", self.steps, minimum=1))
        object.__setattr__(self, "weight_decay", check_nonnegative("weight_decay",
                                                                   self.weight_decay))
        if self.expected_batch_size is not None:
            object.__setattr__(self, "expected_batch_size", check_positive(
                "expected_batch_size", self.expected_batch_size))

    @classmethod
    def from_epochs(cls, *, epochs: float, sampling_rate: float, **kwargs) -> DPSGDConfig:
        """Config with ``steps = round(epochs / sampling_rate)`` (at least 1)."""
        epochs = check_positive("epochs", epochs)
        q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
        return cls(sampling_rate=q, steps=max(1, round(epochs / q)), **kwargs)


@dataclass(frozen=True)
class DPSGDResult:
    """Outcome of :func:`dpsgd_train`: final parameters of every replicate and what produced them.

    Attributes
    ----------
    params : ndarray, shape (R, P)
        Final parameters (read-only), one row per replicate.
    config : DPSGDConfig
    noise : GradientNoise or None
        ``None`` for the non-private baseline (clipping only).
    """

    params: np.ndarray
    config: DPSGDConfig
    noise: GradientNoise | None

    def epsilon(self, delta: float, *, released: int = 1) -> float:
        """Composed epsilon (privacy unit: one example, add-or-remove; the data set's size is
        public unless ``config.expected_batch_size`` was fixed without it, see
        :class:`DPSGDConfig`) of releasing ``released`` of the replicates; ``inf`` without noise.

        Every replicate is an independent run on the same data, so releasing ``r`` of them
        (or anything computed from them, such as the best one) composes ``r`` runs: the
        accountant's epsilon of ``r * steps`` steps.  The default is one replicate's run.

        Examples
        --------
        >>> import numpy as np
        >>> from privacy.dpsgd import DPSGDConfig, GradientNoise, LogisticModel, dpsgd_train
        >>> X = np.random.default_rng(0).normal(size=(100, 3)); y = (X[:, 0] > 0).astype(int)
        >>> result = dpsgd_train(LogisticModel(3), X, y, rng=0, replicates=4,
        ...                      config=DPSGDConfig(clip_norm=1.0, learning_rate=0.1,
        ...                                         sampling_rate=0.1, steps=50),
        ...                      noise=GradientNoise("gaussian", 2.0))
        >>> result.epsilon(1e-5) < result.epsilon(1e-5, released=4)
        True
        """
        replicates = len(self.params)
        released = check_integer("released", released, minimum=1)
        if released > replicates:
            raise ParameterError(f"released must be at most the {replicates} replicates "
                                 f"trained; got released={released}")
        if self.noise is None:
            return float("inf")
        return dpsgd_epsilon(self.noise, clip_norm=self.config.clip_norm,
                             steps=released * self.config.steps,
                             sampling_rate=self.config.sampling_rate, delta=delta)


def poisson_batches(rng: np.random.Generator, replicates: int, n: int, sampling_rate: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Poisson-sampled example indices, padded: ``(indices (R, B), valid (R, B))``.

    Every example joins each replicate's batch independently with probability ``sampling_rate``;
    ``B`` is the largest batch of this draw (padding entries repeat index 0 and are not valid).
    """
    member = rng.random((replicates, n)) < sampling_rate
    counts = member.sum(axis=1)
    width = max(1, int(counts.max()))
    indices = np.argsort(~member, axis=1, kind="stable")[:, :width]
    valid = np.arange(width) < counts[:, None]
    return np.where(valid, indices, 0), valid


def dpsgd_train(model: Model, X: np.ndarray, y: np.ndarray, *, config: DPSGDConfig,
                noise: GradientNoise | None, replicates: int = 1,
                rng: np.random.Generator | int | None = None,
                init: np.ndarray | None = None,
                callback: Callable[[int, np.ndarray], None] | None = None) -> DPSGDResult:
    """Train ``replicates`` independent DP-SGD runs of ``model`` on ``(X, y)``.

    Parameters
    ----------
    model : LogisticModel, SoftmaxModel or MLPModel
    X : array, shape (n, F)
        Training features (examples as rows, as in scikit-learn).
    y : array, shape (n,)
        Integer labels ``0 .. K-1``.
    config : DPSGDConfig
    noise : GradientNoise or None
        Noise on the clipped sum; ``None`` trains without noise (not private).
    replicates : int, default 1
        Independent runs ``R`` (different sampling, noise and initialisation).
    rng : Generator, int or None
    init : array (R, P), optional
        Initial parameters (default ``model.init(R, rng)``).
    callback : callable, optional
        ``callback(step, params)`` after every step (``params`` (R, P), do not modify); used by
        audits that observe the parameter trajectory.

    Returns
    -------
    DPSGDResult

    Raises
    ------
    DimensionError, NonFiniteError, ParameterError
        Wrong shapes, non-finite data or data beyond
        :data:`~_toolbox.validation.DATA_MAGNITUDE_LIMIT` (1e100) in magnitude, bad labels or
        arguments; ``NonFiniteError`` also when a parameter becomes NaN or infinite during
        training (divergence), rather than returning such a model.

    Examples
    --------
    Four Poisson-sampled runs (batches of ~20 % of the 569 examples) with SaS gradient noise
    (:func:`~privacy.dpsgd.calibrate_noise` gives the scale for a target epsilon instead; its
    search composes a subsampled PLD per trial: seconds):

    >>> from sklearn.datasets import load_breast_cancer
    >>> from privacy.dpsgd import DPSGDConfig, GradientNoise, LogisticModel, dpsgd_train
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> config = DPSGDConfig(clip_norm=1.0, learning_rate=0.5, sampling_rate=0.2, steps=50)
    >>> model, noise = LogisticModel(30), GradientNoise("sas", scale=2.2, alpha=1.9)
    >>> result = dpsgd_train(model, X, y, config=config, noise=noise, replicates=4, rng=0)
    >>> result.params.shape, bool(model.accuracy(result.params, X, y).min() > 0.9)
    ((4, 31), True)
    >>> bool(result.epsilon(1e-5) < 2.0)          # per example, after the 50 steps
    True
    """
    if not isinstance(config, DPSGDConfig):
        raise ParameterError(f"config must be a DPSGDConfig; got {type(config).__name__}")
    if noise is not None and not isinstance(noise, GradientNoise):
        raise ParameterError(f"noise must be a GradientNoise or None; got "
                             f"{type(noise).__name__}")
    X = check_finite_array("X", X, ndim=2)
    if X.shape[0] == 0:
        raise DimensionError(f"X has no examples (shape {X.shape}); DP-SGD needs at least one "
                             f"row to sample batches from")
    check_magnitude("X", float(np.max(np.abs(X), initial=0.0)),
                    "the per-example gradients and scores would overflow float64, and a run "
                    "that ends in NaN only when that example is sampled reveals it",
                    "standardize the features or clip them to a public bound before training")
    if X.shape[1] != model.n_features:
        raise DimensionError(f"X has {X.shape[1]} features (columns); the model expects "
                             f"{model.n_features}")
    y = check_labels(model, y)
    if y.shape[0] != X.shape[0]:
        raise DimensionError(f"y has {y.shape[0]} labels; expected {X.shape[0]} (rows of X)")
    R = check_integer("replicates", replicates, minimum=1)
    # separate streams: the same seed gives the same initialisation and batches whatever the
    # noise law, so runs with different noises are paired (common random numbers)
    init_rng, batch_rng, noise_rng = as_generator(rng).spawn(3)
    params = (model.init(R, init_rng) if init is None
              else check_finite_array("init", init, ndim=2))
    if params.shape != (R, model.n_params):
        raise DimensionError(f"init must have shape ({R}, {model.n_params}); got "
                             f"{params.shape}")
    params = params.copy()
    n = X.shape[0]
    q, lr, C = config.sampling_rate, config.learning_rate, config.clip_norm
    batch = q * n if config.expected_batch_size is None else config.expected_batch_size
    for step in range(config.steps):
        indices, valid = poisson_batches(batch_rng, R, n, q)
        update = model.clipped_gradient_sum(params, X[indices], y[indices], valid, C)
        if noise is not None:
            update += noise.sample(update.shape, noise_rng)
        with np.errstate(over="ignore", invalid="ignore"):    # refused just below
            params -= lr * (update / batch + config.weight_decay * params)
        if not np.isfinite(params).all():
            raise _diverged(step, params)
        if callback is not None:
            callback(step, params)
    return DPSGDResult(read_only(params), config, noise)


def _diverged(step: int, params: np.ndarray) -> NonFiniteError:
    """The refusal of a run whose parameters left the float range at ``step`` (0-based)."""
    bad = np.flatnonzero(~np.isfinite(params).all(axis=1))
    return NonFiniteError(
        f"DP-SGD diverged: after step {step + 1} the parameters of replicate(s) "
        f"{', '.join(str(int(r)) for r in bad[:5])}{', ...' if bad.size > 5 else ''} are NaN "
        f"or infinite, so no model is returned (a NaN model would be released as a result "
        f"and could depend on single examples); lower learning_rate, use lighter-tailed noise "
        f"(a larger SaS alpha) or standardize the features")
