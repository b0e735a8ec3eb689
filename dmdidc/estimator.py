"""The DMDidc estimator: DMD with input-delayed control (dissertation Ch. 9).

It regresses x_{k+1} on [x_k, u_k, u_{k-1}, ..., u_{k-R}] (eqs. 9.19-9.21), reads each channel's
whole delay from the first non-zero input block and the fraction from the two blocks around it,
and recovers the continuous plant (eqs. 9.66-9.69).  With ``max_delay=0`` it is DMDc.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dmdidc.model import DelayedPlant
from dmdidc.recovery import recover_continuous, warn_model
from dmdidc.regression import RegressionSolution, lagged_inputs, make_accumulator
from privacy.errors import (
    DimensionError,
    InsufficientExcitationError,
    LogarithmError,
    NotFittedError,
    ParameterError,
)
from privacy.validation import (
    check_finite_array,
    check_in_interval,
    check_integer,
    check_positive,
)

__all__ = ["DMDidc"]

#: Above this equilibrated condition number the normal equations may lose more than ~8 digits;
#: "auto" then refines the Gram solution with one more pass over the data ...
_GRAM_CONDITION_LIMIT = 1e4
#: ... and beyond this one, where refinement may not converge, repeats the pass with QR.
_REFINEMENT_CONDITION_LIMIT = 1e6


class DMDidc:
    """Dynamic Mode Decomposition with input-delayed control.

    Parameters
    ----------
    max_delay : int, default 0
        Bound ``R`` on the input delay in whole sampling periods; the regression uses the last
        ``R + 1`` inputs.  Choose ``R >= ceil(r / T)`` (one more than the whole delay when the
        delay is fractional).  ``0`` gives DMDc.
    svd_rank : int or None, default None
        Number of singular values of the (column-equilibrated) regression matrix kept; ``None``
        keeps all and raises :class:`~dmdidc.InsufficientExcitationError` when the data are
        rank-deficient.
    tlsq_rank : int or None, default None
        Total-least-squares de-noising rank (PyDMD's ``compute_tlsq``) applied to the regression
        data before fitting; ``None`` disables it.  Needs the data in memory (``fit`` only).
    method : {"auto", "gram", "qr"}, default "auto"
        ``"gram"`` accumulates equilibrated normal equations (fastest; relative error up to
        ``cond^2 * 1e-16`` for an equilibrated condition number ``cond``); ``"qr"`` keeps a
        tall-skinny QR factor (backward stable, error about ``cond * 1e-16``, several times
        slower).  ``"auto"`` uses the Gram path and, in ``fit``, when ``cond > 1e4`` adds
        passes of iterative refinement with residuals computed sample by sample (one pass up
        to ``cond ~ 1e5``, two up to ``1e6``), which restores backward-stable accuracy; beyond
        ``1e6`` it repeats the pass with QR.  In ``partial_fit`` it warns instead, since the
        data are gone.  All stream with memory independent of the number of samples.
    block_rtol : float, default 1e-6
        A block counts as zero (9.66) when its column norm is below ``block_rtol`` times the
        largest block of that channel.  Raise it for noisy data.
    rank_rtol : float, default 1e-10
        Relative singular-value threshold for the rank test.
    chunk_size : int, default 65536
        Samples per chunk in ``fit`` (bounds the working memory).

    Attributes
    ----------
    model_ : DelayedPlant
        The identified plant (immutable); controllers and simulations take it.
    regression_ : RegressionSolution
        Coefficients, singular values, rank, condition number and residual of the regression.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant
    >>> true = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]],
    ...                                     delay=2.5, dt=2.0)
    >>> U = np.random.default_rng(0).standard_normal((2, 200))
    >>> X = true.simulate(np.zeros(2), U)
    >>> est = DMDidc(max_delay=3).fit(X, U, dt=2.0)
    >>> np.round(est.delay, 10), est.delay_steps, np.round(est.delay_fraction, 10)
    (array([2.5, 2.5]), array([1, 1]), array([0.25, 0.25]))
    """

    def __init__(self, *, max_delay: int = 0, svd_rank: int | None = None,
                 tlsq_rank: int | None = None, method: str = "auto", block_rtol: float = 1e-6,
                 rank_rtol: float = 1e-10, chunk_size: int = 65536) -> None:
        self.max_delay = max_delay
        self.svd_rank = svd_rank
        self.tlsq_rank = tlsq_rank
        self.method = method
        self.block_rtol = block_rtol
        self.rank_rtol = rank_rtol
        self.chunk_size = chunk_size

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (scikit-learn style)."""
        return {name: getattr(self, name) for name in ("max_delay", "svd_rank", "tlsq_rank",
                                                       "method", "block_rtol", "rank_rtol",
                                                       "chunk_size")}

    def _validated_params(self) -> None:
        check_integer("max_delay", self.max_delay, minimum=0)
        if self.svd_rank is not None:
            check_integer("svd_rank", self.svd_rank, minimum=1)
        if self.tlsq_rank is not None:
            check_integer("tlsq_rank", self.tlsq_rank, minimum=1)
        if self.method not in ("auto", "gram", "qr"):
            raise ParameterError(f"method must be 'auto', 'gram' or 'qr'; got {self.method!r}")
        check_in_interval("block_rtol", self.block_rtol, 0.0, 1.0, low_open=True, high_open=True)
        check_positive("rank_rtol", self.rank_rtol)
        check_integer("chunk_size", self.chunk_size, minimum=1)

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, U: Any, *, dt: float, Y: Any = None) -> DMDidc:
        """Identify the delayed plant from snapshot data.

        Parameters
        ----------
        X : array_like, shape (n, K + 1), or a list of such arrays
            States ``x_0 .. x_K`` as columns (several trajectories as a list).
        U : array_like, shape (m, K), or a list of such arrays
            Inputs ``u_0 .. u_{K-1}``, ``u_k`` held over ``[kT, (k+1)T)``.
        dt : float
            Sampling period ``T`` in seconds.
        Y : array_like, shape (n, N), optional
            Explicit successor snapshots: then ``X`` is (n, N) with ``Y[:, i]`` following
            ``X[:, i]``, and ``U`` is (m (R + 1), N) holding ``[u_k; u_{k-1}; ...; u_{k-R}]``
            per snapshot (for ``max_delay=0`` simply the inputs, as in PyDMD).

        Returns
        -------
        self

        Raises
        ------
        DimensionError, NonFiniteError, ParameterError
            Malformed data or parameters.
        InsufficientExcitationError
            Fewer than ``n + m (R + 1)`` regression samples, or rank-deficient data.
        """
        self._validated_params()
        dt = check_positive("dt", dt)
        if Y is not None:
            return self._fit_snapshots(X, Y, U, dt)
        trajectories = _as_trajectories(X, U)
        n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
        if self.tlsq_rank is not None:
            Phi = np.concatenate([_regressors(Xi, Ui, self.max_delay) for Xi, Ui in trajectories],
                                 axis=1)
            Yt = np.concatenate([Xi[:, self.max_delay + 1:] for Xi, _ in trajectories], axis=1)
            return self._fit_regression(Phi, Yt, n, m, dt)
        self._reset(n, m, dt)
        for Xi, Ui in trajectories:
            self._accumulator.new_trajectory()
            self._stream(Xi, Ui)
        decision, solution = self._auto_decision()
        if decision == "qr":
            self._reset(n, m, dt, method="qr")
            for Xi, Ui in trajectories:
                self._accumulator.new_trajectory()
                self._stream(Xi, Ui)
        elif decision == "refine":
            self._override = self._accumulator.refine(solution, trajectories)
        else:
            self._override = solution        # already solved: do not solve the pass twice
        self._solve()
        return self

    def _auto_decision(self) -> tuple[str, RegressionSolution | None]:
        """What "auto" does after the Gram pass: "keep", "refine" (one more pass) or "qr".

        Decided before any model is built, so a discarded pass neither raises nor warns.
        """
        acc = self._accumulator
        if self.method != "auto" or acc.method != "gram":
            return "keep", None
        try:
            solution = acc.solution(svd_rank=self.svd_rank, rank_rtol=self.rank_rtol)
        except InsufficientExcitationError:
            # The Gram rank test cannot resolve singular values below ~sqrt(eps) (cond > ~7e7)
            # while QR can: let the QR pass decide (it raises the same error for too few samples).
            return ("qr" if acc.n_samples >= acc.p else "keep"), None
        if solution.condition_number <= _GRAM_CONDITION_LIMIT:
            return "keep", solution
        if solution.condition_number <= _REFINEMENT_CONDITION_LIMIT:
            return "refine", solution
        return "qr", None

    def partial_fit(self, X: Any, U: Any, *, dt: float, new_trajectory: bool = False
                    ) -> DMDidc:
        """Add a chunk of one trajectory; memory stays independent of the data length.

        Parameters
        ----------
        X : array_like, shape (n, L + 1)
            States of the chunk.  When continuing a trajectory, ``X[:, 0]`` must equal the last
            state of the previous chunk (chunks overlap by one state, like ``X[:, a:b+1]``
            with ``U[:, a:b]``).
        U : array_like, shape (m, L)
        dt : float
            Sampling period; must not change between calls.
        new_trajectory : bool, default False
            Start a new trajectory (the first call always does).

        Returns
        -------
        self
            ``model_`` reflects all data so far; it raises
            :class:`~dmdidc.InsufficientExcitationError` while the data are not yet enough.
        """
        self._validated_params()
        dt = check_positive("dt", dt)
        ((Xc, Uc),) = _as_trajectories(X, U, check_orientation=False)
        if getattr(self, "_accumulator", None) is None:
            self._reset(Xc.shape[0], Uc.shape[0], dt)
        else:
            if dt != self.dt:
                raise ParameterError(f"dt changed between partial_fit calls: {self.dt} then {dt}")
            n, m = self._accumulator.n, self._accumulator.m
            if Xc.shape[0] != n or Uc.shape[0] != m:
                raise DimensionError(f"chunk has {Xc.shape[0]} states and {Uc.shape[0]} inputs; "
                                     f"earlier chunks had {n} and {m}")
            if new_trajectory:
                self._accumulator.new_trajectory()
            elif self._accumulator.last_state is not None and not np.array_equal(
                    Xc[:, 0], self._accumulator.last_state):
                raise DimensionError("X[:, 0] does not continue the previous chunk (it must equal "
                                     "its last state); pass new_trajectory=True for a new one")
        self._stream(Xc, Uc)
        self._model = None
        self._override = None
        self._partial = True
        return self

    def _reset(self, n: int, m: int, dt: float, method: str | None = None) -> None:
        self.dt = dt
        method = method or ("gram" if self.method == "auto" else self.method)
        self._accumulator = make_accumulator(method, n, m, self.max_delay)
        self._model = None
        self._solution = None
        self._override: RegressionSolution | None = None
        self._partial = False

    def _stream(self, X: np.ndarray, U: np.ndarray) -> None:
        K = U.shape[1]
        for start in range(0, K, self.chunk_size):
            stop = min(start + self.chunk_size, K)
            self._accumulator.update(X[:, start:stop + 1], U[:, start:stop])

    def _fit_snapshots(self, X: Any, Y: Any, U: Any, dt: float) -> DMDidc:
        X = check_finite_array("X", X, ndim=2)
        Y = check_finite_array("Y", Y, ndim=2)
        U = check_finite_array("U", U, ndim=2)
        if Y.shape != X.shape:
            raise DimensionError(f"Y has shape {Y.shape}; expected {X.shape} (the shape of X)")
        if U.shape[1] != X.shape[1]:
            raise DimensionError(f"U has {U.shape[1]} snapshots; expected {X.shape[1]} "
                                 f"(the columns of X)")
        if U.shape[0] % (self.max_delay + 1):
            raise DimensionError(f"U has {U.shape[0]} rows; with explicit Y it must stack "
                                 f"max_delay + 1 = {self.max_delay + 1} lagged inputs")
        m = U.shape[0] // (self.max_delay + 1)
        return self._fit_regression(np.concatenate([X, U]), Y, X.shape[0], m, dt)

    def _fit_regression(self, Phi: np.ndarray, Y: np.ndarray, n: int, m: int, dt: float
                        ) -> DMDidc:
        if self.tlsq_rank is not None:
            from pydmd.utils import compute_tlsq

            Phi, Y = compute_tlsq(Phi, Y, self.tlsq_rank)
        self._reset(n, m, dt, method="qr" if self.method == "auto" else None)
        self._accumulator.add_samples(Phi, Y)
        return self._solve()

    def _solve(self) -> DMDidc:
        self._model = None
        self._build_model()
        return self

    def _build_model(self) -> DelayedPlant:
        if getattr(self, "_accumulator", None) is None:
            raise NotFittedError("this DMDidc estimator is not fitted yet; call fit(X, U, dt=...) "
                                 "or partial_fit first")
        if self._model is not None:
            return self._model
        acc = self._accumulator
        solution = self._override or acc.solution(svd_rank=self.svd_rank,
                                                  rank_rtol=self.rank_rtol)
        n, m, R = acc.n, acc.m, acc.R
        A_d = solution.coefficients[:, :n]
        blocks = solution.coefficients[:, n:].reshape(n, R + 1, m).transpose(1, 0, 2)
        try:
            A_c, B_c, delay = recover_continuous(A_d, blocks, self.dt,
                                                 block_rtol=self.block_rtol)
            model = DelayedPlant(A_d, blocks, self.dt, A_c=A_c, B_c=B_c, delay=delay)
        except LogarithmError as exc:
            warn_model(f"no continuous-time model: {exc}")
            model = DelayedPlant(A_d, blocks, self.dt, continuous_note=str(exc))
        self._solution, self._model = solution, model
        _warn_if_delay_may_exceed_bound(blocks, self.block_rtol, solution)
        if (self.method == "auto" and acc.method == "gram" and self._partial
                and solution.condition_number > _GRAM_CONDITION_LIMIT):
            warn_model(f"the equilibrated regression data have condition number "
                          f"{solution.condition_number:.3g}; normal equations lose about "
                          f"{2 * np.log10(solution.condition_number):.0f} digits. Stream the data "
                          f"again with method='qr' for a backward-stable fit",)
        return model

    # ------------------------------------------------------------------ fitted results
    @property
    def model_(self) -> DelayedPlant:
        """The identified :class:`~dmdidc.DelayedPlant`."""
        return self._build_model()

    @property
    def regression_(self) -> RegressionSolution:
        """Regression diagnostics (singular values, rank, condition number, residual)."""
        self._build_model()
        return self._solution

    @property
    def A_d(self) -> np.ndarray:
        """Identified discrete state matrix, shape (n, n)."""
        return self.model_.A_d

    @property
    def B_blocks(self) -> np.ndarray:
        """Identified input blocks ``B^(0..R)``, shape (R + 1, n, m)."""
        return self.model_.B_blocks

    @property
    def A_c(self) -> np.ndarray:
        """Continuous state matrix, shape (n, n)."""
        return self.model_.A_c

    @property
    def B_c(self) -> np.ndarray:
        """Continuous input matrix, shape (n, m)."""
        return self.model_.B_c

    @property
    def delay(self) -> np.ndarray:
        """Delay of each input channel in seconds, shape (m,)."""
        return self.model_.delay

    @property
    def delay_steps(self) -> np.ndarray:
        """Whole delay ``w`` per channel, shape (m,)."""
        return self.model_.delay_steps

    @property
    def delay_fraction(self) -> np.ndarray:
        """Fractional delay ``p`` in [0, 1) per channel, shape (m,)."""
        return self.model_.delay_fraction

    @property
    def eigs(self) -> np.ndarray:
        """Eigenvalues of ``A_d`` (the discrete DMD eigenvalues), shape (n,)."""
        return self.model_.eigs

    @property
    def modes(self) -> np.ndarray:
        """DMD modes: unit-norm eigenvectors of ``A_d`` as columns, shape (n, n)."""
        return np.linalg.eig(self.model_.A_d)[1]

    def predict(self, x0: Any, U: Any, U_past: Any = None) -> np.ndarray:
        """Predict states for new inputs over any horizon.

        Parameters
        ----------
        x0 : array_like, shape (n,)
        U : array_like, shape (m, K)
        U_past : array_like, shape (m, R), optional
            Inputs before ``x0`` (oldest first); zero by default.

        Returns
        -------
        X : ndarray, shape (n, K + 1)
        """
        return self.model_.simulate(x0, U, U_past)

    def to_statespace(self):
        """The identified model as a python-control discrete ``StateSpace``."""
        return self.model_.to_statespace()

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"DMDidc({params})"


