"""OutputDMDidc over many random plants: right, loud, or silently wrong?

Each seed draws a random stable plant (order 1-5, 1-3 inputs, 1-3 random sensors, T = 0.5 s),
delays per channel either fractional (uniform in 0.2-3.8 T) or within 0.03 T of a whole number
of periods, white output noise at 10-40 dB, K = 1000-8000 samples and white or low-pass
(AR(1), pole 0.8) inputs.  A fit is *right* when its order is the plant's, every eigenvalue is
within 10 % and every delay within 0.1 T; *loud* when it raises a ValueError or issues a
DiagnosticWarning; otherwise *silently wrong*.  On the right fits a warning is a *false alarm*.
Coverage: the share of true delays and eigenvalues inside the reported 95 % intervals (right
fits; eigenvalue intervals are boxes of the real and imaginary parts).  Silently wrong fits are
broken down: *reduced models* (too few modes, but every found mode within 10 % of a true one and
every delay within 0.1 T); fits of the plant's order whose every true eigenvalue and delay lies
inside the reported 95 % intervals (off, but honest about it); too few modes that the data
do not show (the true order, fitted from the true plant, is not better by a likelihood-ratio
test at 0.05: no calibrated check can see them); and too few modes that the data show only at
a level between the estimator's ``significance`` (1e-3) and 0.05 (a check at such a level
fires as often on right fits: see docs/output-identification.md).  A warning on a right fit
is a false alarm unless it is true of the plant: "delay not determined" is checked on the
noise-free outputs (the named second delay, refitted from the true plant, reproduces them
exactly); any warning is true of the data when at least 2 of ``--redraws`` (20) fits of the
same experiment with fresh noise are not right (the experiment does not assure the tolerance,
so the right fit was luck: on seeds 0-39 the ``precision`` warnings' half-widths matched the
redraws' 95th percentile errors, e.g. 0.121 T against 0.11 T).  ``--drift``:
the same plants with a linear drift of 1-3 x each output's rms over the record added to the
outputs, fitted with ``detrend="linear"`` (a line per experiment fitted with the plant; the
"data do not show them" breakdown is left out: its oracle fits no line), and what the lines
cost: the widths of its delay intervals and its eigenvalues' standard errors over those of the
default fit of the drift-free data, where both have the plant's order.

    python benchmarks/bench_output_loud.py [--seeds 40] [--first 0] [--verbose] [--drift]
                                           [--redraws 20]
"""

from __future__ import annotations

import argparse
import inspect
import re
import time
import warnings

import numpy as np
from scipy import signal, stats

from dmdidc import DelayedPlant, OutputDMDidc
from dmdidc.errors import DiagnosticWarning
from dmdidc.output.refine import refine
from simulations.studies.data_kinds import random_state_matrix

T, R = 0.5, 4
#: OutputDMDidc's default significance: the level of its order and delay decisions.
SIGNIFICANCE = inspect.signature(OutputDMDidc).parameters["significance"].default


def case(seed: int) -> dict:
    """The random experiment of ``seed``: plant, sensors, data and a short description."""
    rng = np.random.default_rng(seed)
    n, m, ny = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    whole = rng.random() < 0.5
    if whole:       # within 0.03 T of a whole number of periods (either side)
        periods = np.clip(rng.integers(1, R, m) + rng.uniform(-0.03, 0.03, m), 0.0, R - 0.1)
    else:
        periods = rng.uniform(0.2, R - 0.2, m)
    snr_db, K = float(rng.uniform(10, 40)), int(rng.integers(1000, 8001))
    lowpass = rng.random() < 0.5
    plant = DelayedPlant.from_continuous(random_state_matrix(rng, n, T),
                                         rng.standard_normal((n, m)), periods * T, T,
                                         max_delay=R)
    U = rng.standard_normal((m, K))
    if lowpass:
        U = signal.lfilter([1.0], [1.0, -0.8], U, axis=1)
        U /= U.std(axis=1, keepdims=True)
    C = rng.standard_normal((ny, n))
    X = plant.simulate(rng.standard_normal(n), U)
    clean = C @ X[:, :K]
    noise_std = clean.std(axis=1, keepdims=True) * 10 ** (-snr_db / 20)
    Y = clean + noise_std * rng.standard_normal(clean.shape)
    label = (f"n={n} m={m} l={ny} {'whole' if whole else 'frac'} {snr_db:4.1f}dB K={K} "
             f"{'lowpass' if lowpass else 'white'}")
    return {"plant": plant, "C": C, "X": X, "clean": clean, "Y": Y, "U": U, "n": n,
            "label": label, "noise_std": noise_std}


