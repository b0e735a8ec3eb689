"""The FedAvg family with local differential privacy: FedAvg, FedProx, SCAFFOLD, FedNova, FedLin.

Every method trains the :class:`~privacy.federated.models.LeastSquaresModel` (the same model
FedInfer fits) by local gradient descent on the client's mean loss and speaks the protocol of
:mod:`privacy.federated.protocol`, synchronously (``aggregate``) and asynchronously
(``apply_reply``: one reply applied with its data share ``p_k``; with every client answering,
applying a round's replies one by one equals ``aggregate``).

Local DP, the same for every method.  Per-record gradients are clipped to Frobenius norm ``G``
(the gradient of a convex ``||phi||^2``-smooth Huber loss), so a local step
``W <- W - eta (clipped mean gradient + data-independent terms)`` with
``eta (feature_bound^2 + ridge + mu) <= 2`` is non-expansive: adding or removing one record moves
the iterate by at most ``eta G / n_k`` per step (``n_k`` the declared record count, which
normalizes the local loss; a client refuses data of more than ``n_k + 1`` records, beyond what
the step-size check covers) and the local update ``Delta_k`` by at most
``s_k eta G / n_k``.  A client releases ``u_k = -Delta_k / (s_k eta)`` (the mean descent direction,
l2-sensitivity ``G / n_k``, l1 ``sqrt(p C) G / n_k``) plus noise, once per update; everything the
server and the client do afterwards is post-processing of noisy values.  FedLin additionally
releases a fresh full gradient (sensitivity ``G / n_k``): two releases per update.

Methods (``p_k`` data shares, ``S`` the sampled clients):

* FedAvg (5.8-5.9): ``w <- w + eta_g sum_S p_k Delta_k / sum_S p_k``.
* FedProx (5.10): local objective plus ``mu/2 ||W - w||^2``; stragglers do partial work (fewer
  local steps, the inexact local solution of 5.11).
* SCAFFOLD (5.12-5.17, option II): local steps corrected by ``c - c_k``; the client's new
  control variate is ``c_k - c + u_k``; the server moves ``c`` by ``sum_S p_k (u_k - c)``
  (5.17 weights clients by ``1/K``; with unequal data shares that makes ``c`` the unweighted
  mean gradient and the fixed point the minimizer of the unweighted sum of client losses, so
  the shares ``p_k`` used for ``w`` are used for ``c`` too).
* FedNova (5.21-5.22): normalized updates, ``w <- w - eta_g eta tau_eff sum_S p_k u_k /
  sum_S p_k`` with ``tau_eff = sum_S p_k s_k / sum_S p_k``.
* FedLin (5.23): gradient tracking with client-specific steps ``eta_k = eta s / s_k``; the
  correction ``g(w) - g_k(w)`` uses the clients' noisy gradients at the previous global model
  (the first round only collects gradients, which is why FedLin starts one round behind, as in
  the seed's Fig. 8.2).

References
----------
Seed Ch. 5 (5.8-5.23), Ch. 8.  McMahan et al. 2017 (FedAvg); Li et al. 2020 (FedProx);
Karimireddy et al. 2020 (SCAFFOLD); Wang et al. 2020 (FedNova); Mitra et al. 2021 (FedLin);
Hardt, Recht, Singer 2016 (non-expansive gradient steps).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer, check_nonnegative, check_positive, check_probability
from privacy.federated.local_dp import LocalDP
from privacy.federated.models import LeastSquaresModel
from privacy.federated.noise import noise_norm
from privacy.federated.protocol import (
    ABSTAIN,
    DP_RELEASES,
    ClientResult,
    ClientState,
    Reply,
    RoundPlan,
    ServerState,
)
from privacy.federated.robust import check_robust, combine
from privacy.federated.validation import FALSE_ALARM, ReplyBound

__all__ = ["FedAvg", "FedProx", "Scaffold", "FedNova", "FedLin", "update_sensitivity"]


def update_sensitivity(model: LeastSquaresModel, clip: float, samples: int, norm: str) -> float:
    """Sensitivity of one released mean descent direction ``u_k`` (see the module docstring)."""
    l2 = clip / check_integer("samples", samples, minimum=1)
    if norm == "l2":
        return l2
    return math.sqrt(model.num_features * model.num_outputs) * l2


class _GradientMethod:
    """Shared client loop, privacy and sampling of the FedAvg family."""

    name = "gradient"
    releases_per_update = 1

    def __init__(self, model: LeastSquaresModel, dp: Sequence[LocalDP | None] | LocalDP | None,
                 *, samples: Sequence[int], lr: float, local_steps: int | Sequence[int] = 1,
                 clip: float = 1.0, server_lr: float = 1.0, sample_rate: float = 1.0,
                 mu: float = 0.0, robust: str | None = None, trim: float = 0.2):
        if not isinstance(model, LeastSquaresModel):
            raise ParameterError(f"model must be a LeastSquaresModel; got "
                                 f"{type(model).__name__}")
        self.loss = model
        self.samples = tuple(check_integer(f"samples[{k}]", n, minimum=1)
                             for k, n in enumerate(samples))
        k = len(self.samples)
        if k == 0:
            raise ParameterError("samples must list each client's number of records")
        self.num_clients = k
        steps = [local_steps] * k if np.ndim(local_steps) == 0 else list(local_steps)
        if len(steps) != k:
            raise DimensionError(f"local_steps has {len(steps)} entries; expected {k}")
        self.local_steps = tuple(check_integer(f"local_steps[{i}]", s, minimum=1)
                                 for i, s in enumerate(steps))
        self.lr = check_positive("lr", lr)
        self.clip = check_positive("clip", clip)
        self.server_lr = check_positive("server_lr", server_lr)
        self.sample_rate = check_probability("sample_rate", sample_rate, allow_zero=False)
        self.mu = check_nonnegative("mu", mu)
        self.robust, self.trim = check_robust(robust, trim)
        total = sum(self.samples)
        self.shares = np.array(self.samples, dtype=float) / total
        dps = [dp] * k if dp is None or isinstance(dp, LocalDP) else list(dp)
        if len(dps) != k:
            raise DimensionError(f"dp has {len(dps)} entries; expected {k}")
        shape = model.weight_shape
        for i, d in enumerate(dps):
            if d is None:
                continue
            if d.dimension != shape[0] * shape[1]:
                raise DimensionError(f"dp[{i}].dimension is {d.dimension}; an update has "
                                     f"{shape[0] * shape[1]} entries")
            needed = update_sensitivity(model, self.clip, self.samples[i], noise_norm(d.noise))
            if d.sensitivity < needed * (1 - 1e-12):
                raise ParameterError(f"dp[{i}].sensitivity {d.sensitivity:g} is below the "
                                     f"update's sensitivity {needed:g}: the claim would be false")
        self.dps = tuple(dps)
        # a neighbour may hold one record more than declared: smoothness B^2 (1 + 1/n_k)
        for i, (lr_i, n_i) in enumerate(zip(self.step_sizes(), self.samples, strict=True)):
            smooth = model.feature_bound ** 2 * (1 + 1 / n_i) + model.ridge + self.mu
            if lr_i * smooth > 2.0:
                raise ParameterError(f"client {i}'s local step size {lr_i:g} exceeds "
                                     f"2 / (feature_bound^2 (1 + 1/n_k) + ridge + mu) = "
                                     f"{2 / smooth:g}; the update's sensitivity bound needs "
                                     f"non-expansive steps")

    # ------------------------------------------------------------------ helpers
    def step_sizes(self) -> tuple[float, ...]:
        """Local step size of each client."""
        return (self.lr,) * self.num_clients

    def client_dp(self, client_id: int) -> LocalDP | None:
        return self.dps[client_id]

    @property
    def dp(self) -> LocalDP | None:
        """The first client's release description (``None`` without privacy)."""
        return self.dps[0]

    def _w(self, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.asarray(arrays["w"], dtype=float).reshape(self.loss.weight_shape)

    def _privatize(self, value: np.ndarray, client: int, rng) -> np.ndarray:
        dp = self.dps[client]
        return value if dp is None else dp.randomize(value, rng)

    def _loss_parts(self, data, client: int) -> tuple[np.ndarray, np.ndarray]:
        """The client's clipped features and targets, refused beyond its declared count.

        The update's sensitivity ``G / n_k`` and the non-expansive step-size check rest on the
        declared ``n_k`` and cover data of up to ``n_k + 1`` records (an honest client's
        add-one neighbour; refusing that neighbour would itself tell it apart), so more
        records than that raise before anything is released.
        """
        phi, T = self.loss.local_loss_parts(data)
        actual, declared = phi.shape[0], self.samples[client]
        if T.shape[0] != actual:
            raise DimensionError(f"client {client}'s data have {actual} feature rows but "
                                 f"{T.shape[0]} labels")
        if actual > declared + 1:
            raise ParameterError(
                f"client {client} holds {actual} records, more than its declared "
                f"samples[{client}] = {declared} (plus the one record a neighbouring data set "
                f"may add): the update's sensitivity G / n_k and the non-expansive step-size "
                f"check assume at most {declared + 1}; declare the client's record count "
                f"(samples[{client}] = {actual}) or give it at most {declared} records")
        return phi, T

    def _gradient(self, data, W: np.ndarray, client: int) -> np.ndarray:
        """Clipped local mean gradient (declared record count) plus the ridge term."""
        phi, T = self._loss_parts(data, client)
        return (self.loss.clipped_gradient(W, phi, T, self.clip, self.samples[client])
                + self.loss.ridge * W)

    def _local_descent(self, data, start: np.ndarray, correction: np.ndarray, client: int
                       ) -> np.ndarray:
        """``u = (start - W_s) / (s lr)`` after ``s`` corrected local gradient steps."""
        steps, lr = self.local_steps[client], self.step_sizes()[client]
        phi, T = self._loss_parts(data, client)
        W = start.copy()
        for _ in range(steps):
            grad = (self.loss.clipped_gradient(W, phi, T, self.clip, self.samples[client])
                    + self.loss.ridge * W
                    + correction + self.mu * (W - start))
            W -= lr * grad
        return (start - W) / (steps * lr)

    def _budget_ok(self, client: int, state: ClientState, releases: int) -> bool:
        dp = self.dps[client]
        return dp is None or dp.allows(int(state.scalars.get(DP_RELEASES, 0)), releases)

    def _count(self, state: ClientState, client: int, releases: int, **arrays) -> ClientState:
        done = int(state.scalars.get(DP_RELEASES, 0))
        added = releases if self.dps[client] is not None else 0
        return state.replace(arrays=arrays, scalars={DP_RELEASES: done + added})

    # ------------------------------------------------------------------ protocol: client
    def init_client_state(self, data) -> ClientState:
        return ClientState(scalars={DP_RELEASES: 0})

    def client_update(self, data, state, message, rng):
        k = message.client_id
        if not self._budget_ok(k, state, self.releases_per_update):
            return ClientResult({}, {ABSTAIN: 1}, state)
        start = self._w(message.arrays)
        u = self._local_descent(data, start, self._correction(message, state), k)
        noisy = self._privatize(u, k, rng)
        return ClientResult({"u": noisy}, {"steps": self.local_steps[k]},
                            self._count(state, k, 1, **self._client_arrays(message, state,
                                                                             noisy)))

    def _correction(self, message, state) -> np.ndarray:
        return np.zeros(self.loss.weight_shape)

    def _client_arrays(self, message, state, noisy_u) -> dict[str, np.ndarray]:
        return {}

    # ------------------------------------------------------------------ protocol: server
    def init_server_state(self, num_clients: int, seed: int) -> ServerState:
        if num_clients != self.num_clients:
            raise DimensionError(f"{self.name} was built for {self.num_clients} clients; the "
                                 f"runtime has {num_clients}")
        return ServerState.new(self._initial_arrays(), num_clients=num_clients, seed=seed)

    def _initial_arrays(self) -> dict[str, np.ndarray]:
        return {"w": np.zeros(self.loss.weight_shape)}

    def _broadcast(self, state: ServerState) -> dict[str, np.ndarray]:
        return {"w": state.arrays["w"]}

    def configure_round(self, state: ServerState, round: int, rng) -> RoundPlan:
        """Client sampling: each client independently with ``sample_rate`` (at least one)."""
        if self.sample_rate >= 1.0:
            chosen = list(range(self.num_clients))
        else:
            draws = rng.random(self.num_clients)
            chosen = [k for k in range(self.num_clients) if draws[k] < self.sample_rate]
            chosen = chosen or [int(np.argmin(draws))]
        return RoundPlan(tuple(chosen), self._broadcast(state))

    def configure_client(self, state: ServerState, client_id: int, request: int,
                         rng) -> RoundPlan:
        self._no_robust_async()
        return RoundPlan((client_id,), self._broadcast(state))

    def _no_robust_async(self) -> None:
        if self.robust is not None:
            raise ParameterError(f"robust={self.robust!r} combines the replies of a round; an "
                                 f"asynchronous run applies them one at a time (its replies "
                                 f"are screened against their declared bounds): use "
                                 f"robust=None asynchronously")

    def reply_spec(self, state: ServerState, client_id: int) -> dict[str, tuple[int, ...]]:
        return {"u": self.loss.weight_shape}

    # ------------------------------------------------------------------ declared reply bounds
    def reply_bounds(self, state: ServerState, client_id: int) -> dict[str, ReplyBound]:
        """The l2 ball an honest client's noisy update lies in (except w.p. ``FALSE_ALARM``).

        Local steps from the broadcast ``w`` move ``W`` by at most ``lr (G + c + mu ||w||)``
        each (the ridge and proximal terms contract: ``lr (ridge + mu) <= 2``), so
        ``||W_s|| <= R = ||w|| + s lr (G + c + mu ||w||)`` and the released mean direction
        ``u`` has norm at most ``G + c + ridge R + mu (R + ||w||)`` (``G`` the per-record clip,
        ``c`` a bound on the correction: 0 for FedAvg, FedProx and FedNova), plus the l2 noise
        allowance of the client's release.
        """
        return {"u": ReplyBound(radius=self._update_radius(state, client_id))}

    def _correction_bound(self, state: ServerState, client: int) -> float:
        return 0.0

    def _update_radius(self, state: ServerState, client: int) -> float:
        c = self._correction_bound(state, client)
        if not np.isfinite(c):
            return np.inf
        nw = float(np.linalg.norm(state.arrays["w"]))
        s, lr = self.local_steps[client], self.step_sizes()[client]
        reach = nw + s * lr * (self.clip + c + self.mu * nw)
        clean = self.clip + c + self.loss.ridge * reach + self.mu * (reach + nw)
        return self._widen(clean, client)

    def _widen(self, clean: float, client: int) -> float:
        """A clean norm bound plus rounding slack plus the client's l2 noise allowance."""
        dp = self.dps[client]
        noise = 0.0 if dp is None else dp.noise_allowance(FALSE_ALARM)[1]
        return clean * (1 + 1e-9) + 1e-12 + noise

    def _delta(self, client: int, reply: Reply) -> np.ndarray:
        return -self.local_steps[client] * self.step_sizes()[client] * np.asarray(
            reply.arrays["u"], dtype=float)

    def aggregate(self, state: ServerState, round: int,
                  replies: Mapping[int, Reply]) -> ServerState:
        clients = sorted(replies)
        p = self.shares[clients]
        deltas = np.array([self._delta(k, replies[k]) for k in clients])
        step = combine(deltas, p / p.sum(), self.robust, trim=self.trim)
        return self._apply(state, step, clients, replies, version=state.version + 1)

    def apply_reply(self, state: ServerState, client_id: int, reply: Reply) -> ServerState:
        self._no_robust_async()
        step = self.shares[client_id] * self._delta(client_id, reply)
        return self._apply(state, step, [client_id], {client_id: reply},
                           version=state.version + 1)

    def _apply(self, state, step, clients, replies, **scalars) -> ServerState:
        w = state.arrays["w"] + self.server_lr * step
        return state.replace(arrays={"w": w}, **scalars)

    def model(self, state: ServerState) -> dict[str, np.ndarray]:
        return {"w": np.array(state.arrays["w"])}


class FedAvg(_GradientMethod):
    """Federated averaging with local DP (seed 5.8-5.9).

    Parameters
    ----------
    model : LeastSquaresModel
    dp : LocalDP, sequence of LocalDP (one per client) or None
        Release of one update (dimension ``p * outputs``, sensitivity at least
        :func:`update_sensitivity`).
    samples : sequence of int
        Records per client (public; data shares ``p_k``).  A client's update refuses data
        with more than ``samples[k] + 1`` records (the privacy analysis covers the declared
        count and its add-one neighbour, no more).
    lr : float
        Local step size (``lr (feature_bound^2 + ridge + mu) <= 2``).
    local_steps : int or sequence of int, default 1
        Local steps per client (fewer for stragglers: partial work).
    clip : float, default 1.0
        Per-record gradient clip ``G``.
    server_lr : float, default 1.0
    sample_rate : float, default 1.0
        Probability that a client takes part in a round.
    robust : {None, "median", "trimmed", "norm"}, optional
        Robust aggregation of a round's updates (:mod:`privacy.federated.robust`; synchronous
        runs only).  Every reply is also screened against :meth:`reply_bounds`.
    trim : float, default 0.2
        Fraction trimmed at each end by ``robust="trimmed"``.
    """

    name = "fedavg"

    def __init__(self, model, dp, *, samples, lr, local_steps=1, clip=1.0, server_lr=1.0,
                 sample_rate=1.0, robust=None, trim=0.2):
        super().__init__(model, dp, samples=samples, lr=lr, local_steps=local_steps, clip=clip,
                         server_lr=server_lr, sample_rate=sample_rate, robust=robust, trim=trim)


class FedProx(_GradientMethod):
    """FedProx (seed 5.10-5.11): proximal local objective, partial work for stragglers.

    Parameters as :class:`FedAvg`, plus ``mu`` (> 0), the proximal weight.
    """

    name = "fedprox"

    def __init__(self, model, dp, *, samples, lr, mu=0.1, local_steps=1, clip=1.0,
                 server_lr=1.0, sample_rate=1.0, robust=None, trim=0.2):
        super().__init__(model, dp, samples=samples, lr=lr, local_steps=local_steps, clip=clip,
                         server_lr=server_lr, sample_rate=sample_rate,
                         mu=check_positive("mu", mu), robust=robust, trim=trim)


class Scaffold(_GradientMethod):
    """SCAFFOLD (seed 5.12-5.17, option II control variates), parameters as :class:`FedAvg`."""

    name = "scaffold"

    def _initial_arrays(self):
        shape = self.loss.weight_shape
        return {"w": np.zeros(shape), "c": np.zeros(shape)}

    def _broadcast(self, state):
        return {"w": state.arrays["w"], "c": state.arrays["c"]}

    def init_client_state(self, data):
        return ClientState({"c_k": np.zeros(self.loss.weight_shape)}, {DP_RELEASES: 0})

    def _correction(self, message, state):
        return message.arrays["c"] - state.arrays["c_k"]

    def _client_arrays(self, message, state, noisy_u):
        return {"c_k": state.arrays["c_k"] - message.arrays["c"] + noisy_u}

    def reply_spec(self, state, client_id):
        return {"u": self.loss.weight_shape, "dc": self.loss.weight_shape}

    def client_update(self, data, state, message, rng):
        result = super().client_update(data, state, message, rng)
        if result.metrics.get(ABSTAIN):
            return result
        dc = result.state.arrays["c_k"] - state.arrays["c_k"]
        return ClientResult({**result.arrays, "dc": dc}, result.metrics, result.state)

    def _correction_bound(self, state, client):
        return np.inf   # c - c_k: the client's control variate is not known to the server

    def reply_bounds(self, state, client_id):
        return {"u": ReplyBound(), "dc": ReplyBound()}

    def _apply(self, state, step, clients, replies, **scalars):
        w = state.arrays["w"] + self.server_lr * step
        p = self.shares[clients]
        dcs = np.array([np.asarray(replies[k].arrays["dc"], dtype=float) for k in clients])
        dc = p.sum() * combine(dcs, p / p.sum(), self.robust, trim=self.trim)
        c = state.arrays["c"] + dc
        return state.replace(arrays={"w": w, "c": c}, **scalars)


class FedNova(_GradientMethod):
    """FedNova (seed 5.21-5.22): normalized averaging of variable local work."""

    name = "fednova"

    def aggregate(self, state, round, replies):
        clients = sorted(replies)
        p = self.shares[clients] / self.shares[clients].sum()
        tau = float(np.dot(p, [self.local_steps[k] for k in clients]))
        u = combine(np.array([replies[k].arrays["u"] for k in clients]), p, self.robust,
                    trim=self.trim)
        return self._apply(state, -tau * self.lr * u, clients, replies,
                           version=state.version + 1)

    def apply_reply(self, state, client_id, reply):
        self._no_robust_async()
        tau = float(np.dot(self.shares, self.local_steps))
        step = -tau * self.lr * self.shares[client_id] * np.asarray(reply.arrays["u"])
        return self._apply(state, step, [client_id], {client_id: reply},
                           version=state.version + 1)


class FedLin(_GradientMethod):
    """FedLin (seed 5.23): gradient tracking and client-specific step sizes.

    Client ``k`` takes ``local_steps[k]`` steps of size ``lr * reference_steps /
    local_steps[k]`` (a fast client takes more, smaller steps) corrected by ``g(w) - g_k(w)``
    from the previous round's noisy gradients, and releases its update and its fresh gradient
    at the global model (two releases per update; the first round releases the gradient only).

    Parameters as :class:`FedAvg`, plus ``reference_steps`` (default: the largest
    ``local_steps``).
    """

    name = "fedlin"
    releases_per_update = 2

    def __init__(self, model, dp, *, samples, lr, local_steps=1, clip=1.0, server_lr=1.0,
                 sample_rate=1.0, reference_steps=None, robust=None, trim=0.2):
        steps = [local_steps] if np.ndim(local_steps) == 0 else list(local_steps)
        self.reference_steps = (max(steps) if reference_steps is None
                                else check_integer("reference_steps", reference_steps,
                                                   minimum=1))
        super().__init__(model, dp, samples=samples, lr=lr, local_steps=local_steps, clip=clip,
                         server_lr=server_lr, sample_rate=sample_rate, robust=robust, trim=trim)

    def step_sizes(self):
        return tuple(self.lr * self.reference_steps / s for s in self.local_steps)

    def _initial_arrays(self):
        shape = self.loss.weight_shape
        return {"w": np.zeros(shape), "g": np.zeros(shape),
                "g_table": np.zeros((self.num_clients,) + shape), "tracked": np.zeros(
                    self.num_clients)}

    def _broadcast(self, state):
        return {"w": state.arrays["w"], "g": state.arrays["g"]}

    def init_client_state(self, data):
        return ClientState({"g_k": np.zeros(self.loss.weight_shape)},
                           {DP_RELEASES: 0, "tracking": 0})

    def _tracking(self, state: ServerState, client: int) -> bool:
        return bool(state.arrays["tracked"][client])

    def reply_spec(self, state, client_id):
        shape = self.loss.weight_shape
        if self._tracking(state, client_id):
            return {"u": shape, "grad": shape}
        return {"grad": shape}

    def _correction_bound(self, state, client):
        return np.inf   # g - g_k: the client's last gradient may not be the one the server kept

    def reply_bounds(self, state, client_id):
        """``grad`` (clipped gradient plus ridge term at ``w``) in a ball; ``u`` unbounded."""
        nw = float(np.linalg.norm(state.arrays["w"]))
        grad = ReplyBound(radius=self._widen(self.clip + self.loss.ridge * nw, client_id))
        return {"u": ReplyBound(), "grad": grad}

    def configure_round(self, state, round, rng):
        plan = super().configure_round(state, round, rng)
        return RoundPlan(plan.clients, plan.arrays, {}, {
            k: {"tracking": int(self._tracking(state, k))} for k in plan.clients})

    def configure_client(self, state, client_id, request, rng):
        self._no_robust_async()
        return RoundPlan((client_id,), self._broadcast(state), {}, {
            client_id: {"tracking": int(self._tracking(state, client_id))}})

    def client_update(self, data, state, message, rng):
        k = message.client_id
        tracking = bool(message.config["tracking"])
        releases = 2 if tracking else 1
        if not self._budget_ok(k, state, releases):
            return ClientResult({}, {ABSTAIN: 1}, state)
        start = self._w(message.arrays)
        noisy_grad = self._privatize(self._gradient(data, start, k), k, rng)
        arrays = {"grad": noisy_grad}
        if tracking:
            correction = message.arrays["g"] - state.arrays["g_k"]
            u = self._local_descent(data, start, correction, k)
            arrays["u"] = self._privatize(u, k, rng)
        return ClientResult(arrays, {"steps": self.local_steps[k] if tracking else 0},
                            self._count(state, k, releases, g_k=noisy_grad))

    def _apply(self, state, step, clients, replies, **scalars):
        table = state.arrays["g_table"].copy()
        tracked = state.arrays["tracked"].copy()
        for k in clients:
            table[k] = replies[k].arrays["grad"]
            tracked[k] = 1.0
        w = state.arrays["w"] + self.server_lr * step
        g = np.tensordot(self.shares, table, axes=1)
        return state.replace(arrays={"w": w, "g": g, "g_table": table, "tracked": tracked},
                             **scalars)

    def _delta(self, client, reply):
        if "u" not in reply.arrays:
            return np.zeros(self.loss.weight_shape)
        return super()._delta(client, reply)
