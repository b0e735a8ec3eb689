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
"""

try:
    import flwr  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without flwr
    raise ImportError("privacy.federated.flower needs Flower: pip install 'dmdidc[federated]' "
                      "(flwr>=1.41,<1.42)") from exc

from privacy.federated.flower.app import DeployedApps, FactorySpec, deployed_apps, load_result
from privacy.federated.flower.asynchronous import run_async_grid
from privacy.federated.flower.client import (
    IDENTIFY,
    NUM_PARTITIONS,
    PARTITION_ID,
    STATE_DIR,
    TRAIN,
    load_client_state,
    make_client_app,
    save_client_state,
)
from privacy.federated.flower.deploy import (
    LocalDeployment,
    free_ports,
    run_deployment,
    write_app,
)
from privacy.federated.flower.inprocess import (
    InProcessGrid,
    VirtualClock,
    ensure_task_identity,
    run_inprocess_async,
    run_inprocess_sync,
)
from privacy.federated.flower.sync import ProtocolStrategy, run_sync_grid
from privacy.federated.flower.transport import WallClock, discover_clients

__all__ = [
    "IDENTIFY",
    "NUM_PARTITIONS",
    "PARTITION_ID",
    "STATE_DIR",
    "TRAIN",
    "DeployedApps",
    "FactorySpec",
    "InProcessGrid",
    "LocalDeployment",
    "ProtocolStrategy",
    "VirtualClock",
    "WallClock",
    "deployed_apps",
    "discover_clients",
    "ensure_task_identity",
    "free_ports",
    "load_result",
    "load_client_state",
    "make_client_app",
    "run_async_grid",
    "run_deployment",
    "run_inprocess_async",
    "run_inprocess_sync",
    "run_sync_grid",
    "save_client_state",
    "write_app",
]
