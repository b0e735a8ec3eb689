"""The fleet privacy-utility study as a sweep: private federated identification of the fleet's
delay over epsilon x mechanism (SaS alpha) x N households x delay (issue 10, item 7).

One cell of the grid (:func:`fleet_identification_task`) draws ``N`` heterogeneous households
whose delays are uniform on ``delay_T +- delay_spread_T`` periods, simulates their operation
(thermostat plus the aggregator's excitation, real weather), lets every household compute its
DMDidc statistics and privatize them with its own budget
(:mod:`simulations.smartgrid.private_identification`), combines the releases
(:func:`~simulations.smartgrid.private_identification.aggregate_statistics`, the federated
seam) and identifies the fleet model.  It records the identified fleet delay against the
fleet's true mean delay (error in periods ``T``), its confidence interval and whether it covers
the truth, the same fit on the plain statistics of the same data (what privacy costs, row by
row), each household's composed guarantee from :mod:`privacy.accounting`, and the time of
every stage.  :func:`study_grid` builds the validated grid, :func:`summarize_study` and
:func:`plot_study` condense the table; :func:`~simulations.smartgrid.run_sweep` runs it
serially or on Dask.

Scaling to 10,000 households
---------------------------
* Households are drawn, simulated and reduced ``chunk`` at a time: a chunk's operation record
  (about ``13 x 288 x days`` doubles per household: 0.2 MB per household-week at T = 5 min)
  is freed once its households' statistics are computed.  What a task keeps is one release per
  household (``d (d + 1) / 2 + d`` = 152 numbers at ``R = 3``, a few kB with its metadata) for
  the aggregator and the running plain sum.  The draws depend on ``chunk`` (it is part
  of the configuration and of every row), not on the engine.
* The simulation advances a whole chunk per time step (:func:`simulate_fleet`, batched numpy)
  and the households' statistics are computed together (:func:`fleet_statistics`: one batched
  Gram product per day instead of a streaming accumulator per household and day: 3.9-4.2x
  faster for 300 households x 14 days, same numbers; ``benchmarks/bench_smartgrid_sweep.py``).
* The task runs with one BLAS thread: its matrices are 2 x 2 to 16 x 16, where a threaded
  BLAS only adds synchronisation (drawing 300 households took 17-23 s with the default
  OpenBLAS threads on the loaded 2-core machine and 0.36-0.72 s with one, same benchmark).
  Dask's nannies start workers with ``OPENBLAS_NUM_THREADS=1`` already, so the serial and the
  Dask paths do the same work per task.

Privacy: the guarantee is the accountant's (``privatize_household`` composes it and refuses a
release beyond the budget); every household gets the same budget ``epsilon`` for the stated
``unit`` (one sample, a window, or its whole record).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import (
    check_in_interval,
    check_integer,
    check_nonnegative,
    check_positive,
)
from privacy.stable import check_alpha
from simulations.smartgrid.operation import check_excitation
from simulations.smartgrid.profiles import check_day

__all__ = [
    "DEFAULT_ALPHAS",
    "FLEET_MECHANISMS",
    "fleet_identification_task",
    "fleet_statistics",
    "plot_study",
    "study_grid",
    "summarize_study",
]

#: Mechanisms a household can privatize its statistics with (``alpha`` only for SaS).
FLEET_MECHANISMS = ("sas", "gaussian", "laplace")
#: SaS stability indices of a study that names none.
DEFAULT_ALPHAS = (1.9,)
_UNITS = ("sample", "window", "trajectory")
_PROFILE_SOURCES = ("auto", "packages", "extract")
_EXCITATION_SIGNALS = ("uniform", "binary")


def study_grid(*, epsilons: Sequence[float], households: Sequence[int],
               delays: Sequence[float] = (1.5,), mechanisms: Sequence[str] = ("sas",),
               alphas: Sequence[float] | None = None, repeats: int = 1,
               delay_spread: float = 0.2,
               days: int = 14, start_day: int = 0, dt_s: float = 300.0,
               excitation: float = 0.5, excitation_signal: str = "binary",
               unit: str = "sample", window: int | None = None, delta: float = 1e-5,
               chunk: int = 500, profiles: str = "auto") -> list[dict[str, Any]]:
    """The validated configurations of the study, one per cell and repetition.

    Parameters
    ----------
    epsilons : sequence of float
        Each household's budget (composed, for ``unit``), > 0.
    households : sequence of int
        Fleet sizes ``N``.
    delays : sequence of float, default (1.5,)
        Mean delay of the fleet in periods ``T``; households draw theirs uniformly on
        ``delay +- delay_spread``.
    mechanisms : sequence of {"sas", "gaussian", "laplace"}, default ("sas",)
    alphas : sequence of float, optional
        SaS stability indices in (0, 2), one cell each (default :data:`DEFAULT_ALPHAS`); only
        with ``"sas"`` among the mechanisms.
    repeats : int, default 1
        Independent repetitions per cell (new fleet, data and noise).
    delay_spread : float, default 0.2
        Half-width of the households' delay range, periods.
    days, start_day : int, default 14, 0
        Days of operation data and the first day of year (0 = 1 January 2016: heating season).
    dt_s : float, default 300
        Sampling period ``T`` (must divide 900 s).
    excitation : float, default 0.5
        The aggregator's excitation amplitude as a fraction of each heat pump's power, in
        (0, 1]; it is the instrument of the fleet fit.
    excitation_signal : {"binary", "uniform"}, default "binary"
    unit : {"sample", "window", "trajectory"}, default "sample"
    window : int, optional
        Time steps per window (``unit="window"`` only).
    delta : float, default 1e-5
        Delta of the Gaussian and SaS releases (SaS: the l2 calibration through the
        vector-SaS GDP bound, :func:`~simulations.smartgrid.privatize_household`); Laplace
        reports 0.
    chunk : int, default 500
        Households simulated and reduced at a time (bounds the memory).
    profiles : {"auto", "packages", "extract"}, default "auto"

    Returns
    -------
    list of dict
        Keys ``mechanism, alpha, epsilon, households, delay_T, repeat`` (the axes, ``alpha``
        None for Gaussian and Laplace) and the fixed settings.

    Raises
    ------
    ParameterError
        Any value out of range, with its name.

    Examples
    --------
    >>> grid = study_grid(epsilons=[1.0, 10.0], households=[100], mechanisms=["sas", "gaussian"],
    ...                   alphas=[1.5, 1.9])
    >>> [(c["mechanism"], c["alpha"], c["epsilon"]) for c in grid]      # doctest: +ELLIPSIS
    [('sas', 1.5, 1.0), ('sas', 1.5, 10.0), ('sas', 1.9, 1.0), ..., ('gaussian', None, 10.0)]
    """
    epsilons = _axis("epsilons", epsilons, lambda v: check_positive("epsilons", v))
    households = _axis("households", households,
                       lambda v: check_integer("households", v, minimum=1))
    spread = check_nonnegative("delay_spread", delay_spread)
    delays = _axis("delays", delays, lambda v: _mean_delay(v, spread))
    mechanisms = _axis("mechanisms", mechanisms, _mechanism)
    if alphas is not None and "sas" not in mechanisms:
        raise ParameterError(f"alphas apply to mechanism 'sas' only; got alphas="
                             f"{list(alphas)!r} with mechanisms {mechanisms}")
    alphas = _axis("alphas", DEFAULT_ALPHAS if alphas is None else alphas,
                   lambda v: check_alpha(v, high_open=True))     # the release's own check
    fixed = {"delay_spread_T": spread, "days": check_integer("days", days, minimum=1),
             "start_day": check_day("start_day", start_day),
             "dt_s": _period(dt_s), "excitation": check_excitation(excitation, instrument=True),
             "excitation_signal": _choice("excitation_signal", excitation_signal,
                                          _EXCITATION_SIGNALS),
             "unit": _choice("unit", unit, _UNITS), "window": window,
             "delta": check_in_interval("delta", delta, 0.0, 1.0, low_open=True,
                                        high_open=True),
             "chunk": check_integer("chunk", chunk, minimum=1),
             "profiles": _choice("profiles", profiles, _PROFILE_SOURCES)}
    if unit == "window":
        fixed["window"] = check_integer("window", window, minimum=1)
    elif window is not None:
        raise ParameterError(f"window applies to unit='window' only; got window={window!r} with "
                             f"unit={unit!r}")
    variants = [(m, a) for m in mechanisms for a in (alphas if m == "sas" else [None])]
    return [{"mechanism": m, "alpha": a, "epsilon": eps, "households": n, "delay_T": r,
             "repeat": rep, **fixed}
            for m, a in variants for n in households for r in delays for eps in epsilons
            for rep in range(check_integer("repeats", repeats, minimum=1))]


def _axis(name: str, values: Any, check) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise ParameterError(f"{name} must be a non-empty list; got {values!r}")
    return list(dict.fromkeys(check(v) for v in values))


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ParameterError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def _mechanism(value: Any) -> str:
    return _choice("mechanisms", value, FLEET_MECHANISMS)


def _mean_delay(value: Any, spread: float) -> float:
    mean = check_positive("delays", value)
    if mean - spread < 0:
        raise ParameterError(f"delays must be >= delay_spread ({spread:g} periods) so that no "
                             f"household's delay is negative; got {mean:g}")
    return mean


def _period(dt_s: Any) -> float:
    dt = check_positive("dt_s", dt_s)
    if abs(900.0 / dt - round(900.0 / dt)) > 1e-9:
        raise ParameterError(f"dt_s must divide 900 s (the profile step); got {dt:g}")
    return dt


def max_delay_for(delay_T: float, spread_T: float) -> int:
    """Delay bound ``R`` of the fit: the longest household delay's last block plus one."""
    return math.ceil(delay_T + spread_T) + 1


