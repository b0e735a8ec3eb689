"""Helpers shared by the modules of the ``dmdidc`` command line.

The parser class that shows every option's default, the bounded-number argument types, and the
checks and conversions of output paths and JSON numbers.  Every command-group module imports
them from here, never from the root command (:mod:`simulations.cli.root`), which imports the
command groups.
"""

from __future__ import annotations

import argparse
import copy
import math
from pathlib import Path

__all__ = ["output_path", "json_number"]


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default (even without help text), unless it has none (``None``,
    ``False``) or the help text already states it."""

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None and action.option_strings and self._has_default(action):
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not self._has_default(action) or "default" in text:
            return text
        return super()._get_help_string(action)

    @staticmethod
    def _has_default(action: argparse.Action) -> bool:
        return not (action.default is None or action.default is False
                    or action.default is argparse.SUPPRESS)


class _Parser(argparse.ArgumentParser):
    """Argument parser whose help, and that of every subcommand under it, shows the defaults."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)



def _bounded(kind: type, minimum: float, *, strict: bool = False):
    """argparse type: a number of ``kind`` >= ``minimum`` (> if ``strict``)."""
    relation = ">" if strict else ">="

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or \
                (value <= minimum if strict else value < minimum):
            noun = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"must be {noun} {relation} {minimum:g}; got "
                                             f"{text!r}")
        return value

    return convert


_count = _bounded(int, 1)
_seed = _bounded(int, 0)
_scale = _bounded(float, 0.0)
_bound = _bounded(float, 0.0, strict=True)


def output_path(out: str | None, *, folder: bool) -> Path | None:
    """``--out`` as a path, refused before any work when it names the wrong kind of entry.

    Raises
    ------
    ParameterError
        A folder option naming an existing file, or a file option naming a folder.
    """
    from _toolbox.errors import ParameterError

    if out is None:
        return None
    path = Path(out)
    if folder and path.exists() and not path.is_dir():
        raise ParameterError(f"--out {out!r} is a file; it must name a folder (created if "
                             f"missing) for the output files")
    if not folder and path.is_dir():
        raise ParameterError(f"--out {out!r} is a folder; it must name a file")
    return path


def json_number(value: float) -> float | str:
    """``value``, or ``"inf"`` / ``"-inf"`` / ``"nan"``: JSON has no non-finite numbers."""
    value = float(value)
    return value if math.isfinite(value) else str(value)

