"""Exact Jacobian of the output-error predictions (forward sensitivities, no finite differences).

One experiment's predicted outputs are ``y_k = C x_k + D u_k + c`` with ``x_{k+1} = A_d x_k +
v_k`` from ``x_0`` and the state input ``v_k = sum_i Gamma_0(p_i) b_i u_i[k + R - w_i] +
Gamma_1(p_i) b_i u_i[k + R - w_i - 1]`` (:mod:`dmdidc.output.refine`).  A parameter acting
through the dynamics or the state input (``A_c``, ``B_c``, the delays) changes the outputs by

    dy_k = sum_{t < k} C A_d^(k - 1 - t) s_t,    s_t = (dA_d) x_t + dv_t,

the response of the plant to ``s``: all of them at once, instead of one residual evaluation
per parameter.  With well-conditioned eigenvectors (the case of nearly every fit) the plant is
run mode by mode on the few signals ``s`` is made of (:func:`_modal_responses`); otherwise as
one FFT convolution with the impulse response ``C A_d^t`` (:func:`_responses`; about 3x
cheaper than running the recursion for every parameter at K = 4000, n = 3, and the modal
form about 4x cheaper again).
The others act directly: ``dy_k / dx_0 = C A_d^k``, ``dy_k / dC = x_k``, ``D``: ``u_k``, the
offset: 1.

Only ``n`` directions of ``A_c`` (of its ``n^2`` entries) are convolved: a change of state
basis leaves the outputs unchanged, so along the commutators ``GA - AG`` the Jacobian of
``A_c`` follows from the columns of ``C``, ``B_c`` and ``x_0`` (:func:`_reduction`; on
``benchmarks/bench_output.py`` fits became 1.3x faster (median; 1.5x in total), with every
order, delay and warning of both sweeps of ``benchmarks/bench_output_loud.py`` unchanged).

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
from scipy import fft, linalg, signal

from dmdidc.discretization import split_delay
from dmdidc.output.blocks import decaying_response, modes

__all__ = ["HoldSensitivities", "line_basis", "normal_equations", "prediction_jacobian",
           "trend_degree",
           "similarity_map"]


def trend_degree(trend: bool | int) -> int:
    """Columns of each experiment's trend: ``True`` (the line, ``detrend="linear"``) 2, an
    integer itself (1: the constant of ``detrend="constant"``; 0 or ``False``: none)."""
    return 2 if trend is True else int(trend)


def line_basis(length: int, degree: int = 2) -> np.ndarray:
    """Orthonormal basis (length, degree) of the constant and (``degree`` 2) the line over
    ``length`` samples (one column for a single sample)."""
    k = np.arange(length, dtype=float)
    basis = np.stack([np.ones(length), k - k.mean()], axis=1)[:, :min(length, degree)]
    return basis / np.linalg.norm(basis, axis=0)


class HoldSensitivities:
    """``A_d``, the hold blocks of every channel and their derivatives along ``A_c`` and ``r``.

    ``directions`` (k, n, n) are the changes of ``A_c`` differentiated along (default: every
    entry, ``E_ab`` at index ``a n + b``).

    Attributes
    ----------
    A_d : ndarray, shape (n, n)
    d_A_d : ndarray, shape (k, n, n)
        ``d A_d`` along each direction.
    steps : ndarray of int, shape (m,)
        ``w_i`` (``R - 1`` for a delay at the upper bound ``R T``, see module notes).
    gamma_0, gamma_1, shift : ndarray, shape (m, n, n)
        ``Gamma_0(p_i)``, ``Gamma_1(p_i)`` and ``e^{A_c (1 - p_i) T}`` (= ``-dGamma_0 / dr``).
    d_gamma_0, d_gamma_1 : ndarray, shape (m, k, n, n)
        Their derivatives along each direction.
    """

    def __init__(self, A_c: np.ndarray, dt: float, delays: np.ndarray, R: int,
                 directions: np.ndarray | None = None) -> None:
        n = A_c.shape[0]
        if directions is None:
            directions = np.eye(n * n).reshape(n * n, n, n)
        steps, fractions = split_delay(np.asarray(delays, dtype=float), dt)
        top = (steps >= R) & (R > 0)           # r = R T: the same prediction read from below
        steps, fractions = np.where(top, R - 1, steps), np.where(top, 1.0, fractions)
        spans = np.concatenate([[dt], (1.0 - fractions) * dt])
        M = np.zeros((2 * n, 2 * n))
        M[:n, :n], M[:n, n:] = A_c, np.eye(n)
        # [[M s, E s], [0, M s]] for every span s and every direction E (Fréchet trick).
        big = np.zeros((spans.size, len(directions), 4 * n, 4 * n))
        big[:, :, :2 * n, :2 * n] = big[:, :, 2 * n:, 2 * n:] = M * spans[:, None, None, None]
        big[:, :, :n, 2 * n:3 * n] = directions * spans[:, None, None, None]
        with np.errstate(all="ignore"):
            exps = linalg.expm(big)
        value = exps[:, 0, :n, :2 * n]                 # [e^{A s}, Gamma(s)]   (S, n, 2n)
        derivative = exps[:, :, :n, 2 * n:]   # its derivatives   (S, k, n, 2n)
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
    size = fft.next_fast_len(T + length, real=True)
    spectra = fft.rfft(z.T, size)                                           # (Q, F)
    # h one sample late (the input at t acts from t + 1): the outputs need no shift, nor copy
    late = np.zeros((ny * n, length + 1))
    late[:, 1:] = h[:length].reshape(length, ny * n).T
    response = fft.rfft(late, size).reshape(ny, n, -1)
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
    return fft.irfft(products, size)[..., :T]


#: Largest condition number of ``A_c``'s eigenvectors for which the plant is run mode by mode
#: (the residuals of :mod:`dmdidc.output.refine` and :func:`_modal_responses`): its outputs
#: then differ from the matrix recursion's by about this many roundings, far below any noise
#: (every verdict of ``benchmarks/bench_output_loud.py``'s sweeps is unchanged).
MODAL_COND = 1e4


def _pair_filtered(pole: complex, signals: np.ndarray) -> list[np.ndarray]:
    """Real and imaginary parts of ``F_k = pole F_{k-1} + x_{k-1}`` (``F_0 = 0``) for real
    ``signals`` (rows), from one real second-order recursion of the pole and its conjugate:
    ``F = q (1 - conj(pole) q) / ((1 - pole q)(1 - conj(pole) q)) x``, so with ``g`` the
    response to ``1 / ((1 - pole q)(1 - conj(pole) q))``, ``F_k = g_{k-1} - conj(pole)
    g_{k-2}``.  Real arithmetic: 2.4x cheaper than the complex recursion (0.12 against 0.30 ms
    for 7 signals of 4000 samples); its rounding, relative ``eps / (1 - |pole|)`` of the
    largest response, is far below what a Jacobian needs."""
    g = signal.lfilter([1.0], [1.0, -2.0 * pole.real, abs(pole) ** 2], signals, axis=1)
    real, imag = np.zeros_like(g), np.zeros_like(g)
    real[:, 1:] = g[:, :-1]
    real[:, 2:] -= pole.real * g[:, :-2]
    imag[:, 2:] = pole.imag * g[:, :-2]
    return [real, imag]


def _modal_responses(found: tuple[np.ndarray, np.ndarray, np.ndarray], dt: float,
                     C: np.ndarray, z: np.ndarray, M: np.ndarray) -> np.ndarray:
    """:func:`_responses` mode by mode, for ``A_c = V diag(lambda) V^-1`` (``found``,
    :func:`~dmdidc.output.blocks.modes`): ``C A_d^j = (C V) diag(mu^j) V^-1`` with
    ``mu = e^{lambda T}``, so each output is ``sum_{mode, q} (C V)[a, mode] (V^-1 M[q])[mode, p]
    F[mode, q]`` with ``F[mode, q]`` the signal ``z[:, q]`` filtered by that mode alone
    (``F_k = mu F_{k-1} + z_{k-1}``).  That is ``n Q`` scalar recursions and one real product
    of ``(ny P) x (n Q)`` weights with them, instead of transforms of ``z``, ``h`` and the
    ``ny P`` outputs (0.54 against 2.07 ms at K = 4000, n = 3, m = 2 for a response that
    decays over 300 samples, 0.83 against 3.19 ms at n = 4; rounding about ``cond(V) eps`` of
    the largest response, far below what a Jacobian needs).
    """
    values, vectors, inverse = found
    # a real A_c's complex modes come in exact conjugate pairs: each pair is filtered once and
    # counted twice in the real part (as the states of refine._simulator)
    upper = values.imag >= 0
    real = values[upper].imag == 0
    poles = np.exp(values[upper] * dt)
    ny, P = C.shape[0], M.shape[2]
    outside = (C @ vectors[:, upper]) * np.where(real, 1.0, 2.0)               # (ny, u)
    inside = np.einsum("jr,qrp->jqp", inverse[upper], M)                       # (u, Q, P)
    weights = outside[:, None, :, None] * inside.transpose(2, 0, 1)[None]      # (ny, P, u, Q)
    rows, columns = [], []
    for j, (pole, alone) in enumerate(zip(poles, real, strict=True)):
        if alone:
            rows.append(signal.lfilter([0.0, 1.0], [1.0, -pole.real], z.T, axis=1))
            columns.append(weights[:, :, j].real)
        else:
            rows += _pair_filtered(pole, z.T)
            columns += [weights[:, :, j].real, -weights[:, :, j].imag]
    # Re(w F) = Re(w) Re(F) - Im(w) Im(F): one real product for every mode
    stacked = np.concatenate(columns, axis=-1).reshape(ny * P, -1)
    return (stacked @ np.concatenate(rows)).reshape(ny, P, -1)


def _kron(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.kron`` of two matrices, the same products (about 10x cheaper for these small
    ones: one broadcast instead of ``np.kron``'s general n-d bookkeeping, twice per Jacobian)."""
    return (a[:, None, :, None] * b[None, :, None, :]).reshape(a.shape[0] * b.shape[0],
                                                              a.shape[1] * b.shape[1])


