"""``dmdidc identify --follow``: a live CSV file, the model written at the end, on SIGUSR1 and
after Ctrl-C, and the options refused where they do nothing."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dmdidc import DelayedPlant
from simulations.cli import main
from simulations.studies.data_kinds import random_plant

ROOT = Path(__file__).resolve().parents[3]
DT = 0.5


def _log(path, seed, samples=2000, time_column=True, level=0.0):
    """A noisy record of a random plant as a CSV table (states about ``level``); returns the
    plant."""
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, max_delay=4, dt=DT)
    U = rng.standard_normal((2, samples))
    X = plant.simulate(np.zeros(3), U)
    X = X + 0.01 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape) + level
    inputs = np.vstack([U.T, np.full((1, 2), np.nan)])
    columns = [DT * np.arange(X.shape[1])] if time_column else []
    np.savetxt(path, np.column_stack(columns + [X.T, inputs]), delimiter=",",
               header=("time," if time_column else "") + "x1,x2,x3,u1,u2", comments="")
    return plant


@pytest.mark.parametrize("seed", range(3))
def test_follow_a_written_file_prints_delays_and_writes_a_loadable_model(seed, tmp_path,
                                                                         capsys):
    plant = _log(tmp_path / "log.csv", seed)
    out = tmp_path / "live.json"
    assert main(["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
                 "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01", "--every", "500",
                 "--model-out", str(out)]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == (f"following {tmp_path / 'log.csv'}: states x1, x2, x3; inputs u1, u2; "
                        f"T = 0.5 s; a line every 500 samples")
    assert [line.split(" (")[0] for line in lines[1:5]] == [f"samples {k}"
                                                             for k in (500, 1000, 1500, 2000)]
    assert "delay u1 " in lines[4] and "(95% intervals)" in lines[4]
    assert lines[-1] == f"wrote {out} at the end (2000 samples)"
    assert "no new complete line for 0.05 s; stopped" in captured.err
    model = DelayedPlant.load(out)
    assert np.abs(model.delay - plant.delay).max() < 0.1 * DT


@pytest.mark.parametrize("seed", range(2))
def test_follow_with_forgetting_a_record_around_a_level(seed, tmp_path, capsys):
    """Trial 18, r9: states logged around 350 with --forgetting 0.999 gave rank-deficiency
    errors and delays outside their intervals, and no model at the end; now every line has
    delays near the truth and the model is written (module notes of dmdidc.online)."""
    plant = _log(tmp_path / "log.csv", seed, samples=3000, level=350.0)
    out = tmp_path / "live.json"
    assert main(["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
                 "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01", "--every",
                 "1000", "--forgetting", "0.999", "--model-out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all("no delay yet" not in line for line in lines), lines
    assert lines[-1] == f"wrote {out} at the end (3000 samples)"
    model = DelayedPlant.load(out)
    assert np.abs(model.delay - plant.delay).max() < 0.05 * DT


def test_follow_columns_by_number_and_dt_without_a_time_column(tmp_path, capsys):
    _log(tmp_path / "log.csv", 3, samples=600, time_column=False)
    argv = ["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "4,5", "--max-delay",
            "4", "--idle-timeout", "0.05", "--poll", "0.01", "--out", str(tmp_path / "m.json"),
            "--forgetting", "0.999", "--estimator", "ls"]
    assert main(argv) == 2
    assert "has no time column: give --dt" in capsys.readouterr().err
    assert main(argv + ["--dt", "0.5"]) == 0
    assert "inputs u1, u2; T = 0.5 s" in capsys.readouterr().out
    # a column beyond the table is named as given, in the command's 1-based numbering (it
    # read 'inputs: 6 is not a column ... give names or 0-based numbers' for --inputs 4,7)
    bad = list(argv)
    bad[bad.index("4,5")] = "4,7"
    assert main(bad + ["--dt", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "inputs: 7 is not a column of log.csv" in err and "numbers 1 to 5" in err


@pytest.mark.parametrize("extra, message", [
    (["--reference", "r.csv"], "does not take --reference"),
    (["data.npz"], "does not take the data file"),
    (["--missing", "drop"], "does not take --missing"),
    (["--max-delay", "auto"], "needs an integer --max-delay"),
    (["--estimator", "huber"], "takes --estimator auto (iv), iv or ls"),
    (["--window", "100", "--forgetting", "0.99"], "forgetting or window, not both"),
    (["--inputs", "none"], "--follow needs input columns: the live fit identifies"),
    # an idle --time-tolerance, refused as the batch command refuses it (it was ignored)
    (["--time", "none", "--dt", "0.5", "--time-tolerance", "0.2"],
     "--time-tolerance 0.2 bounds the jitter of a time column's stamps, and log.csv has none"),
    (["--time", "ignore", "--dt", "0.5", "--time-tolerance", "0.2"],
     "drop --time-tolerance (an option that would not act is refused)")])
def test_follow_refuses_what_the_live_fit_does_not_do(extra, message, tmp_path, capsys):
    _log(tmp_path / "log.csv", 4, samples=100)
    assert main(["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
                 "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01",
                 "--out", str(tmp_path / "m.json")] + extra) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_live_options_without_follow_are_refused(tmp_path, capsys):
    _log(tmp_path / "log.csv", 5, samples=100)
    assert main(["identify", str(tmp_path / "log.csv"), "--inputs", "u1,u2", "--max-delay", "3",
                 "--every", "10", "--out", str(tmp_path / "m.json")]) == 2
    assert "--every configures live identification: give --follow FILE" in \
        capsys.readouterr().err


def test_follow_a_malformed_line_and_too_few_samples(tmp_path, capsys):
    path = tmp_path / "log.csv"
    path.write_text("time,x,u\n0,1,0.5\n0.5,0.9,x\n1.0,0.8,0\n")
    argv = ["identify", "--follow", str(path), "--inputs", "u", "--max-delay", "1",
            "--idle-timeout", "0.05", "--poll", "0.01", "--out", str(tmp_path / "m.json")]
    assert main(argv) == 2
    assert "log.csv line 3 ('0.5,0.9,x'), column 'u': 'x' is not a number" in \
        capsys.readouterr().err
    assert main(argv + ["--bad-lines", "lost"]) == 2
    err = capsys.readouterr().err
    assert "counted as a lost sample" in err and "no model written at the end (2 samples)" in err
    assert not (tmp_path / "m.json").exists()


def test_a_model_request_before_any_sample_is_reported_and_following_goes_on(tmp_path, capsys):
    from dmdidc import OnlineDMDidc
    from simulations.cli.follow import _Guard

    guard = _Guard(str(tmp_path / "m.json"))
    for live in (None, OnlineDMDidc(max_delay=2, dt=1.0)):      # before and after creation
        guard.live = live
        guard._request(signal.SIGUSR1, None)                    # between updates: at once
        assert "no model written on request (SIGUSR1): no sample received yet" in \
            capsys.readouterr().err
    guard.busy = True
    guard._request(signal.SIGUSR1, None)                        # during an update: deferred
    assert guard.requested and capsys.readouterr().err == ""
    assert not (tmp_path / "m.json").exists()


@pytest.mark.slow                   # a real process: its start (imports) takes seconds
def test_sigusr1_writes_the_model_and_ctrl_c_ends_with_it(tmp_path):
    """A real process follows a file being written: SIGUSR1 too early (refused, it goes on),
    more data, SIGUSR1 until the model of every sample is written, Ctrl-C (SIGINT)."""
    _log(tmp_path / "full.csv", 6, samples=3000)
    lines = (tmp_path / "full.csv").read_text().splitlines(keepends=True)
    path, out = tmp_path / "log.csv", tmp_path / "m.json"
    path.write_text(lines[0] + "".join(lines[1:11]))        # 9 samples: no model yet
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "simulations.cli", "identify", "--follow", str(path), "--inputs",
         "u1,u2", "--max-delay", "4", "--poll", "0.01", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path)
    try:
        assert process.stdout.readline().startswith("following")
        process.send_signal(signal.SIGUSR1)
        assert "no model written on request (SIGUSR1)" in process.stdout.readline()
        with path.open("a") as handle:
            handle.write("".join(lines[11:1011]))            # 1009 samples in all
        for _ in range(500):                                # each request: one line
            process.send_signal(signal.SIGUSR1)
            written = next(line for line in process.stdout if "on request (SIGUSR1)" in line)
            if written == f"wrote {out} on request (SIGUSR1) (1009 samples)\n":
                break
            time.sleep(0.02)                                # the data are still being read
        else:
            pytest.fail(f"no model of the 1009 samples written on request; last: {written}")
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0, output
    assert f"interrupted (Ctrl-C)\nwrote {out} at the end (1009 samples)\n" in output
    assert DelayedPlant.load(out).delay.shape == (2,)


@pytest.mark.parametrize("seed", range(2))
def test_follow_takes_jittery_stamps_in_ms_and_refuses_them_beyond_the_tolerance(seed, tmp_path,
                                                                                capsys):
    # a PLC's log: stamps in ms with 1 % of T of jitter; the period is the stamps' span
    _log(tmp_path / "log.csv", seed, samples=600)
    rng = np.random.default_rng(seed)
    rows = (tmp_path / "log.csv").read_text().splitlines()
    stamps = 1e3 * DT * (np.arange(len(rows) - 1) + 0.01 * rng.standard_normal(len(rows) - 1))
    (tmp_path / "log.csv").write_text("\n".join(
        ["time [ms]" + rows[0][4:]] + [f"{float(t)!r}," + r.split(",", 1)[1]
                                       for t, r in zip(stamps, rows[1:], strict=True)]) + "\n")
    argv = ["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
            "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01", "--every", "600",
            "--out", str(tmp_path / "m.json")]
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    period = float(first.split("T = ")[1].split(" s")[0])
    assert abs(period - DT) < 4 * 0.01 * DT / 600 + 1e-6
    assert main(argv + ["--time-tolerance", "0.001"]) != 0
    assert "--time-tolerance" in capsys.readouterr().err


@pytest.mark.parametrize("seed", range(2))
def test_follow_leaves_a_pandas_index_out_and_reads_a_temperature_t_as_a_state(seed, tmp_path,
                                                                              capsys):
    _log(tmp_path / "log.csv", seed, samples=300, time_column=False)
    rows = (tmp_path / "log.csv").read_text().splitlines()
    # a pandas index (unnamed first column 0, 1, 2, ...) and 'x1' renamed 'T [degC]'
    (tmp_path / "log.csv").write_text("\n".join(
        [",T [degC]" + rows[0][2:]] + [f"{k}," + r for k, r in enumerate(rows[1:])]) + "\n")
    argv = ["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
            "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01", "--every", "300",
            "--dt", str(DT), "--out", str(tmp_path / "m.json")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "states T, x2, x3; inputs u1, u2" in captured.out
    assert "row index" in captured.err and "--time 1" in captured.err
    assert "degC" in captured.err


@pytest.mark.parametrize("seed", range(2))
def test_follow_leaves_a_pandas_index_beside_the_time_column_out(seed, tmp_path, capsys):
    """Audit finding: ``,time,x1,..`` (``DataFrame.to_csv`` of a frame with a time column)
    made the index a state ''; the period still comes from the time column."""
    _log(tmp_path / "log.csv", seed, samples=300)
    rows = (tmp_path / "log.csv").read_text().splitlines()
    (tmp_path / "log.csv").write_text("\n".join(
        ["," + rows[0]] + [f"{k},{r}" for k, r in enumerate(rows[1:])]) + "\n")
    argv = ["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
            "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01", "--every", "300",
            "--out", str(tmp_path / "m.json")]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "states x1, x2, x3; inputs u1, u2; T = 0.5 s" in captured.out
    assert "row index" in captured.err


def _model_arrays(path):
    model = DelayedPlant.load(path)
    return model.A_d, model.B_blocks


@pytest.mark.parametrize("seed", range(2))
def test_follow_time_ignore_leaves_the_time_column_out_as_the_refusal_suggests(seed, tmp_path,
                                                                               capsys):
    """The refusal of an ambiguous first column suggests --time ignore (with --dt): following
    takes it, and the samples are those of the same file read without the column."""
    _log(tmp_path / "log.csv", seed, samples=400)
    rows = (tmp_path / "log.csv").read_text().splitlines()
    # a counter named 'k' (0, 1, 2, ...) instead of the time: a time, an index or a ramp
    (tmp_path / "log.csv").write_text("\n".join(
        ["k" + rows[0][4:]] + [f"{k}," + r.split(",", 1)[1] for k, r in enumerate(rows[1:])])
        + "\n")
    argv = ["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
            "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01", "--every", "400"]
    assert main(argv + ["--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "'k' increases by the same step" in err
    assert "--time ignore to leave it out unread (with --dt)" in err
    assert main(argv + ["--time", "ignore", "--out", str(tmp_path / "m.json")]) == 2
    assert "--time ignore needs --dt" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
    assert main(argv + ["--time", "ignore", "--dt", str(DT),
                        "--out", str(tmp_path / "m.json")]) == 0
    captured = capsys.readouterr()
    assert "states x1, x2, x3; inputs u1, u2; T = 0.5 s" in captured.out
    assert "'k' is left out (--time ignore): its stamps are not read" in captured.err
    # the same samples as with the states named (the counter then simply not read)
    assert main(argv + ["--states", "x1,x2,x3", "--dt", str(DT),
                        "--out", str(tmp_path / "named.json")]) == 0
    for ours, theirs in zip(_model_arrays(tmp_path / "m.json"),
                            _model_arrays(tmp_path / "named.json"), strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_follow_time_ignore_reads_no_stamp_and_refuses_a_file_without_a_time_column(
        tmp_path, capsys):
    """A clock that jumps back (a PLC reset) stops the default follow; --time ignore never
    reads the stamps, and gives the model of the file without them."""
    _log(tmp_path / "clean.csv", 7, samples=400, time_column=False)
    rows = (tmp_path / "clean.csv").read_text().splitlines()
    stamps = DT * np.arange(len(rows) - 1)
    stamps[200:] -= 50.0                                      # the clock is reset once
    body = [f"{float(t)!r}," + r for t, r in zip(stamps, rows[1:], strict=True)]
    (tmp_path / "log.csv").write_text("\n".join(["time," + rows[0]] + body) + "\n")
    argv = ["--inputs", "u1,u2", "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01",
            "--every", "400", "--dt", str(DT)]
    assert main(["identify", "--follow", str(tmp_path / "log.csv"), "--out",
                 str(tmp_path / "m.json")] + argv) == 2
    err = capsys.readouterr().err
    assert "line 202" in err and "time 50 s goes back from 99.5 s of line 201" in err
    assert "--time ignore to leave it out unread (with --dt)" in err
    assert main(["identify", "--follow", str(tmp_path / "log.csv"), "--time", "ignore", "--out",
                 str(tmp_path / "m.json")] + argv) == 0
    assert "'time' is left out (--time ignore)" in capsys.readouterr().err
    assert main(["identify", "--follow", str(tmp_path / "clean.csv"), "--out",
                 str(tmp_path / "clean.json")] + argv) == 0
    for ours, theirs in zip(_model_arrays(tmp_path / "m.json"),
                            _model_arrays(tmp_path / "clean.json"), strict=True):
        np.testing.assert_array_equal(ours, theirs)
    # nothing to leave out: refused (as by the batch reader), no model written
    capsys.readouterr()
    assert main(["identify", "--follow", str(tmp_path / "clean.csv"), "--time", "ignore",
                 "--out", str(tmp_path / "none.json")] + argv) == 2
    assert ("--time ignore: log.csv has no column named time" in capsys.readouterr().err
            .replace("clean.csv", "log.csv"))
    assert not (tmp_path / "none.json").exists()


@pytest.mark.parametrize("seed", range(2))
def test_follow_bad_lines_lost_reads_every_row_after_a_duplicated_row_and_a_garbage_line(
        seed, tmp_path, capsys):
    """The trial's report: one row written twice and one 'ERROR' line cost every later row
    (each refused as off the grid).  The stamps place the rows: the model is the clean file's."""
    _log(tmp_path / "clean.csv", seed, samples=600)
    rows = (tmp_path / "clean.csv").read_text().splitlines()
    rng = np.random.default_rng(seed)
    twice, after = sorted(rng.choice(np.arange(10, 590), 2, replace=False))
    spoiled = rows[:twice + 2] + [rows[twice + 1]] + rows[twice + 2:after + 2] + [
        "ERROR sensor timeout"] + rows[after + 2:]
    (tmp_path / "log.csv").write_text("\n".join(spoiled) + "\n")
    argv = ["--inputs", "u1,u2", "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01",
            "--every", "600"]
    assert main(["identify", "--follow", str(tmp_path / "clean.csv"), "--out",
                 str(tmp_path / "clean.json")] + argv) == 0
    capsys.readouterr()
    assert main(["identify", "--follow", str(tmp_path / "log.csv"), "--out",
                 str(tmp_path / "m.json"), "--bad-lines", "lost"] + argv) == 0
    captured = capsys.readouterr()
    assert "samples 600 (lost 0)" in captured.out and "(600 samples)" in captured.out
    assert f"line {twice + 3} " in captured.err and "a duplicated row" in captured.err
    assert f"line {after + 4} ('ERROR sensor timeout')" in captured.err
    assert "in all 1 duplicated row dropped, 1 malformed line left out" in captured.err
    for ours, theirs in zip(_model_arrays(tmp_path / "m.json"),
                            _model_arrays(tmp_path / "clean.json"), strict=True):
        np.testing.assert_array_equal(ours, theirs)      # the same rows, read the same way


