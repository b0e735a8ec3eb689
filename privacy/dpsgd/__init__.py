"""DP-SGD in numpy: per-example gradients, Poisson sampling, clipping, Gaussian or SaS noise.

Privacy unit: one training example (add-or-remove).  See :mod:`privacy.dpsgd.train` for the
algorithm and :mod:`privacy.dpsgd.noise` for the accounting of a run.
"""

from privacy.dpsgd.models import LogisticModel, MLPModel, SoftmaxModel, cross_entropy
from privacy.dpsgd.noise import GradientNoise, calibrate_noise, dpsgd_epsilon, dpsgd_event
from privacy.dpsgd.train import DPSGDConfig, DPSGDResult, dpsgd_train, poisson_batches

__all__ = [
    "DPSGDConfig",
    "DPSGDResult",
    "GradientNoise",
    "LogisticModel",
    "MLPModel",
    "SoftmaxModel",
    "calibrate_noise",
    "cross_entropy",
    "dpsgd_epsilon",
    "dpsgd_event",
    "dpsgd_train",
    "poisson_batches",
]
