"""Is a sensor frozen?  Runs of a state that repeats its value exactly while the inputs move.

A stuck sensor, a data link that stopped updating or a logger that repeats its last value
records a state as constant for a stretch of the record.  The fit then reads the frozen samples
as measurements: the other checks see coloured residuals at best (``whiteness`` failed on 10 of
10 random plants with one state frozen for 10 % of the record, naming coloured noise as the
cause), and the model is biased when the stretch is long.

A measured state of a plant driven by moving inputs does not repeat its value exactly for
long: noise alone changes it at every sample.  The check finds, for each state, the longest run
of samples whose value equals the one before; a run counts when the inputs move during it (not
counting its last ``R + n`` samples: a plant at rest under constant inputs, or waiting for a
delayed input, may hold its state) and when, elsewhere in the record, the state changes over as
many samples by at least :data:`RESOLUTION_STEPS` of its own resolution (its smallest nonzero
step: a coarsely quantized, slow signal may repeat its value).  A counted run longer than
:data:`FROZEN_SAMPLES` fails the check.  A first look compares every ``FROZEN_SAMPLES``-th
step with the one before (on records of more than ``SCREENED x FROZEN_SAMPLES`` samples, only
about :data:`SCREENED` steps per state, so runs shorter than ``K / SCREENED`` samples, a few
hundredths of a per cent of the record, may go unseen); only the states it flags are read in
full.  At n = 20 states and K = 2e5 it costs about 0.003 of a Gram pass of the regression data.
"""

from __future__ import annotations

import numpy as np

from dmdidc.inference.checks import Check

__all__ = ["FROZEN_SAMPLES", "RESOLUTION_STEPS", "SCREENED", "frozen_signal_check"]

#: A state repeating its value over more than this many samples (inputs moving) fails the check.
FROZEN_SAMPLES = 10

#: A run counts only where the state's typical change over as many samples is at least this
#: many of its smallest steps (its resolution).
RESOLUTION_STEPS = 10

#: Steps compared per state at most in the first look (every ``total // SCREENED``-th on long
#: data): every run at least that long is found, shorter ones only where they are looked at.
SCREENED = 5000

QUESTION = "Does every state change while the inputs move (no frozen sensor)?"


def _runs(same: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of ``True`` in a 1-D boolean array."""
    edges = np.diff(np.concatenate([[0], same.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return starts, ends - starts


def _frozen_run(x: np.ndarray, U: np.ndarray, wait: int) -> tuple[int, int]:
    """The longest counted run of ``x`` (start, length in samples), or (0, 0)."""
    steps = np.abs(np.diff(x))
    starts, lengths = _runs(steps == 0)
    moving = steps[steps > 0]
    if moving.size == 0:
        return 0, 0
    resolution = float(moving.min())
    best = (0, 0)
    for start, length in sorted(zip(starts, lengths, strict=True), key=lambda r: -r[1]):
        if length <= FROZEN_SAMPLES:
            break
        # the inputs move before the run's last R + n samples (u_k reaches x_{k+1} after up
        # to R periods, a state behind a chain of others up to n - 1 later); a plant at rest,
        # under constant inputs or waiting for a delayed one, may hold its state
        window = U[:, start:max(start, start + length - wait)]
        if window.shape[1] < 2 or not np.any(np.ptp(window, axis=1) > 0):
            continue
        change = np.abs(x[length:] - x[:-length]) if x.size > length else np.zeros(0)
        if change.size and np.median(change) >= RESOLUTION_STEPS * resolution:
            best = (int(start), int(length))
            break
    return best


def frozen_signal_check(trajectories: list, max_delay: int) -> Check:
    """Whether a state repeats its value over a long run while the inputs move (see the module).

    Parameters
    ----------
    trajectories : list of (X (n, K + 1), U (m, K))
        The data, in time order (before any thinning).
    max_delay : int
        ``R``: a run's last ``R + n`` samples may wait for a delayed input.

    Returns
    -------
    Check
        ``frozen_signal``; its statistic is the longest counted run (samples), failed when
        above :data:`FROZEN_SAMPLES`; not applicable without inputs.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> plant = DelayedPlant.from_continuous([[-0.5, 1.0], [-1.0, -0.5]], [[1.0], [0.5]],
    ...                                      [0.7], 0.5, max_delay=2)
    >>> rng = np.random.default_rng(0)
    >>> U = rng.standard_normal((1, 2000))
    >>> X = plant.simulate([0.0, 0.0], U) + 0.01 * rng.standard_normal((2, 2001))
    >>> frozen_signal_check([(X, U)], 2).passed
    True
    >>> X[1, 500:700] = X[1, 499]                       # the second sensor stuck
    >>> check = frozen_signal_check([(X, U)], 2)
    >>> check.passed, check.statistic
    (False, 200.0)
    """
    R = max_delay
    if not trajectories or trajectories[0][1].shape[0] == 0:
        return Check("frozen_signal", QUESTION, None, finding="no inputs")
    worst = (0, -1, -1, 0)                                  # length, trajectory, state, start
    total = sum(U.shape[1] for _, U in trajectories)
    step = max(FROZEN_SAMPLES, total // SCREENED)
    for t, (X, U) in enumerate(trajectories):
        if X.shape[1] <= step + 1:
            continue
        # a run of at least `step` equal steps holds a step k = step - 1 (mod step)
        candidates = np.flatnonzero(np.any(X[:, step::step] == X[:, step - 1:-1:step], axis=1))
        for i in candidates:
            start, length = _frozen_run(X[i], U, R + X.shape[0])
            if length > worst[0]:
                worst = (length, t, int(i), start)
    length, t, i, start = worst
    if length == 0:
        return Check("frozen_signal", QUESTION, True, 0.0, float(FROZEN_SAMPLES),
                     f"no state repeats its value over more than {FROZEN_SAMPLES} samples while "
                     f"the inputs move")
    where = f"state {i}" + (f" of trajectory {t}" if len(trajectories) > 1 else "")
    finding = (f"{where} holds the value {trajectories[t][0][i, start]:.6g} exactly over "
               f"{length} samples (samples {start} .. {start + length}) while the inputs move "
               f"and it otherwise changes at every few samples: a stuck sensor, a data link or "
               f"logger that repeated its last value, or a sensor at its limit; those samples "
               f"do not measure the state")
    return Check("frozen_signal", QUESTION, False, float(length), float(FROZEN_SAMPLES), finding,
                 "mark the frozen samples missing (NaN) and refit with missing='drop' (the "
                 "record is split there: IdData(X, U, dt=..., missing='drop')), or repair the "
                 "sensor")
