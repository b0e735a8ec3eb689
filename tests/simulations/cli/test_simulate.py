"""``dmdidc simulate``: open loop, user weights, per-channel limits, refusals before any write."""

import json

import numpy as np
import pytest

from dmdidc import DelayedPlant
from simulations.cli import main


def random_model(tmp_path, seed, name="model.json"):
    """A random 2-state, 2-input plant with a fractional delay, saved as a model file."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2)) - 0.5 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 2)) + 2 * np.eye(2),
                                         rng.uniform(0.2, 3.0), 1.0)
    return plant, plant.save(tmp_path / name)


def run(tmp_path, model, *options, out="sim", steps=15):
    code = main(["simulate", str(model), "--steps", str(steps), "--out", str(tmp_path / out),
                 *options])
    summary = None
    if code == 0:
        summary = json.loads((tmp_path / out / "summary.json").read_text())
    return code, summary


@pytest.mark.parametrize("seed", range(4))
def test_open_loop_holds_the_inputs_and_follows_the_plant(tmp_path, seed):
    plant, model = random_model(tmp_path, seed)
    code, summary = run(tmp_path, model, "--controller", "none", "--x0", "1,-1")
    assert code == 0 and summary["controller"] == "none"
    table = np.genfromtxt(tmp_path / "sim" / "trajectory.csv", delimiter=",", names=True)
    expected = plant.simulate(np.array([1.0, -1.0]), np.zeros((2, 15)))
    assert np.allclose([table["x_1"], table["x_2"]], expected, rtol=1e-9, atol=1e-12)
    assert np.all(table["u_1"][:-1] == 0) and np.all(table["u_2"][:-1] == 0)
    assert (tmp_path / "sim" / "summary.md").read_text().startswith("# dmdidc simulate")


@pytest.mark.parametrize("seed", range(4))
def test_heavier_input_weight_means_smaller_inputs(tmp_path, seed):
    _, model = random_model(tmp_path, seed)
    energy = {}
    for r in ("0.1", "100"):
        assert run(tmp_path, model, "--controller", "exact", "--r", r, out=r)[0] == 0
        table = np.genfromtxt(tmp_path / r / "trajectory.csv", delimiter=",", names=True)
        inputs = np.column_stack([table[name] for name in table.dtype.names
                                  if name.startswith("u")])
        energy[r] = float(np.nansum(inputs ** 2))
    assert energy["100"] < energy["0.1"]


@pytest.mark.parametrize("seed", range(3))
def test_mpc_respects_per_channel_limits(tmp_path, seed):
    _, model = random_model(tmp_path, seed)
    code, _ = run(tmp_path, model, "--controller", "mpc", "--u-max", "0.2,0.7", "--q", "1,3",
                  "--x0", "2,2")
    assert code == 0
    table = np.genfromtxt(tmp_path / "sim" / "trajectory.csv", delimiter=",", names=True)
    for name, bound in (("u_1", 0.2), ("u_2", 0.7)):
        column = table[name][np.isfinite(table[name])]
        assert np.all(np.abs(column) <= bound * (1 + 1e-6) + 1e-7)


def test_the_summary_records_the_symmetric_lower_bound_it_used(tmp_path):
    """Trial: --u-max 0.2 ran with u_min = -0.2 but summary.json said null, and a rerun
    from the summary (no lower bound) gave another cost."""
    _, model = random_model(tmp_path, 1)
    code, summary = run(tmp_path, model, "--controller", "mpc", "--u-max", "0.2,0.7",
                        "--x0", "2,2")
    assert code == 0 and summary["u_min"] == [-0.2, -0.7]
    again, rerun = run(tmp_path, model, "--controller", "mpc", "--u-max", "0.2,0.7",
                       "--u-min=" + ",".join(f"{v:g}" for v in summary["u_min"]),
                       "--x0", "2,2", out="again")
    assert again == 0 and rerun["cost"] == pytest.approx(summary["cost"], rel=1e-9)


@pytest.mark.parametrize(("options", "message"), [
    (["--q", "1,2,3"], r"--q has 3 values; give one, or 2 \(one per state\)"),
    (["--controller", "mpc", "--u-max", "1,2,3"], "--u-max has 3 values"),
    (["--controller", "none", "--r", "2"], "--r weighs the inputs"),
    (["--u-max", "1"], "only to --controller mpc"),
    (["--x0", "1e308,1e308"], r"accepted \|x0_i\| <= 1e\+150"),
    (["--x0", "nan,1"], "--x0 must be finite"),
    (["--steps", "100000000000"], r"--steps 100000000000 needs about .* TiB of memory; .*"
                                  r"accepted --steps 1 \.\. \d+ for this model"),
])
def test_refusals_name_the_option_and_write_nothing(tmp_path, capsys, options, message):
    import re

    _, model = random_model(tmp_path, 0)
    assert main(["simulate", str(model), "--out", str(tmp_path / "sim"), *options]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "sim").exists()


def test_a_failing_run_leaves_the_good_outputs_untouched(tmp_path):
    _, model = random_model(tmp_path, 1)
    assert run(tmp_path, model)[0] == 0
    folder = tmp_path / "sim"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    assert set(before) == {"summary.json", "summary.md", "trajectory.csv", "trajectory.png"}
    for bad in (["--x0", "1e308,1e308"], ["--x0", "1,2,3"], ["--steps", "10000000000000"]):
        assert run(tmp_path, model, *bad)[0] == 2
        after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
        assert after == before
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_a_failure_while_writing_keeps_the_old_files(tmp_path, monkeypatch):
    """A failure after some outputs were written (here: the figure) changes nothing."""
    from simulations.cli import simulate

    _, model = random_model(tmp_path, 2)
    assert run(tmp_path, model)[0] == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "sim").iterdir()}

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(simulate, "_plot_trajectory", broken)
    assert run(tmp_path, model, "--x0", "3,3")[0] == 2
    assert {p.name: p.read_bytes() for p in (tmp_path / "sim").iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_an_output_model_as_the_plant_of_a_state_model_is_refused(tmp_path, capsys):
    # 'identify --outputs' writes an OutputDMDidc file; a state model's controller is fed the
    # plant's states, which an output model does not have: say so and what works (an output
    # model as the model: tests/simulations/cli/test_simulate_outputs.py)
    from dmdidc import OutputDMDidc, random_excitation

    plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[0.0], [1.0]], 1.3, 0.5)
    U = random_excitation(1, 600, rng=0)
    Y = [[1.0, 0.0]] @ plant.simulate([0.0, 0.0], U)[:, :-1]
    output_model = OutputDMDidc(max_delay=4).fit(Y, U, dt=0.5).save(tmp_path / "out.json")
    state_model = plant.save(tmp_path / "plant.json")
    argv = [str(state_model), "--plant", str(output_model)]
    assert main(["simulate", *argv, "--steps", "5", "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "--plant file" in err and "output model" in err and "OUTPUT_MODEL.json" in err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("seed", range(3))
def test_a_named_model_labels_the_trajectory_and_the_summary(tmp_path, seed):
    import csv

    from dmdidc import ModelInfo

    plant, _ = random_model(tmp_path, seed)
    named = plant.with_info(ModelInfo(("T_room", "T_wall"), ("heater", "fan"), ("K", ""),
                                      ("kW", "kW")))
    model = named.save(tmp_path / "named.json")
    code, summary = run(tmp_path, model, "--controller", "none", "--x0", "1,-1",
                        "--measurement-noise", "0.1", "--seed", str(seed))
    assert code == 0
    assert summary["signals"] == {"states": ["T_room", "T_wall"], "state_units": ["K", ""],
                                  "inputs": ["heater", "fan"], "input_units": ["kW", "kW"]}
    with (tmp_path / "sim" / "trajectory.csv").open() as handle:
        header = next(csv.reader(handle))
    assert header == ["t", "T_room [K]", "T_wall", "T_room measured [K]", "T_wall measured",
                      "heater [kW]", "fan [kW]"]
    code, summary = run(tmp_path, tmp_path / "model.json", out="plain")     # no names: as was
    assert code == 0 and "signals" not in summary


def physical_model(tmp_path, seed, name="physical.json"):
    """The plant of :func:`random_model` around a physical operating point (u_op of tens, as a
    valve in %, x_op its equilibrium), saved; returns the plant and the path."""
    plant, _ = random_model(tmp_path, seed, name="base.json")
    rng = np.random.default_rng(100 + seed)
    u_op = rng.uniform(20.0, 60.0, 2)
    x_op = np.linalg.solve(np.eye(2) - plant.A_d, plant.B_d @ u_op)
    physical = DelayedPlant.from_continuous(plant.A_c, plant.B_c, plant.delay, plant.dt,
                                            operating_point=(x_op, u_op))
    return physical, physical.save(tmp_path / name)


def start_near(plant, seed):
    x0 = plant.operating_point.state + np.random.default_rng(seed).normal(0.0, 0.5, 2)
    return ",".join(repr(float(v)) for v in x0)


@pytest.mark.parametrize("seed", range(3))
def test_a_physical_model_on_a_deviation_plant_is_refused_before_any_work(tmp_path, capsys,
                                                                          seed):
    # Walkthrough finding 4: the controller regulated a deviation plant to x_op (cost 8e5,
    # rc 0). Either side without an operating point is refused, naming the remedy.
    physical, model = physical_model(tmp_path, seed)
    deviation = physical.deviation_model().save(tmp_path / "deviation.json")
    x0 = start_near(physical, seed)
    # the remedies in the command's terms (a plant file's field, identify's flag), not
    # Python calls (a user trial)
    for first, second, remedy in ((model, deviation, "add the plant's operating point to its "
                                   "file"), (deviation, model, "drop the plant file's")):
        code = main(["simulate", str(first), "--plant", str(second), "--x0", x0,
                     "--out", str(tmp_path / "sim")])
        err = capsys.readouterr().err
        assert code == 2, err
        assert "has the operating point" in err and "none (the origin)" in err
        assert remedy in err and "--detrend" in err and "deviation_model()" not in err
        assert not (tmp_path / "sim").exists()


@pytest.mark.parametrize("seed", range(3))
def test_a_physical_model_holds_its_operating_point(tmp_path, seed):
    # Both physical: the loop runs; the final state norm is the deviation from x_op.
    physical, model = physical_model(tmp_path, seed)
    code, summary = run(tmp_path, model, "--plant", str(model), "--steps", "80",
                        "--x0", start_near(physical, seed))
    assert code == 0
    assert summary["final_state_norm"] < 1e-3
    assert summary["operating_point_state"] == pytest.approx(
        physical.operating_point.state.tolist())


@pytest.mark.parametrize("seed", range(3))
def test_a_physical_model_needs_an_explicit_start(tmp_path, capsys, seed):
    # Walkthrough finding 19: x_op + 1 is 1 m on a 1.2 m level; the start is asked for.
    physical, model = physical_model(tmp_path, seed)
    assert main(["simulate", str(model), "--out", str(tmp_path / "sim")]) == 2
    err = capsys.readouterr().err
    example = ",".join(f"{value:.4g}" for value in physical.operating_point.state)
    assert "--x0 is required" in err and f"x_op = ({example})" in err
    assert not (tmp_path / "sim").exists()


@pytest.mark.parametrize("seed", range(3))
def test_mpc_takes_an_actuator_range_and_refuses_one_without_the_operating_point(
        tmp_path, capsys, seed):
    physical, model = physical_model(tmp_path, seed)
    x0 = start_near(physical, seed)
    code, summary = run(tmp_path, model, "--controller", "mpc", "--u-min", "0",
                        "--u-max", "100", "--x0", x0, "--steps", "60")
    assert code == 0 and summary["u_min"] == [0.0] and summary["u_max"] == [100.0]
    table = np.genfromtxt(tmp_path / "sim" / "trajectory.csv", delimiter=",", names=True)
    inputs = np.concatenate([table[name][:-1] for name in ("u_1", "u_2")])
    assert inputs.min() >= -1e-6 and inputs.max() <= 100.0 + 1e-6
    assert summary["final_state_norm"] < 1e-2
    # Walkthrough finding 5: |u| <= 10 cannot hold u_op of tens: refused, not cost 3e5
    assert run(tmp_path, model, "--controller", "mpc", "--u-max", "10", "--x0", x0,
               out="bad")[0] == 2
    err = capsys.readouterr().err
    assert "u_op" in err and "physical values, not deviations" in err
    assert not (tmp_path / "bad").exists()


def test_u_min_is_checked_like_u_max(tmp_path, capsys):
    _, model = random_model(tmp_path, 0)
    assert run(tmp_path, model, "--u-min", "0")[0] == 2
    assert "only to --controller mpc" in capsys.readouterr().err
    assert run(tmp_path, model, "--controller", "mpc", "--u-min", "0,1,2")[0] == 2
    assert "--u-min has 3 values" in capsys.readouterr().err
    assert run(tmp_path, model, "--controller", "mpc", "--u-min", "1", "--u-max", "0.5")[0] == 2
    assert "u_min > u_max" in capsys.readouterr().err
    # a symmetric range needs u_max > 0 (the parser refused --u-max 0 before --u-min existed)
    assert run(tmp_path, model, "--controller", "mpc", "--u-max", "0,1")[0] == 2
    assert "--u-max 0,1 without --u-min" in capsys.readouterr().err
    assert not (tmp_path / "sim").exists()


def test_default_design_is_stable_on_the_model_and_an_unstable_loop_is_reported(tmp_path,
                                                                              capsys):
    """The README plant with delays 2.0 and 2.9 s (unequal fractions): the fractional
    controller's default gain was designed on (A_d, B_d), radius 1.18 on the model itself and
    a cost of 2e7 over 50 steps; the reference-delay design holds it.  A loop that is unstable
    on the model (truncated prediction, fractional delays) is said on stderr and recorded."""
    plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2.0]],
                                         delay=[2.0, 2.9], dt=2.0)
    model = plant.save(tmp_path / "model.json")
    for extra in ([], ["--q", "2", "--r", "0.5"]):
        code, summary = run(tmp_path, model, *extra)
        assert code == 0 and summary["model_spectral_radius"] < 0.5
        assert summary["final_state_norm"] < 1e-3
        assert "warning" not in capsys.readouterr().err
    code, summary = run(tmp_path, model, "--controller", "truncated")
    assert code == 0 and summary["model_spectral_radius"] > 1
    err = capsys.readouterr().err
    assert "warning: the truncated controller's loop is unstable on the model" in err
    assert "--controller fractional" in err and "UnstableLoopWarning" not in err


@pytest.mark.parametrize("seed", range(2))
def test_a_model_regulating_to_another_operating_point_than_the_plants_is_noted(tmp_path, capsys,
                                                                                seed):
    # A new user's room: the identified x_op (the equilibrium under the data's mean input) was
    # 0.29 degC from the plant's, the loop settled there and its cost (6.74 against 1.48)
    # held the offset, with nothing said.  Now a warning names both points and the remedy;
    # the same point on both sides says nothing.
    physical, path = physical_model(tmp_path, seed)
    op = physical.operating_point
    shifted = physical.with_operating_point(state=op.state + 0.3).save(tmp_path / "shifted.json")
    x0 = start_near(physical, seed)
    code, summary = run(tmp_path, shifted, "--plant", str(path), "--x0", x0, "--steps", "80")
    err = capsys.readouterr().err
    assert code == 0 and "regulates to its operating point" in err
    assert "with_operating_point" in err and summary["final_state_norm"] > 0.1
    code, _ = run(tmp_path, path, "--plant", str(path), "--x0", x0, out="same")
    assert code == 0 and "regulates to its operating point" not in capsys.readouterr().err
