"""Figure of the "Identify from outputs" page: the canonical correlations of partial measurements,
the noise edge and the chosen order.

Run:  OPENBLAS_NUM_THREADS=1 .venv/bin/python docs/scripts/output_figures.py [--out docs/figures]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from _toolbox.plotting import save_figure
from dmdidc import OutputDMDidc, random_excitation
from simulations.studies.data_kinds import random_plant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "figures"))
    out = Path(parser.parse_args().out)
    rng = np.random.default_rng(0)
    plant = random_plant(rng, n_states=3, n_inputs=2, dt=0.5, max_delay=4)
    U = random_excitation(2, 4000, rng=rng)
    C = rng.standard_normal((2, 3))
    Y = C @ plant.simulate(rng.standard_normal(3), U)[:, :-1]
    Y += 0.1 * Y.std(axis=1, keepdims=True) * rng.standard_normal(Y.shape)     # 20 dB
    est = OutputDMDidc(max_delay=4).fit(Y, U, dt=0.5)
    fig = est.plot_singular_values()
    fig.axes[0].set_title("3 states, 2 sensors, 20 dB")
    save_figure(fig, out / "output_singular_values.png")
    print(f"wrote {out / 'output_singular_values.png'}: {est.order_rule_}")


if __name__ == "__main__":
    main()
