"""DP-SGD in numpy: per-example gradients, Poisson sampling, clipping, Gaussian or SaS noise.

Privacy unit: one training example (add-or-remove; the data set's size is treated as public
unless ``DPSGDConfig(expected_batch_size=...)`` is fixed without it).  See
:mod:`privacy.dpsgd.train` for the algorithm and :mod:`privacy.dpsgd.noise` for the accounting
of a run.

Names are imported on first use (PEP 562): ``import privacy.dpsgd`` loads no numerics.
"""

from __future__ import annotations

from _toolbox.lazy import lazy_exports

# module -> the public names imported from it on first attribute access (PEP 562)
__all__, __getattr__, __dir__ = lazy_exports(globals(), {
    "privacy.dpsgd.models": ["LogisticModel", "MLPModel", "SoftmaxModel", "cross_entropy"],
    "privacy.dpsgd.noise": ["GradientNoise", "calibrate_noise", "dpsgd_epsilon", "dpsgd_event"],
    "privacy.dpsgd.train": ["DPSGDConfig", "DPSGDResult", "dpsgd_train", "poisson_batches"],
})