def _as_trajectories(X: Any, U: Any, *, check_orientation: bool = True
                     ) -> list[tuple[np.ndarray, np.ndarray]]:
    if isinstance(X, (list, tuple)) != isinstance(U, (list, tuple)):
        raise DimensionError("X and U must both be arrays or both be lists of trajectories")
    if not isinstance(X, (list, tuple)):
        X, U = [X], [U]
    if len(X) != len(U) or not X:
        raise DimensionError(f"got {len(X)} state and {len(U)} input trajectories; expected the "
                             f"same positive number")
    result = []
    for i, (Xi, Ui) in enumerate(zip(X, U, strict=True)):
        tag = f"[{i}]" if len(X) > 1 else ""
        Xi = check_finite_array(f"X{tag}", Xi, ndim=2)
        Ui = check_finite_array(f"U{tag}", Ui, ndim=2)
        if Ui.shape[1] != Xi.shape[1] - 1:
            raise DimensionError(f"U{tag} has {Ui.shape[1]} samples; expected {Xi.shape[1] - 1} "
                                 f"(columns of X minus one; time runs along the columns)")
        if check_orientation and Xi.shape[0] == Ui.shape[0] + 1 and Xi.shape[0] > Xi.shape[1]:
            raise DimensionError(f"X{tag} has shape {Xi.shape} and U{tag} {Ui.shape}: more states "
                                 f"than snapshots, which looks like transposed data; time runs "
                                 f"along the columns (X is (n, K+1), U is (m, K))")
        if result and (Xi.shape[0], Ui.shape[0]) != (result[0][0].shape[0], result[0][1].shape[0]):
            raise DimensionError(f"trajectory {i} has {Xi.shape[0]} states and {Ui.shape[0]} "
                                 f"inputs; the first has {result[0][0].shape[0]} and "
                                 f"{result[0][1].shape[0]}")
        result.append((Xi, Ui))
    return result


