"""Federated learning: the protocol, a numpy reference runtime, FedInfer and the FedAvg family.

The algorithms are plain numpy objects speaking :mod:`privacy.federated.protocol`; runtimes
(the reference runner here, Flower adapters) only move their messages.
"""

from privacy.federated.fedinfer import FedInfer
from privacy.federated.gradient import FedAvg, FedLin, FedNova, FedProx, Scaffold
from privacy.federated.local_dp import LocalDP
from privacy.federated.models import KernelFeatures, LeastSquaresModel, SeparableLoss
from privacy.federated.posterior import GaussianPosterior, GridPosterior, NoiseLaw
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
    "FedAvg",
    "FedInfer",
    "FedLin",
    "FedNova",
    "FedProx",
    "FederatedAlgorithm",
    "GaussianPosterior",
    "GridPosterior",
    "KernelFeatures",
    "LeastSquaresModel",
    "LocalDP",
    "Message",
    "Network",
    "NoiseLaw",
    "Reply",
    "RoundPlan",
    "RoundRecord",
    "RunResult",
    "Scaffold",
    "SeparableLoss",
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
