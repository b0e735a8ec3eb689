"""Reproductions and studies: the dissertation's figures and experiments, and the identification
and learning studies the README reports.

Each module is one study with its configuration, runner, writers and figures; the ``dmdidc``
command (:mod:`simulations.cli`) runs them.

* :mod:`~simulations.studies.fractional_delay`: Figure 9.1 (``dmdidc demo``);
* :mod:`~simulations.studies.private_identification`, :mod:`~simulations.studies.statistics_audit`,
  :mod:`~simulations.studies.federated_identification`: private and federated identification;
* :mod:`~simulations.studies.sas_figures`: the SaS chapters' figures (Ch. 3-4);
* :mod:`~simulations.studies.dpsgd`, :mod:`~simulations.studies.audit`: DP-SGD and audits (Ch. 4);
* :mod:`~simulations.studies.esn_attack`, :mod:`~simulations.studies.sifl`: Ch. 6 and SIFL;
* :mod:`~simulations.studies.federated` with :mod:`~simulations.studies.federated_experiments`,
  :mod:`~simulations.studies.federated_datasets` and :mod:`~simulations.studies.federated_flower`:
  the Ch. 8 federated experiments (numpy runner and Flower).

Studies are reached as submodules (``simulations.studies.dpsgd``), imported on first use.
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

__all__: list[str] = []

__getattr__, __dir__ = lazy_attributes(__name__, {}, globals(), submodules=True)
