"""Printing an estimate with its interval: the one routine every console line uses.

An interval is printed with the decimals that show one or two significant digits of its
half-width, but an estimate never with more than :data:`MAX_PRINTED_DIGITS` significant digits
(of its own magnitude, or of ``scale`` where a caller gives one): on exact data the width is
rounding, and its decimals would print ~16 digits of noise.  A half-width below those digits
is then printed with its own significant digits (``3.2e-08``), never as ``0.00000``, which
would read as an exact estimate.
Numbers of extreme magnitude (from :data:`SCIENTIFIC_FROM`, or below :data:`SCIENTIFIC_BELOW`)
share one power of ten (``1.00e+200 +/- 0.10e+200``) instead of printing hundreds of digits.
"""

from __future__ import annotations

import math

from _toolbox.errors import ParameterError

__all__ = ["MAX_PRINTED_DIGITS", "SCIENTIFIC_BELOW", "SCIENTIFIC_FROM", "interval_decimals",
           "interval_text"]

#: Most significant digits an estimate is printed with (of its own magnitude by default).
MAX_PRINTED_DIGITS = 6
#: Magnitudes (of the value or an end) from which an interval prints in scientific notation.
SCIENTIFIC_FROM = 1e6
#: Positive magnitudes below which an interval prints in scientific notation.
SCIENTIFIC_BELOW = 1e-4


def interval_decimals(half_width: float, scale: float) -> int:
    """Decimals showing one significant digit of ``half_width`` (two if it starts with 1), but
    no more than :data:`MAX_PRINTED_DIGITS` significant digits of ``scale`` (the largest
    magnitude among the estimates printed together).

    Examples
    --------
    >>> interval_decimals(0.031, 2.5), interval_decimals(0.0123, 2.5), interval_decimals(1e-9, 2.5)
    (2, 3, 5)
    """
    cap = (max(0, MAX_PRINTED_DIGITS - 1 - math.floor(math.log10(scale)))
           if math.isfinite(scale) and scale > 0 else None)
    if not math.isfinite(half_width) or half_width <= 0:
        return 3 if cap is None or not math.isfinite(half_width) else cap
    exponent = math.floor(math.log10(half_width))
    leading = half_width / 10.0 ** exponent
    places = max(0, -exponent + (1 if leading < 2 else 0))
    return places if cap is None else min(places, cap)


def interval_text(value: float, low: float, high: float, *, unit: str = "",
                  scale: float | None = None, level: float | None = None,
                  symmetric: bool = True) -> str:
    """``value`` with its interval ``[low, high]`` as console text.

    ``"2.50 +/- 0.03 s"`` when ``symmetric`` is allowed and the interval is symmetric to 1 % of
    its width, or narrower than the printed digits; else ``"2.50 s, 95 % interval [2.46, 2.53]
    s"`` (``level`` 0.95; without it ``"2.50 s, interval ..."``).  A half-width (or an end's
    distance from the value) below the printed digits keeps two significant digits:
    ``"2.50000 +/- 3.2e-08 s"``, ``"2.50000 s, 95 % interval 2.50000 + [-1e-12, 2e-12] s"``.

    Parameters
    ----------
    value, low, high : float
        The estimate and its interval's ends (an infinite or NaN end prints ``"(no
        interval)"``).
    unit : str
        Appended to each number, after a space (none if empty).
    scale : float, optional
        The largest magnitude printed together with this entry (default ``|value|``): caps the
        decimals at :data:`MAX_PRINTED_DIGITS` significant digits of it.
    level : float, optional
        The interval's confidence level, printed with its ends.
    symmetric : bool
        Whether ``+/-`` may stand for the interval (a symmetric, asymptotic interval; not for a
        bootstrap's percentiles).

    Raises
    ------
    ParameterError
        If ``low`` exceeds ``high`` (a reversed interval).

    Examples
    --------
    >>> interval_text(2.5012, 2.4702, 2.5322, unit="s")
    '2.50 +/- 0.03 s'
    >>> interval_text(2.5, 2.5 - 3.2e-8, 2.5 + 3.2e-8, unit="s")
    '2.50000 +/- 3.2e-08 s'
    >>> interval_text(2.5012, 2.47, 2.53, unit="s", level=0.95, symmetric=False)
    '2.50 s, 95 % interval [2.47, 2.53] s'
    >>> interval_text(1.0, 1.0 - 2.0 ** -40, 1.0 + 2.0 ** -39, level=0.95, symmetric=False)
    '1.00000, 95 % interval 1.00000 + [-9.1e-13, 1.8e-12]'
    >>> interval_text(1e200, 0.9e200, 1.1e200)
    '1.00e+200 +/- 0.10e+200'
    >>> interval_text(-1e-10, -4.1e-9, 3.9e-9, unit="s")      # no "-0e-09"
    '0e-09 +/- 4e-09 s'
    """
    suffix = f" {unit}" if unit else ""
    if not math.isfinite(high - low):
        return f"{value:.4g}{suffix} (no interval)"
    if low > high:
        raise ParameterError(f"interval [low, high] = [{low!r}, {high!r}] is reversed: low must "
                             f"not exceed high")
    # an infinite or NaN estimate prints as such beside its (finite) interval's ends
    exponent = _shared_exponent(max(abs(x) for x in (value, low, high) if math.isfinite(x)))
    tag = f"e{exponent:+03d}" if exponent else ""

    def mantissa(x: float) -> float:
        # two steps: 10.0 ** 320 overflows where 1e300 * 10.0 ** 20 does not
        return x * 10.0 ** -(exponent - max(exponent, -300)) * 10.0 ** -max(exponent, -300)

    half = mantissa(0.5 * (high - low))
    places = interval_decimals(half, mantissa(abs(value) if scale is None else scale))

    def fixed(x: float) -> str:
        # a tiny negative number rounds to "-0.00", which reads as a sign the digits do not have
        text = f"{mantissa(x):.{places}f}"
        return text.lstrip("-") if float(text) == 0 else text

    shown = f"{fixed(value)}{tag}" if math.isfinite(value) else f"{value}"
    tiny = math.isfinite(value) and 2 * half < 10.0 ** -places   # narrower than the digits
    if symmetric and (tiny or abs((high - value) - (value - low)) <= 0.01 * (high - low)):
        width = (f"{0.5 * (high - low):.2g}" if half < 0.5 * 10.0 ** -places
                 else f"{half:.{places}f}{tag}")
        return f"{shown} +/- {width}{suffix}"
    head = f"{shown}{suffix}, " + (f"{100 * level:g} % " if level is not None else "")
    if tiny:                                       # the ends would print as the value
        return (f"{head}interval {shown} + [{low - value:.2g}, {high - value:.2g}]{suffix}")
    return f"{head}interval [{fixed(low)}{tag}, {fixed(high)}{tag}]{suffix}"


def _shared_exponent(magnitude: float) -> int:
    """The power of ten the printed numbers share: 0 for ordinary magnitudes, else that of
    ``magnitude``."""
    if SCIENTIFIC_BELOW <= magnitude < SCIENTIFIC_FROM or magnitude == 0:
        return 0
    return math.floor(math.log10(magnitude))