def similarity_map(A_c: np.ndarray, C: np.ndarray, B_c: np.ndarray, x0: np.ndarray,
                   layout: dict) -> np.ndarray:
    """The parameter change (size, n^2) of a change of state basis ``x -> (I + eps G) x``,
    column ``a n + b`` for ``G = E_ab``: ``(GA - AG, -CG, GB, G x0)``.  The outputs do not
    change along it (the parametrization's null directions).

    Examples
    --------
    >>> from dmdidc.output.refine import _layout
    >>> A_c, C, B_c, x0 = -np.eye(2), np.ones((1, 2)), np.ones((2, 1)), np.zeros((1, 2))
    >>> similarity_map(A_c, C, B_c, x0, _layout(2, 1, 1, 1, False, False)).shape
    (11, 4)
    """
    n, E = A_c.shape[0], x0.shape[0]
    eye = np.eye(n)
    directions = np.zeros((layout["size"], n * n))
    # row-major vec: vec(G A) = (I kron A^T) vec(G), vec(A G) = (A kron I) vec(G)
    directions[layout["A_c"]] = _kron(eye, A_c.T) - _kron(A_c, eye)
    directions[layout["C"]] = -_kron(C, eye)
    directions[layout["B_c"]] = _kron(eye, B_c.T)
    # (x0 G^T)[e, j] = sum_l x0[e, l] G[j, l]
    directions[layout["x0"]] = np.einsum("jJ,el->ejJl", eye, x0).reshape(E * n, n * n)
    return directions


