"""The layout of the DMDidc regression vector ``v_k``: which signal and lag each entry holds.

``v_k = [x_k; u_k; ...; u_{k-R}; x_{k+1}; instruments]`` (dissertation eqs. 9.19-9.21): ``x_k``
(n), ``u_{k-j}`` for ``j = 0..R`` (m each), ``x_{k+1}`` (n), then the extra instrument variables:
``u_{k-R-l}`` for ``l = 1..L`` (``instruments="inputs"``), ``x_{k-l}`` for ``l = 1..L``
(``"states"``), ``e_{k-l}`` for ``l = 0..R+L`` (exogenous signals ``e``) or ``e_k`` alone
(``"simulated"``: states simulated from a first-stage model, beside the inputs, which instrument
themselves; :mod:`dmdidc.regression.refined`).  Shared by the
streaming sums that build :class:`~dmdidc.statistics.SufficientStatistics` and by the value
itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmdidc.regression.lagged_gram import regression_slots

__all__ = ["StatisticsLayout", "INSTRUMENT_KINDS"]

#: Kinds of instruments the statistics can carry (``None``: none, least squares only).
INSTRUMENT_KINDS = ("inputs", "states", "exogenous", "simulated")


@dataclass(frozen=True)
class StatisticsLayout:
    """Which signal and lag each entry of ``v_k`` holds (see the module notes).

    Attributes
    ----------
    n_states, n_inputs, max_delay : int
        ``n``, ``m`` and ``R``.
    instruments : {None, "inputs", "states", "exogenous", "simulated"}
        Which instrument variables ``v_k`` carries (:mod:`dmdidc.regression.instrumental`).
    instrument_lags : int
        ``L`` (module notes); 0 without instruments.
    n_exogenous : int
        Rows of the exogenous or simulated instrument signal (0 for the other kinds).
    """

    n_states: int
    n_inputs: int
    max_delay: int
    instruments: str | None
    instrument_lags: int
    n_exogenous: int

    @property
    def slots(self) -> list[tuple[str, int]]:
        """``(signal, lag)`` per block of entries; ``("x", -1)`` is the target ``x_{k+1}``."""
        R, L = self.max_delay, self.instrument_lags
        slots = regression_slots(R)
        if self.instruments == "inputs":
            slots += [("u", R + lag) for lag in range(1, L + 1)]
        elif self.instruments == "states":
            slots += [("x", lag) for lag in range(1, L + 1)]
        elif self.instruments == "exogenous":
            slots += [("e", lag) for lag in range(R + L + 1)]
        elif self.instruments == "simulated":
            slots += [("e", 0)]
        return slots

    def width(self, signal: str) -> int:
        return {"x": self.n_states, "u": self.n_inputs, "e": self.n_exogenous}[signal]

    @property
    def dimension(self) -> int:
        """Entries of ``v_k``: the sum of the slots' widths, in closed form (``slots`` has
        ``R`` entries, and a huge ``R`` is refused by size before anything is built)."""
        n, m, q, L = self.n_states, self.n_inputs, self.n_exogenous, self.instrument_lags
        extra = {"inputs": m * L, "states": n * L, "exogenous": q * (self.max_delay + L + 1),
                 "simulated": q}.get(self.instruments, 0)
        return 2 * n + m * (self.max_delay + 1) + extra

    @property
    def n_regressors(self) -> int:
        return self.n_states + self.n_inputs * (self.max_delay + 1)

    @property
    def first_sample(self) -> int:
        """First regression sample ``k0`` of a trajectory (all lags available)."""
        return max(lag for _, lag in self.slots)

    def max_lag(self, signal: str) -> int:
        lags = [lag for s, lag in self.slots if s == signal]
        return max(max(lags), 0) if lags else 0

    @property
    def instrument_indices(self) -> np.ndarray:
        """Entries of ``v_k`` used as instruments (empty without instruments)."""
        if self.instruments is None:
            return np.zeros(0, dtype=int)
        n, p = self.n_states, self.n_regressors
        extra = np.arange(p + n, self.dimension)
        if self.instruments == "exogenous":
            return extra
        return np.concatenate([np.arange(n, p), extra])   # exogenous inputs instrument themselves

    def vectors(self, X: np.ndarray, U: np.ndarray, E: np.ndarray | None = None
                ) -> np.ndarray:
        """The vectors ``v_k`` of one trajectory as columns, ``k = k0 .. K - 1``
        (:attr:`first_sample`): the samples whose moments the statistics sum, in the data's
        units (for a pass over them, e.g. the refinement of an affine fit).

        Parameters
        ----------
        X : ndarray, shape (n, K + 1)
        U : ndarray, shape (m, K)
        E : ndarray, shape (q, K), optional
            The instrument signal (kinds ``"exogenous"`` and ``"simulated"``).

        Returns
        -------
        ndarray, shape (d, max(K - k0, 0))

        Examples
        --------
        >>> import numpy as np
        >>> layout = StatisticsLayout(1, 1, 1, "inputs", 1, 0)
        >>> X, U = np.arange(6.0)[None], 10 + np.arange(5.0)[None]
        >>> layout.vectors(X, U)[:, 0]          # [x_2; u_2; u_1; x_3; u_0]
        array([ 2., 12., 11.,  3., 10.])
        """
        K = U.shape[1]
        k0 = self.first_sample
        if K <= k0:
            return np.zeros((self.dimension, 0))
        signals = {"x": X, "u": U, "e": E}
        return np.concatenate([signals[signal][:, k0 - lag:K - lag]
                               for signal, lag in self.slots if self.width(signal) > 0])

    def labels(self) -> list[str]:
        names = {"x": "x", "u": "u", "e": "e"}
        out = []
        for signal, lag in self.slots:
            when = "k+1" if lag == -1 else ("k" if lag == 0 else f"k-{lag}")
            out += [f"{names[signal]}{i}[{when}]" for i in range(self.width(signal))]
        return out
