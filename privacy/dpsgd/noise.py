"""Noise of DP-SGD (Gaussian or SaS) and its composed privacy over a training run.

Privacy unit: **one training example** (add-or-remove neighbours).  One step releases the sum of
the l2-clipped per-example gradients of a Poisson sample plus noise on every coordinate; a run
composes ``steps`` such releases.  The accounting covers these noisy sums; the training loop's
default normaliser ``q n`` treats the data set's size ``n`` as public (see
:class:`privacy.dpsgd.DPSGDConfig`, ``expected_batch_size``).

* Gaussian noise ``N(0, sigma^2 I)``: exactly the subsampled Gaussian mechanism with sensitivity
  ``clip_norm``.
* SaS noise (i.i.d. coordinates): the release is a *vector*; it is accounted through its certified
  Gaussian equivalent :func:`privacy.vector_sas.sas_gaussian_equivalent_sigma` (see that module:
  the scalar SaS accountant does not apply to vectors and would over-claim).

A run is the event :func:`dpsgd_event` (``steps`` Poisson-sampled Gaussian releases), composed
by the one accountant (:class:`privacy.accountant.Accountant`, dp_accounting's PLD).

References
----------
Seed thesis Ch. 4 (SaS noise in DP-SGD, Tables 4.1-4.5); seed ``002`` Sec. 2 and 4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from _toolbox.errors import ParameterError
from _toolbox.validation import (
    as_generator,
    check_in_interval,
    check_integer,
    check_positive,
    check_probability,
)
from privacy import calibration, stable
from privacy.accountant import Accountant
from privacy.mechanisms import GaussianMechanism
from privacy.vector_sas import sas_gaussian_equivalent_sigma, sas_scale_for_gaussian_sigma

__all__ = ["GradientNoise", "dpsgd_event", "dpsgd_epsilon", "calibrate_noise"]

_LAWS = ("gaussian", "sas")


@dataclass(frozen=True)
class GradientNoise:
    """Noise law added to the clipped gradient sum, one i.i.d. draw per coordinate.

    Parameters
    ----------
    law : {"gaussian", "sas"}
    scale : float
        ``"gaussian"``: the standard deviation ``sigma``; ``"sas"``: the SaS scale ``gamma``
        (characteristic function ``exp(-|gamma t|^alpha)``).
    alpha : float, optional
        Stability index in ``[1, 2)``, required for ``"sas"`` and refused for ``"gaussian"``
        (use ``law="gaussian"`` for alpha = 2).

    Examples
    --------
    >>> from privacy.dpsgd import GradientNoise
    >>> noise = GradientNoise("sas", scale=0.5, alpha=1.9)
    >>> noise.label, noise.sample((2, 3), rng=0).shape
    ('sas_1.9', (2, 3))
    >>> round(noise.gaussian_equivalent_sigma, 4)     # accounted as Gaussian noise of this sigma
    0.7062
    """

    law: str
    scale: float
    alpha: float | None = None

    def __post_init__(self) -> None:
        if self.law not in _LAWS:
            raise ParameterError(f"law must be one of {_LAWS}; got {self.law!r}")
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        if self.law == "gaussian":
            if self.alpha is not None:
                raise ParameterError(f"alpha is only for law='sas'; got alpha={self.alpha!r} "
                                     f"with law='gaussian'")
        else:
            if self.alpha is None:
                raise ParameterError("law='sas' needs alpha in [1, 2); got alpha=None")
            object.__setattr__(self, "alpha", check_in_interval("alpha", self.alpha, 1.0, 2.0,
                                                                high_open=True))

    @property
    def label(self) -> str:
        """``"gaussian"`` or ``"sas_<alpha>"`` (the keys of the study's summary)."""
        return "gaussian" if self.law == "gaussian" else f"sas_{self.alpha:g}"

    @property
    def gaussian_equivalent_sigma(self) -> float:
        """Standard deviation of Gaussian noise that is at most as private (used for accounting)."""
        if self.law == "gaussian":
            return self.scale
        return sas_gaussian_equivalent_sigma(self.alpha, self.scale)

    @classmethod
    def from_gaussian_equivalent(cls, sigma: float, *, law: str,
                                 alpha: float | None = None) -> GradientNoise:
        """Smallest noise of ``law`` whose :attr:`gaussian_equivalent_sigma` is ``>= sigma``.

        Noises built from the same ``sigma`` have the same certified privacy in every run.

        Examples
        --------
        >>> from privacy.dpsgd import GradientNoise
        >>> GradientNoise.from_gaussian_equivalent(1.0, law="sas", alpha=2 - 1e-9).scale > 0.7
        True
        """
        sigma = check_positive("sigma", sigma)
        probe = cls(law, 1.0, alpha)
        if probe.law == "gaussian":
            return cls("gaussian", sigma)
        return cls("sas", sas_scale_for_gaussian_sigma(probe.alpha, sigma), probe.alpha)

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        """Log density of one noise coordinate at ``x`` (elementwise)."""
        x = np.asarray(x, dtype=float)
        if self.law == "gaussian":
            return stats.norm.logpdf(x, scale=self.scale)
        return stable.sas_logpdf(x, self.alpha, self.scale)

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator | int | None = None
               ) -> np.ndarray:
        """I.i.d. noise of the given shape."""
        gen = as_generator(rng)
        if self.law == "gaussian":
            return gen.normal(0.0, self.scale, size=shape)
        return stable.sas_sample(self.alpha, self.scale, size=shape, rng=gen)


