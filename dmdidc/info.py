"""What a model knows about itself besides its matrices: signals, units, intervals, provenance.

A :class:`ModelInfo` travels with a :class:`~dmdidc.DelayedPlant` (``plant.info``) into its
file (format version 4) and into python-control (signal names on the ``StateSpace``).  A fit on
an :class:`~dmdidc.IdData` fills the names, units and the data's provenance;
:meth:`dmdidc.DMDidc.save` adds the confidence intervals of the delays, ``A_c`` and ``B_c``.
A model identified in POD coordinates (``DMDidc(svd_rank=r)``) also carries its
:class:`SensorMap`: the sensors' names and units and the map between them and its states.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_finite_array, read_only

__all__ = ["ModelInfo", "SensorMap"]

_FIELDS = ("state_names", "input_names", "state_units", "input_units", "intervals",
           "provenance", "sensors")
_SENSOR_FIELDS = ("names", "units", "modes", "centre")


def _strings(name: str, value: Any) -> tuple[str, ...]:
    labels = tuple(value)
    if not all(isinstance(s, str) for s in labels):
        raise ParameterError(f"{name} must be strings; got {list(labels)!r}")
    return labels


@dataclass(frozen=True, eq=False)
class SensorMap:
    """The sensors a model in POD coordinates describes (immutable): ``x = modes z + centre``.

    ``DMDidc(svd_rank=r)`` identifies the plant in the coordinates ``z = modes^T (x -
    centre)`` of ``n`` sensors; the model's states are ``z`` (named ``z0 .. z{r-1}``), and
    this map, saved with the model, takes its predictions back to the sensors.

    Parameters
    ----------
    names, units : sequence of str
        The ``n`` sensors' names and units (``""`` where unknown).
    modes : array_like, shape (n, r)
        Orthonormal POD modes.
    centre : array_like, shape (n,)
        The sensor values at ``z = 0`` (with ``detrend="auto"`` the snapshots' mean outside
        the modes' span, plus a known operating point; in the data's units).

    Examples
    --------
    >>> import numpy as np
    >>> sensors = SensorMap(["a", "b"], ["K", "K"], [[0.6], [0.8]], [20.0, 21.0])
    >>> z = sensors.project([23.0, 25.0])
    >>> z, sensors.expand(z)
    (array([5.]), array([23., 25.]))
    """

    names: tuple[str, ...]
    units: tuple[str, ...]
    modes: np.ndarray
    centre: np.ndarray

    def __post_init__(self) -> None:
        modes = check_finite_array("sensors modes", self.modes, ndim=2)
        centre = check_finite_array("sensors centre", self.centre, ndim=1)
        names, units = _strings("sensor names", self.names), _strings("sensor units",
                                                                      self.units)
        n = modes.shape[0]
        if centre.shape != (n,) or len(names) != n or len(units) != n:
            raise DimensionError(f"SensorMap has modes of {n} sensors, a centre of "
                                 f"{centre.shape[0]}, {len(names)} names and {len(units)} "
                                 f"units; expected one each per sensor")
        for name, value in (("names", names), ("units", units), ("modes", read_only(modes)),
                            ("centre", read_only(centre))):
            object.__setattr__(self, name, value)

    @property
    def n_sensors(self) -> int:
        return self.modes.shape[0]

    @property
    def coordinate_unit(self) -> str:
        """The unit of the coordinates ``z``: the sensors' when they all share one (the modes
        are orthonormal, so ``z`` is in that unit), else ``""``."""
        return self.units[0] if len(set(self.units)) == 1 else ""

    def project(self, X: Any) -> np.ndarray:
        """The coordinates ``z = modes^T (x - centre)`` of sensor values ``X``, shape (n,) or
        (n, K), to shape (r,) or (r, K)."""
        X = np.asarray(X, dtype=float)
        if X.shape[0] != self.n_sensors:
            raise DimensionError(f"the sensor values have {X.shape[0]} rows; expected "
                                 f"{self.n_sensors} (the sensors the model was fitted on)")
        shift = self.modes.T @ self.centre       # (no centred copy of many sensors' values)
        return self.modes.T @ X - (shift if X.ndim == 1 else shift[:, None])

    def expand(self, Z: Any) -> np.ndarray:
        """The sensor values ``modes z + centre`` of coordinates ``Z``, shape (r,) or (r, K)."""
        Z = np.asarray(Z, dtype=float)
        X = self.modes @ Z
        X += self.centre if X.ndim == 1 else self.centre[:, None]     # in place: n K values
        return X

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SensorMap):
            return NotImplemented
        return (self.names == other.names and self.units == other.units
                and np.array_equal(self.modes, other.modes)
                and np.array_equal(self.centre, other.centre))

    __hash__ = None  # type: ignore[assignment]   (arrays: not hashable, as a mutable value)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON fields (the inverse of :meth:`from_dict`)."""
        return {"names": list(self.names), "units": list(self.units),
                "modes": self.modes.tolist(), "centre": self.centre.tolist()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SensorMap:
        """Read :meth:`to_dict`'s output.

        Raises
        ------
        ParameterError
            Not a mapping, or not exactly the fields ``names``, ``units``, ``modes``,
            ``centre``.
        """
        if not isinstance(data, Mapping) or set(data) != set(_SENSOR_FIELDS):
            got = sorted(data) if isinstance(data, Mapping) else type(data).__name__
            raise ParameterError(f"model info sensors must be a mapping with the fields "
                                 f"{list(_SENSOR_FIELDS)}; got {got}")
        return cls(**data)


@dataclass(frozen=True)
class ModelInfo:
    """Signal names and units, confidence intervals and data provenance of a model (immutable).

    Parameters
    ----------
    state_names, input_names : sequence of str
    state_units, input_units : sequence of str
        ``""`` where unknown.
    intervals : dict, optional
        Plain-JSON intervals: ``{"level": 0.95, "method": "asymptotic", "delay": {"value":
        [...], "low": [...], "high": [...], "standard_error": [...], "unit": "s"}, "A_c":
        {...}, "B_c": {...}}``.
    provenance : dict, optional
        Plain-JSON record of where the model came from (data source and size, missing
        samples, estimator parameters, dmdidc version, date).
    sensors : SensorMap or dict, optional
        The sensors of a model in POD coordinates (its ``r`` states are ``z = modes^T (x -
        centre)``); ``None`` when the states are the measured signals.

    Examples
    --------
    >>> info = ModelInfo.default(2, 1).renamed(state_names=["T", "p"], state_units=["K", "Pa"])
    >>> info.state_names, info.input_names
    (('T', 'p'), ('u0',))
    """

    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    state_units: tuple[str, ...]
    input_units: tuple[str, ...]
    intervals: dict | None = None
    provenance: dict | None = None
    sensors: SensorMap | None = None

    def __post_init__(self) -> None:
        if isinstance(self.sensors, Mapping):
            object.__setattr__(self, "sensors", SensorMap.from_dict(self.sensors))
        if self.sensors is not None:
            if not isinstance(self.sensors, SensorMap):
                raise ParameterError(f"sensors must be a SensorMap, a mapping or None; got "
                                     f"{type(self.sensors).__name__}")
            if self.sensors.modes.shape[1] != len(self.state_names):
                raise DimensionError(f"ModelInfo has {len(self.state_names)} state names and "
                                     f"sensors of {self.sensors.modes.shape[1]} POD modes; "
                                     f"expected one state per mode")
        for name in _FIELDS[:4]:
            object.__setattr__(self, name, _strings(name, getattr(self, name)))
        if len(self.state_units) != len(self.state_names) or \
                len(self.input_units) != len(self.input_names):
            raise DimensionError(f"ModelInfo has {len(self.state_names)} state names and "
                                 f"{len(self.state_units)} units, {len(self.input_names)} input "
                                 f"names and {len(self.input_units)} units; expected one unit "
                                 f"per name")
        for name in ("intervals", "provenance"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Mapping):
                raise ParameterError(f"{name} must be a mapping or None; got "
                                     f"{type(value).__name__}")

    @classmethod
    def default(cls, n_states: int, n_inputs: int) -> ModelInfo:
        """Names ``x0 ..`` and ``u0 ..``, no units, no intervals, no provenance."""
        return cls(tuple(f"x{i}" for i in range(n_states)),
                   tuple(f"u{i}" for i in range(n_inputs)), ("",) * n_states, ("",) * n_inputs)

    def renamed(self, **fields: Any) -> ModelInfo:
        """A copy with some fields replaced."""
        unknown = set(fields) - set(_FIELDS)
        if unknown:
            raise ParameterError(f"ModelInfo has no field(s) {sorted(unknown)}; fields: "
                                 f"{list(_FIELDS)}")
        return ModelInfo(**{**{name: getattr(self, name) for name in _FIELDS}, **fields})

    def check_sizes(self, n_states: int, n_inputs: int) -> ModelInfo:
        """``self``, or :class:`~dmdidc.DimensionError` when the names do not fit the plant."""
        if (len(self.state_names), len(self.input_names)) != (n_states, n_inputs):
            raise DimensionError(f"model info names {len(self.state_names)} states and "
                                 f"{len(self.input_names)} inputs; the plant has {n_states} and "
                                 f"{n_inputs}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON fields (the inverse of :meth:`from_dict`)."""
        data = {"state_names": list(self.state_names), "input_names": list(self.input_names),
                "state_units": list(self.state_units), "input_units": list(self.input_units),
                "intervals": self.intervals, "provenance": self.provenance}
        if self.sensors is not None:       # only then: files without it read as before
            data["sensors"] = self.sensors.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelInfo:
        """Read :meth:`to_dict`'s output; unknown fields are refused.

        Raises
        ------
        ParameterError
            Not a mapping, unknown or missing fields.
        """
        if not isinstance(data, Mapping):
            raise ParameterError(f"model info must be a mapping; got {type(data).__name__}")
        unknown = sorted(set(data) - set(_FIELDS))
        missing = [k for k in _FIELDS[:4] if k not in data]
        if unknown or missing:
            raise ParameterError(f"model info has unknown field(s) {unknown} and lacks "
                                 f"{missing}; fields: {list(_FIELDS)}")
        return cls(**data)