#: Commutator singular values below this fraction of the largest mark the directions of
#: ``A_c`` that are differentiated directly (see :func:`_reduction`); the others are recovered
#: with their rounding amplified at most ``1 / _DIRECT`` times.
_DIRECT = 1e-2
#: ... and those below this fraction of ``||A_c||``: the commutator's entries carry a rounding
#: of about ``eps ||A_c||``, so a nearly scalar ``A_c`` (every singular value a rounding) has
#: no range to recover from (the recovered columns' relative error is at most ``eps /
#: _ROUNDING``).
_ROUNDING = 1e-8


def _reduction(A_c: np.ndarray, C: np.ndarray, B_c: np.ndarray, x0: np.ndarray, layout: dict
               ) -> tuple[np.ndarray, dict, np.ndarray]:
    """The few directions of ``A_c`` to differentiate, and how the full Jacobian follows.

    A change of basis leaves the outputs unchanged (:func:`similarity_map`), so along
    ``ad(G) = GA - AG`` the Jacobian of ``A_c`` is minus that of ``(-CG, GB, G x0)``, columns
    that are formed anyway (the states, the responses to ``B_c``, ``C A_d^k``).  The commutator
    ``ad`` has rank ``n^2 - n`` for distinct eigenvalues: only the ``n`` directions outside its
    range (and any it maps to nearly nothing, close modes) need sensitivity convolutions,
    instead of all ``n^2`` (the dearest part of a Jacobian).  With ``ad = U S V^T``,
    ``J_A = J_A W W^T - J_other D V_r S_r^-1 U_r^T`` (``W``: the left singular vectors of the
    small singular values, ``r`` the others, ``D`` the non-``A_c`` rows of the map).

    Returns ``directions`` (k, n, n), the layout of the reduced parameters (``A_c`` along
    ``directions`` first, then the rest as in ``layout``), and ``expand`` (reduced size, size):
    ``J = J_reduced @ expand``.
    """
    n = A_c.shape[0]
    nn = n * n
    similarity = similarity_map(A_c, C, B_c, x0, layout)
    if not np.isfinite(similarity).all():         # a wild trial: every direction directly
        U, S, Vt = np.eye(nn), np.zeros(nn), np.eye(nn)
    else:
        U, S, Vt = np.linalg.svd(similarity[layout["A_c"]])
    floor = max(_DIRECT * S.max(initial=0.0), _ROUNDING * np.linalg.norm(A_c),
                np.finfo(float).tiny)
    direct = S <= floor
    k = int(direct.sum())
    shift = nn - k
    reduced = {name: slice(0, k) if name == "A_c" else slice(part.start - shift,
                                                               part.stop - shift)
               for name, part in layout.items() if name != "size"}
    reduced["size"] = layout["size"] - shift
    expand = np.zeros((reduced["size"], layout["size"]))
    expand[:k, layout["A_c"]] = U[:, direct].T
    rest = np.arange(nn, layout["size"])
    expand[rest - shift, rest] = 1.0
    kept = ~direct
    expand[k:, layout["A_c"]] = -(similarity[nn:] @ (Vt[kept].T / S[kept])) @ U[:, kept].T
    return U[:, direct].T.reshape(k, n, n), reduced, expand


