"""Resuming Flower runs: the server's release count and the clients' states continue the run.

A resumed run must report the same composed epsilon as the uninterrupted run (never less) and,
with the clients' states kept, the same model; a resume whose client states are missing or
inconsistent is refused.  ``run_deployment`` is exercised here with its processes replaced by
an in-process grid that gets the node config the SuperNodes would get (the real processes are
in the slow test of test_deploy.py).
"""

from __future__ import annotations

import json
import logging
import sys

import numpy as np
import pytest
from flwr.app import Context, Error, RecordDict
from flwr.app import Message as FlowerMessage
from flwr.cli.config_utils import load_and_validate
from flwr.supercore.object_ref import load_app

from privacy.errors import ParameterError
from privacy.federated.flower import (
    SIMULATION_SEED,
    InProcessGrid,
    LocalDeployment,
    ensure_task_identity,
    run_deployment,
    run_inprocess_async,
    run_inprocess_sync,
)
from privacy.federated.flower.app import CACHE_DIR
from privacy.federated.flower.deploy import APP_MODULE
from privacy.federated.flower.records import reply_content
from privacy.federated.flower.transport import ReleaseBook
from privacy.federated.protocol import Reply, logger
from simulations.studies.federated_experiments import ExperimentConfig, build_trial
from tests.privacy.federated.flower.test_deploy import ALGORITHM, DATA
from tests.privacy.federated.flower.test_inprocess import assert_same_clients, assert_same_run


def trial(name, seed):
    config = ExperimentConfig("iris", partition="expert", rounds=4)
    built = build_trial(config, seed, (name,))
    return built.algorithms[name], built.data.clients


# ------------------------------------------------------------------ in-process runs
@pytest.mark.parametrize("name", ["scaffold", "fedlin", "fedinfer", "fedprox"])
@pytest.mark.parametrize("seed", [1, 7])
def test_resume_reports_the_uninterrupted_epsilon_and_model(tmp_path, name, seed):
    algorithm, clients = trial(name, seed)
    full = run_inprocess_sync(algorithm, clients, rounds=4, seed=seed)
    run_inprocess_sync(algorithm, clients, rounds=3, seed=seed, checkpoint=tmp_path / "ck",
                       state_dir=tmp_path / "ck" / "clients")
    resumed = run_inprocess_sync(algorithm, clients, rounds=4, resume=tmp_path / "ck",
                                 state_dir=tmp_path / "ck" / "clients")
    assert_same_run(resumed, full)
    assert_same_clients(resumed, full)
    np.testing.assert_array_equal(resumed.final_epsilon(), full.final_epsilon())
    assert full.final_epsilon().max() > 0


@pytest.mark.parametrize("name", ["scaffold", "fedlin", "fedavg"])
@pytest.mark.parametrize("seed", [1, 7])
def test_clients_that_lost_their_state_never_lower_the_epsilon(tmp_path, name, seed):
    """The walkthrough's case: resumed nodes start from scratch and report 1 release; the
    server still counts every release it received (the model differs: a different run)."""
    algorithm, clients = trial(name, seed)
    full = run_inprocess_sync(algorithm, clients, rounds=4, seed=seed)
    run_inprocess_sync(algorithm, clients, rounds=3, seed=seed, checkpoint=tmp_path / "ck")
    fresh = run_inprocess_sync(algorithm, clients, rounds=4, resume=tmp_path / "ck")
    assert [r.releases for r in fresh.history] == [r.releases for r in full.history]
    np.testing.assert_array_equal(fresh.epsilon_history(), full.epsilon_history())
    assert np.all(fresh.final_epsilon() >= full.final_epsilon())


