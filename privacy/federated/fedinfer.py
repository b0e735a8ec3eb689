"""Federated Inference (seed Ch. 7, Algorithms 1-2), synchronous and asynchronous.

Clients (Algorithm 1) send noisy copies ``z_k + r_{k,j}`` of their data block (7.11, 7.15); the
server (Algorithm 2) keeps the posterior of the global block ``z*`` and reports the model
``argmin_w g(w) E[z* | data]`` (line 12).  The loss is any separable model (``loss.block``,
``loss.solve``; :mod:`privacy.federated.models`), the noise any :class:`LocalDP` release.

Server, per reply ``zhat_{k,j}`` of client ``k`` (stagger ``gamma_k``, ``Gamma = lcm(gamma)``,
data share ``p_k = |D_k| / |D|``)::

    xi <- xi - (gamma_k / Gamma) p_k zbar_n + (gamma_k / Gamma) zhat_{k,j}        (7.26, line 10)
    estimate from the posterior given the n full observations and xi (lines 11-12)
    after every sum_k Gamma / gamma_k replies (line 13): xi is a full observation (7.24);
    add it to the posterior, zbar_{n+1} <- posterior mean, xi <- zbar_{n+1}     (lines 14-16)

The posterior matches the noise (:mod:`privacy.federated.posterior`): conjugate normal for
Gaussian releases, an exact grid posterior under the SaS (stable sums) or Laplace likelihood.
Synchronously (all ``gamma_k = 1``) every round is one full observation ``sum_k zhat_k``
(7.18).

Where this differs from the printed Algorithm 2, and why:

* Line 6 initializes ``zbar_0`` with ``(1/K) sum_k zhat_{k,1}`` and the loop starts with
  ``n = 0``, so the initial returns never enter the statistic.  Here the cycles start with the
  first reply (``zbar_0 = xi_0 = 0``), and the first full cycle -- which under the nominal
  schedule is exactly "every client returns" (line 5) -- is the first full observation.  Every
  release a client pays for in privacy is used; the factor ``1/K`` (which contradicts (7.13)) is
  gone.  Before the first full observation the estimate is the prior's.
* A synchronous round in which a client's reply is missing is not a full observation and is
  skipped (logged); asynchronous cycles are counted as in line 13, so under drop-outs a cycle
  mis-weights the clients that missed replies (the runner re-issues their requests).

Privacy: every reply is one release of the block (sensitivity ``loss.block_sensitivity``), so a
client's composed epsilon grows with the number of replies -- FedInfer's convergence "regardless
of noise" (Theorem 7.3.1) is paid for in privacy, which the runner reports after every round.

References
----------
Seed Algorithms 1-2, eqs. (7.11)-(7.26), Theorems 7.3.1-7.3.2, Ch. 8.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from _toolbox.errors import DimensionError, ParameterError
from _toolbox.validation import check_integer
from privacy.federated.local_dp import LocalDP
from privacy.federated.noise import ReleaseSumNoise, noise_norm
from privacy.federated.posterior import PosteriorSummary, make_posterior
from privacy.federated.protocol import (
    ABSTAIN,
    DP_RELEASES,
    ClientResult,
    ClientState,
    Reply,
    RoundPlan,
    ServerState,
    logger,
)
from privacy.federated.robust import check_robust
from privacy.federated.validation import FALSE_ALARM, ReplyBound, stacked

__all__ = ["FedInfer"]

_POST = "post/"


class FedInfer:
    """Federated Inference for a separable model (Algorithms 1-2).

    Parameters
    ----------
    loss : LeastSquaresModel or SeparableLoss
        The separable model; provides ``block(data, norm)``, ``block_dimension``,
        ``block_sensitivity(norm)``, ``block_bounds(norm)`` and ``solve(z, norm)``.
    dp : LocalDP or None
        The release of one noisy block (dimension ``loss.block_dimension``, sensitivity at
        least ``loss.block_sensitivity``).  ``None``: noise-free blocks (no privacy).
    num_clients : int
    stagger : sequence of int, optional
        ``gamma_k`` per client for asynchronous runs (default all 1: synchronous).
    shares : sequence of float, optional
        Data shares ``p_k = |D_k| / |D|`` (public; default ``1/K``), used in (7.26).
    grid_core, grid_tail : int
        Grid sizes of the SaS / Laplace posterior (see ``GridPosterior``).
    partial : {"skip", "cycle"}, default "skip"
        A synchronous round without every client's valid block: ``"skip"`` it (the model stays
        at the last full observation, so a client whose blocks are always rejected stalls the
        run), or ``"cycle"``: apply every round's valid blocks one by one as asynchronous
        replies (Algorithm 2, lines 9-17; with every client answering this equals the
        synchronous round), so the cycles complete with the clients that answer and mis-weight
        the missing ones as under asynchronous drop-outs.
    robust : None
        Refused for FedInfer: the coordinate-wise median or a trimmed mean of the blocks is no
        observation of ``z* = sum_k z_k`` with a known noise law (the posterior would be
        wrong), and norm bounding is already done by the declared box of
        :meth:`reply_bounds`, which every reply is screened against.

    Examples
    --------
    Noise-free data: one synchronous round gives the centralized solution.

    >>> import numpy as np
    >>> from privacy.federated import run_sync
    >>> from privacy.federated.models import KernelFeatures, LeastSquaresModel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> feats = KernelFeatures.random(low=[-2, -2], high=[2, 2], count=4, rng=1)
    >>> model = LeastSquaresModel(feats, num_classes=2, feature_bound=10.0, total_samples=60)
    >>> data = [{"X": X[:30], "y": y[:30]}, {"X": X[30:], "y": y[30:]}]
    >>> result = run_sync(FedInfer(model, None, num_clients=2), data, rounds=1)
    >>> bool(np.allclose(result.model["w"], model.centralized(X, y)))
    True
    """

    name = "fedinfer"

    def __init__(self, loss: Any, dp: LocalDP | None, *, num_clients: int,
                 stagger: Sequence[int] | None = None, shares: Sequence[float] | None = None,
                 grid_core: int = 384, grid_tail: int = 96, partial: str = "skip",
                 robust: None = None):
        if check_robust(robust, 0.0)[0] is not None:
            raise ParameterError(f"FedInfer takes no robust rule (got {robust!r}): a median or "
                                 f"trimmed mean of the clients' blocks is not their sum, so the "
                                 f"posterior of z* would be wrong; every block is already "
                                 f"screened against the declared box (reply_bounds)")
        if partial not in ("skip", "cycle"):
            raise ParameterError(f"partial must be 'skip' or 'cycle'; got {partial!r}")
        self.partial = partial
        self.loss = loss
        self.dp = dp
        self.num_clients = check_integer("num_clients", num_clients, minimum=1)
        k = self.num_clients
        self.norm = noise_norm(dp.noise) if dp is not None else "l2"
        d = loss.block_dimension
        if dp is not None:
            if dp.dimension != d:
                raise DimensionError(f"dp.dimension is {dp.dimension}; the model's block has "
                                     f"{d} entries")
            needed = loss.block_sensitivity(self.norm)
            if dp.sensitivity < needed * (1 - 1e-12):
                raise ParameterError(f"dp.sensitivity {dp.sensitivity:g} is below the block's "
                                     f"{self.norm}-sensitivity {needed:g}: the privacy claim "
                                     f"would be false")
        gammas = [1] * k if stagger is None else list(stagger)
        if len(gammas) != k:
            raise DimensionError(f"stagger has {len(gammas)} rates; expected {k}")
        self.stagger = tuple(check_integer(f"stagger[{i}]", g, minimum=1)
                             for i, g in enumerate(gammas))
        self.period = math.lcm(*self.stagger)                      # Gamma
        self.cycle = sum(self.period // g for g in self.stagger)  # sum_k Gamma / gamma_k
        p = np.full(k, 1.0 / k) if shares is None else np.asarray(shares, dtype=float)
        if p.shape != (k,) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ParameterError(f"shares must be {k} non-negative numbers summing to 1; got "
                                 f"{shares!r}")
        self.shares = p
        weights = tuple(g / self.period for g in self.stagger
                        for _ in range(self.period // g))
        law = (ReleaseSumNoise(dp.noise, dp.scale, weights, dp.alpha) if dp is not None
               else ReleaseSumNoise("gaussian", 1.0, weights))   # noise-free: running mean
        self.posterior = make_posterior(law, d, loss.block_bounds(self.norm), core=grid_core,
                                        tail=grid_tail)
        self._reply_spec = {"z": (d,)}

    def client_dp(self, client_id: int) -> LocalDP | None:
        """Every client releases the same block law."""
        return self.dp

    # ------------------------------------------------------------------ client (Algorithm 1)
    def init_client_state(self, data: Mapping[str, np.ndarray]) -> ClientState:
        return ClientState(scalars={DP_RELEASES: 0})

    def client_update(self, data, state, message, rng):
        """One noisy copy of the client's block (Algorithm 1, lines 5-7)."""
        done = int(state.scalars.get(DP_RELEASES, 0))
        if self.dp is not None and not self.dp.allows(done):
            return ClientResult({}, {ABSTAIN: 1}, state)
        z = self.loss.block(data, self.norm)
        count = len(data[next(iter(data))])
        if self.dp is None:
            return ClientResult({"z": z}, {"samples": count}, state)
        noisy = self.dp.randomize(z, rng)
        return ClientResult({"z": noisy}, {"samples": count},
                            state.replace(scalars={DP_RELEASES: done + 1}))

    # ------------------------------------------------------------------ server (Algorithm 2)
    def init_server_state(self, num_clients: int, seed: int) -> ServerState:
        if num_clients != self.num_clients:
            raise DimensionError(f"FedInfer was built for {self.num_clients} clients; the "
                                 f"runtime has {num_clients}")
        d = self.loss.block_dimension
        arrays = {"xi": np.zeros(d), "zbar": np.zeros(d)}
        arrays.update({_POST + k: v for k, v in self.posterior.initial().items()})
        return ServerState.new(arrays, num_clients=num_clients, seed=seed, i=0, n=0)

    def configure_round(self, state: ServerState, round: int, rng) -> RoundPlan:
        return RoundPlan(tuple(range(self.num_clients)))

    def configure_client(self, state: ServerState, client_id: int, request: int,
                         rng) -> RoundPlan:
        return RoundPlan((client_id,))

    def reply_spec(self, state: ServerState, client_id: int) -> dict[str, tuple[int, ...]]:
        return self._reply_spec

    def shared_reply_spec(self, state: ServerState) -> dict[str, tuple[int, ...]]:
        """Every client's :meth:`reply_spec`: the server judges a round without asking it per
        client."""
        return self._reply_spec

    @functools.cached_property
    def _reply_bounds(self) -> dict[str, ReplyBound]:
        """The box of one client's noisy block: a client's records are some of the ``N``, so its
        block lies in the hull of the global box and 0, widened by the noise allowance (computed
        on first use: a SaS tail bound takes a fraction of a second)."""
        bounds = self.loss.block_bounds(self.norm)
        low, high = np.minimum(bounds[0], 0.0), np.maximum(bounds[1], 0.0)
        slack = 1e-9 * np.maximum(np.abs(low), np.abs(high)) + 1e-300
        noise = 0.0 if self.dp is None else self.dp.noise_allowance(FALSE_ALARM)[0]
        low, high = low - slack - noise, high + slack + noise
        low.flags.writeable = high.flags.writeable = False
        return {"z": ReplyBound(low, high)}

    def reply_bounds(self, state: ServerState, client_id: int) -> dict[str, ReplyBound]:
        """The box an honest client's noisy block lies in (except w.p. ``FALSE_ALARM``)."""
        return self._reply_bounds

    def shared_reply_bounds(self, state: ServerState) -> dict[str, ReplyBound]:
        """Every client's :meth:`reply_bounds` (one box: the blocks share their law)."""
        return self._reply_bounds

    def _post(self, state: ServerState) -> dict[str, np.ndarray]:
        return {k[len(_POST):]: v for k, v in state.arrays.items() if k.startswith(_POST)}

    def _complete(self, state: ServerState, xi: np.ndarray, **scalars: Any) -> ServerState:
        """Lines 14-16: xi is the (n+1)-st full observation."""
        post = self.posterior.add(self._post(state), xi)
        zbar = self.posterior.summary(post).mean
        arrays = {"xi": zbar, "zbar": zbar, **{_POST + k: v for k, v in post.items()}}
        return state.replace(arrays=arrays, n=int(state.scalars["n"]) + 1, **scalars)

    def aggregate(self, state: ServerState, round: int,
                  replies: Mapping[int, Reply]) -> ServerState:
        """A synchronous round: ``sum_k zhat_k`` is one full observation (7.18)."""
        if self.cycle != self.num_clients:
            raise ParameterError("synchronous rounds need all stagger rates equal to 1; use "
                                 "the asynchronous runner for stagger")
        if self.partial == "cycle":
            for k in sorted(replies):
                state = self.apply_reply(state, k, replies[k])
            return state
        if len(replies) != self.num_clients:
            missing = sorted(set(range(self.num_clients)) - set(replies))
            logger.warning("FedInfer round %d: clients %s missing; a partial round is not a "
                           "full observation of z* and is skipped", round, missing)
            return state
        total = stacked(replies, "z").sum(axis=0)
        return self._complete(state, total, i=int(state.scalars["i"]) + self.num_clients,
                              version=state.version + 1)

    def apply_reply(self, state: ServerState, client_id: int, reply: Reply) -> ServerState:
        """One asynchronous reply (Algorithm 2, lines 9-17)."""
        weight = self.stagger[client_id] / self.period
        xi = (state.arrays["xi"] - weight * self.shares[client_id] * state.arrays["zbar"]
              + weight * np.asarray(reply.arrays["z"], dtype=float))
        i = int(state.scalars["i"]) + 1
        if i % self.cycle == 0:
            return self._complete(state, xi, i=i, version=state.version + 1)
        return state.replace(arrays={"xi": xi}, i=i, version=state.version + 1)

    # ------------------------------------------------------------------ estimates
    def posterior_summary(self, state: ServerState, level: float = 0.95,
                          interval: str = "central") -> PosteriorSummary:
        """Posterior of ``z*`` (mean, sd, credible interval) given the statistic and ``xi``.

        Mid-cycle (after the first full observation) ``xi`` enters as the partial observation
        of lines 11-12; before the first full observation this is the prior.  ``interval``:
        ``"central"`` (equal tails) or ``"hpd"`` (highest density), which differ at the prior
        box's edge (:class:`~privacy.federated.posterior.PosteriorSummary`).
        """
        post = self._post(state)
        mid_cycle = int(state.scalars["i"]) % self.cycle != 0 and int(state.scalars["n"]) > 0
        extra = state.arrays["xi"] if mid_cycle else None
        return self.posterior.summary(post, extra=extra, level=level, interval=interval)

    def model_from_block(self, z: Any) -> np.ndarray:
        """``argmin_w g(w) z``."""
        return self.loss.solve(z, self.norm)

    def model(self, state: ServerState) -> dict[str, np.ndarray]:
        """The server's estimate ``w_i = argmin_w J(w, E[q(z | t_i)])`` (line 12)."""
        return {"w": self.model_from_block(self.posterior_summary(state).mean)}
