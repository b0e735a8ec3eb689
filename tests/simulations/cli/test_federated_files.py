"""``dmdidc federated identify FILE ...``: federated DMDidc on the users' own files."""

import json
import re

import numpy as np
import pytest

from dmdidc import DelayedPlant
from simulations.cli import main


def client_files(tmp_path, clients=3, samples=800, seed=0):
    plant = DelayedPlant.from_continuous([[-0.3, 1.1], [-1.1, -0.3]], [[1, -1], [-1, 2]], 2.5,
                                         2.0)
    rng = np.random.default_rng(seed)
    paths = []
    for k in range(clients):
        U = rng.uniform(-1, 1, (2, samples))
        X = plant.simulate(np.zeros(2), U) + 0.01 * rng.standard_normal((2, samples + 1))
        if k == 1:                                           # one client keeps an .npz
            paths.append(tmp_path / f"c{k}.npz")
            np.savez(paths[-1], X=X, U=U)
            continue
        t = 2.0 * np.arange(samples + 1)
        paths.append(tmp_path / f"c{k}.csv")
        np.savetxt(paths[-1], np.column_stack([t, X.T, np.vstack([U.T, [np.nan, np.nan]])]),
                   delimiter=",", header="time,x1,x2,u1,u2", comments="", fmt="%.17g")
    return paths


BOUNDS = ["--max-delay", "3", "--state-bound", "4", "--input-bound", "1"]


def test_clients_files_identify_the_plant_with_each_clients_guarantee(tmp_path, capsys):
    files = client_files(tmp_path)
    out = tmp_path / "fed"
    # a seed makes the test's noise repeatable (real releases draw fresh noise without one)
    assert main(["federated", "identify", *map(str, files), "--inputs", "u1,u2", "--dt", "2",
                 *BOUNDS, "--epsilon", "20", "--seed", "0", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["clients"] == 3 and summary["epsilon_per_client_max"] <= 20 * (1 + 1e-9)
    assert summary["delay_steps"] == [1, 1] and summary["missing"] == {}
    assert all(low <= 2.5 <= high for low, high in zip(summary["delay_low"],
                                                       summary["delay_high"], strict=True))
    model = DelayedPlant.load(out / "model.json")
    assert np.all(np.abs(model.delay - 2.5) < 0.5)
    assert (out / "summary.md").read_text().startswith("# dmdidc federated identify")
    assert "| clients | 3 |" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "message"), [
    (["--clients", "10"], "--clients sets the built-in study's simulated clients"),
    ([], "needs --max-delay, --state-bound, --input-bound"),
    (["--engine", "flower", *BOUNDS], "--engine flower runs the built-in study"),
    (["--dt", "3", *BOUNDS], "--dt 3 disagrees with 'time'"),
])
def test_file_mistakes_are_refused_before_any_work(tmp_path, capsys, extra, message):
    files = client_files(tmp_path, samples=30)
    code = main(["federated", "identify", *map(str, files[:1]), "--inputs", "u1,u2", *extra,
                 "--out", str(tmp_path / "fed")])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "fed").exists()


def test_interpolated_gaps_are_refused_and_uneven_segments_do_not_suggest_them(tmp_path,
                                                                             capsys):
    path = tmp_path / "gaps.csv"
    rows = ["time,x1,x2,u1,u2"] + [
        f"{2 * k},{'' if k in (20, 21, 22) else np.sin(k)},{np.cos(k)},{np.sin(2 * k)},"
        f"{np.cos(3 * k)}" for k in range(60)]
    path.write_text("\n".join(rows) + "\n")
    base = ["federated", "identify", str(path), "--inputs", "u1,u2", *BOUNDS, "--epsilon", "1",
            "--out", str(tmp_path / "fed")]
    assert main(base + ["--missing", "interpolate"]) == 2
    err = capsys.readouterr().err
    assert "--missing interpolate is refused with a private release" in err
    assert "--missing drop" in err
    assert main(base + ["--missing", "drop"]) == 2         # segments of 19 and 36 samples
    err = capsys.readouterr().err
    assert "different lengths" in err and "--missing interpolate" not in err
    assert not (tmp_path / "fed").exists()


def test_clients_must_measure_the_same_plant_at_the_same_period(tmp_path, capsys):
    files = client_files(tmp_path, samples=30)
    rng = np.random.default_rng(0)           # 3 states: another plant (not constant: refused)
    np.savez(tmp_path / "other.npz", X=rng.standard_normal((3, 31)), U=rng.standard_normal((2, 30)))
    assert main(["federated", "identify", str(files[0]), str(tmp_path / "other.npz"),
                 "--inputs", "u1,u2", *BOUNDS, "--dt", "2", "--out", str(tmp_path / "f")]) == 2
    assert "every client measures the same plant" in capsys.readouterr().err