def oracle_p(c: dict, est: OutputDMDidc) -> float:
    """Likelihood-ratio p-value of the true order's fit (started from the true plant) against
    the chosen fit: above 0.05 the data do not show the missing modes to any calibrated test."""
    n, (ny, m) = c["n"], (c["Y"].shape[0], c["U"].shape[0])
    scale = est.scale_
    truth = refine([(c["Y"] / scale[:, None], c["U"])], T, R, A_c=c["plant"].A_c,
                   C=c["C"] / scale[:, None], B_c=c["plant"].B_c, delays=c["plant"].delay,
                   initial_states=c["X"][:, R][None], D=None, offset=np.zeros(ny))
    statistic = (est.refined_.rss - truth.rss) / (truth.rss / truth.dof)
    return float(stats.chi2.sf(statistic, abs(n - est.order_) * (ny + m + 1)))


def true_delay_warning(c: dict, message: str) -> bool:
    """Is "channel i: delay not determined ... a s and b s fit equally well" true of the plant
    itself?  The noise-free outputs are refitted from the true plant with channel ``i``'s delay
    moved to the named one farther from the truth: an exact fit means the inputs and sensors
    cannot tell the two delays apart (not a false alarm)."""
    found = re.search(r"channel (\d+): delay not determined by the data: (\S+) s and (\S+) s",
                      message)
    if not found:
        return False
    i, named = int(found[1]), np.array([float(found[2]), float(found[3])])
    plant, clean = c["plant"], c["clean"]
    delays = plant.delay.copy()
    delays[i] = named[np.argmax(np.abs(named - delays[i]))]
    other = refine([(clean, c["U"])], T, R, A_c=plant.A_c, C=c["C"], B_c=plant.B_c,
                   delays=delays, initial_states=c["X"][:, R][None], D=None,
                   offset=np.zeros(clean.shape[0]), max_evaluations=200)
    return bool(other.rss <= 1e-12 * np.sum(clean ** 2)
                and abs(other.delays[i] - plant.delay[i]) > 0.1 * T)


def eigenvalue_error(est: OutputDMDidc, truth: np.ndarray) -> float:
    """The largest relative error of ``est``'s eigenvalues against ``truth`` (sorted), both of
    the plant's order."""
    found = np.sort_complex(est.eigenvalues_)
    return float(np.max(np.abs(found - truth) / np.abs(truth)))


#: A warning on a right fit is true of the data (the right fit was luck, not assured by the
#: experiment) when at least this many of the noise redraws are not right: were the design's
#: wrong rate at most 1 %, 2 or more of 20 would happen with probability 0.017.
_WRONG_REDRAWS = 2


