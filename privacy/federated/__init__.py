"""Federated learning: the protocol, a numpy reference runtime, FedInfer and the FedAvg family.

The algorithms are plain numpy objects speaking :mod:`privacy.federated.protocol`; runtimes
(the reference runner here, Flower adapters) only move their messages.
"""

from privacy.federated.protocol import (
    ABSTAIN,
    CLIENT,
    DP_RELEASES,
    ROUND,
    SEED,
    VERSION,
    AsyncAlgorithm,
    ClientResult,
    ClientState,
    FederatedAlgorithm,
    Message,
    Reply,
    RoundPlan,
    ServerState,
    derive_rng,
    load_server_state,
    run_client,
    save_server_state,
    validate_reply,
)
from privacy.federated.runner import (
    Network,
    RoundRecord,
    RunResult,
    run_async,
    run_sync,
    stagger_schedule,
)

__all__ = [
    "ABSTAIN",
    "CLIENT",
    "DP_RELEASES",
    "ROUND",
    "SEED",
    "VERSION",
    "AsyncAlgorithm",
    "ClientResult",
    "ClientState",
    "FederatedAlgorithm",
    "Message",
    "Network",
    "Reply",
    "RoundPlan",
    "RoundRecord",
    "RunResult",
    "ServerState",
    "derive_rng",
    "load_server_state",
    "run_async",
    "run_client",
    "run_sync",
    "save_server_state",
    "stagger_schedule",
    "validate_reply",
]