def _sensitivities(experiments: list, dt: float, R: int, *, A_c: np.ndarray, C: np.ndarray,
                   B_c: np.ndarray, delays: np.ndarray, states: list[np.ndarray], layout: dict,
                   directions: np.ndarray):
    """Per experiment, the transposed reduced Jacobian of each output: a list of ``ny`` arrays
    (size, T), ``d (predicted output a) / d theta`` at every sample (module notes), ``A_c``
    along ``directions`` (k, n, n) only, the rest as in ``layout`` (:func:`_reduction`)."""
    n, m = A_c.shape[0], B_c.shape[1]
    holds = HoldSensitivities(A_c, dt, delays, R, directions)
    found = modes(A_c, MODAL_COND)
    # d(Gamma_j b_i) along each direction: (m, k, n)
    d_in_0 = np.einsum("idrc,ci->idr", holds.d_gamma_0, B_c)
    d_in_1 = np.einsum("idrc,ci->idr", holds.d_gamma_1, B_c)
    shifted_b = np.einsum("irc,ci->ir", holds.shift, B_c)
    nn, nm = len(directions), n * m
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
    for (_, U), X in zip(experiments, states, strict=True):
        T = X.shape[1]
        z = np.empty((T, n + 2 * m))
        z[:, :n] = X.T
        for i, w in enumerate(holds.steps):
            z[:, n + i] = _lagged(U[i:i + 1], w, R, T)[0]
            z[:, n + m + i] = _lagged(U[i:i + 1], w + 1, R, T)[0]
        h, length = decaying_response(holds.A_d, C, T)                      # (T, ny, n)
        response = (_responses(h, length, z, M) if found is None
                    else _modal_responses(found, dt, C, z, M))
        yield response, h, length, X, U[:, R:R + T]


