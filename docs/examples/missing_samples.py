"""Lost samples: refuse, interpolate or drop, and what each does to the fit.

Ten gaps of three samples are cut out of a recording.  ``missing="drop"`` splits the recording
at the gaps (the regression never joins states that are not one period apart);
``missing="interpolate"`` fills them with straight lines, which the model then tries to explain.
Both report what they did.  Here both models predict validation data well (the gaps are short
and the plant slow), but the fit's own checks flag the invented values of the interpolation
(a diagnostic warning, printed below), while the split data pass them.
"""

import warnings

import numpy as np

from _toolbox.plotting import new_figure, save_figure
from dmdidc import DelayedPlant, DMDidc, IdData, NonFiniteError, random_excitation

rng = np.random.default_rng(3)
plant = DelayedPlant.from_continuous([[-0.3, 1.0], [-1.0, -0.3]], [[1.0], [0.5]], delay=0.7,
                                     dt=0.5)
U = random_excitation(1, 1200, rng=1)
X = plant.simulate(np.zeros(2), U) + 0.01 * rng.standard_normal((2, 1201))
V = random_excitation(1, 600, rng=2)
validation = IdData(plant.simulate(np.zeros(2), V), V, dt=0.5)
for start in rng.choice(np.arange(10, 1180), 10, replace=False):
    X[0, start:start + 3] = np.nan

try:
    IdData(X, U, dt=0.5)
except NonFiniteError as error:
    print("refused:", error)

fig = new_figure((6.5, 3.2))
ax = fig.add_subplot()
ax.plot(0.5 * np.arange(1201), X[0], color="0.3", lw=0.8)
for policy in ("drop", "interpolate"):
    data = IdData(X, U, dt=0.5, missing=policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # the failed checks are printed below
        est = DMDidc(max_delay=3).fit(data)
    fits = est.compare(validation).fit_percent
    print(f"{policy:>11}: {data.missing_report}")
    print(f"{'':>11}  delay {est.delay[0]:.3f} s (true 0.7), validation fit "
          f"{np.round(fits, 2)} %, failed checks: {[c.name for c in est.diagnostics_.failed]}")
gaps = np.flatnonzero(np.isnan(X[0]))
ax.plot(0.5 * gaps, np.zeros_like(gaps, dtype=float), "|", color="C3", ms=12,
        label="lost samples")
ax.set_xlabel("time [s]")
ax.set_ylabel("x0")
ax.legend()
save_figure(fig, "gaps.png")
