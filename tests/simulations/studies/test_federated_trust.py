"""The poisoning study (seed Ch. 10 "trust"): undefended runs are ruined, screened ones are not."""

from __future__ import annotations

import json
import math

import pytest

from privacy.errors import ParameterError
from simulations.studies.federated_trust import (
    poisoning_study,
    poisoning_table,
    write_poisoning_study,
)


@pytest.fixture(scope="module")
def rows():
    return poisoning_study(attacks=("x1e200", "integer"), attackers=(1, 2),
                           algorithms=("fedavg", "fedinfer-async"), rounds=3, seed=1)


def test_screened_models_stay_near_the_honest_one_and_undefended_ones_do_not(rows):
    screened = [r for r in rows if r["defence"] != "none"]
    assert screened and all(r["distance"] < 1.0 for r in screened)
    ruined = [r["distance"] for r in rows if r["defence"] == "none" and r["attack"] == "x1e200"
              and r["algorithm"] == "fedavg"]
    assert ruined and all(d == math.inf for d in ruined)
    assert {r["defence"] for r in rows if r["algorithm"] == "fedinfer-async"} == {"none",
                                                                                   "screen"}


def test_table_and_files(rows, tmp_path):
    table = poisoning_table(rows)
    assert table.count("\n") == 1 + 4 and "inf" in table and "2 bad, screen+median" in table
    paths = write_poisoning_study(rows, tmp_path)
    assert all(p.exists() for p in paths.values())
    assert len(json.loads(paths["json"].read_text())) == len(rows)


def test_bad_settings_are_loud():
    with pytest.raises(ParameterError, match="algorithms"):
        poisoning_study(algorithms=("krum",))
    with pytest.raises(ParameterError, match="fewer"):
        poisoning_study(clients=3, attackers=(3,))
    with pytest.raises(ParameterError, match="attack"):
        poisoning_study(attacks=("x7",), algorithms=("fedavg",), attackers=(1,), rounds=1)
