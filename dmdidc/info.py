"""What a model knows about itself besides its matrices: signals, units, intervals, provenance.

A :class:`ModelInfo` travels with a :class:`~dmdidc.DelayedPlant` (``plant.info``) into its
file (format version 4) and into python-control (signal names on the ``StateSpace``).  A fit on
an :class:`~dmdidc.IdData` fills the names, units and the data's provenance;
:meth:`dmdidc.DMDidc.save` adds the confidence intervals of the delays, ``A_c`` and ``B_c``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from _toolbox.errors import DimensionError, ParameterError

__all__ = ["ModelInfo"]

_FIELDS = ("state_names", "input_names", "state_units", "input_units", "intervals",
           "provenance")


def _strings(name: str, value: Any) -> tuple[str, ...]:
    labels = tuple(value)
    if not all(isinstance(s, str) for s in labels):
        raise ParameterError(f"{name} must be strings; got {list(labels)!r}")
    return labels


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

    def __post_init__(self) -> None:
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
        return ModelInfo(**{**self.to_dict(), **fields})

    def check_sizes(self, n_states: int, n_inputs: int) -> ModelInfo:
        """``self``, or :class:`~dmdidc.DimensionError` when the names do not fit the plant."""
        if (len(self.state_names), len(self.input_names)) != (n_states, n_inputs):
            raise DimensionError(f"model info names {len(self.state_names)} states and "
                                 f"{len(self.input_names)} inputs; the plant has {n_states} and "
                                 f"{n_inputs}")
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON fields (the inverse of :meth:`from_dict`)."""
        return {"state_names": list(self.state_names), "input_names": list(self.input_names),
                "state_units": list(self.state_units), "input_units": list(self.input_units),
                "intervals": self.intervals, "provenance": self.provenance}

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
