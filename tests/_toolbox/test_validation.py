"""Tests of _toolbox.validation: complex and overflowing input, and the allocation limit."""

from __future__ import annotations

import numpy as np
import pytest

from _toolbox import validation
from _toolbox.errors import DimensionError, NonFiniteError, ParameterError
from _toolbox.validation import check_allocation, check_finite_array


@pytest.mark.parametrize("value", [[1 + 1j, 2.0], np.array([[1.0, 2.0]]) + 1e-300j, 1j])
def test_complex_entries_are_refused_not_cast_away(value):
    # Issue 20: complex states were silently cast to real (numpy drops the imaginary part).
    with pytest.raises(ParameterError, match="X has complex entries"):
        check_finite_array("X", value)


def test_complex_with_exactly_zero_imaginary_part_is_its_real_part():
    array = check_finite_array("X", np.array([[1.0, -2.0]]) + 0j, ndim=2)
    assert array.dtype == float and array.tolist() == [[1.0, -2.0]]


def test_integers_beyond_the_float_range_are_non_finite():
    with pytest.raises(NonFiniteError, match="X has an entry beyond the float range"):
        check_finite_array("X", [1, 10 ** 400])


@pytest.mark.parametrize("value", [["a", 1.0], [[1.0], [1.0, 2.0]], {"a": 1}])
def test_non_numeric_input_is_a_dimension_error(value):
    with pytest.raises(DimensionError, match="X must be a numeric array"):
        check_finite_array("X", value)


def test_allocation_within_the_limit_returns_its_size():
    assert check_allocation("n_steps = 10", (3, 10)) == 240
    assert check_allocation("n_steps = 10", (3, 10), np.float32) == 120


@pytest.mark.parametrize("shape", [(2, 10 ** 12), (10 ** 6, 10 ** 6), (10 ** 30, 10 ** 30)])
def test_allocation_beyond_the_limit_names_argument_size_and_limit(shape):
    # exact integers: a shape whose product overflows int64 is still refused, not wrapped
    with pytest.raises(ParameterError) as caught:
        check_allocation("n_steps = 10**12", shape, accepted="n_steps <= 5")
    message = str(caught.value)
    assert message.startswith("n_steps = 10**12 needs an array of shape")
    assert "above the limit of 4 GiB" in message and message.endswith("n_steps <= 5")


def test_the_limit_is_a_module_attribute_a_user_may_change(monkeypatch):
    monkeypatch.setattr(validation, "ALLOCATION_LIMIT_BYTES", 100)
    assert check_allocation("size", (12,)) == 96
    with pytest.raises(ParameterError, match="above the limit of 100 B"):
        check_allocation("size", (13,))


@pytest.mark.parametrize("value", [np.array(0.5), np.array(2), np.array(0.5, dtype=np.float32),
                                   np.float64(0.5)])
def test_a_zero_dimensional_array_is_a_real_number(value):
    # what np.load returns for a saved scalar: DelayedPlant.from_continuous refused it as dt
    from dmdidc import DelayedPlant

    assert validation.check_positive("dt", value) == float(value)
    plant = DelayedPlant.from_continuous([[-1.0]], [[1.0]], 0.3, value)
    assert plant.dt == float(value)


@pytest.mark.parametrize("value", [np.array(True), np.array([0.5]), np.array("a"),
                                   np.array(np.nan)])
def test_other_arrays_are_still_refused_as_dt(value):
    with pytest.raises(ParameterError, match="dt must be (a real number|finite)"):
        validation.check_positive("dt", value)
