"""Figure 9.1 in small: the truncated and the fractional-delay controller on the true plant.

The plant of eq. (9.76) with a delay of 1.5 periods is identified from excitation data; an LQR
gain is designed on the identified model; the controller that predicts over the whole delay only
(truncated) destabilizes the true plant, the one that also predicts over the fraction does not.
"""

import numpy as np

from _toolbox.plotting import new_figure, save_figure
from controllers import FractionalDelayController, PredictiveController, lqr_gain
from dmdidc import DelayedPlant, DMDidc, random_excitation
from simulations import simulate_closed_loop

true = DelayedPlant.from_continuous([[0, 1.1], [-1.1, 0]], [[1, -1], [-1, 2]], delay=3.0,
                                    dt=2.0)
U = random_excitation(2, 300, rng=0)
est = DMDidc(max_delay=3).fit(true.simulate(np.zeros(2), U), U, dt=2.0)
print("identified delay / T:", est.delay / 2.0)

K = lqr_gain(est.model_)
fig = new_figure((6.5, 3.2))
ax = fig.add_subplot()
for name, controller, style in (("truncated", PredictiveController(est.model_, K), "--"),
                                ("fractional", FractionalDelayController(est.model_, K), "-")):
    run = simulate_closed_loop(true, controller, x0=[1.0, 1.0], steps=25, fine=True)
    norm = np.linalg.norm(run.fine_states, axis=0)
    ax.semilogy(run.fine_times, np.maximum(norm, 1e-12), style, label=name)
    print(f"{name:>10}: cost {run.cost:.3g}, |x_N| {run.final_norm:.2e}")
ax.set_xlabel("time [s]")
ax.set_ylabel("|x(t)|")
ax.set_title("delay 1.5 T: LQR on the identified model, run on the true plant")
ax.legend()
save_figure(fig, "closed_loop.png")
