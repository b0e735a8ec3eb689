"""``dmdidc identify``: the noise-aware default, ``--detrend`` and warnings that name the cause."""

import re

import numpy as np
import pytest

from dmdidc import DelayedPlant
from simulations.cli import main


def noisy_data(tmp_path, offset=0.0, noise=0.01, delay=2.5):
    plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], delay, 2.0)
    rng = np.random.default_rng(5)
    U = rng.standard_normal((2, 3000))
    X = plant.simulate(np.zeros(2), U)
    X = X + noise * X.std(axis=1, keepdims=True) * rng.standard_normal(X.shape) + offset
    path = tmp_path / "data.npz"
    np.savez(path, X=X, U=U)
    return path


def test_default_identify_gets_the_delay_from_noisy_data_with_offset(tmp_path, capsys):
    path, out = noisy_data(tmp_path, offset=5.0), tmp_path / "model.json"
    figure = tmp_path / "resid.png"
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(out),
                 "--residuals", str(figure)]) == 0
    model = DelayedPlant.load(out)
    np.testing.assert_array_equal(model.delay_steps, [1, 1])
    assert np.all(np.abs(model.delay - 2.5) < 0.05 * 2.0)
    assert model.operating_point is not None                  # the offset, found and kept
    captured = capsys.readouterr()
    assert "block test" in captured.out and "operating point: x_op" in captured.out
    assert "fit diagnostics (iv, instruments model" in captured.out
    assert figure.stat().st_size > 10_000
    assert "warning" not in captured.err


def test_identify_offset_without_detrend_warns_with_the_cause(tmp_path, capsys):
    path = noisy_data(tmp_path, offset=5.0)
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--detrend", "none",
                 "--out", str(tmp_path / "m.json")]) == 0
    out, err = capsys.readouterr()
    assert "dmdidc identify: warning: check 'offset' failed" in err
    # the remedy in the command's terms: the flag, not the Python option
    assert "fit with --detrend auto (the default) or --detrend constant" in err
    assert "detrend=" not in err
    # and so does the printed diagnostics table (its 'remedy (offset):' line)
    assert "remedy (offset): fit with --detrend auto (the default) or --detrend constant" in out
    assert "detrend=" not in out


def test_identify_detrend_constant_names_the_operating_point(tmp_path, capsys):
    """The removed state trend holds the trajectory's shift (its operating point), not the
    mean of the states: the report said 'mean state' (found in review)."""
    path = noisy_data(tmp_path, offset=5.0)
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--detrend",
                 "constant", "--out", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "removed (constant) trend per trajectory" in out
    assert "state operating point" in out and "mean state" not in out