def fleet_statistics(record: Any, *, max_delay: int, bounds: Any = None) -> list[Any]:
    """Every household's statistics of a record at once: equal (to rounding) to
    ``[household_statistics(record, i, max_delay=..., bounds=...) for i in range(N)]``.

    The per-household path runs the streaming accumulator once per household and day (about
    3 ms of Python per household-fortnight); here the regression vectors of all households of
    one day are sliced at once and their Gram matrices are one batched product, so the cost is
    the arithmetic.  The data each household shares are the same (per-day trajectories,
    offsets, per-unit input and excitation, clip bounds: see
    :mod:`simulations.smartgrid.private_identification`); household 0 is computed by
    ``household_statistics`` itself and gives the layout and metadata of all.

    Parameters
    ----------
    record : FleetRecord
    max_delay : int
    bounds : SharingBounds, optional

    Returns
    -------
    list of SufficientStatistics, one per household

    Examples
    --------
    >>> from simulations.smartgrid import draw_households, load_profiles, simulate_fleet
    >>> from simulations.smartgrid.private_identification import household_statistics
    >>> record = simulate_fleet(draw_households(3, rng=0), load_profiles("extract"),
    ...                         start_day=10, days=2, excitation=0.3, rng=0)
    >>> batched = fleet_statistics(record, max_delay=3)
    >>> one = household_statistics(record, 2, max_delay=3)
    >>> bool(np.allclose(batched[2].gram, one.gram, rtol=1e-12, atol=1e-9))
    True
    """
    import dataclasses

    from dmdidc.inference.clipping import Clipping
    from simulations.smartgrid.private_identification import SharingBounds, household_statistics

    bounds = SharingBounds() if bounds is None else bounds
    template = household_statistics(record, 0, max_delay=max_delay, bounds=bounds)
    layout, span = template.layout, record.steps_per_day
    p_max = np.array([h.parameters.heat_pump_max_kw for h in record.households])[:, None, None]
    limits = {"x": np.array(bounds.state_bounds_K)[None, :, None],
              "u": np.array([[[0.5]]]), "e": np.array([[[bounds.excitation]]])}
    N, d = len(record.households), template.gram.shape[0]
    gram, sums = np.zeros((N, d, d)), np.zeros((N, d))
    # per household, signal (x, u, e) and channel: values clipped, values seen, largest
    # |value| / bound
    channels = {"x": record.X.shape[1], "u": record.U.shape[1],
                "e": record.excitation_kw.shape[1]}
    clipped, seen, peak = ({s: np.zeros((N, k), dtype=int) for s, k in channels.items()},
                           {s: np.zeros((N, k), dtype=int) for s, k in channels.items()},
                           {s: np.zeros((N, k)) for s, k in channels.items()})
    first, length = layout.first_sample, span - 1         # regression samples k0 .. L-1 a day
    for day in range(record.days):
        a = day * span
        raw = {"x": record.X[:, :, a:a + span] - np.array(bounds.offsets_c)[None, :, None],
               "u": record.U[:, :, a:a + length] / p_max - 0.5,
               "e": record.excitation_kw[:, :, a:a + length] / p_max}
        unit_box = {}
        for signal, data in raw.items():
            limit = limits[signal]
            inside = np.clip(data, -limit, limit)
            clipped[signal] += np.count_nonzero(inside != data, axis=2)
            seen[signal] += data.shape[2]
            np.maximum(peak[signal], (np.abs(data) / limit).max(axis=2), out=peak[signal])
            unit_box[signal] = inside / limit
        # slot (signal, lag) holds signal_{k - lag}; lag -1 is the target x_{k+1}
        V = np.concatenate([unit_box[s][:, :, first - lag:length - lag]
                            for s, lag in layout.slots], axis=1)
        gram += V @ V.transpose(0, 2, 1)
        sums += V.sum(axis=2)
    gram = 0.5 * (gram + gram.transpose(0, 2, 1))
    return [template] + [dataclasses.replace(
        template, gram=gram[i], sums=sums[i],
        clipping=Clipping(*(tuple(tuple(count[s][i].tolist()) for s in channels)
                            for count in (clipped, seen, peak)))) for i in range(1, N)]


