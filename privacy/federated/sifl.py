"""System-immersion federated learning (SIFL): Algorithms 1 and 2 of the immersion-coding paper.

The server encodes the global model with a random affine immersion
``w~ = Pi1 w + N1 r`` (eq. 19), where ``Pi1`` (n~, n) has full column rank, ``Pi1L`` is a left
inverse and ``N1`` (n~, n~ - n) spans ``ker Pi1L``, so the noise ``b1 = N1 r`` vanishes under
``Pi1L``.  Clients run the *target optimizer* ``w~ <- w~ - Pi1 g(Pi1L w~)`` (eq. 20), which keeps
``w~_k = Pi1 w_k + b1`` for the plain iterates ``w_k``; the aggregator averages the encoded
uploads; the server decodes ``w = Pi1L w~_a`` (eq. 21) and re-encodes with fresh noise.
Algorithm 2 ("M2") adds the aggregator's right-invertible code ``w' = w~_a Pi2 + R2 N2`` (eq. 31,
``Pi2`` a 1 x p row, ``N2 Pi2R = 0``); the server applies ``Pi1L`` and ``Pi1`` to the n~ x p matrix
(eqs. 22, 26-27) and the clients strip ``Pi2`` with ``Pi2R`` (eq. 32).

The paper's central claim -- the same accuracy and convergence rate as standard FL -- is an
algebraic identity: the decoded SIFL iterates *are* the plain FL iterates up to floating-point
rounding.  :func:`run_plain_fl` and :func:`run_sifl` share the local training code and the
minibatch sequence (``batch_seed``), so the two trajectories can be compared number by number.
Noise-before-aggregation DP (:func:`run_nbafl`) is the baseline whose noise is *not* removed.

Random codes: ``[Pi1, N1] = s_pi Q[:, :n], s_N Q[:, n:]`` with ``Q = O1 diag(s) O2`` (random
orthogonal ``O1, O2``, singular values ``s`` log-spaced in ``[1, condition]``), so ``Pi1`` and
``N1`` are neither orthogonal to each other nor aligned with the axes, and
``Pi1L = Q^{-1}[:n] / s_pi``.  The paper's experiment uses small ``Pi1`` and large noise
(``||Pi1^j|| = 1e-3``, ``||N1^j|| = 1e3``, ``sigma = 1e3``): rounding errors then grow with
``||Pi1L|| ||N1|| sigma`` (measured by the tests and the CLI).

References
----------
H. Hayati, C. Murguia, N. van de Wouw, "Immersion and invariance-based coding for privacy-
preserving federated learning" (seed ``004_...``): eqs. (4), (11)-(21) (Problem 1, Proposition 1,
Algorithm 1), (22)-(32) (Problem 2, Proposition 2, Algorithm 2).  K. Wei et al., "Federated
learning with differential privacy: algorithms and performance analysis", IEEE TIFS 2020 (NbAFL).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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
    read_only,
)
from privacy.calibration import calibrate_gaussian_sigma
from privacy.federated.noise import ReleaseSumNoise, check_noise_kind
from privacy.federated.sifl_models import LocalOptimizer
from privacy.mechanisms import NeighboringRelation

__all__ = [
    "ClientData",
    "ImmersionCode",
    "AggregatorCode",
    "Transcript",
    "local_training",
    "run_plain_fl",
    "run_sifl",
    "nbafl_noise_multiplier",
    "run_nbafl",
]

#: The noise kinds of the immersion codes (finite variance: ``noise_std`` is their sd).
NOISE_LAWS = ("gaussian", "laplace")


@dataclass(frozen=True)
class ClientData:
    """One client's local data set: features ``X`` (m, d) as rows, integer labels ``y`` (m,).

    Raises
    ------
    ParameterError
        No example (``m = 0``), or non-finite ``X``.
    DimensionError
        ``y`` not of shape ``(m,)``.
    """

    X: np.ndarray
    y: np.ndarray

    def __post_init__(self) -> None:
        X = check_finite_array("X", self.X, ndim=2)
        if X.shape[0] == 0:
            # its gradient would divide by zero examples (and its weight in the mean is 0)
            raise ParameterError(f"a client needs at least one example; got X of shape "
                                 f"{X.shape} (leave an empty client out of the clients)")
        y = np.asarray(self.y)
        if y.shape != (X.shape[0],):
            raise DimensionError(f"y has shape {y.shape}; expected ({X.shape[0]},) (one label "
                                 f"per row of X)")
        object.__setattr__(self, "X", read_only(X))
        object.__setattr__(self, "y", y.astype(int))

    @property
    def size(self) -> int:
        """Number of examples."""
        return self.y.size


def _weights(clients: Sequence[ClientData]) -> np.ndarray:
    if len(clients) == 0:
        raise ParameterError("clients must hold at least one ClientData")
    sizes = np.array([c.size for c in clients], dtype=float)
    return sizes / sizes.sum()


def _random_orthogonal(size: int, gen: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(gen.standard_normal((size, size)))
    return q * np.sign(np.diag(r))


def _freeze_code(code, arrays: dict[str, np.ndarray]) -> None:
    """Store the checked key matrices read-only and validate the noise law of a code."""
    for name, array in arrays.items():
        object.__setattr__(code, name, read_only(array))
    object.__setattr__(code, "noise_std", check_positive("noise_std", code.noise_std))
    check_noise_kind(code.noise, NOISE_LAWS)


@dataclass(frozen=True)
class ImmersionCode:
    """The server's immersion map ``pi1(w) = Pi1 w + N1 r`` and its left inverse (eqs. 19-21).

    Attributes
    ----------
    Pi1 : ndarray, shape (n~, n)
    Pi1L : ndarray, shape (n, n~)
        Left inverse: ``Pi1L Pi1 = I``, ``Pi1L N1 = 0``.
    N1 : ndarray, shape (n~, n~ - n)
    noise_std : float
        Standard deviation of the entries of ``r``.
    noise : {"gaussian", "laplace"}

    Examples
    --------
    >>> import numpy as np
    >>> code = ImmersionCode.random(3, 5, rng=0)
    >>> w = np.array([1.0, -2.0, 0.5])
    >>> encoded = code.encode(w, rng=1)
    >>> bool(np.allclose(code.decode(encoded), w)), encoded.shape
    (True, (5,))
    """

    Pi1: np.ndarray
    Pi1L: np.ndarray
    N1: np.ndarray
    noise_std: float
    noise: str = "gaussian"

    def __post_init__(self) -> None:
        Pi1 = check_finite_array("Pi1", self.Pi1, ndim=2)
        Pi1L = check_finite_array("Pi1L", self.Pi1L, ndim=2)
        N1 = check_finite_array("N1", self.N1, ndim=2)
        big, n = Pi1.shape
        if big <= n or Pi1L.shape != (n, big) or N1.shape != (big, big - n):
            raise DimensionError(f"expected Pi1 (n~, n) with n~ > n, Pi1L (n, n~), N1 "
                                 f"(n~, n~ - n); got {Pi1.shape}, {Pi1L.shape}, {N1.shape}")
        _freeze_code(self, {"Pi1": Pi1, "Pi1L": Pi1L, "N1": N1})

    @classmethod
    def random(cls, n: int, n_encoded: int, *, pi_scale: float = 1.0, kernel_scale: float = 1.0,
               noise_std: float = 1.0, condition: float = 10.0, noise: str = "gaussian",
               rng: np.random.Generator | int | None = None) -> ImmersionCode:
        """Random code with ``[Pi1 / pi_scale, N1 / kernel_scale] = O1 diag(s) O2``.

        Parameters
        ----------
        n : int
            Model size.
        n_encoded : int
            Encoded size ``n~ > n``.
        pi_scale, kernel_scale : float
            Scales of ``Pi1`` and ``N1`` (the paper: 1e-3 and 1e3).
        noise_std : float
            Standard deviation of ``r`` (the paper: 1e3).
        condition : float, default 10
            Condition number of ``Q`` (>= 1).
        noise : {"gaussian", "laplace"}
        rng : Generator, int or None
        """
        n = check_integer("n", n, minimum=1)
        big = check_integer("n_encoded", n_encoded, minimum=n + 1)
        pi_scale = check_positive("pi_scale", pi_scale)
        kernel_scale = check_positive("kernel_scale", kernel_scale)
        condition = check_in_interval("condition", condition, 1.0, math.inf)
        gen = as_generator(rng)
        left, right = _random_orthogonal(big, gen), _random_orthogonal(big, gen)
        singular = np.geomspace(1.0, condition, big)
        Q = (left * singular) @ right
        Q_inv = (right.T / singular) @ left.T
        return cls(pi_scale * Q[:, :n], Q_inv[:n] / pi_scale, kernel_scale * Q[:, n:],
                   noise_std, noise)

    @property
    def n(self) -> int:
        """Model size."""
        return self.Pi1.shape[1]

    @property
    def n_encoded(self) -> int:
        """Encoded size ``n~``."""
        return self.Pi1.shape[0]

    def encode(self, w: np.ndarray, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``Pi1 w + N1 R`` for ``w`` of shape (n,) or (n, p), fresh ``R`` each call (19, 26)."""
        w = np.asarray(w, dtype=float)
        if w.shape[0] != self.n or w.ndim > 2:
            raise DimensionError(f"w has shape {w.shape}; expected ({self.n},) or ({self.n}, p)")
        law = ReleaseSumNoise.from_std(self.noise, self.noise_std)
        r = law.sample((self.n_encoded - self.n,) + w.shape[1:], rng)
        return self.Pi1 @ w + self.N1 @ r

    def decode(self, encoded: np.ndarray) -> np.ndarray:
        """``Pi1L encoded`` (18, 21, 22)."""
        encoded = np.asarray(encoded, dtype=float)
        if encoded.shape[0] != self.n_encoded:
            raise DimensionError(f"encoded has {encoded.shape[0]} rows; expected "
                                 f"{self.n_encoded}")
        return self.Pi1L @ encoded


