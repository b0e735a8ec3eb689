"""The DMDidc estimator: DMD with input-delayed control (dissertation Ch. 9).

It regresses x_{k+1} on [x_k, u_k, u_{k-1}, ..., u_{k-R}] (eqs. 9.19-9.21), decides which input
blocks act with a significance test against the regression's own standard errors
(:mod:`dmdidc.blocks`), reads each channel's whole delay from its first active block and the
fraction from the two blocks around it, and recovers the continuous plant (eqs. 9.66-9.69).
With ``max_delay=0`` it is DMDc.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dmdidc.blocks import BlockTest, block_test, restricted_coefficients
from dmdidc.diagnostics import identification_warnings
from dmdidc.errors import (
    DimensionError,
    InsufficientExcitationError,
    LogarithmError,
    NotFittedError,
    ParameterError,
    warn_model,
)
from dmdidc.model import DelayedPlant
from dmdidc.recovery import recover_continuous
from dmdidc.regression import RegressionSolution, lagged_inputs, make_accumulator
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
_PARAMS = ("max_delay", "svd_rank", "tlsq_rank", "method", "detrend", "significance",
           "block_rtol", "rank_rtol", "chunk_size")
_DETRENDS = (None, "constant", "linear")


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
        data before fitting; ``None`` disables it.  Needs the data in memory (``fit`` only;
        ``partial_fit`` refuses it).
    method : {"auto", "gram", "qr"}, default "auto"
        ``"gram"`` accumulates equilibrated normal equations (fastest; relative error up to
        ``cond^2 * 1e-16`` for an equilibrated condition number ``cond``); ``"qr"`` keeps a
        tall-skinny QR factor (backward stable, error about ``cond * 1e-16``, several times
        slower).  ``"auto"`` uses the Gram path and, in ``fit``, when ``cond > 1e4`` adds
        passes of iterative refinement with residuals computed sample by sample (one pass up
        to ``cond ~ 1e5``, two up to ``1e6``), which restores backward-stable accuracy; beyond
        ``1e6`` it repeats the pass with QR.  In ``partial_fit`` it warns instead, since the
        data are gone.  All stream with memory independent of the number of samples.
    detrend : {None, "constant", "linear"}, default None
        Remove, per trajectory and per row of ``X`` and ``U``, the mean (``"constant"``) or the
        least-squares straight line over the sample index (``"linear"``) before the fit, as
        MATLAB's ``detrend``.  The model is then in deviations from the operating point: use it
        with deviations, ``x - x_op`` and ``u - u_op``.  The removed trends are stored in
        ``state_trend_`` and ``input_trend_``.  Use it for data with a sensor offset, an input
        bias or a non-zero equilibrium (the estimator warns when the residuals show one).
        Needs whole trajectories (``fit`` with ``X``, ``U``; not ``partial_fit`` or ``Y``).
    significance : float, default 1e-3
        Family-wise level of the block test: the probability that some input block without
        effect is declared active (which would shorten a delay).  A block is active when it is
        significant against its standard error (Hotelling's T^2, Bonferroni over the
        ``m (R + 1)`` blocks; :mod:`dmdidc.blocks`); no tolerance has to be tuned to the noise.
    block_rtol : float or None, default None
        Explicit override of the test: a block is active iff its column norm exceeds
        ``block_rtol`` times the largest block of that channel.  ``None`` uses the test.
    rank_rtol : float, default 1e-10
        Relative singular-value threshold for the rank test.
    chunk_size : int, default 65536
        Samples per chunk in ``fit`` (bounds the working memory).

    Attributes
    ----------
    model_ : DelayedPlant
        The identified plant (immutable); controllers and simulations take it.  Its inactive
        input blocks are exactly zero, so its ``active_blocks`` and ``delay_steps`` are the
        estimator's decision.  When ``A_d`` has a real logarithm the model is the exact
        discretization of the recovered ``(A_c, B_c, delay)`` (blocks outside ``w, w + 1`` are
        zero); otherwise it is the discrete least-squares model with the inactive blocks
        constrained to zero, and ``A_c``, ``B_c``, ``delay`` raise ``LogarithmError``.
    regression_ : RegressionSolution
        The unrestricted least-squares regression: coefficients, their covariance and standard
        errors, singular values, rank, condition number, residual.
    block_test_ : BlockTest
        Statistics and decision of the block test.
    state_trend_, input_trend_ : ndarray, shape (n_trajectories, n or m, 2) or None
        The trends removed by ``detrend``: row ``i`` of trajectory ``t`` had
        ``trend[t, i, 0] + trend[t, i, 1] * k`` removed at sample ``k``.  ``None`` without
        ``detrend``.

    Warns
    -----
    ContinuousModelWarning
        With the evidence, when a channel shows no significant effect, a delay reaches the
        bound ``max_delay``, the residuals show an offset, ``A_d`` has no real logarithm or an
        eigenvalue not significantly away from zero
        (:mod:`dmdidc.diagnostics`).

    Notes
    -----
    All states must be measured (full-state identification, as in the dissertation): ``X`` are
    the states of the plant, not outputs of a subset of them.

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
                 tlsq_rank: int | None = None, method: str = "auto",
                 detrend: str | None = None, significance: float = 1e-3,
                 block_rtol: float | None = None, rank_rtol: float = 1e-10,
                 chunk_size: int = 65536) -> None:
        self.max_delay = max_delay
        self.svd_rank = svd_rank
        self.tlsq_rank = tlsq_rank
        self.method = method
        self.detrend = detrend
        self.significance = significance
        self.block_rtol = block_rtol
        self.rank_rtol = rank_rtol
        self.chunk_size = chunk_size

    # ------------------------------------------------------------------ parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (scikit-learn's contract; ``deep`` changes nothing here).

        Returns
        -------
        dict
        """
        return {name: getattr(self, name) for name in _PARAMS}

    def set_params(self, **params: Any) -> DMDidc:
        """Set constructor parameters (scikit-learn's contract); validated in ``fit``.

        Returns
        -------
        self

        Raises
        ------
        ParameterError
            An unknown parameter name.
        """
        for name, value in params.items():
            if name not in _PARAMS:
                raise ParameterError(f"DMDidc has no parameter {name!r}; valid parameters: "
                                     f"{list(_PARAMS)}")
            setattr(self, name, value)
        return self

    def _validated_params(self) -> None:
        check_integer("max_delay", self.max_delay, minimum=0)
        if self.svd_rank is not None:
            check_integer("svd_rank", self.svd_rank, minimum=1)
        if self.tlsq_rank is not None:
            check_integer("tlsq_rank", self.tlsq_rank, minimum=1)
        if self.method not in ("auto", "gram", "qr"):
            raise ParameterError(f"method must be 'auto', 'gram' or 'qr'; got {self.method!r}")
        if self.detrend not in _DETRENDS:
            raise ParameterError(f"detrend must be None, 'constant' or 'linear'; got "
                                 f"{self.detrend!r}")
        check_in_interval("significance", self.significance, 0.0, 1.0, low_open=True,
                          high_open=True)
        if self.block_rtol is not None:
            check_in_interval("block_rtol", self.block_rtol, 0.0, 1.0, low_open=True,
                              high_open=True)
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
        self.state_trend_ = self.input_trend_ = None
        if Y is not None:
            if self.detrend is not None:
                raise ParameterError("detrend needs whole trajectories (fit(X, U)); with explicit "
                                     "snapshot pairs Y remove the offsets before the fit")
            return self._fit_snapshots(X, Y, U, dt)
        trajectories = _as_trajectories(X, U)
        if self.detrend is not None:
            trajectories, self.state_trend_, self.input_trend_ = _detrended(trajectories,
                                                                           self.detrend)
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
            solution = self._accumulator.refine(solution, trajectories)
        if solution is None or decision == "qr":
            solution = self._accumulator.solution(svd_rank=self.svd_rank,
                                                  rank_rtol=self.rank_rtol)
        return self._finish(solution)

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
            ``model_`` reflects all data so far (it is solved at every call, with the
            warnings of that solve: about 0.1 s for ``p = 104`` regressors, so feed chunks of
            many samples); it raises :class:`~dmdidc.InsufficientExcitationError` while the
            data are not yet enough.

        Raises
        ------
        ParameterError
            ``tlsq_rank`` or ``detrend`` set (both need the whole data), or ``dt`` changed.
        DimensionError
            A chunk that does not continue the previous one, or changed sizes.
        """
        self._validated_params()
        dt = check_positive("dt", dt)
        for name in ("tlsq_rank", "detrend"):
            if getattr(self, name) is not None:
                raise ParameterError(f"partial_fit cannot use {name}={getattr(self, name)!r}: "
                                     f"it needs the whole data in memory; use fit, or set "
                                     f"{name}=None")
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
        self._partial = True
        self.state_trend_ = self.input_trend_ = None
        try:
            solution = self._accumulator.solution(svd_rank=self.svd_rank,
                                                  rank_rtol=self.rank_rtol)
        except InsufficientExcitationError as exc:
            self._model = self._solution = self._block_test = None
            self._pending = exc
            return self
        return self._finish(solution)

    def _reset(self, n: int, m: int, dt: float, method: str | None = None) -> None:
        self.dt = dt
        method = method or ("gram" if self.method == "auto" else self.method)
        self._accumulator = make_accumulator(method, n, m, self.max_delay)
        self._model = self._solution = self._block_test = None
        self._pending: InsufficientExcitationError | None = None
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
        self._reset(n, m, dt, method="qr" if self.method == "auto" else None)
        self._accumulator.add_samples(Phi, Y)
        solution = self._accumulator.solution(svd_rank=self.svd_rank, rank_rtol=self.rank_rtol)
        if self.tlsq_rank is not None:
            from pydmd.utils import compute_tlsq

            # The de-noised data fit almost exactly, so their residual says nothing about the
            # noise: the covariance (and the block test) come from the data as recorded.
            projected = make_accumulator(self._accumulator.method, n, m, self.max_delay)
            projected.add_samples(*compute_tlsq(Phi, Y, self.tlsq_rank))
            coefficients = projected.solution(svd_rank=self.svd_rank,
                                              rank_rtol=self.rank_rtol).coefficients
            solution = dataclasses.replace(solution, coefficients=coefficients)
        return self._finish(solution)

    def _finish(self, solution: RegressionSolution) -> DMDidc:
        """Decide the active blocks, build the model and warn with the evidence."""
        acc = self._accumulator
        n, m, R, dt = acc.n, acc.m, acc.R, self.dt
        test = block_test(solution, n, m, R, significance=self.significance,
                          block_rtol=self.block_rtol)
        coefficients = restricted_coefficients(solution, n, test.active)
        A_d = coefficients[:, :n]
        blocks = coefficients[:, n:].reshape(n, R + 1, m).transpose(1, 0, 2)
        log_error = None
        try:
            A_c, B_c, delay = recover_continuous(A_d, blocks, dt, active=test.active)
            model = DelayedPlant.from_continuous(A_c, B_c, delay, dt, max_delay=R)
        except LogarithmError as exc:
            log_error = exc
            model = DelayedPlant(A_d, blocks, dt, continuous_note=str(exc))
        self._solution, self._block_test, self._model = solution, test, model
        self._pending = None
        for message in identification_warnings(solution, test, model,
                                                detrended=self.detrend is not None,
                                                log_error=log_error):
            warn_model(message)
        if (self.method == "auto" and acc.method == "gram" and self._partial
                and solution.condition_number > _GRAM_CONDITION_LIMIT):
            warn_model(f"the equilibrated regression data have condition number "
                       f"{solution.condition_number:.3g}; normal equations lose about "
                       f"{2 * np.log10(solution.condition_number):.0f} digits. Stream the data "
                       f"again with method='qr' for a backward-stable fit")
        return self

    def _fitted(self, value: Any) -> Any:
        if value is None:
            pending = getattr(self, "_pending", None)
            if pending is not None:
                raise InsufficientExcitationError(str(pending))
            raise NotFittedError("this DMDidc estimator is not fitted yet; call fit(X, U, dt=...) "
                                 "or partial_fit first")
        return value

    # ------------------------------------------------------------------ fitted results
    @property
    def model_(self) -> DelayedPlant:
        """The identified :class:`~dmdidc.DelayedPlant` (computed by ``fit``)."""
        return self._fitted(getattr(self, "_model", None))

    @property
    def regression_(self) -> RegressionSolution:
        """The least-squares regression (coefficients, covariance, spectrum, residual)."""
        return self._fitted(getattr(self, "_solution", None))

    @property
    def block_test_(self) -> BlockTest:
        """Statistics and decision of the block test (which input blocks act)."""
        return self._fitted(getattr(self, "_block_test", None))

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
            hint = (f"; the data look transposed: X{tag} has {Xi.shape[0]} rows and U{tag} "
                    f"{Ui.shape[0]}, one more, as samples would (pass X.T and U.T)"
                    if Xi.shape[0] == Ui.shape[0] + 1 else "")
            raise DimensionError(f"U{tag} has {Ui.shape[1]} samples; expected {Xi.shape[1] - 1} "
                                 f"(columns of X minus one; time runs along the columns){hint}")
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


def _detrended(trajectories: list[tuple[np.ndarray, np.ndarray]], kind: str
               ) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    """Remove the per-row mean or least-squares line of every trajectory (MATLAB's detrend).

    Returns the detrended trajectories and the trends ``(n_traj, rows, 2)`` of states and
    inputs: ``[..., 0]`` the value at sample 0, ``[..., 1]`` the slope per sample.
    """
    result, state_trends, input_trends = [], [], []
    for X, U in trajectories:
        (Xd, x_trend), (Ud, u_trend) = _remove_trend(X, kind), _remove_trend(U, kind)
        result.append((Xd, Ud))
        state_trends.append(x_trend)
        input_trends.append(u_trend)
    return result, np.array(state_trends), np.array(input_trends)


def _remove_trend(data: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(data.shape[1], dtype=float)
    if kind == "constant" or data.shape[1] < 2:
        trend = np.stack([data.mean(axis=1), np.zeros(data.shape[0])], axis=1)
    else:
        centred = k - k.mean()
        slope = data @ centred / (centred @ centred)
        trend = np.stack([data.mean(axis=1) - slope * k.mean(), slope], axis=1)
    return data - trend[:, :1] - trend[:, 1:] * k, trend
