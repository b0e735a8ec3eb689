"""Model files and summaries carry the data file's signal names and units (a CSV header
``T_room [K]``, an IdData archive), and the confidence intervals; data without names keep the
default names."""

import json

import numpy as np
import pytest

from dmdidc import DelayedPlant, IdData, random_excitation
from simulations.cli import main

HEADER = "time [s],T_room [K],T_wall [K],heater [kW],fan [kW]"


def _record(seed, samples=600, noise=1e-3):
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2))
    A_c -= (np.linalg.eigvals(A_c).real.max() + rng.uniform(0.1, 0.6)) * np.eye(2)   # stable
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)) + 2 * np.eye(2),
                                         rng.uniform(0.5, 5.0, 2), 2.0, max_delay=3)
    U = random_excitation(2, samples, rng=rng)
    X = plant.simulate(np.zeros(2), U)
    return X + noise * rng.standard_normal(X.shape), U


def _table(path, X, U, header=HEADER, columns=(0, 1)):
    t = 2.0 * np.arange(X.shape[1])
    inputs = np.vstack([U.T, np.full((1, 2), np.nan)])
    np.savetxt(path, np.column_stack([t, X[list(columns)].T, inputs]), delimiter=",",
               header=header, comments="", fmt="%.17g")
    return path


def _info(path):
    return DelayedPlant.load(path).info


