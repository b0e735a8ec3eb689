"""``DMDidc(svd_rank=r).partial_fit`` (streamed POD) against the batch ``fit`` and one thin SVD.

The plant and sensors of ``bench_pod.py`` (6 states, 2 inputs, ``n`` sensors, 1 % noise, ``K``
samples).  Streamed in ``--chunks`` chunks (each call solves the model, as ``partial_fit``
does); printed per size: wall time and tracemalloc peak of the stream, of the batch
``DMDidc(max_delay=5, svd_rank=6).fit`` and of ``np.linalg.svd(X, full_matrices=False)``, their
ratios, and the agreement of the streamed fit with the batch fit: the sine of the largest
principal angle between the POD spans, the largest relative eigenvalue difference and the
largest delay difference.  The stream's peak excludes the data (it sees one chunk at a time).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_pod_stream.py \\
          [--sizes 2000,4000 100000,300] [--chunks 4]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _common import timed
from bench_pod import data, eigenvalue_error

from dmdidc import DMDidc


def run(n: int, K: int, chunks: int, repeats: int) -> None:
    plant, X, U = data(n, K)
    size = -(-K // chunks)

    def batch():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return DMDidc(max_delay=5, svd_rank=6).fit(X, U, dt=plant.dt)

    def stream():
        est = DMDidc(max_delay=5, svd_rank=6)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for a in range(0, K, size):
                est.partial_fit(X[:, a:a + size + 1], U[:, a:a + size], dt=plant.dt)
        return est

    svd, _, svd_peak, _ = timed(lambda: np.linalg.svd(X, full_matrices=False), repeats)
    best_b, _, peak_b, reference = timed(batch, repeats)
    best_s, _, peak_s, streamed = timed(stream, repeats)
    angle = np.linalg.norm(reference.modes_ - streamed.modes_ @ (streamed.modes_.T
                                                                 @ reference.modes_), 2)
    eig = eigenvalue_error(np.linalg.eigvals(streamed.A_c), np.linalg.eigvals(reference.A_c))
    print(f"n={n:6d} K={K:5d} (X {X.nbytes / 2**20:6.0f} MB) in {chunks} chunks", flush=True)
    print(f"    thin SVD            {svd:7.3f} s  peak {svd_peak:6.0f} MB", flush=True)
    print(f"    fit (batch)         {best_b:7.3f} s  peak {peak_b:6.0f} MB  x{best_b / svd:5.2f} "
          f"of the SVD", flush=True)
    print(f"    partial_fit stream  {best_s:7.3f} s  peak {peak_s:6.0f} MB  x{best_s / svd:5.2f} "
          f"of the SVD, x{best_s / best_b:5.2f} of the batch fit", flush=True)
    print(f"    stream vs batch: subspace angle {angle:.1e}, eigenvalues {eig:.1e} (relative), "
          f"delays {np.max(np.abs(streamed.delay - reference.delay)):.1e} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["2000,4000", "100000,300"],
                        help="n,K pairs (sensors, samples)")
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    for size in args.sizes:
        n, K = (int(v) for v in size.split(","))
        run(n, K, args.chunks, args.repeats)


if __name__ == "__main__":
    main()
