"""Federated learning and its privacy.

The protocol between algorithms and runtimes, the one server step they all run, a numpy
reference runtime, Federated Inference (dissertation Ch. 7) and the FedAvg family (Ch. 5) with
local DP and composed accounting; the reconstruction attack on federated echo state networks
and its noise defence (Ch. 6); immersion-coded FL (SIFL) with the NbAFL baseline and attacks on
the codes.  The algorithms are plain numpy objects speaking :mod:`privacy.federated.protocol`;
the server half of every run is :class:`~privacy.federated.server_step.ServerStep`, and the
runtimes (the reference runner here, the Flower adapters in :mod:`privacy.federated.flower`)
only move their messages.

Names are imported on first use (PEP 562).
"""

from __future__ import annotations

from _toolbox.lazy import deprecated_attributes, lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, _lazy_getattr, __dir__ = lazy_exports(globals(), {
    "privacy.federated.esn_attack": ["EchoStateReservoir", "ReconstructionResult",
                                     "ReservoirStatistics", "attack_loss_and_gradient",
                                     "reconstruct_input", "reconstruct_input_subspace",
                                     "relative_error", "seed_input", "strongest_attack"],
    "privacy.federated.esn_defence": ["DefencePrivacy", "clip_input", "defence_privacy",
                                      "noise_for_snr", "privatize_statistics",
                                      "statistics_sensitivity"],
    "privacy.federated.fedinfer": ["FedInfer"],
    "privacy.federated.gradient": ["FedAvg", "FedLin", "FedNova", "FedProx", "Scaffold"],
    "privacy.federated.local_dp": ["LocalDP"],
    "privacy.federated.models": ["KernelFeatures", "LeastSquaresModel", "SeparableLoss"],
    "privacy.federated.posterior": ["GaussianPosterior", "GridPosterior"],
    "privacy.federated.noise": ["ReleaseNoise", "ReleaseSumNoise"],
    "privacy.federated.protocol": ["ABSTAIN", "AsyncAlgorithm", "CLIENT", "ClientResult",
                                   "ClientState", "DP_RELEASES", "FederatedAlgorithm", "Message",
                                   "ROUND", "Reply", "RoundPlan", "SEED", "ServerState", "VERSION",
                                   "derive_rng", "load_server_state", "new_client_secret",
                                   "run_client", "save_server_state", "simulation_secret",
                                   "validate_reply"],
    "privacy.federated.release_sum": ["LaplaceSum", "sum_posterior", "summed_noise_law"],
    "privacy.federated.runner": ["Network", "run_async", "run_sync", "stagger_schedule"],
    "privacy.federated.results": ["RoundRecord", "RunResult"],
    "privacy.federated.server_step": ["ServerStep", "Verdict"],
    "privacy.federated.sifl": ["AggregatorCode", "ClientData", "ImmersionCode", "Transcript",
                               "nbafl_noise_multiplier", "run_nbafl", "run_plain_fl", "run_sifl"],
    "privacy.federated.sifl_attacks": ["client_difference_attack", "element_epsilon",
                                       "noise_subspace_attack", "server_scale_attack"],
    "privacy.federated.sifl_models": ["LocalOptimizer", "MLP", "SoftmaxRegression"],
}, submodules=True)
# Old names of renamed objects: served on access with a DeprecationWarning (here and in the
# modules that defined or re-exported them: noise, posterior)
_RENAMED = {"NoiseLaw": ("privacy.federated.noise.ReleaseSumNoise",
                         "renamed: privacy.noise.NoiseLaw is the law of one coordinate of a "
                         "mechanism's noise; this is the noise of a weighted sum of releases")}
__getattr__ = deprecated_attributes(__name__, _RENAMED, fallback=_lazy_getattr)
