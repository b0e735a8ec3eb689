"""Privacy of a *vector* of i.i.d. SaS noise under an l2 sensitivity (DP-SGD's release).

DP-SGD adds noise to a ``P``-dimensional sum of l2-clipped gradients.  Gaussian noise is
rotation invariant, so that release is exactly a scalar Gaussian mechanism with sensitivity
``C``.  A vector of i.i.d. SaS coordinates is *not* rotation invariant: a neighbour's gradient
spread over many coordinates (``d_i = C / sqrt(k)``) makes the privacy loss a sum of ``k`` small
bounded losses, which by the central limit theorem is Gaussian-like - the bounded loss that makes
the *scalar* SaS accountant beat the Gaussian disappears.  Accounting such a release with the
scalar SaS accountant (as the seed's Ch. 4 does through Opacus) is therefore an over-claim.

This module gives a bound valid for every dimension and every split of the shift:

**Bound.** i.i.d. ``SaS(alpha, gamma)`` noise on a query of l2-sensitivity ``C`` is ``mu``-GDP
(Dong, Roth & Su 2022) with

``mu = sqrt(2 pi) p_gamma(0) C = sqrt(2 / pi) Gamma(1 + 1/alpha) C / gamma``,

i.e. it is at least as private as Gaussian noise of standard deviation
``sigma_eq = gamma sqrt(pi / 2) / Gamma(1 + 1/alpha)`` (``= sqrt(2) gamma`` at alpha = 2, exact).

*Argument.* For a shift ``d`` the privacy-loss pair is the product of scalar pairs with shifts
``d_i``.  (a) The scalar pair of ``SaS(alpha, gamma)`` shifted by ``c`` is ``G_{mu_1 c}``-DP with
``mu_1 = sqrt(2 pi) p_gamma(0)``: at epsilon = 0 this compares total variations,
``TV = 2 F(c / 2) - 1 <= c p(0)`` (unimodal), against the Gaussian's ``2 Phi(mu / 2) - 1``; the
whole curve ``delta_SaS(eps) <= delta_G(eps)`` for ``eps >= 0`` (enough for symmetric pairs) is
verified numerically for alpha in [1, 2) and scale/shift ratios 0.05-100 in
``tests/privacy/test_vector_sas.py`` - it is a checked property, not a proof.  (b) Tensor
products of Gaussian trade-off functions add in quadrature, ``G_a (x) G_b = G_sqrt(a^2 + b^2)``,
so the product is ``G_{mu_1 ||d||_2}``-DP, and ``||d||_2 <= C``.  (c) Poisson subsampling and
composition of a GDP dominating pair are those of the Gaussian mechanism with ``sigma_eq``, which
``privacy.accounting`` composes (an upper bound).

**How tight.** In the spread limit (``k -> infinity``) the pair is locally asymptotically normal
with ``mu = C sqrt(I)``, ``I`` the Fisher information for location
(:func:`sas_location_fisher_information`); no bound valid for all dimensions can be below that.
``sigma_eq`` versus ``1 / sqrt(I)`` (unit scale): alpha = 1.999: 1.41420 vs 1.41489 (0.05 %
apart); 1.9: 1.41240 vs 1.45444 (3 %); 1.5: 1.38834 vs 1.52837 (10 %).  So at alpha = 1.999 the
certified scale is the Gaussian's ``sigma / sqrt(2)`` to 1e-5, and it cannot be improved by more
than 0.05 % by any dimension-free argument.

References
----------
J. Dong, A. Roth, W. J. Su, "Gaussian differential privacy", JRSS-B 2022 (GDP, tensor products,
Cor. 2.13).  Y. Zhu, J. Dong, Y.-X. Wang, AISTATS 2022 (dominating pairs under subsampling).
Seed ``002`` Sec. 4 (f-DP, GDP, DP-SGD); seed thesis Ch. 4 (SaS in DP-SGD via Opacus).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate

from _toolbox.validation import check_in_interval, check_positive
from privacy import stable

__all__ = ["sas_gdp_mu", "sas_gaussian_equivalent_sigma", "sas_scale_for_gaussian_sigma",
           "sas_location_fisher_information"]


def _check_alpha(alpha: float) -> float:
    # the scalar lemma (a) is verified for alpha in [1, 2]; alpha = 2 is the Gaussian itself
    return check_in_interval("alpha", alpha, 1.0, 2.0)


def sas_gaussian_equivalent_sigma(alpha: float, scale: float) -> float:
    """Standard deviation of the Gaussian noise that is at most as private as i.i.d. SaS noise.

    ``sigma_eq = scale * sqrt(pi / 2) / Gamma(1 + 1/alpha)``: DP-SGD (or any release of a vector
    with l2-sensitivity ``C``) with i.i.d. ``SaS(alpha, scale)`` noise is at least as private as
    with ``N(0, sigma_eq^2)`` noise, in every dimension (see the module docstring).

    Parameters
    ----------
    alpha : float
        Stability index in ``[1, 2]``.
    scale : float
        SaS scale ``gamma > 0``.

    Returns
    -------
    float
        ``sigma_eq`` (``sqrt(2) scale`` at alpha = 2).

    Raises
    ------
    ParameterError
        alpha outside ``[1, 2]`` or scale not positive.

    Examples
    --------
    >>> from privacy.vector_sas import sas_gaussian_equivalent_sigma
    >>> round(sas_gaussian_equivalent_sigma(2.0, 1.0), 6)      # sqrt(2)
    1.414214
    >>> round(sas_gaussian_equivalent_sigma(1.999, 1.0), 6)   # slightly below sqrt(2)
    1.414201
    """
    alpha = _check_alpha(alpha)
    scale = check_positive("scale", scale)
    return scale * math.sqrt(math.pi / 2.0) / math.gamma(1.0 + 1.0 / alpha)


def sas_scale_for_gaussian_sigma(alpha: float, sigma: float) -> float:
    """Smallest SaS scale whose :func:`sas_gaussian_equivalent_sigma` is at least ``sigma``.

    Rounded up to the next float where needed, so i.i.d. ``SaS(alpha, scale)`` noise is
    certified at least as private as ``N(0, sigma^2)`` noise (module docstring).

    Parameters
    ----------
    alpha : float
        Stability index in ``[1, 2]``.
    sigma : float
        Target Gaussian standard deviation ``> 0``.

    Returns
    -------
    float
        The SaS scale ``gamma``.

    Raises
    ------
    ParameterError
        alpha outside ``[1, 2]`` or sigma not positive.

    Examples
    --------
    >>> from privacy.vector_sas import sas_gaussian_equivalent_sigma, sas_scale_for_gaussian_sigma
    >>> scale = sas_scale_for_gaussian_sigma(1.5, 2.0)
    >>> sas_gaussian_equivalent_sigma(1.5, scale) >= 2.0
    True
    """
    alpha = _check_alpha(alpha)
    sigma = check_positive("sigma", sigma)
    scale = sigma / sas_gaussian_equivalent_sigma(alpha, 1.0)
    while sas_gaussian_equivalent_sigma(alpha, scale) < sigma:
        scale = math.nextafter(scale, math.inf)
    while sas_gaussian_equivalent_sigma(alpha, below := math.nextafter(scale, 0.0)) >= sigma:
        scale = below
    return scale


def sas_gdp_mu(alpha: float, scale: float, sensitivity: float = 1.0) -> float:
    """GDP parameter ``mu`` of one release of i.i.d. SaS noise on a vector query.

    ``mu = sensitivity / sas_gaussian_equivalent_sigma(alpha, scale)``, valid for every dimension
    when ``sensitivity`` bounds the l2 norm of the change of the query (an l1 bound works too,
    since ``||d||_2 <= ||d||_1``).

    Examples
    --------
    >>> from privacy.vector_sas import sas_gdp_mu
    >>> round(sas_gdp_mu(2.0, 1.0, 1.0), 6)                    # 1 / sqrt(2)
    0.707107
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    return sensitivity / sas_gaussian_equivalent_sigma(alpha, scale)