def test_a_resume_with_missing_or_other_client_states_is_refused(tmp_path):
    algorithm, clients = trial("scaffold", 3)
    run_inprocess_sync(algorithm, clients, rounds=2, seed=3, checkpoint=tmp_path / "ck",
                       state_dir=tmp_path / "clients")
    with pytest.raises(ParameterError, match=r"client 0 has no saved state.*start a new run"):
        run_inprocess_sync(algorithm, clients, rounds=3, resume=tmp_path / "ck",
                           state_dir=tmp_path / "elsewhere")
    # client states one round ahead of the server's checkpoint (saved after a later round)
    run_inprocess_sync(algorithm, clients, rounds=3, seed=3, state_dir=tmp_path / "ahead")
    with pytest.raises(ParameterError, match=r"counts 3 releases, more than the server's "
                                             r"checkpoint expects \(2\.\.2\).*start a new run"):
        run_inprocess_sync(algorithm, clients, rounds=3, resume=tmp_path / "ck",
                           state_dir=tmp_path / "ahead")
    # no false alarm on the matching states
    run_inprocess_sync(algorithm, clients, rounds=3, resume=tmp_path / "ck",
                       state_dir=tmp_path / "clients")


def test_a_resume_with_another_number_of_clients_is_refused_by_name(tmp_path):
    # review: more clients than the checkpoint's crashed with a bare IndexError
    from privacy.federated.flower.resume import check_client_states

    algorithm, clients = trial("fedavg", 2)
    run_inprocess_sync(algorithm, clients, rounds=2, seed=2, checkpoint=tmp_path / "ck",
                       state_dir=tmp_path / "ck" / "clients")
    with pytest.raises(ParameterError, match=rf"written for {len(clients)} clients and the "
                                             rf"resumed run has {len(clients) + 1}"):
        check_client_states(tmp_path / "ck", tmp_path / "ck" / "clients", algorithm,
                            len(clients) + 1)


# ------------------------------------------------------------------ the release book
def reply(request, releases, released):
    return FlowerMessage(reply_content(Reply({}, {}), releases, released), reply_to=request)


def request(node, round_):
    ensure_task_identity(1)
    return FlowerMessage(RecordDict(), node, "train", group_id=f"{round_}/{round_}")


def test_release_book_counts_each_message_once_and_ignores_a_restarted_count():
    class Algorithm:
        releases_per_update = 2

        def client_dp(self, k):
            return None if k == 1 else object()

    book = ReleaseBook(2)
    for t in range(3):
        book.sent(0, t)
        message = request(5, t)
        book.received(0, reply(message, t + 1, 1))
    assert book.counts(Algorithm()) == (3, 0)
    message = request(5, 3)
    book.sent(0, 3)
    assert book.counts(Algorithm()) == (5, 0)          # in flight: releases_per_update
    answer = reply(message, 1, 1)                       # the node restarted from scratch
    book.received(0, answer)
    book.received(0, answer)                            # a duplicate is counted once
    assert book.counts(Algorithm()) == (4, 0)
    book.sent(0, 4)
    failed = request(5, 4)
    book.received(0, FlowerMessage(Error(0, "boom"), reply_to=failed))
    assert book.counts(Algorithm()) == (4, 0)           # an error reply released nothing
    again = ReleaseBook(2, **json.loads(json.dumps(book.to_json())))
    assert again.counts(Algorithm()) == (4, 0)
    old_format = ReleaseBook(2, known=[3, 0], unanswered=[[], []])
    assert old_format.counts(Algorithm()) == (3, 0)


