"""The ``dmdidc`` command line (run in-process through ``main``)."""

import json

import numpy as np
import pytest

from dmdidc import DelayedPlant, random_excitation
from simulations.cli import main


@pytest.fixture
def data_file(tmp_path):
    plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], 2.5, 2.0)
    U = random_excitation(2, 120, rng=3)
    X = plant.simulate(np.zeros(2), U)
    path = tmp_path / "data.npz"
    np.savez(path, X=X, U=U)
    return path, X, U


def test_identify_npz_writes_model(data_file, tmp_path, capsys):
    path, _, _ = data_file
    out = tmp_path / "model.json"
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(out)]) == 0
    model = DelayedPlant.load(out)
    assert np.allclose(model.delay, 2.5, atol=1e-9)
    assert "delay [s]" in capsys.readouterr().out


def test_identify_csv_rows_are_samples(data_file, tmp_path):
    _, X, U = data_file
    np.savetxt(tmp_path / "x.csv", X.T, delimiter=",", header="x1,x2", comments="")
    np.savetxt(tmp_path / "u.csv", U.T, delimiter=",")
    out = tmp_path / "model.npz"
    assert main(["identify", "--states", str(tmp_path / "x.csv"), "--inputs",
                 str(tmp_path / "u.csv"), "--dt", "2", "--max-delay", "3",
                 "--out", str(out)]) == 0
    assert np.allclose(DelayedPlant.load(out).delay, 2.5, atol=1e-9)


def test_identify_unreadable_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_text("not an archive")
    assert main(["identify", str(bad), "--dt", "2", "--max-delay", "3"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_identify_missing_arrays(tmp_path, capsys):
    path = tmp_path / "d.npz"
    np.savez(path, X=np.zeros((2, 5)))
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "1"]) == 2
    assert "lacks" in capsys.readouterr().err


@pytest.mark.parametrize("controller", ["fractional", "truncated", "exact", "naive"])
def test_simulate_saved_model(data_file, tmp_path, controller):
    path, _, _ = data_file
    model = tmp_path / "model.json"
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    out = tmp_path / controller
    assert main(["simulate", str(model), "--controller", controller, "--steps", "20",
                 "--x0", "1,0.5", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 20
    assert (out / "trajectory.png").exists() and (out / "trajectory.csv").exists()
    if controller == "fractional":
        assert summary["final_state_norm"] < 1e-6
    if controller == "exact":
        assert summary["final_state_norm"] < 0.01 * np.sqrt(1.25)


def test_simulate_mpc_respects_bound(data_file, tmp_path):
    path, _, _ = data_file
    model = tmp_path / "model.json"
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    out = tmp_path / "mpc"
    assert main(["simulate", str(model), "--controller", "mpc", "--steps", "15",
                 "--u-max", "0.2", "--horizon", "8", "--out", str(out)]) == 0
    table = np.genfromtxt(out / "trajectory.csv", delimiter=",", names=True)
    inputs = np.stack([table["u_1"], table["u_2"]])[:, :-1]   # the final state has no input
    assert inputs.shape == (2, 15)
    assert np.all(np.abs(inputs) <= 0.2 + 1e-6)
    assert np.any(np.abs(inputs) > 0.199)                     # the bound is active


def test_simulate_dimension_mismatch(tmp_path, capsys):
    a = DelayedPlant.from_continuous([[-1.0]], [[1.0]], 0.5, 1.0)
    b = DelayedPlant.from_continuous(-np.eye(2), np.eye(2), 0.5, 1.0)
    a.save(tmp_path / "a.json")
    b.save(tmp_path / "b.json")
    assert main(["simulate", str(tmp_path / "a.json"), "--plant", str(tmp_path / "b.json")]) == 2
    assert "states" in capsys.readouterr().err


def test_demo_writes_figures(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--steps", "10"]) == 0
    for name in ("figure_9_1.png", "delay_mismatch.png", "summary.json", "summary.csv"):
        assert (tmp_path / name).exists()
    assert "fractional" in capsys.readouterr().out


def test_simulate_discrete_only_model(tmp_path):
    """A model without a continuous part (no real logarithm) still simulates, without the fine
    inter-sample curve."""
    plant = DelayedPlant(np.array([[-0.5]]), np.array([[[0.0]], [[1.0]]]), 1.0)
    plant.save(tmp_path / "m.json")
    out = tmp_path / "sim"
    assert main(["simulate", str(tmp_path / "m.json"), "--controller", "truncated",
                 "--steps", "20", "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["final_state_norm"] < 1e-6


def test_simulate_with_heavy_tailed_noise_is_reproducible(data_file, tmp_path):
    path, _, _ = data_file
    model = tmp_path / "model.json"
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["simulate", str(model), "--steps", "15", "--process-noise", "0.01",
                     "--measurement-noise", "0.01", "--noise", "sas", "--alpha", "1.7",
                     "--seed", "4", "--out", str(out)]) == 0
        runs.append((out / "trajectory.csv").read_text())
    assert runs[0] == runs[1]


def test_bad_x0_names_the_option(data_file, tmp_path, capsys):
    path, _, _ = data_file
    model = tmp_path / "sub" / "model.json"             # parent folder is created
    main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(model)])
    assert main(["simulate", str(model), "--x0", "a,b", "--out", str(tmp_path / "s")]) == 2
    assert "--x0" in capsys.readouterr().err
