"""Identification data with its names, units, sample time and experiments (like MATLAB's iddata).

An :class:`IdData` holds what a fit needs besides the numbers: the sampling period, the name
and unit of every state and input, the operating point the data were recorded around, several
experiments (independent trajectories), where samples were missing and what was done about it
(:mod:`dmdidc.missing`), and where the data came from.  It is immutable.  Everything that takes
arrays ``X, U`` takes it instead (:meth:`dmdidc.DMDidc.fit`, ``partial_fit``, ``compare``,
``resid``, ``confidence_intervals``); a model fitted on it carries its names, units and
provenance into the saved file.

Conventions as everywhere in the toolbox: time on the last axis, states ``X`` (n, K + 1),
inputs ``U`` (m, K), ``u_k`` held over ``[kT, (k+1)T)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_positive, read_only
from dmdidc.data_io import read_fields, write_data
from dmdidc.missing import MissingReport, handle_missing
from dmdidc.model import OperatingPoint, _operating_point
from dmdidc.trajectories import as_trajectories

__all__ = ["IdData", "as_arrays", "data_arrays", "read_data"]


def one_channel(value: Any) -> Any:
    """``value`` with a 1-D array read as one channel, shape (1, samples); an array of any
    other shape, or a list of experiments (each converted alike), unchanged for the checks
    that follow.  The one rule for every entry point: :class:`IdData`, ``read_data`` and the
    estimators' ``fit`` and ``partial_fit`` with arrays (:func:`data_arrays`).

    Examples
    --------
    >>> one_channel(np.arange(3.0)).shape
    (1, 3)
    >>> [a.shape for a in one_channel([np.zeros(4), np.zeros((2, 4))])]
    [(1, 4), (2, 4)]
    >>> one_channel([0.5, 1.0, 1.5]).shape                  # numbers: one channel
    (1, 3)
    """
    if isinstance(value, (list, tuple)):
        if value and all(np.ndim(v) == 0 and not isinstance(v, (str, bytes)) for v in value):
            return np.asarray(value)[None]          # a list of numbers: one channel's samples
        return type(value)(one_channel(v) for v in value)
    if isinstance(value, (str, bytes)) or np.ndim(value) != 1:
        return value
    return np.asarray(value)[None]


def _channels(name: str, value: Any, index: int | None) -> np.ndarray:
    """A float array (rows, samples); a 1-D array is one channel.  NaN allowed (missing)."""
    tag = "" if index is None else f"[{index}]"
    try:
        array = one_channel(np.array(value, dtype=float))
    except (TypeError, ValueError) as exc:
        raise ParameterError(f"{name}{tag} must be a numeric array; {exc}") from exc
    if array.ndim != 2:
        raise DimensionError(f"{name}{tag} must have shape (channels, samples); got "
                             f"{array.shape}")
    return array


def _labels(name: str, value: Any, size: int, default: str) -> tuple[str, ...]:
    """``size`` strings: the given ones, or ``default`` numbered."""
    if value is None:
        return tuple(f"{default}{i}" for i in range(size))
    labels = (value,) if isinstance(value, str) else tuple(value)
    if len(labels) != size or not all(isinstance(s, str) for s in labels):
        raise DimensionError(f"{name} must be {size} string(s), one per channel; got "
                             f"{list(labels)!r}")
    return labels


@dataclass(frozen=True, eq=False, init=False)
class IdData:
    """Identification data: experiments of states and inputs with their metadata (immutable).

    Parameters
    ----------
    X : array_like, shape (n, K + 1), or a list of such arrays (one per experiment)
        States ``x_0 .. x_K``; NaN marks a missing sample (see ``missing``).
    U : array_like, shape (m, K), or a list of such arrays
        Inputs ``u_0 .. u_{K-1}``.
    dt : float
        Sampling period ``T`` in seconds.
    state_names, input_names : sequence of str, optional
        One name per state / input (default ``x0, x1, ..`` and ``u0, u1, ..``).
    state_units, input_units : sequence of str, optional
        One unit per state / input (default ``""``).
    operating_point : OperatingPoint or (x_op, u_op), optional
        The equilibrium the data were recorded around, in the data's units: a fit works on
        the deviations and the model carries it (:class:`~dmdidc.OperatingPoint`).
    missing : {"error", "interpolate", "drop"}, default "error"
        What to do with NaN samples (:mod:`dmdidc.missing`): refuse them, interpolate the gaps
        linearly, or split the experiments at them.  ``missing_report`` says what was done.
    source : str, optional
        Where the data came from (a file name, a rig, a date): saved with the model.

    Attributes
    ----------
    X, U : tuple of ndarray
        The (read-only) experiments after the missing samples were handled.
    missing_report : MissingReport
        How many samples were missing, where, and what was done.

    Raises
    ------
    DimensionError
        Shapes that do not fit together (or look transposed), names or units of the wrong
        number.
    NonFiniteError
        Infinite values, or NaN with ``missing="error"`` (the message says where).
    ParameterError
        A non-positive ``dt``, an unknown ``missing`` policy.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DMDidc, DelayedPlant, IdData, random_excitation
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> U = random_excitation(1, 400, rng=0)
    >>> noise = 0.01 * np.random.default_rng(1).standard_normal((1, 401))
    >>> X = plant.simulate([0.0], U) + 300.0 + noise    # kelvin, around 300 K
    >>> X[0, [50, 51, 200]] = np.nan               # three lost samples
    >>> data = IdData(X, U, dt=1.0, state_names=["T"], state_units=["K"],
    ...               input_names=["heater"], input_units=["kW"], missing="drop")
    >>> print(data.missing_report)    # doctest: +NORMALIZE_WHITESPACE
    3 missing value(s) (experiment 0, T: samples 50-51, 200); experiments split: 1 -> 3;
    3 sample(s) removed
    >>> est = DMDidc(max_delay=3).fit(data)
    >>> np.round(est.delay, 1), est.model_.info.state_names
    (array([1.5]), ('T',))
    """

    X: tuple[np.ndarray, ...]
    U: tuple[np.ndarray, ...]
    dt: float
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    state_units: tuple[str, ...]
    input_units: tuple[str, ...]
    operating_point: OperatingPoint | None
    source: str | None
    missing_report: MissingReport = field(repr=False)

    def __init__(self, X: Any, U: Any, *, dt: float, state_names: Any = None,
                 input_names: Any = None, state_units: Any = None, input_units: Any = None,
                 operating_point: Any = None, missing: str = "error",
                 source: str | None = None) -> None:
        several = isinstance(X, (list, tuple))
        if several != isinstance(U, (list, tuple)):
            raise DimensionError("X and U must both be arrays or both be lists of experiments")
        Xs, Us = (list(X), list(U)) if several else ([X], [U])
        if len(Xs) != len(Us) or not Xs:
            raise DimensionError(f"got {len(Xs)} state and {len(Us)} input experiments; "
                                 f"expected the same positive number")
        Xs = [_channels("X", x, i if several else None) for i, x in enumerate(Xs)]
        Us = [_channels("U", u, i if several else None) for i, u in enumerate(Us)]
        for i, (x, u) in enumerate(zip(Xs, Us, strict=True)):
            if u.shape[1] != x.shape[1] - 1:
                as_trajectories([x], [u])           # raises with the toolbox's message
            if (x.shape[0], u.shape[0]) != (Xs[0].shape[0], Us[0].shape[0]):
                raise DimensionError(f"experiment {i} has {x.shape[0]} states and "
                                     f"{u.shape[0]} inputs; experiment 0 has "
                                     f"{Xs[0].shape[0]} and {Us[0].shape[0]}")
        n, m = Xs[0].shape[0], Us[0].shape[0]
        labels = {"state_names": _labels("state_names", state_names, n, "x"),
                  "input_names": _labels("input_names", input_names, m, "u"),
                  "state_units": _labels("state_units", state_units or [""] * n, n, ""),
                  "input_units": _labels("input_units", input_units or [""] * m, m, "")}
        experiments, report = handle_missing(
            list(zip(Xs, Us, strict=True)),
            list(labels["state_names"] + labels["input_names"]), missing)
        experiments = as_trajectories([x for x, _ in experiments], [u for _, u in experiments])
        if source is not None and not isinstance(source, str):
            raise ParameterError(f"source must be a string or None; got "
                                 f"{type(source).__name__}")
        object.__setattr__(self, "X", tuple(read_only(x) for x, _ in experiments))
        object.__setattr__(self, "U", tuple(read_only(u) for _, u in experiments))
        object.__setattr__(self, "dt", check_positive("dt", dt))
        for name, value in labels.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "operating_point", _operating_point(operating_point, n, m))
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "missing_report", report)

    # ------------------------------------------------------------------ sizes
    @property
    def n_states(self) -> int:
        """Number of states ``n``."""
        return self.X[0].shape[0]

    @property
    def n_inputs(self) -> int:
        """Number of inputs ``m``."""
        return self.U[0].shape[0]

    @property
    def n_experiments(self) -> int:
        """Number of experiments (after ``missing="drop"`` split them)."""
        return len(self.X)

    @property
    def n_samples(self) -> int:
        """Input samples ``K`` summed over the experiments."""
        return sum(u.shape[1] for u in self.U)

    def time(self, experiment: int = 0) -> np.ndarray:
        """Sample times ``0, T, .., K T`` of an experiment's states, shape (K + 1,)."""
        return self.dt * np.arange(self.X[self._index(experiment)].shape[1])

    def _index(self, experiment: int) -> int:
        if isinstance(experiment, bool) or not isinstance(experiment, (int, np.integer)) \
                or not -self.n_experiments <= experiment < self.n_experiments:
            raise ParameterError(f"experiment must be an integer in [0, {self.n_experiments}); "
                                 f"got {experiment!r}")
        return int(experiment) % self.n_experiments

    # ------------------------------------------------------------------ views
    def arrays(self, *, deviations: bool = False) -> tuple[Any, Any]:
        """``(X, U)``: arrays for one experiment, lists for several (what ``fit`` takes).

        Parameters
        ----------
        deviations : bool, default False
            Subtract the operating point (when there is one).
        """
        X, U = list(self.X), list(self.U)
        if deviations and self.operating_point is not None:
            X = [x - self.operating_point.state[:, None] for x in X]
            U = [u - self.operating_point.input[:, None] for u in U]
        return (X[0], U[0]) if len(X) == 1 else (X, U)

    def experiment(self, index: int | list[int]) -> IdData:
        """One experiment, or a list of them, as an :class:`IdData` with the same metadata
        (and the missing-sample report of the data they came from)."""
        several = isinstance(index, (list, tuple, range))
        indices = [self._index(i) for i in (index if several else [index])]
        if not indices:
            raise ParameterError("experiment needs at least one index")
        return self._replace([self.X[i] for i in indices], [self.U[i] for i in indices],
                             self.missing_report)

    @classmethod
    def merge(cls, *datasets: IdData) -> IdData:
        """The experiments of several datasets with the same signals, dt and operating point.

        Raises
        ------
        ParameterError
            Datasets whose sampling period, names, units or operating point differ.
        """
        if not datasets or not all(isinstance(d, IdData) for d in datasets):
            raise ParameterError("merge takes one or more IdData")
        first = datasets[0]
        for i, other in enumerate(datasets[1:], 1):
            for name in ("dt", "state_names", "input_names", "state_units", "input_units"):
                if getattr(other, name) != getattr(first, name):
                    raise ParameterError(f"dataset {i} has {name} {getattr(other, name)!r}; "
                                         f"dataset 0 has {getattr(first, name)!r}")
            if _op_tuple(other.operating_point) != _op_tuple(first.operating_point):
                raise ParameterError(f"dataset {i} has another operating point than dataset "
                                     f"0; subtract them first or give them the same one")
        return first._replace([x for d in datasets for x in d.X],
                              [u for d in datasets for u in d.U],
                              MissingReport.combined([d.missing_report for d in datasets]))

    def _replace(self, X: list, U: list, report: MissingReport) -> IdData:
        data = IdData(X, U, dt=self.dt, state_names=self.state_names,
                      input_names=self.input_names, state_units=self.state_units,
                      input_units=self.input_units, operating_point=self.operating_point,
                      source=self.source)
        object.__setattr__(data, "missing_report", report)
        return data

    def provenance(self) -> dict[str, Any]:
        """What a saved model records about its data (source, sizes, missing samples)."""
        report = self.missing_report
        return {"source": self.source, "experiments": self.n_experiments,
                "samples": self.n_samples, "dt": self.dt,
                "missing": {"policy": report.policy, "values": report.n_missing,
                            "interpolated": report.interpolated, "removed": report.removed}}

    def __repr__(self) -> str:
        def signals(names, units):
            return ", ".join(f"{n} [{u}]" if u else n for n, u in zip(names, units, strict=True))
        return (f"IdData({self.n_experiments} experiment(s), {self.n_samples} samples, "
                f"dt={self.dt:g} s; states: {signals(self.state_names, self.state_units)}; "
                f"inputs: {signals(self.input_names, self.input_units)})")

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> Path:
        """Write ``.csv`` (one row per sample, header ``name [unit]``) or ``.npz`` (arrays and
        metadata); :meth:`load` reads both (:mod:`dmdidc.data_io`).  A CSV keeps names,
        units and times but not which columns are inputs: read it back with
        ``load(path, inputs=[...])`` (and ``experiment="experiment"`` when it holds several
        experiments); the ``.npz`` round-trips everything."""
        return write_data(self, path)

    @classmethod
    def load(cls, path: str | Path, **options: Any) -> IdData:
        """Read a ``.csv`` or ``.npz`` file (:func:`read_data`)."""
        fields = read_fields(path, **options)
        return cls(fields.pop("X"), fields.pop("U"), **fields)


