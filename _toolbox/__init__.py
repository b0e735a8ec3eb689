"""The neutral base of the toolbox: errors, input validation, lazy loading, plotting, formatting.

A private package imported by every other one (``privacy``, ``dmdidc``, ``controllers``,
``simulations``) and importing none of them, so that a helper two packages need lives below
both (the layer contract in ``pyproject.toml`` checks this).  Its modules are imported directly
(``from _toolbox.errors import ParameterError``); the public homes of the errors remain
``privacy.errors`` and ``controllers.errors`` (aliases of :mod:`_toolbox.errors`) and
``dmdidc.errors`` (which re-exports them).

* :mod:`_toolbox.errors`: the one exception hierarchy;
* :mod:`_toolbox.validation`: argument checks whose messages name argument, value and range;
* :mod:`_toolbox.lazy`: PEP 562 lazy package attributes from one table (cheap ``import``);
* :mod:`_toolbox.plotting`: figures without pyplot state;
* :mod:`_toolbox.formatting`: an estimate with its interval as console text;
* :mod:`_toolbox.logs`: a library's logger quieted for the duration of a call.
"""

__all__: list[str] = []
