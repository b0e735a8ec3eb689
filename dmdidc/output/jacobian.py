"""Exact Jacobian of the output-error predictions (forward sensitivities, no finite differences).

One experiment's predicted outputs are ``y_k = C x_k + D u_k + c`` with ``x_{k+1} = A_d x_k +
v_k`` from ``x_0`` and the state input ``v_k = sum_i Gamma_0(p_i) b_i u_i[k + R - w_i] +
Gamma_1(p_i) b_i u_i[k + R - w_i - 1]`` (:mod:`dmdidc.output.refine`).  A parameter acting
through the dynamics or the state input (``A_c``, ``B_c``, the delays) changes the outputs by

    dy_k = sum_{t < k} C A_d^(k - 1 - t) s_t,    s_t = (dA_d) x_t + dv_t,

the response of the plant to ``s``: all of them at once, as one FFT convolution with the
impulse response ``C A_d^t`` (:func:`_responses`; about 3x cheaper than running the recursion
for every parameter at K = 4000, n = 3), instead of one residual evaluation per parameter.
The others act directly: ``dy_k / dx_0 = C A_d^k``, ``dy_k / dC = x_k``, ``D``: ``u_k``, the
offset: 1.

Derivatives of the matrix functions:

* ``A_c``: ``e^{M s} = [[e^{A_c s}, Gamma(s)], [0, I]]`` for ``M = [[A_c, I], [0, 0]]``, and its
  Fréchet derivative along ``[[E, 0], [0, 0]]`` is the upper right block of the exponential of
  ``[[M s, E' s], [0, M s]]`` (Higham 2008, Thm. 3.6): one batched ``expm`` for every entry of
  ``A_c`` and every time span (``T`` and each ``(1 - p_i) T``).
* a delay ``r = (w + p) T``: ``Gamma_0 = Gamma((1 - p) T)`` and ``Gamma_1 = Gamma(T) - Gamma_0``
  give ``dGamma_0 / dr = -e^{A_c (1 - p) T} = -dGamma_1 / dr`` within a period.  At a period
  boundary this is the derivative from above, as the split restarts there; the upper bound
  ``R T`` is read from below (``w = R - 1``, ``p = 1``: the same prediction, and the only side
  the bounds allow).
"""

from __future__ import annotations

import numpy as np
from scipy import fft, linalg

from dmdidc.discretization import split_delay
from dmdidc.output.blocks import decaying_response

__all__ = ["HoldSensitivities", "normal_equations", "prediction_jacobian"]


class HoldSensitivities:
    """``A_d``, the hold blocks of every channel and their derivatives along ``A_c`` and ``r``.

    Attributes
    ----------
    A_d : ndarray, shape (n, n)
    d_A_d : ndarray, shape (n*n, n, n)
        ``d A_d / d A_c[a, b]`` at index ``a n + b``.
    steps : ndarray of int, shape (m,)
        ``w_i`` (``R - 1`` for a delay at the upper bound ``R T``, see module notes).
    gamma_0, gamma_1, shift : ndarray, shape (m, n, n)
        ``Gamma_0(p_i)``, ``Gamma_1(p_i)`` and ``e^{A_c (1 - p_i) T}`` (= ``-dGamma_0 / dr``).
    d_gamma_0, d_gamma_1 : ndarray, shape (m, n*n, n, n)
        Their derivatives along ``A_c[a, b]``.
    """

    def __init__(self, A_c: np.ndarray, dt: float, delays: np.ndarray, R: int) -> None:
        n = A_c.shape[0]
        steps, fractions = split_delay(np.asarray(delays, dtype=float), dt)
        top = (steps >= R) & (R > 0)           # r = R T: the same prediction read from below
        steps, fractions = np.where(top, R - 1, steps), np.where(top, 1.0, fractions)
        spans = np.concatenate([[dt], (1.0 - fractions) * dt])
        M = np.zeros((2 * n, 2 * n))
        M[:n, :n], M[:n, n:] = A_c, np.eye(n)
        # [[M s, E_ab s], [0, M s]] for every span s and every direction E_ab (Fréchet trick).
        big = np.zeros((spans.size, n * n, 4 * n, 4 * n))
        big[:, :, :2 * n, :2 * n] = big[:, :, 2 * n:, 2 * n:] = M * spans[:, None, None, None]
        rows, cols = np.divmod(np.arange(n * n), n)
        big[:, np.arange(n * n), rows, 2 * n + cols] = spans[:, None]
        with np.errstate(all="ignore"):
            exps = linalg.expm(big)
        value = exps[:, 0, :n, :2 * n]                 # [e^{A s}, Gamma(s)]   (S, n, 2n)
        derivative = exps[:, :, :n, 2 * n:]   # its derivatives   (S, n*n, n, 2n)
        self.A_d, self.d_A_d = value[0, :, :n], derivative[0, :, :, :n]
        period, d_period = value[0, :, n:], derivative[0, :, :, n:]
        self.steps = steps.astype(int)
        self.shift = value[1:, :, :n]
        self.gamma_0 = value[1:, :, n:]
        self.gamma_1 = period - self.gamma_0
        self.d_gamma_0 = derivative[1:, :, :, n:]
        self.d_gamma_1 = d_period - self.d_gamma_0


