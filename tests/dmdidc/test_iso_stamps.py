"""ISO 8601 stamps as the time column and text columns nobody asked for, in every reader
(read_data, the command line's reader, follow_csv): the same X, U and period as the file with
numeric stamps (dmdidc.time_column.iso_seconds)."""

import warnings

import numpy as np
import pytest

from _toolbox.errors import ParameterError
from dmdidc import DelayedPlant, follow_csv, random_excitation, read_data
from dmdidc.time_column import TimeColumnWarning, iso_seconds
from simulations.data_preparation import read_identification_data

SEEDS = range(6)
T = 0.5
START = np.datetime64("2026-11-28T00:47:19", "ms")


def record(seed, samples=80):
    """A random stable 2-state, 1-input plant with a delay, simulated at period T."""
    rng = np.random.default_rng(seed)
    A_c = rng.standard_normal((2, 2)) - 2.0 * np.eye(2)
    plant = DelayedPlant.from_continuous(A_c, rng.standard_normal((2, 1)), [0.7], T)
    U = random_excitation(1, samples, rng=rng)
    return plant.simulate(np.zeros(2), U), U, rng


def stamps_text(seconds, style, rng=None):
    """The stamps ``seconds`` after START written as a logger writes them."""
    moments = START + np.round(np.asarray(seconds) * 1e3).astype("timedelta64[ms]")
    text = [str(m) for m in moments]                            # 2026-11-28T00:47:19.500
    if style == "space":
        return [t.replace("T", " ") for t in text]
    if style == "Z":
        return [t + "Z" for t in text]
    if style == "mixed":            # the same instants, half in UTC+1, half in UTC
        local = [str(m + np.timedelta64(1, "h")) + "+01:00" for m in moments]
        return [loc if k % 2 else t + "Z"
                for k, (t, loc) in enumerate(zip(text, local, strict=True))]
    return text


def write(path, stamps, X, U, *, header="timestamp,x1,status,x2,u,operator", drop=()):
    """The record as a CSV with the text columns status and operator among its signals."""
    lines = [header]
    for k in range(X.shape[1]):
        if k in drop:
            continue
        u = repr(float(U[0, k])) if k < U.shape[1] else ""
        lines.append(",".join([stamps[k], repr(float(X[0, k])), "OK" if k % 7 else "WARN",
                               repr(float(X[1, k])), u, "ann"]))
    path.write_text("\n".join(lines) + "\n")
    return path


