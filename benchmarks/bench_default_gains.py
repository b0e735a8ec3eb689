"""make_controller's default gains on random plants: how often is the loop unstable on the
controller's own exact model, and does the nominal loop check say so exactly then?

Three families of random plants (2-5 states, 2-3 inputs, ``A_c`` scaled so that
``|eig(A_c)| T`` reaches ~5, the slowest mode within 0.3 of the imaginary axis, T = 1 s):
``fractional`` (each channel's delay uniform in 0-3 T: unequal fractions), ``whole`` (whole
delays 0-3 T per channel) and ``common`` (one delay for all channels).  For each plant and
linear controller: the spectral radius of its lifted loop on the plant (its own model) with the
former default gain, ``lqr_gain(plant)`` on ``(A_d, B_d)``, and with ``make_controller``'s
default (the reference-delay design for the fractional controller with unequal fractions,
``whole_delay_input_matrix`` for exact and truncated with unequal whole delays); whether an
``UnstableLoopWarning`` fired exactly when the radius is >= 1; and the closed-loop cost ratio
(new / former default, 200 steps from a random start) where both are stable.

    python benchmarks/bench_default_gains.py [--plants 300] [--seed 7]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from controllers import (
    LINEAR_CONTROLLER_NAMES,
    UnstableLoopWarning,
    lqr_gain,
    make_controller,
    spectral_radius,
)
from dmdidc import DelayedPlant
from simulations import simulate_closed_loop

FAMILIES = ("fractional", "whole", "common")


def random_plant(rng: np.random.Generator, family: str) -> DelayedPlant:
    n, m = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    A_c = rng.standard_normal((n, n)) * rng.uniform(2.0, 5.0) / np.sqrt(n)
    A_c -= (np.max(np.linalg.eigvals(A_c).real) - rng.uniform(-0.3, 0.3)) * np.eye(n)
    if family == "fractional":
        delay = rng.uniform(0.0, 3.0, m)
    elif family == "whole":
        delay = rng.integers(0, 4, m).astype(float)
    else:
        delay = float(rng.uniform(0.0, 3.0))
    return DelayedPlant.from_continuous(A_c, rng.standard_normal((n, m)), delay=delay, dt=1.0)


def built(name: str, plant: DelayedPlant, K=None):
    """The controller and whether it warned (UnstableLoopWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnstableLoopWarning)
        controller = make_controller(name, plant, K)
    return controller, any(issubclass(w.category, UnstableLoopWarning) for w in caught)


def cost(plant: DelayedPlant, controller, seed: int) -> float:
    x0 = np.random.default_rng(seed).standard_normal(plant.n_states)
    return simulate_closed_loop(plant, controller, x0, 200).cost


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plants", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"{'family':<11}{'controller':<11}{'unstable: former':>17}{'default':>9}"
          f"{'warned':>8}{'warn != unstable':>18}{'cost ratio (median, max)':>27}")
    for family in FAMILIES:
        rng = np.random.default_rng(args.seed)
        plants = [random_plant(rng, family) for _ in range(args.plants)]
        for name in LINEAR_CONTROLLER_NAMES:
            former = default = warned = wrong = 0
            ratios = []
            for index, plant in enumerate(plants):
                old, _ = built(name, plant, lqr_gain(plant))
                new, flagged = built(name, plant)
                rho_old, rho_new = spectral_radius(plant, old), spectral_radius(plant, new)
                former += rho_old >= 1
                default += rho_new >= 1
                warned += flagged
                wrong += flagged != (rho_new >= 1 - 1e-10)
                if rho_old < 1 and rho_new < 1 and not np.allclose(old.K, new.K):
                    ratios.append(cost(plant, new, index) / cost(plant, old, index))
            spread = (f"{np.median(ratios):.3f}, {np.max(ratios):.3f} (n={len(ratios)})"
                      if ratios else "same gain")
            print(f"{family:<11}{name:<11}{former:>17}{default:>9}{warned:>8}{wrong:>18}"
                  f"{spread:>27}")


if __name__ == "__main__":
    main()
