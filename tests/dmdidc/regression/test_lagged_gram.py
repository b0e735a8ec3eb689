"""The Gram matrix of lagged signals from cross-correlations (dmdidc.regression.lagged_gram)
equals the dense product of explicitly stacked regression vectors, for the statistics (every
instrument kind, clipping, centring, several trajectories) and for least squares."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from dmdidc import DimensionError
from dmdidc.regression import GramAccumulator, lagged_gram
from dmdidc.regression.lagged_gram import LaggedGram, regression_slots
from dmdidc.statistics.streaming import LaggedSums

#: Entries agree to this fraction of sqrt(G_ii G_jj) (rounding of a sum of ~1e4 products: the
#: two computations add the same products in another order).
TOL = 1e-12


@pytest.fixture(params=[0, 5, None, "spectral"],
                ids=["correlations", "switching", "default", "spectral"])
def short(request, monkeypatch):
    """Trajectories of up to this many samples are summed densely: 0 tests the correlations
    alone, 5 the switch from one to the other within a trajectory; "spectral" the correlations
    with every group of four lags or more summed in segments in the frequency domain."""
    if request.param == "spectral":
        spectral(monkeypatch, batch=3)
        monkeypatch.setattr(lagged_gram, "_DENSE_SAMPLES", 0)
    elif request.param is not None:
        monkeypatch.setattr(lagged_gram, "_DENSE_SAMPLES", request.param)


def spectral(monkeypatch, batch: int) -> None:
    """Every group of more lags than the direct ones accumulates whole segments in the
    frequency domain, ``batch`` samples' worth of segments at a time."""
    monkeypatch.setattr(lagged_gram, "_SPECTRAL_ROWS", 1)
    monkeypatch.setattr(lagged_gram, "_SPECTRAL_LAGS", 1)
    monkeypatch.setattr(lagged_gram, "_SPECTRAL_BATCH", batch)
    monkeypatch.setattr(lagged_gram, "_SPECTRAL_SAMPLES", 1)


def dense_gram(slots, widths, signals, K):
    """sum_k v_k v_k^T with v_k = [slot values; 1], samples k = k0 .. K-1, by stacking."""
    k0 = max(0, max(lag for _, lag in slots))
    k = np.arange(k0, K)
    rows = [signals[s][:, k - lag] for s, lag in slots if widths[s] > 0]
    V = np.vstack(rows + [np.ones((1, k.size))])
    return V @ V.T


def assert_gram_close(actual, expected):
    scale = np.sqrt(np.clip(np.diag(expected), 1e-300, None))
    err = np.abs(actual - expected) / np.outer(scale, scale)
    assert err.max(initial=0.0) < TOL, err.max()


def random_chunks(rng, K):
    """Chunk boundaries, including empty chunks and chunks shorter than the largest lag."""
    cuts = np.sort(rng.integers(0, K + 1, rng.integers(0, 6)))
    return [0, *cuts.tolist(), K]


def layout_slots(kind, R, L):
    slots = regression_slots(R)
    if kind == "inputs":
        slots += [("u", R + lag) for lag in range(1, L + 1)]
    elif kind == "states":
        slots += [("x", lag) for lag in range(1, L + 1)]
    elif kind == "exogenous":
        slots += [("e", lag) for lag in range(R + L + 1)]
    return slots


@pytest.mark.parametrize("seed", range(30))
def test_engine_equals_dense_product_for_random_layouts_and_chunks(seed, short):
    rng = np.random.default_rng(seed)
    n, m, q = int(rng.integers(1, 5)), int(rng.integers(0, 4)), int(rng.integers(1, 3))
    R, L = int(rng.integers(0, 6)), int(rng.integers(0, 5))
    kind = [None, "inputs", "states", "exogenous"][seed % 4]
    slots = layout_slots(kind, R, L)
    widths = {"x": n, "u": m, "e": q}
    K = int(rng.integers(0, 60))
    scales = 10.0 ** rng.uniform(-3, 3, 3)              # signals of very different sizes
    signals = {"x": scales[0] * rng.standard_normal((n, K + 1)),
               "u": scales[1] * rng.standard_normal((m, K)),
               "e": scales[2] * rng.standard_normal((q, K))}
    engine = LaggedGram(slots, widths)
    bounds = random_chunks(rng, K)
    for i, (a, b) in enumerate(pairwise(bounds)):
        # partial_fit's convention: a chunk's first state is the previous chunk's last
        engine.update({"x": signals["x"][:, (a + 1 if i else 0):b + 1],
                       "u": signals["u"][:, a:b], "e": signals["e"][:, a:b]})
    expected = dense_gram(slots, widths, signals, K)
    assert engine.n_samples == expected[-1, -1]
    assert_gram_close(engine.gram(), expected)


