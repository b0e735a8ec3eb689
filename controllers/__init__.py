"""Delay-aware controllers: gain design, predictive and fractional-delay feedback, MPC."""

__all__: list[str] = []
