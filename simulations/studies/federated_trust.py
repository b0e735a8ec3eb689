"""Trust (seed Ch. 10 future work): how far a few poisoning clients move each federated model.

Ten clients hold a random split of a two-class problem (the kernel least-squares model of the
federated-learning page, no local DP, so that the distance measures the attack alone).  Every
algorithm is run once honestly and once with 1, 2 or 3 clients sending a poisoned reply
(:mod:`privacy.federated.poisoning`: x1000, x1e200, integers, flipped sign) in every round,
with every other random number equal; the distance is ``||w_attacked - w_honest||`` relative
to ``||w_honest||`` after the last round (``inf`` when the model overflowed).  Defences:

* ``"none"``: the server checks only the form of a reply (``screen=False``);
* ``"screen"``: integer / boolean arrays and replies outside the declared bounds rejected;
* ``"screen+median"`` (the FedAvg family): also the coordinate-wise median of the updates.

Synchronous FedInfer runs with ``partial="cycle"``: a round with rejected blocks completes its
cycle with the clients that answer (with ``"skip"`` a client whose blocks are always rejected
would stall it at the prior).

Examples
--------
>>> rows = poisoning_study(attacks=("x1e200",), attackers=(1,), algorithms=("fedavg",),
...                        rounds=3)
>>> [(r["defence"], r["distance"] == np.inf) for r in rows]
[('none', True), ('screen', False), ('screen+median', False)]
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from _toolbox.errors import ParameterError
from _toolbox.logs import quiet_logger
from _toolbox.plotting import new_figure, save_figure
from _toolbox.validation import check_integer
from privacy.federated.fedinfer import FedInfer
from privacy.federated.gradient import FedAvg, FedLin, FedNova, FedProx, Scaffold
from privacy.federated.models import KernelFeatures, LeastSquaresModel
from privacy.federated.poisoning import ATTACKS, poisoning_tamper
from privacy.federated.runner import Network, run_async, run_sync

__all__ = ["TRUST_ALGORITHMS", "DEFENCES", "poisoning_study", "plot_poisoning",
           "poisoning_table", "write_poisoning_study"]

#: Algorithms of the study ("fedinfer-async": Algorithm 2 with every stagger rate 1).
TRUST_ALGORITHMS = ("fedavg", "fedprox", "scaffold", "fednova", "fedlin", "fedinfer",
                    "fedinfer-async")
DEFENCES = ("none", "screen", "screen+median")
_GRADIENT = {"fedavg": FedAvg, "fedprox": FedProx, "scaffold": Scaffold, "fednova": FedNova,
             "fedlin": FedLin}


def _problem(clients: int, seed: int) -> tuple[list[dict], LeastSquaresModel, list[int]]:
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(-1, 1, (300, 2)), rng.normal(1, 1, (300, 2))])
    y = np.repeat([0, 1], 300)
    parts = np.array_split(rng.permutation(len(y)), clients)
    data = [{"X": X[p], "y": y[p]} for p in parts]
    features = KernelFeatures.random(low=[-3, -3], high=[3, 3], count=3, rng=seed + 1)
    model = LeastSquaresModel(features, num_classes=2, feature_bound=3.0,
                              total_samples=len(y), ridge=0.05)
    return data, model, [len(p) for p in parts]


def _builder(name: str, model: LeastSquaresModel, samples: list[int]
             ) -> Callable[[str | None], Any]:
    if name in _GRADIENT:
        return lambda robust: _GRADIENT[name](model, None, samples=samples, lr=0.1,
                                              local_steps=5, robust=robust)
    return lambda robust: FedInfer(model, None, num_clients=len(samples), partial="cycle")


def _final_model(name: str, algorithm: Any, data: list[dict], rounds: int, seed: int,
                 network: Network, screen: bool) -> np.ndarray:
    with np.errstate(all="ignore"):   # an undefended run overflows: that is what is measured
        if name == "fedinfer-async":
            result = run_async(algorithm, data, stagger=[1] * len(data), ticks=rounds,
                               seed=seed, network=network, screen=screen)
        else:
            result = run_sync(algorithm, data, rounds=rounds, seed=seed, network=network,
                              screen=screen)
        return np.asarray(result.model["w"], dtype=float)


def _distance(w: np.ndarray, honest: np.ndarray) -> float:
    if not np.all(np.isfinite(w)):
        return math.inf
    with np.errstate(over="ignore"):
        return float(np.linalg.norm(w - honest) / np.linalg.norm(honest))


def poisoning_study(*, clients: int = 10, attackers: Sequence[int] = (1, 2, 3),
                    attacks: Sequence[str] = ATTACKS,
                    algorithms: Sequence[str] = TRUST_ALGORITHMS, rounds: int = 20,
                    seed: int = 0) -> list[dict[str, Any]]:
    """Relative model distance from the honest run, per algorithm, attack, count and defence.

    Parameters
    ----------
    clients : int, default 10
    attackers : sequence of int
        Numbers of poisoning clients (clients ``0 .. m - 1``), each ``< clients``.
    attacks : sequence of str
        Names from :data:`privacy.federated.poisoning.ATTACKS`.
    algorithms : sequence of str
        Names from :data:`TRUST_ALGORITHMS`.
    rounds : int, default 20
        Synchronous rounds (asynchronous ticks).
    seed : int, default 0
        Data, kernel basis and run seed.

    Returns
    -------
    list of dict
        ``algorithm, attack, attackers, defence, distance`` (``||w - w_honest|| /
        ||w_honest||``; ``inf`` when the model is not finite) and ``rejected`` (replies the
        server rejected over the run).

    Raises
    ------
    ParameterError
        An unknown algorithm, or as many attackers as clients.
    """
    clients = check_integer("clients", clients, minimum=2)
    rounds = check_integer("rounds", rounds, minimum=1)
    unknown = sorted(set(algorithms) - set(TRUST_ALGORITHMS))
    if unknown:
        raise ParameterError(f"algorithms must be among {TRUST_ALGORITHMS}; got {unknown}")
    counts = [check_integer("attackers", m, minimum=1) for m in attackers]
    if max(counts, default=0) >= clients:
        raise ParameterError(f"attackers must be fewer than the {clients} clients; got "
                             f"{max(counts)}")
    data, model, samples = _problem(clients, seed)
    rows = []
    with quiet_logger("privacy.federated"):               # every rejection would be logged
        for name in algorithms:
            build = _builder(name, model, samples)
            honest = _final_model(name, build(None), data, rounds, seed, Network(), True)
            defences = DEFENCES if name in _GRADIENT else DEFENCES[:2]
            for attack in attacks:
                for m in counts:
                    network = Network(tamper=poisoning_tamper(attack, range(m)))
                    for defence in defences:
                        robust = "median" if defence == "screen+median" else None
                        w = _final_model(name, build(robust), data, rounds, seed, network,
                                         defence != "none")
                        rows.append({"algorithm": name, "attack": attack, "attackers": m,
                                     "defence": defence, "distance": _distance(w, honest)})
    return rows


def poisoning_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table: one row per algorithm and attack, one column per count and defence."""
    counts = sorted({r["attackers"] for r in rows})
    defences = [d for d in DEFENCES if any(r["defence"] == d for r in rows)]
    cells = {(r["algorithm"], r["attack"], r["attackers"], r["defence"]): r["distance"]
             for r in rows}
    head = ["algorithm", "attack"] + [f"{m} bad, {d}" for m in counts for d in defences]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    keys = dict.fromkeys((r["algorithm"], r["attack"]) for r in rows)
    for algorithm, attack in keys:
        values = [cells.get((algorithm, attack, m, d)) for m in counts for d in defences]
        text = ["" if v is None else ("inf" if v == math.inf else f"{v:.3g}") for v in values]
        lines.append("| " + " | ".join([algorithm, attack, *text]) + " |")
    return "\n".join(lines)