def test_engine_without_samples_and_across_trajectories(short):
    rng = np.random.default_rng(7)
    engine = LaggedGram(regression_slots(3), {"x": 2, "u": 1})
    engine.update({"x": rng.standard_normal((2, 3)), "u": rng.standard_normal((1, 2))})
    assert engine.n_samples == 0 and not engine.gram().any()     # fewer samples than lags
    engine.new_trajectory()
    x, u = rng.standard_normal((2, 11)), rng.standard_normal((1, 10))
    engine.update({"x": x, "u": u})
    assert_gram_close(engine.gram(), dense_gram(regression_slots(3), {"x": 2, "u": 1},
                                                {"x": x, "u": u}, 10))


def explicit_statistics(trajectories, signals, layout, bound, detrend):
    """Gram and sums of the clipped, scaled v_k of every trajectory, by stacking."""
    d = layout.dimension
    gram, sums, count = np.zeros((d, d)), np.zeros(d), 0
    widths = {"x": layout.n_states, "u": layout.n_inputs, "e": layout.n_exogenous}
    for (X, U), E in zip(trajectories, signals, strict=True):
        data = {"x": X, "u": U, "e": E}
        if bound is not None:
            data = {s: np.clip(v, -bound, bound) / bound for s, v in data.items()}
        G = dense_gram(layout.slots, widths, data, U.shape[1])
        g, s, c = G[:d, :d], G[d, :d], int(G[d, d])
        if detrend and c:
            g, s = g - np.outer(s, s) / c, np.zeros(d)
        gram, sums, count = gram + g, sums + s, count + c
    return gram, sums, count


@pytest.mark.parametrize("seed", range(16))
def test_statistics_equal_explicit_sums_with_clipping_centring_and_trajectories(seed, short):
    rng = np.random.default_rng(100 + seed)
    n, m, R = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(0, 4))
    kind = [None, "inputs", "states", "exogenous"][seed % 4]
    q = 2 if kind == "exogenous" else 0
    bound = 1.5 if seed % 3 == 0 else None            # clipping acts on the signals: exact
    detrend = "constant" if seed % 2 else None
    options = dict(state_bound=bound, input_bound=bound,
                   instrument_bound=bound if kind == "exogenous" else None)
    if bound is None:
        options = {}
    sums = LaggedSums(n, m, R, instruments=kind, n_exogenous=q, detrend=detrend, **options)
    trajectories, signals = [], []
    for _ in range(int(rng.integers(1, 4))):
        K = int(rng.integers(0, 40))
        X, U = rng.standard_normal((n, K + 1)) + 0.3, rng.standard_normal((m, K))
        E = rng.standard_normal((q, K))
        trajectories.append((X, U))
        signals.append(E)
        sums.new_trajectory()
        bounds = random_chunks(rng, K)
        for a, b in pairwise(bounds):
            sums.update(X[:, a:b + 1], U[:, a:b], E[:, a:b] if q else None)
    totals = sums.totals()
    gram, total, count = explicit_statistics(trajectories, signals, sums.layout, bound, detrend)
    assert totals["n_samples"] == count
    assert_gram_close(totals["gram"], gram)
    scale = np.sqrt(np.clip(np.diag(gram), 1e-300, None) * max(count, 1))
    assert np.all(np.abs(totals["sums"] - total) <= TOL * scale)


def test_statistics_refuse_a_chunk_without_its_instrument_signal():
    sums = LaggedSums(2, 1, 1, instruments="exogenous", n_exogenous=1)
    with pytest.raises(DimensionError, match="update needs E"):
        sums.update(np.zeros((2, 5)), np.zeros((1, 4)))


