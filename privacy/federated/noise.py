"""The one noise type of :mod:`privacy.federated`: the noise of releases and of their sums.

A :class:`ReleaseSumNoise` is the per-coordinate law of ``sum_i w_i R_i``, where the ``R_i``
are i.i.d. release noises of one kind (Gaussian sigma, Laplace b, or symmetric alpha-stable
gamma) and one scale.  One release is the default ``weights=(1.0,)``; a full observation of
FedInfer's global block (seed 7.18 synchronous, 7.24 asynchronous) is a weighted sum.  Per
coordinate:

* Gaussian releases: normal with sd ``sigma sqrt(sum w_i^2)``;
* SaS releases: SaS with scale ``gamma (sum |w_i|^alpha)^(1/alpha)`` (stability, seed eq. 3.8:
  the sum is again SaS, so the likelihood is exact);
* Laplace releases with equal weights ``w``: the sum of ``m`` Laplace(b w) variables, whose
  density is the closed form ``exp(-z) / (2^m (m-1)! s) sum_j (m-1+j)! / (j! (m-1-j)!)
  2^-j z^(m-1-j)``, ``z = |x| / s`` (a variance-gamma law with half-integer Bessel order).
  Unequal weights have no such closed form and are refused (sums of Laplace releases with
  different scales: :func:`privacy.federated.release_sum.summed_noise_law`).

Everything in the federation that names a noise uses this type or its kinds
(:data:`NOISE_KINDS`, :func:`check_noise_kind`, :func:`noise_norm`): FedInfer's posterior, the
posterior of a sum of releases (``ReleaseNoise`` is the old name of
:meth:`ReleaseSumNoise.release`), local DP's release description
(:class:`~privacy.federated.local_dp.LocalDP`'s ``noise``) and SIFL's encoding noise
(:meth:`ReleaseSumNoise.from_std`).  :meth:`ReleaseSumNoise.from_mechanism` reads the law a
:mod:`privacy.mechanisms` mechanism adds: its :class:`privacy.noise.NoiseLaw`, the law of one
coordinate of one release that the accountant reads.

``ReleaseSumNoise`` was called ``NoiseLaw`` here, the name of that other type; the old name
still works (``privacy.federated.noise.NoiseLaw``, ``privacy.federated.NoiseLaw`` and
``privacy.federated.posterior.NoiseLaw``), with a ``DeprecationWarning``.

References
----------
Seed eqs. (3.1)-(3.2), (3.7)-(3.8), (7.4)-(7.5), (7.16)-(7.19), (7.24)-(7.25).

Examples
--------
>>> law = ReleaseSumNoise("sas", 1.0, (1.0, 1.0), alpha=1.0)   # sum of two Cauchy(1)
>>> round(law.combined_scale, 12)
2.0
>>> one = ReleaseSumNoise.release("laplace", 2.0)
>>> one.kind, one.norm, one.weights
('laplace', 'l1', (1.0,))
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from _toolbox.errors import ParameterError
from _toolbox.lazy import deprecated_attributes
from _toolbox.validation import as_generator, check_in_interval, check_positive
from privacy import noise as coordinate_noise
from privacy import stable
from privacy.federated import _RENAMED

__all__ = ["NOISE_KINDS", "ReleaseSumNoise", "ReleaseNoise", "check_noise_kind", "noise_norm"]

#: The noise kinds of the federation (Gaussian sigma, Laplace b, symmetric alpha-stable gamma).
NOISE_KINDS = ("gaussian", "laplace", "sas")
_MAX_LAPLACE_TERMS = 400


def check_noise_kind(kind: Any, allowed: tuple[str, ...] = NOISE_KINDS) -> str:
    """``kind`` when it is one of ``allowed``.

    Raises
    ------
    ParameterError
        Any other value, naming the allowed kinds.
    """
    if kind not in allowed:
        raise ParameterError(f"noise law kind must be one of {allowed}; got {kind!r}")
    return kind


def noise_norm(noise: str) -> str:
    """The sensitivity norm of a noise law: ``"l2"`` for Gaussian, ``"l1"`` for Laplace / SaS."""
    return "l2" if check_noise_kind(noise) == "gaussian" else "l1"


@dataclass(frozen=True)
class ReleaseSumNoise:
    """Law of ``sum_i w_i R_i`` with i.i.d. release noises ``R_i`` (per coordinate).

    Parameters
    ----------
    noise : {"gaussian", "laplace", "sas"}
        The kind of every ``R_i``.
    scale : float
        Scale of one release's noise (Gaussian sigma, Laplace b, SaS gamma).
    weights : tuple of float, default (1.0,)
        Weights of the releases summed (one release: ``(1.0,)``; a synchronous full
        observation: ``K`` ones; asynchronous: ``gamma_k / Gamma`` repeated ``Gamma / gamma_k``
        times per client, seed 7.25).
    alpha : float, default 1.5
        SaS index in (0, 2] (used by ``noise="sas"`` only).

    Raises
    ------
    ParameterError
        Unknown kind, non-positive scale or weight, no weight, alpha outside (0, 2], or a
        Laplace sum with unequal weights or more than 400 terms.
    """

    noise: str
    scale: float
    weights: tuple[float, ...] = (1.0,)
    alpha: float = 1.5

    def __post_init__(self) -> None:
        check_noise_kind(self.noise)
        object.__setattr__(self, "scale", check_positive("scale", self.scale))
        weights = tuple(check_positive("weight", w) for w in self.weights)
        if not weights:
            raise ParameterError("weights must hold at least one release weight")
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "alpha", check_in_interval("alpha", self.alpha, 0.0, 2.0,
                                                            low_open=True))
        if self.noise == "laplace":
            if max(weights) - min(weights) > 1e-12 * max(weights):
                raise ParameterError(f"Laplace noise needs equal release weights (the law of a "
                                     f"weighted Laplace sum has no closed form here); got "
                                     f"{sorted(set(weights))}. Use Gaussian or SaS noise with "
                                     f"unequal stagger rates")
            if len(weights) > _MAX_LAPLACE_TERMS:
                raise ParameterError(f"Laplace sums of more than {_MAX_LAPLACE_TERMS} releases "
                                     f"are not supported (got {len(weights)}); use Gaussian "
                                     f"or SaS noise")

    # ---------------------------------------------------------------- constructors
    @classmethod
    def release(cls, kind: str, scale: float, alpha: float = 2.0) -> ReleaseSumNoise:
        """The noise of one release (formerly ``ReleaseNoise(kind, scale, alpha)``).

        ``alpha`` must lie in (0, 2) for SaS; it is ignored by the other kinds.
        """
        if check_noise_kind(kind) == "sas":
            alpha = check_in_interval("alpha", alpha, 0.0, 2.0, low_open=True, high_open=True)
        return cls(kind, scale, alpha=alpha)

    @classmethod
    def from_std(cls, kind: str, std: float) -> ReleaseSumNoise:
        """One release of Gaussian or Laplace noise with standard deviation ``std``.

        Raises
        ------
        ParameterError
            SaS noise (alpha < 2 has no finite variance) or a non-positive ``std``.
        """
        std = check_positive("std", std)
        kind = check_noise_kind(kind, ("gaussian", "laplace"))
        return cls(kind, std if kind == "gaussian" else std / math.sqrt(2.0))

    @classmethod
    def from_mechanism(cls, mechanism: Any) -> ReleaseSumNoise:
        """The noise one release of a :mod:`privacy.mechanisms` mechanism adds per coordinate.

        Raises
        ------
        ParameterError
            A mechanism whose law is not Gaussian, Laplace or SaS.
        """
        law = getattr(mechanism, "noise", None)
        if isinstance(law, coordinate_noise.GaussianNoise):
            return cls.release("gaussian", law.scale)
        if isinstance(law, coordinate_noise.LaplaceNoise):
            return cls.release("laplace", law.scale)
        if isinstance(law, coordinate_noise.SaSNoise):
            return cls.release("sas", law.scale, law.alpha)
        raise ParameterError(f"release with mechanism {type(mechanism).__name__} has no noise "
                             f"law here; expected Gaussian, Laplace or SaS")

    # ---------------------------------------------------------------- properties
    @property
    def kind(self) -> str:
        """The noise kind (the same as ``noise``)."""
        return self.noise

    @property
    def norm(self) -> str:
        """The sensitivity norm that matches this noise (:func:`noise_norm`)."""
        return noise_norm(self.noise)

    @functools.cached_property
    def combined_scale(self) -> float:
        """Gaussian: sd of the sum; SaS: its scale; Laplace: scale of one weighted term.

        (Computed once: a synchronous FedInfer round's law sums ``K`` weights, and its
        posterior asks for this scale every round.)
        """
        w = np.asarray(self.weights)
        if self.noise == "gaussian":
            return self.scale * float(np.sqrt(np.sum(w ** 2)))
        if self.noise == "sas":
            return self.scale * float(np.sum(w ** self.alpha) ** (1.0 / self.alpha))
        return self.scale * float(w[0])

    @property
    def spread(self) -> float:
        """A scale of the whole sum (sd for Gaussian, SaS scale, sqrt(2m) b w for Laplace)."""
        if self.noise == "laplace":
            return self.combined_scale * math.sqrt(2.0 * len(self.weights))
        return self.combined_scale

    # ---------------------------------------------------------------- density and draws
    def logpdf(self, x: Any) -> np.ndarray:
        """Log density of the summed noise at ``x`` (any shape)."""
        x = np.asarray(x, dtype=float)
        s = self.combined_scale
        if self.noise == "gaussian":
            return -0.5 * (x / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)
        if self.noise == "sas":
            return stable.sas_logpdf(x, self.alpha, s)
        m = len(self.weights)
        z = np.abs(x) / s
        j = np.arange(m)
        log_a = (special.gammaln(m + j) - special.gammaln(j + 1) - special.gammaln(m - j)
                 - j * math.log(2.0))
        power = (m - 1 - j).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            logz = np.log(z)[..., None]
            terms = np.where(power == 0, log_a, log_a + power * logz)
        return (-z - m * math.log(2.0) - special.gammaln(m) - math.log(s)
                + special.logsumexp(terms, axis=-1))

    def sample(self, shape: tuple[int, ...], rng: np.random.Generator | int | None = None
               ) -> np.ndarray:
        """I.i.d. draws of the summed noise (explicit ``rng``: Generator, seed or None).

        Examples
        --------
        >>> draws = ReleaseSumNoise.from_std("laplace", 2.0).sample((20000,), rng=0)
        >>> bool(abs(draws.std() - 2.0) < 0.05)
        True
        """
        gen = as_generator(rng)
        s = self.combined_scale
        if self.noise == "gaussian":
            return gen.normal(0.0, s, shape)
        if self.noise == "sas":
            return np.asarray(stable.sas_sample(self.alpha, s, size=shape, rng=gen), dtype=float)
        if len(self.weights) == 1:
            return gen.laplace(0.0, s, shape)
        return gen.laplace(0.0, s, (len(self.weights),) + tuple(shape)).sum(axis=0)


#: The old name of :meth:`ReleaseSumNoise.release` (``ReleaseNoise(kind, scale, alpha=2.0)``).
ReleaseNoise = ReleaseSumNoise.release

# the old name of ReleaseSumNoise, NoiseLaw, with a DeprecationWarning
__getattr__ = deprecated_attributes(__name__, _RENAMED)
