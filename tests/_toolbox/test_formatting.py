"""Intervals print the digits their width justifies, and never a positive width as zero."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from _toolbox.errors import ParameterError
from _toolbox.formatting import MAX_PRINTED_DIGITS, interval_text


@pytest.mark.parametrize("seed", range(5))
def test_a_positive_half_width_is_printed_to_two_significant_digits_at_most_off(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        value = rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-3, 4)
        half = abs(value) * 10.0 ** rng.uniform(-14, 0)        # (above rounding)
        text = interval_text(value, value - half, value + half, unit="s")
        shown, width = re.fullmatch(r"(-?[\d.]+) \+/- (\S+) s", text).groups()
        assert float(width) > 0, text                      # never "0.00000"
        assert math.isclose(float(width), half, rel_tol=0.5), text
        assert abs(float(shown) - value) <= max(half, abs(value) * 10.0 ** -(
            MAX_PRINTED_DIGITS - 1)), text
        digits = shown.lstrip("-").replace(".", "").lstrip("0")
        assert len(digits) <= MAX_PRINTED_DIGITS, text


def test_interval_forms():
    assert interval_text(2.5, 2.5, 2.5, unit="s") == "2.50000 +/- 0 s"
    assert interval_text(2.5, 2.4, 2.55, unit="s") == "2.50 s, interval [2.40, 2.55] s"
    assert interval_text(2.5, 2.4, 2.55, unit="s", level=0.9) == \
        "2.50 s, 90 % interval [2.40, 2.55] s"
    assert interval_text(2.5, np.nan, np.nan, unit="s") == "2.5 s (no interval)"
    # a bootstrap interval narrower than the digits: its ends as distances from the value
    text = interval_text(3.0, 3.0 + 2.0 ** -30, 3.0 + 2.0 ** -29, symmetric=False)
    assert text == "3.00000, interval 3.00000 + [9.3e-10, 1.9e-09]"


@pytest.mark.parametrize("seed", range(5))
def test_extreme_magnitudes_print_a_few_digits_in_scientific_notation(seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        value = rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-320, 308)
        half = abs(value) * 10.0 ** rng.uniform(-8, -0.5)
        text = interval_text(value, value - half, value + half, unit="s")
        assert len(text) < 40, text                        # not hundreds of digits
        shown, width = re.fullmatch(r"(\S+) \+/- (\S+) s", text).groups()
        assert math.isclose(float(shown), value, rel_tol=1e-5, abs_tol=half), text
        assert math.isclose(float(width), half, rel_tol=0.5, abs_tol=1e-323), text
        ends = interval_text(value, value - half, value + 2 * half, symmetric=False)
        assert len(ends) < 70 and "e" in ends, ends


def test_ordinary_magnitudes_stay_in_fixed_point():
    assert interval_text(120.5, 120.0, 121.0) == "120.5 +/- 0.5"
    assert "e" not in interval_text(3e-3, 2e-3, 4e-3)


@pytest.mark.parametrize("low, high", [(2.0, 0.0), (1.0 + 1e-12, 1.0)])
def test_a_reversed_interval_is_refused(low, high):
    with pytest.raises(ParameterError, match="reversed"):
        interval_text(1.0, low, high)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("low, high", [(0.0, 1.0), (1e200, 1.1e200), (1e-9, 1e-9)])
def test_a_non_finite_estimate_prints_beside_its_interval(value, low, high):
    # the shared power of ten took log10 of an infinite estimate: OverflowError (NaN:
    # ValueError) where the estimate printed as inf beside its interval
    text = interval_text(value, low, high)
    assert text.startswith(f"{value}, interval [")


@pytest.mark.parametrize("seed", range(3))
def test_a_number_that_rounds_to_zero_prints_without_a_sign(seed):
    # "-0e-09 +/- 4e-09" (an audit's exact fit) read as a sign the digits do not carry
    rng = np.random.default_rng(seed)
    zeros = 0
    for _ in range(200):
        half = 10.0 ** rng.uniform(-12, 2)
        value = -half * rng.uniform(0.0, 0.04)             # mostly inside the last digit
        low, high = value - half * rng.uniform(0.5, 2), value + half * rng.uniform(0.5, 2)
        for symmetric in (True, False):
            text = interval_text(value, low, high, unit="s", symmetric=symmetric)
            numbers = re.findall(r"-?[\d.]+(?:e[+-]\d+)?", text)
            assert not any(n.startswith("-") and float(n) == 0 for n in numbers), text
            zeros += float(numbers[0]) == 0
    assert zeros > 200                                   # the case arose
    assert interval_text(-0.5, -0.53, -0.47, unit="s").startswith("-0.50")   # signs kept
