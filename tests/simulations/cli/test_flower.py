"""``dmdidc federated serve`` (the deployment itself is replaced by an in-process run of the same
factory specs here; real processes are exercised by tests/privacy/federated/flower/
test_deploy.py)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import privacy.federated.flower as flower
from privacy.errors import ParameterError
from privacy.federated.flower import run_inprocess_async, run_inprocess_sync
from privacy.federated.runner import run_sync
from simulations.cli import build_parser
from simulations.cli.flower import _plan
from simulations.studies.federated_experiments import ExperimentConfig, build_trial

OWN = ["federated", "serve", "--algorithm", "tests.privacy.federated.toy:NoisyMean",
       "--algorithm-kwargs", '{"dim": 2, "fraction": 0.7}',
       "--data", "tests.privacy.federated.flower.factories:toy_partition",
       "--data-kwargs", '{"seed": 1}', "--clients", "3"]


def parse(*extra):
    return build_parser().parse_args(list(extra))


@pytest.fixture
def fake_deployment(monkeypatch):
    """run_deployment replaced by the in-process run of the same specs, streaming log lines."""
    calls = []

    def fake(*, algorithm, data, num_clients, out, run_config, on_line, evaluate=None,
             workdir=None):
        calls.append({"config": run_config, "workdir": workdir, "clients": num_clients})
        client_data = [data.build(k, num_clients) for k in range(num_clients)]
        options = {"seed": run_config["seed"],
                   "evaluate": None if evaluate is None else evaluate.build()}
        if run_config["mode"] == "sync":
            result = run_inprocess_sync(algorithm.build(), client_data,
                                        rounds=run_config["rounds"], **options)
        else:
            stagger = [int(g) for g in run_config["stagger"].split(",")]
            result = run_inprocess_async(algorithm.build(), client_data, stagger=stagger,
                                         ticks=run_config["ticks"], **options)
        for r in result.history:
            on_line(f"dmdidc INFO: round {r.round}: version {r.version}")
        out.mkdir(parents=True, exist_ok=True)
        (out / "result.json").write_text("{}")
        return result

    monkeypatch.setattr(flower, "run_deployment", fake)
    return calls


def test_serve_own_factories_writes_history_and_says_what_it_overwrites(tmp_path,
                                                                         fake_deployment,
                                                                         capsys):
    args = parse(*OWN, "--rounds", "3", "--seed", "4", "--out", str(tmp_path))
    assert args.handler(args) == 0
    config = fake_deployment[0]["config"]
    assert (config["rounds"], config["seed"], config["mode"]) == (3, 4, "sync")
    with open(tmp_path / "history.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["version"]) for r in rows] == [1, 2, 3]
    assert "3 rounds, model version 3" in capsys.readouterr().out
    assert args.handler(args) == 0
    assert f"overwriting {tmp_path / 'history.csv'}" in capsys.readouterr().err


def test_serve_an_experiment_runs_the_experiments_trial(tmp_path, fake_deployment, capsys):
    args = parse("federated", "serve", "--dataset", "iris", "--partition", "expert",
                 "--algorithm", "scaffold", "--rounds", "2", "--seed", "3", "--out",
                 str(tmp_path))
    assert args.handler(args) == 0
    assert fake_deployment[0]["clients"] == 3
    trial = build_trial(ExperimentConfig("iris", partition="expert", rounds=2), 3,
                        ("scaffold",))
    reference = run_sync(trial.algorithms["scaffold"], trial.data.clients, rounds=2, seed=3)
    with open(tmp_path / "history.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(r["max_epsilon"]) for r in rows] == pytest.approx(
        reference.epsilon_history().max(axis=1), rel=1e-5)
    assert 0.0 <= float(rows[-1]["accuracy"]) <= 1.0
    out = capsys.readouterr().out
    assert "composed epsilon per client" in out and "last metrics: accuracy" in out
    eps = [float(e) for e in out.split("server counted): ")[1].splitlines()[0].split(", ")]
    np.testing.assert_allclose(eps, reference.final_epsilon(), rtol=1e-3)


def test_serve_plans_asynchronous_fedinfer_from_the_experiment_schedule(tmp_path):
    plan = _plan(parse("federated", "serve", "--dataset", "breast_cancer", "--algorithm",
                       "fedinfer", "--stagger", "1,2,5,10", "--rounds", "20", "--out",
                       str(tmp_path)))
    assert plan["num_clients"] == 4
    assert {k: plan["run_config"][k] for k in ("mode", "ticks", "stagger")} == \
        {"mode": "async", "ticks": 20, "stagger": "1,2,5,10"}
    own = _plan(parse(*OWN, "--mode", "async", "--stagger", "1,2,5", "--ticks", "4",
                      "--request-timeout", "3", "--max-staleness", "2", "--out",
                      str(tmp_path)))
    assert {k: own["run_config"][k] for k in ("stagger", "ticks", "request-timeout",
                                              "max-staleness")} == \
        {"stagger": "1,2,5", "ticks": 4, "request-timeout": 3.0, "max-staleness": 2}


@pytest.mark.parametrize("extra, match", [
    (OWN + ["--mode", "async", "--stagger", "1,2"], "3 rates"),
    (OWN + ["--stagger", "1,2,5"], "--mode async"),
    (OWN + ["--clients", "0"], "--clients must be >= 1"),
    (["federated", "serve", "--algorithm", "fedavg", "--dataset", "iris", "--data", "m:f"],
     "--data cannot be combined with --dataset"),
    (["federated", "serve", "--algorithm", "mypkg:f", "--dataset", "iris"],
     "must be one of"),
    (["federated", "serve", "--algorithm", "mypkg:f", "--clients", "2"], "give --data"),
])
def test_serve_refuses_contradicting_options(tmp_path, fake_deployment, extra, match):
    args = parse(*extra, "--out", str(tmp_path))
    with pytest.raises(ParameterError, match=match):
        args.handler(args)
    assert fake_deployment == []


def test_serve_refuses_kwargs_that_are_not_a_json_object(tmp_path):
    with pytest.raises(SystemExit):
        parse(*OWN, "--algorithm-kwargs", "[1]", "--out", str(tmp_path))


@pytest.mark.parametrize("extra, message", [
    # a factory that cannot be imported or called: refused before any process starts
    (["--algorithm", "nosuch.mod:make", "--data", "nosuch:part", "--clients", "3"],
     "--algorithm 'nosuch.mod:make' cannot be imported (No module named 'nosuch')"),
    (["--algorithm", "nosuch", "--data", "nosuch:part", "--clients", "3"],
     "--algorithm 'nosuch' cannot be imported"),
    (["--algorithm", "tests.privacy.federated.toy:NoSuch", "--data", "nosuch:part",
      "--clients", "3"], "--algorithm 'tests.privacy.federated.toy:NoSuch' cannot be imported"),
    (["--algorithm", "privacy.federated.gradient:FedAvg", "--data", "nosuch:part",
      "--clients", "3"], "cannot be called as privacy.federated.gradient:FedAvg(): missing"),
    ([*OWN[2:6], "--data", "tests.privacy.federated.flower.factories:toy_partition",
      "--data-kwargs", '{"sed": 1}', "--clients", "3"],
     "--data 'tests.privacy.federated.flower.factories:toy_partition' cannot be called as "
     "tests.privacy.federated.flower.factories:toy_partition(0, 3, sed=1)"),
    # an option of the other mode would do nothing: refused, also at its default value
    (["--dataset", "iris", "--algorithm", "fedavg", "--tick", "5"],
     "--tick 5 has no effect here: it needs an asynchronous run"),
    (["--dataset", "iris", "--algorithm", "fedavg", "--tick", "30"], "--tick 30 has no effect"),
    ([*OWN[2:], "--max-staleness", "2"], "--max-staleness 2 has no effect"),
    ([*OWN[2:], "--ticks", "4"], "--ticks 4 has no effect"),
    ([*OWN[2:], "--mode", "async", "--stagger", "1,2,5", "--timeout", "60"],
     "--timeout 60 has no effect here: it needs a synchronous run"),
    (["--dataset", "breast_cancer", "--algorithm", "fedinfer", "--stagger", "1,2,5,10",
      "--min-replies", "2"], "--min-replies 2 has no effect"),
])
def test_serve_mistakes_are_clear_errors_before_any_process(tmp_path, fake_deployment, capsys,
                                                             extra, message):
    """Walkthrough findings: a wrong factory dumped a traceback, --tick did nothing silently."""
    from simulations.cli.root import main

    assert main(["federated", "serve", *extra, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert err.startswith("dmdidc federated serve: error: ")
    assert fake_deployment == [] and not (tmp_path / "o").exists()


def test_serve_accepts_the_options_of_its_mode(tmp_path, fake_deployment):
    from simulations.cli.root import main

    assert main([*OWN, "--mode", "async", "--stagger", "1,2,5", "--ticks", "3", "--tick", "5",
                 "--max-staleness", "4", "--out", str(tmp_path / "a")]) == 0
    assert main([*OWN, "--rounds", "2", "--timeout", "60", "--min-replies", "2",
                 "--out", str(tmp_path / "s")]) == 0
    assert [c["config"]["mode"] for c in fake_deployment] == ["async", "sync"]
    assert fake_deployment[0]["config"]["tick"] == 5.0


def _checkpoint(folder, mode, clients=3):
    """A checkpoint as a run leaves it, as far as the folder checks read it."""
    import json

    (folder / "clients").mkdir(parents=True)
    (folder / "server.json").write_text(json.dumps({"scalars": {}, "extra": {"mode": mode}}))
    for k in range(clients):
        (folder / "clients" / f"client-{k}.json").write_text('{"scalars": {"dp_releases": 2}}')


def test_serve_refuses_a_new_run_over_a_previous_runs_privacy_state(tmp_path, fake_deployment,
                                                                     capsys):
    from simulations.cli.root import main

    _checkpoint(tmp_path / "o" / "checkpoint", "sync")
    before = sorted(p.name for p in (tmp_path / "o" / "checkpoint" / "clients").iterdir())
    assert main([*OWN, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dmdidc federated serve: error: ")
    assert f"{tmp_path / 'o'} holds a previous run" in err and "privacy state" in err
    assert f"--resume {tmp_path / 'o' / 'checkpoint'}" in err and "a new --out" in err
    assert fake_deployment == []
    assert sorted(p.name for p in (tmp_path / "o" / "checkpoint" / "clients").iterdir()) == \
        before
    # the remedies: continue it (in place), or another folder
    assert main([*OWN, "--resume", str(tmp_path / "o" / "checkpoint"),
                 "--out", str(tmp_path / "o")]) == 0
    assert main([*OWN, "--out", str(tmp_path / "new")]) == 0
    assert len(fake_deployment) == 2


@pytest.mark.parametrize("saved, options, mode", [
    ("sync", ["--mode", "async", "--stagger", "1,2,5"], "async"),
    ("async", [], "sync")])
def test_serve_refuses_a_resume_in_the_other_mode_before_any_process(tmp_path, fake_deployment,
                                                                      capsys, saved, options,
                                                                      mode):
    from simulations.cli.root import main

    _checkpoint(tmp_path / "old", saved)
    assert main([*OWN, *options, "--resume", str(tmp_path / "old"),
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    names = {"sync": "synchronous", "async": "asynchronous"}
    assert f"{names[saved]} run (mode '{saved}') and this run is {names[mode]} (mode " \
        f"'{mode}')" in err
    assert f"--mode {saved}" in err and "Traceback" not in err
    assert fake_deployment == [] and not (tmp_path / "o").exists()
    # in its own mode the resume goes ahead (the fake deployment does not read it)
    own = ["--mode", "async", "--stagger", "1,2,5"] if saved == "async" else []
    assert main([*OWN, *own, "--resume", str(tmp_path / "old"),
                 "--out", str(tmp_path / "o")]) == 0


def test_a_client_failing_every_round_is_an_error_line_and_exit_code_3(tmp_path, monkeypatch,
                                                                       capsys):
    """The run's results are written, but a node whose every reply was rejected (its data
    factory raising, as trial 13's badfl.py) is named with the reason, and the exit is 3."""
    import dataclasses

    from privacy.federated.results import RoundRecord

    reason = "client error (Flower code 2): <class 'RuntimeError'>:<'node 1 cannot read'>"

    def failing(**kwargs):
        result = run_inprocess_sync(kwargs["algorithm"].build(),
                                    [kwargs["data"].build(k, 3) for k in range(3)], rounds=2)
        history = tuple(dataclasses.replace(r, accepted=(0, 2), rejected=((1, reason),))
                        for r in result.history)
        kwargs["out"].mkdir(parents=True, exist_ok=True)
        return dataclasses.replace(result, history=history)

    monkeypatch.setattr(flower, "run_deployment", failing)
    args = parse(*OWN, "--rounds", "2", "--out", str(tmp_path))
    assert args.handler(args) == 3
    err = capsys.readouterr().err
    assert "client 1 contributed nothing" in err and "node 1 cannot read" in err
    assert "rejected 2 times" in err and (tmp_path / "history.csv").exists()
    # a client rejected once but accepted in another round is not failing; one never answering
    # is
    records = (RoundRecord(0, 1.0, accepted=(0,), rejected=((1, "stale"),), missing=(2,),
                           version=1),
               RoundRecord(1, 2.0, accepted=(0, 1), rejected=(), missing=(2,), version=2))
    result = failing(algorithm=flower.FactorySpec("tests.privacy.federated.toy:NoisyMean",
                                                  {"dim": 2, "fraction": 0.7}),
                     data=flower.FactorySpec(
                         "tests.privacy.federated.flower.factories:toy_partition", {"seed": 1}),
                     out=tmp_path)
    assert dataclasses.replace(result, history=records).failing_clients() == \
        {2: "no reply 2 times over 2 rounds/ticks"}
    assert dataclasses.replace(result, history=records[1:]).failing_clients() == \
        {2: "no reply 1 time over 1 rounds/ticks"}
