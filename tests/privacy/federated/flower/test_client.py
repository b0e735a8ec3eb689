"""The ClientApp keys its noise with a secret of its own, kept beside its state.

The privacy walkthrough's server regenerated every client's noise from the run seed it sends
(``derive_rng(seed, "client", k, round)``) and subtracted it: FedInfer's reply minus that noise
equalled the true block to 2.8e-17.  These tests call the Flower ClientApp directly, with
exactly what the server holds (the message, its seed, the reply).
"""

from __future__ import annotations

import numpy as np
import pytest
from flwr.app import Context, RecordDict

from privacy.errors import ParameterError
from privacy.federated.algorithm import _input_digest
from privacy.federated.fedinfer import FedInfer
from privacy.federated.flower import (
    SIMULATION_SEED,
    STATE_DIR,
    ensure_task_identity,
    load_client_secret,
    make_client_app,
    node_secret,
    save_client_secret,
)
from privacy.federated.flower.records import reply_from_flower
from privacy.federated.flower.transport import flower_message
from privacy.federated.local_dp import LocalDP
from privacy.federated.models import KernelFeatures, LeastSquaresModel
from privacy.federated.protocol import RoundPlan, derive_rng, simulation_secret

SEED = 0


def _fedinfer():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-1, 1, (300, 2)), rng.normal(1, 1, (300, 2))])
    y = np.repeat([0, 1], 300)
    clients = [{"X": X[p], "y": y[p]} for p in np.array_split(rng.permutation(600), 3)]
    features = KernelFeatures.random(low=[-3, -3], high=[3, 3], count=3, rng=1)
    model = LeastSquaresModel(features, num_classes=2, feature_bound=3.0, total_samples=600,
                              ridge=0.05)
    dp = LocalDP("gaussian", scale=0.2, sensitivity=model.block_sensitivity("l2"),
                 dimension=model.block_dimension, delta=1e-5)
    return FedInfer(model, dp, num_clients=3), model, dp, clients


def _context(k, **node_config):
    return Context(1, 100 + k, {"partition-id": k, "num-partitions": 3, **node_config},
                   RecordDict(), {})


def _ask(app, context, k, round):
    """The server's train message for client ``k`` (seed SEED, in the message) and the reply's
    arrays as the server receives them."""
    ensure_task_identity(1)
    message = RoundPlan((k,)).message_for(k, round=round, model_version=0, seed=SEED)
    reply = reply_from_flower(app(flower_message(message, 100 + k, ttl=None), context))
    return np.asarray(reply.arrays["z"]), reply


@pytest.mark.parametrize("node", ["own secret", "simulated"])
def test_the_server_cannot_regenerate_a_nodes_noise_from_the_seed(tmp_path, node):
    """The residual of the walkthrough's subtraction is now of the noise's size, for a node with
    its own secret and for a simulated one (its secret derives from the seed under a key no
    seed-keyed generator uses: the experimenter, not the protocol's server, can remove it)."""
    algorithm, model, dp, clients = _fedinfer()
    app = make_client_app(algorithm, clients)
    extra = {SIMULATION_SEED: SEED} if node == "simulated" else {}
    for k in range(3):
        context = _context(k, **{STATE_DIR: str(tmp_path)}, **extra)
        for t in range(2):
            received, _ = _ask(app, context, k, t)
            truth = model.block(clients[k], algorithm.norm)
            noise = received - truth
            regenerated = dp.randomize(np.zeros_like(received), derive_rng(SEED, "client", k, t))
            residual = np.abs(received - regenerated - truth).max()
            # both draws N(0, 0.2^2) per coordinate, independent: the residual's max over the
            # block is of the noise's size, never the 1e-15 of a regenerated copy
            assert residual > 0.3 * np.abs(noise).max() > 0
            assert np.abs(noise).max() > 0.1
    if node == "simulated":
        # what the experimenter of a simulation can do (the documented caveat): the message and
        # the state are his too
        received, _ = _ask(app, _context(0, **extra), 0, 5)
        message = RoundPlan((0,)).message_for(0, round=5, model_version=0, seed=SEED)
        digest = _input_digest(message, algorithm.init_client_state(clients[0]), clients[0])
        regenerated = dp.randomize(np.zeros_like(received), derive_rng(
            simulation_secret(SEED, 0), "client", 0, 5, digest=digest))
        np.testing.assert_allclose(received - regenerated,
                                   model.block(clients[0], algorithm.norm), atol=1e-12)


def test_a_nodes_secret_persists_in_its_state_dir_and_a_replay_repeats_the_reply(tmp_path):
    """The secret is drawn at the first message and saved (owner-only) before the reply leaves;
    a restarted node (empty context) replaying that round answers bit for bit the same, so the
    replay releases nothing new.  Without the saved secret the replay would be a second,
    differently noised release of the same block."""
    algorithm, _, _, clients = _fedinfer()
    app = make_client_app(algorithm, clients)
    first, reply = _ask(app, _context(1, **{STATE_DIR: str(tmp_path)}), 1, 0)
    secret = load_client_secret(tmp_path / "client-1")
    assert secret is not None and secret.bit_length() > 64
    assert (tmp_path / "client-1.secret").stat().st_mode & 0o777 == 0o600
    assert f"{secret:x}" not in repr(reply) and secret not in reply.metrics.values()
    restarted = _context(1, **{STATE_DIR: str(tmp_path)})
    replay, _ = _ask(app, restarted, 1, 0)
    np.testing.assert_array_equal(replay, first)
    assert node_secret(restarted) == secret
    # another node of the same seed, message and data but another secret: other noise
    (tmp_path / "client-1.secret").unlink()
    other, _ = _ask(app, _context(1, **{STATE_DIR: str(tmp_path)}), 1, 0)
    assert not np.allclose(other, first)
    assert load_client_secret(tmp_path / "client-1") not in (None, secret)


def test_a_damaged_secret_file_is_a_clear_error(tmp_path):
    (tmp_path / "client-0.secret").write_text("not hex\n")
    with pytest.raises(ParameterError, match=r"client-0\.secret does not hold a client secret"):
        load_client_secret(tmp_path / "client-0")
    with pytest.raises(ParameterError, match="simulation-seed' must be an integer >= 0"):
        node_secret(_context(0, **{SIMULATION_SEED: -1}))


def test_saving_a_secret_never_follows_a_planted_tmp_link_nor_reuses_a_stale_file(tmp_path):
    """The tmp name is predictable: a symlink planted there must not receive the key, and a
    stale tmp file (a crash) must not lend its permissions; the saved file is owner-only."""
    victim = tmp_path / "elsewhere.txt"
    victim.write_text("untouched\n")
    victim.chmod(0o644)
    (tmp_path / "client-0.secret.tmp").symlink_to(victim)
    save_client_secret(tmp_path / "client-0", 0xABCDEF)
    assert victim.read_text() == "untouched\n" and victim.stat().st_mode & 0o777 == 0o644
    assert not (tmp_path / "client-0.secret.tmp").exists()
    assert not (tmp_path / "client-0.secret.tmp").is_symlink()
    assert load_client_secret(tmp_path / "client-0") == 0xABCDEF
    assert (tmp_path / "client-0.secret").stat().st_mode & 0o777 == 0o600
    stale = tmp_path / "client-1.secret.tmp"
    stale.write_text("old\n")
    stale.chmod(0o666)
    save_client_secret(tmp_path / "client-1", 0x1234)
    assert load_client_secret(tmp_path / "client-1") == 0x1234
    assert (tmp_path / "client-1.secret").stat().st_mode & 0o777 == 0o600
    assert not stale.exists()
