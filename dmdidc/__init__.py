"""Dynamic Mode Decomposition with input-delayed control (DMDidc)."""

__all__: list[str] = []
