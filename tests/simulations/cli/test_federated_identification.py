"""``dmdidc federated identify``: outputs, privacy record, engines agree, flags refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privacy import GaussianMechanism
from privacy.accounting import epsilon as accountant_epsilon
from simulations.cli import main
from simulations.studies.federated_identification import client_grid

SMALL = ["--clients", "1,3", "--seeds", "1", "--experiments", "3", "--length", "40"]


def test_identify_writes_summary_with_the_privacy_record(tmp_path, capsys):
    out = tmp_path / "fedid"
    code = main(["federated", "identify", *SMALL, "--baselines", "average", "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["clients"] == [1, 3] and summary["unit"] == "sample"
    assert summary["delta"] == 1e-5
    values = summary["epsilon_per_client"]["values"]
    assert len(values) == 3 and max(values) <= 1.0 + 1e-9
    # the accountant's answer for the release each client made (one release: no composition)
    from dmdidc.federated.identification import FederatedIdentification
    algo = FederatedIdentification(num_clients=1, n_states=2, n_inputs=2, max_delay=3,
                                   state_bound=5.0, input_bound=1.0, epsilon=1.0, delta=1e-5,
                                   instruments="inputs")
    like = algo._like(np.ones(4))
    sigma_release = like.privatize("gaussian", epsilon=1.0, delta=1e-5, rng=0).privacy
    assert isinstance(sigma_release.mechanism, GaussianMechanism)
    assert values[0] == pytest.approx(accountant_epsilon(sigma_release.mechanism, delta=1e-5))
    assert set(summary["table"]) == {"fedinfer", "average"}
    assert (out / "delay_error.png").stat().st_size > 10_000
    assert "measured rate" in capsys.readouterr().out


def test_flower_engine_gives_the_numpy_numbers(tmp_path):
    pytest.importorskip("flwr")
    rows = {}
    for engine in ("numpy", "flower"):
        out = tmp_path / engine
        assert main(["federated", "identify", *SMALL, "--baselines", "none", "--engine", engine,
                     "--out", str(out)]) == 0
        rows[engine] = json.loads((out / "rows.json").read_text())
    assert rows["numpy"] == rows["flower"]


@pytest.mark.parametrize("argv, message", [
    (["--alpha", "1.2"], "--alpha only applies"),
    (["--mechanism", "laplace", "--delta", "1e-6"],
     "--delta applies to --mechanism gaussian or sas"),
    (["--mechanism", "sas", "--baselines", "per_sample"], "per-sample baseline"),
])
def test_bad_flags_are_refused(tmp_path, capsys, argv, message):
    code = main(["federated", "identify", *SMALL, *argv, "--out", str(tmp_path / "x")])
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--clients", "3,1"], ["--baselines", "fedavg"],
                                  ["--engine", "ray"], ["--seeds", "0"], ["--epsilon", "-1"],
                                  ["--epsilon", "nan"], ["--delta", "2"], ["--alpha", "3"],
                                  ["--max-delay", "-1"], ["--experiments", "0"]])
def test_bad_values_are_refused_by_the_parser(tmp_path, argv):
    with pytest.raises(SystemExit):
        main(["federated", "identify", *argv, "--out", str(tmp_path / "x")])


def test_client_grid():
    assert client_grid(1000) == (1, 3, 10, 30, 100, 300, 1000)
    assert client_grid(50) == (1, 3, 10, 30, 50)
    assert client_grid(1) == (1,)


def test_deployment_factories_build_the_study_clients():
    from simulations.studies.federated_identification import (
        deployment_algorithm,
        deployment_partition,
    )
    algo = deployment_algorithm(clients=3, epsilon=0.5, experiments=2, length=30)
    assert algo.num_clients == 3 and algo.epsilons == (0.5, 0.5, 0.5)
    assert algo.join_round == (0, 0, 0)
    data = deployment_partition(1, 3, seed=4, experiments=2, length=30)
    assert data["X"].shape == (2, 2, 31) and data["U"].shape == (2, 2, 30)
    again = deployment_partition(1, 3, seed=4, experiments=2, length=30)
    other = deployment_partition(2, 3, seed=4, experiments=2, length=30)
    assert np.array_equal(data["X"], again["X"]) and not np.array_equal(data["U"], other["U"])
    stats = algo.client_statistics(data)
    assert stats.n_trajectories == 2
