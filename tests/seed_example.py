"""The seed example the tests share: dissertation Sec. 9.5, eq. (9.76).

``A_c = [[0, 1.1], [-1.1, 0]]``, ``B_c = [[1, -1], [-1, 2]]``, ``T = 2`` s; :func:`seed_plant`
gives it a delay of ``factor * T``.  The arrays are read-only, since every test module shares
them.
"""

from __future__ import annotations

import numpy as np

from dmdidc.model import DelayedPlant

A_C = np.array([[0.0, 1.1], [-1.1, 0.0]])
B_C = np.array([[1.0, -1.0], [-1.0, 2.0]])
A_C.flags.writeable = B_C.flags.writeable = False
T = 2.0


def seed_plant(factor: float, **options) -> DelayedPlant:
    """The seed plant with the delay ``factor * T`` (``options`` of ``from_continuous``)."""
    return DelayedPlant.from_continuous(A_C, B_C, delay=factor * T, dt=T, **options)
