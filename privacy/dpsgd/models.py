"""Small classifiers with exact, vectorized per-example gradients (numpy only).

Every model stores its parameters as one flat vector, so that clipping and noise act on the whole
gradient as in DP-SGD.  Training runs several independent replicates at once (seeds of a study,
runs of an audit): ``params`` has shape ``(R, P)``, one row per replicate.

* ``per_example_gradients(params, X, y)`` takes a batch per replicate, ``X`` (R, B, F) and ``y``
  (R, B), and returns the ``(R, B, P)`` gradients of each example's cross-entropy at its
  replicate's parameters, in closed form (batched matrix products; no autodiff, no Python loop
  over examples or replicates).
* ``logits(params, X)`` evaluates every replicate on the same data ``X`` (n, F): ``(R, n, K)``.

Layouts of the flat vector:

* :class:`LogisticModel` (binary, labels 0/1): ``[w (F), b]``.
* :class:`SoftmaxModel` (K classes): ``[W (F, K) row-major, b (K)]``.
* :class:`MLPModel` (one hidden layer of H tanh units, K classes):
  ``[W1 (F, H), b1 (H), W2 (H, K), b2 (K)]`` - the same weights as scikit-learn's
  ``MLPClassifier(activation="tanh")`` (``coefs_``, ``intercepts_``).

References
----------
M. Abadi et al., "Deep learning with differential privacy", CCS 2016 (per-example gradients,
clipping); seed ``002`` Sec. 2 (DP-SGD, individual clipping).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import as_generator, check_integer, check_positive
from privacy._clipping import log_row_norms

__all__ = ["LogisticModel", "SoftmaxModel", "MLPModel", "Model", "cross_entropy",
           "check_labels"]


def _check_batch(params: np.ndarray, X: np.ndarray, y: np.ndarray, n_params: int,
                 n_features: int) -> None:
    R = params.shape[0]
    if X.ndim != 3 or X.shape[0] != R or X.shape[2] != n_features:
        raise DimensionError(f"X must have shape ({R}, B, {n_features}) (a batch per "
                             f"replicate); got {X.shape}")
    if y.shape != X.shape[:2]:
        raise DimensionError(f"y must have shape {X.shape[:2]} (matching X); got {y.shape}")


def _as_params(params: np.ndarray, n_params: int) -> np.ndarray:
    params = np.asarray(params, dtype=float)
    if params.ndim != 2 or params.shape[1] != n_params:
        raise DimensionError(f"params must have shape (R, {n_params}); got {params.shape}")
    return params


def _as_features(X: np.ndarray, n_features: int) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != n_features:
        raise DimensionError(f"X must have shape (n, {n_features}); got {X.shape}")
    return X


def cross_entropy(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-example cross-entropy ``-log softmax(logits)[y]``, shape ``logits.shape[:-1]``.

    Binary logistic logits have a last axis of length 1 (the log-odds of class 1).
    """
    y = np.asarray(y, dtype=np.intp)
    if logits.shape[-1] == 1:
        z = logits[..., 0]
        return np.logaddexp(0.0, np.where(y == 1, -z, z))
    picked = np.take_along_axis(logits, np.broadcast_to(y, logits.shape[:-1])[..., None],
                                axis=-1)[..., 0]
    return special.logsumexp(logits, axis=-1) - picked