def _rows(layout: dict, e: int, ny: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per output ``a``, the parameter indices of the rows ``[responses; C A_d^k]`` and of
    the rows ``[x_k; u_k (D); 1 (offset)]`` of its transposed Jacobian in experiment ``e``
    (every other row is zero)."""
    n = (layout["C"].stop - layout["C"].start) // ny
    m = (layout["delays"].stop - layout["delays"].start)
    x0 = np.arange(layout["x0"].start + e * n, layout["x0"].start + (e + 1) * n)
    # (np.concatenate, not np.r_: the same indices without its parsing, per Jacobian)
    driven = np.concatenate([np.arange(layout["A_c"].start, layout["A_c"].stop),
                             np.arange(layout["B_c"].start, layout["delays"].stop), x0])
    rows = []
    for a in range(ny):
        shared = np.arange(layout["C"].start + a * n, layout["C"].start + (a + 1) * n)
        if layout["D"].stop > layout["D"].start:
            shared = np.concatenate([shared, np.arange(layout["D"].start + a * m,
                                                       layout["D"].start + (a + 1) * m)])
        if layout["offset"].stop > layout["offset"].start:
            shared = np.append(shared, layout["offset"].start + a)
        rows.append((driven, shared))
    return rows


def _shared(layout: dict, X: np.ndarray, U: np.ndarray) -> np.ndarray:
    """The rows ``[x_k; u_k (D); 1 (offset)]`` every output's Jacobian shares."""
    parts = [X]
    if layout["D"].stop > layout["D"].start:
        parts.append(U)
    if layout["offset"].stop > layout["offset"].start:
        parts.append(np.ones((1, X.shape[1])))
    return np.vstack(parts)


def _reduced(A_c: np.ndarray, C: np.ndarray, B_c: np.ndarray, states: list[np.ndarray],
             layout: dict) -> tuple[dict, np.ndarray, np.ndarray]:
    """``(reduced layout, expand, directions)`` of :func:`_reduction` at these parameters
    (each experiment's initial state is its first state)."""
    x0 = np.stack([X[:, 0] for X in states])
    directions, reduced, expand = _reduction(A_c, C, B_c, x0, layout)
    return reduced, expand, directions


def prediction_jacobian(experiments: list, dt: float, R: int, *, A_c: np.ndarray,
                        C: np.ndarray, B_c: np.ndarray, delays: np.ndarray,
                        states: list[np.ndarray], layout: dict) -> np.ndarray:
    """``d vec(predicted outputs) / d theta`` (rows ``k ny + a`` per experiment, stacked).

    ``states[e]`` is experiment ``e``'s state trajectory ``x_k`` (n, T) at the parameters;
    ``layout`` the parameter slices of :func:`dmdidc.output.refine.refine`.
    """
    reduced, expand, directions = _reduced(A_c, C, B_c, states, layout)
    ny = C.shape[0]
    blocks = []
    for e, (response, h, _, X, U) in enumerate(_sensitivities(
            experiments, dt, R, A_c=A_c, C=C, B_c=B_c, delays=delays, states=states,
            layout=reduced, directions=directions)):
        shared = _shared(reduced, X, U)
        J = np.zeros((X.shape[1], ny, reduced["size"]))
        for a, (driven, common) in enumerate(_rows(reduced, e, ny)):
            J[:, a, driven] = np.vstack([response[a], h[:, a].T]).T
            J[:, a, common] = shared.T
        blocks.append(J.reshape(-1, reduced["size"]))                       # (T ny, size)
    return (blocks[0] if len(blocks) == 1 else np.vstack(blocks)) @ expand


def normal_equations(experiments: list, dt: float, R: int, *, A_c: np.ndarray, C: np.ndarray,
                     B_c: np.ndarray, delays: np.ndarray, states: list[np.ndarray],
                     layout: dict, residuals: list[np.ndarray], lines: bool | int = False
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(J^T J, J^T r)`` of :func:`prediction_jacobian` ``J`` and the residuals ``r``
    (``residuals[e]`` (T, ny)), accumulated output by output: ``J`` itself (samples x
    parameters) is never formed, nor transposed into sample-major rows; they are accumulated
    for the reduced parameters and expanded (:func:`_reduction`).  ``lines``: each
    experiment's rows are projected off its constant and line first (the trends concentrated
    out, :mod:`dmdidc.output.refine`; ``lines`` 1: the constant only).
    """
    reduced, expand, directions = _reduced(A_c, C, B_c, states, layout)
    ny = C.shape[0]
    normal = np.zeros((reduced["size"], reduced["size"]))
    gradient = np.zeros(reduced["size"])
    for e, ((response, h, _, X, U), r) in enumerate(zip(_sensitivities(
            experiments, dt, R, A_c=A_c, C=C, B_c=B_c, delays=delays, states=states,
            layout=reduced, directions=directions), residuals, strict=True)):
        # the Jacobian's non-zero rows only, [responses; C A_d^k; x_k; u_k; 1], stacked so
        # that each output's Gram is one product (the shared rows are written once)
        shared = _shared(reduced, X, U)
        P, n = response.shape[1], h.shape[2]
        rows = np.empty((P + n + shared.shape[0], X.shape[1]))
        rows[P + n:] = shared
        Q = line_basis(X.shape[1], trend_degree(lines)) if lines else None
        for a, (driven, common) in enumerate(_rows(reduced, e, ny)):
            rows[:P], rows[P:P + n] = response[a], h[:, a].T
            # projected rows: the Jacobian of the residuals whose lines were concentrated out
            block = rows if Q is None else rows - (rows @ Q) @ Q.T
            at = np.concatenate([driven, common])
            normal[np.ix_(at, at)] += block @ block.T
            gradient[at] += block @ r[:, a]
    return expand.T @ normal @ expand, expand.T @ gradient
