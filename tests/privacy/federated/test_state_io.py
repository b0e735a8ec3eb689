"""The protocol's modules (values, algorithm contract, validation, state I/O) and checkpoints."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from privacy.federated import algorithm, protocol, state_io, validation, values
from privacy.federated.state_io import load_array_groups, save_array_groups


@pytest.mark.parametrize("module", [values, algorithm, validation, state_io])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_protocol_re_exports_every_name_from_its_module():
    homes = (values, algorithm, validation, state_io)
    for name in protocol.__all__:
        owners = [m for m in homes if name in getattr(m, "__all__", ())]
        assert len(owners) == 1, name
        assert getattr(protocol, name) is getattr(owners[0], name)


def test_array_groups_round_trip_bit_identically(tmp_path):
    rng = np.random.default_rng(0)
    groups = {"c0": {"w": rng.normal(size=(2, 3))}, 1: {"a/b": np.arange(4.0)}, "empty": {}}
    save_array_groups(tmp_path / "run.npz", groups)
    loaded = load_array_groups(tmp_path / "run.npz")
    assert set(loaded) == {"c0", "1"}
    np.testing.assert_array_equal(loaded["c0"]["w"], groups["c0"]["w"])
    np.testing.assert_array_equal(loaded["1"]["a/b"], groups[1]["a/b"])
