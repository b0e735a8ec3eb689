"""The ``dmdidc`` command line: one entry point (:func:`main`), a module per command group.

* :mod:`~simulations.cli.root`: the ``dmdidc`` parser and :func:`main` (the console script);
* :mod:`~simulations.cli.common`: helpers shared by the groups (parser class, argument types,
  output paths, the summary tables); :mod:`~simulations.cli.atomic`: every output written
  atomically; :mod:`~simulations.cli.resources`: requests refused before they exhaust memory;
* ``demo``, ``identify``, ``simulate``: :mod:`~simulations.cli.demo`,
  :mod:`~simulations.cli.identify`, :mod:`~simulations.cli.simulate`;
* ``privacy``: :mod:`~simulations.cli.privacy` with :mod:`~simulations.cli.dpsgd` and
  :mod:`~simulations.cli.private_identification`;
* ``federated``: :mod:`~simulations.cli.federated` with :mod:`~simulations.cli.seed_fl`,
  :mod:`~simulations.cli.flower` and :mod:`~simulations.cli.federated_identification` (with
  :mod:`~simulations.cli.federated_files` for the users' files);
* ``smartgrid``: :mod:`~simulations.cli.smartgrid` with :mod:`~simulations.cli.smartgrid_sweep`.

Building the parser imports nothing heavy, so ``dmdidc --help`` starts fast.
"""

from __future__ import annotations

from simulations.cli.root import build_parser, main

__all__ = ["main", "build_parser"]
