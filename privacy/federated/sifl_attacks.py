"""What the SIFL encodings hide, measured: the paper's per-element DP claim and three attacks.

The paper's Theorems 1-2 bound the privacy loss of *one element* of an encoded model in one round:
element ``j`` of ``w~ = Pi1 w + N1 r`` is Gaussian with standard deviation ``||N1^j|| sigma`` and
moves by at most ``||Pi1^j|| Delta`` between neighbouring data sets (:func:`element_epsilon`, here
composed by :mod:`privacy.accounting`).  That bound is about a marginal.  The encoded *vector*
carries its noise in the fixed ``(n~ - n)``-dimensional subspace ``range(N1)`` while the signal
``Pi1 w`` leaves it, so two neighbouring outputs have mutually singular laws (total variation 1:
no finite epsilon for any delta < 1) once the keys are known -- and the clients hold
``Pi1`` and ``Pi1L`` (the target optimizer evaluates ``g(Pi1L w~)``), so each client decodes every
global model and, with the aggregator, every other client's upload.

With every key secret, the attacks below still use only the intercepted messages:

* :func:`client_difference_attack` (aggregator, Algorithms 1 and 2): all clients start a round
  from the same ``w~^t`` and the target optimizer carries ``b1^t`` unchanged, so the differences
  of same-round uploads are ``Pi1 (w_i - w_j)``: noise-free.  Their span estimates ``range(Pi1)``
  (SVD), and coordinates in it give the client-model differences up to an unknown invertible map.
* :func:`noise_subspace_attack` (eavesdropper on the broadcasts ``w~^t = Pi1 w^t + N1 r^t``):
  round-to-round changes are dominated by the fresh noise, whose span is the fixed
  ``range(N1)``; the ``n`` least-varying directions annihilate it and leave ``M w^t``.
* :func:`server_scale_attack` (server, Algorithm 2): the server decodes
  ``w_bar^t = w^t Pi2 + Z^t N2`` (n x p); the direction ``v`` with ``N2 v = 0`` is the one along
  which ``w_bar^t v`` fluctuates least from round to round relative to its mean (a p x p
  generalised eigenproblem), and ``w_bar^t v = (Pi2 . v) w^t``: the global models up to one scalar.

References
----------
Seed ``004_...``: eqs. (19), (31), (37)-(44) (Theorems 1-2), Sec. 6.1 (the 1e-11 / 1e-13 claims).
J. So et al., "Securing secure aggregation: mitigating multi-round privacy leakage in federated
learning", AAAI 2023 (multi-round leakage).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from _toolbox.errors import DimensionError
from _toolbox.validation import check_finite_array, check_in_interval, check_positive
from privacy import accounting
from privacy.federated.sifl import AggregatorCode, ImmersionCode
from privacy.mechanisms import GaussianMechanism

__all__ = [
    "element_epsilon",
    "DifferenceAttack",
    "client_difference_attack",
    "noise_subspace_attack",
    "server_scale_attack",
    "subspace_sine",
]


def element_epsilon(code: ImmersionCode, *, sensitivity: float, delta: float,
                    aggregator: AggregatorCode | None = None) -> float:
    """Largest per-element epsilon of an encoded local model in one round (Theorem 2).

    Element ``j`` is Gaussian with std ``||N1^j|| sigma1`` (times ``||Pi2R||`` for Algorithm 2,
    the paper's eq. 46) and mean shift at most ``||Pi1^j|| sensitivity``; the worst ``j`` is
    accounted with :func:`privacy.accounting.epsilon` (one release).  This is the paper's
    guarantee, valid for a single element seen alone.

    Examples
    --------
    >>> code = ImmersionCode.random(4, 6, pi_scale=1e-3, kernel_scale=1e3, noise_std=1e3, rng=0)
    >>> element_epsilon(code, sensitivity=0.33, delta=1e-5)
    0.0
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    stds = np.linalg.norm(code.N1, axis=1) * code.noise_std
    if aggregator is not None:
        stds = stds * np.linalg.norm(aggregator.Pi2R)
    shifts = np.linalg.norm(code.Pi1, axis=1) * sensitivity
    worst = int(np.argmax(shifts / stds))
    mechanism = GaussianMechanism(sigma=float(stds[worst]), sensitivity=float(shifts[worst]))
    return accounting.epsilon(mechanism, delta=delta)


def subspace_sine(basis: np.ndarray, reference: np.ndarray) -> float:
    """Sine of the largest principal angle between ``span(basis)`` and ``span(reference)``.

    Examples
    --------
    >>> import numpy as np
    >>> round(subspace_sine(np.array([[1.0], [1.0]]), np.array([[1.0], [0.0]])), 6)
    0.707107
    """
    q1 = linalg.orth(check_finite_array("basis", basis, ndim=2))
    q2 = linalg.orth(check_finite_array("reference", reference, ndim=2))
    if q1.shape[1] != q2.shape[1]:
        raise DimensionError(f"the subspaces have dimensions {q1.shape[1]} and {q2.shape[1]}")
    cosines = linalg.svdvals(q1.T @ q2)
    return float(math.sqrt(max(0.0, 1.0 - min(1.0, float(cosines.min())) ** 2)))


@dataclass(frozen=True)
class DifferenceAttack:
    """Outcome of :func:`client_difference_attack` (evaluated with the true keys).

    Attributes
    ----------
    noise_in_differences : float
        Largest relative norm of a same-round upload difference outside ``range(Pi1)``
        (rounding level: the differences carry no coding noise).
    singular_values : ndarray
        Singular values of the stacked differences (a gap after the ``n``-th once enough rounds
        are seen).
    subspace_sine : float
        Largest principal-angle sine between the estimated and the true ``range(Pi1)``.
    coordinates : ndarray, shape (rounds * (K - 1), n)
        The attacker's coordinates ``U^T (w~_i - w~_0)`` of the client-model differences.
    """

    noise_in_differences: float
    singular_values: np.ndarray
    subspace_sine: float
    coordinates: np.ndarray


def client_difference_attack(uploads: np.ndarray, code: ImmersionCode) -> DifferenceAttack:
    """The aggregator's attack on same-round uploads (``uploads`` of shape (T, K, n~)).

    Only ``uploads`` is used to attack; ``code`` only evaluates the result.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.federated.sifl import ClientData, run_sifl
    >>> from privacy.federated.sifl_models import LocalOptimizer, SoftmaxRegression
    >>> rng = np.random.default_rng(0)
    >>> clients = [ClientData(rng.normal(size=(20, 3)), rng.integers(0, 2, 20)) for _ in range(3)]
    >>> model = SoftmaxRegression(3, 2)
    >>> code = ImmersionCode.random(model.size, model.size + 4, noise_std=100.0, rng=1)
    >>> t = run_sifl(model, LocalOptimizer("sgd", 0.1), clients, model.init(0), code, rounds=4)
    >>> bool(client_difference_attack(t.uploads, code).noise_in_differences < 1e-10)
    True
    """
    uploads = check_finite_array("uploads", uploads, ndim=3)
    if uploads.shape[1] < 2 or uploads.shape[2] != code.n_encoded:
        raise DimensionError(f"uploads must have shape (T, K >= 2, {code.n_encoded}); got "
                             f"{uploads.shape}")
    diffs = (uploads[:, 1:, :] - uploads[:, :1, :]).reshape(-1, uploads.shape[2])
    projector_basis = linalg.orth(code.Pi1)
    outside = diffs - (diffs @ projector_basis) @ projector_basis.T
    relative = np.linalg.norm(outside, axis=1) / np.maximum(np.linalg.norm(diffs, axis=1),
                                                            1e-300)
    _, singular, vt = np.linalg.svd(diffs, full_matrices=False)
    rank = min(code.n, vt.shape[0])
    basis = vt[:rank].T
    sine = subspace_sine(basis, code.Pi1) if rank == code.n else 1.0
    return DifferenceAttack(float(relative.max()), singular, sine, diffs @ basis)


def noise_subspace_attack(broadcasts: np.ndarray, noise_dimension: int
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Eavesdropper on the broadcasts ``w~^t`` (T, n~): coordinates ``C^T w~^t`` and ``C``.

    ``C`` spans the ``n~ - k`` directions of least round-to-round change, ``k = noise_dimension``
    (= ``n~ - n``, public: it is the difference of the model and message sizes).  When the fresh
    noise dominates the model's drift, ``C`` annihilates ``range(N1)`` and the coordinates are
    ``M w^t`` for the unknown invertible ``M = C^T Pi1``.  Needs ``T - 1 >= k``.

    Examples
    --------
    >>> import numpy as np
    >>> code = ImmersionCode.random(3, 5, noise_std=1e3, rng=0)
    >>> models = np.cumsum(np.full((10, 3), 0.01), axis=0)          # a slowly moving model
    >>> gen = np.random.default_rng(1)
    >>> broadcasts = np.array([code.encode(w, gen) for w in models])
    >>> coords, C = noise_subspace_attack(broadcasts, 2)
    >>> bool(np.abs(C.T @ code.N1).max() < 1e-4), coords.shape
    (True, (10, 3))
    """
    broadcasts = check_finite_array("broadcasts", broadcasts, ndim=2)
    steps, size = broadcasts.shape
    if not 0 < noise_dimension < size or steps - 1 < noise_dimension:
        raise DimensionError(f"need 0 < noise_dimension < {size} and at least noise_dimension + 1"
                             f" = {noise_dimension + 1} broadcasts; got noise_dimension="
                             f"{noise_dimension}, {steps} broadcasts")
    _, _, vt = np.linalg.svd(np.diff(broadcasts, axis=0), full_matrices=True)
    complement = vt[noise_dimension:].T
    return broadcasts @ complement, complement


def server_scale_attack(server_view: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Server attack on Algorithm 2: ``w_bar^t`` (T, n, p) -> models up to one scalar (T, n).

    Solves ``min_v v^T D v / v^T M v`` with ``D`` the summed squares of the round-to-round changes
    of ``w_bar^t`` and ``M = m^T m`` for the mean ``m`` over rounds: the fresh noise ``Z^t N2``
    fluctuates, the slowly moving ``w^t Pi2`` does not.  Returns ``(w_bar^t v, v)``.

    Examples
    --------
    >>> import numpy as np
    >>> agg = AggregatorCode.random(2, rng=0)
    >>> gen = np.random.default_rng(1)
    >>> models = 1.0 + np.cumsum(np.full((30, 4), 0.01), axis=0)
    >>> view = np.array([np.outer(w, agg.Pi2) + np.outer(gen.normal(size=4), agg.N2[0])
    ...                  for w in models])
    >>> recovered, v = server_scale_attack(view)
    >>> bool(abs(np.corrcoef(recovered.ravel(), models.ravel())[0, 1]) > 0.999)
    True
    """
    view = check_finite_array("server_view", server_view, ndim=3)
    if view.shape[0] < 2:
        raise DimensionError(f"need at least 2 rounds; got {view.shape[0]}")
    changes = np.diff(view, axis=0).reshape(-1, view.shape[2])
    mean = view.mean(axis=0)
    D = changes.T @ changes
    M = mean.T @ mean
    scale = np.trace(M) / M.shape[0]
    values, vectors = linalg.eigh(D, M + 1e-12 * scale * np.eye(M.shape[0]))
    v = vectors[:, int(np.argmin(values))]
    v = v / np.linalg.norm(v)
    return view @ v, v