@functools.lru_cache(maxsize=3)
def _profiles(source: str):
    from simulations.smartgrid.profiles import load_profiles

    return load_profiles(source)


def fleet_identification_task(config: Mapping[str, Any], rng: np.random.Generator
                              ) -> dict[str, Any]:
    """One cell: simulate, privatize per household, aggregate, identify (module notes).

    Parameters
    ----------
    config : mapping
        One configuration of :func:`study_grid`.
    rng : numpy.random.Generator
        All randomness of the cell (fleet, data, privacy noise), drawn chunk by chunk.

    Returns
    -------
    dict
        ``delay_true_T`` (fleet mean), ``delay_T`` is the axis; ``delay_identified_T``,
        ``delay_error_T`` (identified minus true), ``ci_low_T``, ``ci_high_T``, ``covered``
        (1/0, NaN without an interval), ``delay_plain_T`` and ``plain_error_T`` (the same data,
        no privacy), ``epsilon_household`` and ``delta_household`` (largest composed guarantee
        of any household, accountant ``accountant``), ``noise_scale``, ``max_delay``, ``note``
        (why a delay or interval is missing), ``time_*_s`` per stage (wall clock) and
        ``time_cpu_s`` (CPU time of the process: below the wall time when the cores are shared).

    Examples
    --------
    >>> config = study_grid(epsilons=[3.0], households=[4], mechanisms=["gaussian"], days=2,
    ...                     profiles="extract")[0]
    >>> row = fleet_identification_task(config, np.random.default_rng(0))
    >>> row["epsilon_household"] <= 3.0, row["accountant"], row["households_simulated"]
    (True, 'gaussian-exact', 4)
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _run_cell(dict(config), rng)


def _run_cell(config: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    from dmdidc.errors import InsufficientExcitationError, LogarithmError
    from simulations.smartgrid.household import draw_households
    from simulations.smartgrid.operation import simulate_fleet
    from simulations.smartgrid.private_identification import (
        SharingBounds,
        aggregate_statistics,
        fleet_clipping,
        identify_fleet,
        privatize_household,
    )

    start, cpu = time.perf_counter(), time.process_time()
    N, dt = config["households"], config["dt_s"]
    spread = config["delay_spread_T"]
    low, high = config["delay_T"] - spread, config["delay_T"] + spread
    R = max_delay_for(config["delay_T"], spread)
    bounds = SharingBounds(excitation=config["excitation"])
    profiles = _profiles(config["profiles"])
    clock = dict.fromkeys(("simulate", "statistics", "privatize", "aggregate", "identify"), 0.0)
    releases, plain, delay_sum, guarantees = [], None, 0.0, []
    for first in range(0, N, config["chunk"]):
        t0 = time.perf_counter()
        fleet = draw_households(min(config["chunk"], N - first), dt_s=dt,
                                delay_periods=(low, high), rng=rng)
        record = simulate_fleet(fleet, profiles, start_day=config["start_day"],
                                days=config["days"], excitation=config["excitation"],
                                excitation_signal=config["excitation_signal"], rng=rng)
        delay_sum += sum(h.parameters.delay_s for h in fleet)
        t1 = time.perf_counter()
        stats = fleet_statistics(record, max_delay=R, bounds=bounds)
        del record                                    # the chunk's raw data are not kept
        t2 = time.perf_counter()
        with fleet_clipping(stats):           # once per chunk, not per household
            for s in stats:
                private, guarantee = privatize_household(
                    s, mechanism=config["mechanism"], epsilon=config["epsilon"],
                    delta=config["delta"], unit=config["unit"], window=config["window"],
                    alpha=config["alpha"], rng=rng)
                releases.append(private)
                guarantees.append(guarantee)
        t3 = time.perf_counter()
        plain = sum(stats, plain if plain is not None else 0)
        clock["simulate"] += t1 - t0
        clock["statistics"] += t2 - t1
        clock["privatize"] += t3 - t2
    t0 = time.perf_counter()
    combined = aggregate_statistics(releases)
    clock["aggregate"] = time.perf_counter() - t0
    truth = delay_sum / N / dt
    t0 = time.perf_counter()
    try:
        fit = identify_fleet(combined, dt_s=dt, max_delay=R)
        identified, ci, note = fit.delay_s / dt, tuple(v / dt for v in fit.delay_ci_s), fit.note
    except (InsufficientExcitationError, LogarithmError) as exc:
        identified, ci, note = math.nan, (math.nan, math.nan), f"no fit: {exc}"
    clock["identify"] = time.perf_counter() - t0
    try:
        reference = identify_fleet(plain, dt_s=dt, max_delay=R).delay_s / dt
    except (InsufficientExcitationError, LogarithmError):
        reference = math.nan
    worst = max(guarantees, key=lambda g: (g.epsilon, g.delta))
    has_ci = all(math.isfinite(v) for v in ci)
    return {"households_simulated": len(guarantees), "max_delay": R, "delay_true_T": truth,
            "delay_identified_T": identified, "delay_error_T": identified - truth,
            "ci_low_T": ci[0], "ci_high_T": ci[1],
            "covered": float(ci[0] <= truth <= ci[1]) if has_ci else math.nan,
            "delay_plain_T": reference, "plain_error_T": reference - truth,
            "epsilon_household": worst.epsilon, "delta_household": worst.delta,
            "accountant": worst.method, "noise_scale": worst.to_dict()["noise_scale"],
            "note": note, **{f"time_{k}_s": v for k, v in clock.items()},
            "time_total_s": time.perf_counter() - start,
            "time_cpu_s": time.process_time() - cpu}


def summarize_study(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per cell (all axes but ``repeat``): median and 10-90 % band of ``|delay error|`` in T
    over the repetitions (empirical quantiles, always an observed value; a failed fit counts as
    an infinite error, so failures are never dropped), the plain reference, interval coverage
    and width, the largest household epsilon and the median run time.

    Examples
    --------
    >>> rows = [{"mechanism": "gaussian", "alpha": None, "epsilon": 1.0, "households": 10,
    ...          "delay_T": 1.5, "repeat": r, "delay_error_T": e, "plain_error_T": 0.01,
    ...          "covered": 1.0, "ci_low_T": 1.0, "ci_high_T": 2.0, "epsilon_household": 1.0,
    ...          "time_total_s": 2.0} for r, e in enumerate([0.1, -0.3, float("nan")])]
    >>> s = summarize_study(rows)[0]
    >>> s["abs_error_median_T"], s["failed"], s["coverage"], s["repeats"]
    (0.3, 1, 1.0, 3)
    """
    cells: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        key = tuple(row[k] for k in ("mechanism", "alpha", "households", "delay_T", "epsilon"))
        cells.setdefault(key, []).append(row)
    summary = []
    for (mechanism, alpha, n, delay, eps), group in cells.items():
        errors = np.array([abs(r["delay_error_T"]) for r in group], dtype=float)
        errors[~np.isfinite(errors)] = np.inf
        plain = np.array([abs(r["plain_error_T"]) for r in group], dtype=float)
        covered = np.array([r["covered"] for r in group], dtype=float)
        widths = np.array([r["ci_high_T"] - r["ci_low_T"] for r in group], dtype=float)
        low, median, high = (float(np.quantile(errors, q, method="inverted_cdf"))
                             for q in (0.1, 0.5, 0.9))
        summary.append({
            "mechanism": mechanism, "alpha": alpha, "households": n, "delay_T": delay,
            "epsilon": eps, "repeats": len(group), "abs_error_median_T": median,
            "abs_error_q10_T": low, "abs_error_q90_T": high,
            "failed": int(np.sum(~np.isfinite(errors))),
            "plain_abs_error_median_T": float(np.nanmedian(plain)) if np.isfinite(plain).any()
            else math.nan,
            "with_interval": int(np.isfinite(covered).sum()),
            "coverage": float(np.nanmean(covered)) if np.isfinite(covered).any() else math.nan,
            "ci_width_median_T": float(np.nanmedian(widths)) if np.isfinite(widths).any()
            else math.nan,
            "epsilon_household_max": max(r["epsilon_household"] for r in group),
            "time_median_s": float(np.median([r["time_total_s"] for r in group]))})
    return summary