@dataclass(frozen=True)
class AggregatorCode:
    """The aggregator's map ``pi2(v) = v Pi2 + R2 N2`` and right inverse ``Pi2R`` (eqs. 31-32).

    Attributes
    ----------
    Pi2 : ndarray, shape (p,)
        The row ``Pi2`` (1 x p).
    Pi2R : ndarray, shape (p,)
        Right inverse column: ``Pi2 . Pi2R = 1``, ``N2 Pi2R = 0``.
    N2 : ndarray, shape (p - 1, p)
    noise_std : float
        Standard deviation of the entries of ``R2`` (n~, p - 1).
    noise : {"gaussian", "laplace"}

    Examples
    --------
    >>> import numpy as np
    >>> agg = AggregatorCode.random(2, rng=0)
    >>> v = np.array([1.0, 2.0, 3.0])
    >>> bool(np.allclose(agg.decode(agg.encode(v, rng=1)), v))
    True
    """

    Pi2: np.ndarray
    Pi2R: np.ndarray
    N2: np.ndarray
    noise_std: float
    noise: str = "gaussian"

    def __post_init__(self) -> None:
        Pi2 = check_finite_array("Pi2", self.Pi2, ndim=1)
        Pi2R = check_finite_array("Pi2R", self.Pi2R, ndim=1)
        N2 = check_finite_array("N2", self.N2, ndim=2)
        p = Pi2.size
        if p < 2 or Pi2R.shape != (p,) or N2.shape != (p - 1, p):
            raise DimensionError(f"expected Pi2 (p,), Pi2R (p,), N2 (p - 1, p) with p >= 2; got "
                                 f"{Pi2.shape}, {Pi2R.shape}, {N2.shape}")
        _freeze_code(self, {"Pi2": Pi2, "Pi2R": Pi2R, "N2": N2})

    @classmethod
    def random(cls, p: int = 2, *, pi_scale: float = 1.0, kernel_scale: float = 1.0,
               noise_std: float = 1.0, noise: str = "gaussian",
               rng: np.random.Generator | int | None = None) -> AggregatorCode:
        """Random code from an orthogonal p x p matrix ``[Pi2 / pi_scale; N2 / kernel_scale]``."""
        p = check_integer("p", p, minimum=2)
        pi_scale = check_positive("pi_scale", pi_scale)
        kernel_scale = check_positive("kernel_scale", kernel_scale)
        P = _random_orthogonal(p, as_generator(rng))
        return cls(pi_scale * P[0], P[0] / pi_scale, kernel_scale * P[1:], noise_std, noise)

    @property
    def p(self) -> int:
        """Width ``p`` of the encoded matrix."""
        return self.Pi2.size

    def encode(self, v: np.ndarray, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``v Pi2 + R2 N2`` for ``v`` of shape (n~,): an (n~, p) matrix (31)."""
        v = check_finite_array("v", v, ndim=1)
        R2 = ReleaseSumNoise.from_std(self.noise, self.noise_std).sample((v.size, self.p - 1), rng)
        return np.outer(v, self.Pi2) + R2 @ self.N2

    def decode(self, encoded: np.ndarray) -> np.ndarray:
        """``encoded Pi2R`` (32)."""
        encoded = check_finite_array("encoded", encoded, ndim=2)
        if encoded.shape[1] != self.p:
            raise DimensionError(f"encoded has {encoded.shape[1]} columns; expected p={self.p}")
        return encoded @ self.Pi2R


def local_training(model, optimizer: LocalOptimizer, start: np.ndarray, data: ClientData, *,
                   local_steps: int, batch_size: int | None, rng: np.random.Generator,
                   code: ImmersionCode | None = None) -> np.ndarray:
    """``local_steps`` optimizer steps from ``start`` on ``data`` (eq. 4, or the target eq. 20).

    With ``code`` the iterate is the encoded ``w~`` and each step is
    ``w~ <- w~ - Pi1 g(Pi1L w~)``; the optimizer state stays in model coordinates.  Minibatches
    (``batch_size`` rows without replacement, ``None`` = full batch) come from ``rng``.
    """
    params = np.array(start, dtype=float)
    state = optimizer.start(model.size)
    for _ in range(local_steps):
        if batch_size is None or batch_size >= data.size:
            X, y = data.X, data.y
        else:
            rows = rng.choice(data.size, size=batch_size, replace=False)
            X, y = data.X[rows], data.y[rows]
        plain = params if code is None else code.decode(params)
        step, state = optimizer.step(state, model.gradient(plain, X, y))
        params = params - (step if code is None else code.Pi1 @ step)
    return params


def _batch_rng(batch_seed: int, round_index: int, client: int) -> np.random.Generator:
    return np.random.default_rng([batch_seed, round_index, client])


def _check_schedule(rounds: int, local_steps: int, batch_size: int | None) -> None:
    check_integer("rounds", rounds, minimum=1)
    check_integer("local_steps", local_steps, minimum=1)
    if batch_size is not None:
        check_integer("batch_size", batch_size, minimum=1)


def run_plain_fl(model, optimizer: LocalOptimizer, clients: Sequence[ClientData],
                 theta0: np.ndarray, *, rounds: int, local_steps: int = 1,
                 batch_size: int | None = None, batch_seed: int = 0) -> np.ndarray:
    """Standard FL (FedAvg with weights ``|D_i| / |D|``, eqs. 1-4): global models per round.

    Returns
    -------
    ndarray, shape (rounds + 1, n)
        ``w^0 .. w^T``.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.federated.sifl_models import LocalOptimizer, SoftmaxRegression
    >>> rng = np.random.default_rng(0)
    >>> clients = [ClientData(rng.normal(size=(20, 3)), rng.integers(0, 2, 20)) for _ in range(2)]
    >>> model = SoftmaxRegression(3, 2)
    >>> run_plain_fl(model, LocalOptimizer("sgd", 0.1), clients, model.init(0), rounds=3).shape
    (4, 8)
    """
    _check_schedule(rounds, local_steps, batch_size)
    weights = _weights(clients)
    w = np.array(theta0, dtype=float)
    history = [w]
    for t in range(rounds):
        local = [local_training(model, optimizer, w, data, local_steps=local_steps,
                                batch_size=batch_size, rng=_batch_rng(batch_seed, t, i))
                 for i, data in enumerate(clients)]
        w = np.tensordot(weights, np.array(local), axes=1)
        history.append(w)
    return np.array(history)


@dataclass(frozen=True)
class Transcript:
    """Messages of a SIFL run, for privacy analysis (what each party sees).

    Attributes
    ----------
    decoded : ndarray, shape (T + 1, n)
        Global models decoded with every key (what the clients train from).
    broadcasts : tuple of ndarray
        Server -> clients at the start of round ``t``: ``w~^t`` (n~,), or for M2 after round 0
        ``w'^t`` (n~, p).
    uploads : ndarray, shape (T, K, n~)
        Clients -> aggregator (``w~_i^{t+1}``).
    to_server : ndarray, shape (T, n~) or (T, n~, p)
        Aggregator -> server (``w~_a^{t+1}``, or ``w'_a^{t+1}`` for M2).
    server_view : ndarray, shape (T, n) or (T, n, p)
        What the server decodes (``w^{t+1}``, or ``w_bar^{t+1} = Pi1L w'_a`` for M2).
    """

    decoded: np.ndarray
    broadcasts: tuple[np.ndarray, ...]
    uploads: np.ndarray
    to_server: np.ndarray
    server_view: np.ndarray


def run_sifl(model, optimizer: LocalOptimizer, clients: Sequence[ClientData],
             theta0: np.ndarray, code: ImmersionCode, *, rounds: int, local_steps: int = 1,
             batch_size: int | None = None, batch_seed: int = 0,
             aggregator: AggregatorCode | None = None,
             rng: np.random.Generator | int | None = None) -> Transcript:
    """SIFL: Algorithm 1 (``aggregator=None``, "M1") or Algorithm 2 ("M2").

    Parameters
    ----------
    model, optimizer, clients, theta0, rounds, local_steps, batch_size, batch_seed
        As in :func:`run_plain_fl` (same ``batch_seed`` = same minibatches).
    code : ImmersionCode
        The server's immersion (its ``n`` must equal ``model.size``).
    aggregator : AggregatorCode, optional
        The aggregator's second code (Algorithm 2).
    rng : Generator, int or None
        Source of the coding noise ``r``, ``R1``, ``R2``.

    Returns
    -------
    Transcript
        ``decoded`` equals :func:`run_plain_fl` to rounding (Propositions 1-2).

    Raises
    ------
    DimensionError
        The code does not match the model size.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.federated.sifl_models import LocalOptimizer, SoftmaxRegression
    >>> rng = np.random.default_rng(0)
    >>> clients = [ClientData(rng.normal(size=(20, 3)), rng.integers(0, 2, 20)) for _ in range(2)]
    >>> model, sgd = SoftmaxRegression(3, 2), LocalOptimizer("sgd", 0.1)
    >>> code = ImmersionCode.random(model.size, model.size + 4, rng=1)
    >>> out = run_sifl(model, sgd, clients, model.init(0), code, rounds=3, rng=2)
    >>> plain = run_plain_fl(model, sgd, clients, model.init(0), rounds=3)
    >>> bool(np.abs(out.decoded - plain).max() < 1e-12), out.uploads.shape
    (True, (3, 2, 12))
    """
    _check_schedule(rounds, local_steps, batch_size)
    if code.n != model.size:
        raise DimensionError(f"the code encodes {code.n} parameters; the model has {model.size}")
    weights = _weights(clients)
    gen = as_generator(rng)
    broadcast = code.encode(np.asarray(theta0, dtype=float), gen)          # w~^0
    decoded, broadcasts, uploads, to_server, server_view = [np.array(theta0, float)], [], [], [], []
    for t in range(rounds):
        broadcasts.append(broadcast)
        start = broadcast if broadcast.ndim == 1 else aggregator.decode(broadcast)
        local = np.array([local_training(model, optimizer, start, data, local_steps=local_steps,
                                         batch_size=batch_size, rng=_batch_rng(batch_seed, t, i),
                                         code=code)
                          for i, data in enumerate(clients)])
        uploads.append(local)
        aggregated = weights @ local                                          # aggregator
        if aggregator is None:
            to_server.append(aggregated)
            w = code.decode(aggregated)                                       # server, (21)
            server_view.append(w)
            decoded.append(w)
            broadcast = code.encode(w, gen)                                   # (19)
        else:
            message = aggregator.encode(aggregated, gen)                      # (31)
            to_server.append(message)
            w_bar = code.decode(message)                                      # (22)
            server_view.append(w_bar)
            broadcast = code.encode(w_bar, gen)                               # (26)-(27)
            decoded.append(w_bar @ aggregator.Pi2R)
    return Transcript(read_only(np.array(decoded)), tuple(read_only(b) for b in broadcasts),
                      *(read_only(np.array(a)) for a in (uploads, to_server, server_view)))


def nbafl_noise_multiplier(epsilon: float, *, delta: float, rounds: int) -> float:
    """Noise multiplier ``z`` for NbAFL: upload noise ``sigma_i = z lr clip / |D_i|``.

    The upload is ``w - lr mean_j clip(g_j)``; replacing one of the client's ``m`` records moves it
    by at most ``2 lr clip / m`` (l2), i.e. Gaussian sensitivity ``lr clip / m`` under
    ``REPLACE_ONE``.  The Gaussian privacy loss depends only on ``sigma / sensitivity``, so ``z``
    is calibrated once (sensitivity 1) for ``rounds`` adaptive releases with
    :func:`privacy.calibration.calibrate_gaussian_sigma`.  Privacy unit: one record of one
    client, against anyone who sees that client's uploads.

    Examples
    --------
    >>> z = nbafl_noise_multiplier(5.0, delta=1e-5, rounds=10)
    >>> 5.5 < z < 5.8
    True
    """
    return calibrate_gaussian_sigma(epsilon, delta=delta, steps=rounds, sensitivity=1.0,
                                    neighboring=NeighboringRelation.REPLACE_ONE)


def run_nbafl(model, clients: Sequence[ClientData], theta0: np.ndarray, *, rounds: int,
              learning_rate: float, clip: float, noise_multiplier: float,
              rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Noise before aggregation (Wei et al. 2020) with one clipped full-batch step per round.

    Client ``i`` uploads ``w - lr (sum_j clip(g_j, clip) / m_i + l2 w) + N(0, sigma_i^2 I)`` with
    ``sigma_i = noise_multiplier lr clip / m_i`` (see :func:`nbafl_noise_multiplier`); the server
    averages with weights ``|D_i| / |D|``.  One local step keeps the sensitivity exact (several
    steps of a non-convex model have no finite bound without further assumptions).
    ``noise_multiplier = 0`` gives clipped FL without noise.

    Returns
    -------
    ndarray, shape (rounds + 1, n)

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.federated.sifl_models import SoftmaxRegression
    >>> rng = np.random.default_rng(0)
    >>> clients = [ClientData(rng.normal(size=(50, 3)), rng.integers(0, 2, 50)) for _ in range(2)]
    >>> model = SoftmaxRegression(3, 2)
    >>> z = nbafl_noise_multiplier(5.0, delta=1e-5, rounds=4)
    >>> run_nbafl(model, clients, model.init(0), rounds=4, learning_rate=0.5, clip=1.0,
    ...           noise_multiplier=z, rng=0).shape
    (5, 8)
    """
    check_integer("rounds", rounds, minimum=1)
    lr = check_positive("learning_rate", learning_rate)
    clip = check_positive("clip", clip)
    multiplier = check_nonnegative("noise_multiplier", noise_multiplier)
    weights = _weights(clients)
    gen = as_generator(rng)
    w = np.array(theta0, dtype=float)
    history = [w]
    for _ in range(rounds):
        uploads = []
        for data in clients:
            norms = model.example_gradient_norms(w, data.X, data.y)
            factors = np.minimum(1.0, clip / np.maximum(norms, 1e-300)) / data.size
            upload = w - lr * model.gradient(w, data.X, data.y, weights=factors)
            sigma = multiplier * lr * clip / data.size
            uploads.append(upload + gen.normal(0.0, sigma, w.size))
        w = weights @ np.array(uploads)
        history.append(w)
    return np.array(history)