# ------------------------------------------------------------------ run_deployment
@pytest.fixture
def inprocess_processes(monkeypatch):
    """LocalDeployment without processes: ``run`` executes the generated app on an
    InProcessGrid whose nodes get the node config the SuperNodes would get."""
    started = []

    def start(self, *, timeout=120.0):
        started.append(self.num_clients)
        return self

    def run(self, app, run_config=None, *, on_line=None, timeout=3600.0):
        config, _ = load_and_validate(app / "pyproject.toml", check_module=False)
        monkeypatch.delitem(sys.modules, APP_MODULE, raising=False)
        monkeypatch.syspath_prepend(str(app))
        server_app = load_app(f"{APP_MODULE}:server_app", ValueError, project_dir=app)
        client_app = load_app(f"{APP_MODULE}:client_app", ValueError, project_dir=app)
        monkeypatch.delitem(sys.modules, APP_MODULE)
        grid = InProcessGrid(client_app, num_clients=self.num_clients,
                             node_config={CACHE_DIR: str(self.cache), **self._node_config})
        handlers = list(logger.handlers)
        try:
            server_app(grid, Context(1, 1, {}, RecordDict(),
                                     config["tool"]["flwr"]["app"]["config"]))
        finally:
            for handler in set(logger.handlers) - set(handlers):
                logger.removeHandler(handler)
            logger.setLevel(logging.NOTSET)
        return 0

    monkeypatch.setattr(LocalDeployment, "start", start)
    monkeypatch.setattr(LocalDeployment, "run", run)
    return started


def deploy(out, rounds, resume=None, *, simulated=True):
    """A deployed run; ``simulated``: nodes whose secrets derive from the seed (the same
    numbers in every folder), else nodes with secrets of their own (OS entropy)."""
    config = {"rounds": rounds, "seed": 5, **({"resume": str(resume)} if resume else {})}
    return run_deployment(algorithm=ALGORITHM, data=DATA, num_clients=3, out=out,
                          run_config=config,
                          node_config={SIMULATION_SEED: 5} if simulated else None)


def test_deployment_keeps_client_states_in_its_checkpoint_and_resumes_them(
        tmp_path, inprocess_processes):
    full = deploy(tmp_path / "full", 4)
    deploy(tmp_path / "first", 3)
    assert sorted(p.name for p in (tmp_path / "first/checkpoint/clients").iterdir()) == [
        f"client-{k}.{ext}" for k in range(3) for ext in ("json", "npz", "secret")]
    for _ in range(2):   # the checkpoint stays a valid starting point
        resumed = deploy(tmp_path / "resumed", 4, resume=tmp_path / "first/checkpoint")
        assert_same_run(resumed, full)
        np.testing.assert_array_equal(resumed.final_epsilon(), full.final_epsilon())
    # a new run in another folder does not continue the old client states
    again = deploy(tmp_path / "again", 4)
    assert_same_run(again, full)


def test_nodes_with_their_own_secrets_resume_twice_into_identical_forks(tmp_path,
                                                                       inprocess_processes):
    """Each node draws its secret from OS entropy and keeps it beside its state: two resumes of
    one checkpoint replay the same noise (no extra release), a new run draws other noise, the
    server's files hold no secret, and a resume without a node's secret is refused."""
    deploy(tmp_path / "first", 3, simulated=False)
    clients = tmp_path / "first/checkpoint/clients"
    secrets = [(clients / f"client-{k}.secret").read_text().strip() for k in range(3)]
    assert len(set(secrets)) == 3
    assert all((clients / f"client-{k}.secret").stat().st_mode & 0o777 == 0o600
               for k in range(3))
    server_files = [tmp_path / "first/result.json", tmp_path / "first/checkpoint/server.json"]
    assert not any(secret in path.read_text() for secret in secrets for path in server_files)
    forks = []
    for name in ("fork1", "fork2"):
        forks.append(deploy(tmp_path / name, 4, resume=tmp_path / "first/checkpoint",
                            simulated=False))
    assert_same_run(forks[0], forks[1])
    assert not forks[0].seeded_noise
    assert [(tmp_path / f"fork1/checkpoint/clients/client-{k}.secret").read_text().strip()
            for k in range(3)] == secrets
    fresh = deploy(tmp_path / "fresh", 4, simulated=False)
    assert not np.allclose(fresh.model["w"], forks[0].model["w"])
    (clients / "client-1.secret").unlink()
    with pytest.raises(ParameterError, match=r"client 1's noise secret .*client-1\.secret\) is "
                                             r"missing"):
        deploy(tmp_path / "fork3", 4, resume=tmp_path / "first/checkpoint", simulated=False)


