"""OutputDMDidc on many short experiments: CPU time per sample against one long record.

One plant (2 states, 1 output, 2 inputs with delays 2.5 s and 3 s, T = 2 s, max_delay = 4,
order 2, output noise sd 0.05): ``E`` experiments of ``--samples`` samples each (white
excitation, zero initial state), and one record of the same ``E * samples`` samples.  Each fit
estimates one initial state per experiment (``E n`` nuisance parameters beside the plant's):
their elimination experiment by experiment (:mod:`dmdidc.output.arrow`) keeps the cost linear
in ``E``.  Prints, per ``E``: CPU seconds of ``OutputDMDidc(max_delay=4, order=2).fit``, CPU
microseconds per sample, the same for the long record, and their ratio (the best of
``--repeat`` fits; CPU time, as the machine is shared).  A single record of 200 samples is too
short for the subspace step (refused, loudly: the row says why).

    python benchmarks/bench_output_many_experiments.py [--experiments 1 10 100 300 1000 3000]
        [--samples 200] [--repeat 1]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import cpu_best_time

from dmdidc import DelayedPlant, OutputDMDidc, random_excitation

T = 2.0


def _plant() -> DelayedPlant:
    return DelayedPlant.from_continuous(A_c=[[-0.1, 1.1], [-1.1, -0.1]],
                                        B_c=[[1, -1], [-1, 2]], delay=[2.5, 3.0], dt=T,
                                        max_delay=4)


def records(count: int, samples: int, rng: np.random.Generator
            ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``count`` experiments of ``samples`` samples: outputs (1, samples), inputs (2, samples)."""
    plant = _plant()
    Us = [random_excitation(2, samples, rng=rng) for _ in range(count)]
    Ys = [plant.simulate(np.zeros(2), U)[:1, :samples] + 0.05 * rng.standard_normal(
        (1, samples)) for U in Us]
    return Ys, Us


def fit_seconds(Ys: list[np.ndarray], Us: list[np.ndarray], repeat: int
                ) -> tuple[float, np.ndarray]:
    """Best CPU seconds of ``repeat`` fits, and the delays of the last."""
    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return OutputDMDidc(max_delay=4, order=2).fit(Ys, Us, dt=T)
    seconds, est = cpu_best_time(fit, repeat)
    return seconds, est.delay


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, nargs="+",
                        default=[1, 10, 100, 300, 1000, 3000])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"{'E':>6} {'samples':>9} {'CPU s':>8} {'us/sample':>10} {'long s':>8} "
          f"{'long us/sample':>15} {'ratio':>6}  delays (s; true 2.5, 3)")
    for count in args.experiments:
        rng = np.random.default_rng(args.seed)
        Ys, Us = records(count, args.samples, rng)
        total = count * args.samples
        try:
            seconds, delays = fit_seconds(Ys, Us, args.repeat)
        except ValueError as exc:       # one record of 200 samples: too short for the subspace
            print(f"{count:>6} {total:>9} refused: {type(exc).__name__}: {exc}", flush=True)
            continue
        if count == 1:
            long_seconds = seconds
        else:
            long_Ys, long_Us = records(1, total, rng)
            long_seconds, _ = fit_seconds(long_Ys, long_Us, args.repeat)
        print(f"{count:>6} {total:>9} {seconds:>8.3f} {seconds / total * 1e6:>10.2f} "
              f"{long_seconds:>8.3f} {long_seconds / total * 1e6:>15.2f} "
              f"{seconds / long_seconds:>6.2f}  {np.round(delays, 3).tolist()}", flush=True)


if __name__ == "__main__":
    main()
