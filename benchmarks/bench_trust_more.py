"""Right or loud, round 2: data kinds the audit of ``bench_trust.py`` had not tried.

Each kind departs from the well-posed experiment (white inputs, every state, open loop, white
measurement noise at 30 dB, K = 3000) in one way practitioners meet; the plants are those of
``bench_trust.py`` (``random_plant(1000 + seed)``: 3 states, 2 inputs, delays 0.2-2.8 T,
T = 0.5 s) and the fit is the default ``DMDidc(max_delay=4)``.  *Right* is the harness's (every
delay within 0.15 T, every eigenvalue of ``A_c`` within 25 % of the true plant's) unless the kind
says otherwise; *loud* a warning or a ValueError.  Kinds marked *well-posed* must not warn.

  saturation     the plant receives clip(u, -1, 1) (u standard normal: 32 % of the samples
                 clipped); the data log the commanded u
  rate_limit     the applied input moves at most 0.5 per sample towards the command
  beyond_bound   every delay 5.5-6.5 T, above max_delay = 4: no right answer (must be loud)
  jitter         each command arrives after its channel's delay +- 0.3 T (uniform, per
                 sample, never before it is issued): right = the nominal delay (the mean)
  delay_jump     each channel's delay grows by 0.5-1 T at mid-record: two plants; right only
                 for the first half's plant (an average of the two is wrong)
  adc8, adc10    noise-free states read by an 8- / 10-bit ADC spanning each state's range
                 (well-posed: the rounding is a white noise of 36-48 dB; must not warn)
  adc8_noisy     30 dB noise, then the 8-bit ADC (well-posed)
  drift          each state's sensor drifts linearly by 1 x its rms over the record (random sign)
  steps          piecewise constant inputs: 5 random steps per channel (poor excitation)
  collinear      u2 = u1 + 1 % independent white noise
  process_noise  process noise (0.1 x the states' rms per step), no measurement noise
                 (well-posed: must not warn)
  student_t3     Student t (3 degrees of freedom) measurement noise of the 30 dB variance
  stuck          one state's sensor frozen at its last value for 10 % of the record
  lagging        one state's sensor one sample behind the others
  short150, short300  white inputs, K = 150 / 300

``--output`` runs the kinds that concern outputs (adc8, drift, student_t3, stuck, lagging,
saturation) on ``OutputDMDidc`` with the random plants, sensors and data of
``bench_output_loud.py`` (order 1-5, 1-3 inputs and outputs, 10-40 dB, K = 1000-8000); right
there: the order, every eigenvalue within 10 % and every delay within 0.1 T.

``--estimator ls`` (or ``huber``, ``iv``) fits the state kinds with that estimator instead of
the default (a well-posed kind must not warn for least squares either when it is right for
it: ``process_noise``, ``adc10``; with measurement noise least squares is biased).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_trust_more.py [--seeds 10]
      [--kinds stuck drift ...] [--output] [--estimator ls] [--verbose]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dmdidc import DMDidc
from simulations.studies.data_kinds import (
    IdentificationData,
    _arrival_states,
    _eigenvalue_error,
    _stuck,
    assess,
    make_data,
    random_plant,
)

T, R, K = 0.5, 4, 3000
WELL_POSED = {"adc8", "adc10", "adc8_noisy", "process_noise"}
NO_RIGHT_ANSWER = {"beyond_bound"}
KINDS = ("saturation", "rate_limit", "beyond_bound", "jitter", "delay_jump", "adc8", "adc10",
         "adc8_noisy", "drift", "steps", "collinear", "process_noise", "student_t3", "stuck",
         "lagging", "short150", "short300")
OUTPUT_KINDS = ("open", "adc8", "drift", "student_t3", "stuck", "lagging", "saturation")


def rms(X: np.ndarray) -> np.ndarray:
    return np.sqrt(np.mean(X ** 2, axis=1, keepdims=True))


def forced(plant, U: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """States from rest of ``x_{k+1} = A_d x_k + sum_j B^(j) u_{k-j} + w_k``."""
    n, K_ = plant.n_states, U.shape[1]
    forcing = np.zeros((n, K_)) if w is None else w.copy()
    for j, B in enumerate(plant.B_blocks):
        forcing[:, j:] += B @ U[:, :K_ - j]
    X = np.zeros((n, K_ + 1))
    for k in range(K_):
        X[:, k + 1] = plant.A_d @ X[:, k] + forcing[:, k]
    return X


def adc(X: np.ndarray, bits: int) -> np.ndarray:
    low, high = X.min(axis=1, keepdims=True), X.max(axis=1, keepdims=True)
    step = (high - low) / (2 ** bits - 1)
    return low + step * np.round((X - low) / step)


def noisy(X: np.ndarray, rng: np.random.Generator, snr_db: float = 30.0) -> np.ndarray:
    return X + 10 ** (-snr_db / 20) * rms(X) * rng.standard_normal(X.shape)


def lagging(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    X = X.copy()
    i = int(rng.integers(X.shape[0]))
    X[i, 1:] = X[i, :-1].copy()
    return X


def drift(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    ramp = np.linspace(0.0, 1.0, X.shape[1])
    return X + rms(X) * rng.choice([-1.0, 1.0], (X.shape[0], 1)) * ramp


def student(X: np.ndarray, rng: np.random.Generator, snr_db: float = 30.0) -> np.ndarray:
    e = rng.standard_t(3, X.shape) / np.sqrt(3.0)             # unit variance
    return X + 10 ** (-snr_db / 20) * rms(X) * e


def rate_limited(U: np.ndarray, step: float) -> np.ndarray:
    out = np.zeros_like(U)
    last = np.zeros(U.shape[0])
    for k in range(U.shape[1]):
        last = last + np.clip(U[:, k] - last, -step, step)
        out[:, k] = last
    return out


def steps(m: int, K_: int, rng: np.random.Generator, count: int = 5) -> np.ndarray:
    U = np.zeros((m, K_))
    for j in range(m):
        edges = np.sort(rng.choice(np.arange(1, K_), count, replace=False))
        for edge, level in zip(np.r_[0, edges], rng.standard_normal(count + 1), strict=True):
            U[j, edge:] = level
    return U


def make(kind: str, seed: int):
    """``(data, plant)`` of ``kind`` for ``seed``: the plant the fit is judged against."""
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    if kind == "beyond_bound":
        plant = random_plant(1000 + seed, max_delay=R + 3, delay_periods=(R + 1.5, R + 2.5))
    else:
        plant = random_plant(1000 + seed)
    n, m = plant.n_states, plant.n_inputs
    samples = {"short150": 150, "short300": 300}.get(kind, K)
    U = rng.standard_normal((m, samples))
    if kind == "steps":
        U = steps(m, samples, rng)
    elif kind == "collinear":
        U[1] = U[0] + 0.01 * rng.standard_normal(samples)
    applied = {"saturation": np.clip(U, -1.0, 1.0),
               "rate_limit": rate_limited(U, 0.5)}.get(kind, U)
    if kind in ("stuck", "delay_jump"):       # kinds of simulations.studies.data_kinds
        name = "stuck_sensor" if kind == "stuck" else kind
        return make_data(name, plant, samples=samples, rng=rng), plant
    if kind == "jitter":
        # never before the command (a delay below 0.3 T jitters between 0 and 2 x itself)
        arrivals = np.maximum(np.arange(samples) * T + plant.delay[:, None]
                              + rng.uniform(-0.3, 0.3, (m, samples)) * T, np.arange(samples) * T)
        X = _arrival_states(plant, U, arrivals)
    elif kind == "process_noise":
        scale = rms(forced(plant, U))
        X = forced(plant, U, 0.1 * scale * rng.standard_normal((n, samples)))
    else:
        X = forced(plant, applied)
    if kind in ("adc8", "adc10"):
        X = adc(X, 8 if kind == "adc8" else 10)
    elif kind == "adc8_noisy":
        X = adc(noisy(X, rng), 8)
    elif kind == "student_t3":
        X = student(X, rng)
    elif kind != "process_noise":
        X = noisy(X, rng)
    if kind == "drift":
        X = drift(X, rng)
    elif kind == "lagging":
        X = lagging(X, rng)
    return IdentificationData(kind, X, U), plant


def default_fit(data: IdentificationData, estimator: str = "auto") -> DMDidc:
    return DMDidc(max_delay=R, estimator=estimator).fit(data.X, data.U, dt=T)


def state_row(kind: str, seeds: range, verbose: bool, estimator: str = "auto") -> tuple:
    outcomes = []
    for seed in seeds:
        data, plant = make(kind, seed)
        start = time.process_time()
        o = assess(lambda d: default_fit(d, estimator), data, plant)
        outcomes.append(o)
        if verbose or (o.silently_wrong or (kind in WELL_POSED and o.loud)):
            state = "right" if o.right else "loud" if o.loud else "SILENTLY WRONG"
            print(f"  {kind:<13} seed {seed:2d}: {state}{', warned' if o.right and o.loud else ''}"
                  f" eig {o.eigenvalue_error:.3f} delay {o.delay_error:.3f} T "
                  f"{time.process_time() - start:.1f}s", flush=True)
            for text in o.messages:
                print(f"      {text[:160]}", flush=True)
    return (kind, len(outcomes), sum(o.right for o in outcomes),
            sum(o.loud for o in outcomes), sum(o.silently_wrong for o in outcomes),
            sum(o.right and o.loud for o in outcomes))


def output_data(kind: str, seed: int):
    """``(Y, U, c)`` of ``kind`` on the experiment of ``bench_output_loud.case(seed)``."""
    from bench_output_loud import case

    c = case(seed)
    rng = np.random.default_rng([seed, 100 + OUTPUT_KINDS.index(kind)])
    Y, clean = c["Y"], c["clean"]
    level = np.std(Y - clean, axis=1, keepdims=True)
    if kind == "adc8":
        Y = adc(clean, 8)
    elif kind == "drift":
        Y = drift(Y, rng)
    elif kind == "student_t3":
        Y = clean + level * rng.standard_t(3, clean.shape) / np.sqrt(3.0)
    elif kind == "stuck":
        Y = _stuck(Y, rng)
    elif kind == "lagging" and Y.shape[0] > 1:
        Y = lagging(Y, rng)
    elif kind == "saturation":
        x0 = c["X"][:, 0]
        X = c["plant"].simulate(x0, np.clip(c["U"], -1.0, 1.0))
        clean = c["C"] @ X[:, :c["U"].shape[1]]
        Y = clean + level * rng.standard_normal(clean.shape)
    return Y, c["U"], c


def output_row(kind: str, seeds: range, verbose: bool) -> tuple:
    from dmdidc import OutputDMDidc

    right = loud = silent = warned = 0
    for seed in seeds:
        Y, U, c = output_data(kind, seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                est, error = OutputDMDidc(max_delay=R).fit(Y, U, dt=T), None
            except ValueError as exc:
                est, error = None, exc
        messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        is_loud = bool(messages) or error is not None
        is_right = False
        if est is not None and est.order_ == c["n"]:
            eig = _eigenvalue_error(est.eigenvalues_, np.linalg.eigvals(c["plant"].A_c))
            delay = float(np.max(np.abs(est.delay - c["plant"].delay)) / T)
            is_right = eig < 0.1 and delay < 0.1
        right += is_right
        loud += is_loud
        silent += not is_right and not is_loud
        warned += is_right and is_loud
        if verbose or (not is_right and not is_loud):
            state = "right" if is_right else "loud" if is_loud else "SILENTLY WRONG"
            print(f"  output {kind:<10} seed {seed:2d} {c['label']}: {state} order "
                  f"{None if est is None else est.order_}", flush=True)
            for text in messages + ([repr(error)] if error else []):
                print(f"      {text[:160]}", flush=True)
    return (f"output {kind}", len(seeds), right, loud, silent, warned)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--output", action="store_true", help="OutputDMDidc's kinds instead")
    parser.add_argument("--output-kinds", nargs="+", default=list(OUTPUT_KINDS),
                        choices=OUTPUT_KINDS)
    parser.add_argument("--estimator", default="auto", choices=["auto", "ls", "iv", "huber"],
                        help="the state kinds' estimator (default: the default fit's)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    seeds = range(args.seeds)
    if args.output:
        rows = [output_row(kind, seeds, args.verbose) for kind in args.output_kinds]
    else:
        rows = [state_row(kind, seeds, args.verbose, args.estimator) for kind in args.kinds]
    print(f"\n{'kind':<18} {'fits':>5} {'right':>6} {'loud':>5} {'SILENTLY WRONG':>15} "
          f"{'warned right':>13}")
    for kind, total, right, loud, silent, warned in rows:
        mark = " (well-posed)" if kind in WELL_POSED else (
            " (no right answer)" if kind in NO_RIGHT_ANSWER else "")
        print(f"{kind:<18} {total:>5} {right:>6} {loud:>5} {silent:>15} {warned:>13}{mark}",
              flush=True)


if __name__ == "__main__":
    main()