def test_identify_closed_loop_with_the_reference_and_refused_flags(tmp_path, capsys):
    from simulations.studies.data_kinds import make_data, random_plant

    data = make_data("closed_loop", random_plant(1000), samples=4000, rng=0)
    np.savez(tmp_path / "loop.npz", X=data.X, U=data.U)
    np.savetxt(tmp_path / "r.csv", data.reference.T, delimiter=",")
    assert main(["identify", str(tmp_path / "loop.npz"), "--dt", "0.5", "--max-delay", "4",
                 "--reference", str(tmp_path / "r.csv"), "--out", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "closed loop: instruments driven by the part of the inputs the reference" in out
    assert main(["identify", str(tmp_path / "loop.npz"), "--dt", "0.5", "--max-delay", "4",
                 "--out", str(tmp_path / "m.json")]) == 0
    err = capsys.readouterr().err                   # without it: the flag that cures it
    assert "pass the reference or dither that excites the loop, --reference FILE," in err
    assert "reference=" not in err
    np.savetxt(tmp_path / "short.csv", data.reference.T[:10], delimiter=",")
    assert main(["identify", str(tmp_path / "loop.npz"), "--dt", "0.5", "--max-delay", "4",
                 "--reference", str(tmp_path / "short.csv")]) == 2
    assert "expected 4000 (one per input sample)" in capsys.readouterr().err
    assert main(["identify", str(tmp_path / "loop.npz"), "--dt", "0.5", "--max-delay", "4",
                 "--method", "qr"]) == 2           # a least-squares solver for an IV fit
    assert "selects a least-squares solver" in capsys.readouterr().err


def test_identify_max_delay_zero_on_a_delayed_plant_names_the_bound(tmp_path, capsys):
    path = noisy_data(tmp_path, noise=0.0)
    # refused as a delay at the bound (walkthrough finding 6: it wrote a delay-0 model)
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "0", "--out",
                 str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "an input shows no effect at lag 0 (effect)" in err and "max_delay" not in err
    assert "--max-delay 0 may be too small" in err and "raise --max-delay to at least 3" in err
    assert not (tmp_path / "m.json").exists()


def test_identify_block_rtol_override_and_bad_significance(tmp_path, capsys):
    path, out = noisy_data(tmp_path), tmp_path / "m.json"
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--block-rtol", "1e-9",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "block test (block_rtol" in printed
    # the override counts the noise-level B^(0) as active (starred at lag 0) ...
    assert all(re.search(r"lag 0\.\.3: +\S+\*", line) for line in printed.splitlines()
               if line.strip().startswith("channel"))
    # ... and the recovery still finds the delay from the pair of blocks that explains them
    np.testing.assert_allclose(DelayedPlant.load(out).delay, 2.5, atol=0.05)
    with pytest.raises(SystemExit) as exit_:          # refused by the option, before the fit
        main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--significance", "2"])
    assert exit_.value.code == 2
    assert "argument --significance: must be a number in (0, 1)" in capsys.readouterr().err


def test_identify_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["identify", "--help"])
    out = capsys.readouterr().out
    assert "--detrend {auto,none,constant,linear}" in out and "default: 0.001" in out
    assert "--estimator {auto,ls,iv,huber,huber_iv}" in out


def test_identify_refuses_significance_with_the_block_rtol_override(tmp_path, capsys):
    # block_rtol replaces the test: a --significance beside it would change nothing
    out = tmp_path / "m.json"
    assert main(["identify", str(noisy_data(tmp_path)), "--dt", "2", "--max-delay", "3",
                 "--block-rtol", "0.1", "--significance", "0.01", "--out", str(out)]) == 2
    assert ("--significance 0.01 has no effect with --block-rtol 0.1 and a fixed --max-delay"
            in capsys.readouterr().err)                  # the library's error, in flags
    assert not out.exists()


def test_identify_help_states_the_estimators_own_defaults(capsys):
    from dmdidc import DMDidc
    from dmdidc.estimator import DEFAULT_SIGNIFICANCE

    with pytest.raises(SystemExit):
        main(["identify", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    defaults = DMDidc().get_params()
    assert defaults["significance"] is None          # None: the documented default level
    assert f"(default: {DEFAULT_SIGNIFICANCE:g};" in out
    assert "--method {auto,gram,qr} least-squares solver" in out
    assert f"(default: {defaults['method']})" in out
    assert f"(default: {defaults['estimator']})" in out and defaults["estimator"] == "auto"


def test_identify_refuses_an_npz_with_arrays_it_would_ignore(tmp_path, capsys):
    path, out = tmp_path / "d.npz", tmp_path / "m.json"
    np.savez(path, X=np.zeros((1, 11)), U=np.zeros((1, 10)), Z=np.zeros((1, 10)))
    assert main(["identify", str(path), "--dt", "1", "--max-delay", "1", "--out",
                 str(out)]) == 2
    assert "holds array(s) ['Z'] besides X and U" in capsys.readouterr().err
    assert not out.exists()


def test_identify_many_sensors_with_svd_rank(tmp_path, capsys):
    rng = np.random.default_rng(3)
    plant = DelayedPlant.from_continuous([[0, 1.1], [-1.1, -0.2]], [[1.0], [-1.0]], 2.5, 2.0)
    U = rng.standard_normal((1, 400))
    X = rng.standard_normal((600, 2)) @ plant.simulate(np.zeros(2), U)   # more sensors than samples
    X += 0.01 * X.std() * rng.standard_normal(X.shape)
    np.savez(tmp_path / "sensors.npz", X=X, U=U)
    out = tmp_path / "m.json"
    assert main(["identify", str(tmp_path / "sensors.npz"), "--dt", "2", "--max-delay", "3",
                 "--svd-rank", "2", "--out", str(out)]) == 0
    model = DelayedPlant.load(out)
    assert model.n_states == 2 and abs(model.delay[0] - 2.5) < 0.05 * 2.0
    np.testing.assert_allclose(np.sort_complex(model.eigs), np.sort_complex(plant.eigs),
                               atol=0.01)
    # the excitation report is that of the regression (POD coordinates): 600 sensors against
    # 400 samples are no rank deficiency of the fit (it printed "excitation INSUFFICIENT")
    printed = capsys.readouterr().out
    assert "excitation in the 2 POD modes of the 600 signals" in printed
    assert "excitation sufficient" in printed and "INSUFFICIENT" not in printed


def test_a_model_whose_intervals_the_delta_method_cannot_give_is_kept_and_says_why(
        tmp_path, capsys, monkeypatch):
    """The asymptotic intervals fail where the alternative block structure they span has no
    continuous model (a trial's log with outliers: exit 2, no model written): the model is
    written without intervals, a warning names the cause and the remedy, Python and CLI."""
    from dmdidc import DMDidc
    from dmdidc.errors import ContinuousModelWarning, LogarithmError

    def no_intervals(self, level=0.95, **kwargs):
        raise LogarithmError("the intervals span the block structure with the block before "
                             "each delay fitted too, which has no continuous model (...)")

    path, out = noisy_data(tmp_path), tmp_path / "model.json"
    monkeypatch.setattr(DMDidc, "confidence_intervals", no_intervals)
    assert main(["identify", str(path), "--dt", "2", "--max-delay", "3", "--out", str(out)]) == 0
    model = DelayedPlant.load(out)
    assert model.has_continuous and not model.signal_info.intervals
    captured = capsys.readouterr()
    assert "no confidence intervals (the warning below says why)" in captured.out
    assert re.search(r"warning: the model is kept without confidence intervals: .*block "
                     r"before each delay", captured.err)
    data = np.load(path)
    estimator = DMDidc(max_delay=3).fit(data["X"], data["U"], dt=2.0)
    with pytest.warns(ContinuousModelWarning, match="kept without confidence intervals"):
        saved = DelayedPlant.load(estimator.save(tmp_path / "python.json"))
    np.testing.assert_array_equal(saved.A_d, estimator.model_.A_d)


def test_the_default_model_file_is_not_replaced_without_out_or_force(tmp_path, capsys,
                                                                     monkeypatch):
    """identify without --out wrote model.json over an earlier run's model with only a note:
    now a second run is refused before the fit (naming --out and --force), and the file kept;
    --force or a named --out replace it as asked.  privacy identify and --follow alike."""
    path = noisy_data(tmp_path)
    monkeypatch.chdir(tmp_path)
    run = ["identify", str(path), "--dt", "2", "--max-delay", "3"]
    assert main(run) == 0
    first = (tmp_path / "model.json").read_bytes()
    capsys.readouterr()
    (tmp_path / "model.json").write_text("{}")              # an earlier run's model
    private = ["privacy", "identify", str(path), "--dt", "2", "--max-delay", "3",
               "--state-bound", "20", "--input-bound", "4", "--epsilon", "1", "--seed", "1"]
    follow = ["identify", "--follow", str(path), "--inputs", "u", "--max-delay", "3"]
    for argv in (run, private, follow):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""                                 # refused before the fit
        assert "model.json exists" in captured.err
        assert "--out FILE" in captured.err and "--force" in captured.err
        assert (tmp_path / "model.json").read_text() == "{}"
    assert main([*run, "--force"]) == 0
    assert (tmp_path / "model.json").read_bytes() == first
    assert main([*run, "--out", "other.json"]) == 0 and (tmp_path / "other.json").exists()
    assert main([*run, "--out", "model.json"]) == 0               # named: replaced, as asked