def test_file_options_without_files_are_refused(tmp_path, capsys):
    assert main(["federated", "identify", "--inputs", "u1", "--missing", "drop",
                 "--out", str(tmp_path / "f")]) == 2
    assert "--inputs, --missing act on data files" in capsys.readouterr().err


def test_the_privacy_unit_of_the_clients_releases_takes_effect(tmp_path, capsys):
    # docs/privacy.md's units table: federated identification at the unit each client chose
    files = client_files(tmp_path)
    base = ["federated", "identify", *map(str, files), "--inputs", "u1,u2", "--dt", "2",
            *BOUNDS, "--epsilon", "20", "--seed", "0"]
    summaries = {}
    for name, extra in (("sample", []), ("window", ["--unit", "window", "--window", "3"])):
        assert main([*base, *extra, "--out", str(tmp_path / name)]) == 0
        summaries[name] = json.loads((tmp_path / name / "summary.json").read_text())
    assert summaries["sample"]["unit"] == "sample" and summaries["sample"]["window"] is None
    assert summaries["window"]["unit"] == "window" and summaries["window"]["window"] == 3
    # a window of 3 steps needs more noise at the same epsilon: wider delay intervals (an
    # interval the noise leaves undetermined, "nan", is the widest)
    width = {name: np.nan_to_num(np.subtract(np.array(s["delay_high"], dtype=float),
                                             np.array(s["delay_low"], dtype=float)),
                                 nan=np.inf) for name, s in summaries.items()}
    assert np.all(np.isfinite(width["sample"])) and np.all(width["window"] > width["sample"])
    for extra, message in ((["--unit", "window"], "--unit window needs --window STEPS"),
                           (["--window", "3"], "--window needs --unit window")):
        assert main([*base, *extra, "--out", str(tmp_path / "x")]) == 2
        assert message in capsys.readouterr().err
    # the built-in study releases per sample: the flags act on data files only
    assert main(["federated", "identify", "--unit", "trajectory", "--out",
                 str(tmp_path / "f")]) == 2
    assert "--unit acts on data files" in capsys.readouterr().err


def test_files_without_inputs_are_refused_with_the_commands_that_fit_them(tmp_path, capsys):
    # input-free data (U with zero rows) is plain DMD: identify fits it, the federated IV cannot
    rng = np.random.default_rng(4)
    paths = []
    for k in range(2):
        X = np.cumsum(0.1 * rng.standard_normal((2, 41)), axis=1)
        paths.append(tmp_path / f"c{k}.npz")
        np.savez(paths[-1], X=X, U=np.zeros((0, 40)))
    assert main(["federated", "identify", *map(str, paths), "--dt", "1", *BOUNDS,
                 "--out", str(tmp_path / "fed")]) == 2
    err = capsys.readouterr().err
    assert "has no inputs" in err and "'dmdidc identify'" in err and err.count("\n") == 1
    assert "n_inputs" not in err and not (tmp_path / "fed").exists()
    assert main(["identify", str(paths[0]), "--dt", "1", "--max-delay", "0",
                 "--out", str(tmp_path / "model.json")]) == 0


def test_real_releases_draw_fresh_noise_and_a_given_seed_is_a_key_that_is_not_written(
        tmp_path, capsys):
    """Without --seed every client's noise is keyed by a secret from OS entropy, kept nowhere
    (two runs on the same files release different statistics); --seed S makes the noise
    reproducible, warns that S removes it, and S appears in no output file."""
    # data the noise leaves well determined (200 samples at epsilon 5 sat at the refusal 'the
    # privacy noise hides the excitation', which fresh noise then crossed at random)
    files = client_files(tmp_path)

    def run(name, *extra):
        out = tmp_path / name
        assert main(["federated", "identify", *map(str, files), "--inputs", "u1,u2", "--dt",
                     "2", *BOUNDS, "--epsilon", "20", *extra, "--out", str(out)]) == 0
        return DelayedPlant.load(out / "model.json"), out, capsys.readouterr().err

    fresh, out, err = run("fresh")
    again, _, _ = run("again")
    assert not np.allclose(fresh.A_d, again.A_d)
    assert "can remove the noise" not in err
    assert "not kept" in json.loads((out / "summary.json").read_text())["noise"]
    seeded, out, err = run("seeded", "--seed", "987654")
    repeat, _, _ = run("repeat", "--seed", "987654")
    np.testing.assert_array_equal(seeded.A_d, repeat.A_d)
    assert "--seed 987654 seeds the clients' noise: anyone with this seed can remove" in err
    assert "keep it secret like a key" in err
    assert all("987654" not in path.read_text() for path in out.iterdir()
               if path.suffix in (".json", ".md"))


