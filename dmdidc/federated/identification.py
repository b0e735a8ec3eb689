"""Federated DMDidc as a protocol algorithm: clients release statistics, the server combines.

:class:`FederatedIdentification` speaks :mod:`privacy.federated.protocol`, so the numpy runner
(:func:`privacy.federated.run_sync`) and the Flower adapters
(:func:`privacy.federated.flower.run_inprocess_sync`, real SuperNodes through
``dmdidc federated serve``) run it with the same numbers.

* Client (Algorithm 1 with a single release): builds its
  :class:`~dmdidc.SufficientStatistics` from its experiments ``{"X": (E, n, L + 1),
  "U": (E, m, L)}`` with the federation's public bounds, privatizes them once with its own
  (mechanism, epsilon, unit) and replies ``z`` (:meth:`~dmdidc.SufficientStatistics.to_vector`)
  and its public counts.  Having released, it abstains: its budget is spent.
* Server: a client joins in the round ``join_round[k]`` (or later, if its reply was lost); the
  server rebuilds each release from the public facts (:func:`dmdidc.private.release.
  describe_release`: same law, scale and guarantee as the client's) and its estimate of the
  global statistics is :func:`dmdidc.federated.combine_statistics` over the clients joined so
  far (FedInfer's posterior, module notes there).
* Screening (:mod:`dmdidc.federated.screening`): before a reply reaches the server, the
  runtime's :class:`~privacy.federated.server_step.ServerStep` rejects, with a logged reason
  kept in the round's record, a reply of the wrong form (names, shape, dtype, NaN / inf),
  one outside :meth:`~FederatedIdentification.reply_bounds` (declared with ``max_samples``)
  and one :meth:`~FederatedIdentification.screen_reply` refuses: inconsistent counts, values
  that no honest clipped statistics of its ``n_samples`` plus its release noise can take, a
  Gram matrix that is not positive semidefinite up to that noise.  An honest reply is
  rejected with probability at most ``FALSE_ALARM`` (1e-12).

References
----------
Seed Ch. 7 (Algorithms 1-2), Ch. 9 (DMDidc).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from _toolbox.validation import check_integer
from dmdidc.errors import DimensionError, ParameterError
from dmdidc.federated.combine import combine_statistics
from dmdidc.federated.screening import (
    COUNTS,
    count_reason,
    gram_reason,
    release_allowance,
    statistics_bound,
)
from dmdidc.private.release import MECHANISMS, describe_release
from dmdidc.statistics.accumulator import StatisticsAccumulator
from dmdidc.statistics.statistics import SufficientStatistics
from privacy.federated.protocol import (
    ABSTAIN,
    DP_RELEASES,
    ClientResult,
    ClientState,
    Reply,
    RoundPlan,
    ServerState,
)
from privacy.federated.validation import ReplyBound

if TYPE_CHECKING:
    from privacy.accountant import Guarantee

__all__ = ["FederatedIdentification", "ReleaseAccount"]


@dataclass(frozen=True)
class ReleaseAccount:
    """A client's guarantee per release, and its composition: a view of the one accountant.

    Attributes
    ----------
    epsilon_per_release, delta_per_release : float
        The guarantee of one release (the accountant's answer for one ``event``).
    unit : str
        The privacy unit (``"sample"``, ``"window"`` or ``"trajectory"``).
    event : dp_accounting.dp_event.DpEvent, optional
        What one release did (:attr:`dmdidc.private.release.PrivacyRelease.dp_event`).
        Without it, only ``(epsilon_per_release, delta_per_release)`` is known and the
        accountant composes that guarantee (:class:`privacy.events.EpsilonDeltaDpEvent`).
    neighboring : privacy.NeighboringRelation, optional
        The relation ``event`` is stated for (default ``ADD_OR_REMOVE``; statistics releases:
        :attr:`~dmdidc.private.release.PrivacyRelease.neighboring`, ``REPLACE_ONE``).

    Examples
    --------
    >>> from privacy import GaussianMechanism
    >>> mech = GaussianMechanism.from_epsilon_delta(1.0, 1e-5)
    >>> account = ReleaseAccount(1.0, 1e-5, "sample", mech.to_dp_event())
    >>> account.delta(2), round(account.epsilon(2), 3)   # simple composition: (2.0, 2e-05)
    (2e-05, 1.4)
    """

    epsilon_per_release: float
    delta_per_release: float
    unit: str
    event: Any = None
    neighboring: Any = None

    def delta(self, releases: int) -> float:
        """The delta at which :meth:`epsilon` is stated: ``releases * delta_per_release``
        (below 1)."""
        releases = check_integer("releases", releases, minimum=0)
        return min(releases * self.delta_per_release, math.nextafter(1.0, 0.0))

    def guarantee(self, releases: int) -> Guarantee:
        """The accountant's guarantee after ``releases`` releases, at :meth:`delta`."""
        from privacy import NeighboringRelation
        from privacy.accountant import Accountant
        from privacy.events import EpsilonDeltaDpEvent

        event = self.event if self.event is not None else EpsilonDeltaDpEvent(
            self.epsilon_per_release, self.delta_per_release)
        neighboring = self.neighboring or NeighboringRelation.ADD_OR_REMOVE
        return Accountant(neighboring=neighboring, unit=self.unit).compose(
            event, releases).guarantee(delta=self.delta(releases))

    def epsilon(self, releases: int) -> float:
        """Composed epsilon after ``releases`` releases: an upper bound at :meth:`delta`, the
        accountant's answer (at most the simple composition ``releases *
        epsilon_per_release`` at the same delta)."""
        return self.guarantee(releases).epsilon

    epsilon_bound = epsilon


def _per_client(name: str, value: Any, count: int) -> tuple:
    values = (tuple(value) if isinstance(value, (list, tuple, np.ndarray))
              else (value,) * count)
    if len(values) != count:
        raise DimensionError(f"{name} has {len(values)} entries; expected one per client "
                             f"({count})")
    return values


class FederatedIdentification:
    """Clients release DMDidc statistics once; the server's FedInfer posterior combines them.

    Parameters
    ----------
    num_clients : int
    n_states, n_inputs, max_delay : int
        ``n``, ``m`` and ``R`` of every client's statistics.
    state_bound, input_bound : float or array_like
        The federation's public clip levels.
    mechanism : {"gaussian", "laplace", "sas"} or sequence of them (one per client)
    epsilon : float or sequence of float
        Each client's budget for its one release.
    delta : float, optional
        Gaussian releases; SaS releases are then also calibrated on the l2-sensitivity
        through the vector-SaS GDP bound (:func:`dmdidc.private.release.calibrate_release`);
        Laplace: the reported delta of its pure-DP release.
    unit : {"sample", "window", "trajectory"}, default "sample"
    window : int, optional
    alpha : float, optional
        SaS stability index (one for the federation: stable sums need it).
    join_round : sequence of int, optional
        Round in which each client joins (default all 0).
    detrend : {None, "constant"}
    instruments : {None, "inputs", "states"}
    instrument_lags : int, optional
        As in :meth:`SufficientStatistics.from_data` (instruments for ``estimator="iv"``,
        e.g. with measurement noise).
    level : float, default 0.95
        Posterior interval matched by the noise variance (:func:`combine_statistics`).
    max_samples : int or sequence of int, optional
        The federation's public cap on a client's regression samples (one for all, or one per
        client): a reply reporting more is rejected, and :meth:`reply_bounds` declares the box
        of statistics of that many samples.  Without it, each reply is screened against its
        own reported count (:meth:`screen_reply`), so a client may still claim many samples
        and send statistics of that size.

    Examples
    --------
    >>> import numpy as np
    >>> from dmdidc import DelayedPlant
    >>> from privacy.federated import run_sync
    >>> plant = DelayedPlant.from_continuous([[-0.5]], [[1.0]], delay=1.5, dt=1.0)
    >>> rng = np.random.default_rng(0)
    >>> def client(k):
    ...     U = rng.uniform(-1, 1, (4, 1, 50))
    ...     return {"X": np.stack([plant.simulate([0.0], u) for u in U]), "U": U}
    >>> data = [client(k) for k in range(3)]
    >>> algo = FederatedIdentification(num_clients=3, n_states=1, n_inputs=1, max_delay=2,
    ...                                state_bound=2.0, input_bound=1.0, epsilon=1.0,
    ...                                delta=1e-5, join_round=[0, 1, 1])
    >>> run = run_sync(algo, data, rounds=2, seed=0)
    >>> algo.statistics(run.state).n_samples, run.final_epsilon().round(3).tolist()
    (576, [1.0, 1.0, 1.0])
    """

    name = "fedid"

    def __init__(self, *, num_clients: int, n_states: int, n_inputs: int, max_delay: int,
                 state_bound: Any, input_bound: Any, mechanism: str | Sequence[str] = "gaussian",
                 epsilon: float | Sequence[float] = 1.0, delta: float | None = None,
                 unit: str = "sample", window: int | None = None, alpha: float | None = None,
                 join_round: Sequence[int] | None = None, detrend: str | None = None,
                 instruments: str | None = None, instrument_lags: int | None = None,
                 level: float = 0.95, max_samples: int | Sequence[int] | None = None):
        self.num_clients = check_integer("num_clients", num_clients, minimum=1)
        k = self.num_clients
        self.template = StatisticsAccumulator(
            check_integer("n_states", n_states, minimum=1),
            check_integer("n_inputs", n_inputs, minimum=1),
            check_integer("max_delay", max_delay, minimum=0), state_bound=state_bound,
            input_bound=input_bound, instruments=instruments, instrument_lags=instrument_lags,
            detrend=detrend).statistics()
        self.detrend = detrend
        self.mechanisms = _per_client("mechanism", mechanism, k)
        for name in self.mechanisms:
            if name not in MECHANISMS:
                raise ParameterError(f"mechanism must be among {MECHANISMS}; got {name!r}")
        self.epsilons = tuple(float(e) for e in _per_client("epsilon", epsilon, k))
        self.delta, self.unit, self.window, self.alpha = delta, unit, window, alpha
        self.join_round = tuple(check_integer(f"join_round[{i}]", r, minimum=0)
                                for i, r in enumerate(_per_client("join_round",
                                                                  join_round or 0, k)))
        self.level = level
        self.max_samples = tuple(None if cap is None else check_integer(f"max_samples[{i}]", cap,
                                                                        minimum=1)
                                 for i, cap in enumerate(_per_client("max_samples", max_samples,
                                                                     k)))
        self._declared: dict[tuple, dict[str, ReplyBound]] = {}
        # validates every client's privacy settings now, not in the middle of a run
        self.accounts = tuple(self._account(i) for i in range(k))

    # ------------------------------------------------------------------ privacy
    def _release_options(self, client_id: int) -> dict[str, Any]:
        mechanism = self.mechanisms[client_id]
        return {"mechanism": mechanism, "epsilon": self.epsilons[client_id],
                "delta": self.delta, "unit": self.unit, "window": self.window,
                "alpha": self.alpha if mechanism == "sas" else None}

    def _account(self, client_id: int) -> ReleaseAccount:
        like = dataclasses.replace(self.template, n_samples=1, n_trajectories=1,
                                   min_trajectory_samples=1, max_trajectory_samples=1)
        release, _ = describe_release(like, **self._release_options(client_id))
        return ReleaseAccount(release.epsilon, release.delta, release.unit, release.dp_event,
                              release.neighboring)

    def client_dp(self, client_id: int) -> ReleaseAccount:
        """Client ``client_id``'s guarantee per release (composed by the runtimes)."""
        return self.accounts[client_id]

    # ------------------------------------------------------------------ client
    def init_client_state(self, data: Mapping[str, np.ndarray]) -> ClientState:
        return ClientState(scalars={DP_RELEASES: 0})

    def client_statistics(self, data: Mapping[str, Any]) -> SufficientStatistics:
        """A client's plain statistics from ``{"X": (E, n, L + 1), "U": (E, m, L)}``, or from
        sequences of E trajectories ``X[e]`` (n, L_e + 1), ``U[e]`` (m, L_e) of any lengths."""
        X, U = _experiments(data, "X"), _experiments(data, "U")
        if len(X) != len(U) or any(x.ndim != 2 for x in X) or any(u.ndim != 2 for u in U):
            raise DimensionError(
                f"client data must be X (E, n, L + 1) and U (E, m, L), or E trajectories "
                f"X[e] (n, L_e + 1) and U[e] (m, L_e); got {len(X)} X of shapes "
                f"{sorted({x.shape for x in X})} and {len(U)} U of shapes "
                f"{sorted({u.shape for u in U})}")
        t = self.template
        return SufficientStatistics.from_data(
            X, U, max_delay=t.max_delay, state_bound=t.state_bound,
            input_bound=t.input_bound, instruments=t.instruments,
            instrument_lags=t.instrument_lags if t.instruments else None,
            detrend=self.detrend)

    def client_update(self, data, state, message, rng):
        """The client's one release (later requests are refused: its budget is spent)."""
        done = int(state.scalars.get(DP_RELEASES, 0))
        if done:
            return ClientResult({}, {ABSTAIN: 1}, state)
        stats = self.client_statistics(data)
        private = stats.privatize(**self._release_options(message.client_id), rng=rng)
        metrics = {name: int(getattr(stats, name)) for name in COUNTS}
        return ClientResult({"z": private.to_vector()}, metrics,
                            state.replace(scalars={DP_RELEASES: done + 1}))

    # ------------------------------------------------------------------ server
    def init_server_state(self, num_clients: int, seed: int) -> ServerState:
        if num_clients != self.num_clients:
            raise DimensionError(f"FederatedIdentification was built for {self.num_clients} "
                                 f"clients; the runtime has {num_clients}")
        d = self.template.dimension
        return ServerState.new({"vectors": np.zeros((num_clients, d)),
                                "counts": np.zeros((num_clients, len(COUNTS))),
                                "joined": np.zeros(num_clients)},
                               num_clients=num_clients, seed=seed)

    def configure_round(self, state: ServerState, round: int, rng) -> RoundPlan:
        """The clients due to join (including any whose reply has not arrived yet)."""
        joined = state.arrays["joined"]
        return RoundPlan(tuple(k for k in range(self.num_clients)
                               if self.join_round[k] <= round and not joined[k]))

    def reply_spec(self, state: ServerState, client_id: int) -> dict[str, tuple[int, ...]]:
        return {"z": (self.template.dimension,)}

    def reply_bounds(self, state: ServerState, client_id: int) -> dict[str, ReplyBound]:
        """The box an honest client's noisy statistics lie in (except w.p. ``FALSE_ALARM``),
        declared when the federation caps its samples (``max_samples``): statistics of at most
        that many samples, widened by the reach of the client's release noise.  Without a cap
        nothing is declared (:meth:`screen_reply` checks each reply against its own count)."""
        cap = self.max_samples[client_id]
        if cap is None:
            return {}
        options = self._release_options(client_id)
        key = (cap, *options.items())
        if key not in self._declared:    # (clients with equal settings share one object)
            # the noise of any counts within the cap: it grows with the longest trajectory
            # (unit "trajectory") and, centred, as the shortest falls (a mean over fewer
            # samples): the longest at the cap and the shortest of one sample bound them all
            like = self._like((cap, 1, 1, cap))
            allowance = release_allowance(describe_release(like, **options)[0], like.dimension)
            self._declared[key] = {"z": statistics_bound(like, allowance)}
        return self._declared[key]

    def screen_reply(self, state: ServerState, client_id: int, reply: Reply) -> str | None:
        """Why a well-formed reply cannot be an honest client's release, or ``None``.

        Its counts must be consistent (and within ``max_samples``), its statistics within the
        box of statistics of its ``n_samples`` widened by the reach of its release noise, and
        its Gram matrix positive semidefinite up to that noise
        (:mod:`dmdidc.federated.screening`).  Called by the runtimes'
        :class:`~privacy.federated.server_step.ServerStep` on every reply that passed the form
        checks and :meth:`reply_bounds`.
        """
        reason = count_reason(reply.metrics, self.max_samples[client_id])
        if reason is not None:
            return reason
        n = int(reply.metrics["n_samples"])
        like = self._like([reply.metrics[name] for name in COUNTS])
        release, _ = describe_release(like, **self._release_options(client_id))
        allowance = release_allowance(release, like.dimension)
        z = reply.arrays["z"]
        outside = statistics_bound(like, allowance).reasons("z", z[None])[0]
        if outside is not None:
            return f"statistics that {n} samples and their release noise cannot give: {outside}"
        return gram_reason(z, like, allowance)

    def aggregate(self, state: ServerState, round: int, replies) -> ServerState:
        vectors = state.arrays["vectors"].copy()
        counts = state.arrays["counts"].copy()
        joined = state.arrays["joined"].copy()
        for k in sorted(replies):
            reply = replies[k]
            if reply.abstained or joined[k]:
                continue
            missing = [name for name in COUNTS if name not in reply.metrics]
            if missing or "z" not in reply.arrays:
                # only an unscreened server gets here: screening refuses such replies
                raise ParameterError(
                    f"reply of client {k} lacks {missing or ['arrays z']}; a reply carries the "
                    f"arrays 'z' and the metrics {list(COUNTS)} (screen=True refuses such replies)")
            vectors[k] = reply.arrays["z"]
            counts[k] = [reply.metrics[name] for name in COUNTS]
            joined[k] = 1.0
        return state.replace(arrays={"vectors": vectors, "counts": counts, "joined": joined},
                             version=state.version + 1)

    def _like(self, counts: np.ndarray) -> SufficientStatistics:
        """Zero statistics with the template's layout and these public counts."""
        counts = dict(zip(COUNTS, (int(c) for c in counts), strict=True))
        intercepts = counts["n_trajectories"] if self.template.centering != "none" else 0
        return dataclasses.replace(self.template, **counts, intercepts=intercepts)

    def releases(self, state: ServerState) -> list[SufficientStatistics]:
        """The joined clients' releases as statistics (rebuilt from the public facts)."""
        out = []
        for k in np.flatnonzero(state.arrays["joined"]):
            like = self._like(state.arrays["counts"][k])
            release, variance = describe_release(like, **self._release_options(int(k)))
            stats = SufficientStatistics.from_vector(state.arrays["vectors"][k], like=like,
                                                     noise_variance=variance)
            out.append(dataclasses.replace(stats, releases=(release,), clipping=None))
        return out

    def statistics(self, state: ServerState) -> SufficientStatistics:
        """The server's estimate of the global statistics (:func:`combine_statistics`).

        Raises
        ------
        ParameterError
            No client has joined yet.
        """
        return combine_statistics(self.releases(state), level=self.level)

    def model(self, state: ServerState) -> dict[str, np.ndarray]:
        """The global statistics' posterior mean (vector form) and its noise variance."""
        if not np.any(state.arrays["joined"]):
            return {"statistics": np.zeros(self.template.dimension),
                    "noise_variance": np.array([np.inf]), "counts": np.zeros(len(COUNTS))}
        stats = self.statistics(state)
        return {"statistics": stats.to_vector(),
                "noise_variance": np.array([stats.noise_variance]),
                "counts": np.array([getattr(stats, name) for name in COUNTS], dtype=float)}

    def statistics_from_model(self, model: Mapping[str, np.ndarray]) -> SufficientStatistics:
        """The global statistics from :meth:`model` (for ``fit_statistics``; without the
        clients' release records, which :meth:`statistics` keeps)."""
        return SufficientStatistics.from_vector(model["statistics"],
                                                like=self._like(model["counts"]),
                                                noise_variance=float(model["noise_variance"][0]))


def _experiments(data: Mapping[str, Any], key: str) -> list[np.ndarray]:
    """``data[key]`` as a list of 2-D float arrays (a 3-D array is split along its first axis)."""
    value = data[key]
    if isinstance(value, np.ndarray) and value.ndim == 3:
        return list(np.asarray(value, dtype=float))
    if isinstance(value, np.ndarray) or not isinstance(value, Sequence):
        array = np.asarray(value, dtype=float)
        raise DimensionError(f"client data {key!r} must be an (E, rows, samples) array or a "
                             f"sequence of 2-D trajectories; got shape {array.shape}")
    return [np.asarray(part, dtype=float) for part in value]
