"""Poisoning clients: what a dishonest client may send instead of its honest reply.

Each attack maps an honest reply to a poisoned one (same header, so only the values can give it
away); :func:`poisoning_tamper` turns an attack on a set of clients into the ``tamper`` hook of
:class:`privacy.federated.runner.Network`, so the same run can be repeated honest and attacked
with every other random number equal (seed Ch. 10, "trust": how far can a few clients move
the model?).

Attacks (every array of the reply):

* ``"x1000"``: the update times 1000;
* ``"x1e200"``: times 1e200 (finite, but its square overflows);
* ``"integer"``: the signs of the update as an ``int64`` array (entries -1, 0, 1);
* ``"flip"``: the update with its sign flipped (inside every bound an honest reply meets).

Examples
--------
>>> import numpy as np
>>> from privacy.federated.protocol import Reply
>>> reply = Reply({"u": np.array([0.5, -0.25])}, {"client_id": 1})
>>> poison(reply, "integer").arrays["u"]
array([ 1, -1])
>>> tamper = poisoning_tamper("flip", clients={1})
>>> [r.arrays["u"].tolist() for r in tamper(1, 0, reply)], tamper(0, 0, reply)[0] is reply
([[-0.5, 0.25]], True)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from _toolbox.errors import ParameterError
from privacy.federated.values import Reply

__all__ = ["ATTACKS", "poison", "poisoning_tamper"]

_ATTACKS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "x1000": lambda a: a * 1e3,
    "x1e200": lambda a: a * 1e200,
    "integer": lambda a: np.sign(a).astype(np.int64),
    "flip": lambda a: -a,
}
#: The attack names.
ATTACKS = tuple(_ATTACKS)


def _attack(name: str) -> Callable[[np.ndarray], np.ndarray]:
    if name not in _ATTACKS:
        raise ParameterError(f"attack must be one of {ATTACKS}; got {name!r}")
    return _ATTACKS[name]


def poison(reply: Reply, attack: str) -> Reply:
    """``reply`` with every array replaced by the attack's version of it (header unchanged).

    Raises
    ------
    ParameterError
        An unknown attack.
    """
    change = _attack(attack)
    with np.errstate(over="ignore"):
        arrays = {name: change(np.asarray(a, dtype=float)) for name, a in reply.arrays.items()}
    return Reply(arrays, reply.metrics)


def poisoning_tamper(attack: str, clients: Collection[int], *, start: int = 0
                     ) -> Callable[[int, int, Reply], Sequence[Reply]]:
    """A :class:`~privacy.federated.runner.Network` ``tamper`` hook: ``clients`` send
    ``attack``-ed replies from round (request) ``start`` on; abstentions pass unchanged.

    Raises
    ------
    ParameterError
        An unknown attack.
    """
    _attack(attack)
    bad = frozenset(int(k) for k in clients)

    def tamper(client: int, round: int, reply: Reply) -> Sequence[Reply]:
        if client in bad and round >= start and not reply.abstained:
            return [poison(reply, attack)]
        return [reply]
    return tamper