def _op_tuple(op: OperatingPoint | None) -> tuple | None:
    return None if op is None else (tuple(op.state), tuple(op.input))


def data_arrays(X: Any, U: Any, *, caller: str) -> tuple[Any, Any]:
    """``(X, U)`` from an :class:`IdData` (deviations from its operating point; ``U`` not
    given) or from arrays (``U`` required; a 1-D array is one channel, :func:`one_channel`).

    Raises
    ------
    ParameterError
        Both an IdData and ``U``, or arrays without ``U``.
    """
    if isinstance(X, IdData):
        if U is not None:
            raise ParameterError(f"{caller} takes an IdData or arrays X, U; got an IdData and U")
        return X.arrays(deviations=True)
    if U is None:
        arrays = "output arrays Y" if caller.startswith("OutputDMDidc") else "state arrays X"
        raise ParameterError(f"{caller} needs the inputs U with {arrays} (or an IdData as "
                             f"the only data argument)")
    return one_channel(X), one_channel(U)


def as_arrays(X: Any, U: Any, dt: Any, *, caller: str) -> tuple[Any, Any, float, IdData | None]:
    """``(X, U, dt, data)`` from either an :class:`IdData` (``U`` and ``dt`` not given, or
    ``dt`` equal to the data's) or arrays with ``dt``; the arrays of an IdData are deviations
    from its operating point.

    Raises
    ------
    ParameterError
        Both an IdData and ``U``, a different ``dt``, or arrays without ``U`` or ``dt``.
    """
    Xa, Ua = data_arrays(X, U, caller=caller)
    if isinstance(X, IdData):
        if dt is not None and check_positive("dt", dt) != X.dt:
            raise ParameterError(f"dt={dt!r} differs from the data's sampling period {X.dt}; "
                                 f"leave dt out with an IdData")
        return Xa, Ua, X.dt, X
    if dt is None:
        raise ParameterError(f"{caller} needs the sampling period dt (seconds) with arrays "
                             f"(an IdData carries its own)")
    return Xa, Ua, dt, None


def read_data(path: str | Path, **options: Any) -> IdData:
    """Read an :class:`IdData` from ``.csv`` or ``.npz`` (:mod:`dmdidc.data_io`).

    Parameters
    ----------
    path : str or Path
    **options
        :func:`dmdidc.data_io.read_fields`: for a CSV, ``inputs`` (the input columns,
        required), ``states`` (default: every other column), ``time`` (a column of sample
        times, giving ``dt``; default ``"auto"``: a column named time, timestamp or t;
        ``None``: none), ``experiment`` (a column labelling experiments), ``dt``, ``missing``,
        ``operating_point`` and ``time_tolerance``.

    Returns
    -------
    IdData
        With ``source`` the file name.

    Raises
    ------
    ParameterError, DimensionError, NonFiniteError
        As :func:`dmdidc.data_io.read_fields` and :class:`IdData`.
    """
    return IdData.load(path, **options)
