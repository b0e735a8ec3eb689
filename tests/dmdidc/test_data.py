"""IdData: metadata, experiments, missing samples (interpolated or dropped, reported), files,
and fits that accept it wherever they accept arrays."""

import re
import warnings

import numpy as np
import pytest

from dmdidc import (
    DelayedPlant,
    DiagnosticWarning,
    DimensionError,
    DMDidc,
    IdData,
    InsufficientExcitationError,
    NonFiniteError,
    OutputDMDidc,
    ParameterError,
    random_excitation,
    read_data,
)


def _random_plant(rng, n=2, m=1, dt=0.5):
    """A random stable plant with a fractional delay per channel (0.3 to 1.8 periods)."""
    Q = np.linalg.qr(rng.standard_normal((n, n)))[0]
    A_c = Q @ np.diag(-rng.uniform(0.2, 1.5, n)) @ Q.T + 0.3 * (Q @ np.triu(
        rng.standard_normal((n, n)), 1) @ Q.T)
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)),
                                        delay=dt * rng.uniform(0.3, 1.8, m), dt=dt, max_delay=3)


def _data(seed, K=600, noise=0.01, n=2, m=1):
    rng = np.random.default_rng(seed)
    plant = _random_plant(rng, n, m)
    U = random_excitation(m, K, rng=rng)
    X = plant.simulate(np.zeros(n), U) + noise * rng.standard_normal((n, K + 1))
    return plant, X, U


