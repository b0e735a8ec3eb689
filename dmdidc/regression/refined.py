"""Refined instrumental variables: instruments simulated from a first-stage model.

**Why.**  Instrumental variables need instruments correlated with the regressors and independent
of the equation error (:mod:`dmdidc.regression.instrumental`).  The inputs lagged beyond the bound,
``u_{k-R-1} ..``, qualify in open loop but reach ``x_k`` only through ``A_d^{R+1-w}``: for fast
plants and a generous ``R`` they are *weak*, and IV's error then falls slowly and erratically
with the data.  The best instrument for the state regressor ``x_k`` is its noise-free part
(Soderstrom and Stoica 1983, the "optimal" IV; Young's refined IV): the response ``x^_k`` of the
plant to the recorded excitation alone.  It is unknown, but a first-stage model simulates it:

    x^_{k+1} = A^_d x^_k + sum_j B^^(j) d_{k-j},     x^_0 = x^_rest,

started where the model rests under the mean excitation (``x^_rest = A^_d x^_rest + sum_j
B^^(j) mean(d)``: the state an experiment around an operating point starts near), and driven
by the excitation ``d``: the inputs themselves in open loop, or, in closed loop, the part
of the inputs that the known reference (dither) ``r`` explains, ``d_k = sum_l F_l r_{k-l}``
(least squares over lags ``0 .. L``; Van den Hof's two-stage method).  ``x^`` is a function of
``d`` only, so it is independent of every noise (measurement, process, coloured or not) whenever
``d`` is, and it is as strongly correlated with ``x_k`` as the excitation makes ``x_k``.  The
instruments ``z_k = [x^_k .. x^_{k-R}; d_k .. d_{k-R}]`` then give a consistent estimate
whatever the accuracy of the first-stage model; each refinement (a new simulation from the new
model) makes them closer to optimal.  An unstable first-stage model is simulated with its
unstable eigenvalues reflected into the unit circle (``lambda -> 1 / conj(lambda)``, which keeps
the modes' frequencies): the instruments stay bounded and valid.

The simulation is an ``O(n (n + m R) K)`` recursion in matrix products, the delayed forcing
read from windows of the inputs (:func:`~dmdidc.regression.propagation.delayed_response`); a
model to stabilize runs as the real recursion of the real and imaginary parts of its reflected
complex Schur form (``2 n`` states).

References
----------
T. Soderstrom and P. Stoica, *Instrumental variable methods for system identification*,
Springer (1983); P. C. Young, *Recursive Estimation and Time-Series Analysis*, 2nd ed.,
Springer (2011), ch. 7; P. M. J. Van den Hof and R. J. P. Schrama, "An indirect method for
transfer function estimation from closed loop data", Automatica 29 (1993) 1523-1527.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from scipy import linalg

from dmdidc.errors import NoSteadyStateError
from dmdidc.model import steady_state
from dmdidc.regression.propagation import delayed_response, propagate
from dmdidc.regression.solution import lagged_inputs

__all__ = ["simulate_forced", "simulated_states", "simulated_recursions", "SimulatedSignals",
           "reference_projection", "model_instruments", "instrument_rows", "REFERENCE_LAGS",
           "centred_references"]

#: Lags ``0 .. L`` of the reference in the projection of the inputs on it (closed loop).
REFERENCE_LAGS = 20


def _recursion_matrix(A: np.ndarray) -> np.ndarray:
    """The real recursion that simulates the stabilized ``A`` in its first ``n`` states.

    ``A`` itself when no eigenvalue is outside the unit circle.  Otherwise the complex Schur
    form ``A = Q T Q^H`` gets the reflected diagonal, ``M = Q T' Q^H``: ``M`` is complex (the
    Schur vectors of a non-normal ``A`` are not conjugate pairs) and the states are ``Re(x)``
    of ``x_{k+1} = M x_k + s_k``, i.e. the real recursion of ``[Re x; Im x]`` with the matrix
    ``[[Re M, -Im M], [Im M, Re M]]`` (``2 n`` states, real products).
    """
    if np.max(np.abs(np.linalg.eigvals(A)), initial=0.0) < 1.0:
        return A
    T, Q = linalg.schur(A, output="complex")
    diagonal = np.diag(T).copy()
    outside = np.abs(diagonal) >= 1.0
    diagonal[outside] = 1.0 / np.conj(diagonal[outside])
    M = Q @ (T - np.diag(np.diag(T)) + np.diag(diagonal)) @ Q.conj().T
    return np.block([[M.real, -M.imag], [M.imag, M.real]])


def simulate_forced(A: np.ndarray, forcing: np.ndarray, *, stabilize: bool = False
                    ) -> np.ndarray:
    """``x_{k+1} = A x_k + forcing[:, k]`` from ``x_0 = 0``; returns ``x_0 .. x_K``.

    Parameters
    ----------
    A : ndarray, shape (n, n)
    forcing : ndarray, shape (n, K)
    stabilize : bool, default False
        Reflect eigenvalues outside the unit circle to ``1 / conj(lambda)``.

    Returns
    -------
    ndarray, shape (n, K + 1)
    """
    n, K = forcing.shape
    M = _recursion_matrix(A) if stabilize else A
    inputs = np.zeros((K + 1, M.shape[0], 1))             # the imaginary part is not driven
    inputs[:K, :n, 0] = forcing.T
    return propagate(M, inputs)[:, :n, 0].T


def _resting_state(M: np.ndarray, B_blocks: np.ndarray, mean: np.ndarray) -> np.ndarray | None:
    """``xi`` with ``xi = M xi + [sum_j B^(j) mean; 0]``, or ``None`` (a zero mean, or no
    resting state: an eigenvalue of the first-stage model at 1, an integrator, whose record may
    start anywhere as its states drift with the mean input; the simulation starts at zero)."""
    rests, resting = _resting_states(M, B_blocks, mean[None, :])
    return rests[0] if resting[0] else None


def _resting_states(M: np.ndarray, B_blocks: np.ndarray, means: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_resting_state` of every row of ``means`` (T, m), one solve: ``(rests (T, q),
    resting (T,) bool)``, the rows without a resting state zero."""
    forcing = np.zeros((means.shape[0], M.shape[0]))
    forcing[:, :B_blocks.shape[1]] = means @ B_blocks.sum(axis=0).T
    resting = forcing.any(axis=1)
    rests = np.zeros_like(forcing)
    if resting.any():
        try:
            rests[resting] = steady_state(M, forcing[resting].T).T
        except NoSteadyStateError:
            resting[:] = False
    return rests, resting