def _softmax_error(scores: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``softmax(scores) - onehot(y)`` along the last axis (the logit gradient)."""
    err = special.softmax(scores, axis=-1)
    np.put_along_axis(err, y[..., None].astype(np.intp),
                      np.take_along_axis(err, y[..., None].astype(np.intp), axis=-1) - 1.0,
                      axis=-1)
    return err


#: A per-example gradient block ``left_b right_b^T`` (weights, flattened row-major) or, with
#: ``left = None``, ``right_b`` itself (biases).  Shapes (R, B, I) and (R, B, J).
Block = tuple[np.ndarray | None, np.ndarray]


class _Base:
    """Shared evaluation helpers; subclasses define ``n_params``, ``_scores`` and gradients."""

    n_features: int
    n_params: int

    def logits(self, params: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Class scores of every replicate on ``X`` (n, F): shape ``(R, n, K)`` (K = 1 for the
        binary logistic model: the log-odds of class 1)."""
        return self._scores(_as_params(params, self.n_params),
                            _as_features(X, self.n_features))

    def loss(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Mean cross-entropy of each replicate on ``(X, y)``: shape ``(R,)``."""
        return cross_entropy(self.logits(params, X), np.asarray(y)).mean(axis=-1)

    def predict(self, params: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Predicted labels of each replicate: shape ``(R, n)``."""
        logits = self.logits(params, X)
        if logits.shape[-1] == 1:
            return (logits[..., 0] > 0).astype(np.intp)
        return np.argmax(logits, axis=-1)

    def accuracy(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Fraction of correct labels per replicate: shape ``(R,)``."""
        return (self.predict(params, X) == np.asarray(y)).mean(axis=-1)

    def gradient(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Full-batch gradient of :meth:`loss` for each replicate: shape ``(R, P)``."""
        params = _as_params(params, self.n_params)
        X = _as_features(X, self.n_features)
        R = params.shape[0]
        batch = np.broadcast_to(X, (R, *X.shape))
        labels = np.broadcast_to(np.asarray(y), (R, X.shape[0]))
        return self.per_example_gradients(params, batch, labels).mean(axis=1)

    def per_example_gradients(self, params: np.ndarray, X: np.ndarray, y: np.ndarray
                              ) -> np.ndarray:
        """Gradient of each example's cross-entropy at its replicate's parameters.

        Parameters
        ----------
        params : array (R, P)
        X : array (R, B, F)
            A batch of ``B`` examples per replicate.
        y : array (R, B)
            Their labels.

        Returns
        -------
        ndarray, shape (R, B, P)
        """
        blocks = self._checked_blocks(params, X, y)
        return np.concatenate([right if left is None else
                               (left[..., :, None] * right[..., None, :]).reshape(
                                   *right.shape[:-1], -1)
                               for left, right in blocks], axis=-1)

    def clipped_gradient_sum(self, params: np.ndarray, X: np.ndarray, y: np.ndarray,
                             valid: np.ndarray, clip_norm: float) -> np.ndarray:
        """Sum over each replicate's valid examples of the gradients clipped to ``clip_norm``.

        Same result as clipping the rows of :meth:`per_example_gradients` and summing them, but
        without materializing them: the norm of an outer-product block is the product of the
        factor norms and the clipped sum of a block is one batched matrix product ("ghost
        clipping", Goodfellow 2015; Lee & Kifer 2021).

        Parameters
        ----------
        params : array (R, P)
        X : array (R, B, F)
        y : array (R, B)
        valid : bool array (R, B)
            Which batch entries are real examples (the rest is padding).
        clip_norm : float

        Returns
        -------
        ndarray, shape (R, P)
        """
        blocks = self._checked_blocks(params, X, y)
        valid = np.asarray(valid, dtype=bool)
        if valid.shape != np.shape(y):
            raise DimensionError(f"valid must have shape {np.shape(y)}; got {valid.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            squared = sum(np.einsum("rbj,rbj->rb", right, right)
                          * (1.0 if left is None else np.einsum("rbi,rbi->rb", left, left))
                          for left, right in blocks)
        if np.isfinite(squared).all():
            scale = np.minimum(1.0, clip_norm / np.maximum(np.sqrt(squared),
                                                           np.finfo(float).tiny))
        else:
            # a huge but finite example overflows its squared norm; an infinite norm would
            # zero (or NaN) its clipped gradient instead of scaling it to clip_norm, and the
            # output would reveal the example: take the norms in the log domain instead
            scale = np.exp(np.minimum(0.0, np.log(clip_norm) - _log_norm(blocks)))
        factors = np.where(valid, scale, 0.0)
        sums = [np.einsum("rb,rbj->rj", factors, right) if left is None else
                (np.swapaxes(left * factors[..., None], 1, 2) @ right).reshape(
                    right.shape[0], -1)
                for left, right in blocks]
        return np.concatenate(sums, axis=1)

    def _checked_blocks(self, params: np.ndarray, X: np.ndarray, y: np.ndarray
                        ) -> list[Block]:
        params = _as_params(params, self.n_params)
        X, y = np.asarray(X, dtype=float), np.asarray(y)
        _check_batch(params, X, y, self.n_params, self.n_features)
        return self._blocks(params, X, y)

    def _scores(self, params: np.ndarray, X: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _blocks(self, params: np.ndarray, X: np.ndarray, y: np.ndarray
                ) -> list[Block]:  # pragma: no cover
        raise NotImplementedError


def _log_norm(blocks: list[Block]) -> np.ndarray:
    """``log`` of each example's gradient norm (R, B), overflow-free: every block's norm is
    the product of its factor norms, and the blocks add in squares (a log-sum-exp)."""
    logs = np.stack([log_row_norms(right) + (0.0 if left is None else log_row_norms(left))
                     for left, right in blocks])
    return 0.5 * special.logsumexp(2.0 * logs, axis=0)


def _check_integers(model: object, **minimums: int) -> None:
    """Validate (and store as int) the named integer fields of a frozen model."""
    for name, minimum in minimums.items():
        object.__setattr__(model, name, check_integer(name, getattr(model, name),
                                                      minimum=minimum))


def _zeros(n_params: int, replicates: int, rng: np.random.Generator | int | None) -> np.ndarray:
    as_generator(rng)  # validated for a uniform signature; convex models start at zero
    return np.zeros((check_integer("replicates", replicates, minimum=1), n_params))


@dataclass(frozen=True)
class LogisticModel(_Base):
    """Binary logistic regression ``P(y = 1 | x) = sigmoid(w . x + b)``.

    Parameters
    ----------
    n_features : int
        Number of input features ``F``; the flat parameter vector is ``[w (F), b]``.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.dpsgd import LogisticModel
    >>> model = LogisticModel(n_features=2)
    >>> params = model.init(replicates=1, rng=0)           # (R, P) = (1, 3), zeros
    >>> X, y = np.array([[[1.0, 2.0]]]), np.array([[1]])  # (R, B, F), (R, B)
    >>> model.per_example_gradients(params, X, y)          # (sigmoid(0) - 1) * [x, 1]
    array([[[-0.5, -1. , -0.5]]])
    """

    n_features: int

    def __post_init__(self) -> None:
        _check_integers(self, n_features=1)

    @property
    def n_params(self) -> int:
        """Length ``F + 1`` of the flat parameter vector."""
        return self.n_features + 1

    def init(self, replicates: int = 1, rng: np.random.Generator | int | None = None
             ) -> np.ndarray:
        """Zero parameters ``(R, P)`` (the loss is convex)."""
        return _zeros(self.n_params, replicates, rng)

    def _scores(self, params: np.ndarray, X: np.ndarray) -> np.ndarray:
        return (X @ params[:, :-1, None] + params[:, None, -1:])

    def _blocks(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> list[Block]:
        residual = special.expit(self._scores(params, X)) - y[..., None]
        return [(X, residual), (None, residual)]


@dataclass(frozen=True)
class SoftmaxModel(_Base):
    """Multinomial logistic (softmax) regression with ``K`` classes.

    Parameters
    ----------
    n_features : int
        Number of input features ``F``.
    n_classes : int
        Number of classes ``K >= 2``; labels are ``0 .. K-1``.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.dpsgd import SoftmaxModel
    >>> model = SoftmaxModel(n_features=2, n_classes=3)
    >>> model.n_params                                    # W (2, 3) and b (3)
    9
    >>> g = model.per_example_gradients(np.zeros((1, 9)), np.array([[[1.0, 0.0]]]),
    ...                                 np.array([[2]]))
    >>> np.round(g[0, 0, -3:], 3)                         # softmax - one-hot for b
    array([ 0.333,  0.333, -0.667])
    """

    n_features: int
    n_classes: int

    def __post_init__(self) -> None:
        _check_integers(self, n_features=1, n_classes=2)

    @property
    def n_params(self) -> int:
        """Length ``F K + K`` of the flat parameter vector."""
        return (self.n_features + 1) * self.n_classes

    def init(self, replicates: int = 1, rng: np.random.Generator | int | None = None
             ) -> np.ndarray:
        """Zero parameters ``(R, P)`` (the loss is convex)."""
        return _zeros(self.n_params, replicates, rng)

    def _scores(self, params: np.ndarray, X: np.ndarray) -> np.ndarray:
        F, K = self.n_features, self.n_classes
        W, b = params[:, :F * K].reshape(-1, F, K), params[:, F * K:]
        return X @ W + b[:, None, :]

    def _blocks(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> list[Block]:
        err = _softmax_error(self._scores(params, X), y)
        return [(X, err), (None, err)]


@dataclass(frozen=True)
class MLPModel(_Base):
    """One hidden layer of ``tanh`` units and a softmax output (scikit-learn's layout).

    Parameters
    ----------
    n_features : int
        Input features ``F``.
    n_hidden : int
        Hidden units ``H``.
    n_classes : int
        Classes ``K >= 2`` (softmax output, also for two classes).
    init_scale : float, default 1.0
        Glorot-uniform initialisation as in scikit-learn, multiplied by this factor.

    Examples
    --------
    >>> from privacy.dpsgd import MLPModel
    >>> model = MLPModel(n_features=64, n_hidden=32, n_classes=10)
    >>> model.n_params                                    # 64*32 + 32 + 32*10 + 10
    2410
    >>> model.init(replicates=2, rng=0).shape
    (2, 2410)
    """

    n_features: int
    n_hidden: int
    n_classes: int
    init_scale: float = 1.0

    def __post_init__(self) -> None:
        _check_integers(self, n_features=1, n_hidden=1, n_classes=2)
        object.__setattr__(self, "init_scale", check_positive("init_scale", self.init_scale))

    @property
    def n_params(self) -> int:
        """Length ``F H + H + H K + K`` of the flat parameter vector."""
        F, H, K = self.n_features, self.n_hidden, self.n_classes
        return F * H + H + H * K + K

    def init(self, replicates: int = 1, rng: np.random.Generator | int | None = None
             ) -> np.ndarray:
        """Glorot-uniform weights (``+-sqrt(6 / (fan_in + fan_out))``, biases too, as sklearn)."""
        R = check_integer("replicates", replicates, minimum=1)
        gen = as_generator(rng)
        F, H, K = self.n_features, self.n_hidden, self.n_classes
        b1 = self.init_scale * np.sqrt(6.0 / (F + H))
        b2 = self.init_scale * np.sqrt(6.0 / (H + K))
        parts = [gen.uniform(-b1, b1, (R, F * H + H)), gen.uniform(-b2, b2, (R, H * K + K))]
        return np.concatenate(parts, axis=1)

    def _split(self, params: np.ndarray) -> tuple[np.ndarray, ...]:
        F, H, K = self.n_features, self.n_hidden, self.n_classes
        i1, i2, i3 = F * H, F * H + H, F * H + H + H * K
        return (params[:, :i1].reshape(-1, F, H), params[:, None, i1:i2],
                params[:, i2:i3].reshape(-1, H, K), params[:, None, i3:])

    def _hidden(self, params: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        W1, b1, W2, b2 = self._split(params)
        hidden = np.tanh(X @ W1 + b1)
        return hidden, hidden @ W2 + b2

    def _scores(self, params: np.ndarray, X: np.ndarray) -> np.ndarray:
        return self._hidden(params, X)[1]

    def _blocks(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> list[Block]:
        hidden, scores = self._hidden(params, X)
        err = _softmax_error(scores, y)
        W2 = self._split(params)[2]
        back = (err @ W2.transpose(0, 2, 1)) * (1.0 - hidden ** 2)
        return [(X, back), (None, back), (hidden, err), (None, err)]


Model = LogisticModel | SoftmaxModel | MLPModel


def check_labels(model: Model, y: np.ndarray) -> np.ndarray:
    """Labels as integers in ``0 .. K-1`` (``K = 2`` for logistic), else ``ParameterError``."""
    y = np.asarray(y)
    classes = 2 if isinstance(model, LogisticModel) else model.n_classes
    if y.ndim != 1:
        raise DimensionError(f"y must be 1-dimensional; got shape {y.shape}")
    if y.size and (not np.all(np.equal(np.mod(y, 1), 0)) or y.min() < 0 or y.max() >= classes):
        raise ParameterError(f"labels must be integers in 0..{classes - 1} for this model; got "
                             f"values in [{y.min()}, {y.max()}]")
    return y.astype(np.intp)
