"""The Ch. 8 data sets, split into federated clients and a reserved test set.

* ``synthetic``: 1000 points drawn evenly from two 2-D Gaussians (means -+(1, 1), unit
  covariance; seed Sec. 8.3, Fig. 8.1), two clients.
* ``iris``: Fisher's Iris (150 x 4, three classes; scikit-learn's bundled copy), three clients;
  ``partition="expert"`` gives client ``c`` all training points of class ``c`` but three, which
  go to the other clients (seed Sec. 8.4).
* ``breast_cancer``: Wisconsin diagnostic breast cancer (569 x 30, two classes; bundled with
  scikit-learn, no download), four clients (seed Sec. 8.5).

Features are mapped to ``[-1, 1]`` with the data set's public feature ranges (the documented
minimum and maximum of each feature, which scikit-learn ships with the data; a public fact about
the domain, not a statistic of the clients' records).  A fraction of the data (default 20 %,
stratified) is reserved for testing; the rest is split over the clients.

scikit-learn is imported lazily (extra ``learn``).

References
----------
Seed Ch. 8 (Secs. 8.3-8.5, Figs. 8.1, 8.4).  R. A. Fisher (1936); W. H. Wolberg et al. (1995).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.validation import as_generator, check_integer, check_probability

__all__ = ["DATASETS", "PARTITIONS", "FederatedData", "load_dataset"]

DATASETS = {"synthetic": 2, "iris": 3, "breast_cancer": 4}   # name -> the seed's clients
PARTITIONS = ("iid", "expert")
_SYNTHETIC_BOX = 4.0


@dataclass(frozen=True)
class FederatedData:
    """Client training sets, the reserved test set and the public feature box.

    Attributes
    ----------
    name : str
    clients : tuple of dict
        ``{"X": (n_k, d), "y": (n_k,)}`` per client (features scaled to [-1, 1]).
    X_test, y_test : ndarray
    num_classes : int
    """

    name: str
    clients: tuple[dict[str, np.ndarray], ...]
    X_test: np.ndarray
    y_test: np.ndarray
    num_classes: int

    @property
    def num_clients(self) -> int:
        return len(self.clients)

    @property
    def input_dim(self) -> int:
        return self.X_test.shape[1]

    @property
    def samples(self) -> tuple[int, ...]:
        return tuple(len(c["y"]) for c in self.clients)

    @property
    def total_samples(self) -> int:
        return sum(self.samples)

    def pooled(self) -> tuple[np.ndarray, np.ndarray]:
        """All training data (for the centralized reference)."""
        return (np.vstack([c["X"] for c in self.clients]),
                np.concatenate([c["y"] for c in self.clients]))


def _raw(name: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                        np.ndarray]:
    """Features, labels and the public feature range (low, high)."""
    if name == "synthetic":
        half = 500
        X = np.vstack([rng.normal(-1.0, 1.0, size=(half, 2)), rng.normal(1.0, 1.0, (half, 2))])
        y = np.repeat([0, 1], half)
        box = np.full(2, _SYNTHETIC_BOX)
        return np.clip(X, -box, box), y, -box, box
    from sklearn import datasets as sk
    bunch = sk.load_iris() if name == "iris" else sk.load_breast_cancer()
    X, y = bunch.data.astype(float), bunch.target.astype(int)
    return X, y, X.min(axis=0), X.max(axis=0)


def _split(y: np.ndarray, test_fraction: float, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray]:
    """Stratified train / test indices."""
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        cut = int(round(test_fraction * idx.size))
        test.append(idx[:cut])
        train.append(idx[cut:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def load_dataset(name: str, *, partition: str = "iid", num_clients: int | None = None,
                 test_fraction: float = 0.2, rng: np.random.Generator | int | None = None
                 ) -> FederatedData:
    """Load a Ch. 8 data set split over clients.

    Parameters
    ----------
    name : {"synthetic", "iris", "breast_cancer"}
    partition : {"iid", "expert"}, default "iid"
        ``iid``: a uniformly random split into (nearly) equal parts.  ``expert``: client ``c``
        holds all training points of class ``c`` but three, which are dealt to the other
        clients (needs ``num_clients == classes``).
    num_clients : int, optional
        Default: the seed's (2, 3, 4).
    test_fraction : float, default 0.2
    rng : Generator, int or None
        Draws the synthetic points, the test split and the IID partition.

    Returns
    -------
    FederatedData

    Examples
    --------
    >>> data = load_dataset("iris", partition="expert", rng=0)
    >>> [np.bincount(c["y"], minlength=3).tolist() for c in data.clients]
    [[37, 2, 2], [2, 37, 1], [1, 1, 37]]
    """
    if name not in DATASETS:
        raise ParameterError(f"dataset must be one of {sorted(DATASETS)}; got {name!r}")
    if partition not in PARTITIONS:
        raise ParameterError(f"partition must be one of {PARTITIONS}; got {partition!r}")
    k = DATASETS[name] if num_clients is None else check_integer("num_clients", num_clients,
                                                                 minimum=1)
    test_fraction = check_probability("test_fraction", test_fraction, allow_one=False)
    gen = as_generator(rng)
    X, y, low, high = _raw(name, gen)
    X = 2.0 * (X - low) / np.where(high > low, high - low, 1.0) - 1.0
    classes = int(y.max()) + 1
    train, test = _split(y, test_fraction, gen)
    if partition == "iid":
        parts = np.array_split(gen.permutation(train), k)
    else:
        if k != classes:
            raise ParameterError(f"the expert partition gives one class per client: "
                                 f"num_clients must be {classes} for {name}; got {k}")
        parts = [[] for _ in range(k)]
        for c in range(classes):
            idx = gen.permutation(train[y[train] == c])
            parts[c].extend(idx[3:])
            others = [j for j in range(k) if j != c]
            for i, j in enumerate(idx[:3]):
                parts[others[i % len(others)]].append(j)
        parts = [np.sort(np.array(p, dtype=int)) for p in parts]
    if min(len(p) for p in parts) == 0:
        raise ParameterError(f"{k} clients leave some client without data")
    clients = tuple({"X": X[p], "y": y[p]} for p in parts)
    return FederatedData(name, clients, X[test], y[test], classes)