@pytest.mark.parametrize("seed", range(3))
def test_identify_carries_names_units_and_intervals_into_the_model_file(seed, tmp_path, capsys):
    X, U = _record(seed)
    path, out = _table(tmp_path / "rig.csv", X, U), tmp_path / f"m{seed}.npz"
    assert main(["identify", str(path), "--inputs", "heater,fan", "--max-delay", "6",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("signals (rows and columns of the matrices): states T_room [K], T_wall [K]; "
            "inputs heater [kW], fan [kW]") in printed
    info = _info(out)
    assert info.state_names == ("T_room", "T_wall") and info.state_units == ("K", "K")
    assert info.input_names == ("heater", "fan") and info.input_units == ("kW", "kW")
    assert info.provenance["data"] == {"source": str(path), "experiments": 1, "samples": 601,
                                       "dt": 2.0}
    delay = info.intervals["delay"]
    assert info.intervals["level"] == 0.95 and delay["unit"] == "s"
    assert all(low <= value <= high for low, value, high in zip(
        delay["low"], delay["value"], delay["high"], strict=True))


def test_data_without_names_keep_the_default_names(tmp_path, capsys):
    X, U = _record(5)
    np.savez(tmp_path / "d.npz", X=X, U=U)
    assert main(["identify", str(tmp_path / "d.npz"), "--dt", "2", "--max-delay", "6",
                 "--out", str(tmp_path / "m.json")]) == 0
    assert "states x0, x1; inputs u0, u1" in capsys.readouterr().out
    info = _info(tmp_path / "m.json")
    assert info.state_names == ("x0", "x1") and info.state_units == ("", "")


def test_an_iddata_archive_gives_its_names_and_units(tmp_path, capsys):
    X, U = _record(6)
    IdData(X, U, dt=2.0, state_names=["p", "q"], input_names=["valve", "pump"],
           state_units=["bar", "m3/h"], input_units=["%", "kW"], source="plant 7"
           ).save(tmp_path / "d.npz")
    assert main(["identify", str(tmp_path / "d.npz"), "--max-delay", "6",
                 "--out", str(tmp_path / "m.json")]) == 0
    info = _info(tmp_path / "m.json")
    assert info.state_units == ("bar", "m3/h") and info.input_names == ("valve", "pump")
    assert info.provenance["data"]["source"] == "plant 7"


def test_privacy_and_federated_identify_record_the_signals(tmp_path, capsys):
    # (every privatized release seeded: without --seed the clients' noise is fresh OS
    # randomness, and some draws at epsilon 50 leave no continuous model: a flaky test)
    files = [_table(tmp_path / f"site{k}.csv", *_record(10 + k, samples=3000)) for k in range(2)]
    argv = ["privacy", "identify", str(files[0]), "--inputs", "heater,fan", "--max-delay", "6",
            "--state-bound", "40", "--input-bound", "4", "--epsilon", "1000", "--seed", "1",
            "--out", str(tmp_path / "p.json"), "--json", str(tmp_path / "p_summary.json")]
    assert main(argv) == 2                  # the default Gaussian mechanism needs a delta
    err = capsys.readouterr().err
    assert "needs delta in (0, 1), e.g. --delta 1e-5" in err
    assert "use --mechanism laplace or --mechanism sas for pure DP" in err
    assert main([*argv, "--delta", "1e-5"]) == 0
    summary = json.loads((tmp_path / "p_summary.json").read_text())
    assert summary["signals"] == {"states": ["T_room", "T_wall"], "state_units": ["K", "K"],
                                  "inputs": ["heater", "fan"], "input_units": ["kW", "kW"]}
    assert _info(tmp_path / "p.json").input_units == ("kW", "kW")
    assert main(["federated", "identify", *map(str, files), "--inputs", "heater,fan",
                 "--max-delay", "6", "--state-bound", "40", "--input-bound", "4",
                 "--epsilon", "50", "--seed", "2", "--out", str(tmp_path / "fed")]) == 0
    summary = json.loads((tmp_path / "fed" / "summary.json").read_text())
    assert summary["signals"]["states"] == ["T_room", "T_wall"]
    info = _info(tmp_path / "fed" / "model.json")
    assert info.state_units == ("K", "K") and info.provenance["data"]["source"] == \
        f"{files[0]}, {files[1]}"


def test_federated_clients_with_other_columns_are_refused(tmp_path, capsys):
    X, U = _record(20, samples=3000)
    first = _table(tmp_path / "a.csv", X, U)
    swapped = _table(tmp_path / "b.csv", X, U, columns=(1, 0),
                     header="time [s],T_wall [K],T_room [K],heater [kW],fan [kW]")
    assert main(["federated", "identify", str(first), str(swapped), "--inputs", "heater,fan",
                 "--max-delay", "3", "--state-bound", "40", "--input-bound", "4",
                 "--out", str(tmp_path / "fed")]) == 2
    err = capsys.readouterr().err
    assert "has the states T_wall, T_room" in err and "--states" in err
    assert err.count("\n") == 1 and not (tmp_path / "fed").exists()
    assert main(["federated", "identify", str(first), str(swapped), "--inputs", "heater,fan",
                 "--states", "T_room,T_wall", "--max-delay", "3", "--state-bound", "40",
                 "--input-bound", "4", "--epsilon", "50", "--seed", "2",
                 "--out", str(tmp_path / "fed")]) == 0


def test_federated_clients_with_other_units_are_refused(tmp_path, capsys):
    # the same columns in degC and kW against K and W were combined into one model silently
    X, U = _record(21, samples=3000)
    first = _table(tmp_path / "a.csv", X, U)
    for header, kind in (("time [s],T_room [degC],T_wall [degC],heater [kW],fan [kW]", "state"),
                         ("time [s],T_room [K],T_wall [K],heater [W],fan [kW]", "input")):
        other = _table(tmp_path / "b.csv", X, U, header=header)
        assert main(["federated", "identify", str(first), str(other), "--inputs", "heater,fan",
                     "--max-delay", "3", "--state-bound", "40", "--input-bound", "4",
                     "--epsilon", "50", "--out", str(tmp_path / "fed")]) == 2
        err = capsys.readouterr().err
        assert f"measures its {kind}s in" in err and "the same units" in err, kind
        assert not (tmp_path / "fed").exists()


def test_federated_input_free_data_is_refused_before_the_bounds_are_asked(tmp_path, capsys):
    rng = np.random.default_rng(4)
    np.savez(tmp_path / "free.npz", X=np.cumsum(0.1 * rng.standard_normal((2, 41)), axis=1),
             U=np.zeros((0, 40)))
    for bounds in ([], ["--max-delay", "2", "--state-bound", "5"]):     # no --input-bound
        assert main(["federated", "identify", str(tmp_path / "free.npz"), "--dt", "1", *bounds,
                     "--out", str(tmp_path / "fed")]) == 2
        err = capsys.readouterr().err
        assert "has no inputs" in err and "'dmdidc identify'" in err
        assert "--input-bound" not in err and err.count("\n") == 1


def test_follow_writes_the_header_names_and_units(tmp_path, capsys):
    X, U = _record(30, samples=400)
    path = _table(tmp_path / "live.csv", X, U)
    assert main(["identify", "--follow", str(path), "--inputs", "heater,fan", "--max-delay", "6",
                 "--idle-timeout", "0.05", "--poll", "0.01", "--out",
                 str(tmp_path / "live.json")]) == 0
    info = _info(tmp_path / "live.json")
    assert info.state_names == ("T_room", "T_wall") and info.input_units == ("kW", "kW")