@pytest.mark.parametrize("seed", range(8))
def test_least_squares_moments_equal_explicit_products_of_a_simulated_plant(seed, short):
    """Realistic data (a random stable plant, states 1e3 x the inputs), several trajectories
    in chunks, and explicit samples mixed in: every moment of the Gram pass is exact."""
    rng = np.random.default_rng(200 + seed)
    n, m, R = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(0, 6))
    A = rng.standard_normal((n, n))
    A *= 0.9 / max(np.abs(np.linalg.eigvals(A)).max(), 1e-12)
    B = rng.standard_normal((R + 1, n, m))
    acc = GramAccumulator(n, m, R)
    Phis, Ys = [], []
    for _ in range(int(rng.integers(1, 4))):
        K = int(rng.integers(R, 300))
        U = rng.standard_normal((m, K))
        X = np.zeros((n, K + 1))
        X[:, 0] = 1e3 * rng.standard_normal(n)
        for k in range(K):
            X[:, k + 1] = A @ X[:, k] + sum(B[j] @ U[:, k - j] for j in range(R + 1) if k >= j)
        acc.new_trajectory()
        bounds = random_chunks(rng, K)
        for a, b in pairwise(bounds):
            acc.update(X[:, a:b + 1], U[:, a:b])
        k = np.arange(R, K)
        Phis.append(np.vstack([X[:, k]] + [U[:, k - j] for j in range(R + 1)]))
        Ys.append(X[:, k + 1])
    extra = rng.standard_normal((n + m * (R + 1), 5)), rng.standard_normal((n, 5))
    acc.add_samples(*extra)
    Phi, Y = np.hstack(Phis + [extra[0]]), np.hstack(Ys + [extra[1]])
    V = np.vstack([Phi, Y, np.ones((1, Phi.shape[1]))])
    p = Phi.shape[0]
    actual = np.zeros_like(V @ V.T)
    actual[:p, :p], actual[p:-1, :p], actual[p:-1, p:-1] = (acc.symmetric_gram(), acc.cross,
                                                            acc.target_gram)
    actual[:p, p:-1] = acc.cross.T
    actual[-1, :-1] = actual[:-1, -1] = np.concatenate([acc.regressor_sum, acc.target_sum])
    actual[-1, -1] = acc.n_samples
    assert acc.n_samples == Phi.shape[1]
    assert_gram_close(actual, V @ V.T)


@pytest.mark.parametrize("seed", range(12))
def test_statistics_of_long_pieces_equal_the_dense_gram_across_blocks(seed, monkeypatch):
    """Long trajectories (many correlation blocks of a random size, chunks shorter and longer
    than the kept history), split where samples were lost (NaN: ``missing="drop"``), for random
    layouts: the sums equal the dense Gram of the explicitly stacked vectors."""
    from dmdidc import SufficientStatistics
    from dmdidc.missing import handle_missing

    rng = np.random.default_rng(300 + seed)
    monkeypatch.setattr(lagged_gram, "_BLOCK", int(rng.integers(3, 200)))
    monkeypatch.setattr(lagged_gram, "_DENSE_SAMPLES", int(rng.choice([0, 50])))
    if seed % 2:                  # whole segments in the frequency domain, in random batches
        spectral(monkeypatch, batch=int(rng.integers(1, 400)))
    n, m, q = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
    R, L = int(rng.integers(0, 8)), int(rng.integers(1, 6))
    kind = [None, "inputs", "states", "exogenous"][seed % 4]
    L = L if kind == "states" else None                  # others: enough instruments
    experiments = []
    for _ in range(int(rng.integers(1, 3))):
        K = int(rng.integers(200, 1500))
        X = 10.0 ** rng.uniform(-2, 2) * (rng.standard_normal((n, K + 1)) + 0.5)
        U = rng.standard_normal((m, K))
        for _ in range(int(rng.integers(0, 4))):         # lost samples: NaN segments
            start = int(rng.integers(0, K))
            X[int(rng.integers(0, n)), start:start + int(rng.integers(1, 20))] = np.nan
        experiments.append((X, U))
    names = [f"x{i}" for i in range(n)] + [f"u{j}" for j in range(m)]
    pieces, _ = handle_missing(experiments, names, "drop")
    signals = [rng.standard_normal((q, U.shape[1])) for _, U in pieces]
    instruments = signals if kind == "exogenous" else kind
    sums = LaggedSums(n, m, R, instruments=kind, instrument_lags=L,
                      n_exogenous=q if kind == "exogenous" else 0)
    for (X, U), E in zip(pieces, signals, strict=True):      # in random chunks
        sums.new_trajectory()
        for a, b in pairwise(random_chunks(rng, U.shape[1])):
            sums.update(X[:, a:b + 1], U[:, a:b], E[:, a:b] if kind == "exogenous" else None)
    gram, total, count = explicit_statistics(pieces, signals, sums.layout, None, None)
    totals = sums.totals()
    assert totals["n_samples"] == count
    assert_gram_close(totals["gram"], gram)
    # the one-call constructor (chunks of its own) agrees
    whole = SufficientStatistics.from_data([X for X, _ in pieces], [U for _, U in pieces],
                                           max_delay=R, instruments=instruments,
                                           instrument_lags=L)
    assert whole.n_samples == count
    assert_gram_close(whole.gram, gram)