def read_all(path, **options):
    """X, U and the period as read_data, the command line and follow_csv read them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TimeColumnWarning)
        python = read_data(path, inputs=["u"], **options.get("python", {}))
    cli = read_identification_data(path, inputs="u", **options.get("cli", {}))
    chunks = list(follow_csv(path, inputs="u", poll=0.01, idle_timeout=0.05,
                             report=lambda message: None, **options.get("follow", {})))
    follow_X = np.concatenate([chunks[0].X[:, :1]] + [c.X[:, 1:] for c in chunks], axis=1)
    follow_U = np.concatenate([c.U for c in chunks], axis=1)
    return ((python.X[0], python.U[0], python.dt), (cli.X[0], cli.U[0], cli.dt),
            (follow_X, follow_U, chunks[-1].dt))


@pytest.mark.parametrize("seed", SEEDS)
def test_iso_stamps_read_as_the_numeric_stamps_in_every_reader(tmp_path, seed):
    X, U, _ = record(seed)
    style = ["T", "space", "Z", "mixed"][seed % 4]
    numeric = write(tmp_path / "numeric.csv", [repr(T * k) for k in range(X.shape[1])], X, U)
    iso = write(tmp_path / "iso.csv", stamps_text(T * np.arange(X.shape[1]), style), X, U)
    for (X_n, U_n, dt_n), (X_i, U_i, dt_i) in zip(read_all(numeric), read_all(iso),
                                                  strict=True):
        np.testing.assert_array_equal(X_i, X_n)
        np.testing.assert_array_equal(X_i, X)                   # the text columns left out
        np.testing.assert_array_equal(U_i, U_n)
        assert dt_i == pytest.approx(dt_n, rel=1e-9) and dt_n == pytest.approx(T, rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
def test_jittered_iso_stamps_give_the_period_of_their_span(tmp_path, seed):
    X, U, rng = record(seed)
    jitter = 0.03 * T * rng.uniform(-1, 1, X.shape[1])          # within 10 % of T
    iso = write(tmp_path / "iso.csv", stamps_text(T * np.arange(X.shape[1]) + jitter, "T"),
                X, U)
    for X_i, U_i, dt in read_all(iso):
        np.testing.assert_array_equal(X_i, X)
        np.testing.assert_array_equal(U_i, U)
        # the span over the periods it covers: off T by the end stamps' jitter (and ms)
        assert abs(dt - T) <= (2 * 0.03 * T + 1e-3) / (X.shape[1] - 1)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_a_lost_row_between_iso_stamps_is_a_missing_sample(tmp_path, seed):
    X, U, rng = record(seed)
    lost = int(rng.integers(10, X.shape[1] - 10))
    iso = write(tmp_path / "iso.csv", stamps_text(T * np.arange(X.shape[1]), "Z"), X, U,
                drop={lost})
    line = f"line {lost + 2}"                     # the header, then row k on line k + 2
    with pytest.raises(ParameterError, match=f"{line}.*missing"):
        read_data(iso, inputs=["u"])
    with pytest.raises(ParameterError, match=f"{line}.*--missing"):
        read_identification_data(iso, inputs="u")
    with pytest.warns(TimeColumnWarning, match="skips 1 sample"):
        data = read_data(iso, inputs=["u"], missing="interpolate")
    assert data.dt == pytest.approx(T, rel=1e-9) and data.X[0].shape == X.shape
    cli = read_identification_data(iso, inputs="u", missing="interpolate")
    assert cli.X[0].shape == X.shape and cli.dt == pytest.approx(T, rel=1e-9)
    chunks = list(follow_csv(iso, inputs="u", poll=0.01, idle_timeout=0.05,
                             report=lambda message: None))
    followed = np.concatenate([chunks[0].X[:, :1]] + [c.X[:, 1:] for c in chunks], axis=1)
    assert followed.shape == X.shape and np.isnan(followed[:, lost]).all()
    keep = np.arange(X.shape[1]) != lost
    np.testing.assert_array_equal(followed[:, keep], X[:, keep])


def every_reader(path):
    """Calls reading ``path`` (input ``u``) by read_data, the command line's reader and
    follow_csv, for a refusal all three must make."""
    return (lambda: read_data(path, inputs=["u"]),
            lambda: read_identification_data(path, inputs="u"),
            lambda: list(follow_csv(path, inputs="u", poll=0.01, idle_timeout=0.05,
                                    report=lambda message: None)))


def test_a_stamp_without_an_offset_among_ones_with_is_refused_by_line(tmp_path):
    X, U, _ = record(0)
    stamps = stamps_text(T * np.arange(X.shape[1]), "mixed")
    stamps[20] = stamps[20][:-len("+01:00")] if stamps[20].endswith("+01:00") else \
        stamps[20][:-1]
    iso = write(tmp_path / "iso.csv", stamps, X, U)
    for read in every_reader(iso):
        with pytest.raises(ParameterError, match="line 22.*no UTC offset"):
            read()


def test_a_daylight_saving_step_back_in_local_stamps_is_named(tmp_path):
    X, U, _ = record(1)
    seconds = T * np.arange(X.shape[1])
    seconds[40:] -= 3600.0                        # the clock goes back an hour
    iso = write(tmp_path / "iso.csv", stamps_text(seconds, "T"), X, U)
    for read in every_reader(iso):
        with pytest.raises(ParameterError, match="line 42.*daylight-saving"):
            read()


def test_a_text_column_named_as_a_signal_is_refused_by_line_and_column(tmp_path):
    X, U, _ = record(2)
    iso = write(tmp_path / "iso.csv", stamps_text(T * np.arange(X.shape[1]), "T"), X, U)
    with pytest.raises(ParameterError, match="line 2, column 'status': 'WARN'"):
        read_data(iso, inputs=["u"], states=["x1", "status"])
    with pytest.raises(ParameterError, match="line 2, 'status': 'WARN'"):
        read_identification_data(iso, inputs="u", states="x1,status")
    with pytest.raises(ParameterError, match="line 2.*column 'status': 'WARN'"):
        list(follow_csv(iso, inputs="u", states=["x1", "status"], poll=0.01,
                        idle_timeout=0.05, report=lambda message: None))


def test_text_columns_left_out_are_named_in_a_note(tmp_path):
    X, U, _ = record(3)
    iso = write(tmp_path / "iso.csv", stamps_text(T * np.arange(X.shape[1]), "T"), X, U)
    with pytest.warns(TimeColumnWarning, match="'status' \\('WARN'\\), 'operator' \\('ann'\\)"
                                               " hold text"):
        data = read_data(iso, inputs=["u"])
    assert data.state_names == ("x1", "x2")
    cli = read_identification_data(iso, inputs="u")
    assert any("'status'" in note and "left out unread" in note for note in cli.notes)
    messages = []
    list(follow_csv(iso, inputs="u", poll=0.01, idle_timeout=0.05, report=messages.append))
    assert any("'status'" in m and "left out unread" in m for m in messages)


def test_time_ignore_leaves_an_iso_column_out_unread(tmp_path):
    X, U, _ = record(4)
    seconds = T * np.arange(X.shape[1])
    seconds[30:] += 7.3                           # a clock that jumps: not read
    iso = write(tmp_path / "iso.csv", stamps_text(seconds, "Z"), X, U)
    cli = read_identification_data(iso, inputs="u", time="ignore", dt=T)
    np.testing.assert_array_equal(cli.X[0], X)
    assert cli.dt == T
    chunks = list(follow_csv(iso, inputs="u", time="ignore", dt=T, poll=0.01,
                             idle_timeout=0.05, report=lambda message: None))
    assert sum(c.U.shape[1] for c in chunks) == U.shape[1]


def test_iso_seconds_is_none_for_text_and_refuses_a_bad_stamp_by_line():
    assert iso_seconds(["OK", "OK"], where="'time'", lines=[2, 3]) is None
    with pytest.raises(ParameterError, match="line 3: 'now' is no ISO 8601"):
        iso_seconds(["2026-11-28T00:47:19", "now"], where="'time'", lines=[2, 3])
    stamps = iso_seconds(["2026-11-28 00:47:19.250", "", "2026-11-28 00:47:20.250"],
                         where="'time'", lines=[2, 3, 4])
    assert stamps.local and stamps.seconds[0] == 0.0 and np.isnan(stamps.seconds[1])
    assert stamps.seconds[2] == 1.0


def test_text_experiment_labels_and_a_utc_unit_on_iso_stamps(tmp_path):
    X, U, _ = record(5, samples=40)
    seconds = T * np.arange(X.shape[1])
    seconds[21:] += 300.0                         # the second experiment starts later
    stamps = stamps_text(seconds, "space")
    path = write(tmp_path / "runs.csv", stamps, X, U,
                 header="time [UTC],x1,status,x2,u,operator")
    text = path.read_text().splitlines()
    path.write_text("\n".join([text[0] + ",run"] + [line + ("," + ("run A" if k < 21 else
                                                                    "run B"))
                                                     for k, line in enumerate(text[1:])]) + "\n")
    with pytest.warns(TimeColumnWarning, match="'status'"):
        data = read_data(path, inputs=["u"], experiment="run")
    assert data.n_experiments == 2 and data.dt == pytest.approx(T, rel=1e-9)
    np.testing.assert_array_equal(data.X[0], X[:, :21])
    np.testing.assert_array_equal(data.X[1], X[:, 21:])
    chunks = list(follow_csv(path, inputs="u", states=["x1", "x2"], time="time",
                             poll=0.01, idle_timeout=0.05, report=lambda message: None))
    assert chunks[-1].dt == pytest.approx(T, rel=1e-9)


def test_a_daylight_saving_jump_ahead_in_followed_local_stamps_is_said(tmp_path):
    X, U, _ = record(2, samples=30)
    seconds = T * np.arange(X.shape[1])
    seconds[20:] += 3600.0 - T                    # the clock springs forward an hour
    iso = write(tmp_path / "iso.csv", stamps_text(seconds, "space"), X, U)
    messages = []
    chunks = list(follow_csv(iso, inputs="u", poll=0.01, idle_timeout=0.05,
                             report=messages.append))
    assert any("jumps 3600 s ahead" in m and "daylight-saving" in m for m in messages)
    assert sum(c.U.shape[1] for c in chunks) == U.shape[1] + 7199
    with pytest.raises(ParameterError, match="line 22.*daylight-saving"):
        read_data(iso, inputs=["u"])


def test_no_state_left_but_text_is_refused_naming_the_text_column(tmp_path):
    path = tmp_path / "flags.csv"
    path.write_text("time,x,u\n0,OK,1\n0.5,OK,2\n1,OK,\n")
    with pytest.raises(ParameterError, match="'x' holds text.*states="):
        read_data(path, inputs=["u"])
    with pytest.raises(ParameterError, match="'x' holds text.*--states"):
        read_identification_data(path, inputs="u")


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_decimal_comma_stamps_as_python_logging_writes_them(tmp_path, seed):
    """ISO 8601 allows ',' before the fraction of a second (logging's '00:47:19,500'): between
    ';' every reader takes them as the '.' stamps; between ',' the refusal names the cause."""
    X, U, _ = record(seed)
    dotted = write(tmp_path / "dot.csv", stamps_text(T * np.arange(X.shape[1]), "space"), X, U)
    # ';' between the values, then the stamp's '.' (the first of each row) as ','
    lines = dotted.read_text().splitlines()
    comma = tmp_path / "comma.csv"
    comma.write_text("\n".join([lines[0].replace(",", ";")] + [
        line.replace(",", ";").replace(".", ",", 1) for line in lines[1:]]) + "\n")
    assert ":19,500;" in comma.read_text()
    for (X_c, U_c, dt_c), (X_d, U_d, dt_d) in zip(read_all(comma), read_all(dotted),
                                                  strict=True):
        np.testing.assert_array_equal(X_c, X_d)
        np.testing.assert_array_equal(U_c, U_d)
        assert dt_c == dt_d
    by_commas = tmp_path / "by_commas.csv"
    by_commas.write_text("\n".join([lines[0]] + [line.replace(".", ",", 1)
                                                  for line in lines[1:]]) + "\n")
    with pytest.raises(ValueError, match=r"decimal comma.*';' or tabs"):
        read_data(by_commas, inputs=["u"])