def _lagged(U: np.ndarray, lag: int, R: int, T: int) -> np.ndarray:
    """``u[k + R - lag]`` for ``k < T`` (zero when ``lag > R``: that input is not modelled)."""
    if lag > R:
        return np.zeros((U.shape[0], T))
    return U[:, R - lag:R - lag + T]


#: Frequencies per block of :func:`_responses`.
_FREQUENCIES = 4096


def _responses(h: np.ndarray, length: int, z: np.ndarray, M: np.ndarray) -> np.ndarray:
    """Outputs ``sum_{t < k} h[k - 1 - t] s_t`` (ny, P, T) of the sensitivity inputs
    ``s_t = sum_q z_t[q] M[q]`` (``h`` (T, ny, n), zero from sample ``length`` on (a decayed
    response: shorter transforms), ``z`` (T, Q), ``M`` (Q, n, P)).

    One FFT convolution: the transforms of the ``Q`` signals ``z`` (not of the ``n P`` inputs
    ``s``: the map is linear, so it is applied per frequency) times those of ``h``; only the
    ``ny P`` outputs go back.  A few times cheaper than the recursion for these sizes, and the
    rounding (relative ``eps log T`` of the largest response) is far below what a Jacobian
    needs (the residuals themselves are simulated).
    """
    T, Q = z.shape
    ny, n, P = h.shape[1], h.shape[2], M.shape[2]
    size = fft.next_fast_len(T + length - 1, real=True)
    spectra = fft.rfft(z.T, size)                                           # (Q, F)
    response = fft.rfft(h[:length].reshape(length, ny * n).T, size).reshape(ny, n, -1)
    # S[r, p] = sum_q M[q, r, p] spectra[q]: a real matrix times the spectra read as
    # interleaved real and imaginary parts; then products[a, p] = sum_r response[a, r] S[r, p],
    # frequency by frequency.  A block of frequencies at a time: S stays in cache, and the
    # memory does not grow with the data.
    weights = np.ascontiguousarray(M.transpose(1, 2, 0)).reshape(n * P, Q)   # [r P + p, q]
    F = spectra.shape[1]
    products = np.zeros((ny, P, F), dtype=complex)
    for a in range(0, F, _FREQUENCIES):
        b = min(a + _FREQUENCIES, F)
        block = np.ascontiguousarray(spectra[:, a:b]).view(float)               # (Q, 2 f)
        S = (weights @ block).view(complex).reshape(n, P, b - a)
        for r in range(n):
            products[..., a:b] += response[:, r, None, a:b] * S[r]
    out = np.zeros((ny, P, T))
    out[..., 1:] = fft.irfft(products, size)[..., :T - 1]     # the input at t acts from t + 1
    return out