def _quiet_fit(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DMDidc(max_delay=3).fit(*args, **kwargs)


def test_metadata_and_views():
    _, X, U = _data(0)
    data = IdData(X, U, dt=0.5, state_names=["T", "p"], state_units=["K", "Pa"],
                  input_names="valve", source="rig")
    assert (data.n_states, data.n_inputs, data.n_experiments, data.n_samples) == (2, 1, 1, 600)
    assert data.input_units == ("",) and data.state_units == ("K", "Pa")
    assert "T [K]" in repr(data) and "valve" in repr(data)
    np.testing.assert_array_equal(data.time()[:3], [0.0, 0.5, 1.0])
    with pytest.raises(ValueError):
        data.X[0][0, 0] = 1.0                       # immutable
    Xa, Ua = data.arrays()
    np.testing.assert_array_equal(Xa, X)
    default = IdData(X, U, dt=0.5)
    assert default.state_names == ("x0", "x1") and default.input_names == ("u0",)


def test_bad_input_is_loud():
    _, X, U = _data(0)
    with pytest.raises(DimensionError, match="state_names must be 2"):
        IdData(X, U, dt=0.5, state_names=["T"])
    with pytest.raises(DimensionError, match="U has 599 samples; expected 600"):
        IdData(X, U[:, 1:], dt=0.5)
    with pytest.raises(ParameterError, match="dt"):
        IdData(X, U, dt=0.0)
    with pytest.raises(ParameterError, match="missing must be one of"):
        IdData(X, U, dt=0.5, missing="zero")
    with pytest.raises(DimensionError, match="experiment 1 has 1 states"):
        IdData([X, X[:1]], [U, U], dt=0.5)
    with pytest.raises(ParameterError, match="experiment must be an integer"):
        IdData(X, U, dt=0.5).time(3)
    bad = X.copy()
    bad[1, 7] = np.inf
    with pytest.raises(NonFiniteError, match="infinite at sample 7"):
        IdData(bad, U, dt=0.5, missing="interpolate")


def test_missing_samples_are_refused_by_default_with_their_place():
    _, X, U = _data(1)
    X = X.copy()
    X[1, [10, 11, 12]] = np.nan
    with pytest.raises(NonFiniteError, match=r"3 missing.*signal 'x1', samples 10-12.*"
                                             r"missing='interpolate'"):
        IdData(X, U, dt=0.5)


@pytest.mark.parametrize("seed", range(5))
def test_interpolation_fills_interior_gaps_and_cuts_the_edges(seed):
    rng = np.random.default_rng(seed)
    _, X, U = _data(seed)
    X, U = X.copy(), U.copy()
    gaps = np.sort(rng.choice(np.arange(5, 590), 6, replace=False))
    X[0, gaps] = np.nan
    U[0, gaps[:2] + 1] = np.nan
    X[1, :2] = np.nan                                 # an edge: nothing to interpolate from
    data = IdData(X, U, dt=0.5, missing="interpolate")
    report = data.missing_report
    assert report.counts == {"x0": 6, "x1": 2, "u0": 2}
    assert report.removed == 2 and report.interpolated == 8
    assert data.X[0].shape == (2, 599) and np.isfinite(data.X[0]).all()
    # a filled value lies on the straight line between its neighbours (an isolated gap)
    isolated = [k for k in gaps if k - 1 not in gaps and k + 1 not in gaps]
    for k in isolated:
        np.testing.assert_allclose(data.X[0][0, k - 2], 0.5 * (X[0, k - 1] + X[0, k + 1]))
    assert "interpolated" in str(report) and "x0: samples" in str(report)
    # the two input values filled in are counted apart: the plant did not receive them
    assert report.interpolated_inputs == 2 and "2 of inputs" in str(report)
    assert IdData(X[:, :], np.nan_to_num(U), dt=0.5,
                  missing="interpolate").missing_report.interpolated_inputs == 0


@pytest.mark.parametrize("seed", range(20))
def test_interpolation_fills_a_signal_from_its_samples_outside_the_kept_span(seed):
    """The span kept starts where every signal has begun; a signal with a gap across that
    start is filled from its own samples before it (it was cut first and the gap held flat at
    the first value inside, or refused when none was inside): every filled value lies on the
    straight line between the known samples around it, whatever the span."""
    rng = np.random.default_rng(seed)
    X, U = rng.standard_normal((2, 41)), rng.standard_normal((1, 40))
    start = int(rng.integers(3, 10))
    X[0, :start] = np.nan                             # x0 begins late: the span starts there
    a, b = int(rng.integers(1, start)), int(rng.integers(start + 1, 30))
    X[1, a:b] = np.nan                                # x1 lost across that start
    U[0, a:b] = np.nan                                # and so is the input
    data = IdData(X, U, dt=0.5, missing="interpolate")
    assert data.X[0].shape == (2, 41 - start) and data.U[0].shape == (1, 40 - start)
    for row, filled in ((X[1], data.X[0][1]), (U[0], data.U[0][0])):
        line = row[a - 1] + (row[b] - row[a - 1]) * (np.arange(start, b) - (a - 1)) / (b - a + 1)
        np.testing.assert_allclose(filled[:b - start], line, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(filled[b - start:], row[b:len(filled) + start])
    report = data.missing_report
    assert report.interpolated == 2 * (b - start) and report.interpolated_inputs == b - start


@pytest.mark.parametrize("seed", range(5))
def test_drop_splits_experiments_and_the_fit_stays_consistent(seed):
    plant, X, U = _data(seed, K=1500, noise=0.002)
    X = X.copy()
    X[1, [300, 301, 900]] = np.nan
    data = IdData(X, U, dt=0.5, missing="drop")
    report = data.missing_report
    assert (report.experiments_before, report.experiments_after) == (1, 3)
    assert report.removed == 3 and data.n_experiments == 3
    assert data.n_samples == 1500 - 3 - 2        # the input before each removed gap goes too
    est = _quiet_fit(data)
    np.testing.assert_allclose(est.delay, plant.delay, atol=0.05)


def test_nan_everywhere_is_loud():
    _, X, U = _data(0, K=10)
    with pytest.raises(NonFiniteError, match="no two consecutive complete samples"):
        IdData(np.where(np.arange(11) % 2, np.nan, X), U, dt=0.5, missing="drop")
    with pytest.raises(NonFiniteError, match="fewer than two complete"):
        IdData(np.full_like(X, np.nan), U, dt=0.5, missing="interpolate")


def test_drop_discards_pieces_with_fewer_snapshots_than_states():
    """Three states, two inputs: a piece of two snapshots between close gaps held less than
    one sample per state and was refused as transposed data (a DimensionError); it is now
    discarded and reported as removed."""
    rng = np.random.default_rng(0)
    X, U = rng.standard_normal((3, 201)), rng.standard_normal((2, 200))
    X[0, [100, 103]] = np.nan                        # snapshots 101-102 between the gaps
    data = IdData(X, U, dt=0.5, missing="drop")
    assert [x.shape[1] for x in data.X] == [100, 97]
    assert data.missing_report.removed == 4 and data.missing_report.experiments_after == 2


def test_drop_keeps_short_pieces_of_many_sensors():
    """Eight sensors, two inputs, a gap every 8 samples: pieces of 7 snapshots cannot look
    transposed (that needs one state more than inputs), so they are kept and fitted (they
    were all discarded and the data refused as 'no two consecutive complete samples')."""
    rng = np.random.default_rng(0)
    A, B = np.diag(rng.uniform(0.3, 0.8, 8)), rng.standard_normal((8, 2))
    U = rng.standard_normal((2, 800))
    X = np.zeros((8, 801))
    for k in range(800):
        X[:, k + 1] = A @ X[:, k] + B @ U[:, k]
    X[:, ::8] = np.nan
    data = IdData(X, U, dt=0.5, missing="drop")
    assert data.n_experiments == 100 and {x.shape[1] for x in data.X} == {7}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DMDidc(max_delay=0).fit(data)
    np.testing.assert_allclose(est.A_d, A, atol=1e-6)


def _left_out_warnings(caught):
    return [w for w in caught if "shorter than one window" in str(w.message)]


@pytest.mark.parametrize("seed", range(4))
def test_pieces_too_short_for_the_window_are_said_left_out(seed):
    """missing="drop" with frequent gaps leaves pieces of at most max_delay samples, which the
    fit left out silently (review; /tmp/r1_drop.py): a note in diagnostics_ when any is left
    out, a DiagnosticWarning with the counts and the remedy above 10 % of the samples; a
    pieceless record and gaps far apart stay quiet."""
    plant, X, U = _data(seed, K=3000, noise=0.002)
    X_few, X_many = X.copy(), X.copy()
    X_few[0, [500, 504]] = np.nan                    # one piece of 3 snapshots (2 inputs)
    X_many[0, 1500::4] = np.nan                      # second half: pieces of 3 inputs or fewer
    fits = []
    for states in (X, X_few, X_many):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = DMDidc(max_delay=3).fit(IdData(states, U, dt=0.5, missing="drop"))
        fits.append((est, _left_out_warnings(caught)))
    far, few, many = fits
    assert not far[1] and not any("window" in n for n in far[0].diagnostics_.notes)
    assert not few[1]                                       # 2 of ~3000 samples: a note only
    assert any(n.startswith("1 of 3 experiments (2 of ") for n in few[0].diagnostics_.notes)
    assert len(many[1]) == 1 and issubclass(many[1][0].category, DiagnosticWarning)
    message = str(many[1][0].message)
    assert "of 2 experiments" not in message and "max_delay + 1 = 4" in message
    assert "missing='interpolate'" in message
    lost, total = map(int, re.search(r"\((\d+) of (\d+) samples", message).groups())
    assert lost > 0.1 * total and total == IdData(X_many, U, dt=0.5, missing="drop").n_samples
    for est, _ in (far, few, many):                          # the fits themselves hold
        np.testing.assert_allclose(est.delay, plant.delay, atol=0.05)


def test_every_piece_too_short_names_the_gaps():
    _, X, U = _data(0, K=400)
    X = X.copy()
    X[0, ::3] = np.nan                                   # pieces of one input sample
    with pytest.raises(InsufficientExcitationError, match="each of the .* experiments has at "
                                                          "most max_delay = 3"):
        DMDidc(max_delay=3).fit(IdData(X, U, dt=0.5, missing="drop"))


@pytest.mark.parametrize("seed", range(2))
def test_output_fit_says_when_short_pieces_hold_much_of_the_data(seed):
    """OutputDMDidc leaves out pieces shorter than 2 horizon + max_delay + 1: warned above
    10 % of the samples (samples_ shows what was used), quiet for one gap."""
    plant, X, U = _data(seed, K=3000, noise=0.002)
    one, many = X[:1].copy(), X[:1].copy()
    one[0, 1000] = np.nan
    many[0, 1500::20] = np.nan                        # pieces of 19 inputs: shorter than 48
    for Y, loud in ((one, False), (many, True)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = OutputDMDidc(max_delay=3).fit(IdData(Y, U, dt=0.5, missing="drop"))
        said = _left_out_warnings(caught)
        assert bool(said) is loud
        if loud:
            assert "2 horizon + max_delay + 1" in str(said[0].message)
            lost = int(re.search(r"\((\d+) of", str(said[0].message)).group(1))
            assert est.samples_ == IdData(Y, U, dt=0.5, missing="drop").n_samples - lost


@pytest.mark.parametrize("seed", range(2))
def test_partial_fit_says_left_out_pieces_as_fit_does(seed):
    """partial_fit(IdData) of DMDidc and OutputDMDidc streamed pieces too short for a window
    without a word while fit(IdData) said so (review): the same warning (and, for DMDidc, the
    same note in diagnostics_); one gap far from others stays quiet."""
    plant, X, U = _data(seed, K=3000, noise=0.002)
    many = X.copy()
    many[0, 1500::4] = np.nan                        # DMDidc: pieces of 3 inputs or fewer
    many_out = X[:1].copy()
    many_out[0, 1500::20] = np.nan                   # OutputDMDidc: pieces shorter than 48
    one_out = X[:1].copy()
    one_out[0, 1000] = np.nan
    cases = ((lambda: DMDidc(max_delay=3), many, True),
             (lambda: OutputDMDidc(max_delay=3), many_out, True),
             (lambda: OutputDMDidc(max_delay=3), one_out, False))
    for make, states, loud in cases:
        data = IdData(states, U, dt=0.5, missing="drop")
        said = []
        for method in ("fit", "partial_fit"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est = getattr(make(), method)(data)
            said.append([str(w.message) for w in _left_out_warnings(caught)])
        assert len(said[1]) == len(said[0]) == int(loud)
        assert said[1] == said[0]
        if isinstance(est, DMDidc):
            assert any("shorter than one window" in n for n in est.diagnostics_.notes)
            np.testing.assert_allclose(est.delay, plant.delay, atol=0.05)


@pytest.mark.parametrize("seed", range(4))
def test_fit_on_iddata_equals_fit_on_arrays(seed):
    _, X, U = _data(seed)
    a = _quiet_fit(X, U, dt=0.5)
    b = _quiet_fit(IdData(X, U, dt=0.5))
    np.testing.assert_array_equal(a.A_d, b.A_d)
    np.testing.assert_array_equal(a.B_blocks, b.B_blocks)


def test_operating_point_of_the_data_is_subtracted_and_carried():
    plant, X, U = _data(3)
    x_op, u_op = np.array([350.0, 2e5]), np.array([4.0])
    data = IdData(X + x_op[:, None], U + u_op[:, None], dt=0.5,
                  operating_point=(x_op, u_op))
    est = _quiet_fit(data)
    deviations = _quiet_fit(X, U, dt=0.5)
    np.testing.assert_allclose(est.A_d, deviations.A_d, atol=1e-7)   # x + op - op rounds
    op = est.model_.operating_point
    np.testing.assert_allclose(op.state, x_op, rtol=1e-6)
    np.testing.assert_allclose(op.input, u_op, rtol=1e-6)
    # the model simulates physical values
    sim = est.model_.simulate(x_op, np.full((1, 50), 4.0))
    np.testing.assert_allclose(sim[:, -1], x_op, rtol=1e-9)


def test_fit_arguments_with_iddata_and_arrays():
    _, X, U = _data(0)
    data = IdData(X, U, dt=0.5)
    with pytest.raises(ParameterError, match="an IdData and U"):
        DMDidc(max_delay=3).fit(data, U)
    with pytest.raises(ParameterError, match="differs from the data's sampling period"):
        DMDidc(max_delay=3).fit(data, dt=1.0)
    with pytest.raises(ParameterError, match="needs the sampling period dt"):
        DMDidc(max_delay=3).fit(X, U)
    with pytest.raises(ParameterError, match="needs the inputs U"):
        DMDidc(max_delay=3).fit(X, dt=0.5)
    assert _quiet_fit(data, dt=0.5).model_.dt == 0.5


def test_partial_fit_streams_experiments_of_iddata():
    _, X, U = _data(2, K=1200)
    halves = IdData([X[:, :601], X[:, 600:]], [U[:, :600], U[:, 600:]], dt=0.5,
                    state_names=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        streamed = DMDidc(max_delay=3, estimator="ls").partial_fit(halves)
        whole = DMDidc(max_delay=3, estimator="ls").fit([X[:, :601], X[:, 600:]],
                                                        [U[:, :600], U[:, 600:]], dt=0.5)
        np.testing.assert_allclose(streamed.A_d, whole.A_d, atol=1e-8)
        assert streamed.model_.info.state_names == ("a", "b")
        # chunks of data with an operating point: the model carries it once, however streamed
        op = ([10.0, -2.0], [1.0])
        shifted = IdData(X[:, :601] + np.array(op[0])[:, None], U[:, :600] + 1.0, dt=0.5,
                         operating_point=op)
        later = IdData(X[:, 600:] + np.array(op[0])[:, None], U[:, 600:] + 1.0, dt=0.5,
                       operating_point=op)
        twice = DMDidc(max_delay=3, estimator="ls").partial_fit(shifted)
        twice.partial_fit(later, new_trajectory=True)
        np.testing.assert_allclose(twice.model_.operating_point.state, op[0], rtol=1e-6)
        with pytest.raises(ParameterError, match="state_names"):
            streamed.partial_fit(IdData(X, U, dt=0.5))


def test_bootstrap_intervals_take_iddata():
    _, X, U = _data(4)
    data = IdData([X[:, :301], X[:, 300:]], [U[:, :300], U[:, 300:]], dt=0.5)
    est = _quiet_fit(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ci = est.confidence_intervals(method="bootstrap", n_resamples=8, rng=0, X=data)
    assert ci.method == "bootstrap" and np.all(ci.delay.low <= ci.delay.high)


def test_merge_and_experiment():
    _, X, U = _data(0)
    a = IdData(X, U, dt=0.5, state_names=["T", "p"])
    both = IdData.merge(a, a)
    assert both.n_experiments == 2 and both.state_names == ("T", "p")
    np.testing.assert_array_equal(both.experiment(1).X[0], X)
    with pytest.raises(ParameterError, match="dataset 1 has dt"):
        IdData.merge(a, IdData(X, U, dt=1.0, state_names=["T", "p"]))
    assert a.experiment([0]).missing_report.policy == "error"
    # subsets keep the report of the data they came from; merging different ones adds up
    gappy = X.copy()
    gappy[0, [5, 300]] = np.nan
    split = IdData(gappy, U, dt=0.5, state_names=["T", "p"], missing="drop")
    assert split.n_experiments == 3
    assert split.experiment([0, 2]).missing_report == split.missing_report
    merged = IdData.merge(split, a).missing_report
    assert merged.policy == "mixed" and merged.n_missing == 2
    assert merged.experiments_after == 3 + 1
    with pytest.raises(ParameterError, match="at least one"):
        split.experiment([])
    with pytest.raises(ParameterError, match="operating point"):
        IdData.merge(a, IdData(X, U, dt=0.5, state_names=["T", "p"],
                               operating_point=([1.0, 1.0], [0.0])))


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_files_round_trip(tmp_path, suffix):
    _, X, U = _data(5, K=50)
    X = X.copy()
    X[0, 20] = np.nan
    data = IdData([X, X], [U, U], dt=0.5, state_names=["T", "p"], state_units=["K", "Pa"],
                  input_names=["valve"], operating_point=([1.0, 2.0], [0.5]),
                  missing="interpolate")
    path = data.save(tmp_path / f"data{suffix}")
    options = dict(inputs=["valve"], time="time", experiment="experiment",
                   operating_point=([1.0, 2.0], [0.5])) if suffix == ".csv" else {}
    again = IdData.load(path, **options)
    assert again.state_names == data.state_names and again.state_units == data.state_units
    assert again.dt == 0.5 and again.n_experiments == 2
    np.testing.assert_allclose(again.operating_point.state, [1.0, 2.0])
    for a, b in zip(again.X + again.U, data.X + data.U, strict=True):
        np.testing.assert_array_equal(a, b)          # repr() of floats is exact


def test_csv_columns_are_chosen_by_name_and_mistakes_are_named(tmp_path):
    path = tmp_path / "rig.csv"
    path.write_text("t;T [K];heater [kW];note\n0;300;1;0\n0.5;;0;0\n1.0;301;1;0\n1.5;301.2;;0\n")
    data = read_data(path, inputs="heater", states=["T"], time="t", missing="interpolate")
    assert data.dt == 0.5 and data.state_units == ("K",) and data.input_units == ("kW",)
    np.testing.assert_allclose(data.X[0], [[300, 300.5, 301, 301.2]])
    with pytest.raises(ParameterError, match="has no column 'valve'"):
        read_data(path, inputs="valve", time="t")
    with pytest.raises(ParameterError, match="give dt"):
        read_data(path, inputs="heater", time=None)
    with pytest.raises(ParameterError, match="needs inputs"):
        read_data(path)
    path.write_text("t,T,u\n0,1,1\n0.5,1,1\n1.2,1,1\n")
    with pytest.raises(ParameterError, match="off a whole number of periods.*time_tolerance"):
        read_data(path, inputs="u", time="t")
    path.write_text("T,u\n1,1\n1,2,5\n")
    with pytest.raises(DimensionError, match="line 3 has 3 cells"):
        read_data(path, inputs="u", dt=1.0)
    # a title line above the header: the message shows the header taken and the remedy
    path.write_text("Logger export site A\nt,T,u\n0,1,1\n1,1,2\n")
    with pytest.raises(DimensionError, match=r"line 2 has 1 cells; the header \(line 1: "
                       r"'Logger export site A'\) has 4.*title.*'#'"):
        read_data(path, inputs="u", time="t")
    path.write_text("# Logger export site A\nt,T,u\n0,1,1\n1,1,2\n")
    assert read_data(path, inputs="u", time="t").state_names == ("T",)
    path.write_text("T,u\n1,1\n1,2\n1,'x'\n")
    with pytest.raises(ParameterError, match="line 4, column 'u'.*not a number"):
        read_data(path, inputs="u", dt=1.0)
    npz = tmp_path / "plain.npz"
    np.savez(npz, X=np.zeros((1, 3)), U=np.zeros((1, 2)))
    with pytest.raises(ParameterError, match="no 'metadata'"):
        read_data(npz)
    with pytest.raises(ParameterError, match=".csv or .npz"):
        read_data(tmp_path / "data.txt", inputs="u")


def test_statistics_and_excitation_take_iddata():
    from dmdidc import SufficientStatistics, check_excitation

    _, X, U = _data(6)
    x_op, u_op = np.array([20.0, -5.0]), np.array([1.0])
    data = IdData(X + x_op[:, None], U + u_op[:, None], dt=0.5, operating_point=(x_op, u_op))
    a = SufficientStatistics.from_data(data, max_delay=3, state_bound=10.0, input_bound=10.0)
    b = SufficientStatistics.from_data(X, U, max_delay=3, state_bound=10.0, input_bound=10.0)
    np.testing.assert_allclose(a.moments()[0], b.moments()[0], atol=1e-9)
    assert check_excitation(data, max_delay=3).rank == check_excitation(X, U, 3).rank
    with pytest.raises(ParameterError, match="needs max_delay"):
        check_excitation(data)
    with pytest.raises(ParameterError, match="an IdData and U"):
        SufficientStatistics.from_data(data, U, max_delay=3)


@pytest.mark.parametrize("seed", range(3))
def test_dmdidc_names_interpolated_inputs_and_not_dropped_ones(seed):
    """Interpolated inputs are not what the plant received: the state regression reads them as
    noise (whiteness failed on 12 of 12 random plants with 1-5 % of the inputs lost); DMDidc
    says how many and names missing='drop'.  Dropped (split there) or lost states only,
    interpolated: no such warning."""
    import warnings

    from dmdidc import DMDidc, IdData
    from simulations.studies.data_kinds import make_data, random_plant

    data = make_data("white", random_plant(1000 + seed), samples=1500, rng=seed)
    lost, states = data.U.copy(), data.X.copy()
    lost[0, 300:306] = np.nan
    states[1, 500:503] = np.nan
    for policy, X, U, loud in (("interpolate", data.X, lost, True),
                               ("drop", data.X, lost, False),
                               ("interpolate", states, data.U, False)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            DMDidc(max_delay=4).fit(IdData(X, U, dt=0.5, missing=policy))
        named = [str(w.message) for w in caught if "were interpolated" in str(w.message)]
        assert bool(named) == loud, (policy, named)
        if loud:
            assert named[0].startswith("6 input value(s)") and "missing='drop'" in named[0]
            assert "state noise" in named[0]


@pytest.mark.parametrize("seed", [3, 4])
def test_one_d_arrays_are_one_channel_in_every_entry_point(seed):
    """A 1-D array is one channel wherever data enter: IdData, fit and partial_fit of DMDidc
    and OutputDMDidc, alone or in a list of experiments (one rule, dmdidc.data.one_channel)."""
    _, X, U = _data(seed, n=1, m=1)
    x, u = X[0], U[0]
    reference = DMDidc(max_delay=3).fit(X, U, dt=0.5).model_
    for est in (DMDidc(max_delay=3).fit(x, u, dt=0.5),
                DMDidc(max_delay=3).fit(x, U, dt=0.5),
                DMDidc(max_delay=3).fit([x[:301], x[300:]], [u[:300], u[300:]], dt=0.5),
                DMDidc(max_delay=3).partial_fit(x, u, dt=0.5),
                DMDidc(max_delay=3).fit(x.tolist(), u.tolist(), dt=0.5),     # lists of numbers
                DMDidc(max_delay=3).fit(IdData(x, u, dt=0.5))):
        np.testing.assert_allclose(est.model_.A_d, reference.A_d, atol=0.02)
        np.testing.assert_allclose(est.model_.delay, reference.delay, atol=0.02)
    first = DMDidc(max_delay=3).fit(x, u, dt=0.5).model_
    np.testing.assert_array_equal(first.A_d, reference.A_d)      # the same numbers, not a refit
    outputs = OutputDMDidc(max_delay=3).fit(X, U, dt=0.5)
    for est in (OutputDMDidc(max_delay=3).fit(x, u, dt=0.5),
                OutputDMDidc(max_delay=3).partial_fit(x, u, dt=0.5)):
        assert est.order_ == outputs.order_
        np.testing.assert_allclose(est.delay, outputs.delay, rtol=1e-6)   # partial: rounding
    with pytest.raises(DimensionError, match="2-dimensional"):
        DMDidc(max_delay=3).fit(X[None], U, dt=0.5)          # 3-D stays refused