def dpsgd_event(noise: GradientNoise, *, clip_norm: float, steps: int,
                sampling_rate: float) -> Any:
    """The ``DpEvent`` of a DP-SGD run: ``steps`` Poisson-sampled noisy gradient sums.

    Parameters
    ----------
    noise : GradientNoise
    clip_norm : float
        l2 clipping bound ``C`` of each per-example gradient (the sensitivity).
    steps : int
        Number of noisy steps ``N >= 1``.
    sampling_rate : float
        Poisson sampling probability ``q`` in ``(0, 1]``.

    Returns
    -------
    dp_accounting.dp_event.SelfComposedDpEvent
        ``N`` compositions of ``PoissonSampledDpEvent(q, GaussianDpEvent(sigma / C))`` with
        ``sigma = noise.gaussian_equivalent_sigma`` (exact for Gaussian noise, a certified
        dominating pair for SaS noise); without subsampling (``q = 1``) the Gaussian event
        itself.

    Examples
    --------
    >>> from privacy.dpsgd import GradientNoise, dpsgd_event
    >>> dpsgd_event(GradientNoise("gaussian", 2.0), clip_norm=1.0, steps=10, sampling_rate=0.1)
    ... # doctest: +NORMALIZE_WHITESPACE
    SelfComposedDpEvent(event=PoissonSampledDpEvent(sampling_probability=0.1,
        event=GaussianDpEvent(noise_multiplier=2.0)), count=10)
    """
    from dp_accounting import dp_event

    if not isinstance(noise, GradientNoise):
        raise ParameterError(f"noise must be a GradientNoise; got {type(noise).__name__}")
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("sampling_rate", sampling_rate, allow_zero=False)
    event = GaussianMechanism(sigma=noise.gaussian_equivalent_sigma,
                              sensitivity=check_positive("clip_norm", clip_norm)).to_dp_event()
    if q < 1.0:
        event = dp_event.PoissonSampledDpEvent(sampling_probability=q, event=event)
    return dp_event.SelfComposedDpEvent(event=event, count=steps)


def dpsgd_epsilon(noise: GradientNoise, *, clip_norm: float, steps: int, sampling_rate: float,
                  delta: float) -> float:
    """Composed epsilon (upper bound) of a DP-SGD run, privacy unit one example.

    Parameters
    ----------
    noise, clip_norm, steps, sampling_rate
        As in :func:`dpsgd_event`.
    delta : float
        Target delta.

    Returns
    -------
    float
        The accountant's epsilon for :func:`dpsgd_event` (unit: one example added or removed).

    Examples
    --------
    >>> from privacy.dpsgd import GradientNoise, dpsgd_epsilon
    >>> eps = dpsgd_epsilon(GradientNoise("gaussian", 1.0), clip_norm=1.0, steps=1000,
    ...                     sampling_rate=0.01, delta=1e-5)
    >>> 1.8 < eps < 1.9
    True
    """
    event = dpsgd_event(noise, clip_norm=clip_norm, steps=steps, sampling_rate=sampling_rate)
    return Accountant(unit="example").compose(event).epsilon(delta)


def calibrate_noise(target_epsilon: float, *, law: str, alpha: float | None = None,
                    clip_norm: float, steps: int, sampling_rate: float, delta: float,
                    rtol: float = 1e-3) -> GradientNoise:
    """Smallest noise (within ``rtol``) whose run meets ``target_epsilon`` by :func:`dpsgd_epsilon`.

    The Gaussian ``sigma`` comes from :func:`privacy.calibration.calibrate_gaussian_sigma`; the
    SaS scale is the one whose certified Gaussian equivalent equals that ``sigma`` (rounded up).

    Examples
    --------
    >>> from privacy.dpsgd import calibrate_noise
    >>> g = calibrate_noise(1.0, law="gaussian", clip_norm=1.0, steps=1000,
    ...                     sampling_rate=1e-2, delta=1e-5)
    >>> s = calibrate_noise(1.0, law="sas", alpha=1.999, clip_norm=1.0, steps=1000,
    ...                     sampling_rate=1e-2, delta=1e-5)
    >>> round(s.scale / (g.scale / 2 ** 0.5), 4)           # no smaller scale than the Gaussian's
    1.0
    """
    target = check_positive("target_epsilon", target_epsilon)
    GradientNoise(law, 1.0, alpha)   # validates law/alpha before the slow search
    sigma = calibration.calibrate_gaussian_sigma(
        target, delta=delta, steps=steps, sampling_rate=sampling_rate,
        sensitivity=check_positive("clip_norm", clip_norm), rtol=rtol)
    return GradientNoise.from_gaussian_equivalent(sigma, law=law, alpha=alpha)
