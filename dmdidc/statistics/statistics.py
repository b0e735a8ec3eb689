"""Sufficient statistics of the DMDidc regression: the value that adds up, is privatized and fitted.

Every estimator that works from moments (least squares and instrumental variables) needs only

    gram = sum_k v_k v_k^T,   sums = sum_k v_k,   n_samples,

of the regression vectors ``v_k = [x_k; u_k; ...; u_{k-R}; x_{k+1}; instruments]`` (dissertation
eqs. 9.19-9.21; instruments in :mod:`dmdidc.regression.instrumental`).  These sums add up
across chunks, trajectories and clients, so a fleet can be identified from the sum of its
members' statistics, privacy can be applied to them once (:meth:`SufficientStatistics.privatize`),
and :meth:`dmdidc.DMDidc.fit_statistics` fits from them.

Data declared with bounds (``state_bound``, ``input_bound``, ``instrument_bound``) are clipped to
them and divided by them, so every entry of ``v_k`` lies in [-1, 1]: states and inputs of
different size then cost the same privacy budget, and the sensitivity does not depend on units
(:mod:`dmdidc.private.sensitivity`).  The statistics are stored in these unit-box coordinates;
``scale`` converts back (variable ``i`` in the data's units is ``scale[i]`` times the stored one).

Layout of ``v_k`` (``d`` entries, in this order): ``x_k`` (n), ``u_{k-j}`` for ``j = 0..R``
(m each), ``x_{k+1}`` (n), then the extra instrument variables: ``u_{k-R-l}`` for
``l = 1..L`` (``instruments="inputs"``), ``x_{k-l}`` for ``l = 1..L`` (``"states"``) or
``e_{k-l}`` for ``l = 0..R+L`` (exogenous signals ``e``).  Every regression sample of a
trajectory whose lags are all inside it is used: ``k = k0 .. K-1`` with ``k0`` the largest lag
(:class:`~dmdidc.statistics.layout.StatisticsLayout`).  The sums are computed by the streaming
engine :class:`~dmdidc.statistics.streaming.LaggedSums`.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from _toolbox.validation import check_finite_array, check_in_interval, check_integer, read_only
from dmdidc.data import IdData, data_arrays
from dmdidc.errors import DimensionError, ParameterError
from dmdidc.inference.clipping import NO_CLIPPING, Clipping
from dmdidc.statistics.layout import StatisticsLayout
from dmdidc.statistics.streaming import LaggedSums
from dmdidc.trajectories import as_trajectories, check_data

__all__ = ["SufficientStatistics"]

#: Samples per chunk in from_data (bounds the working memory, as DMDidc's chunk_size).
_CHUNK = 65536


@dataclass(frozen=True, eq=False)
class SufficientStatistics:
    """Moments of the DMDidc regression that add up and can be privatized; immutable.

    Build it with :meth:`from_data`; add statistics of several chunks, trajectories or clients
    with ``+`` (or ``sum``); privatize with :meth:`privatize`; fit with
    :meth:`dmdidc.DMDidc.fit_statistics`.

    Attributes
    ----------
    layout : StatisticsLayout
        What ``v_k`` holds; its fields ``n_states``, ``n_inputs``, ``max_delay``,
        ``instruments``, ``instrument_lags`` and ``n_exogenous`` are also attributes of the
        statistics.
    gram : ndarray, shape (d, d)
        ``sum_k v_k v_k^T`` in unit-box coordinates (symmetric, read-only).
    sums : ndarray, shape (d,)
        ``sum_k v_k`` (zero when the trajectories were centred).
    n_samples : int
        Number of regression samples ``N``.
    n_trajectories : int
        Number of trajectories (experiments) summed.
    intercepts : int
        Means removed (one per trajectory with ``detrend="constant"``, one for
        :meth:`centered`); each costs a residual degree of freedom.
    centering : {"none", "trajectory", "global"}
        How the means were removed.
    scale : ndarray, shape (d,)
        Entry ``i`` of ``v_k`` in the data's units is ``scale[i]`` times the stored one (the
        declared bounds; 1 without bounds).
    state_bound, input_bound, instrument_bound : ndarray or None
        The declared bounds (clip levels) per state, input and exogenous signal.
    min_trajectory_samples, max_trajectory_samples : int
        Regression samples of the shortest and longest trajectory (public; the sensitivity
        of some privacy units depends on them).
    clipping : dmdidc.inference.clipping.Clipping or None
        Values of the data clipped to the bounds, per channel of each signal, with the values
        seen and how far beyond the bounds they went: the data owner's information, not part of a
        privatized release (``None`` there).  :meth:`dmdidc.DMDidc.fit_statistics` judges it as
        its ``clipping`` check, :meth:`privatize` warns the owner before the release leaves it
        behind (:mod:`dmdidc.inference.clipping`).
    clipped : int or None
        Values clipped, all signals (``clipping.total``; ``None`` for a release).
    noise_variance : float
        Variance of the privacy noise on every released entry (unit-box coordinates; 0 for
        plain statistics, ``inf`` for SaS noise with ``alpha < 2``).
    releases : tuple of dmdidc.private.release.PrivacyRelease
        The privacy guarantee of every privatized release summed into these statistics
        (``+`` refuses statistics that share one: its noise would be in the sum twice).
    interpolated : int
        Values of the data that were filled in by interpolation (an :class:`~dmdidc.IdData`
        read with ``missing="interpolate"``; 0 for arrays, which cannot tell).
        :meth:`privatize` refuses statistics with any: an interpolated value depends on the
        real readings around its gap, so one replaced reading moves the whole gap and the
        per-unit sensitivity no longer bounds the release.
    release_count : int
        Private releases drawn from these plain statistics so far (:meth:`privatize`);
        :meth:`composed_privacy` is what they cost together.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, SufficientStatistics, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = [random_excitation(1, 200, rng=s) for s in range(3)]
    >>> X = [plant.simulate([0.0], u) for u in U]
    >>> parts = [SufficientStatistics.from_data(x, u, max_delay=3, state_bound=5.0,
    ...                                         input_bound=3.0) for x, u in zip(X, U)]
    >>> total = sum(parts)
    >>> total.n_samples, total.n_trajectories
    (591, 3)
    >>> est = DMDidc(max_delay=3).fit_statistics(total, dt=1.0)
    >>> np.round(est.delay, 6)
    array([1.5])
    """

    layout: StatisticsLayout
    gram: np.ndarray
    sums: np.ndarray
    n_samples: int
    n_trajectories: int
    intercepts: int
    centering: str
    scale: np.ndarray
    state_bound: np.ndarray | None
    input_bound: np.ndarray | None
    instrument_bound: np.ndarray | None
    min_trajectory_samples: int
    max_trajectory_samples: int
    clipping: Clipping | None = NO_CLIPPING
    noise_variance: float = 0.0
    releases: tuple = ()
    interpolated: int = 0
    # ((token, count), ...): how often each statistics object built from data is summed in.
    # A token is made once per built object and kept by dataclasses.replace (centred and
    # from_vector copies are the same data), so S + S holds S's token twice: one time step of
    # S's data then moves the sum twice as far, which the sensitivity must include.  A token
    # is a random 128-bit string, not an object(): a pickled or deep-copied S is a new object
    # with an equal token (an object() token came back as a new one, S + pickled S declared
    # multiplicity 1, half the sensitivity), and objects of other processes never collide
    _sources: tuple = field(default=(), repr=False, compare=False)
    # releases drawn from these plain statistics (privatize appends; a new object, including
    # one made by dataclasses.replace, starts empty): mutable on purpose in a frozen value
    _drawn: list = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("gram", "sums", "scale", "state_bound", "input_bound", "instrument_bound"):
            object.__setattr__(self, name, read_only(getattr(self, name)))
        if not self._sources:
            object.__setattr__(self, "_sources", ((uuid.uuid4().hex, 1),))

    @property
    def clipped(self) -> int | None:
        """Values clipped to the bounds, all signals (``None`` for a release, which does not
        carry the count)."""
        return None if self.clipping is None else self.clipping.total

    @property
    def multiplicity(self) -> int:
        """How often the most repeated part is counted in these statistics: 1 for statistics
        built from data and sums of distinct parts; ``c`` when one part object is added ``c``
        times (``S + S`` or :func:`dmdidc.resampling.weighted_total` with count ``c``).  One
        privacy unit of that part then moves the sum ``c`` times as far, so
        :meth:`sensitivity` is multiplied by it.  A part is recognized through copies,
        ``dataclasses.replace``, ``from_vector``, pickling and ``copy.deepcopy``; parts rebuilt
        from the same data (another ``from_data`` call) are not: add each part once."""
        return max(count for _, count in self._sources)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_data(cls, X: Any, U: Any = None, *, max_delay: int, state_bound: Any = None,
                  input_bound: Any = None, instruments: Any = None,
                  instrument_lags: int | None = None, instrument_bound: Any = None,
                  detrend: str | None = None) -> SufficientStatistics:
        """Statistics of one or several trajectories.

        Parameters
        ----------
        X : array_like, shape (n, K + 1), a list of such arrays, or IdData
            States ``x_0 .. x_K`` (time on the last axis; several trajectories as a list), or
            an :class:`~dmdidc.IdData` without ``U`` (its deviations from its operating point:
            a public operating point, as clipping needs).
        U : array_like, shape (m, K), or a list of such arrays
            Inputs ``u_0 .. u_{K-1}`` (with arrays).
        max_delay : int
            ``R``, the delay bound in periods.
        state_bound, input_bound : float or array_like, shape (n,) / (m,), optional
            Symmetric bounds ``|x_i| <= state_bound[i]``, ``|u_j| <= input_bound[j]``: the
            data are clipped to them and divided by them (needed by :meth:`privatize`).
            Clipping must not depend on the data, so subtract a public operating point
            (e.g. a set point) before, not a data mean.
        instruments : {None, "inputs", "states"} or array_like, shape (q, K), or a list
            Extra variables for instrumental variables (:mod:`dmdidc.regression.instrumental`):
            ``"inputs"`` (inputs lagged beyond ``R``), ``"states"`` (lagged states) or an
            exogenous signal ``e`` per trajectory (e.g. a known excitation), used at lags
            ``0 .. R + L``.
        instrument_lags : int, optional
            ``L``; default: the smallest giving ``n`` more instruments than regressors.
        instrument_bound : float or array_like, shape (q,), optional
            Bound of an exogenous instrument signal (needed to privatize).
        detrend : {None, "constant"}, default None
            ``"constant"`` removes each trajectory's mean from its regression samples (an
            intercept per trajectory: the model is in deviations from each experiment's
            operating point).

        Returns
        -------
        SufficientStatistics

        Raises
        ------
        DimensionError, NonFiniteError, ParameterError
            Malformed data, bounds or options.
        """
        # an IdData knows what missing="interpolate" filled in; privatize must refuse that
        interpolated = X.missing_report.interpolated if isinstance(X, IdData) else 0
        X, U = data_arrays(X, U, caller="SufficientStatistics.from_data")
        trajectories, signals = _trajectories(X, U, instruments)
        kind = None if instruments is None else (
            instruments if isinstance(instruments, str) else "exogenous")
        stats = cls.from_trajectories(trajectories, signals, max_delay=max_delay,
                                      instruments=kind, instrument_lags=instrument_lags,
                                      state_bound=state_bound, input_bound=input_bound,
                                      instrument_bound=instrument_bound, detrend=detrend)
        return dataclasses.replace(stats, interpolated=interpolated) if interpolated else stats

    @classmethod
    def from_trajectories(cls, trajectories: list[tuple[np.ndarray, np.ndarray]],
                          signals: list[np.ndarray | None], *, max_delay: int,
                          instruments: str | None = None, instrument_lags: int | None = None,
                          **options: Any) -> SufficientStatistics:
        """Statistics of validated trajectories (the engine of :meth:`from_data`).

        Parameters
        ----------
        trajectories : list of (X (n, K+1), U (m, K))
            Already validated (:func:`dmdidc.trajectories.as_trajectories`).
        signals : list of ndarray (q, K) or None
            The instrument signal per trajectory for the kinds ``"exogenous"`` and
            ``"simulated"`` (states simulated from a first-stage model, :mod:`dmdidc.
            regression.refined`), else ``None`` each.
        max_delay : int
        instruments : {None, "inputs", "states", "exogenous", "simulated"}
        instrument_lags : int, optional
        **options
            ``state_bound``, ``input_bound``, ``instrument_bound``, ``detrend`` as in
            :meth:`from_data`.

        Returns
        -------
        SufficientStatistics
        """
        n, m = trajectories[0][0].shape[0], trajectories[0][1].shape[0]
        q = signals[0].shape[0] if signals[0] is not None else 0
        sums = LaggedSums(n, m, max_delay, instruments=instruments,
                          instrument_lags=instrument_lags, n_exogenous=q, **options)
        rest = sums.add_short(trajectories, signals)      # many short ones: few products
        for (Xi, Ui), Ei in ((trajectories[i], signals[i]) for i in rest):
            sums.new_trajectory()
            for a in range(0, Ui.shape[1], _CHUNK):           # bounded working memory
                b = min(a + _CHUNK, Ui.shape[1])
                sums.update(Xi[:, a:b + 1], Ui[:, a:b], None if Ei is None else Ei[:, a:b])
        return SufficientStatistics(**sums.totals())

    @classmethod
    def plain(cls, layout: StatisticsLayout, gram: np.ndarray, sums: np.ndarray,
              n_samples: int) -> SufficientStatistics:
        """Uncentred statistics in the data's units (no bounds, no privacy) of moments that
        were summed elsewhere, e.g. by a least-squares solver's accumulator: one trajectory of
        ``n_samples`` samples.  The count must be the number of rows summed: the fit's
        degrees of freedom count them, and centring (:meth:`centered`, an affine fit) removes
        the mean ``sums / n_samples``.  Moments of rows with weights that do not sum to an
        integer (forgetting, down-weighted rows) are given by :meth:`weighted`.

        Examples
        --------
        >>> import numpy as np
        >>> from dmdidc.statistics.layout import StatisticsLayout
        >>> V = np.random.default_rng(0).standard_normal((3, 50))   # [x_k; u_k; x_k+1]
        >>> stats = SufficientStatistics.plain(StatisticsLayout(1, 1, 0, None, 0, 0),
        ...                                    V @ V.T, V.sum(axis=1), 50)
        >>> stats.n_regressors, stats.centering
        (2, 'none')

        Raises
        ------
        DimensionError
            ``gram`` not ``(d, d)`` or ``sums`` not ``(d,)``, ``d = layout.dimension``.
        NonFiniteError
            Non-finite moments.
        ParameterError
            ``n_samples`` not an integer >= 0.
        """
        d = layout.dimension
        gram = check_finite_array("gram", gram, ndim=2)
        sums = check_finite_array("sums", sums, ndim=1)
        for name, value, shape in (("gram", gram, (d, d)), ("sums", sums, (d,))):
            if value.shape != shape:
                raise DimensionError(f"{name} has shape {value.shape}; the layout's vector "
                                     f"v_k has {d} entries: expected {shape}")
        n_samples = check_integer("n_samples", n_samples, minimum=0)
        return cls(layout=layout, gram=0.5 * (gram + gram.T), sums=sums.copy(),
                   n_samples=n_samples, n_trajectories=1, intercepts=0, centering="none",
                   scale=np.ones(gram.shape[0]), state_bound=None, input_bound=None,
                   instrument_bound=None, min_trajectory_samples=int(n_samples),
                   max_trajectory_samples=int(n_samples))

    @classmethod
    def weighted(cls, layout: StatisticsLayout, gram: np.ndarray, sums: np.ndarray,
                 weight: float) -> SufficientStatistics:
        """:meth:`plain` statistics of rows summed with weights ``w_k`` (exponential
        forgetting, down-weighted outliers) that total ``weight``: the moments are scaled by
        ``N / weight`` with ``N`` the total rounded, so the weights sum to ``n_samples = N``.

        Centring removes ``sums sums^T / n_samples``; with the moments of ``weight`` and a
        rounded count it would remove ``(weight - N) / N`` times the squared mean too much or
        too little (data recorded at a level of 350 with deviations of 0.5 and ``weight``
        about 1000 lost the centred Gram's positive definiteness).  Scaled, the weighted
        mean and covariance are the rows' own, the coefficients of a fit and their
        covariance ``sigma^2 G^{-1}`` do not change (both factors scale), and ``N`` counts
        the degrees of freedom.  A total below one half is counted as one sample (the fit
        refuses so few anyway).

        Examples
        --------
        >>> import numpy as np
        >>> from dmdidc.statistics.layout import StatisticsLayout
        >>> V = 350.0 + np.random.default_rng(0).standard_normal((3, 50))
        >>> w = 0.99 ** np.arange(50)[::-1]          # forgetting: sum 39.499
        >>> stats = SufficientStatistics.weighted(StatisticsLayout(1, 1, 0, None, 0, 0),
        ...                                       (V * w) @ V.T, V @ w, w.sum())
        >>> stats.n_samples
        39
        >>> mean = V @ w / w.sum()
        >>> bool(np.allclose(stats.centered().gram / 39,
        ...                  ((V.T - mean).T * w) @ (V.T - mean) / w.sum()))
        True

        Raises
        ------
        ParameterError
            ``weight`` not finite or negative.
        """
        return cls.plain(layout, *weighted_moments(gram, sums, weight))

    # ------------------------------------------------------------------ layout
    n_states = property(lambda self: self.layout.n_states, doc="``n``")
    n_inputs = property(lambda self: self.layout.n_inputs, doc="``m``")
    max_delay = property(lambda self: self.layout.max_delay, doc="``R``")
    instruments = property(lambda self: self.layout.instruments, doc="instrument kind")
    instrument_lags = property(lambda self: self.layout.instrument_lags, doc="``L``")
    n_exogenous = property(lambda self: self.layout.n_exogenous, doc="exogenous signal rows")

    @property
    def n_regressors(self) -> int:
        """``p = n + m (R + 1)``."""
        return self.layout.n_regressors

    @property
    def labels(self) -> list[str]:
        """Name of every entry of ``v_k``, e.g. ``"u1[k-2]"``."""
        return self.layout.labels()

    @property
    def instrument_indices(self) -> np.ndarray:
        """Entries of ``v_k`` that are instruments (for :mod:`dmdidc.regression.instrumental`)."""
        return self.layout.instrument_indices

    @property
    def released_sums(self) -> bool:
        """Whether ``sums`` are part of the vector form (not when the data were centred)."""
        return self.centering == "none"

    # ------------------------------------------------------------------ algebra
    def _compatible(self, other: SufficientStatistics) -> None:
        if not isinstance(other, SufficientStatistics):
            raise ParameterError(f"can only add SufficientStatistics; got "
                                 f"{type(other).__name__}")
        mine, theirs = self.layout, other.layout
        if mine != theirs:
            raise DimensionError(f"statistics with different layouts cannot be added: {mine} "
                                 f"and {theirs}")
        if not np.array_equal(self.scale, other.scale):
            raise ParameterError("statistics with different bounds (state_bound, input_bound, "
                                 "instrument_bound) cannot be added: declare the same bounds")
        if (self.centering == "none") != (other.centering == "none"):
            raise ParameterError(f"cannot add centred and uncentred statistics (centering "
                                 f"{self.centering!r} and {other.centering!r})")

    def __add__(self, other: Any) -> SufficientStatistics:
        if isinstance(other, int) and other == 0:      # sum() starts from 0
            return self
        self._compatible(other)
        if {release.token for release in self.releases} & {r.token for r in other.releases}:
            raise ParameterError("these statistics share a privatized release (one noise "
                                 "realization): their sum would hold it twice and declare "
                                 "the variance of two independent releases; add distinct "
                                 "releases, or resample parts with dmdidc.resampling."
                                 "weighted_total (which declares the repeated noise)")
        return self._weighted_sum([self, other], [1, 1])

    __radd__ = __add__

    @staticmethod
    def _weighted_sum(parts: list[SufficientStatistics], counts: Any) -> SufficientStatistics:
        """``sum_i counts[i] * parts[i]`` of compatible statistics (unchecked: ``+`` and
        :func:`dmdidc.resampling.weighted_total` check them), the one rule that combines every
        field.  Part ``i`` counted ``c`` times brings its moments and counts ``c`` times and its
        privatized release's one noise realization ``c`` times: variance ``c^2 sigma_i^2``,
        the release listed ``c`` times (``+`` counts each part once: ``sigma_1^2 +
        sigma_2^2``).

        Examples
        --------
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> a, b = (SufficientStatistics.from_data(rng.standard_normal((1, 31)),
        ...                                        rng.standard_normal((1, 30)), max_delay=1)
        ...         for _ in range(2))
        >>> total = SufficientStatistics._weighted_sum([a, b], np.array([2, 1]))
        >>> total.n_samples == 2 * a.n_samples + b.n_samples
        True
        """
        drawn = [(int(c), p) for p, c in zip(parts, counts, strict=True) if c > 0]

        def total(field: str) -> Any:      # (a part counted once is added as it is)
            return sum(getattr(p, field) if c == 1 else c * getattr(p, field)
                       for c, p in drawn)

        used = [p for _, p in drawn]
        sources: dict[object, int] = {}
        for c, p in drawn:
            for token, count in p._sources:
                sources[token] = sources.get(token, 0) + c * count
        return dataclasses.replace(
            used[0], gram=total("gram"), sums=total("sums"), n_samples=total("n_samples"),
            n_trajectories=total("n_trajectories"), intercepts=total("intercepts"),
            # a mixture of centrings is centred per trajectory
            centering=(used[0].centering if len({p.centering for p in used}) == 1
                       else "trajectory"),
            min_trajectory_samples=min(p.min_trajectory_samples for p in used),
            max_trajectory_samples=max(p.max_trajectory_samples for p in used),
            clipping=(None if any(p.clipping is None for p in used)
                      else sum((p.clipping.times(c) for c, p in drawn), NO_CLIPPING)),
            interpolated=total("interpolated"),
            noise_variance=float(sum(c ** 2 * p.noise_variance for c, p in drawn)),
            releases=tuple(release for c, p in drawn for _ in range(c)
                           for release in p.releases),
            _sources=tuple(sources.items()))

    def centered(self) -> SufficientStatistics:
        """The statistics with their overall mean removed (one intercept for all samples).

        ``gram - sums sums^T / N``.  To remove each trajectory's own mean, center each part
        before adding (or use ``from_data(..., detrend="constant")``).

        Raises
        ------
        ParameterError
            Privatized statistics (center before privatizing: the noise on ``sums`` would
            enter the Gram) or statistics without samples.
        """
        if self.releases:
            raise ParameterError("centered() needs plain statistics; privatized ones carry "
                                 "noisy sums. Build them with detrend='constant' before "
                                 "privatizing")
        if self.n_samples == 0:
            raise ParameterError("centered() needs at least one sample")
        if self.centering != "none":
            return self
        gram = self.gram - np.outer(self.sums, self.sums) / self.n_samples
        return dataclasses.replace(self, gram=gram, sums=np.zeros_like(self.sums),
                                   intercepts=self.intercepts + 1, centering="global")

    # ------------------------------------------------------------------ vector form
    @property
    def dimension(self) -> int:
        """Length of :meth:`to_vector`: the upper triangle of ``gram``, and ``sums`` if
        :attr:`released_sums`."""
        d = self.gram.shape[0]
        return d * (d + 1) // 2 + (d if self.released_sums else 0)

    def to_vector(self) -> np.ndarray:
        """Flat form: ``gram[triu]`` row by row, then ``sums`` (if released); shape
        (dimension,).  Each distinct entry appears once (the Gram is symmetric)."""
        upper = self.gram[np.triu_indices(self.gram.shape[0])]
        return np.concatenate([upper, self.sums]) if self.released_sums else upper.copy()

    @classmethod
    def from_vector(cls, vector: Any, *, like: SufficientStatistics,
                    noise_variance: float | None = None) -> SufficientStatistics:
        """Statistics with the layout and metadata of ``like`` and the values of ``vector``.

        Parameters
        ----------
        vector : array_like, shape (like.dimension,)
            As :meth:`to_vector` (e.g. a combination computed by federated inference).
        like : SufficientStatistics
        noise_variance : float, optional
            Noise variance per entry of the new values (default: that of ``like``).

        Raises
        ------
        DimensionError
            Wrong length.
        """
        vector = check_finite_array("vector", vector, ndim=1)
        if vector.size != like.dimension:
            raise DimensionError(f"vector has {vector.size} entries; expected {like.dimension} "
                                 f"(like.dimension)")
        d = like.gram.shape[0]
        rows, cols = np.triu_indices(d)
        count = rows.size
        gram = np.zeros((d, d))
        gram[rows, cols] = vector[:count]
        gram[cols, rows] = vector[:count]
        sums = vector[count:] if like.released_sums else np.zeros(d)
        return dataclasses.replace(
            like, gram=gram, sums=sums,
            noise_variance=like.noise_variance if noise_variance is None else noise_variance)

    def noise_covariance(self) -> np.ndarray:
        """Covariance of the privacy noise on :meth:`to_vector`, shape (dimension, dimension).

        ``noise_variance`` times the identity (every released entry gets independent noise of
        the same law); zero for plain statistics, ``inf`` on the diagonal for SaS noise with
        ``alpha < 2`` (no finite variance: see ``releases`` for the noise law).
        """
        return np.diag(np.full(self.dimension, float(self.noise_variance)))

    # ------------------------------------------------------------------ privacy
    @property
    def privacy(self):
        """The guarantee of a single privatized release (``None`` for plain statistics and
        for sums of several releases, whose guarantees are in ``releases``)."""
        return self.releases[0] if len(self.releases) == 1 else None

    @property
    def release_count(self) -> int:
        """Private releases drawn from these plain statistics so far (each call of
        :meth:`privatize` draws fresh noise on the same data: one more release)."""
        return len(self._drawn)

    def composed_privacy(self):
        """The accountant's guarantee of every release drawn from these statistics so far
        (:func:`dmdidc.private.release.composed_guarantee`; ``None`` before the first).

        It covers releases of this object only: statistics built again from the same data, or
        sums holding them, keep their own count.

        Raises
        ------
        AccountingError
            The accountant has no bound for the composition (a release above epsilon 700
            composed with another); later releases still go through, their
            ``RepeatedReleaseWarning`` saying so.
        """
        from dmdidc.private.release import composed_guarantee

        return composed_guarantee(self._drawn) if self._drawn else None

    def sensitivity(self, unit: str = "sample", *, window: int | None = None):
        """How much one privacy unit can move :meth:`to_vector`
        (:mod:`dmdidc.private.sensitivity`)."""
        from dmdidc.private.sensitivity import statistics_sensitivity

        return statistics_sensitivity(self, unit, window=window)

    def privatize(self, mechanism: str = "gaussian", *, epsilon: float,
                  delta: float | None = None, unit: str = "sample", window: int | None = None,
                  alpha: float | None = None,
                  rng: np.random.Generator | int | None = None,
                  accounted: bool = False) -> SufficientStatistics:
        """Release the statistics with differential privacy (:mod:`dmdidc.private.release`).

        Each call is one more release of the same data (fresh noise): the statistics count
        them (:attr:`release_count`), and from the second call on a
        :class:`~dmdidc.RepeatedReleaseWarning` gives the accountant's composed guarantee of
        all of them (10 Gaussian releases at (1, 1e-5) per sample are (3.62, 1e-5)), since each
        release reports only its own.  Release once and reuse the result.

        Parameters
        ----------
        mechanism : {"gaussian", "laplace", "sas"}, default "gaussian"
            Noise added once to the whole vector (one release of dimension
            :attr:`dimension`): Gaussian with the l2-sensitivity, calibrated to
            ``(epsilon, delta)``; Laplace or symmetric alpha-stable with the l1-sensitivity,
            calibrated to pure ``epsilon``.
        epsilon : float
        delta : float, optional
            Needed (and only accepted) for ``"gaussian"``.
        unit : {"sample", "window", "trajectory"}, default "sample"
            What neighbouring data sets differ in: one time step (all signals at one ``k``),
            ``window`` consecutive time steps, or one whole trajectory.
        window : int, optional
            Time steps of a window (``unit="window"`` only).
        alpha : float, optional
            Stability index in (0, 2) for ``"sas"``.
        rng : numpy.random.Generator, int or None
        accounted : bool, default False
            ``True`` states that the caller composes repeated releases itself (e.g. a study
            drawing independent noise on simulated data): no warning; still counted.

        Returns
        -------
        SufficientStatistics
            With the noisy values, ``noise_variance`` and ``privacy``.

        Warns
        -----
        RepeatedReleaseWarning
            From the second release of these statistics on (unless ``accounted``).
        DiagnosticWarning
            Check ``clipping`` failed: more than 1 % of a channel's values were clipped to the
            bounds, which biases the model (:mod:`dmdidc.inference.clipping`).  The release
            does not carry the count of clipped values (the owner's information), so its fit
            cannot report it: this warning is the only one.
        """
        from dmdidc.private.release import privatize_statistics

        return privatize_statistics(self, mechanism, epsilon=epsilon, delta=delta, unit=unit,
                                    window=window, alpha=alpha, rng=rng, accounted=accounted)

    # ------------------------------------------------------------------ moments
    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """``(gram, sums)`` in the data's units (the stored values times ``scale``)."""
        return self.gram * np.outer(self.scale, self.scale), self.sums * self.scale

    def __repr__(self) -> str:
        private = f", privacy={self.privacy}" if self.privacy is not None else ""
        return (f"SufficientStatistics(n={self.n_states}, m={self.n_inputs}, R={self.max_delay}, "
                f"instruments={self.instruments!r}, d={self.gram.shape[0]}, "
                f"n_samples={self.n_samples}, n_trajectories={self.n_trajectories}, "
                f"centering={self.centering!r}{private})")


def weighted_moments(gram: Any, sums: Any, weight: float) -> tuple[np.ndarray, np.ndarray, int]:
    """``(gram, sums, N)``: moments of rows whose weights total ``weight``, scaled by ``N /
    weight`` with ``N`` the total rounded (at least 1 when positive), so that the weights sum
    to the count ``N`` that the solvers take for the mean ``sums / N`` (centring, the
    intercept) and the degrees of freedom (:meth:`SufficientStatistics.weighted`).

    Raises
    ------
    ParameterError
        ``weight`` not finite or negative.
    """
    weight = check_in_interval("weight", weight, 0.0, np.inf, high_open=True)
    count = max(int(round(weight)), 1) if weight > 0 else 0
    factor = count / weight if weight > 0 else 1.0
    return np.asarray(gram, dtype=float) * factor, np.asarray(sums, dtype=float) * factor, count


def _trajectories(X: Any, U: Any, instruments: Any, *, check_orientation: bool = True
                  ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray | None]]:
    """Validated trajectories and, for exogenous instruments, their signals."""
    trajectories = as_trajectories(X, U, check_orientation=check_orientation)
    if instruments is None or isinstance(instruments, str):
        if isinstance(instruments, str) and instruments not in ("inputs", "states"):
            raise ParameterError(f"instruments must be None, 'inputs', 'states' or an array of "
                                 f"exogenous signals; got {instruments!r}")
        return trajectories, [None] * len(trajectories)
    signals = instruments if isinstance(instruments, (list, tuple)) else [instruments]
    if len(signals) != len(trajectories):
        raise DimensionError(f"got {len(signals)} instrument signals for {len(trajectories)} "
                             f"trajectories; give one per trajectory")
    out = []
    for i, (E, (_, Ui)) in enumerate(zip(signals, trajectories, strict=True)):
        E = check_finite_array(f"instruments[{i}]", E)
        E = check_data(f"instruments[{i}]", E[None] if E.ndim == 1 else E)
        if E.ndim != 2 or E.shape[1] != Ui.shape[1]:
            raise DimensionError(f"instruments[{i}] has shape {E.shape}; expected (q, "
                                 f"{Ui.shape[1]}) (one column per input sample)")
        if out and E.shape[0] != out[0].shape[0]:
            raise DimensionError(f"instruments[{i}] has {E.shape[0]} rows; the first has "
                                 f"{out[0].shape[0]}")
        out.append(E)
    return trajectories, out
