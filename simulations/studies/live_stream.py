"""A live stream whose input delay steps mid-run, with measurement noise and lost packets.

Used by the tests and the figure of :class:`dmdidc.OnlineDMDidc`: a random plant
(:func:`~simulations.studies.data_kinds.random_plant`) runs ``before`` samples with one delay
per channel and ``after`` samples with the delay increased (``A_c``, ``B_c`` unchanged, the
state and the input history carried across the step), white inputs, white measurement noise at
``snr_db`` and a fraction ``lost`` of samples whose state is replaced by NaN (a lost packet),
half of them with the record of the input lost too (the plant applied it; the log has NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from _toolbox.validation import as_generator, check_integer, check_probability
from simulations.studies.data_kinds import _noise, _rms, random_plant

__all__ = ["DelayStepStream", "delay_step_stream", "dynamics_step_stream"]


@dataclass(frozen=True)
class DelayStepStream:
    """The stream and its truth.

    Attributes
    ----------
    X : ndarray, shape (n, K + 1)
        Noisy states with NaN columns at the lost samples.
    U : ndarray, shape (m, K)
        Inputs applied, NaN in the record of about half of the lost samples.
    old_delay, new_delay : ndarray, shape (m,)
        Delays (s) before and after the step.
    step : int
        First sample of the new delay.
    lost : ndarray of bool, shape (K,)
        Which samples ``t < K`` were lost.
    dt : float
    max_delay : int
    """

    X: np.ndarray
    U: np.ndarray
    old_delay: np.ndarray
    new_delay: np.ndarray
    step: int
    lost: np.ndarray
    dt: float
    max_delay: int


def delay_step_stream(rng: np.random.Generator | int | None = None, *, before: int = 6000,
                      after: int = 4000, step_periods: tuple[float, float] = (1.0, 2.0),
                      snr_db: float = 30.0, lost: float = 0.03, dt: float = 0.5,
                      max_delay: int = 4, n_states: int = 3,
                      n_inputs: int = 2) -> DelayStepStream:
    """Draw a :class:`DelayStepStream` (module notes).

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
    before, after : int
        Samples with the old and with the new delay (``after = 0``: a stationary stream).
    step_periods : (float, float)
        Each channel's delay grows by a uniform draw from this range (in periods); the old
        delays are uniform in ``[0.3, 1.5]`` periods.
    snr_db : float
    lost : float in [0, 1)
        Probability that a sample is lost.
    dt : float
    max_delay : int
        Must cover the new delays (``1.5 + step_periods[1] <= max_delay``).
    n_states, n_inputs : int
        Of the random plant.

    Returns
    -------
    DelayStepStream

    Examples
    --------
    >>> s = delay_step_stream(0, before=300, after=200)
    >>> s.X.shape, s.U.shape, s.step, bool((s.new_delay > s.old_delay).all())
    ((3, 501), (2, 500), 300, True)
    """
    from dmdidc import DelayedPlant

    rng = as_generator(rng)
    before = check_integer("before", before, minimum=max_delay + 1)
    after = check_integer("after", after, minimum=0)
    lost = check_probability("lost", lost, allow_one=False)
    old = random_plant(rng, n_states=n_states, n_inputs=n_inputs, max_delay=max_delay,
                       delay_periods=(0.3, 1.5), dt=dt)
    new_delay = old.delay + rng.uniform(*step_periods, old.n_inputs) * dt
    new = DelayedPlant.from_continuous(old.A_c, old.B_c, new_delay, dt, max_delay=max_delay)
    U = rng.standard_normal((old.n_inputs, before + after))
    X = old.simulate(np.zeros(old.n_states), U[:, :before])
    if after:
        tail = new.simulate(X[:, -1], U[:, before:], U_past=U[:, before - max_delay:before])
        X = np.concatenate([X, tail[:, 1:]], axis=1)
    X = X + _noise(X.shape, 10 ** (-snr_db / 20) * _rms(X), rng)
    dropped = rng.random(before + after) < lost
    X[:, np.flatnonzero(dropped)] = np.nan
    U = U.copy()
    U[:, np.flatnonzero(dropped & (rng.random(dropped.size) < 0.5))] = np.nan
    return DelayStepStream(X, U, old.delay, new_delay, before, dropped, dt, max_delay)


def dynamics_step_stream(seed: int, *, speedup: float = 1.6, step: int = 4000,
                         samples: int = 7000, max_delay: int = 4, dt: float = 0.5
                         ) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    """``(old, new, X, U)``: a random plant (``old``, a :class:`~dmdidc.DelayedPlant`) whose
    ``A_c`` becomes ``speedup`` times faster at sample ``step`` (``new``; delays and ``B_c``
    unchanged, state and input history carried across), white inputs and white measurement
    noise at 30 dB.

    Examples
    --------
    >>> old, new, X, U = dynamics_step_stream(7, step=300, samples=500)
    >>> X.shape, U.shape
    ((3, 501), (2, 500))
    """
    from dmdidc import DelayedPlant

    rng = np.random.default_rng(seed)
    old = random_plant(rng, max_delay=max_delay, delay_periods=(0.3, 1.5), dt=dt)
    new = DelayedPlant.from_continuous(speedup * old.A_c, old.B_c, old.delay, dt,
                                       max_delay=max_delay)
    U = rng.standard_normal((old.n_inputs, samples))
    X = old.simulate(np.zeros(old.n_states), U[:, :step])
    tail = new.simulate(X[:, -1], U[:, step:], U_past=U[:, step - max_delay:step])
    X = np.concatenate([X, tail[:, 1:]], axis=1)
    X += 10 ** -1.5 * np.sqrt((X ** 2).mean(axis=1, keepdims=True)) * rng.standard_normal(
        X.shape)
    return old, new, X, U
