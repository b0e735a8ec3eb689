"""Profile loaders: the shipped extract, the installed packages, and the script that links them."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from privacy.errors import ParameterError
from simulations.smartgrid import load_profiles
from simulations.smartgrid.profiles import EXTRACT_PATH, PV_PROFILES

PACKAGES = all(importlib.util.find_spec(p) for p in ("simbench", "demandlib"))
needs_packages = pytest.mark.skipif(not PACKAGES, reason="simbench/demandlib not installed")


@pytest.fixture(scope="module")
def extract():
    return load_profiles("extract")


def test_extract_holds_a_year_of_normalised_profiles(extract):
    K = 366 * 96
    assert extract.household_p.shape == extract.household_q.shape == (6, K)
    assert extract.pv.shape == (len(PV_PROFILES), K)
    assert extract.outdoor_c.shape == extract.irradiance_kw_m2.shape == (K,)
    np.testing.assert_allclose(extract.household_p.max(axis=1), 1.0, rtol=1e-6)
    assert extract.household_p.min() > 0 and 0 <= extract.pv.min() and extract.pv.max() < 1
    # PV produces by day only; the typical year is cold in January, warm in July.
    hours = (np.arange(K) % 96) / 4
    assert extract.pv[:, hours < 3].max() == 0
    assert extract.pv[:, (hours > 11) & (hours < 13)].mean() > 0.1
    assert extract.outdoor_c[:31 * 96].mean() < 3 < 15 < extract.outdoor_c[182 * 96:213 * 96].mean()
    annual_kwh_m2 = extract.irradiance_kw_m2.sum() * 0.25
    assert 900 < annual_kwh_m2 < 1300          # global horizontal, Germany
    assert EXTRACT_PATH.stat().st_size < 3e6
    assert "simbench" in extract.source and "TRY" in extract.source


def test_window_resamples_weather_linearly_and_holds_loads(extract):
    fine = extract.window("outdoor_c", 40, 2, 300.0)
    coarse = extract.outdoor_c[40 * 96:42 * 96]
    np.testing.assert_allclose(fine[::3], coarse)               # on the 15-min grid: exact
    np.testing.assert_allclose(fine[1::3][:-1], coarse[:-1] + (np.diff(coarse) / 3))
    loads = extract.window("household_p", 40, 1, 300.0)
    assert loads.shape == (6, 288)
    np.testing.assert_array_equal(loads[:, 0::3], loads[:, 2::3])
    np.testing.assert_array_equal(loads[:, ::3], extract.household_p[:, 40 * 96:41 * 96])
    wrapped = extract.window("pv", 365, 2, 900.0)               # 31 Dec, then 1 Jan
    np.testing.assert_array_equal(wrapped[:, 96:], extract.pv[:, :96])
    assert extract.weekday(0) == 4 and extract.weekday(3) == 0  # 1 Jan 2016 was a Friday
    with pytest.raises(ParameterError, match="must divide 900"):
        extract.window("pv", 0, 1, 400.0)
    with pytest.raises(ParameterError, match="profile series"):
        extract.window("source", 0, 1, 300.0)


def test_bad_arguments_are_refused():
    with pytest.raises(ParameterError, match="source must be one of"):
        load_profiles("csv")
    with pytest.raises(ParameterError, match="region 4 only"):
        load_profiles("extract", try_region=5)
    with pytest.raises(ParameterError, match="try_region must be 1..15"):
        load_profiles("extract", try_region=16)


@needs_packages
def test_packages_and_extract_agree(extract):
    full = load_profiles("packages")
    for name in ("household_p", "household_q", "pv"):
        np.testing.assert_allclose(getattr(extract, name), getattr(full, name), rtol=1e-7,
                                   atol=1e-9)
    for name in ("outdoor_c", "irradiance_kw_m2"):
        np.testing.assert_allclose(getattr(extract, name), getattr(full, name), atol=1e-5)
    # Independent read of one SimBench column and one TRY value.
    import pandas as pd

    from simulations.smartgrid.profiles import SIMBENCH_DATASET, _package_dir

    csv = _package_dir("simbench") / "networks" / SIMBENCH_DATASET / "LoadProfile.csv"
    column = pd.read_csv(csv, sep=";", usecols=["H0-G_pload"])["H0-G_pload"].to_numpy()
    np.testing.assert_array_equal(full.household_p[3], column)
    # TRY 2010 region 4, 1 January: hours 1 and 2 are -2.6 C and -3.9 C; their midpoint
    # (01:00) is the 15-min sample 4.
    assert full.outdoor_c[4] == pytest.approx((-2.6 - 3.9) / 2)


@needs_packages
def test_make_extract_regenerates_the_shipped_file(tmp_path):
    from simulations.cli import main

    out = tmp_path / "extract.npz"
    assert main(["smartgrid", "extract", "--out", str(out)]) == 0
    with np.load(out) as new, np.load(EXTRACT_PATH) as shipped:
        assert sorted(new.files) == sorted(shipped.files)
        for key in new.files:
            if key != "source":
                np.testing.assert_array_equal(new[key], shipped[key])