def _regressors(X: np.ndarray, U: np.ndarray, R: int) -> np.ndarray:
    """In-memory regression matrix [x_k; u_k; ...; u_{k-R}] for k = R .. K-1."""
    return np.concatenate([X[:, R:-1], lagged_inputs(U, R)], axis=0)


def _warn_if_delay_may_exceed_bound(blocks: np.ndarray, rtol: float,
                                    solution: RegressionSolution) -> None:
    """Warn when the delay may exceed the bound ``R``: the last block ``B^(R)`` is active and
    the fit leaves more than 1e-3 of the targets unexplained (the blocks a longer delay needs
    are missing, so their effect ends up in the residual; very noisy data can show this too).
    """
    R = blocks.shape[0] - 1
    if R == 0 or not solution.relative_residual > 1e-3:
        return
    norms = np.linalg.norm(blocks, axis=1)
    last_active = [j for j in range(blocks.shape[2])
                   if norms[R, j] > rtol * max(norms[:, j].max(), np.finfo(float).tiny)]
    if last_active:
        warn_model(f"the delay of input channel(s) {last_active} may exceed max_delay={R} "
                   f"periods (last block B^({R}) active, relative residual "
                   f"{solution.relative_residual:.2g}); then the identified delay and model are "
                   f"wrong: refit with a larger max_delay")