def _sensitivities(experiments: list, dt: float, R: int, *, A_c: np.ndarray, C: np.ndarray,
                   B_c: np.ndarray, delays: np.ndarray, states: list[np.ndarray], layout: dict):
    """Per experiment, the transposed Jacobian of each output: a list of ``ny`` arrays
    (size, T), ``d (predicted output a) / d theta`` at every sample (module notes)."""
    n, ny, m = A_c.shape[0], C.shape[0], B_c.shape[1]
    holds = HoldSensitivities(A_c, dt, delays, R)
    # d(Gamma_j b_i) / dA_c[a, b]: (m, n*n, n)
    d_in_0 = np.einsum("idrc,ci->idr", holds.d_gamma_0, B_c)
    d_in_1 = np.einsum("idrc,ci->idr", holds.d_gamma_1, B_c)
    shifted_b = np.einsum("irc,ci->ir", holds.shift, B_c)
    nn, nm = n * n, n * m
    P = nn + nm + m
    # s_t = sum_q z_t[q] M[q] with z_t = [x_t; u_0(t); u_1(t)]: every sensitivity input of
    # A_c, B_c (index c m + i) and the delays, (T, n, P), in one product.
    M = np.zeros((n + 2 * m, n, P))
    M[:n, :, :nn] = holds.d_A_d.transpose(2, 1, 0)
    M[n:n + m, :, :nn] = d_in_0.transpose(0, 2, 1)
    M[n + m:, :, :nn] = d_in_1.transpose(0, 2, 1)
    channels = np.arange(m)
    on_b = M[:, :, nn:nn + nm].reshape(n + 2 * m, n, n, m)       # [q, r, c, i]
    on_b[n + channels, :, :, channels] = holds.gamma_0
    on_b[n + m + channels, :, :, channels] = holds.gamma_1
    M[n + channels, :, nn + nm + channels] = -shifted_b
    M[n + m + channels, :, nn + nm + channels] = shifted_b
    for e, ((_, U), X) in enumerate(zip(experiments, states, strict=True)):
        T = X.shape[1]
        z = np.empty((T, n + 2 * m))
        z[:, :n] = X.T
        for i, w in enumerate(holds.steps):
            z[:, n + i] = _lagged(U[i:i + 1], w, R, T)[0]
            z[:, n + m + i] = _lagged(U[i:i + 1], w + 1, R, T)[0]
        h, length = decaying_response(holds.A_d, C, T)                      # (T, ny, n)
        response = _responses(h, length, z, M)                              # (ny, P, T)
        rows = []
        for a in range(ny):
            G = np.zeros((layout["size"], T))
            # A_c, then B_c and the delays (adjacent in the layout)
            G[layout["A_c"]] = response[a, :nn]
            G[layout["B_c"].start:layout["delays"].stop] = response[a, nn:]
            G[layout["x0"].start + e * n:layout["x0"].start + (e + 1) * n] = h[:, a].T
            G[layout["C"].start + a * n:layout["C"].start + (a + 1) * n] = X
            if layout["D"].stop > layout["D"].start:
                G[layout["D"].start + a * m:layout["D"].start + (a + 1) * m] = U[:, R:R + T]
            if layout["offset"].stop > layout["offset"].start:
                G[layout["offset"].start + a] = 1.0
            rows.append(G)
        yield rows


def prediction_jacobian(experiments: list, dt: float, R: int, *, A_c: np.ndarray,
                        C: np.ndarray, B_c: np.ndarray, delays: np.ndarray,
                        states: list[np.ndarray], layout: dict) -> np.ndarray:
    """``d vec(predicted outputs) / d theta`` (rows ``k ny + a`` per experiment, stacked).

    ``states[e]`` is experiment ``e``'s state trajectory ``x_k`` (n, T) at the parameters;
    ``layout`` the parameter slices of :func:`dmdidc.output.refine.refine`.
    """
    blocks = [np.stack(rows).transpose(2, 0, 1).reshape(-1, layout["size"])      # (T ny, size)
              for rows in _sensitivities(experiments, dt, R, A_c=A_c, C=C, B_c=B_c,
                                         delays=delays, states=states, layout=layout)]
    return blocks[0] if len(blocks) == 1 else np.vstack(blocks)


def normal_equations(experiments: list, dt: float, R: int, *, A_c: np.ndarray, C: np.ndarray,
                     B_c: np.ndarray, delays: np.ndarray, states: list[np.ndarray],
                     layout: dict, residuals: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(J^T J, J^T r)`` of :func:`prediction_jacobian` ``J`` and the residuals ``r``
    (``residuals[e]`` (T, ny)), accumulated output by output: ``J`` itself (samples x
    parameters) is never formed, nor transposed into sample-major rows.
    """
    normal = np.zeros((layout["size"], layout["size"]))
    gradient = np.zeros(layout["size"])
    for rows, r in zip(_sensitivities(experiments, dt, R, A_c=A_c, C=C, B_c=B_c,
                                      delays=delays, states=states, layout=layout),
                       residuals, strict=True):
        for a, G in enumerate(rows):
            normal += G @ G.T
            gradient += G @ r[:, a]
    return normal, gradient
