"""lqr_gain refuses every unstabilizable pair with the ParameterError that names the mode."""

from __future__ import annotations

import numpy as np
import pytest

from _toolbox.errors import ParameterError
from controllers.gains import lqr_gain


def pair_missing_a_mode(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """A random A (n = 2..4) with one real unstable mode and B (m = 1, 2) orthogonal to that
    mode's left eigenvector (no input reaches it), and the mode."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 5)), int(rng.integers(1, 3))
    mode = rng.uniform(1.05, 1.5)
    values = np.concatenate([[mode], rng.uniform(-0.8, 0.8, n - 1)])
    S = rng.standard_normal((n, n)) + 2 * np.eye(n)
    A = S @ np.diag(values) @ np.linalg.inv(S)
    y = np.linalg.inv(S)[0]                          # left eigenvector of the mode
    B = rng.standard_normal((n, m))
    B -= np.outer(y, y @ B) / (y @ y)                # y' B = 0
    return A, B, mode


@pytest.mark.parametrize("seed", range(8))
def test_an_unreached_unstable_mode_is_a_parameter_error_naming_it(seed):
    A, B, mode = pair_missing_a_mode(seed)
    with pytest.raises(ParameterError, match="not stabilizable") as info:
        lqr_gain(A, B)
    assert f"{mode:.6f}"[:6] in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("seed", range(8))
def test_a_reached_mode_still_gets_its_gain(seed):
    A, B, _ = pair_missing_a_mode(seed)
    B = B + 0.1 * np.random.default_rng(seed + 100).standard_normal(B.shape)
    K = lqr_gain(A, B)
    assert np.max(np.abs(np.linalg.eigvals(A - B @ K))) < 1


@pytest.mark.parametrize("angle", [0.3, 1.0, 2.5])
def test_a_rotation_without_inputs_names_its_mode(angle):
    c, s = np.cos(angle), np.sin(angle)
    with pytest.raises(ParameterError, match=r"\|lambda\| = 1 >= 1"):
        lqr_gain([[c, -s], [s, c]], np.zeros((2, 1)))


def test_the_trial_pair():
    with pytest.raises(ParameterError, match="1.23197"):
        lqr_gain([[1.15, 0.3], [0.2, 0.5]], np.zeros((2, 1)))
