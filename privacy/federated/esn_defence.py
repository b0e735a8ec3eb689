"""FedInfer-style noise on echo-state-network statistics, and the privacy it actually gives.

The seed (Sec. 6.3.4, Fig. 6.7) protects a client of a federated echo state network by adding
Gaussian noise to ``A`` and ``B`` at a signal-to-noise ratio of 1:4 and reports only that SNR.
Here the noise is a Gaussian mechanism on the released vector (``A`` and the upper triangle of
``B``, :meth:`ReservoirStatistics.released_vector`) and its (epsilon, delta) comes from
:mod:`privacy.accounting` with a sensitivity derived below.

Sensitivity (l2 diameter of the released vector between neighbouring inputs).  The client clips
its inputs to ``|u_t| <= U``.  The leaky-tanh states need no clipping: from ``x_1 = 0`` every node
obeys ``|x_{i,t+1}| <= b_{i,t+1} = (1 - a) b_{i,t} + a tanh(sum_j |W_ij| b_{j,t} + |W_in,i| U)``
(<= 1).  Column ``t`` has ``z_t = [1, u_t, x_{t+1}]``, ``y_t = u_{t+1}``, hence
``||z_t||^2 <= Z_t^2 = 1 + U^2 + ||b_{t+1}||^2`` and its data-dependent contribution ``g_t``
(``y z`` and the upper triangle of ``z z^T`` without the constant (0, 0) entry) has
``||g_t||^2 <= U^2 Z_t^2 + ((Z_t^2)^2 + 1 + U^4 + sum_i b_i^4) / 2 - 1``.

* unit ``"sequence"`` (the client's whole input series is replaced): ``D <= 2 sum_t G_t``.
* unit ``"step"`` (one value ``u_s`` is replaced): only ``y_{s-1}``, ``u_s`` and the states
  after ``s`` move.  With ``d_t`` a bound on ``||x_{t+1} - x'_{t+1}||``
  (``a ||min(2U |W_in|, 2 tanh p)||`` at ``t = s``, then
  ``(1 - a) d + a min(||W||_2 d, 2 ||tanh p||)``, capped by ``2 ||b_{t+1}||``, ``p`` the
  pre-activation bound), column ``t`` moves by at most
  ``min(sqrt((U e_t + |dy| Z_t)^2 + (2 Z_t e_t)^2), 2 G_t)`` with ``e_t = ||dz_t||``; ``D`` is the
  sum over columns, maximised over ``s``.  The reservoir's memory spreads one step over all later
  columns, so this is not much smaller than the sequence bound unless ``||W||_2`` is small.

The mechanism is Gaussian with ``sensitivity = D / 2`` under ``NeighboringRelation.REPLACE_ONE``
(replacing a record moves the query by up to twice the sensitivity, ``dp_accounting``'s
convention); ``observations`` FedInfer releases of the same statistics compose.

References
----------
Seed thesis Sec. 6.3.4 (Fig. 6.7), Ch. 7 (FedInfer: noisy data blocks 7.15, Algorithm 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import (
    as_generator,
    check_finite_array,
    check_in_interval,
    check_integer,
    check_positive,
)
from privacy import accounting
from privacy.federated.esn_attack import EchoStateReservoir, ReservoirStatistics
from privacy.mechanisms import GaussianMechanism, NeighboringRelation

__all__ = [
    "PRIVACY_UNITS",
    "clip_input",
    "state_bounds",
    "statistics_sensitivity",
    "noise_for_snr",
    "privatize_statistics",
    "DefencePrivacy",
    "defence_privacy",
]

PRIVACY_UNITS = ("sequence", "step")


def clip_input(u: np.ndarray, input_bound: float) -> np.ndarray:
    """Clip the inputs to ``[-input_bound, input_bound]`` (what the sensitivity assumes)."""
    bound = check_positive("input_bound", input_bound)
    return np.clip(check_finite_array("u", u, ndim=1), -bound, bound)


def state_bounds(reservoir: EchoStateReservoir, *, steps: int, input_bound: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per-node bounds on ``|x_{t+1}|`` and ``|W x_t + W_in u_t|`` for ``t = 1..T-1``.

    Returns ``(b, p)``, both of shape (T-1, n): ``b[t-1]`` bounds ``|x_{t+1}|`` elementwise and
    ``p[t-1]`` the pre-activation at step ``t``, for every input with ``|u| <= input_bound``.
    """
    steps = check_integer("steps", steps, minimum=2)
    bound = check_positive("input_bound", input_bound)
    W_abs, W_in_abs, a = np.abs(reservoir.W), np.abs(reservoir.W_in), reservoir.leak
    b = np.zeros(reservoir.n_nodes)
    states, pre = [], []
    for _ in range(steps - 1):
        p = W_abs @ b + W_in_abs * bound
        b = (1.0 - a) * b + a * np.tanh(p)
        states.append(b)
        pre.append(p)
    return np.array(states), np.array(pre)


