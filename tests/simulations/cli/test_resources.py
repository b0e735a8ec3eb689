"""Requests refused, with their memory and the accepted range, before anything is allocated."""

import pytest

from _toolbox.errors import ParameterError
from simulations.cli.resources import check_memory, format_bytes, memory_budget


def test_the_budget_is_a_positive_part_of_the_machine():
    assert 0 < memory_budget() < 2**60


@pytest.mark.parametrize(("count", "text"), [(512, "512 B"), (2**20, "1 MiB"),
                                             (1.5 * 2**40, "1.5 TiB")])
def test_bytes_read_as_people_write_them(count, text):
    assert format_bytes(count) == text


def test_a_request_beyond_the_budget_names_option_estimate_and_range():
    check_memory("--steps", 10, 1e3, "1 .. 100", budget=2**20)            # fits: silent
    with pytest.raises(ParameterError, match=r"--steps 1000 needs about 9.54 MiB of memory; "
                                             r"the budget is 1 MiB .*accepted --steps 1 \.\. 100"):
        check_memory("--steps", 1000, 1e7, "1 .. 100", budget=2**20)
