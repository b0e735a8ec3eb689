"""Flower as the runtime of every protocol algorithm (in-process, or real processes).

The algorithms (:mod:`privacy.federated`) are plain numpy objects speaking
:mod:`privacy.federated.protocol`; this package carries their messages over Flower 1.41's
Message API:

* :func:`make_client_app` — the ClientApp (client half, state in ``context.state``);
* :class:`ProtocolStrategy` / :func:`run_sync_grid` — synchronous rounds on any Flower grid;
* :func:`run_async_grid` — the asynchronous loop (seed Algorithm 2, stagger rates) on the
  grid's non-blocking ``push_messages`` / ``pull_messages``;
* :class:`InProcessGrid`, :func:`run_inprocess_sync`, :func:`run_inprocess_async` — Flower in
  this process, without Ray, for tests and quick runs;
* :func:`write_app`, :class:`LocalDeployment`, :func:`run_deployment` — real
  ``flower-superlink`` / ``flower-supernode`` processes on 127.0.0.1 (``dmdidc federated
  serve``).

``flwr`` is an optional dependency (``pip install 'dmdidc[federated]'``), imported only here.
The names below are imported on first use (PEP 562): ``import privacy.federated.flower``
checks that Flower is installed and loads none of it.
"""

from __future__ import annotations

import importlib.util

from _toolbox.lazy import lazy_exports


def _flower_found() -> bool:
    """Whether flwr can be imported, found without importing it (a Flower import takes
    seconds); a finder may also refuse it by raising ImportError."""
    try:
        return importlib.util.find_spec("flwr") is not None
    except ImportError:
        return False


if not _flower_found():  # pragma: no cover - exercised only without flwr
    raise ImportError("privacy.federated.flower needs Flower: pip install 'dmdidc[federated]' "
                      "(flwr>=1.41,<1.42)")

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "privacy.federated.flower.app": ["DeployedApps", "FactorySpec", "deployed_apps",
                                     "load_result"],
    "privacy.federated.flower.asynchronous": ["run_async_grid"],
    "privacy.federated.flower.client": ["IDENTIFY", "NUM_PARTITIONS", "PARTITION_ID",
                                        "SIMULATION_SEED", "STATE_DIR", "TRAIN",
                                        "load_client_secret", "load_client_state",
                                        "make_client_app", "node_secret",
                                        "save_client_secret", "save_client_state"],
    "privacy.federated.flower.deploy": ["LocalDeployment", "Terminated", "free_ports",
                                        "run_deployment",
                                        "write_app"],
    "privacy.federated.flower.inprocess": ["InProcessGrid", "VirtualClock",
                                           "ensure_task_identity", "run_inprocess_async",
                                           "run_inprocess_sync"],
    "privacy.federated.flower.resume": ["check_client_states", "copy_client_states"],
    "privacy.federated.flower.sync": ["ProtocolStrategy", "run_sync_grid"],
    "privacy.federated.flower.transport": ["WallClock", "discover_clients"],
})