def _column_bounds(b: np.ndarray, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """``Z_t`` (bound on ||z_t||) and ``G_t`` (bound on ||g_t||) per column."""
    z2 = 1.0 + bound ** 2 + np.sum(b ** 2, axis=1)
    g2 = bound ** 2 * z2 + 0.5 * (z2 ** 2 + 1.0 + bound ** 4 + np.sum(b ** 4, axis=1)) - 1.0
    return np.sqrt(z2), np.sqrt(g2)


def statistics_sensitivity(reservoir: EchoStateReservoir, *, steps: int, input_bound: float,
                           unit: str = "sequence") -> float:
    """l2 diameter ``D`` of the released vector between neighbouring inputs (module docstring).

    Parameters
    ----------
    reservoir : EchoStateReservoir
    steps : int
        Input length ``T``.
    input_bound : float
        Clipping bound ``U`` on ``|u_t|``.
    unit : {"sequence", "step"}
        Privacy unit: the whole input series, or one time step's value.

    Returns
    -------
    float
        ``sup ||q(u) - q(u')||_2`` bound over admissible neighbours.

    Raises
    ------
    ParameterError
        Unknown unit or bad numbers.

    Examples
    --------
    >>> from privacy.federated.esn_attack import EchoStateReservoir
    >>> res = EchoStateReservoir.random(10, rng=0)
    >>> seq = statistics_sensitivity(res, steps=5, input_bound=1.0)
    >>> step = statistics_sensitivity(res, steps=5, input_bound=1.0, unit="step")
    >>> bool(0 < step <= seq)
    True
    """
    if unit not in PRIVACY_UNITS:
        raise ParameterError(f"unit must be one of {PRIVACY_UNITS}; got {unit!r}")
    bound = check_positive("input_bound", input_bound)
    b, p = state_bounds(reservoir, steps=steps, input_bound=bound)
    Z, G = _column_bounds(b, bound)
    if unit == "sequence":
        return float(2.0 * np.sum(G))
    a = reservoir.leak
    W_norm = float(np.linalg.norm(reservoir.W, 2))
    tanh_cap = 2.0 * np.linalg.norm(np.tanh(p), axis=1)     # per column: ||tanh p_t|| bound x2
    state_cap = 2.0 * np.linalg.norm(b, axis=1)
    worst = 0.0
    for s in range(steps):                                    # replaced input u_{s+1} (0-based s)
        total, d = 0.0, 0.0
        for t in range(steps - 1):                            # column t+1 (0-based t)
            if t == s:
                d = a * float(np.linalg.norm(np.minimum(2.0 * bound * np.abs(reservoir.W_in),
                                                        2.0 * np.tanh(p[t]))))
            elif t > s:
                d = (1.0 - a) * d + a * min(W_norm * d, tanh_cap[t])
            d = min(d, state_cap[t])
            du = 2.0 * bound if t == s else 0.0
            dy = 2.0 * bound if t + 1 == s else 0.0
            e = math.hypot(du, d)
            move = math.hypot(bound * e + dy * Z[t], 2.0 * Z[t] * e)
            total += min(move, 2.0 * G[t])
        worst = max(worst, total)
    return worst


def noise_for_snr(statistics: ReservoirStatistics, snr: float) -> float:
    """Noise standard deviation giving signal-to-noise *power* ratio ``snr`` on the release.

    ``sigma^2 = mean(v^2) / snr`` over the released vector ``v``; the seed's "1:4" is
    ``snr = 0.25``, i.e. ``sigma = 2 RMS(v)`` (an amplitude reading would be ``4 RMS``).
    Computed from the data, so for a DP statement ``sigma`` must then be fixed in advance
    (public), not recomputed per client.

    Examples
    --------
    >>> from privacy.federated.esn_attack import EchoStateReservoir, seed_input
    >>> stats = EchoStateReservoir.random(10, rng=0).statistics(seed_input(6))
    >>> v = stats.released_vector()
    >>> round(float(v @ v / v.size / noise_for_snr(stats, 0.25) ** 2), 6)
    0.25
    """
    snr = check_positive("snr", snr)
    v = statistics.released_vector()
    return float(math.sqrt(np.mean(v ** 2) / snr))


def privatize_statistics(statistics: ReservoirStatistics, sigma: float, *,
                         observations: int = 1,
                         rng: np.random.Generator | int | None = None) -> ReservoirStatistics:
    """FedInfer release: the mean of ``observations`` noisy copies of ``(A, B)`` (7.15).

    Each copy adds i.i.d. ``N(0, sigma^2)`` to every released number (``A`` and the upper
    triangle of ``B``, mirrored so that ``B`` stays symmetric); the server -- and an eavesdropper
    -- average them, which is what this returns.

    Examples
    --------
    >>> import numpy as np
    >>> from privacy.federated.esn_attack import EchoStateReservoir, seed_input
    >>> stats = EchoStateReservoir.random(10, rng=0).statistics(seed_input(6))
    >>> noisy = privatize_statistics(stats, 1.0, observations=4, rng=0)
    >>> bool(np.array_equal(noisy.B, noisy.B.T))
    True
    """
    sigma = check_positive("sigma", sigma)
    observations = check_integer("observations", observations, minimum=1)
    gen = as_generator(rng)
    size = statistics.A.size
    scale = sigma / math.sqrt(observations)
    upper = np.triu(gen.normal(0.0, scale, (size, size)))
    noise_B = upper + np.triu(upper, 1).T
    return ReservoirStatistics(statistics.A + gen.normal(0.0, scale, size),
                               statistics.B + noise_B)


@dataclass(frozen=True)
class DefencePrivacy:
    """(epsilon, delta) of the noisy statistics for one privacy unit.

    Attributes
    ----------
    epsilon, delta : float
        Upper bound from :func:`privacy.accounting.epsilon`.
    sigma : float
        Noise standard deviation per released number and observation.
    diameter : float
        Sensitivity bound ``D`` (l2) of the released vector.
    unit : str
        ``"sequence"`` or ``"step"``.
    observations : int
        Composed FedInfer releases.
    """

    epsilon: float
    delta: float
    sigma: float
    diameter: float
    unit: str
    observations: int


def defence_privacy(reservoir: EchoStateReservoir, sigma: float, *, steps: int,
                    input_bound: float, unit: str = "sequence", delta: float = 1e-5,
                    observations: int = 1) -> DefencePrivacy:
    """(epsilon, delta) given by Gaussian noise ``sigma`` on the client's ``(A, B)``.

    Gaussian mechanism with ``sensitivity = D / 2`` under ``REPLACE_ONE``, ``observations``
    compositions, composed by :func:`privacy.accounting.epsilon` (closed form for Gaussian
    releases without subsampling, so huge epsilons cost nothing).

    Examples
    --------
    >>> from privacy.federated.esn_attack import EchoStateReservoir
    >>> res = EchoStateReservoir.random(10, rng=0)
    >>> out = defence_privacy(res, 1e3, steps=5, input_bound=1.0)
    >>> bool(0 < out.epsilon < 1)
    True
    """
    sigma = check_positive("sigma", sigma)
    delta = check_in_interval("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    observations = check_integer("observations", observations, minimum=1)
    diameter = statistics_sensitivity(reservoir, steps=steps, input_bound=input_bound, unit=unit)
    eps = accounting.epsilon(GaussianMechanism(sigma=sigma, sensitivity=diameter / 2.0),
                             delta=delta, steps=observations,
                             neighboring=NeighboringRelation.REPLACE_ONE)
    return DefencePrivacy(eps, delta, sigma, diameter, unit, observations)
