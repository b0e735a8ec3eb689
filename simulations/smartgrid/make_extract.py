"""Regenerate the shipped profile extract from the installed simbench and demandlib packages.

Usage::

    dmdidc smartgrid extract [--out PATH]

Writes a compressed ``.npz`` (float32) with the six SimBench household shapes (active and
reactive), PV1-PV8 and the hourly DWD TRY 2010 region 4 (Potsdam) temperature and irradiance.
The result is a derived database of SimBench and stays under the Open Database License 1.0 (see
``data/README.md``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simulations.smartgrid.profiles import (
    EXTRACT_PATH,
    SIMBENCH_DATASET,
    _package_arrays,
    _version,
)

__all__ = ["write_extract"]


def write_extract(path: str | Path = EXTRACT_PATH) -> Path:
    """Write the extract to ``path`` (overwriting it) and return the path."""
    path = Path(path)
    arrays = _package_arrays(4)
    source = (f"simbench {_version('simbench')} {SIMBENCH_DATASET}; DWD TRY2010_04 via "
              f"demandlib {_version('demandlib')}")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, source=np.array(source),
                        **{key: value.astype(np.float32) for key, value in arrays.items()})
    return path
