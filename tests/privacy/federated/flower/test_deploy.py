"""The deployed app and the loopback launcher (one slow test runs real Flower processes)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from flwr.app import Context, RecordDict
from flwr.cli.config_utils import load_and_validate
from flwr.supercore.object_ref import load_app

import privacy
from privacy.errors import ParameterError
from privacy.federated.flower import (
    SIMULATION_SEED,
    FactorySpec,
    InProcessGrid,
    LocalDeployment,
    load_result,
    run_deployment,
    run_inprocess_sync,
    write_app,
)
from privacy.federated.flower import deploy as deploy_module
from privacy.federated.flower.app import DATA_FILE, RESULT_FILE, _node_data, build_cached
from privacy.federated.flower.deploy import APP_MODULE
from privacy.federated.protocol import logger
from privacy.federated.runner import run_sync
from tests.privacy.federated.flower.factories import classification_partition
from tests.privacy.federated.flower.test_inprocess import assert_same_run

ALGORITHM = FactorySpec("tests.privacy.federated.flower.factories:private_scaffold",
                        {"num_clients": 3})
DATA = FactorySpec("tests.privacy.federated.flower.factories:classification_partition",
                   {"seed": 4})


def reference(num_clients, rounds, seed):
    data = [DATA.build(k, num_clients) for k in range(num_clients)]
    return run_sync(ALGORITHM.build(), data, rounds=rounds, seed=seed)


def test_factory_spec_checks_and_renders_as_python():
    with pytest.raises(ParameterError, match="module:attribute"):
        FactorySpec("numpy.linspace")
    with pytest.raises(ParameterError, match="JSON"):
        FactorySpec("numpy:linspace", {"num": np.arange(2)})
    spec = FactorySpec("numpy:linspace", {"num": 2, "endpoint": False})
    assert eval(repr(spec), {"FactorySpec": FactorySpec}) == spec


def test_generated_app_passes_flower_validation_and_runs_in_process(tmp_path, monkeypatch):
    out = tmp_path / "out"
    app_dir = write_app(tmp_path / "app", algorithm=ALGORITHM, data=DATA,
                        run_config={"rounds": 3, "seed": 2, "num-clients": 3, "out": str(out)})
    config, warnings = load_and_validate(app_dir / "pyproject.toml", check_module=False)
    assert warnings == []
    assert config["tool"]["flwr"]["app"]["config"]["rounds"] == 3
    monkeypatch.delitem(sys.modules, APP_MODULE, raising=False)
    monkeypatch.syspath_prepend(str(app_dir))
    server_app = load_app(f"{APP_MODULE}:server_app", ValueError, project_dir=app_dir)
    client_app = load_app(f"{APP_MODULE}:client_app", ValueError, project_dir=app_dir)
    monkeypatch.delitem(sys.modules, APP_MODULE)
    grid = InProcessGrid(client_app, num_clients=3, node_config={SIMULATION_SEED: 2})
    run_config = config["tool"]["flwr"]["app"]["config"]
    handlers = list(logger.handlers)
    try:
        server_app(grid, Context(1, 1, {}, RecordDict(), run_config))
    finally:
        for handler in set(logger.handlers) - set(handlers):
            logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert (out / RESULT_FILE).exists()
    assert_same_run(load_result(out, ALGORITHM.build()), reference(3, 3, 2))
    with pytest.raises(ParameterError, match="unknown run config keys"):
        write_app(tmp_path / "bad", algorithm=ALGORITHM, data=DATA, run_config={"round": 3})


def test_a_node_can_bring_its_own_data_file(tmp_path):
    np.savez(tmp_path / "mine.npz", x=np.ones((3, 2)))
    context = Context(1, 9, {DATA_FILE: str(tmp_path / "mine.npz"), "partition-id": 0},
                      RecordDict(), {})
    np.testing.assert_array_equal(_node_data(DATA, context)["x"], np.ones((3, 2)))
    recipe = Context(1, 9, {"partition-id": 1, "num-partitions": 3}, RecordDict(), {})
    np.testing.assert_array_equal(_node_data(DATA, recipe)["X"],
                                  classification_partition(1, 3, seed=4)["X"])
    with pytest.raises(ParameterError, match="num-partitions"):
        _node_data(DATA, Context(1, 9, {"partition-id": 1}, RecordDict(), {}))


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stop_ends_whole_process_groups(tmp_path):
    deployment = LocalDeployment(1, workdir=tmp_path, grace=5)
    parent = deployment._spawn("sleeper", ["sh", "-c", "sleep 300 & sleep 300 & wait"])
    assert group_alive(parent.pid)
    deployment.stop()
    assert not group_alive(parent.pid) and deployment.alive() == []


def test_a_failed_start_leaves_no_process(tmp_path, monkeypatch):
    failing = tmp_path / "fake-superlink"
    failing.write_text("#!/bin/sh\necho 'cannot bind' >&2\nexit 3\n")
    failing.chmod(failing.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(deploy_module, "_executable", lambda name: str(failing))
    deployment = LocalDeployment(2, workdir=tmp_path / "work", grace=5)
    with pytest.raises(RuntimeError, match="exited with code 3"):
        deployment.start(timeout=20)
    assert deployment.processes == [] and "cannot bind" in deployment.log_tail("superlink")


def processes_using(flwr_home: Path) -> list[int]:
    """Live processes whose environment names this FLWR_HOME (all we started, grandchildren
    included)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"FLWR_HOME={flwr_home}".encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.slow
