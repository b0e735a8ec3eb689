"""Tests of simulations.studies.adaptive_delay: the controller re-designed on line beats the fixed
one after the delay step (several random plants), is not re-designed on noise (no re-design
before the step, none on a stationary plant) and refuses bad settings."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from _toolbox.errors import ParameterError
from simulations.studies.adaptive_delay import (
    AdaptiveConfig,
    adaptive_delay_run,
    adaptive_delay_study,
    plot_adaptive_run,
    summarize_runs,
)

SMALL = AdaptiveConfig(steps=1500, step=1000)


@pytest.mark.parametrize("seed", range(3))
def test_adaptive_beats_fixed_after_the_step(seed: int) -> None:
    run = adaptive_delay_run(SMALL, seed)
    costs = run.costs()
    assert costs["adaptive_before"] == costs["fixed_before"]      # same loop until re-design
    assert np.isfinite(costs["adaptive_after"])
    assert costs["adaptive_after"] < costs["fixed_after"]
    assert run.events and SMALL.step <= run.events[0] <= SMALL.step + 50   # detected
    assert run.redesigns and all(k > SMALL.step for k in run.redesigns)    # not on noise
    assert len(run.redesigns) <= 2
    final = run.controller_delay[-1]
    assert np.all(np.abs(final - SMALL.new_delay) < SMALL.tolerance)


def test_mpc_is_re_designed_and_beats_fixed() -> None:
    run = adaptive_delay_run(replace(SMALL, controller="mpc", horizon=8), 2)
    costs = run.costs()
    assert run.redesigns and costs["adaptive_after"] < costs["fixed_after"]


def test_no_redesign_without_a_change() -> None:
    run = adaptive_delay_run(replace(SMALL, new_delay=SMALL.old_delay), 1)
    assert run.redesigns == [] and run.events == []
    np.testing.assert_array_equal(run.cost_adaptive, run.cost_fixed)


def test_study_summary_and_figure(tmp_path) -> None:
    runs = adaptive_delay_study(replace(SMALL, steps=400, step=200), plants=2, rng=3)
    summary = summarize_runs(runs)
    assert len(summary["runs"]) == 2 and summary["config"]["steps"] == 400
    assert {"fixed_after", "adaptive_after", "ratio_after", "events"} <= set(summary["runs"][0])
    path = plot_adaptive_run(runs[0], tmp_path / "live.png")
    assert path.stat().st_size > 10_000


def test_same_seed_same_run() -> None:
    config = replace(SMALL, steps=300, step=150)
    a, b = adaptive_delay_run(config, 7), adaptive_delay_run(config, 7)
    np.testing.assert_array_equal(a.cost_fixed, b.cost_fixed)
    assert a.lost_commands.mean() < 0.1 and a.lost_commands.any()


@pytest.mark.parametrize("change, match", [
    ({"step": 0}, "step"), ({"step": 1500}, "step"), ({"new_delay": 5.0}, "new_delay"),
    ({"old_delay": -1.0}, "old_delay"), ({"lost": 1.0}, "lost"), ({"update": "all"}, "update"),
    ({"excitation": -0.1}, "excitation"), ({"forgetting": 0.0}, "forgetting"),
    ({"level": 1.0}, "level"), ({"controller": "naive"}, "controller"), ({"chunk": 0}, "chunk"),
    ({"tolerance": 0.0}, "tolerance"), ({"horizon": 0}, "horizon"),
])
def test_bad_settings_are_refused(change: dict, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        replace(SMALL, **change)


def test_whole_identified_model_update_also_beats_fixed() -> None:
    run = adaptive_delay_run(replace(SMALL, update="model"), 2)
    costs = run.costs()
    assert run.redesigns and costs["adaptive_after"] < costs["fixed_after"]


@pytest.mark.parametrize("seed", range(6))
def test_online_delay_in_closed_loop_is_right_or_undetermined(seed: int) -> None:
    # Issue 22: in the closed loop (feedback, excitation, 3 % lost packets both ways) every
    # reported delay is near the truth or covered by its interval, or NaN (undetermined, with
    # the reason in delay_status_): never the fit's 0 for a channel without a significant
    # block, nor a whole delay the block test made by zeroing a weak block (3.0 T for 2.6 T).
    # After the warm-up (500 samples from the start or the change) the delays are determined
    # but for a weakly excited channel's few updates (measured: 5 of 336 on 12 plants; since
    # a channel without a significant block waits a warm-up for its recheck instead of
    # growing the bound, seed 5's weak channel stays undetermined on 25 % of its warm
    # updates instead of 14 %, the other 11 plants unchanged).  The chunk holding the step
    # (detected 0-10 samples in) is skipped.
    config = replace(AdaptiveConfig(), steps=1600, step=800)
    run = adaptive_delay_run(config, rng=seed)
    if not np.isfinite(run.cost_adaptive).all():
        pytest.skip("the adaptive loop diverged before its re-design")
    times = run.times[:, None]
    truth = np.where(times <= config.step, config.old_delay, config.new_delay)
    skip = (times > config.step) & (times <= config.step + config.chunk)
    reported = np.isfinite(run.estimate) & ~skip
    covers = (run.low <= truth) & (truth <= run.high)
    near = np.abs(run.estimate - truth) < 0.1
    assert np.all((near | covers)[reported]), run.estimate[~(near | covers) & reported]
    assert not np.any(reported & (run.estimate == 0.0))
    warm = ((times >= 500) & (times <= config.step)) | (times >= config.step + 500)
    assert np.isnan(run.estimate[warm.ravel()]).mean() <= 0.3
