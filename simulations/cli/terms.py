"""The library's remedies in the command line's terms: ``--detrend auto``, not ``detrend='auto'``.

Warnings and errors of the estimators name the Python option that cures them
(``refit with max_delay=2 or more``, ``fit(..., reference=r)``; the convention of
:mod:`dmdidc.inference.checks`).  A command-line user needs the flag instead.  :data:`OPTIONS`
is the one mapping of a Python option to the flag that sets it, and :func:`in_cli_terms`
restates a message with it, for the flags the running command has; an option without a flag
there keeps its Python text (``confidence_intervals(method='bootstrap')``).  The root command
applies it to every error, and the commands to the warnings they print (:func:`warn`).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Collection, Mapping
from typing import NamedTuple

from _toolbox.errors import ParameterError

__all__ = ["Flag", "OPTIONS", "StatedError", "in_cli_terms", "command_parser", "command_flags",
           "warn",
           "for_command"]


class StatedError(ParameterError):
    """An error already in the terms the user wrote: a setting of a file given to the command
    (``--config``'s keys, which are not flags).  The root command prints it as is, without
    :func:`in_cli_terms` (which would name a flag the file's setting is not)."""


class Flag(NamedTuple):
    """The flag that sets a Python option: its name, what stands for a placeholder value
    (``reference=r``: ``--reference FILE``), and Python values the flag spells otherwise."""

    flag: str
    metavar: str
    values: Mapping[str, str] = {}


#: Python option (as the library's messages name it) -> the flag that sets it, where the flag
#: has the same meaning in every command that has it.
OPTIONS: Mapping[str, Flag] = {
    "max_delay": Flag("--max-delay", "R", {"None": "auto"}),
    "detrend": Flag("--detrend", "MODE", {"None": "none", "False": "none"}),
    "reference": Flag("--reference", "FILE"),
    "missing": Flag("--missing", "MODE"),
    "estimator": Flag("--estimator", "NAME"),
    # (the solver; confidence_intervals(method='bootstrap') is no choice of the flag: kept)
    "method": Flag("--method", "NAME"),
    "svd_rank": Flag("--svd-rank", "RANK"),
    "block_rtol": Flag("--block-rtol", "RTOL"),
    "significance": Flag("--significance", "LEVEL"),
    "check_level": Flag("--check-level", "LEVEL"),
    "forgetting": Flag("--forgetting", "FACTOR"),
    "state_bound": Flag("--state-bound", "BOUND"),
    "input_bound": Flag("--input-bound", "BOUND"),
    "mechanism": Flag("--mechanism", "NAME"),
    "epsilon": Flag("--epsilon", "EPSILON"),
    "delta": Flag("--delta", "DELTA"),
    "alpha": Flag("--alpha", "ALPHA"),
    "unit": Flag("--unit", "UNIT"),
    "window": Flag("--window", "STEPS"),
    # (OutputDMDidc's; a switch: feedthrough=True is the flag alone)
    "order": Flag("--order", "N"),
    "max_order": Flag("--max-order", "N"),
    "feedthrough": Flag("--feedthrough", "", {"True": ""}),
    # (the smart-grid case study's; a switch: attacks=False is the flag alone)
    "attacks": Flag("--no-attacks", "", {"False": ""}),
    # (OutputDMDidc's constant output offset: identify --outputs --detrend auto estimates it)
    "offset": Flag("--detrend", "MODE", {"True": "auto", "False": "none"}),
    "window_steps": Flag("--window", "STEPS"),        # (smartgrid run's scenario field)
}

_VALUE = r"'[^']*'|\"[^\"]*\"|[\w.+-]*\w"
_BEFORE = r"(?<![\w'\"-])"                      # not inside a word, a quote or a flag


def in_cli_terms(text: str, flags: Collection[str] | Mapping[str, Collection[str] | None]
                 ) -> str:
    """``text`` with every option of :data:`OPTIONS` whose flag is in ``flags`` restated as
    that flag: ``name=value`` as ``--flag value`` (a call around it, ``fit(..., name=value)``
    or ``DMDidc().fit(..., name=value)``, dropped; inside a call with other arguments, such as
    ``IdData(Y, dt=dt, name=value)``, kept as Python), and a bare ``name`` with an underscore
    (never an English word) as ``--flag``; a check's message ``"name must ..."`` names the flag
    ``--name`` where the command has it.  ``flags`` may map each flag to the values it accepts
    (its choices; ``None``: any): a value the flag refuses keeps its Python text.

    Examples
    --------
    >>> flags = {"--max-delay", "--detrend", "--reference"}
    >>> in_cli_terms("refit with max_delay=3 or more; raise max_delay", flags)
    'refit with --max-delay 3 or more; raise --max-delay'
    >>> in_cli_terms("pass fit(..., reference=r), or detrend='auto' (the default)", flags)
    'pass --reference FILE, or --detrend auto (the default)'
    >>> in_cli_terms("steps must be an integer >= 1; got 0", {"--steps"})
    '--steps must be an integer >= 1; got 0'
    >>> in_cli_terms("use estimator='iv' or confidence_intervals(method='bootstrap')", flags)
    "use estimator='iv' or confidence_intervals(method='bootstrap')"
    >>> in_cli_terms("detrend='auto' or detrend='constant'", {"--detrend": ("none", "constant")})
    "detrend='auto' or --detrend constant"
    >>> in_cli_terms("needs reference=r; got reference=None", flags)
    'needs --reference FILE; got no --reference'
    """
    def argument(match: re.Match) -> str:       # "steps must be ...": the flag --steps
        flag = "--" + match[1].replace("_", "-")
        return flag if flag in flags else match[0]

    # a check's message starts with the argument's name ("name must ..."; nested after ": ")
    text = re.sub(r"(?:^|(?<=: ))([a-z][a-z0-9_]*)(?= must )", argument, text)
    known = {name: spec for name, spec in OPTIONS.items() if spec.flag in flags}
    if not known:
        return text
    names = "|".join(map(re.escape, known))
    accepted = flags if isinstance(flags, Mapping) else {}

    def option(match: re.Match) -> str:
        spec, value = known[match["name"]], match["value"]
        if value[0] in "'\"":
            value = value[1:-1]
        elif value == "None" and value not in spec.values:
            return f"no {spec.flag}"                   # not given, not a placeholder
        elif value not in spec.values and re.fullmatch(r"[A-Za-z_]\w*", value) and \
                value not in ("True", "False"):
            return f"{spec.flag} {spec.metavar}"       # a placeholder: reference=r
        value = spec.values.get(value, value)
        choices = accepted.get(spec.flag)
        if choices is not None and value not in choices:
            return match[0]                            # the command refuses it: Python text
        return f"{spec.flag} {value}".rstrip()        # a switch: the flag alone

    assignment = rf"(?P<name>{names})=(?P<value>{_VALUE})"
    # a call whose one argument is the option, after any receiver: DMDidc().fit(..., name=v)
    text = re.sub(rf"{_RECEIVER}\b[A-Za-z_]\w*\((?:\.\.\., )?{assignment}\)", option, text)
    underscored = "|".join(re.escape(name) for name in known if "_" in name)

    def restated(part: str) -> str:
        part = re.sub(_BEFORE + assignment, option, part)
        # "name=" without a value ("a lower order="): the flag
        part = re.sub(rf"{_BEFORE}({names})=(?![\w'\"])", lambda match: known[match[1]].flag,
                      part)
        if underscored:
            part = re.sub(rf"{_BEFORE}({underscored})(?![\w'\"=])",
                          lambda match: known[match[1]].flag, part)
        return part

    # a call with other arguments stays Python: a flag inside it would read
    # "IdData(Y, dt=dt, --missing drop)", which is neither Python nor a command line
    pieces, end = [], 0
    for start, stop in _calls(text):
        pieces += [restated(text[end:start]), text[start:stop]]
        end = stop
    return "".join(pieces + [restated(text[end:])])


#: Receivers before a method call: ``DMDidc().``, ``DMDidc(...).``, ``est.``.
_RECEIVER = r"(?:\b[A-Za-z_]\w*(?:\([^()]*\))?\.)*"


def _calls(text: str) -> list[tuple[int, int]]:
    """The spans of the outermost Python calls ``name(...)`` in ``text`` (parentheses
    balanced; an unclosed one runs to the end)."""
    spans, at = [], 0
    for match in re.finditer(r"\b[A-Za-z_][\w.]*\(", text):
        if match.start() < at:
            continue                            # inside the previous call
        depth, k = 0, match.end() - 1
        for k in range(match.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            if depth == 0:
                break
        at = k + 1
        spans.append((match.start(), at))
    return spans


def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace
                   ) -> argparse.ArgumentParser:
    """The (sub)parser of ``parser`` that parsed ``args``: the subcommand each subparsers'
    ``dest`` names (its ``prog``, ``dmdidc privacy identify``, prefixes the command's
    messages)."""
    for action in parser._actions:                 # argparse lists subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return command_parser(action.choices[chosen], args)
    return parser


def command_flags(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...] | None]:
    """The flags of ``parser``, each with its choices (``None``: any value)."""
    return {flag: None if action.choices is None else tuple(map(str, action.choices))
            for action in parser._actions for flag in action.option_strings}


def for_command(text: object, args: argparse.Namespace) -> str:
    """``text`` (a warning, a report's remedies) in the terms of the running command's flags
    (``args.flags``, set by :func:`simulations.cli.main`; none: the Python text)."""
    return in_cli_terms(str(text), getattr(args, "flags", ()))


def warn(message: object, args: argparse.Namespace) -> None:
    """Print ``message`` (a warning's text) on stderr as ``dmdidc identify: warning: ...``, in
    the terms of the command's flags (``args.prog`` and ``args.flags``, set by
    :func:`simulations.cli.main`)."""
    print(f"{getattr(args, 'prog', 'dmdidc')}: warning: {for_command(message, args)}",
          file=sys.stderr)