def _files(folder):
    return {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*")
            if path.is_file()}


def test_a_new_run_into_a_folder_holding_a_run_is_refused_and_deletes_nothing(
        tmp_path, inprocess_processes):
    """A new run started every node afresh: it deleted the previous run's client states (their
    release counters) in OUT/checkpoint/clients, silently."""
    deploy(tmp_path / "first", 2)
    before = _files(tmp_path / "first")
    started = len(inprocess_processes)
    with pytest.raises(ParameterError) as info:
        deploy(tmp_path / "first", 3)
    message = str(info.value)
    checkpoint = (tmp_path / "first" / "checkpoint").resolve()
    assert f"{checkpoint.parent} holds a previous run" in message
    assert "the states of 3 client(s)" in message and "privacy state" in message
    assert f"--resume {checkpoint}" in message and "a new --out" in message
    assert _files(tmp_path / "first") == before          # result.json and states untouched
    assert len(inprocess_processes) == started           # refused before any process
    # client states alone (a run stopped before its first server checkpoint) are refused too
    (checkpoint / "server.json").unlink()
    with pytest.raises(ParameterError, match=r"holds a previous run: the states of 3 client"):
        deploy(tmp_path / "first", 3)
    # the remedies work: a resume in place, or a new folder
    (tmp_path / "second").mkdir()
    (tmp_path / "second" / "result.json").write_text("{}")   # no checkpoint: no false alarm
    deploy(tmp_path / "second", 2)
    resumed = deploy(tmp_path / "second", 3, resume=tmp_path / "second" / "checkpoint")
    assert_same_run(resumed, deploy(tmp_path / "third", 3))


def test_a_resume_in_the_other_mode_is_refused_before_any_process(tmp_path,
                                                                   inprocess_processes):
    """Detected only by the ServerApp, after the SuperLink and SuperNodes had started."""
    deploy(tmp_path / "first", 2)
    started = len(inprocess_processes)
    asynchronous = {"mode": "async", "ticks": 3, "stagger": "1,2,1"}
    with pytest.raises(ParameterError, match=r"written by a synchronous run \(mode 'sync'\) and "
                                             r"this run is asynchronous \(mode 'async'\)"):
        run_deployment(algorithm=ALGORITHM, data=DATA, num_clients=3, out=tmp_path / "async",
                       run_config={**asynchronous,
                                   "resume": str(tmp_path / "first/checkpoint")})
    # an asynchronous checkpoint resumed synchronously
    data = [DATA.build(k, 3) for k in range(3)]
    run_inprocess_async(ALGORITHM.build(), data, stagger=[1, 2, 1], ticks=2,
                        checkpoint=tmp_path / "ack", state_dir=tmp_path / "ack" / "clients")
    with pytest.raises(ParameterError, match=r"written by an asynchronous run \(mode 'async'\) "
                                             r"and this run is synchronous \(mode 'sync'\).*"
                                             r"--mode async"):
        deploy(tmp_path / "sync", 3, resume=tmp_path / "ack")
    with pytest.raises(ParameterError, match=r"holds no server checkpoint .*server\.json is "
                                             r"missing"):
        deploy(tmp_path / "none", 3, resume=tmp_path / "nowhere")
    assert len(inprocess_processes) == started
    assert not any((tmp_path / name).exists() for name in ("async", "sync", "none"))


def test_deployment_refuses_a_resume_without_client_states(tmp_path, inprocess_processes):
    deploy(tmp_path / "first", 2)
    for path in (tmp_path / "first/checkpoint/clients").iterdir():
        path.unlink()
    with pytest.raises(ParameterError, match="client 0 has no saved state"):
        deploy(tmp_path / "resumed", 3, resume=tmp_path / "first/checkpoint")
    assert len(inprocess_processes) == 1   # refused before any process started
