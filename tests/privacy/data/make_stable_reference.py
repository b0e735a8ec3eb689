"""Generate ``stable_reference.json``: high-precision SaS reference values (mpmath).

Run from the repository root::

    .venv/bin/python tests/privacy/data/make_stable_reference.py

Three independent mpmath evaluations of the standard SaS law (characteristic function
``exp(-|t|**alpha)``) are used:

* ``zolotarev_pdf`` / ``zolotarev_sf``: Zolotarev's integral (Nolan 1997, ``beta = 0``) in the
  variable ``phi = pi/2 - theta`` at ``mp.dps = 40`` with break points at level sets of
  ``log g`` (this is the reference stored for every point);
* ``fourier_pdf``: the defining Fourier integral ``(1/pi) int_0^T exp(-t**alpha) cos(t x) dt``
  (seed eq. 3.7) split at the zeros of ``cos(t x)`` (body points only: cross-check of the
  representation);
* ``bergstrom_pdf`` / ``bergstrom_sf``: Bergstrom's series (seed eq. 3.9) in multiple precision
  (far-tail points only: cross-check).

The script prints the largest disagreement between the methods; the test module recomputes a
few values live with the same functions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mpmath as mp

DPS = 40
ALPHAS = [1.001, 1.1, 1.5, 1.9, 1.999, 1.9999, 0.7]
XS = [0.0, 0.3, 1.0, 2.5, 5.0, 8.0, 12.0, 20.0, 40.0, 100.0, 1e3, 1e6]


def _logg_phi(a, x):
    """``log g`` as a function of ``phi = pi/2 - theta`` (alpha != 1, x > 0)."""
    c = a / (a - 1)
    lx = mp.log(x)
    half_pi = mp.pi / 2

    def logg(phi):
        th = half_pi - phi
        return (c * lx + (c - 1) * mp.log(mp.sin(phi)) - c * mp.log(mp.sin(a * th))
                + mp.log(mp.cos((a - 1) * th)))
    return logg


def _breaks(a, logg):
    """Break points in phi: level sets of log g (bisection) and the alpha -> 2 kink."""
    lo0, hi0 = mp.mpf(10) ** (-(DPS + 20)), mp.pi / 2 * (1 - mp.mpf(10) ** (5 - DPS))
    pts = {mp.mpf(0), mp.pi / 2}
    for lev in [4, 2, 1, 0, -1, -3, -6, -10, -16, -25, -40]:
        lo, hi = lo0, hi0
        flo, fhi = logg(lo) - lev, logg(hi) - lev
        if flo * fhi > 0:
            continue
        for _ in range(400):
            mid = (lo + hi) / 2
            fm = logg(mid) - lev
            if fm * flo > 0:
                lo, flo = mid, fm
            else:
                hi = mid
            if hi - lo < mp.mpf(10) ** -12 * hi:  # break points need not be exact
                break
        pts.add((lo + hi) / 2)
    delta = (2 - a) * mp.pi / 2
    for k in [mp.mpf("0.1"), 1, 10, 100]:
        p = k * delta
        if 0 < p < mp.pi / 2:
            pts.add(p)
    return sorted(pts)


def zolotarev_pdf(x, a):
    """Density of the standard SaS law from Zolotarev's integral (mpmath, dps=DPS)."""
    with mp.workdps(DPS):
        a, x = mp.mpf(a), abs(mp.mpf(x))
        if x == 0:
            return mp.gamma(1 + 1 / a) / mp.pi
        logg = _logg_phi(a, x)
        integral = mp.quad(lambda p: mp.exp(logg(p) - mp.exp(logg(p))), _breaks(a, logg))
        return a / (mp.pi * abs(a - 1) * x) * integral


def zolotarev_sf(x, a):
    """Survival function of the standard SaS law (x >= 0) from Zolotarev's integral."""
    with mp.workdps(DPS):
        a, x = mp.mpf(a), mp.mpf(x)
        if x == 0:
            return mp.mpf(1) / 2
        logg = _logg_phi(a, x)
        if a > 1:
            f = lambda p: mp.exp(-mp.exp(logg(p)))  # noqa: E731
        else:
            f = lambda p: -mp.expm1(-mp.exp(logg(p)))  # noqa: E731
        return mp.quad(f, _breaks(a, logg)) / mp.pi


def fourier_pdf(x, a):
    """Density from the Fourier integral (seed eq. 3.7), split at the zeros of cos(t x)."""
    with mp.workdps(DPS):
        a, x = mp.mpf(a), abs(mp.mpf(x))
        t_end = (mp.log(10) * (DPS + 10)) ** (1 / a)
        if x == 0:
            return mp.quad(lambda t: mp.exp(-t ** a), [0, t_end, mp.inf]) / mp.pi
        n = int(mp.ceil(t_end * x / mp.pi)) + 1
        pts = [mp.mpf(0)] + [(k + mp.mpf(1) / 2) * mp.pi / x for k in range(n)]
        val = mp.quad(lambda t: mp.exp(-t ** a) * mp.cos(t * x), pts)
        return val / mp.pi


def bergstrom_pdf(x, a, terms=60):
    """Bergstrom's series ``(1/pi) sum_k Gamma(ak+1)/k! sin(k (2-a) pi/2) x^(-ak-1)``."""
    with mp.workdps(DPS):
        a, x = mp.mpf(a), mp.mpf(x)
        return mp.fsum(mp.gamma(a * k + 1) / mp.factorial(k) * mp.sin(k * (2 - a) * mp.pi / 2)
                       * x ** (-a * k - 1) for k in range(1, terms + 1)) / mp.pi


def bergstrom_sf(x, a, terms=60):
    """Term-by-term integral of :func:`bergstrom_pdf` from ``x`` to infinity."""
    with mp.workdps(DPS):
        a, x = mp.mpf(a), mp.mpf(x)
        return mp.fsum(mp.gamma(a * k) / mp.factorial(k) * mp.sin(k * (2 - a) * mp.pi / 2)
                       * x ** (-a * k) for k in range(1, terms + 1)) / mp.pi


def main(path: Path) -> None:
    rows = []
    worst_fourier = worst_berg = 0.0
    for a in ALPHAS:
        for x in XS:
            pdf = zolotarev_pdf(x, a)
            sf = zolotarev_sf(x, a)
            row = {"alpha": a, "x": x, "pdf": mp.nstr(pdf, 25), "sf": mp.nstr(sf, 25)}
            if x <= 12.0:
                four = fourier_pdf(x, a)
                row["fourier_pdf"] = mp.nstr(four, 25)
                worst_fourier = max(worst_fourier, float(abs(four / pdf - 1)))
            if x >= 1e3:
                bp, bs = bergstrom_pdf(x, a), bergstrom_sf(x, a)
                worst_berg = max(worst_berg, float(abs(bp / pdf - 1)), float(abs(bs / sf - 1)))
            rows.append(row)
            print(f"alpha={a} x={x:g} pdf={mp.nstr(pdf, 15)} sf={mp.nstr(sf, 15)}", flush=True)
    print(f"max rel. difference Zolotarev vs Fourier (x <= 12): {worst_fourier:.2e}")
    print(f"max rel. difference Zolotarev vs Bergstrom (x >= 1e3): {worst_berg:.2e}")
    meta = {"dps": DPS, "generator": "tests/privacy/data/make_stable_reference.py",
            "law": "standard SaS, characteristic function exp(-|t|^alpha)",
            "max_rel_zolotarev_vs_fourier": worst_fourier,
            "max_rel_zolotarev_vs_bergstrom": worst_berg}
    path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name(
        "stable_reference.json")
    with mp.workdps(DPS):
        main(out)
