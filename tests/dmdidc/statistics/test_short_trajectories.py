"""Many short trajectories laid out side by side (LaggedSums.add_short) against the streaming
engine one trajectory at a time: the same statistics, to rounding."""

from __future__ import annotations

import numpy as np
import pytest

from dmdidc.regression import lagged_gram
from dmdidc.statistics.streaming import LaggedSums


def _streamed(sums: LaggedSums, trajectories, signals) -> dict:
    for (X, U), E in zip(trajectories, signals, strict=True):
        sums.new_trajectory()
        sums.update(X, U, E)
    return sums.totals()


@pytest.mark.parametrize("seed", range(8))
def test_side_by_side_equals_one_trajectory_at_a_time(seed, monkeypatch):
    # Random layouts (every instrument kind), bounds that clip, a mean per trajectory, lengths
    # from empty to beyond the dense limit (those are left to the caller) and a batch smaller
    # than the data (several products): the sums, counts, clipped values and lengths agree.
    import dmdidc.statistics.streaming as streaming

    rng = np.random.default_rng(seed)
    monkeypatch.setattr(streaming, "_SHORT_BATCH", int(rng.integers(1, 900)))
    monkeypatch.setattr(lagged_gram, "_DENSE_SAMPLES", int(rng.choice([60, 400])))
    n, m, q = int(rng.integers(1, 5)), int(rng.integers(0, 3)), int(rng.integers(1, 3))
    R = int(rng.integers(0, 5))
    kind = [None, "inputs", "states", "exogenous"][seed % 4]
    if kind == "inputs" and m == 0:
        kind = "states"
    options = {"instruments": kind, "instrument_lags": 2 if kind == "states" else None,
               "n_exogenous": q if kind == "exogenous" else 0,
               "detrend": "constant" if seed % 3 == 0 else None}
    if seed % 2:
        options.update(state_bound=np.full(n, 2.0), input_bound=1.5,
                       instrument_bound=2.0 if kind == "exogenous" else None)
    lengths = [0, 1, R + 1, *rng.integers(2, 700, size=12)]
    trajectories = [(rng.standard_normal((n, K + 1)) + rng.normal(0, 1, (n, 1)),
                     rng.standard_normal((m, K))) for K in lengths]
    signals = [rng.standard_normal((q, K)) if kind == "exogenous" else None for K in lengths]
    together = LaggedSums(n, m, R, **options)
    rest = together.add_short(trajectories, signals)
    dense = together._engine.dense_samples
    first = together._engine.first_sample
    assert rest == [i for i, K in enumerate(lengths) if K - first > dense]
    for i in rest:
        together.new_trajectory()
        together.update(*trajectories[i], signals[i])
    got = together.totals()
    order = [i for i in range(len(lengths)) if i not in rest] + rest
    want = _streamed(LaggedSums(n, m, R, **options), [trajectories[i] for i in order],
                     [signals[i] for i in order])
    scale = np.abs(want["gram"]).max()
    np.testing.assert_allclose(got["gram"], want["gram"], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(got["sums"], want["sums"], rtol=0,
                               atol=1e-12 * max(np.abs(want["sums"]).max(), 1.0))
    for key in ("n_samples", "n_trajectories", "intercepts", "clipping",
                "min_trajectory_samples", "max_trajectory_samples"):
        assert got[key] == want[key], key
    if seed % 2:
        assert got["clipping"].total > 0                        # the bounds did clip


def test_side_by_side_refuses_missing_instrument_signals():
    from dmdidc.errors import DimensionError

    sums = LaggedSums(2, 1, 1, instruments="exogenous", n_exogenous=1)
    X, U = np.zeros((2, 11)), np.zeros((1, 10))
    with pytest.raises(DimensionError, match="every trajectory needs E"):
        sums.add_short([(X, U)], [None])
