"""OutputDMDidc(detrend="linear"): drifting outputs fitted jointly with a line per experiment."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import OutputDMDidc
from dmdidc.errors import DiagnosticWarning, InsufficientExcitationError, ParameterError
from dmdidc.output.refine import refine
from tests.dmdidc.output.test_estimator import R, T, _eigenvalue_error, _experiment


def _drift(Y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A line over the record of 1-3 x each output's rms, either sign."""
    size = rng.uniform(1.0, 3.0, (Y.shape[0], 1)) * rng.choice([-1.0, 1.0], (Y.shape[0], 1))
    return size * Y.std(axis=1, keepdims=True) * np.linspace(0.0, 1.0, Y.shape[1])


def _fit(Y, U, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OutputDMDidc(max_delay=R, **options).fit(Y, U, dt=T)
    return est, [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]


@pytest.mark.parametrize("seed", range(8))
def test_a_drift_is_fitted_as_a_line_not_as_a_state(seed):
    """Random plants, two sensors, 30 dB, a drift of 1-3 output rms: with detrend='linear' the
    order, eigenvalues and delays are as right as the default's on the same data without the
    drift (which gained a slow state and warned), with no warning the drift-free fit lacks;
    the fit does not depend on the line (eigenvalues within 1 % of a standard error of those
    without it)."""
    plant, _, Y, U = _experiment(seed, snr_db=30.0, K=3000)
    drifting = Y + _drift(Y, np.random.default_rng(100 + seed))
    reference, quiet = _fit(Y, U)
    est, messages = _fit(drifting, U, detrend="linear")
    assert est.order_ == reference.order_ == 3
    assert _eigenvalue_error(plant, est) < max(0.05, 1.5 * _eigenvalue_error(plant, reference))
    assert np.max(np.abs(est.delay - plant.delay)) < 0.1 * T
    assert not any("drift" in text for text in messages), messages
    assert {text[:25] for text in messages} <= {text[:25] for text in quiet}, messages
    level, _ = _fit(Y, U, detrend="linear")
    step = np.abs(np.sort_complex(est.eigenvalues_) - np.sort_complex(level.eigenvalues_))
    assert np.all(step <= 0.01 * est.eigenvalue_se_.max())
    np.testing.assert_allclose(est.offset_, 0.0)


def test_each_experiment_has_its_own_line():
    """Two experiments drifting apart (different levels and slopes): one line each."""
    plant, _, Y, U = _experiment(3, snr_db=30.0, K=4000)
    rng = np.random.default_rng(7)
    pieces = [(Y[:, :2000] + 5.0 + _drift(Y[:, :2000], rng), U[:, :2000]),
              (Y[:, 2000:] - 3.0 - 2 * _drift(Y[:, 2000:], rng), U[:, 2000:])]
    est, messages = _fit([p[0] for p in pieces], [p[1] for p in pieces], detrend="linear")
    assert est.order_ == 3 and _eigenvalue_error(plant, est) < 0.05
    assert np.max(np.abs(est.delay - plant.delay)) < 0.1 * T
    assert not any("drift" in text for text in messages), messages


def test_the_intervals_count_the_lines():
    """The lines take two degrees of freedom per output and experiment, and the standard
    errors are those of the joint fit: not smaller than the fit without lines on the same
    drift-free data (to rounding of the scale)."""
    _, _, Y, U = _experiment(2, snr_db=30.0, K=3000)
    plain, _ = _fit(Y, U)
    lined, _ = _fit(Y, U, detrend="linear")
    assert lined.refined_.dof == plain.refined_.dof - 2 * 2 + 2   # lines, less the offset
    assert lined.refined_.trend and not plain.refined_.trend
    assert np.all(lined.delay_se_ >= 0.95 * plain.delay_se_)


def test_linear_detrending_is_refused_where_it_cannot_work(tmp_path):
    plant, _, Y, U = _experiment(4, snr_db=30.0, K=1500)
    with pytest.raises(ParameterError, match="partial_fit cannot use detrend='linear'"):
        OutputDMDidc(max_delay=R, detrend="linear").partial_fit(Y, U, dt=T)
    line = np.vstack([Y[:1], 3.0 + 0.01 * np.arange(Y.shape[1])])
    with pytest.raises(InsufficientExcitationError, match="Y row 1 has no signal once"):
        OutputDMDidc(max_delay=R, detrend="linear").fit(line, U, dt=T)
    est, _ = _fit(Y, U, detrend="linear")
    with pytest.raises(ParameterError, match="offset=None"):
        refine([(Y, U)], T, R, A_c=est.A_c, C=est.C, B_c=est.B_c, delays=est.delay,
               initial_states=est.initial_states_, D=None, offset=np.zeros(2), trend=True)
    loaded = OutputDMDidc.load(est.save(tmp_path / "model.json"))
    assert loaded.detrend == "linear"
    np.testing.assert_allclose(loaded.predict(U[:, :100]), est.predict(U[:, :100]), atol=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_interpolated_inputs_are_named_and_dropped_ones_are_not(seed):
    """Issue 19: lost input samples interpolated (IdData(..., missing='interpolate')) are not
    what the plant received; the fit says how many and names missing='drop'.  Dropped (the
    record split at them) and lost outputs only, interpolated: no such warning."""
    from dmdidc import IdData

    plant, _, Y, U = _experiment(seed, snr_db=30.0, K=1000)
    lost = U.copy()
    lost[:, 300:307] = np.nan
    lost[:, 700:701] = np.nan
    outputs = Y.copy()
    outputs[:, 500:503] = np.nan
    cases = (("interpolate", lost, Y, True), ("drop", lost, Y, False),
             ("interpolate", U, outputs, False))
    for policy, inputs, measured, loud in cases:
        data = IdData(np.hstack([measured, Y[:, -1:]]), inputs, dt=T, missing=policy)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            OutputDMDidc(max_delay=R, max_order=4).fit(data)     # (a short search)
        named = [str(w.message) for w in caught if "input value(s) were interpolated" in
                 str(w.message)]
        assert bool(named) == loud, (policy, named)
        if loud:
            assert named[0].startswith("16 input value(s)") and "missing='drop'" in named[0]
