"""The order search when no order from the noise-edge count gives a fit (dmdidc.output)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dmdidc import OutputDMDidc
from dmdidc.errors import NonFiniteError
from dmdidc.output import estimator as output_estimator
from dmdidc.output.subspace import SubspaceBasis
from tests.dmdidc.output.test_estimator import R, T, _experiment


@pytest.mark.parametrize("seed", range(3))
def test_a_count_with_no_finite_fit_falls_back_to_the_orders_below(seed, monkeypatch):
    # a user trial: two output spikes raised the noise-edge count to max_order, whose
    # dynamics overflowed, and the fit was refused as unstable while order 3 fitted and
    # named the spikes.  Here the count is forced to 6 and every order from 4 overflows:
    # the orders below are searched and the plant's own order found
    plant, _, Y, U = _experiment(100 + seed, n=2, outputs=1, K=3000, snr_db=40.0)
    fit_order = output_estimator.OutputDMDidc._fit_order

    def overflowing(self, basis, experiments, R, dt, order, *args, **kwargs):
        if order >= 4:
            raise NonFiniteError(f"order-{order} dynamics overflowed (forced by the test)")
        return fit_order(self, basis, experiments, R, dt, order, *args, **kwargs)

    monkeypatch.setattr(output_estimator.OutputDMDidc, "_fit_order", overflowing)
    monkeypatch.setattr(SubspaceBasis, "detected_order", lambda self: 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = OutputDMDidc(max_delay=R).fit(Y, U, dt=T)
    assert est.order_ == 2
    assert "no order from 6 gave a finite fit" in est.order_rule_
    assert np.max(np.abs(est.delay - plant.delay)) < 0.1 * T
