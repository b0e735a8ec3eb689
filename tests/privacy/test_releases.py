"""The release rule, the same for every mechanism: one query of the declared dimension per call,
columns of a (dimension, K) array are a batch of K releases, every other shape is refused."""

from __future__ import annotations

import numpy as np
import pytest

from privacy import (
    DimensionError,
    GaussianMechanism,
    LaplaceMechanism,
    NonFiniteError,
    ParameterError,
    SaSMechanism,
)


def mechanisms(dimension):
    return [LaplaceMechanism(scale=1.0, dimension=dimension),
            GaussianMechanism(sigma=1.0, dimension=dimension),
            SaSMechanism(alpha=1.5, scale=1.0, dimension=dimension)]


NAMES = ["laplace", "gaussian", "sas"]


@pytest.mark.parametrize("index", range(3), ids=NAMES)
def test_accepted_layouts_and_release_counts(index):
    scalar = mechanisms(1)[index]
    assert isinstance(scalar.randomize(2.0, rng=0), float)
    assert scalar.releases(()) == 1
    assert scalar.randomize(np.ones(1), rng=0).shape == (1,)
    assert scalar.randomize(np.ones((1, 7)), rng=0).shape == (1, 7)
    assert scalar.releases((1, 7)) == 7
    pair = mechanisms(2)[index]
    assert pair.randomize(np.ones(2), rng=0).shape == (2,)
    assert pair.releases((2,)) == 1
    assert pair.randomize(np.ones((2, 5)), rng=0).shape == (2, 5)
    assert pair.releases((2, 5)) == 5


@pytest.mark.parametrize("index", range(3), ids=NAMES)
@pytest.mark.parametrize("dimension,shape", [(2, (2, 1, 1)), (2, (3,)), (2, (1, 2)), (2, ()),
                                             (1, (3,)), (1, (3, 1)), (3, (2, 3))])
def test_every_other_shape_is_refused(index, dimension, shape):
    mech = mechanisms(dimension)[index]
    with pytest.raises(DimensionError, match=f"dimension {dimension}"):
        mech.randomize(np.zeros(shape), rng=0)
    with pytest.raises(DimensionError):
        mech.releases(shape)


def test_shape_two_by_one_is_one_release_of_a_pair():
    """(2, 1) for dimension 2 is a batch of one release (one column); (1, 2) is refused."""
    pair = SaSMechanism(alpha=1.5, scale=1.0, dimension=2)
    assert pair.releases((2, 1)) == 1
    with pytest.raises(DimensionError, match=r"\(2, K\)"):
        pair.randomize(np.zeros((1, 2)))


def test_the_message_suggests_the_right_construction():
    with pytest.raises(DimensionError, match="dimension=3"):
        LaplaceMechanism(scale=1.0).randomize([1.0, 2.0, 3.0])


@pytest.mark.parametrize("index", range(3), ids=NAMES)
def test_bad_values(index):
    mech = mechanisms(1)[index]
    with pytest.raises(ParameterError, match="value is None"):
        mech.randomize(None)
    with pytest.raises(ParameterError, match="value"):
        mech.randomize("1.0")
    with pytest.raises(NonFiniteError, match="1 NaN or infinite"):
        mech.randomize(np.array([[1.0, np.inf]]))


def test_same_seed_same_noise_and_columns_are_independent_draws():
    mech = GaussianMechanism(sigma=1.0, dimension=3)
    a = mech.randomize(np.zeros((3, 4)), rng=5)
    np.testing.assert_array_equal(a, mech.randomize(np.zeros((3, 4)), rng=5))
    assert len(np.unique(a)) == 12
