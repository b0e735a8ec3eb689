"""The practitioner's workflow: data object, fit, compare, resid, save, control.

A heated tank around 350 K: the heater power (kW) reaches the water 1.3 sampling periods late.
The recorded file has units, an operating point and a few lost samples; the model is fitted on
one experiment, validated on another, saved with its names and intervals and exported to
python-control.
"""

import warnings

import numpy as np

from dmdidc import DelayedPlant, DMDidc, IdData, random_excitation

rng = np.random.default_rng(0)
tank = DelayedPlant.from_continuous([[-0.2, 0.1], [0.05, -0.3]], [[0.8], [0.1]],
                                    delay=1.3, dt=1.0)
x_op, u_op = np.array([350.0, 340.0]), np.array([5.0])


def record(seed):
    U = random_excitation(1, 800, rng=seed)
    X = tank.simulate(np.zeros(2), U) + 0.02 * rng.standard_normal((2, 801))
    return X + x_op[:, None], U + u_op[:, None]


(X1, U1), (X2, U2) = record(1), record(2)
X1[0, [120, 121, 400]] = np.nan                              # lost samples
data = IdData(X1, U1, dt=1.0, state_names=["T_water", "T_wall"], state_units=["K", "K"],
              input_names=["heater"], input_units=["kW"], operating_point=(x_op, u_op),
              missing="drop", source="tank rig, run 1")
validation = IdData(X2, U2, dt=1.0, state_names=data.state_names, state_units=["K", "K"],
                    input_names=["heater"], input_units=["kW"], operating_point=(x_op, u_op))
print(data)
print(data.missing_report)

with warnings.catch_warnings():
    warnings.simplefilter("error")                  # a failed validation check would stop us
    est = DMDidc(max_delay=3).fit(data)
print("delay:", est.delay_ci())

comparison = est.compare(validation)                # simulation on data the fit never saw
print(comparison)
comparison.plot("compare.png")
correlations = est.resid(validation)
print(correlations)
correlations.plot("resid.png")

path = est.save("tank.json")                        # names, units, intervals, provenance
model = DelayedPlant.load(path)
print(model.info.state_names, model.info.intervals["delay"]["high"],
      model.info.provenance["data"]["source"])
print(model.to_control())                           # python-control, exact with the delay
