"""Federated learning and its privacy: FedInfer, the FedAvg family, SIFL, attacks on them.

This part (issue 11): the reconstruction attack on federated echo state networks and its noise
defence (seed Ch. 6), and immersion-coded FL (SIFL, Algorithms 1-2 of the immersion paper) with
plain FL, the NbAFL baseline and attacks on the codes.
"""

from privacy.federated.esn_attack import (
    EchoStateReservoir,
    ReconstructionResult,
    ReservoirStatistics,
    attack_loss_and_gradient,
    reconstruct_input,
    reconstruct_input_subspace,
    relative_error,
    seed_input,
    strongest_attack,
)
from privacy.federated.esn_defence import (
    DefencePrivacy,
    clip_input,
    defence_privacy,
    noise_for_snr,
    privatize_statistics,
    statistics_sensitivity,
)
from privacy.federated.sifl import (
    AggregatorCode,
    ClientData,
    ImmersionCode,
    Transcript,
    nbafl_noise_multiplier,
    run_nbafl,
    run_plain_fl,
    run_sifl,
)
from privacy.federated.sifl_attacks import (
    client_difference_attack,
    element_epsilon,
    noise_subspace_attack,
    server_scale_attack,
)
from privacy.federated.sifl_models import MLP, LocalOptimizer, SoftmaxRegression

__all__ = [
    "AggregatorCode",
    "ClientData",
    "DefencePrivacy",
    "EchoStateReservoir",
    "ImmersionCode",
    "LocalOptimizer",
    "MLP",
    "ReconstructionResult",
    "ReservoirStatistics",
    "SoftmaxRegression",
    "Transcript",
    "attack_loss_and_gradient",
    "client_difference_attack",
    "clip_input",
    "defence_privacy",
    "element_epsilon",
    "nbafl_noise_multiplier",
    "noise_for_snr",
    "noise_subspace_attack",
    "privatize_statistics",
    "reconstruct_input",
    "reconstruct_input_subspace",
    "relative_error",
    "run_nbafl",
    "run_plain_fl",
    "run_sifl",
    "seed_input",
    "server_scale_attack",
    "statistics_sensitivity",
    "strongest_attack",
]
