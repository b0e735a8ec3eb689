"""DMDidc on inputs that are *sampled*, not held: how far the delay reads short.

DMDidc measures the delay from a zero-order hold (``u_k`` acts on ``[kT, (k+1)T)``).  A log
that samples an input varying within the period gives the plant what lies between the
samples; for a smooth input that is close to a hold of the signal half a period later, so the
delay reads up to half a period short, and the data cannot tell the two apart.  Each seed
draws a random stable plant (2 states, a complex pair, 1 input, T = 0.5 s) and a true delay
uniform in (0.3 T, 2.5 T); the input is a cubic spline through standard-normal knots every
``--knots`` periods (smooth within a period), the plant is integrated by scipy's ``solve_ivp``
(rtol 1e-10) with the delayed spline as its input, and the states are sampled noise-free.
Printed per seed: the true delay, the estimate, how much shorter it is (in periods), and the
checks the fit failed (whether it said something was wrong, if not why).

    python benchmarks/bench_sampled_inputs.py [--seeds 10] [--knots 3] [--samples 3000]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

from dmdidc import DMDidc

T = 0.5


def record(seed: int, knots: int, samples: int) -> tuple[np.ndarray, np.ndarray, float]:
    """States sampled from the continuous plant driven by a delayed smooth input, the input
    sampled at the same instants, and the true delay (s)."""
    rng = np.random.default_rng(seed)
    A = np.array([[-0.3, 1.0], [-1.0, -0.4]]) * rng.uniform(0.5, 1.5)
    B = rng.standard_normal(2)
    delay = rng.uniform(0.3, 2.5) * T
    times = np.arange(-40, samples + 40, knots) * T
    spline = CubicSpline(times, rng.standard_normal(times.size))
    solution = solve_ivp(lambda t, x: A @ x + B * spline(t - delay), (0.0, samples * T),
                         np.zeros(2), t_eval=np.arange(samples + 1) * T, rtol=1e-10,
                         atol=1e-12, max_step=T / 4)
    return solution.y, spline(np.arange(samples) * T)[None], delay


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--knots", type=int, default=3,
                        help="periods between the spline's knots (larger: smoother input)")
    parser.add_argument("--samples", type=int, default=3000)
    args = parser.parse_args(argv)
    short = []
    for seed in range(args.seeds):
        X, U, delay = record(seed, args.knots, args.samples)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            estimate = DMDidc(max_delay=6).fit(X, U, dt=T).delay[0]
        failed = sorted({str(w.message).split("'")[1] for w in caught
                         if str(w.message).startswith("check '")})
        short.append((delay - estimate) / T)
        print(f"seed {seed}: true {delay / T:.3f} T, estimate {estimate / T:.3f} T, short by "
              f"{short[-1]:.3f} T; failed checks: {', '.join(failed) or 'none'}")
    print(f"short by {min(short):.3f} to {max(short):.3f} T (median {np.median(short):.3f} T) "
          f"over {args.seeds} plants")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