def _label(entry: Mapping[str, Any]) -> str:
    if entry["mechanism"] == "sas":
        return f"SaS alpha={entry['alpha']:g}"
    return entry["mechanism"].capitalize()


#: Where the figure draws failed fits (infinite errors), in periods.
_CEILING = 3.0


def plot_study(summary: Sequence[Mapping[str, Any]], path: Any) -> Any:
    """Median ``|delay error|`` (T) against epsilon with its 10-90 % band over repetitions: one
    panel per (delay, N), one line per mechanism; the plain fit dotted, 0.05 T dashed; a cell
    whose median fit failed is an ``x`` at 3 T.  Returns the path."""
    from _toolbox.plotting import new_figure, save_figure

    panels = sorted({(e["delay_T"], e["households"]) for e in summary})
    cols = min(len(panels), 3)
    rows = math.ceil(len(panels) / cols)
    fig = new_figure((4.2 * cols, 3.4 * rows))
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False).ravel())
    for ax, (delay, n) in zip(axes, panels, strict=False):
        entries = [e for e in summary if (e["delay_T"], e["households"]) == (delay, n)]
        for label in dict.fromkeys(_label(e) for e in entries):
            line = sorted((e for e in entries if _label(e) == label), key=lambda e: e["epsilon"])
            eps = np.array([e["epsilon"] for e in line])
            med, lo, hi = (np.minimum(np.array([e[k] for e in line], dtype=float), _CEILING)
                           for k in ("abs_error_median_T", "abs_error_q10_T",
                                     "abs_error_q90_T"))
            shown = ax.plot(eps, med, "o-", label=label)
            failed = med >= _CEILING
            ax.plot(eps[failed], med[failed], "x", ms=9, color=shown[0].get_color())
            ax.fill_between(eps, lo, hi, alpha=0.2, color=shown[0].get_color())
        ax.axhline(0.05, color="0.5", ls="--", lw=1, label="0.05 T")
        plain_errors = np.array([e["plain_abs_error_median_T"] for e in entries], dtype=float)
        plain_errors = plain_errors[np.isfinite(plain_errors)]   # every plain fit may fail
        plain = float(np.median(plain_errors)) if plain_errors.size else math.nan
        if np.isfinite(plain) and plain > 0:
            ax.axhline(plain, color="k", ls=":", lw=1, label="no privacy")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"N = {n}, mean delay {delay:g} T", fontsize=9)
        ax.set_xlabel("epsilon per household")
        ax.set_ylabel("|delay error| / T")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return save_figure(fig, path)