def _from_rest(M: np.ndarray, B_blocks: np.ndarray, drive: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """The drive's deviations from its mean and the resting state under the mean (``None``:
    simulate the drive itself from zero).

    Why not from zero: data in absolute units (inputs around an operating point, their mean
    several standard deviations) start near the operating point.  From zero, the instruments
    carry a transient of the operating point's size, as long as the slowest mode, that the
    measured states do not have: it swamped their correlation with the regressors (first-stage
    F 2.7e4 -> 26, eigenvalue errors 2 % -> 18-24 % on one plant for an input mean of 4.5
    standard deviations).  From rest, with the mean also before the record, the instruments are
    those of the deviations plus a constant, whatever the operating point; any function of the
    excitation is a valid instrument."""
    mean = drive.mean(axis=1) if drive.shape[1] else np.zeros(drive.shape[0])
    rest = _resting_state(M, B_blocks, mean)
    return (drive, None) if rest is None else (drive - mean[:, None], rest)


def simulated_states(A_d: np.ndarray, B_blocks: np.ndarray, drive: np.ndarray) -> np.ndarray:
    """Noise-free states ``x^_0 .. x^_{K-1}`` of the (stabilized) model driven by ``drive``,
    at rest under the drive's mean before the record (module notes).

    Parameters
    ----------
    A_d : ndarray, shape (n, n)
    B_blocks : ndarray, shape (R + 1, n, m)
    drive : ndarray, shape (m, K)

    Returns
    -------
    ndarray, shape (n, K)
        Column ``k`` is ``x^_k``, aligned with the input ``u_k``.
    """
    M = _recursion_matrix(A_d)
    deviations, rest = _from_rest(M, B_blocks, drive)
    # a reflected model's imaginary part (states n .. 2n) is not driven
    states = delayed_response(M, B_blocks, deviations, leading=A_d.shape[0])
    if rest is not None:
        states += rest[:A_d.shape[0], None]      # our own array: no second (n, K) copy
    return states


def _simulated_recursion(A_d: np.ndarray, B_blocks: np.ndarray, drive: np.ndarray,
                         first: int, M: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """:func:`simulated_states` with what its products with the lagged drive follow from:
    ``(x^ (n, K), M, moments)``, the states ``xi`` (``x^`` their first ``n``; the reflected
    model's imaginary part the others) obeying ``xi_{k+1} = M xi_k + [sum_j B^(j) d_{k-j}; 0]``
    and ``moments = (sum_{k >= first} xi_k d_k^T, xi_first, xi_{K-1})``
    (:func:`~dmdidc.regression.propagation.delayed_response`); ``first < K``.  ``M``: the
    recursion matrix when the caller has it."""
    M = _recursion_matrix(A_d) if M is None else M
    n, m = A_d.shape[0], drive.shape[0]
    deviations, rest = _from_rest(M, B_blocks, drive)
    if rest is None:
        states, moments = delayed_response(M, B_blocks, drive, leading=n, input_moments=first)
        return states, M, moments
    # xi = rest + the deviations' response; the products with the drive's mean need the sums
    # of the deviations' states (a reflected model's hidden imaginary part included), summed
    # with the products
    states, (products, at_first, last) = delayed_response(M, B_blocks, deviations, leading=n,
                                                          input_moments=first, state_sums=True)
    products, sums = products[:, :m], products[:, m]
    products = (products + np.outer(sums, drive.mean(axis=1))
                + np.outer(rest, drive[:, first:].sum(axis=1)))
    states += rest[:n, None]              # our own array: no second (n, K) copy
    return states, M, (products, at_first + rest, last + rest)


#: Trajectories of at most this many samples are simulated side by side, one recursion for a
#: group of them (:func:`simulated_recursions`); longer ones each in blocks of its own.
SIDE_BY_SIDE = 4096
#: Padding a group of side-by-side trajectories to its longest adds at most this share.
_PADDING = 0.25
#: Entries (samples, padding included, times the recursion's states) of one side-by-side
#: group's state array at most: its arrays stay a few tens of megabytes whatever the order.
_GROUP_ENTRIES = 1 << 21


def simulated_recursions(A_d: np.ndarray, B_blocks: np.ndarray, drives: list[np.ndarray],
                         first: int | None) -> list[tuple[np.ndarray, np.ndarray | None,
                                                          tuple | None]]:
    """:func:`_simulated_recursion` of every trajectory (``(x^, None, None)`` for those of
    ``K <= first``, which have no moments, and for all with ``first=None``): the same
    numbers, to rounding.

    Why side by side: many short experiments (30 000 of 200 samples) spent nine tenths of a
    refined-IV fit in one simulation per trajectory, 0.5 ms each of set-up (the recursion
    matrix, the resting state, the blocks of :func:`~dmdidc.regression.propagation.
    delayed_response`) for a few hundred samples.  Trajectories of at most
    :data:`SIDE_BY_SIDE` samples run as the rows of one state array instead, in groups of
    similar lengths (sorted; each padded with zero deviations to its longest, at most
    :data:`_PADDING` more samples): one ``(group, q) @ (q, q)`` product per time step, the
    resting states of the whole group one solve.

    Parameters
    ----------
    A_d : ndarray, shape (n, n)
    B_blocks : ndarray, shape (R + 1, n, m)
    drives : list of ndarray, shape (m, K_i)
    first : int or None
        ``a``: the moments sum ``k = a .. K_i - 1``; ``None``: the states only
        (:func:`simulated_states` of every drive).

    Returns
    -------
    list of (ndarray (n, K_i), ndarray or None, tuple or None)
    """
    M = _recursion_matrix(A_d)
    lengths = np.array([d.shape[1] for d in drives], dtype=np.intp)
    out: list = [None] * len(drives)
    for i in np.flatnonzero(lengths > SIDE_BY_SIDE):
        out[i] = ((simulated_states(A_d, B_blocks, drives[i]), None, None) if first is None
                  else _simulated_recursion(A_d, B_blocks, drives[i], first, M))
    group: list[int] = []
    samples = 0
    limit = max(_GROUP_ENTRIES // M.shape[0], SIDE_BY_SIDE)       # samples of one group
    short = np.flatnonzero(lengths <= SIDE_BY_SIDE)
    for i in short[np.argsort(lengths[short], kind="stable")]:
        # sorted: the newcomer is the group's longest
        padded = lengths[i] * (len(group) + 1)
        if group and (padded > (1 + _PADDING) * (samples + lengths[i])
                      or padded > limit):
            _side_by_side(M, B_blocks, drives, group, first, A_d.shape[0], out)
            group, samples = [], 0
        group.append(i)
        samples += lengths[i]
    if group:
        _side_by_side(M, B_blocks, drives, group, first, A_d.shape[0], out)
    return out


def _side_by_side(M: np.ndarray, B_blocks: np.ndarray, drives: list[np.ndarray],
                  group: list[int], first: int | None, n: int, out: list) -> None:
    """Simulate the trajectories ``group`` of ``drives`` as rows of one state array, each
    from its resting state under its own mean (:func:`_from_rest`), and write their
    ``(x^, M, moments)`` into ``out``."""
    R1, r, m = B_blocks.shape
    R, q, T = R1 - 1, M.shape[0], len(group)
    lengths = np.array([drives[i].shape[1] for i in group], dtype=np.intp)
    K = int(lengths.max())
    if K == 0:
        for i in group:
            out[i] = (np.zeros((n, 0)), None, None)
        return
    means = np.array([drives[i].mean(axis=1) if lengths[t] else np.zeros(m)
                      for t, i in enumerate(group)]).reshape(T, m)
    # no resting state (a zero forcing, or an integrator): the drive itself from zero
    rests, resting = _resting_states(M, B_blocks, means)
    means[~resting] = 0.0
    # step-major deviations, R zeros first: step k's forcing reads rows R + k - j
    deviations = np.zeros((K + R, T, m))
    for t, i in enumerate(group):
        deviations[R:R + lengths[t], t] = (drives[i] - means[t][:, None]).T
    forcing_steps = np.zeros((K, T, r))
    flat = forcing_steps.reshape(K * T, r)
    for j in range(R1):
        flat += deviations[R - j:R - j + K].reshape(K * T, m) @ B_blocks[j].T
    xi = np.empty((K, T, q))
    xi[0] = 0.0
    transposed = np.ascontiguousarray(M.T)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(K - 1):
            np.matmul(xi[k], transposed, out=xi[k + 1])
            xi[k + 1, :, :r] += forcing_steps[k]
    moments = lengths > (K if first is None else first)
    if moments.any():
        tail, drive_tail = xi[first:], deviations[R + first:R + K]
        products = np.einsum("ktq,ktm->tqm", tail, drive_tail)
        inside = np.arange(first, K)[:, None] < lengths[None, :]
        sums = np.einsum("ktq,kt->tq", tail, inside.astype(float))
        drive_sums = drive_tail.sum(axis=0) + np.maximum(lengths - first, 0)[:, None] * means
        products += (sums[:, :, None] * means[:, None, :]
                     + rests[:, :, None] * drive_sums[:, None, :])
    for t, i in enumerate(group):
        states = np.empty((n, lengths[t]))
        states[:] = xi[:lengths[t], t, :n].T
        states += rests[t, :n, None]
        out[i] = ((states, M, (products[t], xi[first, t] + rests[t],
                               xi[lengths[t] - 1, t] + rests[t]))
                  if moments[t] else (states, None, None))


#: Entries (samples times states) of the simulated signals alive at once when
#: :class:`SimulatedSignals` streams them: 32 MB, whatever the number of experiments.
_SIGNAL_ENTRIES = 1 << 22


class SimulatedSignals(Sequence):
    """The simulated states ``x^`` of every trajectory (:func:`simulated_states` of each
    drive), computed when read instead of kept.

    Why: a list of them is as large as the states themselves (30 000 experiments of 200
    samples at n = 50: 2.4 GB), and a fit reads them a few times only: once for the
    statistics, in blocks (:meth:`blocks`), then a few pieces for the covariance and the
    checks.  Indexing simulates one trajectory (the last one read is kept: the pieces of a
    long record read it several times); iterating simulates blocks of at most
    :data:`_SIGNAL_ENTRIES` entries side by side (:func:`simulated_recursions`).  The same
    numbers, to rounding, as the list.  :meth:`subset` simulates the trajectories a
    subsample reads side by side; a block of one trajectory (a long record) stays read, and
    so does the last subset; with ``keep``, a block that held every trajectory too (data
    short enough to be checked whole, which the covariance and the checks iterate after the
    statistics: each read simulated them again, 9-14 % of a fit of 4 x 5000 or 100 x 200
    samples).  Those reads give the very states of the simulation they repeat.

    Parameters
    ----------
    A_d : ndarray, shape (n, n)
    B_blocks : ndarray, shape (R + 1, n, m)
    drives : list of ndarray, shape (m, K_i)
    keep : bool, default False
        Keep the states of a block that holds every trajectory (for a caller that iterates
        them all again; at most one block of memory, but alive until this is dropped).
    """

    def __init__(self, A_d: np.ndarray, B_blocks: np.ndarray, drives: list[np.ndarray],
                 *, keep: bool = False) -> None:
        self._model = (A_d, B_blocks)
        self._drives = drives
        self._keep = keep
        self._last: tuple[int, np.ndarray] | None = None
        self._whole: list[np.ndarray] | None = None       # one block held every trajectory
        self._subset: tuple[tuple[int, ...], dict[int, np.ndarray]] | None = None

    @property
    def model(self) -> tuple[np.ndarray, np.ndarray]:
        """``(A_d, B_blocks)``: the model simulated."""
        return self._model

    def __len__(self) -> int:
        return len(self._drives)

    def __getitem__(self, index: int) -> np.ndarray:   # type: ignore[override]
        if isinstance(index, slice):
            # a list, as a Sequence's slice (subset() simulates many side by side, faster)
            return [self[i] for i in range(len(self._drives))[index]]  # type: ignore[return-value]
        i = range(len(self._drives))[index]          # negative indices; IndexError beyond
        if self._last is None or self._last[0] != i:
            drive = self._drives[i]
            # (the one-trajectory simulation refuses an empty drive; the side by side not)
            states = (simulated_states(*self._model, drive) if drive.shape[1]
                      else np.zeros((self._model[0].shape[0], 0)))
            self._last = (i, states)
        return self._last[1]

    def subset(self, indices: list[int]) -> dict[int, np.ndarray]:
        """The signals of the trajectories ``indices`` (index: states), simulated side by
        side (:func:`simulated_recursions`): the pieces a covariance or a check reads."""
        wanted = sorted({range(len(self._drives))[i] for i in indices})
        if self._subset is not None and self._subset[0] == tuple(wanted):
            return dict(self._subset[1])      # a subsample's pieces, read again by the checks
        out = {}
        if self._last is not None and self._last[0] in wanted:
            out[self._last[0]] = self._last[1]
        rest = [i for i in wanted if i not in out]
        simulated = simulated_recursions(*self._model, [self._drives[i] for i in rest], None)
        out.update((i, states) for i, (states, _, _) in zip(rest, simulated, strict=True))
        self._subset = (tuple(wanted), dict(out))
        return out

    def __iter__(self) -> Iterator[np.ndarray]:
        for _, simulated in self.blocks(None):
            yield from (states for states, _, _ in simulated)

    def blocks(self, first: int | None) -> Iterator[tuple[range, list]]:
        """Consecutive blocks of trajectories, ``(indices, simulated)``: ``simulated`` as
        :func:`simulated_recursions` returns it for their drives (``first`` likewise)."""
        n = self._model[0].shape[0]
        start, entries = 0, 0
        for i, drive in enumerate(self._drives):
            entries += n * drive.shape[1]
            if entries >= _SIGNAL_ENTRIES or i == len(self._drives) - 1:
                whole = start == 0 and i == len(self._drives) - 1
                # the states alone of what is kept: the statistics' blocks simulated it, and
                # the covariance and the checks read data short enough to be checked whole
                # by iterating (each read simulated it again: 2 x 24 ms of a 300 ms fit at
                # n = 50, K = 2e4).  The same numbers to the bit: the same drives in the same
                # groups, and the moments' bookkeeping leaves the recursion's states alone
                if first is None and whole and self._whole is not None:
                    simulated = [(states, None, None) for states in self._whole]
                elif first is None and i == start and self._last is not None \
                        and self._last[0] == i:
                    simulated = [(self._last[1], None, None)]
                else:
                    simulated = simulated_recursions(*self._model,
                                                     self._drives[start:i + 1], first)
                if whole and self._keep:
                    self._whole = [states for states, _, _ in simulated]
                if i == start:
                    # a block of one long record: its pieces are read next (the covariance,
                    # the checks), and simulating it again cost 40 % of a 6e5-sample fit
                    self._last = (i, simulated[0][0])
                yield range(start, i + 1), simulated
                start, entries = i + 1, 0


def reference_projection(inputs: list[np.ndarray], references: list[np.ndarray],
                         lags: int = REFERENCE_LAGS) -> list[np.ndarray]:
    """The part of the inputs explained by the reference, ``d_k = c + sum_l F_l (r_{k-l} -
    rbar)``.

    One FIR ``F_0 .. F_L`` with an intercept ``c`` is fitted by least squares over all
    trajectories, on the reference about its mean ``rbar`` (at its mean before each
    trajectory's start).  Without them a set point at its level (a temperature in degrees
    beside inputs at an operating point) spent the FIR on the means: a review's mixed loop
    fitted ``A_c`` 65 % off with the set point at its level, 8 % with it centred.

    Parameters
    ----------
    inputs : list of ndarray, shape (m, K_i)
    references : list of ndarray, shape (q, K_i)
    lags : int
        ``L``.

    Returns
    -------
    list of ndarray, shape (m, K_i)
    """
    def lagged(r: np.ndarray) -> np.ndarray:
        padded = np.concatenate([np.zeros((r.shape[0], lags)), r], axis=1)
        K = r.shape[1]
        return np.concatenate([padded[:, lags - j:lags - j + K] for j in range(lags + 1)])

    H = [np.vstack([lagged(r), np.ones((1, r.shape[1]))]) for r in centred_references(references)]
    gram = sum(h @ h.T for h in H)
    cross = sum(u @ h.T for u, h in zip(inputs, H, strict=True))
    F = np.linalg.lstsq(gram, cross.T, rcond=None)[0].T
    return [F @ h for h in H]


def centred_references(references: list[np.ndarray]) -> list[np.ndarray]:
    """The references about their mean over all trajectories (one level per row).

    Why: a reference shifted by a constant carries the same information, and the fits that
    use it are invariant to the shift in exact arithmetic (an intercept, or the constant among
    the instruments); about the mean they are so to rounding too (the data kinds' closed loops,
    dither shifted by 3e3 standard deviations: exogenous-instrument fits 1.7e-7 apart with the
    constant instrument alone, 1e-12 about the mean).

    Parameters
    ----------
    references : list of ndarray, shape (q, K_i)

    Returns
    -------
    list of ndarray, shape (q, K_i)

    Examples
    --------
    >>> import numpy as np
    >>> out = centred_references([np.array([[20.0, 21.0]]), np.array([[22.0, 23.0]])])
    >>> [r.tolist() for r in out]
    [[[-1.5, -0.5]], [[0.5, 1.5]]]
    """
    level = (sum(r.sum(axis=1) for r in references)
             / max(sum(r.shape[1] for r in references), 1))[:, None]
    return [r - level for r in references]


def instrument_rows(kind: str, U: np.ndarray, E: np.ndarray, max_delay: int,
                    start: int | None = None, stop: int | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """The instruments ``z_k`` of one trajectory as columns, ``k = start .. stop - 1``.

    Parameters
    ----------
    kind : {"simulated", "exogenous"}
        ``"simulated"``: ``z_k = [x^_k; u_k; ...; u_{k-R}]`` (open loop: the inputs instrument
        themselves); ``"exogenous"``: ``z_k = [e_k; ...; e_{k-R}]`` (closed loop: ``e`` holds
        ``x^`` and the reference-driven inputs).
    U : ndarray, shape (m, K)
    E : ndarray, shape (q, K)
        The instrument signal (aligned with ``U``).
    max_delay : int
    start, stop : int, optional
        Default ``R`` and ``K``.
    out : ndarray, optional
        Written in place (e.g. columns of the instruments of many trajectories).

    Returns
    -------
    ndarray
    """
    R, K = max_delay, U.shape[1]
    start = R if start is None else start
    stop = K if stop is None else stop
    if kind == "simulated":
        if out is None:
            return np.concatenate([E[:, start:stop], lagged_inputs(U[:, start - R:stop], R)])
        out[:E.shape[0]] = E[:, start:stop]
        lagged_inputs(U[:, start - R:stop], R, out=out[E.shape[0]:])
        return out
    return lagged_inputs(E[:, start - R:stop], R, out=out)


def model_instruments(A_d: np.ndarray, B_blocks: np.ndarray,
                      drives: list[np.ndarray]) -> list[np.ndarray]:
    """Instrument signals ``[x^; d]`` per trajectory, for IV with lags ``0 .. R``.

    Parameters
    ----------
    A_d, B_blocks
        The first-stage model.
    drives : list of ndarray, shape (m, K_i)
        The excitation of each trajectory (inputs, or their reference projection).

    Returns
    -------
    list of ndarray, shape (n + m, K_i)
    """
    return [np.concatenate([states, d]) for (states, _, _), d in
            zip(simulated_recursions(A_d, B_blocks, drives, None), drives, strict=True)]
