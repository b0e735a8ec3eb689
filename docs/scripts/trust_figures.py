"""Figures of the "When to trust a fit" page: residual analysis of a well-posed fit and of a fit
to partial measurements (``y = C x``, fewer signals than states).

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/trust_figures.py [--out docs/figures]
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from dmdidc import DMDidc
from simulations.studies.data_kinds import make_data, random_plant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "figures"))
    out = Path(parser.parse_args().out)
    for kind in ("white", "partial"):
        data = make_data(kind, random_plant(1000), rng=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = DMDidc(max_delay=4).fit(data.X, data.U, dt=0.5)
        path = est.diagnostics_.plot(out / f"residuals_{kind}.png")
        print(f"wrote {out / f'residuals_{kind}.png'}: failed checks "
              f"{[c.name for c in est.diagnostics_.failed]}")
        del path


if __name__ == "__main__":
    main()