def redrawn_wrong(c: dict, redraws: int, options: dict) -> int:
    """How many of ``redraws`` fits of the same experiment (plant, sensors, inputs, initial
    state), each with fresh output noise of the same level, are not right: an oracle of whether
    the experiment determines the model to the sweep's tolerance, independent of the fit's own
    intervals and checks."""
    plant, wrong = c["plant"], 0
    truth = np.sort_complex(np.linalg.eigvals(plant.A_c))
    for draw in range(redraws):
        rng = np.random.default_rng([c["seed"], 77, draw])
        Y = c["clean"] + c["noise_std"] * rng.standard_normal(c["clean"].shape)
        if "drift" in c:
            Y = Y + c["drift"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est = OutputDMDidc(max_delay=R, **options).fit(Y, c["U"], dt=T)
            except ValueError:
                wrong += 1
                continue
        wrong += not (est.order_ == c["n"] and eigenvalue_error(est, truth) < 0.1
                      and np.max(np.abs(est.delay - plant.delay)) < 0.1 * T)
    return wrong


def judge(seed: int, drift: bool = False, redraws: int = 20) -> dict:
    """Fit the case of ``seed`` (``drift``: plus a line, fitted with ``detrend="linear"``) and
    classify the result; a warned right fit's warnings are judged by ``redraws`` noise redraws
    (:func:`redrawn_wrong`) unless they are true of the noise-free outputs."""
    c = case(seed)
    c["seed"] = seed
    Y, options = c["Y"], {}
    if drift:
        rng = np.random.default_rng([seed, 1])
        size = rng.uniform(1.0, 3.0, (Y.shape[0], 1)) * rng.choice([-1.0, 1.0], (Y.shape[0], 1))
        c["drift"] = size * Y.std(axis=1, keepdims=True) * np.linspace(0.0, 1.0, Y.shape[1])
        Y = Y + c["drift"]
        options = {"detrend": "linear"}
    plant = c["plant"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.process_time()
        try:
            est = OutputDMDidc(max_delay=R, **options).fit(Y, c["U"], dt=T)
            error = None
        except ValueError as exc:
            est, error = None, exc
        seconds = time.process_time() - start
    messages = [str(w.message) for w in caught if issubclass(w.category, DiagnosticWarning)]
    result = {"seed": seed, "label": c["label"], "seconds": seconds, "warnings": messages,
              "error": error, "loud": bool(messages) or error is not None, "right": False,
              "order": None, "eig_error": np.nan, "delay_error": np.nan, "covered": []}
    if est is None:
        return result
    truth = np.sort_complex(np.linalg.eigvals(plant.A_c))
    result["order"] = est.order_
    result["delay_error"] = float(np.max(np.abs(est.delay - plant.delay)) / T)
    # a reduced model: too few modes, but each found one within 10 % of a true one
    distance = np.abs(est.eigenvalues_[:, None] - truth[None, :]) / np.abs(truth)[None, :]
    result["reduced"] = bool(est.order_ < c["n"] and np.all(distance.min(axis=1) < 0.1)
                             and result["delay_error"] < 0.1)
    if est.order_ == c["n"]:
        result["eig_error"] = eigenvalue_error(est, truth)
        result["right"] = result["eig_error"] < 0.1 and result["delay_error"] < 0.1
        low, high = est.delay_ci().T
        result["delay_covered"] = list((low <= plant.delay) & (plant.delay <= high))
        result["misses"] = [f"delay {i}: true {plant.delay[i] / T:.4f} T, fitted "
                            f"{est.delay[i] / T:.4f} T, interval [{low[i] / T:.4f}, "
                            f"{high[i] / T:.4f}] T" for i in np.flatnonzero(
                                ~np.array(result["delay_covered"]))]
        result["delay_width"] = list((high - low) / T)
        periods = plant.delay / T
        result["delay_whole"] = list(np.abs(periods - np.round(periods)) < 0.05)
        low, high = est.eigenvalue_ci().T
        low, high = low[np.argsort(est.eigenvalues_)], high[np.argsort(est.eigenvalues_)]
        real_in = (low.real <= truth.real) & (truth.real <= high.real)
        imag_in = (low.imag <= truth.imag) & (truth.imag <= high.imag)
        inside = real_in & imag_in
        result["covered"] = result["delay_covered"] + list(inside)
        result["misses"] += [f"eigenvalue {t:.4g}: box [{lo:.4g}, {h:.4g}]" for t, lo, h, ok
                             in zip(truth, low, high, inside, strict=True) if not ok]
        # per part, a conjugate pair counted once (its upper member)
        upper = truth.imag >= 0
        result["eig_parts"] = [(bool(t.imag != 0), bool(r), bool(i), float(h.real - lo.real)
                                / abs(t), float(h.imag - lo.imag) / abs(t))
                               for t, r, i, lo, h in zip(truth[upper], real_in[upper],
                                                         imag_in[upper], low[upper], high[upper],
                                                         strict=True)]
        result["within"] = bool(all(result["covered"]))
    if result["right"] and result["loud"]:
        result["true_warning"] = all(true_delay_warning(c, text) for text in messages)
        if not result["true_warning"] and redraws:
            result["redrawn_wrong"] = redrawn_wrong(c, redraws, options)
            result["true_warning"] = result["redrawn_wrong"] >= _WRONG_REDRAWS
    if not result["right"] and not result["loud"] and est.order_ < c["n"] and not drift:
        result["oracle_p"] = oracle_p(c, est)
    if drift and est.order_ == c["n"]:
        result["cost"] = line_cost(c, est)
    return result


def line_cost(c: dict, est: OutputDMDidc) -> tuple[list, list] | None:
    """Delay interval widths and eigenvalue standard errors of ``est`` (lines fitted) over
    those of the default fit of the drift-free data of ``c`` (None if that one's order is not
    the plant's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            plain = OutputDMDidc(max_delay=R).fit(c["Y"], c["U"], dt=T)
        except ValueError:
            return None
    if plain.order_ != c["n"]:
        return None
    widths = np.diff(est.delay_ci()).ravel() / np.diff(plain.delay_ci()).ravel()
    se = (est.eigenvalue_se_[np.argsort(est.eigenvalues_)]
          / plain.eigenvalue_se_[np.argsort(plain.eigenvalues_)])
    return list(widths), list(se)


def coverage_breakdown(right: list) -> None:
    """Coverage per quantity on the right fits, with the median interval widths."""
    if not right:
        return
    delays = [(c, w, whole) for r in right for c, w, whole in zip(
        r["delay_covered"], r["delay_width"], r["delay_whole"], strict=True)]
    parts = [p for r in right for p in r["eig_parts"]]

    def line(name: str, covered: list, widths: list, unit: str) -> None:
        if covered:
            print(f"  {name:<44} {len(covered):>4} covered {np.mean(covered):.3f}  median "
                  f"width {np.median(widths):.4g} {unit}")
    print("95 % intervals on the right fits (a conjugate pair counted once):")
    for name, keep in (("delays", lambda d: True), ("delays within 0.05 T of a whole period",
                                                    lambda d: d[2]),
                       ("fractional delays", lambda d: not d[2])):
        chosen = [d for d in delays if keep(d)]
        line(name, [d[0] for d in chosen], [d[1] for d in chosen], "T")
    real = [p for p in parts if not p[0]]
    pairs = [p for p in parts if p[0]]
    line("real eigenvalues", [p[1] and p[2] for p in real], [p[3] for p in real], "|lambda|")
    line("complex pairs: real part", [p[1] for p in pairs], [p[3] for p in pairs], "|lambda|")
    line("complex pairs: imaginary part", [p[2] for p in pairs], [p[4] for p in pairs],
         "|lambda|")
    line("complex pairs: box (both parts)", [p[1] and p[2] for p in pairs],
         [max(p[3], p[4]) for p in pairs], "|lambda| (longer side)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--drift", action="store_true",
                        help="add a linear drift to the outputs, fit with detrend='linear'")
    parser.add_argument("--redraws", type=int, default=20,
                        help="noise redraws that judge a warning on a right fit (0: none, "
                             "every warning not true of the noise-free outputs is a false "
                             "alarm, as before 2026-11-28)")
    args = parser.parse_args()
    results = []
    for seed in range(args.first, args.first + args.seeds):
        r = judge(seed, args.drift, args.redraws)
        results.append(r)
        if args.verbose or (not r["right"] and not r["loud"]):
            state = "right" if r["right"] else ("loud" if r["loud"] else "SILENTLY WRONG")
            if r["right"] and r["loud"]:
                state = "right+true warning" if r.get("true_warning") else "right+FALSE ALARM"
            print(f"seed {seed:3d} {r['label']:<46} order {r['order']} eig err "
                  f"{r['eig_error']:.3g} delay err {r['delay_error']:.3g} T  {state} "
                  f"{r['seconds']:.1f}s", flush=True)
            for text in r["warnings"] + ([repr(r["error"])] if r["error"] else []):
                print(f"      {text[:160]}", flush=True)
            if "redrawn_wrong" in r:
                print(f"      {r['redrawn_wrong']} of {args.redraws} noise redraws not right"
                      f"{' (the warning is true of the data)' if r['true_warning'] else ''}",
                      flush=True)
            if r["right"]:
                for text in r.get("misses", []):
                    print(f"      outside its 95 % interval: {text}", flush=True)
    right = [r for r in results if r["right"]]
    silent = [r for r in results if not r["right"] and not r["loud"]]
    wrong_loud = [r for r in results if not r["right"] and r["loud"]]
    warned = [r for r in right if r["loud"]]
    false_alarms = [r for r in warned if not r.get("true_warning")]
    delays = [c for r in right for c in r["delay_covered"]]
    every = [c for r in right for c in r["covered"]]
    print(f"\n{'plants':>7} {'right':>6} {'wrong, loud':>12} {'SILENTLY WRONG':>15} "
          f"{'false alarms':>13} {'delay CI cover':>15} {'all CI cover':>13} "
          f"{'CPU s (median)':>15}")
    print(f"{len(results):>7} {len(right):>6} {len(wrong_loud):>12} {len(silent):>15} "
          f"{len(false_alarms):>13} {np.mean(delays) if delays else np.nan:>15.2f} "
          f"{np.mean(every) if every else np.nan:>13.2f} "
          f"{np.median([r['seconds'] for r in results]):>15.2f}")
    coverage_breakdown(right)
    costs = [r["cost"] for r in results if r.get("cost")]
    for name, ratios in (("delay interval widths", [w for c in costs for w in c[0]]),
                         ("eigenvalue standard errors", [e for c in costs for e in c[1]])):
        if ratios:
            low, high = np.percentile(ratios, [10, 90])
            print(f"{name}, lines fitted / drift-free default ({len(costs)} plants, both at "
                  f"the plant's order): median {np.median(ratios):.3f}, 10-90 % {low:.3f}-"
                  f"{high:.3f}, max {np.max(ratios):.3f}")
    if silent:
        print("silently wrong seeds:", ",".join(str(r["seed"]) for r in silent))
        groups = {
            "reduced models (too few modes, each found mode and every delay right)":
                [r for r in silent if r.get("reduced")],
            "the plant's order, every truth inside the reported 95 % intervals":
                [r for r in silent if r.get("within")],
            "too few modes the data do not show (the true order, fitted from the true plant, "
            "is not better at 0.05)": [r for r in silent if r.get("oracle_p", 0.0) > 0.05],
            f"too few modes the data show only at a level looser than the fit's significance "
            f"{SIGNIFICANCE:g} (the true order better at p between the two)":
                [r for r in silent if SIGNIFICANCE < r.get("oracle_p", 0.0) <= 0.05],
        }
        for text, group in groups.items():
            print(f"  of which {text}: {len(group)} "
                  f"({','.join(str(r['seed']) for r in group)})")
    if warned:
        true = [r["seed"] for r in warned if r.get("true_warning")]
        print(f"warnings on right fits: {len(warned)}, of which true (a second delay fits the "
              f"noise-free outputs exactly, or at least {_WRONG_REDRAWS} of {args.redraws} "
              f"noise redraws are not right: not a false alarm): {len(true)} "
              f"({','.join(map(str, true))})")
    if false_alarms:
        print("false-alarm seeds:", ",".join(str(r["seed"]) for r in false_alarms))

if __name__ == "__main__":
    main()
