"""The contract between federated algorithms and the runtimes that carry their messages.

An *algorithm* (FedInfer, FedAvg, ...) is one immutable object holding only static
hyperparameters.  It implements a client half and a server half as pure functions of named float
arrays and flat scalars; a *runtime* (the numpy reference runner :mod:`privacy.federated.runner`,
an in-process Flower grid, real Flower processes) only moves these values around.  Because every
value is a named array or a flat scalar, the mapping to Flower's records is one to one:

=========================  ======================================  ============================
protocol value             Flower record                           where
=========================  ======================================  ============================
``Message.arrays``         ``ArrayRecord`` (name -> ndarray)       server -> client content
``Message.config``         ``ConfigRecord`` (name -> scalar/str)   server -> client content
``Reply.arrays``           ``ArrayRecord``                         client -> server content
``Reply.metrics``          ``MetricRecord`` (name -> int/float)    client -> server content
``ClientState``            ``context.state``: ``ArrayRecord`` +    kept by the node between
                           ``ConfigRecord``                        messages
``ServerState``            ``.npz`` (arrays) + ``.json`` (scalars) :func:`save_server_state`
=========================  ======================================  ============================

The contract lives in four small modules, all re-exported here (import from either):

* :mod:`privacy.federated.values` -- the values above and the reserved keys;
* :mod:`privacy.federated.algorithm` -- what an algorithm implements
  (:class:`FederatedAlgorithm`, :class:`AsyncAlgorithm`), :func:`run_client`,
  :func:`derive_rng` and the ``privacy.federated`` logger;
* :mod:`privacy.federated.validation` -- :func:`validate_reply`;
* :mod:`privacy.federated.state_io` -- :func:`save_server_state` / :func:`load_server_state`.

The server half every runtime runs is :class:`privacy.federated.server_step.ServerStep`.

Client half (a pure function; Flower's deployed ClientApp runs in a fresh process per message
and keeps state only in ``context.state``, so nothing may live in globals)::

    algorithm.init_client_state(data) -> ClientState
    algorithm.client_update(data, state, message, rng) -> ClientResult(arrays, metrics, state)

Runtimes do not call ``client_update`` directly but :func:`run_client`, which starts from
``init_client_state`` when the stored state is empty, derives the rng with :func:`derive_rng`
from the client's secret and the message's round, and stamps the reserved reply metrics.

Server half::

    algorithm.init_server_state(num_clients, seed) -> ServerState     # seed stored in the state
    algorithm.configure_round(state, round, rng) -> RoundPlan         # sampling + broadcast
    algorithm.reply_spec(state, client_id) -> {name: shape}           # what a valid reply holds
    algorithm.aggregate(state, round, replies) -> ServerState         # replies: {id: Reply}
    algorithm.model(state) -> {name: ndarray}                         # current global estimate

optionally ``algorithm.reply_bounds(state, client_id) -> {name: ReplyBound}`` (what an honest
reply can hold, :mod:`privacy.federated.validation`), and, when every client's spec or bounds
are one and the same, ``algorithm.shared_reply_spec(state)`` / ``shared_reply_bounds(state)``
returning it (``None``: it depends on the client), so that a synchronous round is judged
without a call per client;

and, for algorithms that run asynchronously (:class:`AsyncAlgorithm`)::

    algorithm.configure_client(state, client_id, request, rng) -> RoundPlan  # one client's request
    algorithm.apply_reply(state, client_id, reply) -> ServerState     # async hook, one reply

``apply_reply`` receives replies in arrival order; each carries the ``model_version`` it was
computed from, so staleness is ``state.version - reply.metrics['model_version']``.  With all
clients answering every round, applying the replies of a round one by one gives the same state
as ``aggregate`` (tested for every algorithm).

Privacy.  An algorithm that releases noisy values has a method ``client_dp(client_id)``
returning that client's release description (a :class:`privacy.federated.local_dp.LocalDP`,
a :class:`dmdidc.federated.identification.ReleaseAccount`, or ``None``: views of the one
accountant, :class:`privacy.accountant.Accountant`, with ``epsilon(n)`` and
``epsilon_bound(n)``); its clients count their releases in the client-state scalar
``dp_releases`` (:data:`DP_RELEASES`), from which runtimes report each client's composed epsilon
after every round (``RunResult.epsilon_history``; exact final values
``RunResult.final_epsilon``).

:func:`validate_reply` rejects malformed, non-finite, wrong-shape, duplicate and stale replies
with a reason string before any of them reaches ``aggregate`` / ``apply_reply``; the server step
logs the reason (``logging.getLogger("privacy.federated")``) and never aggregates the reply.

Reserved keys.  Every message config carries ``round`` (int; the synchronous round, or for an
asynchronous request the index of the request to that client), ``model_version`` (int; the server
version the message was built from), ``seed`` (int; the run seed) and ``client_id`` (int; the
addressee); :meth:`RoundPlan.message_for` stamps them and algorithms must not set them.
:func:`run_client` stamps ``client_id``, ``round`` and ``model_version`` into the reply
metrics.

Randomness.  A client's generator is ``derive_rng(secret, "client", client_id, round,
digest=d)`` (``numpy.random.SeedSequence(secret, spawn_key=(role, client_id, round, *d))``,
``d`` the SHA-256 words of the message and of the client's state without its release counter:
the same round number with another message or state never reuses the noise), keyed by the
client's *secret*, never by the run seed alone: the seed is in every message the server sends, and
noise drawn from it could be regenerated and subtracted by the server, the very party local DP
protects against.  A real client draws its secret from OS entropy
(:func:`new_client_secret`) and keeps it (a Flower node in its state folder); a simulation
derives every secret from the run seed (:func:`simulation_secret`), so there whoever knows the
seed knows the noise.  The server's generator for synchronous round ``t`` is
``derive_rng(seed, "server", 0, t)`` and for the asynchronous request ``j`` to client ``k`` it
is ``derive_rng(seed, "server", k + 1, j)``; the reference runner's simulated network uses role
``"network"``.  The numbers therefore depend only on (seed, secrets, client, round, the
client's input), never on the process, the order of arrival or the runtime.

References
----------
Seed Ch. 5 (eqs. 5.8-5.23) and Ch. 7 (Algorithms 1-2, eqs. 7.15-7.26).  Flower 1.41 Message API
(``flwr.app.ArrayRecord``, ``ConfigRecord``, ``MetricRecord``; ``Context.state``).

Examples
--------
A toy algorithm: every client reports the mean of its data, the server averages them.

>>> import numpy as np
>>> from privacy.federated.protocol import (ClientResult, ClientState, RoundPlan, ServerState,
...                                         run_client)
>>> from privacy.federated.runner import run_sync
>>> class Mean:
...     name = "mean"
...     def init_client_state(self, data):
...         return ClientState()
...     def client_update(self, data, state, message, rng):
...         return ClientResult({"mean": data["x"].mean(axis=0)}, {"n": len(data["x"])}, state)
...     def init_server_state(self, num_clients, seed):
...         return ServerState.new({"mean": np.zeros(2)}, num_clients=num_clients, seed=seed)
...     def configure_round(self, state, round, rng):
...         return RoundPlan(clients=tuple(range(state.num_clients)))
...     def reply_spec(self, state, client_id):
...         return {"mean": (2,)}
...     def aggregate(self, state, round, replies):
...         mean = np.mean([r.arrays["mean"] for r in replies.values()], axis=0)
...         return state.replace(arrays={"mean": mean}, version=state.version + 1)
...     def model(self, state):
...         return dict(state.arrays)
>>> data = [{"x": np.full((3, 2), float(k))} for k in range(4)]
>>> result = run_sync(Mean(), data, rounds=2, seed=0)
>>> result.model["mean"]
array([1.5, 1.5])
>>> result.state.version
2
"""

from __future__ import annotations

from privacy.federated import algorithm, state_io, validation, values
from privacy.federated.algorithm import *  # noqa: F403
from privacy.federated.state_io import *  # noqa: F403
from privacy.federated.validation import *  # noqa: F403
from privacy.federated.values import *  # noqa: F403

__all__ = [*values.__all__, *algorithm.__all__, *validation.__all__, *state_io.__all__]
