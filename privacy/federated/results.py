"""What a federated run reports: one record per round or tick, and the run's result.

Every runtime (the numpy runner, Flower in-process, real Flower processes) returns the same
:class:`RunResult`, whose :class:`RoundRecord` history the server step
(:class:`privacy.federated.server_step.ServerStep`) writes; equal seeds give equal records in
every runtime.  :func:`history_to_json` / :func:`history_from_json` are the form checkpoints
and deployed runs store the history in.

Examples
--------
>>> record = RoundRecord(0, 1.0, accepted=(0, 2), rejected=((1, "stale reply"),),
...                      missing=(), version=1, releases=(1, 1, 1))
>>> history_from_json(history_to_json([record])) == [record]
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from privacy.federated.values import DP_RELEASES, ClientState, ServerState

__all__ = ["RoundRecord", "RunResult", "release_counts", "history_to_json", "history_from_json",
           "SEEDED_NOISE_NOTE", "CLIENT_SECRETS_NOTE"]

#: What a simulated run's summary says about its noise (:attr:`RunResult.seeded_noise`).
SEEDED_NOISE_NOTE = (
    "simulation: every client's noise secret derives from the run seed, so whoever knows the "
    "seed (the experimenter) can regenerate and remove the noise; the privacy guarantee is of "
    "the released messages against a party that does not hold the clients' secrets")
#: What a run's summary says when each client keyed its noise with a secret of its own.
CLIENT_SECRETS_NOTE = (
    "each client keyed its noise with a secret of its own (OS entropy), which the server never "
    "received; the run seed does not determine the noise")


@dataclass(frozen=True)
class RoundRecord:
    """What happened in one synchronous round or one asynchronous tick.

    Attributes
    ----------
    round : int
        The synchronous round, or the tick.
    time : float
        When the round closed (virtual time units in the numpy runner, seconds of the grid's
        clock on Flower).
    accepted : tuple of int
        Clients whose replies were aggregated (sync: sorted) or applied (async: in order).
    rejected : tuple of (int, str)
        ``(client_id, reason)`` of every rejected reply, in the order they were judged.
    missing : tuple of int
        Selected clients without a reply when the round closed (sync only).
    version : int
        The server's model version after the round.
    staleness : tuple of int
        Staleness of each applied asynchronous reply.
    metrics : mapping str -> float
        The run's ``evaluate`` on the model after the round.
    releases : tuple of int
        Each client's count of noisy releases after the round.
    """

    round: int
    time: float
    accepted: tuple[int, ...]
    rejected: tuple[tuple[int, str], ...]
    missing: tuple[int, ...]
    version: int
    staleness: tuple[int, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)
    releases: tuple[int, ...] = ()


def release_counts(client_states: Iterable[ClientState]) -> tuple[int, ...]:
    """Each client's count of noisy releases (client-state scalar ``dp_releases``, default 0)."""
    return tuple(int(s.scalars.get(DP_RELEASES, 0)) for s in client_states)


@dataclass(frozen=True)
class RunResult:
    """Final server state, every client's state and the per-round history.

    ``seeded_noise`` is True when the clients' noise secrets derived from the run seed (a
    simulation: :data:`SEEDED_NOISE_NOTE`), False when each client drew its own
    (:data:`CLIENT_SECRETS_NOTE`); :meth:`noise_note` gives the sentence for a summary.
    """

    algorithm: Any
    state: ServerState
    client_states: tuple[ClientState, ...]
    history: tuple[RoundRecord, ...]
    seeded_noise: bool = False

    def noise_note(self) -> str:
        """Who can remove the noise of this run, in one sentence for its summary."""
        return SEEDED_NOISE_NOTE if self.seeded_noise else CLIENT_SECRETS_NOTE

    @property
    def model(self) -> Mapping[str, np.ndarray]:
        """The algorithm's current global estimate."""
        return self.algorithm.model(self.state)

    def releases(self) -> np.ndarray:
        """Noisy releases made by each client so far."""
        return np.array(release_counts(self.client_states))

    def epsilon_history(self) -> np.ndarray:
        """Each client's composed epsilon after every round, shape (rounds, clients).

        Upper bounds from ``client_dp(k).epsilon_bound`` at each client's delta (0 for a client
        without privacy); empty when the algorithm has no ``client_dp``.
        """
        dps = _client_dps(self.algorithm, len(self.client_states))
        if dps is None:
            return np.zeros((len(self.history), 0))
        return np.array([[0.0 if dp is None else dp.epsilon_bound(n)
                          for dp, n in zip(dps, r.releases, strict=True)] for r in self.history])

    def final_epsilon(self) -> np.ndarray:
        """Each client's composed epsilon after the last round (exact accountant value)."""
        dps = _client_dps(self.algorithm, len(self.client_states))
        if dps is None:
            return np.zeros(0)
        return np.array([0.0 if dp is None else dp.epsilon(int(n))
                         for dp, n in zip(dps, self.releases(), strict=True)])

    def failing_clients(self) -> dict[int, str]:
        """Clients asked for replies that never had one accepted, each with the reason.

        A client that was never selected is not failing; one whose every reply was
        rejected (a node that cannot read its data, a stale or robustly excluded update) or
        missing is: the model is then the other clients' alone.

        Returns
        -------
        dict int -> str
            ``client_id -> "rejected 2 times (last: ...) over 2 rounds/ticks"`` (empty when
            every client asked contributed).
        """
        accepted = {k for r in self.history for k in r.accepted}
        failing = {}
        for k in sorted({k for r in self.history for k, _ in r.rejected}
                        | {k for r in self.history for k in r.missing}):
            if k in accepted:
                continue
            reasons = [reason for r in self.history for j, reason in r.rejected if j == k]
            missing = sum(k in r.missing for r in self.history)
            parts = ([f"rejected {_times(len(reasons))} (last: {reasons[-1]})"] if reasons
                     else []) + ([f"no reply {_times(missing)}"] if missing else [])
            failing[k] = " and ".join(parts) + f" over {len(self.history)} rounds/ticks"
        return failing

    def metric(self, name: str) -> np.ndarray:
        """One evaluation metric over rounds (NaN where not evaluated)."""
        return np.array([r.metrics.get(name, np.nan) for r in self.history], dtype=float)


def _client_dps(algorithm: Any, n: int) -> list | None:
    lookup = getattr(algorithm, "client_dp", None)
    if lookup is None:
        return None
    return [lookup(k) for k in range(n)]


def history_to_json(history: Iterable[RoundRecord]) -> list[dict[str, Any]]:
    """The history as JSON-ready dictionaries (for checkpoints and deployed results)."""
    return [asdict(r) for r in history]


def history_from_json(records: Iterable[Mapping[str, Any]]) -> list[RoundRecord]:
    """Inverse of :func:`history_to_json` (lists back to tuples)."""
    fields: Sequence[str] = ("accepted", "missing", "staleness", "releases")
    return [RoundRecord(**{**r, **{f: tuple(r[f]) for f in fields},
                           "rejected": tuple(tuple(x) for x in r["rejected"])})
            for r in records]


def _times(count: int) -> str:
    return f"{count} time" + ("" if count == 1 else "s")
