"""Separable models for Federated Inference: the Ch. 8 least squares / linear SVM and any (g, h).

A loss is *separable* (seed Assumption 3) when ``J_k(w) = g(w) h(D_k)``: the data enter only
through the client's *data block* ``z_k = |D_k| / |D| h(D_k)`` (7.11), the blocks add up to the
global block ``z* = sum_k z_k`` (7.13) and the global minimizer is ``argmin_w g(w) z*`` (7.14).

:class:`LeastSquaresModel` is the seed's model (eqs. 8.1-8.6): a linear model on kernel features
``phi(x)`` (:class:`KernelFeatures`, random basis vectors as in Remark 8) with the squared error
loss, whose gradient ``(1/N) (Phi^T Phi W - Phi^T Y)`` is affine in ``W``: the block holds the
upper triangle of ``A = Phi^T Phi / N`` and ``B = Phi^T Y / N``, and the minimizer solves
``(A + ridge I) W = B`` (8.6; the small ridge makes the solution unique when the kernel features
are linearly dependent, e.g. the seed's linear-plus-constant kernel).  Clients clip every
feature vector to ``||phi||_2 <= feature_bound``; targets are one-hot (or +-1 for two classes),
so one record changes the block by at most :meth:`LeastSquaresModel.block_sensitivity`.

:class:`SeparableLoss` takes any ``(g, h)`` and minimizes ``g(w) z`` numerically.

References
----------
Seed Assumption 3 (7.7), Remark 4, eqs. (7.11)-(7.14), (8.1)-(8.9), Remark 8.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize

from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_integer,
    check_nonnegative,
    check_positive,
    read_only,
)
from privacy._clipping import clip_factors, clip_rows
from privacy.federated.noise import noise_norm

# noise_norm lives in privacy.federated.noise (the noise-law module); re-exported here
__all__ = ["KernelFeatures", "LeastSquaresModel", "SeparableLoss", "noise_norm"]

_KERNELS = ("linear", "rbf", "polynomial")


def _check_norm(norm: str) -> str:
    if norm not in ("l1", "l2"):
        raise ParameterError(f"norm must be 'l1' or 'l2'; got {norm!r}")
    return norm


@dataclass(frozen=True)
class KernelFeatures:
    """Kernel feature map ``phi(x) = [1, x (optional), k(x, b_1), ..., k(x, b_M)]``.

    Parameters
    ----------
    basis : array_like, shape (M, d)
        Basis vectors ``b_j`` chosen by the server (public).
    kernel : {"linear", "rbf", "polynomial"}, default "rbf"
        ``linear``: ``scale x^T b + coef0`` (the seed's scaled linear plus constant kernel, 8.7);
        ``rbf``: ``exp(-scale ||x - b||^2)`` (8.9); ``polynomial``: ``(x^T b + coef0)^degree``
        (8.8).
    scale : float, default 1.0
    coef0 : float, default 1.0
    degree : int, default 2
    include_inputs : bool, default True
        Append the raw inputs ``x`` to the features.

    Examples
    --------
    >>> f = KernelFeatures.random(low=[0, 0], high=[1, 1], count=3, rng=0)
    >>> f.transform(np.zeros((5, 2))).shape   # 1 + 2 inputs + 3 kernel features
    (5, 6)
    """

    basis: np.ndarray
    kernel: str = "rbf"
    scale: float = 1.0
    coef0: float = 1.0
    degree: int = 2
    include_inputs: bool = True

    def __post_init__(self) -> None:
        basis = check_finite_array("basis", self.basis, ndim=2)
        object.__setattr__(self, "basis", read_only(basis))
        if self.kernel not in _KERNELS:
            raise ParameterError(f"kernel must be one of {_KERNELS}; got {self.kernel!r}")
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        object.__setattr__(self, "coef0", check_nonnegative("coef0", self.coef0))
        object.__setattr__(self, "degree", check_integer("degree", self.degree, minimum=1))

    @classmethod
    def random(cls, *, low: Any, high: Any, count: int, rng: np.random.Generator | int | None
               = None, **kwargs: Any) -> KernelFeatures:
        """Basis vectors drawn uniformly in the box ``[low, high]`` (seed Remark 8)."""
        low = check_finite_array("low", low, ndim=1)
        high = check_finite_array("high", high, ndim=1)
        if low.shape != high.shape or np.any(high < low):
            raise ParameterError(f"low and high must be equally long with high >= low; got "
                                 f"{low} and {high}")
        count = check_integer("count", count, minimum=0)
        basis = as_generator(rng).uniform(low, high, size=(count, low.size))
        return cls(basis, **kwargs)

    @property
    def input_dim(self) -> int:
        return self.basis.shape[1]

    @property
    def num_features(self) -> int:
        return 1 + (self.input_dim if self.include_inputs else 0) + self.basis.shape[0]

    def transform(self, X: Any) -> np.ndarray:
        """Features of the rows of ``X`` (n, d) -> (n, num_features)."""
        X = check_finite_array("X", X, ndim=2)
        if X.shape[1] != self.input_dim:
            raise DimensionError(f"X has {X.shape[1]} columns (features); the basis vectors "
                                 f"have {self.input_dim}. X must be (samples, features)")
        if self.kernel == "linear":
            K = self.scale * X @ self.basis.T + self.coef0
        elif self.kernel == "polynomial":
            K = (X @ self.basis.T + self.coef0) ** self.degree
        else:
            sq = (X ** 2).sum(1)[:, None] + (self.basis ** 2).sum(1)[None, :] - 2 * X @ self.basis.T
            K = np.exp(-self.scale * np.maximum(sq, 0.0))
        parts = [np.ones((X.shape[0], 1))] + ([X] if self.include_inputs else []) + [K]
        return np.hstack(parts)


@dataclass(frozen=True)
class LeastSquaresModel:
    """Least-squares classifier on clipped kernel features, as a separable loss (8.1-8.6).

    Parameters
    ----------
    features : KernelFeatures
    num_classes : int
        ``2``: one output with targets -1/+1 (prediction by sign); ``C >= 3``: one-hot targets
        and ``C`` outputs (prediction by the largest output).
    feature_bound : float
        Clients clip every feature vector to ``||phi(x)||_2 <= feature_bound``.
    total_samples : int
        ``N = |D|``, the public total number of records (normalizes blocks and losses).
    ridge : float, default 1e-6
        ``ridge / 2 ||W||^2`` added to the global loss (public, data independent).

    Notes
    -----
    Data are ``X`` (samples, features) and integer labels ``y`` in ``0..C-1``.  The data block
    of a client is ``z_k = [u(A_k), vec(B_k)]`` with ``A_k = Phi_k^T Phi_k / N``,
    ``B_k = Phi_k^T Y_k / N`` and ``u`` the upper triangle (with the diagonal) scaled by
    ``sqrt(2)`` off the diagonal for the l2 norm (so ``||u(A)||_2 = ||A||_F``) and unscaled for
    l1.  One record with features ``phi`` and target ``t`` changes it by
    ``[u(phi phi^T), vec(phi t^T)] / N``, hence the sensitivities

    * l2: ``sqrt(||phi||^4 + ||phi||^2 ||t||^2) / N <= B sqrt(B^2 + 1) / N``,
    * l1: ``((||phi||_1^2 + ||phi||_2^2) / 2 + ||phi||_1 ||t||_1) / N
      <= ((p + 1) B^2 / 2 + sqrt(p) B) / N``,

    with ``B = feature_bound``, ``p`` features and ``||t|| = 1`` (one-hot or +-1).
    """

    features: KernelFeatures
    num_classes: int
    feature_bound: float
    total_samples: int
    ridge: float = 1e-6
    _triu: tuple = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.features, KernelFeatures):
            raise ParameterError(f"features must be KernelFeatures; got "
                                 f"{type(self.features).__name__}")
        object.__setattr__(self, "num_classes", check_integer("num_classes", self.num_classes,
                                                              minimum=2))
        object.__setattr__(self, "feature_bound", check_positive("feature_bound",
                                                                 self.feature_bound))
        object.__setattr__(self, "total_samples", check_integer("total_samples",
                                                                self.total_samples, minimum=1))
        object.__setattr__(self, "ridge", check_nonnegative("ridge", self.ridge))
        object.__setattr__(self, "_triu", np.triu_indices(self.features.num_features))

    # ---------------------------------------------------------------- shapes
    @property
    def num_features(self) -> int:
        return self.features.num_features

    @property
    def num_outputs(self) -> int:
        return 1 if self.num_classes == 2 else self.num_classes

    @property
    def weight_shape(self) -> tuple[int, int]:
        """Shape ``(p, outputs)`` of the weight matrix ``W``."""
        return self.num_features, self.num_outputs

    @property
    def block_dimension(self) -> int:
        p = self.num_features
        return p * (p + 1) // 2 + p * self.num_outputs

    # ---------------------------------------------------------------- client side
    def clipped_features(self, X: Any) -> np.ndarray:
        """``phi(x)`` of every row, each clipped to l2 norm ``feature_bound``.

        Any finite feature vector is clipped to the bound with its direction kept (a huge
        record is not dropped); features that overflow to ``inf`` raise ``NonFiniteError``.
        """
        phi = self.features.transform(X)
        if not np.all(np.isfinite(phi)):
            rows = np.flatnonzero(~np.all(np.isfinite(phi), axis=1))
            raise NonFiniteError(f"the {self.features.kernel} features of X overflow (rows "
                                 f"{rows[:5].tolist()}); X must give finite features: rescale "
                                 f"X or the kernel's scale")
        return clip_rows(phi, self.feature_bound)

    def targets(self, y: Any) -> np.ndarray:
        """Targets ``(n, outputs)``: +-1 for two classes, one-hot otherwise."""
        y = np.asarray(y)
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer) and not np.all(y == np.round(y)):
            raise DimensionError(f"y must be a 1-D array of integer labels; got shape {y.shape} "
                                 f"dtype {y.dtype}")
        y = y.astype(int)
        if y.size and (y.min() < 0 or y.max() >= self.num_classes):
            raise ParameterError(f"labels must lie in 0..{self.num_classes - 1}; got "
                                 f"{y.min()}..{y.max()}")
        if self.num_classes == 2:
            return (2.0 * y - 1.0)[:, None]
        return np.eye(self.num_classes)[y]

    def _weights(self, norm: str) -> np.ndarray:
        i, j = self._triu
        return np.where(i == j, 1.0, math.sqrt(2.0) if _check_norm(norm) == "l2" else 1.0)

    def block(self, data: dict[str, np.ndarray], norm: str = "l2") -> np.ndarray:
        """The client's data block ``z_k`` (7.11) from ``data = {"X": ..., "y": ...}``."""
        phi = self.clipped_features(data["X"])
        T = self.targets(data["y"])
        if phi.shape[0] != T.shape[0]:
            raise DimensionError(f"X has {phi.shape[0]} rows but y has {T.shape[0]} labels")
        A = phi.T @ phi
        B = phi.T @ T
        upper = A[self._triu] * self._weights(norm)
        return np.concatenate([upper, B.ravel()]) / self.total_samples

    def block_sensitivity(self, norm: str = "l2") -> float:
        """Largest change of a block when one record is added or removed (see Notes)."""
        b, p, n = self.feature_bound, self.num_features, self.total_samples
        if _check_norm(norm) == "l2":
            return b * math.sqrt(b * b + 1.0) / n
        return ((p + 1) * b * b / 2.0 + math.sqrt(p) * b) / n

    def block_bounds(self, norm: str = "l2") -> tuple[np.ndarray, np.ndarray]:
        """Box ``lo <= z* <= hi`` holding every possible global block (the prior's support).

        ``|phi_i phi_j| <= ||phi||^2 / 2`` off the diagonal, ``0 <= phi_i^2 <= ||phi||^2``,
        ``|phi_i t_c| <= ||phi||``, averaged over the ``N`` records.
        """
        i, j = self._triu
        b2 = self.feature_bound ** 2
        w = self._weights(norm)
        hi_a = np.where(i == j, b2, b2 / 2.0) * w
        lo_a = np.where(i == j, 0.0, -hi_a)
        hi_b = np.full(self.num_features * self.num_outputs, self.feature_bound)
        return np.concatenate([lo_a, -hi_b]), np.concatenate([hi_a, hi_b])

    # ---------------------------------------------------------------- server side
    def unpack(self, z: Any, norm: str = "l2") -> tuple[np.ndarray, np.ndarray]:
        """``(A, B)`` from a block (any real vector of ``block_dimension`` entries)."""
        z = np.asarray(z, dtype=float)
        if z.shape != (self.block_dimension,):
            raise DimensionError(f"z has shape {z.shape}; expected ({self.block_dimension},)")
        p = self.num_features
        m = p * (p + 1) // 2
        A = np.zeros((p, p))
        A[self._triu] = z[:m] / self._weights(norm)
        A = A + np.triu(A, 1).T
        return A, z[m:].reshape(p, self.num_outputs)

    def solve(self, z: Any, norm: str = "l2") -> np.ndarray:
        """``W = argmin g(W) z``: solve ``(A_+ + ridge I) W = B`` (8.6).

        ``A_+`` is the projection of ``A`` on the positive semidefinite cone (a noisy ``A`` can
        be indefinite; projecting is post-processing, so privacy is unaffected).
        """
        A, B = self.unpack(z, norm)
        vals, vecs = np.linalg.eigh(A)
        vals = np.maximum(vals, 0.0) + self.ridge
        if np.min(vals) <= 0:
            return np.linalg.lstsq(A, B, rcond=None)[0]
        return (vecs / vals) @ (vecs.T @ B)

    def centralized(self, X: Any, y: Any) -> np.ndarray:
        """The centralized solution on all data (what FedInfer reaches without noise)."""
        return self.solve(self.block({"X": X, "y": y}) * 1.0)

    def predict(self, W: Any, X: Any) -> np.ndarray:
        """Class labels of the rows of ``X`` (features are clipped as on the clients)."""
        out = self.clipped_features(X) @ np.asarray(W, dtype=float).reshape(self.weight_shape)
        if self.num_classes == 2:
            return (out[:, 0] > 0).astype(int)
        return np.argmax(out, axis=1)

    def accuracy(self, W: Any, X: Any, y: Any) -> float:
        """Fraction of correctly classified rows."""
        return float(np.mean(self.predict(W, X) == np.asarray(y)))

    # ---------------------------------------------------------------- gradient methods
    def local_loss_parts(self, data: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Clipped features ``Phi`` (n_k, p) and targets ``T`` (n_k, outputs) of a client."""
        return self.clipped_features(data["X"]), self.targets(data["y"])

    def clipped_gradient(self, W: np.ndarray, phi: np.ndarray, T: np.ndarray, clip: float,
                         count: int) -> np.ndarray:
        """Sum of per-record gradients ``phi r^T`` clipped to Frobenius ``clip``, over ``count``.

        ``r = W^T phi - t``; ``count`` is the client's *declared* number of records (public),
        so adding or removing a record changes the result by at most ``clip / count``.  The
        clipped gradient is the gradient of a Huber loss in ``||r||``, convex and
        ``||phi||^2``-smooth, so local gradient descent with small enough steps is
        non-expansive; that bounds an update's sensitivity (:mod:`privacy.federated.gradient`).
        """
        R = phi @ W - T
        factor = clip_factors(clip, phi, R)  # huge residuals (a diverged W) are clipped too
        return phi.T @ (R * factor[:, None]) / count


@dataclass(frozen=True)
class SeparableLoss:
    """Any separable loss ``J(w; D) = g(w) h(D)`` (seed Assumption 3), solved numerically.

    Parameters
    ----------
    g : callable w (q,) -> (d,)
        Parameter part (a row vector).
    h : callable data -> (d,)
        Data part of one client's data set.  Clipping to declared bounds is ``h``'s job; the
        ``sensitivity`` you declare must bound the change of ``count/N h`` by one record.
    dimension : int
        ``d``, the length of ``g(w)`` and ``h(D)``.
    w0 : array_like, shape (q,)
        Starting point of the numerical minimization.
    total_samples : int
        ``N``; a client's block is ``count(data) / N * h(data)`` (7.11).
    sensitivity : float
        Declared bound on the block's change by one record (both norms use it).
    bounds : (lo, hi), optional
        Box holding every global block (needed by grid posteriors).
    count : callable data -> int, optional
        Records of a client (default: length of the first array).
    regularizer : callable w -> float, optional
        Data-independent term added to ``g(w) z`` (e.g. a ridge penalty).

    Examples
    --------
    The mean of scalar data as ``argmin (w^2 - 2 w x) ``: ``g(w) = [w^2, -2w]``,
    ``h(D) = [1, mean x]``.

    >>> loss = SeparableLoss(g=lambda w: np.array([w[0] ** 2, -2 * w[0]]),
    ...                      h=lambda d: np.array([1.0, d["x"].mean()]), dimension=2,
    ...                      w0=[0.0], total_samples=4, sensitivity=0.5)
    >>> z = loss.block({"x": np.array([1.0, 2.0])}) + loss.block({"x": np.array([3.0, 6.0])})
    >>> round(float(loss.solve(z)[0]), 6)
    3.0
    """

    g: Callable[[np.ndarray], np.ndarray]
    h: Callable[[dict], np.ndarray]
    dimension: int
    w0: Any
    total_samples: int
    sensitivity: float
    bounds: tuple[Any, Any] | None = None
    count: Callable[[dict], int] | None = None
    regularizer: Callable[[np.ndarray], float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimension", check_integer("dimension", self.dimension,
                                                            minimum=1))
        object.__setattr__(self, "w0", read_only(check_finite_array("w0", self.w0, ndim=1)))
        object.__setattr__(self, "total_samples", check_integer("total_samples",
                                                                self.total_samples, minimum=1))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))

    @property
    def block_dimension(self) -> int:
        return self.dimension

    def block(self, data: dict[str, np.ndarray], norm: str = "l2") -> np.ndarray:
        count = self.count(data) if self.count is not None else len(next(iter(data.values())))
        z = np.asarray(self.h(data), dtype=float).ravel()
        if z.shape != (self.dimension,):
            raise DimensionError(f"h(data) has {z.size} entries; declared dimension "
                                 f"{self.dimension}")
        return count / self.total_samples * z

    def block_sensitivity(self, norm: str = "l2") -> float:
        _check_norm(norm)
        return self.sensitivity

    def block_bounds(self, norm: str = "l2") -> tuple[np.ndarray, np.ndarray]:
        if self.bounds is None:
            return np.full(self.dimension, -np.inf), np.full(self.dimension, np.inf)
        lo, hi = (np.broadcast_to(np.asarray(b, dtype=float), (self.dimension,))
                  for b in self.bounds)
        return lo.copy(), hi.copy()

    def solve(self, z: Any, norm: str = "l2") -> np.ndarray:
        """``argmin_w g(w) z (+ regularizer)`` by BFGS from ``w0``."""
        z = np.asarray(z, dtype=float)

        def objective(w: np.ndarray) -> float:
            value = float(np.asarray(self.g(w), dtype=float) @ z)
            return value + (self.regularizer(w) if self.regularizer is not None else 0.0)
        return optimize.minimize(objective, self.w0, method="BFGS", options={"gtol": 1e-10}).x
