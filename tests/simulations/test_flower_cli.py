"""``dmdidc federated serve`` (the deployment itself is replaced by an in-process run here; the
real processes are exercised by tests/privacy/federated/flower/test_deploy.py)."""

from __future__ import annotations

import argparse
import csv

import pytest

import privacy.federated.flower as flower
from privacy.errors import ParameterError
from privacy.federated.flower import run_inprocess_sync
from simulations.flower_cli import add_serve_action

ARGS = ["serve", "--algorithm", "tests.privacy.federated.toy:NoisyMean",
        "--algorithm-kwargs", '{"dim": 2, "fraction": 0.7}',
        "--data", "tests.privacy.federated.flower.factories:toy_partition",
        "--data-kwargs", '{"seed": 1}', "--clients", "3"]


def parser():
    root = argparse.ArgumentParser(prog="dmdidc federated")
    add_serve_action(root.add_subparsers(dest="action", required=True))
    return root


@pytest.fixture
def fake_deployment(monkeypatch):
    """run_deployment replaced by the in-process run of the same specs, streaming log lines."""
    calls = []

    def fake(*, algorithm, data, num_clients, out, run_config, on_line, evaluate=None,
             workdir=None, **_):
        calls.append({"config": run_config, "workdir": workdir})
        client_data = [data.build(k, num_clients) for k in range(num_clients)]
        result = run_inprocess_sync(algorithm.build(), client_data,
                                    rounds=run_config["rounds"], seed=run_config["seed"])
        for r in result.history:
            on_line(f"dmdidc INFO: round {r.round}: version {r.version}")
        out.mkdir(parents=True, exist_ok=True)
        (out / "result.json").write_text("{}")
        return result

    monkeypatch.setattr(flower, "run_deployment", fake)
    return calls


def test_serve_runs_writes_history_and_says_what_it_overwrites(tmp_path, fake_deployment,
                                                                  capsys):
    args = parser().parse_args(ARGS + ["--rounds", "3", "--seed", "4", "--out", str(tmp_path)])
    assert args.handler(args) == 0
    config = fake_deployment[0]["config"]
    assert (config["rounds"], config["seed"], config["mode"]) == (3, 4, "sync")
    with open(tmp_path / "history.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["version"]) for r in rows] == [1, 2, 3]
    assert "3 rounds, model version 3" in capsys.readouterr().out
    assert args.handler(args) == 0
    assert f"overwriting {tmp_path / 'history.csv'}" in capsys.readouterr().err


def test_serve_passes_async_options_and_refuses_bad_ones(tmp_path, fake_deployment):
    ok = parser().parse_args(ARGS + ["--mode", "async", "--stagger", "1,2,5", "--ticks", "4",
                                     "--request-timeout", "3", "--max-staleness", "2",
                                     "--logs", "--out", str(tmp_path)])
    from simulations.flower_cli import _run_config

    config = _run_config(ok)
    assert (config["stagger"], config["request-timeout"], config["max-staleness"]) == \
        ("1,2,5", 3.0, 2)
    for bad, match in [(["--mode", "async", "--stagger", "1,2"], "--stagger must list 3"),
                       (["--stagger", "1,2,5"], "async only"),
                       (["--clients", "0"], "--clients must be >= 1")]:
        args = parser().parse_args(ARGS + bad + ["--out", str(tmp_path)])
        with pytest.raises(ParameterError, match=match):
            args.handler(args)
    with pytest.raises(SystemExit):
        parser().parse_args(ARGS + ["--algorithm-kwargs", "[1]", "--out", str(tmp_path)])
    assert fake_deployment == []
