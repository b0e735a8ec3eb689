"""Federated identification: the FederatedIdentification protocol on the numpy and Flower
runtimes."""

import numpy as np
import pytest

from dmdidc.errors import DimensionError, ParameterError
from dmdidc.federated import combine_statistics
from dmdidc.federated.identification import FederatedIdentification
from privacy.federated import run_sync
from privacy.federated.algorithm import _input_digest
from privacy.federated.protocol import derive_rng, simulation_secret
from tests.dmdidc.federated.test_combine import BOUNDS, _client_data


def _algorithm(**kwargs):
    options = dict(num_clients=4, n_states=1, n_inputs=1, max_delay=2, epsilon=[1.0, 0.5, 2.0, 1.0],
                   delta=1e-5, join_round=[0, 1, 1, 2], **BOUNDS)
    options.update(kwargs)
    return FederatedIdentification(**options)


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
def test_protocol_equals_combining_the_clients_releases(mechanism):
    algo = _algorithm(mechanism=mechanism, delta=1e-5 if mechanism == "gaussian" else None)
    data = [_client_data(k) for k in range(4)]
    received = {}

    class Spy:   # records what each client computed from (its noise is keyed by it too)
        def __getattr__(self, name):
            return getattr(algo, name)

        def client_update(self, data, state, message, rng):
            received.setdefault(message.client_id, (message, state, data))
            return algo.client_update(data, state, message, rng)

    run = run_sync(Spy(), data, rounds=3, seed=5)
    assert [r.accepted for r in run.history] == [(0,), (1, 2), (3,)]
    releases = [algo.client_statistics(d).privatize(
        **algo._release_options(k), rng=derive_rng(simulation_secret(5, k), "client", k,
                                                  algo.join_round[k],
                                                  digest=_input_digest(*received[k])))
        for k, d in enumerate(data)]
    assert np.array_equal(algo.model(run.state)["statistics"],
                          combine_statistics(releases).to_vector())
    assert np.allclose(run.final_epsilon(), [r.privacy.epsilon for r in releases])
    # more rounds: every client has spent its budget and abstains; nothing changes
    longer = run_sync(algo, data, rounds=5, seed=5)
    assert np.array_equal(longer.model["statistics"], run.model["statistics"])
    assert np.array_equal(longer.releases(), [1, 1, 1, 1])
    rebuilt = algo.statistics_from_model(run.model)
    assert rebuilt.n_samples == sum(r.n_samples for r in releases)


def test_flower_inprocess_is_bit_identical_to_numpy():
    pytest.importorskip("flwr")
    from privacy.federated.flower import run_inprocess_sync

    algo = _algorithm(mechanism="laplace", delta=None)
    data = [_client_data(k) for k in range(4)]
    flower = run_inprocess_sync(algo, data, rounds=3, seed=9)
    numpy_ = run_sync(algo, data, rounds=3, seed=9)
    assert np.array_equal(flower.model["statistics"], numpy_.model["statistics"])
    assert flower.model["noise_variance"][0] == numpy_.model["noise_variance"][0]
    assert np.array_equal(flower.final_epsilon(), numpy_.final_epsilon())


def test_protocol_bad_settings():
    with pytest.raises(DimensionError, match="epsilon"):
        _algorithm(epsilon=[1.0, 1.0])
    with pytest.raises(ParameterError, match="mechanism"):
        _algorithm(mechanism="cauchy")
    with pytest.raises(ParameterError, match="delta"):
        _algorithm(mechanism="gaussian", delta=None)
    algo = _algorithm()
    with pytest.raises(DimensionError, match="X"):
        algo.client_statistics({"X": np.zeros((2, 1, 10)), "U": np.zeros((3, 1, 9))})


@pytest.mark.parametrize("mechanism, delta", [("gaussian", 1e-5), ("laplace", None),
                                              ("sas", None)])
def test_release_account_is_a_view_of_the_accountant(mechanism, delta):
    """A client's composed epsilon comes from the accountant, at the delta the replaced simple
    composition stated (``n * delta``), and is never above that composition's ``n * eps``."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    from privacy.accountant import Accountant
    from privacy.composition import simple_composition

    algo = _algorithm(mechanism=mechanism, delta=delta, alpha=1.5 if mechanism == "sas" else None,
                      epsilon=1.0)
    account = algo.client_dp(0)
    assert account.neighboring.name == "REPLACE_ONE" and account.unit == "sample"
    assert account.epsilon(0) == 0.0
    assert account.epsilon(1) == pytest.approx(account.epsilon_per_release, rel=1e-9)
    for n in (2, 5):
        old = simple_composition(account.epsilon_per_release, account.delta_per_release,
                                 steps=n)
        new = account.guarantee(n)
        assert new.delta == pytest.approx(old.delta) and new.epsilon <= old.epsilon * (1 + 1e-12)
        assert new.unit == "sample" and new.neighboring.name == "REPLACE_ONE"
        independent = Accountant(neighboring=account.neighboring).compose(account.event, n)
        assert new.epsilon == independent.epsilon(account.delta(n))
    if mechanism == "gaussian":
        # side by side with dp_accounting: the event states C = l2 / 2 under REPLACE_ONE (a
        # replacement moves the release by l2 = 2 C), so the pair is N(0, s^2) against
        # N(l2, s^2): dp_accounting's unit-shift Gaussian with deviation s / l2 = multiplier / 2
        sigma = account.event.noise_multiplier / 2.0
        pld = pld_lib.from_gaussian_mechanism(sigma).self_compose(2)
        assert account.epsilon(2) == pytest.approx(pld.get_epsilon_for_delta(2e-5), abs=2e-3)
        assert account.epsilon(2) < 0.75 * simple_composition(1.0, 1e-5, steps=2).epsilon
    else:   # pure DP: the composition is exact, the same as before
        assert account.epsilon(2) == pytest.approx(2 * account.epsilon_per_release, rel=1e-12)


def test_release_account_without_its_event_composes_the_stated_guarantee():
    from dmdidc.federated.identification import ReleaseAccount

    account = ReleaseAccount(0.5, 1e-6, "trajectory")
    assert account.epsilon(1) == pytest.approx(0.5)
    assert account.epsilon(10) < 5.0 and account.guarantee(10).delta == pytest.approx(1e-5)
