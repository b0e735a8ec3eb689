"""The Ch. 8 experiments on Flower: the factories' docstring examples run as written."""

import doctest

import pytest

pytest.importorskip("flwr")


def test_docstring_examples():
    from simulations.studies import federated_flower

    result = doctest.testmod(federated_flower)
    assert result.attempted > 0 and result.failed == 0