def test_a_too_short_file_and_a_file_given_twice_are_named(tmp_path, capsys):
    """Trial 13: a 6-sample client gave 'sensitivity must be > 0; got 0.0' (no file, no
    cause), and one file given twice ran as two clients."""
    files = client_files(tmp_path, samples=800)
    short = tmp_path / "short.csv"
    short.write_text("\n".join((tmp_path / "c0.csv").read_text().splitlines()[:7]) + "\n")
    run = ["--inputs", "u1,u2", *BOUNDS, "--epsilon", "1", "--out", str(tmp_path / "fed")]
    assert main(["federated", "identify", str(files[0]), str(short), *run]) == 2
    err = capsys.readouterr().err
    assert "'" + str(short) + "' is too short for --max-delay 3" in err
    assert "6 samples per record" in err and "sensitivity" not in err
    assert main(["federated", "identify", str(files[0]), str(files[2]),
                 str(tmp_path / "." / "c0.csv"), *run]) == 2
    assert "is given twice (clients 0 and 2" in capsys.readouterr().err
    assert not (tmp_path / "fed").exists()


def test_a_model_whose_intervals_the_releases_do_not_support_is_written_and_says_so(
        tmp_path, capsys, monkeypatch):
    # noisy releases can leave the structure with the block before each delay fitted too
    # without a continuous model (2 clients of test_signal_names' data at --epsilon 50,
    # --max-delay 3: 1-6 draws of the clients' noise in 600, which draws depending on the
    # BLAS rounding, as the noise is keyed by the data): the intervals raised LogarithmError
    # and the command exited with status 2, writing nothing. That refusal, on any data:
    from dmdidc import DMDidc
    from dmdidc.errors import LogarithmError

    def no_intervals(self, level=0.95, **kwargs):
        raise LogarithmError("the intervals span the block structure with the block before "
                             "each delay fitted too, which has no continuous model (...)")

    monkeypatch.setattr(DMDidc, "confidence_intervals", no_intervals)
    files, out = client_files(tmp_path), tmp_path / "fed"
    assert main(["federated", "identify", *map(str, files), "--inputs", "u1,u2", "--dt", "2",
                 *BOUNDS, "--epsilon", "20", "--seed", "0", "--out", str(out)]) == 0
    model = DelayedPlant.load(out / "model.json")
    assert model.has_continuous and not model.signal_info.intervals
    summary = json.loads((out / "summary.json").read_text())
    assert summary["delay_steps"] == model.delay_steps.tolist() == [1, 1]
    np.testing.assert_array_equal(summary["delay_s"], model.delay)
    assert summary["delay_low"] is None and summary["delay_high"] is None
    assert list(summary["missing"]) == ["intervals"]
    assert "block before each delay fitted too" in summary["missing"]["intervals"]
    err = capsys.readouterr().err
    assert re.search(r"warning: the model is kept without confidence intervals: .*block "
                     r"before each delay", err)
    assert "ContinuousModelWarning" not in err         # the command's warning, not Python's


def test_inputs_without_an_active_block_have_no_delay_and_say_why():
    # inputs that do not act on the states: every block fails the effect test, and the
    # summary wrote delay_s 0.0 per channel with `missing: {}`, a measured-looking delay
    import warnings

    from dmdidc import DMDidc, random_excitation
    from simulations.cli.common import strict_json
    from simulations.cli.identify import delay_record

    rng = np.random.default_rng(0)
    U = random_excitation(2, 2000, rng=rng)
    X = rng.standard_normal((2, 2001))                        # U does not act
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=3).fit(X, U, dt=2.0)
        model = est.annotated_model(0.95)
    assert est.diagnostics_["effect"].failed and model.has_continuous
    _, fields = delay_record(est, model, 0.95)
    fields = json.loads(json.dumps(strict_json(fields)))
    assert fields["delay_steps"] == [0, 0]
    assert fields["delay_s"] == fields["delay_low"] == fields["delay_high"] == [None, None]
    reason = fields["missing"]["delays"]
    assert "u0, u1" in reason and "check 'effect' failed" in reason
