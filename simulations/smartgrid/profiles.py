"""Real load, PV and weather profiles for the smart-grid case study (SimBench 2016, DWD TRY).

Two sources give the same :class:`ProfileData`:

* the installed packages (``source="packages"``): the six SimBench household shapes H0-A, B, C,
  G, H, L (active and reactive, each normalised to peak 1) and PV1-PV8 from the ``simbench``
  package's ``LoadProfile.csv`` / ``RESProfile.csv`` (one leap year, 2016, 15-min steps), and
  outdoor temperature with direct + diffuse horizontal irradiance from a DWD test reference
  year (TRY 2010) as shipped by ``demandlib``;
* the extract shipped with this package (``source="extract"``, ``data/smartgrid_profiles.npz``,
  0.9 MB), written from the packages by ``python -m simulations.smartgrid.make_extract``; the
  profiles are stored as float32 (relative difference < 1e-7; weather within 1e-5 C).

``source="auto"`` (default) reads the packages when both are installed, else the extract.

Weather alignment: the TRY is a typical (non-leap) year of hourly means; the hour ending at
``HH`` is placed at ``HH - 0.5`` h, 29 February repeats 28 February, and the series is
interpolated linearly (periodically) to the 15-min grid of SimBench.

Licences and attribution: SimBench data (c) University of Kassel, TU Dortmund, RWTH Aachen,
Fraunhofer IEE, Open Database License (ODbL) 1.0 with contents under the Database Contents
License (DbCL) 1.0 (www.simbench.net); the extract is a derived database and stays under ODbL
1.0.  Weather: Deutscher Wetterdienst (DWD), Testreferenzjahre 2010, as distributed with
demandlib (MIT).  See ``data/README.md``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer, check_positive, read_only

__all__ = ["ProfileData", "load_profiles", "read_package_profiles", "EXTRACT_PATH", "check_day"]

EXTRACT_PATH = Path(__file__).resolve().parent / "data" / "smartgrid_profiles.npz"
HOUSEHOLD_PROFILES = ("H0-A", "H0-B", "H0-C", "H0-G", "H0-H", "H0-L")
PV_PROFILES = tuple(f"PV{i}" for i in range(1, 9))
PROFILE_DT_S = 900.0
YEAR_DAYS = 366                       # 2016


def check_day(name: str, day: object) -> int:
    """``day`` as a 0-based day of 2016 (``0..365``; 0 = Friday 1 January), else a
    :class:`ParameterError` naming ``name``.  Every stage that starts on a day (the scenario,
    the fleet's simulation, the sweep, the LV grid) checks it here; runs that go past 31
    December continue from 1 January (the profiles wrap around the year), but a first day
    beyond the year is refused rather than wrapped.

    Examples
    --------
    >>> check_day("start_day", 305)
    305
    """
    day = check_integer(name, day, minimum=0)
    if day >= YEAR_DAYS:
        raise ParameterError(f"{name} must be a day of 2016 (0..{YEAR_DAYS - 1}, 0-based); got "
                             f"{day} (runs past 31 December continue from 1 January, a first "
                             f"day does not wrap)")
    return day
FIRST_WEEKDAY = 4                     # 1 January 2016 was a Friday (Monday = 0)
SIMBENCH_DATASET = "1-complete_data-mixed-all-0-sw"
TRY_STATION = {4: "Potsdam"}
_SOURCES = ("auto", "packages", "extract")


@dataclass(frozen=True, eq=False)
class ProfileData:
    """One year of 15-min household, PV and weather profiles (time on the last axis).

    Attributes
    ----------
    household_names : tuple of str
        SimBench household shapes (``H0-A`` ...).
    household_p, household_q : ndarray, shape (6, K)
        Active / reactive profile of each shape (relative to the load's rated value; active
        peak 1).
    pv_names : tuple of str
    pv : ndarray, shape (8, K)
        PV feed-in relative to the installed peak power.
    outdoor_c : ndarray, shape (K,)
        Outdoor air temperature, C.
    irradiance_kw_m2 : ndarray, shape (K,)
        Global horizontal irradiance (direct + diffuse), kW/m^2.
    dt_s : float
        Step (900 s); ``K = 366 * 96``.
    source : str
        Where the data came from.
    """

    household_names: tuple[str, ...]
    household_p: np.ndarray
    household_q: np.ndarray
    pv_names: tuple[str, ...]
    pv: np.ndarray
    outdoor_c: np.ndarray
    irradiance_kw_m2: np.ndarray
    dt_s: float
    source: str

    @property
    def n_steps(self) -> int:
        """Number of 15-min steps ``K``."""
        return self.household_p.shape[1]

    @property
    def steps_per_day(self) -> int:
        """Steps per day (96)."""
        return round(86400.0 / self.dt_s)

    def weekday(self, day: int) -> int:
        """Weekday (Monday = 0) of day-of-year ``day`` (0-based)."""
        return (FIRST_WEEKDAY + int(day)) % 7

    def window(self, name: str, start_day: int, days: int, dt_s: float) -> np.ndarray:
        """Series ``name`` over ``days`` days from ``start_day``, resampled to ``dt_s``.

        Weather (``outdoor_c``, ``irradiance_kw_m2``) is interpolated linearly; load and PV
        profiles (15-min means) are held.  ``dt_s`` must divide 900 s.

        Parameters
        ----------
        name : str
            An attribute holding a series: ``household_p``, ``household_q``, ``pv``,
            ``outdoor_c`` or ``irradiance_kw_m2``.
        start_day : int
            First day of year (0-based), wrapping around the year.
        days : int
        dt_s : float

        Returns
        -------
        ndarray, shape (..., days * 86400 / dt_s)

        Raises
        ------
        ParameterError
            For an unknown name, a step that does not divide 900 s, or ``days < 1``.

        Examples
        --------
        >>> data = load_profiles("extract")
        >>> data.window("outdoor_c", 10, 2, 300.0).shape
        (576,)
        """
        if name not in ("household_p", "household_q", "pv", "outdoor_c", "irradiance_kw_m2"):
            raise ParameterError(f"name must be a profile series; got {name!r}")
        days = check_integer("days", days, minimum=1)
        start_day = check_integer("start_day", start_day)
        dt_s = check_positive("dt_s", dt_s)
        per = self.dt_s / dt_s
        if abs(per - round(per)) > 1e-9:
            raise ParameterError(f"dt_s must divide {self.dt_s:g} s; got {dt_s}")
        per = round(per)
        series = getattr(self, name)
        first = (start_day % YEAR_DAYS) * self.steps_per_day
        fine = np.arange(days * self.steps_per_day * per) / per + first      # in 15-min steps
        if name in ("outdoor_c", "irradiance_kw_m2"):
            return np.interp(fine, np.arange(self.n_steps), series, period=self.n_steps)
        return series[..., np.floor(fine).astype(int) % self.n_steps]


def load_profiles(source: str = "auto", *, try_region: int = 4) -> ProfileData:
    """Load the 2016 profiles and weather, from the installed packages or the shipped extract.

    Parameters
    ----------
    source : {"auto", "packages", "extract"}, default "auto"
        ``"packages"`` reads ``simbench`` and ``demandlib`` (raises ``ImportError`` if missing),
        ``"extract"`` the shipped file, ``"auto"`` the packages when installed.
    try_region : int, default 4
        DWD TRY region (1-15) for the packages source; the extract holds region 4 (Potsdam).

    Returns
    -------
    ProfileData

    Raises
    ------
    ParameterError
        For an unknown source, or a region other than 4 with the extract.
    ImportError
        If ``source="packages"`` and simbench or demandlib is not installed.
    FileNotFoundError
        If the extract is missing.

    Examples
    --------
    >>> data = load_profiles("extract")
    >>> data.household_names[0], data.household_p.shape, round(float(data.household_p.max()), 6)
    ('H0-A', (6, 35136), 1.0)
    """
    if source not in _SOURCES:
        raise ParameterError(f"source must be one of {_SOURCES}; got {source!r}")
    region = check_integer("try_region", try_region, minimum=1)
    if region > 15:
        raise ParameterError(f"try_region must be 1..15; got {region}")
    installed = all(importlib.util.find_spec(p) is not None for p in ("simbench", "demandlib"))
    if source == "packages" or (source == "auto" and installed):
        return read_package_profiles(try_region=region)
    if region != 4:
        raise ParameterError(f"the shipped extract holds TRY region 4 only; got try_region="
                             f"{region} (install simbench and demandlib for other regions)")
    return _read_extract(EXTRACT_PATH)


def read_package_profiles(*, try_region: int = 4) -> ProfileData:
    """Read the full profiles from the installed ``simbench`` and ``demandlib`` packages."""
    arrays = _package_arrays(try_region)
    station = TRY_STATION.get(try_region, f"region {try_region}")
    return _assemble(arrays, f"simbench {_version('simbench')} ({SIMBENCH_DATASET}) + DWD TRY "
                             f"2010 region {try_region} ({station}) from demandlib "
                             f"{_version('demandlib')}")


def _package_arrays(try_region: int) -> dict[str, np.ndarray]:
    """Raw arrays from the packages: 15-min profiles and the hourly TRY series."""
    import pandas as pd

    folder = _package_dir("simbench") / "networks" / SIMBENCH_DATASET
    load_cols = [f"{name}_{kind}load" for kind in ("p", "q") for name in HOUSEHOLD_PROFILES]
    loads = pd.read_csv(folder / "LoadProfile.csv", sep=";", usecols=["time", *load_cols])
    res = pd.read_csv(folder / "RESProfile.csv", sep=";", usecols=["time", *PV_PROFILES])
    expected = YEAR_DAYS * 86400 / PROFILE_DT_S
    for name, frame in (("LoadProfile.csv", loads), ("RESProfile.csv", res)):
        if len(frame) != expected or frame["time"].iloc[0] != "01.01.2016 00:00":
            raise DimensionError(f"SimBench {name} has {len(frame)} rows from "
                                 f"{frame['time'].iloc[0]!r}; expected {expected:g} 15-min "
                                 f"steps from 01.01.2016 00:00")
    p = loads[[f"{n}_pload" for n in HOUSEHOLD_PROFILES]].to_numpy(float).T
    q = loads[[f"{n}_qload" for n in HOUSEHOLD_PROFILES]].to_numpy(float).T
    weather = _read_try(_package_dir("demandlib") / "vdi" / "resources_weather"
                        / f"TRY2010_{try_region:02d}_Jahr.dat")
    return {"household_p": p, "household_q": q, "pv": res[list(PV_PROFILES)].to_numpy(float).T,
            **weather}


def _read_try(path: Path) -> dict[str, np.ndarray]:
    """Hourly outdoor temperature (C) and direct/diffuse horizontal irradiance (W/m^2)."""
    lines = path.read_text(encoding="latin-1").splitlines()
    marker = next(i for i, line in enumerate(lines) if line.startswith("***"))
    header = lines[marker - 1].split()
    table = np.array([line.split() for line in lines[marker + 1:] if line.strip()], dtype=float)
    if table.shape != (8760, len(header)):
        raise DimensionError(f"{path.name}: expected 8760 hourly rows of {len(header)} columns; "
                             f"got {table.shape}")
    column = {name: table[:, header.index(name)] for name in ("t", "B", "D")}
    return {"try_outdoor_c": column["t"], "try_direct_w_m2": column["B"],
            "try_diffuse_w_m2": column["D"]}


def _hourly_to_profile_grid(hourly: np.ndarray) -> np.ndarray:
    """365 days of hourly means -> the 2016 15-min grid (29 Feb = 28 Feb, linear, periodic)."""
    days = hourly.reshape(365, 24)
    leap = np.concatenate([days[:59], days[58:59], days[59:]]).ravel()    # 59 = 29 Feb
    centres = np.arange(leap.size) + 0.5                                   # hours
    grid = np.arange(YEAR_DAYS * 96) * (PROFILE_DT_S / 3600.0)
    return np.interp(grid, centres, leap, period=leap.size)


def _assemble(arrays: dict[str, np.ndarray], source: str) -> ProfileData:
    irradiance = (arrays["try_direct_w_m2"] + arrays["try_diffuse_w_m2"]) / 1000.0
    return ProfileData(
        household_names=HOUSEHOLD_PROFILES,
        household_p=read_only(arrays["household_p"]),
        household_q=read_only(arrays["household_q"]),
        pv_names=PV_PROFILES, pv=read_only(arrays["pv"]),
        outdoor_c=read_only(_hourly_to_profile_grid(arrays["try_outdoor_c"].astype(float))),
        irradiance_kw_m2=read_only(np.maximum(_hourly_to_profile_grid(irradiance), 0.0)),
        dt_s=PROFILE_DT_S, source=source)


def _read_extract(path: Path) -> ProfileData:
    if not path.exists():
        raise FileNotFoundError(f"the profile extract {path} is missing; regenerate it with "
                                f"`python -m simulations.smartgrid.make_extract` (needs simbench "
                                f"and demandlib)")
    with np.load(path) as archive:
        arrays = {key: archive[key].astype(float) for key in archive.files if key != "source"}
        origin = str(archive["source"])
    return _assemble(arrays, f"extract {path.name} (from {origin})")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"the {name!r} package is needed for source='packages'; install the "
                          f"project's smartgrid extra (pip install 'dmdidc[smartgrid]')")
    return Path(list(spec.submodule_search_locations)[0])


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)
