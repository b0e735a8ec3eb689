"""OutputDMDidc against N4SID (SIPPY, nfoursid) on partial measurements with fractional delays.

Random stable plants (3 states, 2 inputs, delays 0.2-2.8 T, T = 0.5 s) seen through 2 random
sensors, white inputs, 20 dB white output noise.  The peers have no delay model: they get the
order of the minimal realization including the delay states (n + sum_i ceil(delay_i / T)), an
oracle choice in their favour; their plant eigenvalues are the n of largest modulus (the delay
states sit at z = 0).  Errors: the largest relative error of the continuous eigenvalues and of
the DC gain; times are CPU seconds (``process_time``, fair on a shared machine) of one fit
(the least of ``--repeat`` fits).

    python benchmarks/bench_output.py [--seeds 10] [--samples 4000] [--snr 20] [--repeat 1]
                                      [--skip nfoursid]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from dmdidc import OutputDMDidc, random_excitation
from simulations.studies.data_kinds import random_plant

T, R = 0.5, 4


def _data(seed: int, samples: int, snr_db: float):
    rng = np.random.default_rng(seed)
    plant = random_plant(rng, n_states=3, n_inputs=2, dt=T, max_delay=R)
    U = random_excitation(2, samples, rng=rng)
    C = rng.standard_normal((2, 3))
    Y = C @ plant.simulate(rng.standard_normal(3), U)[:, :samples]
    Y = Y + Y.std(axis=1, keepdims=True) * 10 ** (-snr_db / 20) * rng.standard_normal(Y.shape)
    return plant, C, Y, U


def _errors(plant, C, eigenvalues_c, dc_gain) -> tuple[float, float]:
    truth = np.linalg.eigvals(plant.A_c)
    eig = max(np.min(np.abs(eigenvalues_c - lam)) / abs(lam) for lam in truth)
    true_dc = C @ np.linalg.solve(-plant.A_c, plant.B_c)
    return float(eig), float(np.max(np.abs(dc_gain - true_dc)) / np.max(np.abs(true_dc)))


def _discrete_peer(plant, C, A, B, Cm, D) -> tuple[float, float]:
    values = np.linalg.eigvals(A)
    plant_modes = values[np.argsort(-np.abs(values))][:3]
    dc = Cm @ np.linalg.solve(np.eye(A.shape[0]) - A, B) + D
    return _errors(plant, C, np.log(plant_modes.astype(complex)) / T, dc)


def ours(plant, C, Y, U):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
    dc = est.C @ np.linalg.solve(-est.A_c, est.B_c) + est.D
    eig, dc_err = _errors(plant, C, est.eigenvalues_, dc)
    return eig, dc_err, float(np.max(np.abs(est.delay - plant.delay)) / T)


def sippy(plant, C, Y, U):
    from sippy_unipi.OLSims_methods import OLSims
    order = 3 + int(np.sum(np.ceil(plant.delay / T)))
    A, B, Cm, D, *_ = OLSims(Y, U, 10, weights="N4SID", fixed_order=order)
    return (*_discrete_peer(plant, C, np.asarray(A), np.asarray(B), np.asarray(Cm),
                            np.asarray(D)), np.nan)


def nfoursid(plant, C, Y, U):
    import pandas as pd
    from nfoursid.nfoursid import NFourSID
    order = 3 + int(np.sum(np.ceil(plant.delay / T)))
    frame = pd.DataFrame(np.vstack([Y, U]).T, columns=["y0", "y1", "u0", "u1"])
    model = NFourSID(frame, output_columns=["y0", "y1"], input_columns=["u0", "u1"],
                     num_block_rows=10)
    model.subspace_identification()
    ss, _ = model.system_identification(rank=order)
    return (*_discrete_peer(plant, C, ss.a, ss.b, ss.c, ss.d), np.nan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--snr", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=1,
                        help="fits per plant and method, the least CPU time kept (a shared "
                             "machine's load only ever adds time)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["SIPPY", "nfoursid"],
                        help="peers to leave out (nfoursid needs ~10 GB at K = 1e5)")
    args = parser.parse_args()
    methods = {"OutputDMDidc": ours, "SIPPY N4SID": sippy, "nfoursid": nfoursid}
    methods = {k: v for k, v in methods.items() if k.split()[0] not in args.skip}
    results = {name: [] for name in methods}
    for seed in range(args.seeds):
        data = _data(seed, args.samples, args.snr)
        for name, method in methods.items():
            seconds = []
            try:
                for _ in range(args.repeat):
                    start = time.process_time()
                    errors = method(*data)
                    seconds.append(time.process_time() - start)
            except ImportError as exc:
                print(f"{name}: not installed ({exc.name}); skipped")
                methods = {k: v for k, v in methods.items() if k != name}
                continue
            results[name].append((*errors, min(seconds)))
    print(f"\n{args.seeds} random plants, 2 of 3 states measured, K = {args.samples}, "
          f"{args.snr:g} dB")
    print(f"{'method':14s} {'eig err med':>11s} {'eig err max':>11s} {'DC err med':>10s} "
          f"{'delay err max':>13s} {'CPU s/fit':>9s} {'CPU / ours':>10s}")
    base = np.median([r[3] for r in results["OutputDMDidc"]])
    for name, rows in results.items():
        if not rows:
            continue
        rows = np.array(rows)
        delay = f"{np.nanmax(rows[:, 2]):.3f} T" if np.isfinite(rows[:, 2]).any() else "no model"
        cpu = np.median(rows[:, 3])
        print(f"{name:14s} {np.median(rows[:, 0]):11.4f} {np.max(rows[:, 0]):11.4f} "
              f"{np.median(rows[:, 1]):10.4f} {delay:>13s} {cpu:9.3f} {cpu / base:9.2f}x")


if __name__ == "__main__":
    main()
