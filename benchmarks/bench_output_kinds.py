"""OutputDMDidc on closed-loop data, outliers and lost samples: right, loud, or silently wrong?

Each seed draws the random plant, sensors, delays, noise level and length of
``bench_output_loud.py`` (order 1-5, 1-3 inputs, 1-3 sensors, 10-40 dB, K = 1000-8000, T = 0.5 s);
then one data set per kind:

* ``open``: the open-loop data of ``bench_output_loud.py`` (white or low-pass inputs): the
  reference, where a warning on a right fit is a false alarm;
* ``closed_loop``: an output feedback on the noisy outputs, ``u_k = -F y_k + d_k``
  (:func:`simulations.studies.data_kinds.output_feedback_data`: ``F`` the delay-free LQR gain
  through ``pinv(C)``, halved until the loop with the delay has spectral radius below 0.98), a
  white dither ``d`` (sd 0.3), process noise (sd 0.3 x the states' rms) and the seed's
  measurement noise;
* ``outliers``: the open-loop data with 1 % of the output samples moved by 50 x the noise sd;
* ``outliers_dropped``: the same data with the remedy the outlier check names: the samples
  ``outlier_samples_`` lists set to NaN and the data refitted as ``IdData(..., missing="drop")``
  (CPU: both fits);
* ``lost_drop`` / ``lost_interp``: the open-loop data with 0.5 % of the output samples lost (NaN,
  in runs of 1-5), passed as ``IdData(..., missing="drop")`` (split at the gaps) or
  ``missing="interpolate"``;
* ``lost_inputs_drop`` / ``lost_inputs_interp``: the open-loop data with 1-5 % of the input
  samples lost (NaN in every input channel, in runs of 1-20; the outputs are what the plant did
  with the inputs it received), passed as ``missing="drop"`` or ``"interpolate"``;
* ``drift`` / ``drift_linear``: the open-loop outputs plus a linear drift of 1-3 x each
  output's rms over the record (random sign), fitted with the defaults or with
  ``detrend="linear"``; ``open_linear``: the open-loop data with ``detrend="linear"`` (what the
  trend removal costs where there is no drift).

A fit is *right* when its order is the plant's, every eigenvalue within 10 % and every delay within
0.1 T; *loud* when it raises a ValueError or issues a DiagnosticWarning; otherwise *silently
wrong*.  ``warned right`` counts right fits that warned: a false alarm on ``open``, ``outliers``
and the lost-sample kinds (their fits should be right and quiet or say why), a true warning on
``closed_loop`` (the loop is there).  CPU seconds per fit (median).

    python benchmarks/bench_output_kinds.py [--seeds 20] [--first 0] [--kinds closed_loop ...]
        [--verbose]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from bench_output_loud import R, T, case

from dmdidc import IdData, OutputDMDidc
from dmdidc.errors import DiagnosticWarning
from simulations.studies.data_kinds import output_feedback_data

KINDS = ("open", "closed_loop", "outliers", "outliers_dropped", "lost_drop", "lost_interp",
         "lost_inputs_drop", "lost_inputs_interp", "drift", "drift_linear", "open_linear")


def closed_loop(c: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """Outputs and inputs of the output-feedback loop on the plant and sensors of ``c`` (the
    seed's measurement noise), and the feedback's share of the inputs' rms."""
    level = np.std(c["Y"] - c["clean"], axis=1)
    Y, U, dither = output_feedback_data(c["plant"], c["C"], c["U"].shape[1], noise_std=level,
                                        rng=rng)
    return Y, U, float(np.sqrt(np.mean((U - dither) ** 2) / np.mean(U ** 2)))


def with_outliers(c: dict, rng: np.random.Generator) -> np.ndarray:
    """The outputs of ``c`` with 1 % of the samples moved by 50 x the noise sd (random sign)."""
    Y = c["Y"].copy()
    level = np.std(Y - c["clean"], axis=1)
    hit = rng.random(Y.shape[1]) < 0.01
    Y[:, hit] += 50.0 * level[:, None] * rng.choice([-1.0, 1.0], (Y.shape[0], int(hit.sum())))
    return Y


def with_gaps(c: dict, rng: np.random.Generator) -> np.ndarray:
    """The outputs of ``c`` with about 0.5 % of the samples lost (NaN in every output), in runs
    of 1-5 samples, and one extra sample (the state convention of IdData)."""
    Y = np.hstack([c["Y"], c["clean"][:, -1:]])
    K = Y.shape[1]
    for start in rng.choice(K, max(1, K // 600), replace=False):
        Y[:, start:start + int(rng.integers(1, 6))] = np.nan
    return Y


def with_lost_inputs(c: dict, rng: np.random.Generator) -> np.ndarray:
    """The inputs of ``c`` with 1-5 % of the samples lost (NaN in every channel), in runs of
    1-20 samples (runs may touch or overlap)."""
    U = c["U"].copy()
    K = U.shape[1]
    target = rng.uniform(0.01, 0.05) * K
    while np.isnan(U[0]).sum() < target:
        start = int(rng.integers(0, K))
        U[:, start:start + int(rng.integers(1, 21))] = np.nan
    return U


def with_drift(c: dict, rng: np.random.Generator) -> np.ndarray:
    """The outputs of ``c`` plus a line rising (or falling) by 1-3 x each output's rms."""
    Y = c["Y"]
    size = rng.uniform(1.0, 3.0, (Y.shape[0], 1)) * rng.choice([-1.0, 1.0], (Y.shape[0], 1))
    return Y + size * Y.std(axis=1, keepdims=True) * np.linspace(0.0, 1.0, Y.shape[1])


def fit(*args, detrend=False, **keywords) -> OutputDMDidc:
    return OutputDMDidc(max_delay=R, detrend=detrend).fit(*args, **keywords)


def without_outliers(Y: np.ndarray, U: np.ndarray) -> OutputDMDidc:
    """The remedy the outlier check names: fit, set the samples it names to NaN, refit as
    ``IdData(..., missing="drop")`` (the first fit's warnings are the check's, not counted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiagnosticWarning)
        first = fit(Y, U, dt=T)
    Y = Y.copy()
    Y[:, first.outlier_samples_[0]] = np.nan
    return fit(IdData(Y, U[:, :-1], dt=T, missing="drop"))


def data(kind: str, c: dict, rng: np.random.Generator):
    """The fit of ``kind`` on the case ``c`` (a function of no arguments) and a note."""
    if kind == "closed_loop":
        Y, U, share = closed_loop(c, rng)
        return lambda: fit(Y, U, dt=T), f"feedback share {share:.2f}"
    if kind == "outliers":
        Y = with_outliers(c, rng)
        return lambda: fit(Y, c["U"], dt=T), None
    if kind == "outliers_dropped":
        Y = with_outliers(c, np.random.default_rng([c["seed"], KINDS.index("outliers")]))
        return lambda: without_outliers(Y, c["U"]), None
    if kind.startswith("lost_inputs"):
        policy = "drop" if kind.endswith("drop") else "interpolate"
        U = with_lost_inputs(c, rng)
        lost = IdData(np.hstack([c["Y"], c["clean"][:, -1:]]), U, dt=T, missing=policy)
        return lambda: fit(lost), f"{np.isnan(U[0]).mean():.1%} of the inputs lost"
    if kind.startswith("lost"):
        policy = "drop" if kind == "lost_drop" else "interpolate"
        lost = IdData(with_gaps(c, rng), c["U"], dt=T, missing=policy)
        return lambda: fit(lost), str(lost.missing_report)[:60]
    if kind.startswith("drift"):
        Y = with_drift(c, rng)
        detrend = "linear" if kind == "drift_linear" else False
        return lambda: fit(Y, c["U"], dt=T, detrend=detrend), None
    if kind == "open_linear":
        return lambda: fit(c["Y"], c["U"], dt=T, detrend="linear"), None
    return lambda: fit(c["Y"], c["U"], dt=T), None


def judge(kind: str, seed: int) -> dict:
    """Fit ``kind`` on the plant of ``seed`` and classify the result."""
    c = case(seed)
    c["seed"] = seed
    plant = c["plant"]
    run, note = data(kind, c, np.random.default_rng([seed, KINDS.index(kind)]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.process_time()
        try:
            est = run()
            error = None
        except ValueError as exc:
            est, error = None, exc
        seconds = time.process_time() - start
    messages = [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]
    result = {"kind": kind, "seed": seed, "label": c["label"], "seconds": seconds,
              "messages": messages, "error": error, "note": note, "right": False,
              "loud": bool(messages) or error is not None, "order": None}
    if est is not None:
        truth = np.sort_complex(np.linalg.eigvals(plant.A_c))
        result["order"] = est.order_
        delay_error = float(np.max(np.abs(est.delay - plant.delay)) / T)
        if est.order_ == c["n"]:
            found = np.sort_complex(est.eigenvalues_)
            eig_error = float(np.max(np.abs(found - truth) / np.abs(truth)))
            result["right"] = eig_error < 0.1 and delay_error < 0.1
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    rows = []
    for kind in args.kinds:
        results = []
        for seed in range(args.first, args.first + args.seeds):
            r = judge(kind, seed)
            results.append(r)
            if args.verbose or (not r["right"] and not r["loud"]):
                state = ("right" if r["right"] else "loud" if r["loud"] else "SILENTLY WRONG")
                if r["right"] and r["loud"]:
                    state = "right, warned"
                print(f"{kind:<12} seed {seed:3d} {r['label']:<46} order {r['order']} {state} "
                      f"{r['seconds']:.1f}s {r['note'] or ''}", flush=True)
                for text in r["messages"] + ([repr(r["error"])] if r["error"] else []):
                    print(f"      {text[:200]}", flush=True)
        right = [r for r in results if r["right"]]
        rows.append((kind, len(results), len(right),
                     sum(not r["right"] and r["loud"] for r in results),
                     sum(not r["right"] and not r["loud"] for r in results),
                     sum(r["loud"] for r in right),
                     float(np.median([r["seconds"] for r in results]))))
    print(f"\n{'kind':<12} {'plants':>7} {'right':>6} {'wrong, loud':>12} {'SILENTLY WRONG':>15} "
          f"{'warned right':>13} {'CPU s (median)':>15}")
    for kind, total, right, loud, silent, warned, cpu in rows:
        print(f"{kind:<12} {total:>7} {right:>6} {loud:>12} {silent:>15} {warned:>13} "
              f"{cpu:>15.2f}")


if __name__ == "__main__":
    main()