def plot_poisoning(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """One panel per attack: distance against the number of poisoning clients, per algorithm
    and defence (log scale; a non-finite model is drawn at the top of the panel)."""
    attacks = list(dict.fromkeys(r["attack"] for r in rows))
    fig = new_figure(figsize=(3.6 * len(attacks), 3.8))
    axes = fig.subplots(1, len(attacks), squeeze=False)
    finite = [r["distance"] for r in rows if np.isfinite(r["distance"]) and r["distance"] > 0]
    top = 10 * max(finite, default=1.0)
    styles = {"none": ":", "screen": "--", "screen+median": "-"}
    algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
    colours = {a: f"C{i}" for i, a in enumerate(algorithms)}   # colour: algorithm; line: defence
    for ax, attack in zip(axes[0], attacks, strict=True):
        for algorithm in algorithms:
            for defence, line in styles.items():
                chosen = [r for r in rows if (r["attack"], r["algorithm"], r["defence"])
                          == (attack, algorithm, defence)]
                if not chosen:
                    continue
                ys = [min(r["distance"], top) for r in chosen]
                ax.plot([r["attackers"] for r in chosen], np.maximum(ys, 1e-6), line,
                        color=colours[algorithm], marker="o", ms=3,
                        label=f"{algorithm}, {defence}")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_yscale("log")
        ax.set_title(f"attack {attack}")
        ax.set_xlabel("poisoning clients of 10")
        ax.set_xticks(sorted({r["attackers"] for r in rows}))
    axes[0][0].set_ylabel("||w - w_honest|| / ||w_honest|| (top: overflow)")
    axes[0][-1].legend(fontsize=5, ncol=2, loc="upper left")
    return save_figure(fig, path)


def write_poisoning_study(rows: Sequence[dict[str, Any]], out: str | Path) -> dict[str, Path]:
    """``poisoning.json`` (the rows), ``poisoning.md`` (the table) and ``poisoning.png``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "poisoning.json", "table": out / "poisoning.md",
             "figure": out / "poisoning.png"}
    paths["json"].write_text(json.dumps(
        [{**r, "distance": str(r["distance"]) if r["distance"] == math.inf else r["distance"]}
         for r in rows], indent=1))
    paths["table"].write_text(poisoning_table(rows) + "\n")
    plot_poisoning(rows, paths["figure"])
    return paths
