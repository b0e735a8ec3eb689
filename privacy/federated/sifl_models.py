"""Small numpy models and local optimizers for the SIFL and NbAFL studies.

Parameters are one flat vector ``theta`` (what SIFL encodes).  Each model gives the mean
cross-entropy loss with an l2 penalty on the weights, its exact gradient (optionally with
per-example weights, which is how clipped gradients are formed without materialising one gradient
per example), the per-example gradient norms (closed forms), predictions and accuracy.

The local optimizers are the ``g(w, D)`` of the SIFL paper's eq. (4),
``w_{k+1} = w_k - g(w_k, D)``: SGD ``g = lr grad``, heavy-ball momentum
``v <- mu v + grad; g = lr v`` and Adam (bias-corrected).  Their state (velocity, moments) is
reset at the start of every round, as when a client starts a fresh optimizer from the broadcast
model.

References
----------
SIFL paper (seed ``004_...``) eq. (4) and Sec. 6.1.  D. P. Kingma and J. Ba, "Adam", ICLR 2015.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_in_interval,
    check_integer,
    check_nonnegative,
    check_positive,
)
from privacy._clipping import log_row_norms, row_norms

__all__ = ["SoftmaxRegression", "MLP", "LocalOptimizer", "OPTIMIZERS"]


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _check_data(X: np.ndarray, y: np.ndarray, n_features: int, n_classes: int
                ) -> tuple[np.ndarray, np.ndarray]:
    X = check_finite_array("X", X, ndim=2)
    y = np.asarray(y)
    if X.shape[1] != n_features:
        raise DimensionError(f"X has {X.shape[1]} features; the model expects {n_features} "
                             f"(samples are rows)")
    if y.shape != (X.shape[0],) or not np.issubdtype(y.dtype, np.integer):
        raise DimensionError(f"y must hold {X.shape[0]} integer labels; got shape {y.shape}, "
                             f"dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ParameterError(f"labels must lie in 0..{n_classes - 1}; got {y.min()}..{y.max()}")
    return X, y


class _Model:
    """Shared API: ``loss``, ``gradient``, ``predict``, ``accuracy`` over flat parameters."""

    n_features: int
    n_classes: int
    l2: float

    def _check_theta(self, theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (self.size,):
            raise DimensionError(f"theta has shape {theta.shape}; expected ({self.size},)")
        return theta

    def loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        """Mean cross-entropy plus ``l2 / 2`` times the squared weights (biases unpenalised)."""
        theta = self._check_theta(theta)
        X, y = _check_data(X, y, self.n_features, self.n_classes)
        logits, _ = self._forward(theta, X)
        nll = -np.mean(_log_softmax(logits)[np.arange(y.size), y])
        return float(nll + 0.5 * self.l2 * np.sum(theta[self._weight_mask()] ** 2))

    def gradient(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, *,
                 weights: np.ndarray | None = None) -> np.ndarray:
        """Gradient of :meth:`loss`; with ``weights`` (m,) the data term is ``sum_j w_j g_j``.

        Without weights this is the mean over examples (``weights = 1/m``).
        """
        theta = self._check_theta(theta)
        X, y = _check_data(X, y, self.n_features, self.n_classes)
        w = np.full(y.size, 1.0 / y.size) if weights is None else np.asarray(weights, float)
        if w.shape != y.shape:
            raise DimensionError(f"weights has shape {w.shape}; expected {y.shape}")
        grad = self._backward(theta, X, y, w)
        grad[self._weight_mask()] += self.l2 * theta[self._weight_mask()]
        return grad

    def predict(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Predicted labels (m,)."""
        theta = self._check_theta(theta)
        X = check_finite_array("X", X, ndim=2)
        return np.argmax(self._forward(theta, X)[0], axis=1)

    def accuracy(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
        """Fraction of correctly classified rows."""
        return float(np.mean(self.predict(theta, X) == np.asarray(y)))

    def _output_error(self, logits: np.ndarray, y: np.ndarray) -> np.ndarray:
        err = _softmax(logits)
        err[np.arange(y.size), y] -= 1.0
        return err


@dataclass(frozen=True)
class SoftmaxRegression(_Model):
    """Multinomial logistic regression; ``theta = [W (c, d) row-major, b (c)]``.

    Examples
    --------
    >>> import numpy as np
    >>> model = SoftmaxRegression(n_features=3, n_classes=2)
    >>> theta = model.init(rng=0)
    >>> X, y = np.ones((4, 3)), np.array([0, 1, 1, 0])
    >>> model.gradient(theta, X, y).shape
    (8,)
    """

    n_features: int
    n_classes: int
    l2: float = 1e-4

    def __post_init__(self) -> None:
        check_integer("n_features", self.n_features, minimum=1)
        check_integer("n_classes", self.n_classes, minimum=2)
        check_nonnegative("l2", self.l2)

    @property
    def size(self) -> int:
        """Number of parameters."""
        return self.n_classes * (self.n_features + 1)

    def init(self, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Small random weights N(0, 0.01^2), zero biases."""
        theta = np.zeros(self.size)
        theta[self._weight_mask()] = 0.01 * as_generator(rng).standard_normal(
            self.n_classes * self.n_features)
        return theta

    def _weight_mask(self) -> slice:
        return slice(0, self.n_classes * self.n_features)

    def _unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, d = self.n_classes, self.n_features
        return theta[:c * d].reshape(c, d), theta[c * d:]

    def _forward(self, theta: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, None]:
        W, b = self._unpack(theta)
        return X @ W.T + b, None

    def _backward(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, w: np.ndarray
                  ) -> np.ndarray:
        err = self._output_error(self._forward(theta, X)[0], y) * w[:, None]
        return np.concatenate([(err.T @ X).ravel(), err.sum(axis=0)])

    def example_gradient_norms(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray
                               ) -> np.ndarray:
        """l2 norms of the per-example data gradients: ``||p - e_y|| sqrt(||x||^2 + 1)``."""
        theta = self._check_theta(theta)
        X, y = _check_data(X, y, self.n_features, self.n_classes)
        err = self._output_error(self._forward(theta, X)[0], y)
        with np.errstate(over="ignore"):
            augmented = np.sqrt(np.sum(X ** 2, axis=1) + 1.0)
        # ||x||^2 overflows from |x| ~ 1e154 and would drop the example from the clipped sum
        return row_norms(err) * np.where(np.isfinite(augmented), augmented, row_norms(X))


@dataclass(frozen=True)
class MLP(_Model):
    """One tanh hidden layer; ``theta = [W1 (h, d), b1 (h), W2 (c, h), b2 (c)]`` (row-major).

    Examples
    --------
    >>> import numpy as np
    >>> model = MLP(n_features=3, n_hidden=4, n_classes=2)
    >>> model.size
    26
    """

    n_features: int
    n_hidden: int
    n_classes: int
    l2: float = 1e-4

    def __post_init__(self) -> None:
        check_integer("n_features", self.n_features, minimum=1)
        check_integer("n_hidden", self.n_hidden, minimum=1)
        check_integer("n_classes", self.n_classes, minimum=2)
        check_nonnegative("l2", self.l2)

    @property
    def size(self) -> int:
        """Number of parameters."""
        h = self.n_hidden
        return h * (self.n_features + 1) + self.n_classes * (h + 1)

    def init(self, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Glorot-scaled normal weights, zero biases."""
        gen = as_generator(rng)
        d, h, c = self.n_features, self.n_hidden, self.n_classes
        W1 = gen.standard_normal((h, d)) * math.sqrt(2.0 / (d + h))
        W2 = gen.standard_normal((c, h)) * math.sqrt(2.0 / (h + c))
        return np.concatenate([W1.ravel(), np.zeros(h), W2.ravel(), np.zeros(c)])

    def _weight_mask(self) -> np.ndarray:
        d, h, c = self.n_features, self.n_hidden, self.n_classes
        mask = np.zeros(self.size, dtype=bool)
        mask[:h * d] = True
        mask[h * d + h:h * d + h + c * h] = True
        return mask

    def _unpack(self, theta: np.ndarray) -> tuple[np.ndarray, ...]:
        d, h, c = self.n_features, self.n_hidden, self.n_classes
        i = 0
        W1 = theta[i:i + h * d].reshape(h, d)
        i += h * d
        b1 = theta[i:i + h]
        i += h
        W2 = theta[i:i + c * h].reshape(c, h)
        i += c * h
        return W1, b1, W2, theta[i:i + c]

    def _forward(self, theta: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        W1, b1, W2, b2 = self._unpack(theta)
        hidden = np.tanh(X @ W1.T + b1)
        return hidden @ W2.T + b2, hidden

    def _errors(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        logits, hidden = self._forward(theta, X)
        _, _, W2, _ = self._unpack(theta)
        out = self._output_error(logits, y)
        return out, (out @ W2) * (1.0 - hidden ** 2), hidden

    def _backward(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray, w: np.ndarray
                  ) -> np.ndarray:
        out, inner, hidden = self._errors(theta, X, y)
        out, inner = out * w[:, None], inner * w[:, None]
        return np.concatenate([(inner.T @ X).ravel(), inner.sum(axis=0),
                               (out.T @ hidden).ravel(), out.sum(axis=0)])

    def example_gradient_norms(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray
                               ) -> np.ndarray:
        """Per-example gradient norms from the layer errors (outer-product structure)."""
        theta = self._check_theta(theta)
        X, y = _check_data(X, y, self.n_features, self.n_classes)
        out, inner, hidden = self._errors(theta, X, y)
        with np.errstate(over="ignore", invalid="ignore"):
            sq = (np.sum(inner ** 2, axis=1) * (np.sum(X ** 2, axis=1) + 1.0)
                  + np.sum(out ** 2, axis=1) * (np.sum(hidden ** 2, axis=1) + 1.0))
        odd = ~np.isfinite(sq)
        if np.any(odd):
            # a huge x overflows ||x||^2 (and saturates tanh: inner = 0, 0 * inf = NaN), which
            # would drop or poison the example: add the two blocks' squares in logs instead
            ones = np.ones((int(odd.sum()), 1))
            first = log_row_norms(inner[odd]) + log_row_norms(np.hstack([X[odd], ones]))
            second = log_row_norms(out[odd]) + log_row_norms(np.hstack([hidden[odd], ones]))
            with np.errstate(over="ignore"):
                sq[odd] = np.exp(np.logaddexp(2.0 * first, 2.0 * second))
        return np.sqrt(sq)


OPTIMIZERS = ("sgd", "momentum", "adam")


@dataclass(frozen=True)
class LocalOptimizer:
    """A client's optimizer as the step function ``g`` of ``w_{k+1} = w_k - g`` (SIFL eq. 4).

    Parameters
    ----------
    name : {"sgd", "momentum", "adam"}
    learning_rate : float
    momentum : float, default 0.9
        Heavy-ball coefficient (``"momentum"``).
    betas : tuple of float, default (0.9, 0.999)
        Adam moment decays.
    eps : float, default 1e-8
        Adam denominator offset.

    Examples
    --------
    >>> import numpy as np
    >>> opt = LocalOptimizer("adam", 0.01)
    >>> state = opt.start(3)
    >>> step, state = opt.step(state, np.array([1.0, -2.0, 0.0]))
    >>> step.round(4)
    array([ 0.01, -0.01,  0.  ])
    """

    name: str
    learning_rate: float
    momentum: float = 0.9
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8

    def __post_init__(self) -> None:
        if self.name not in OPTIMIZERS:
            raise ParameterError(f"name must be one of {OPTIMIZERS}; got {self.name!r}")
        check_positive("learning_rate", self.learning_rate)
        check_in_interval("momentum", self.momentum, 0.0, 1.0, high_open=True)
        for beta in self.betas:
            check_in_interval("betas", beta, 0.0, 1.0, high_open=True)
        check_positive("eps", self.eps)

    def start(self, size: int) -> dict[str, np.ndarray | int]:
        """Fresh state for ``size`` parameters."""
        return {"k": 0, "m": np.zeros(size), "v": np.zeros(size)}

    def step(self, state: dict, grad: np.ndarray) -> tuple[np.ndarray, dict]:
        """Return ``g`` (the parameter decrement) and the new state."""
        lr = self.learning_rate
        if self.name == "sgd":
            return lr * grad, state
        if self.name == "momentum":
            velocity = self.momentum * state["m"] + grad
            return lr * velocity, {**state, "m": velocity}
        b1, b2 = self.betas
        k = state["k"] + 1
        m = b1 * state["m"] + (1.0 - b1) * grad
        v = b2 * state["v"] + (1.0 - b2) * grad ** 2
        step = lr * (m / (1.0 - b1 ** k)) / (np.sqrt(v / (1.0 - b2 ** k)) + self.eps)
        return step, {"k": k, "m": m, "v": v}
