"""A small stateful, random, async-capable algorithm for testing runtimes."""

from __future__ import annotations

import numpy as np

from privacy.federated.protocol import (
    DP_RELEASES,
    ClientResult,
    ClientState,
    RoundPlan,
    ServerState,
)


class NoisyMean:
    """Clients send their data mean plus N(0, noise^2) noise; the server averages."""

    name = "noisy-mean"
    dp = None

    def __init__(self, dim: int = 2, noise: float = 0.1, fraction: float = 1.0):
        self.dim, self.noise, self.fraction = dim, noise, fraction

    def init_client_state(self, data):
        return ClientState({"last": np.zeros(self.dim)}, {"sent": 0, DP_RELEASES: 0})

    def client_update(self, data, state, message, rng):
        value = data["x"].mean(axis=0) + message.arrays["mean"] * 0.0 + \
            self.noise * rng.normal(size=self.dim)
        new = state.replace(arrays={"last": value},
                            scalars={"sent": state.scalars["sent"] + 1,
                                     DP_RELEASES: state.scalars[DP_RELEASES] + 1})
        return ClientResult({"mean": value}, {"n": len(data["x"])}, new)

    def init_server_state(self, num_clients, seed):
        return ServerState.new({"mean": np.zeros(self.dim), "sum": np.zeros(self.dim)},
                               num_clients=num_clients, seed=seed, count=0)

    def configure_round(self, state, round, rng):
        chosen = [k for k in range(state.num_clients) if rng.random() < self.fraction]
        return RoundPlan(tuple(chosen), {"mean": state.arrays["mean"]}, {"scale": 1.0})

    def configure_client(self, state, client_id, request, rng):
        return RoundPlan((client_id,), {"mean": state.arrays["mean"]})

    def reply_spec(self, state, client_id):
        return {"mean": (self.dim,)}

    def aggregate(self, state, round, replies):
        mean = np.mean([r.arrays["mean"] for r in replies.values()], axis=0)
        return state.replace(arrays={"mean": mean}, version=state.version + 1)

    def apply_reply(self, state, client_id, reply):
        total = state.arrays["sum"] + reply.arrays["mean"]
        count = int(state.scalars["count"]) + 1
        return state.replace(arrays={"sum": total, "mean": total / count}, count=count,
                             version=state.version + 1)

    def model(self, state):
        return {"mean": state.arrays["mean"]}


def toy_data(num_clients: int = 3, dim: int = 2, rng: int = 0):
    gen = np.random.default_rng(rng)
    return [{"x": gen.normal(loc=k, size=(5 + k, dim))} for k in range(num_clients)]
