"""Settings shared by the whole test suite."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    """The tests multiply small matrices: BLAS threads add only latency, and with two pytest
    workers on two cores each extra thread oversubscribes them (a 4x4 ``expm`` took 29 ms
    instead of 0.07 ms on a busy machine). ``make test`` also sets OPENBLAS_NUM_THREADS=1."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
