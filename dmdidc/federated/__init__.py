"""Federated identification: statistics of many clients combined, on the federation engine.

* :mod:`~dmdidc.federated.combine`: the posterior of the summed statistics from noisy releases
  (:func:`combine_statistics`, FedInfer's estimate);
* :mod:`~dmdidc.federated.identification`: :class:`FederatedIdentification`, the algorithm that
  runs on :mod:`privacy.federated`'s runtimes.

``dmdidc.federated`` was one module; every name it had is still importable from here (its
names are imported on first use, PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import lazy_attributes

# public name -> module that defines it (imported on first attribute access, PEP 562)
_EXPORTS = {
    "combine_statistics": "dmdidc.federated.combine",
    "statistics_posterior": "dmdidc.federated.combine",
    "statistics_box": "dmdidc.federated.combine",
    "release_noises": "dmdidc.federated.combine",
    "FederatedIdentification": "dmdidc.federated.identification",
    "ReleaseAccount": "dmdidc.federated.identification",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS, globals())
