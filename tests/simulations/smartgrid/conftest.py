"""Shared settings of the smart-grid tests."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """These tests multiply 2x2 to 6x6 matrices: BLAS threads add only latency, and on a busy
    machine with two threads per process a 4x4 ``expm`` took 29 ms instead of 0.07 ms."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
