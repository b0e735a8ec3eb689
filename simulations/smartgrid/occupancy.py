"""Stochastic occupancy per household, and what it drives: electric base load and internal gains.

SimBench has only six household shapes, each normalised to peak 1, so households that share a
shape would be identical up to scale.  Each simulated household therefore gets (all drawn per
household from ``rng``; the rates are modelling assumptions, chosen to be plausible, not fitted to
survey data):

* a **behaviour type**: ``commuter`` (everybody leaves on weekdays, N(7.5 h, 0.75 h) to N(17.5 h,
  1.25 h) around the household's own mean times), ``home`` (home office / retired: one 1-3 h
  outing on 60 % of days) with weekend outings of 2-6 h on 70 % of weekend days for both;
* **days away**: single days away with probability U(0.03, 0.10) on weekdays and U(0.10, 0.30) on
  weekend days, and holidays starting on a day with probability 1/40, lasting 2-10 days;
* an **electric base load** ``standby + present * scale * shape(t - shift) + appliance events``:
  one of the six H0 shapes, a time shift uniform in +-1 h, standby U(40, 100) W, a scale matching
  an annual consumption lognormal around 2500 kWh (sigma 0.35), and, while someone is home,
  appliance runs (washing machine, dishwasher, oven: 1.0-2.5 kW for 15-90 min) at U(1, 3) per
  day.  The ground truth of occupancy is kept per step and per day;
* **internal gains** ``0.08 kW per person at home + 0.8 x base load`` (sensible heat of people,
  and the part of the electricity dissipated indoors).

A day counts as *occupied* when someone is home for at least a quarter of it (so a day away is
one the house stands empty, apart from the night at the end of a return day).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import as_generator, check_finite_array, check_integer, read_only

__all__ = ["Occupancy", "simulate_occupancy", "base_load", "internal_gains"]

KINDS = ("commuter", "home")
OCCUPIED_FRACTION = 0.25
PERSON_GAIN_KW = 0.08
APPLIANCE_HEAT_FRACTION = 0.8


@dataclass(frozen=True, eq=False)
class Occupancy:
    """Occupancy of one household (ground truth), time on the last axis.

    Attributes
    ----------
    people_home : ndarray of int, shape (K,)
        Occupants at home in each step.
    occupants : int
        Household size.
    kind : str
        Behaviour type (``"commuter"`` or ``"home"``).
    steps_per_day : int
    home_fraction : ndarray, shape (days,)
        Fraction of each day with someone home.
    occupied_day : ndarray of bool, shape (days,)
        ``home_fraction >= 0.25``: the label the occupancy attack tries to infer.
    """

    people_home: np.ndarray
    occupants: int
    kind: str
    steps_per_day: int

    @property
    def home_fraction(self) -> np.ndarray:
        """Fraction of each day with someone at home, shape (days,)."""
        return (self.people_home > 0).reshape(-1, self.steps_per_day).mean(axis=1)

    @property
    def occupied_day(self) -> np.ndarray:
        """Per-day ground truth: someone home at least a quarter of the day, shape (days,)."""
        return self.home_fraction >= OCCUPIED_FRACTION


def simulate_occupancy(days: int, *, first_weekday: int, dt_s: float = 300.0,
                       rng: np.random.Generator | int | None = None) -> Occupancy:
    """Draw one household's behaviour and simulate its occupancy over ``days`` days.

    Parameters
    ----------
    days : int
        Number of days (>= 1), starting at midnight.
    first_weekday : int
        Weekday of the first day (Monday = 0 ... Sunday = 6).
    dt_s : float, default 300
        Step; must divide one day.
    rng : numpy.random.Generator or int or None

    Returns
    -------
    Occupancy

    Raises
    ------
    ParameterError
        For ``days < 1``, a weekday outside 0..6 or a step that does not divide a day.

    Examples
    --------
    >>> occ = simulate_occupancy(14, first_weekday=0, rng=3)
    >>> occ.people_home.shape, occ.occupied_day.shape
    ((4032,), (14,))
    """
    days = check_integer("days", days, minimum=1)
    weekday0 = check_integer("first_weekday", first_weekday, minimum=0)
    if weekday0 > 6:
        raise ParameterError(f"first_weekday must be 0..6 (Monday = 0); got {weekday0}")
    per_day = _steps_per_day(dt_s)
    rng = as_generator(rng)
    kind = KINDS[int(rng.integers(len(KINDS)))]
    occupants = int(rng.integers(1, 5))
    leave_h, return_h = rng.normal(7.5, 0.75), rng.normal(17.5, 1.25)
    p_away = (rng.uniform(0.03, 0.10), rng.uniform(0.10, 0.30))   # weekday, weekend
    hours = (np.arange(per_day) + 0.5) * 24.0 / per_day
    home = np.ones((days, per_day), dtype=bool)
    holiday_left = 0
    for d in range(days):
        weekend = (weekday0 + d) % 7 >= 5
        if holiday_left == 0 and rng.random() < 1.0 / 40.0:
            holiday_left = int(rng.integers(2, 11))
        if holiday_left > 0:
            holiday_left -= 1
            home[d] = False
        elif rng.random() < p_away[weekend]:
            home[d] = False
        elif kind == "commuter" and not weekend:
            leave = rng.normal(leave_h, 0.5)
            back = rng.normal(return_h, 1.0)
            home[d] = (hours < leave) | (hours >= back)
        elif rng.random() < (0.7 if weekend else 0.6):
            length = rng.uniform(2.0, 6.0) if weekend else rng.uniform(1.0, 3.0)
            start = rng.uniform(9.0, 20.0 - length)
            home[d] = (hours < start) | (hours >= start + length)
    people = np.where(home.ravel(), occupants, 0)
    return Occupancy(read_only(people).astype(int), occupants, kind, per_day)


def base_load(occupancy: Occupancy, shape_kw: np.ndarray, *,
              rng: np.random.Generator | int | None = None) -> np.ndarray:
    """Electric base load (kW) of one household, driven by its occupancy.

    Parameters
    ----------
    occupancy : Occupancy
    shape_kw : ndarray, shape (K,)
        A SimBench household shape on the same time grid (peak 1).
    rng : numpy.random.Generator or int or None

    Returns
    -------
    ndarray, shape (K,)
        ``standby + present * scale * shape(t - shift) + appliance events``, kW.

    Raises
    ------
    DimensionError, NonFiniteError
        If ``shape_kw`` does not match the occupancy's length or is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> occ = simulate_occupancy(7, first_weekday=0, rng=0)
    >>> load = base_load(occ, np.full(occ.people_home.size, 0.2), rng=0)
    >>> bool(load.min() > 0)
    True
    """
    shape = check_finite_array("shape_kw", shape_kw, ndim=1)
    present = occupancy.people_home > 0
    if shape.shape != present.shape:
        raise DimensionError(f"shape_kw has {shape.size} steps; expected {present.size} (the "
                             f"occupancy's length)")
    rng = as_generator(rng)
    per_day = occupancy.steps_per_day
    step_h = 24.0 / per_day
    shift = int(round(rng.uniform(-1.0, 1.0) / step_h))
    shifted = np.roll(shape, shift)
    standby = rng.uniform(0.04, 0.10)
    mean_kw = 2500.0 * rng.lognormal(0.0, 0.35) / 8760.0
    events = _appliance_events(present, per_day, rng)
    occupied_shape = float(np.mean(present * shifted))
    scale = max(mean_kw - standby - float(events.mean()), 0.0) / max(occupied_shape, 1e-9)
    return standby + present * scale * shifted + events


def internal_gains(occupancy: Occupancy, base_load_kw: np.ndarray) -> np.ndarray:
    """Internal heat gains (kW): 80 W per person at home plus 80 % of the base load."""
    load = check_finite_array("base_load_kw", base_load_kw, ndim=1)
    return PERSON_GAIN_KW * occupancy.people_home + APPLIANCE_HEAT_FRACTION * load


def _appliance_events(present: np.ndarray, per_day: int, rng: np.random.Generator
                      ) -> np.ndarray:
    """Appliance runs (kW) started at random steps while someone is home."""
    K = present.size
    rate = rng.uniform(1.0, 3.0) / per_day             # starts per step while present
    starts = np.flatnonzero(present & (rng.random(K) < rate))
    load = np.zeros(K)
    step_min = 1440.0 / per_day
    for start in starts:
        length = max(1, int(round(rng.uniform(15.0, 90.0) / step_min)))
        load[start:start + length] += rng.uniform(1.0, 2.5)
    return load


def _steps_per_day(dt_s: float) -> int:
    per_day = 86400.0 / float(dt_s) if dt_s > 0 else float("nan")
    if not np.isfinite(per_day) or abs(per_day - round(per_day)) > 1e-9:
        raise ParameterError(f"dt_s must be > 0 and divide one day (86400 s); got {dt_s!r}")
    return round(per_day)