def sas_location_fisher_information(alpha: float, scale: float = 1.0) -> float:
    """Fisher information for location ``I = int p'(x)^2 / p(x) dx`` of ``SaS(alpha, scale)``.

    ``1 / (2 scale^2)`` at alpha = 2 and at alpha = 1 (Cauchy).  ``C sqrt(I)`` is the GDP
    parameter of the spread-shift limit, a lower bound for any dimension-free bound (module
    docstring).  Computed by adaptive quadrature of the central-difference score of
    :func:`privacy.stable.sas_logpdf` (relative accuracy about 1e-8).

    Examples
    --------
    >>> from privacy.vector_sas import sas_location_fisher_information
    >>> round(sas_location_fisher_information(1.0), 6)
    0.5
    """
    alpha = _check_alpha(alpha)
    scale = check_positive("scale", scale)

    def integrand(x: float) -> float:
        h = 1e-5 * max(1.0, x)
        lp = stable.sas_logpdf(np.array([x - h, x, x + h]), alpha, 1.0)
        score = (lp[2] - lp[0]) / (2.0 * h)
        return score * score * math.exp(lp[1])

    pieces = [0.0, 1.0, 3.0, 10.0, 100.0, math.inf]
    total = sum(integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-10, limit=200)[0]
                for a, b in zip(pieces[:-1], pieces[1:], strict=True))
    return 2.0 * total / scale ** 2