def test_real_processes_on_loopback_give_the_numpy_and_in_process_numbers(tmp_path):
    """SuperLink + 3 SuperNodes + flwr run: private SCAFFOLD, 2 rounds (client control variates
    and release counters carried between messages by the SuperNodes; simulated nodes, whose
    noise secrets derive from the seed, draw the runner's noise in separate processes), then
    resumed to 3 rounds by new processes that are not told the seed: they continue with the
    secrets saved beside their states."""
    lines: list[str] = []
    result = run_deployment(algorithm=ALGORITHM, data=DATA, num_clients=3, out=tmp_path / "out",
                            run_config={"rounds": 2, "seed": 5}, on_line=lines.append,
                            node_config={SIMULATION_SEED: 5}, workdir=tmp_path / "work")
    assert result.seeded_noise
    assert all((tmp_path / f"out/checkpoint/clients/client-{k}.secret").exists()
               for k in range(3))
    expected = reference(3, 2, 5)
    assert_same_run(result, expected)
    np.testing.assert_array_equal(result.final_epsilon(), expected.final_epsilon())
    data = [DATA.build(k, 3) for k in range(3)]
    assert_same_run(run_inprocess_sync(ALGORITHM.build(), data, rounds=2, seed=5), expected)
    assert any(line.startswith("dmdidc INFO: round 1") for line in lines)
    assert processes_using(tmp_path / "work" / "flwr-home") == []
    # resumed by new processes: the nodes continue from the states kept in the checkpoint
    resumed = run_deployment(algorithm=ALGORITHM, data=DATA, num_clients=3,
                             out=tmp_path / "resumed",
                             run_config={"rounds": 3, "resume": str(tmp_path / "out/checkpoint")})
    longer = reference(3, 3, 5)
    assert_same_run(resumed, longer)
    np.testing.assert_array_equal(resumed.final_epsilon(), longer.final_epsilon())


def test_built_algorithms_are_cached_for_the_node_processes(tmp_path, monkeypatch):
    first = build_cached(ALGORITHM, tmp_path)
    assert len(list(tmp_path.glob("*.pkl"))) == 1
    monkeypatch.setattr(FactorySpec, "build", lambda self, *a: pytest.fail("rebuilt"))
    again = build_cached(ALGORITHM, tmp_path)
    assert type(again) is type(first) and again.dps == first.dps
    np.testing.assert_array_equal(again.loss.features.basis, first.loss.features.basis)
    other = FactorySpec(ALGORITHM.target, {"num_clients": 2})
    with pytest.raises(pytest.fail.Exception, match="rebuilt"):
        build_cached(other, tmp_path)


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        # SO_REUSEADDR: a closed connection's TIME_WAIT does not count, a listener does
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ports(home: Path) -> list[int]:
    """The SuperLink's port (from the deployment's config.toml) and the SuperNodes'."""
    config = home / "config.toml"
    ports = [int(line.split(":")[-1].strip('"')) for line in
             (config.read_text().splitlines() if config.exists() else []) if "address" in line]
    for pid in processes_using(home):
        words = _cmdline(pid).split()
        if "flower-supernode" in " ".join(words[:2]) and "--port" in words:
            ports.append(int(words[words.index("--port") + 1]))
    return ports


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_serve_stops_every_flower_process_and_frees_the_ports(tmp_path, sig):
    """SIGTERM (default action: exit without unwinding) and Ctrl-C to a running ``dmdidc
    federated serve``: the ServerApp, which Flower starts in a session of its own, ends with
    the rest before the launcher reports, no port stays bound, nothing is written later."""
    out, root = tmp_path / "out", Path(privacy.__file__).resolve().parents[1]
    home = out / "logs" / "flwr-home"
    # a background job of a shell ignores SIGINT; Python then never raises KeyboardInterrupt
    launcher = subprocess.Popen(
        [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, "
         "signal.default_int_handler); from simulations.cli.root import main; "
         "sys.exit(main(sys.argv[1:]))", "federated", "serve", "--dataset", "iris",
         "--algorithm", "fedavg", "--rounds", "8", "--delta", "1e-5", "--logs", "--out",
         str(out)], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(root), "OPENBLAS_NUM_THREADS": "1"})
    try:
        deadline, ports = time.monotonic() + 180, []
        # the ServerApp running and the SuperLink's and the 3 SuperNodes' ports listening
        while not (any("serverapp" in _cmdline(p) for p in processes_using(home))
                   and len(ports := _ports(home)) == 4 and not any(map(_port_free, ports))):
            assert launcher.poll() is None and time.monotonic() < deadline, \
                launcher.communicate(timeout=60)
            time.sleep(0.5)
        serverapp = next(p for p in processes_using(home) if "serverapp" in _cmdline(p))
        assert os.getsid(serverapp) != os.getsid(launcher.pid)   # out of the groups' reach
        launcher.send_signal(sig)
        _, err = launcher.communicate(timeout=120)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        left = processes_using(home)
        for pid in left:        # a failure here must not leave the Flower processes behind
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert left == []
    assert launcher.returncode == (130 if sig == signal.SIGINT else 128 + sig)
    assert "every Flower process was stopped" in err
    assert all(_port_free(p) for p in ports)
    written = {p: p.stat().st_mtime_ns for p in out.rglob("*") if "logs" not in p.parts}
    time.sleep(3)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if "logs" not in p.parts} \
        == written
    assert not (out / RESULT_FILE).exists()
