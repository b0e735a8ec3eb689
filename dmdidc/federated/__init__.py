"""Federated identification: statistics of many clients combined, on the federation engine.

* :mod:`~dmdidc.federated.combine`: the posterior of the summed statistics from noisy releases
  (:func:`combine_statistics`, FedInfer's estimate);
* :mod:`~dmdidc.federated.identification`: :class:`FederatedIdentification`, the algorithm that
  runs on :mod:`privacy.federated`'s runtimes;
* :mod:`~dmdidc.federated.screening`: what an honest client's release can be (the server's
  screen of every reply against poisoned statistics).

``dmdidc.federated`` was one module; every name it had is still importable from here (its
names are imported on first use, PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "dmdidc.federated.combine": ["combine_statistics", "statistics_posterior", "statistics_box",
                                 "release_noises"],
    "dmdidc.federated.identification": ["FederatedIdentification", "ReleaseAccount"],
})