def test_a_follow_stopped_by_the_file_mid_stream_writes_the_model_of_the_rows_before(
        tmp_path, capsys):
    """Hours of following were lost with one malformed line (--bad-lines error) or a clock
    step: the model of the samples read before it is written, and the error still ends the
    command (exit 2)."""
    plant = _log(tmp_path / "log.csv", 1, samples=1500)
    lines = (tmp_path / "log.csv").read_text().splitlines()
    lines.insert(1201, "ERROR sensor timeout")
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "live.json"
    assert main(["identify", "--follow", str(tmp_path / "log.csv"), "--inputs", "u1,u2",
                 "--max-delay", "4", "--idle-timeout", "0.05", "--poll", "0.01", "--every", "400",
                 "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "line 1202" in captured.err
    written = [line for line in captured.out.splitlines() if line.startswith(f"wrote {out}")]
    assert written and "before the error below" in written[0]
    samples = int(written[0].split("(")[1].split()[0])
    assert samples == 1199          # every row before the line (lines 2-1201), none lost
    model = DelayedPlant.load(out)
    assert np.abs(model.delay - plant.delay).max() < 0.1 * DT


@pytest.mark.parametrize("seed", range(2))
def test_follow_names_spikes_as_outliers_and_warns_when_the_model_follows_a_change(
        seed, tmp_path, capsys):
    """Single spikes (20 standard deviations) in a followed file are printed as outliers at
    their samples, not as changes (before: one "change detected ... relearning" each, the
    model resting on the samples after the last); a real change (the dynamics 60 % faster)
    ends with a warning that the model rests only on the samples since its onset."""
    plant = _log(tmp_path / "log.csv", seed, samples=3000)
    table = np.loadtxt(tmp_path / "log.csv", delimiter=",", skiprows=1)
    spikes = [900, 1500, 2300]
    table[spikes, 2] += 20 * table[:, 2].std()
    np.savetxt(tmp_path / "spiky.csv", table, delimiter=",", header="time,x1,x2,x3,u1,u2",
               comments="")
    argv = ["--inputs", "u1,u2", "--max-delay", "4", "--idle-timeout", "0.05", "--poll",
            "0.01", "--every", "1000"]
    out = tmp_path / "live.json"
    assert main(["identify", "--follow", str(tmp_path / "spiky.csv"), "--out", str(out)]
                + argv) == 0
    captured = capsys.readouterr()
    assert "change detected" not in captured.out and "rests only" not in captured.err
    assert [int(line.split()[3]) for line in captured.out.splitlines()
            if line.startswith("outlier at sample")] == spikes
    assert np.abs(DelayedPlant.load(out).delay - plant.delay).max() < 0.1 * DT
    # the model file records what the stream did (before: provenance.data null, no history)
    live = DelayedPlant.load(out).signal_info.provenance["live"]
    assert [o["sample"] for o in live["outliers"]] == spikes and live["events"] == []
    assert live["since"] is None and live["samples"] == 3000
    assert DelayedPlant.load(out).signal_info.provenance["data"]["source"].endswith("spiky.csv")
    # the same plant 60 % faster from sample 2000 on
    rng = np.random.default_rng(seed)
    faster = DelayedPlant.from_continuous(1.6 * plant.A_c, plant.B_c, plant.delay, DT,
                                          max_delay=4)
    U = table[:-1, 4:6].T
    X = plant.simulate(np.zeros(3), U[:, :2000])
    X = np.concatenate([X, faster.simulate(X[:, -1], U[:, 2000:],
                                           U_past=U[:, 1996:2000])[:, 1:]], axis=1)
    table[:, 1:4] = (X + 0.01 * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape)).T
    np.savetxt(tmp_path / "change.csv", table, delimiter=",", header="time,x1,x2,x3,u1,u2",
               comments="")
    assert main(["identify", "--follow", str(tmp_path / "change.csv"), "--out", str(out)]
                + argv) == 0
    captured = capsys.readouterr()
    assert captured.out.count("change detected") == 1
    onset = int(captured.out.split("(onset ")[1].split(",")[0])
    assert 1990 <= onset < 2100          # (the CUSUM's estimate: it may begin early)
    assert (f"warning: the model rests only on the {3000 - onset} samples since the onset "
            f"({onset})") in captured.err
    live = DelayedPlant.load(out).signal_info.provenance["live"]
    assert live["since"] == onset and [e["onset"] for e in live["events"]] == [onset]


@pytest.mark.parametrize("seed", range(2))
def test_follow_summarizes_many_outliers_and_warns_of_their_rate(seed, tmp_path, capsys):
    """Heavy-tailed noise (Student-t, 2 degrees of freedom, on 30 dB) names about 1 % of the
    samples as outliers: the first five are printed one per line, the rest as one summary
    line per report (before: one line each), and the outlier rate check is printed once as
    it fires (naming heavy-tailed noise and a change seen only at input steps) and again at
    the end; a clean record prints neither."""
    _log(tmp_path / "log.csv", seed, samples=3000)
    table = np.loadtxt(tmp_path / "log.csv", delimiter=",", skiprows=1)
    argv = ["--inputs", "u1,u2", "--max-delay", "4", "--idle-timeout", "0.05", "--poll",
            "0.01", "--every", "500", "--out", str(tmp_path / "live.json")]
    assert main(["identify", "--follow", str(tmp_path / "log.csv")] + argv) == 0
    captured = capsys.readouterr()
    assert "outlier" not in captured.out + captured.err
    rng = np.random.default_rng(seed)
    X = table[:, 1:4]
    table[:, 1:4] = X + 0.01 * X.std(axis=0) * rng.standard_t(2, X.shape)
    np.savetxt(tmp_path / "heavy.csv", table, delimiter=",", header="time,x1,x2,x3,u1,u2",
               comments="")
    assert main(["identify", "--follow", str(tmp_path / "heavy.csv")] + argv) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert sum(line.startswith("outlier at sample") for line in lines) == 5
    assert any(" more outliers (samples " in line for line in lines)
    assert sum(line.startswith("warning: outlier rate check") for line in lines) == 1
    assert "outlier rate check" in captured.err and "heavy-tailed" in captured.err \
        and "held inputs" in captured.err
