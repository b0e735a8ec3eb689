"""How long to record: the delay's confidence interval against the number of samples.

The half-width of the 95 % interval of a fractional delay shrinks like one over the square root
of the samples; the figure shows it for two noise levels, with the true delay inside every
interval.
"""

import warnings

import numpy as np

from _toolbox.plotting import new_figure, save_figure
from dmdidc import DelayedPlant, DMDidc, random_excitation

plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
lengths = np.array([200, 400, 800, 1600])
fig = new_figure((6.0, 3.4))
ax = fig.add_subplot()
for noise in (0.05, 0.2):
    widths = []
    for K in lengths:
        rng = np.random.default_rng(K)
        U = random_excitation(1, K, rng=rng)
        X = plant.simulate([0.0], U) + noise * rng.standard_normal((1, K + 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            interval = DMDidc(max_delay=3).fit(X, U, dt=1.0).delay_ci(0.95)
        widths.append(float(interval.half_width[0]))
        inside = interval.low[0] <= 1.5 <= interval.high[0]
        print(f"noise {noise}, K = {K:5d}: {interval.lines()[0]}  (true delay inside: {inside})")
    ax.loglog(lengths, widths, "o-", label=f"noise std {noise}")
ax.loglog(lengths, widths[0] * np.sqrt(lengths[0] / lengths), ":", color="0.5",
          label="1 / sqrt(K)")
ax.set_xlabel("samples K")
ax.set_ylabel("95 % half-width of the delay [s]")
ax.legend()
save_figure(fig, "delay_interval.png")
