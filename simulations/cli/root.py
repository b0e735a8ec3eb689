"""The root of the ``dmdidc`` command line: ``demo``, ``identify``, ``simulate``, ``privacy``,
``federated``, ``smartgrid``.

Each command or command group lives in its own module of :mod:`simulations.cli` and registers
its parser on the root's ``add_subparsers`` object; shared helpers are in
:mod:`simulations.cli.common` (the groups never import this module).  Parsing and ``--help``
import no heavy package (cvxpy, matplotlib, scipy.stats): each handler imports what it needs.
Every option either takes effect or is refused with a one-line error (exit code 2); outputs
are written atomically (:mod:`simulations.cli.atomic`: a failing run changes no file), and
output files that already existed are listed on stderr after being overwritten.  Errors and
warnings name the command's flags where the library names a Python option
(:mod:`simulations.cli.terms`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from simulations.cli.common import _Parser
from simulations.cli.demo import add_demo_parser
from simulations.cli.federated import add_federated_parser
from simulations.cli.federated_identification import add_identify_action
from simulations.cli.flower import add_serve_action
from simulations.cli.follow import add_follow_arguments
from simulations.cli.identify import add_identify_parser
from simulations.cli.privacy import add_privacy_parser
from simulations.cli.seed_fl import add_seed_fl_actions
from simulations.cli.simulate import add_simulate_parser
from simulations.cli.smartgrid import add_smartgrid_parser
from simulations.cli.terms import StatedError, command_flags, command_parser, in_cli_terms

__all__ = ["main", "build_parser"]


class _VersionAction(argparse.Action):
    """``--version``: imports the package only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from dmdidc import __version__

        print(f"{parser.prog} {__version__}")
        parser.exit()



#: Default of every option in the second parse of :func:`_given`: an option still holding it
#: was not given.
_NOT_GIVEN = object()
#: Actions that build on their default (``append``, ``count``): a sentinel default breaks them.
_ACCUMULATING = (argparse._AppendAction, argparse._CountAction, argparse._ExtendAction)


def _given(parser: argparse.ArgumentParser, command: argparse.ArgumentParser,
           argv: list[str]) -> frozenset[str]:
    """The destinations of the options the user gave (also when given at their default value):
    ``argv`` parsed again with a sentinel default for every option of ``command``.  The
    commands refuse a given option that would not act (``--alpha 1.5`` without sas), which a
    comparison with the default cannot tell from an option left out."""
    swapped = [(action, action.default) for action in command._actions
               if action.option_strings and not isinstance(action, _ACCUMULATING)
               and action.default is not argparse.SUPPRESS]
    try:
        for action, _ in swapped:
            action.default = _NOT_GIVEN
        again = vars(parser.parse_args(argv))
    finally:
        for action, default in swapped:
            action.default = default
    return frozenset(action.dest for action, _ in swapped
                     if again.get(action.dest, _NOT_GIVEN) is not _NOT_GIVEN)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dmdidc`` command."""
    parser = _Parser(
        prog="dmdidc",
        description="Identify linear plants with fractional input delay (DMDidc), control them "
                    "and study privacy mechanisms.")
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)   # subparsers are _Parser too
    add_demo_parser(sub)
    add_follow_arguments(add_identify_parser(sub))    # identify --follow: live data
    add_simulate_parser(sub)
    add_privacy_parser(sub)                  # epsilon, calibrate, compare, figures, dpsgd, ...
    actions = add_federated_parser(sub)      # experiment (Ch. 8)
    add_seed_fl_actions(actions)             # esn-attack, sifl
    add_serve_action(actions)                # serve: real Flower processes
    add_identify_action(actions)             # identify: federated DMDidc (statistics)
    add_smartgrid_parser(sub)                # smartgrid run, sweep, report, attacks, extract
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dmdidc`` console script; returns the exit code (2 on bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from _toolbox.errors import ToolboxError  # after parsing: --help stays light

    # the library names the Python option that cures a message: the command states its flag
    command = command_parser(parser, args)
    args.prog, args.flags = command.prog, command_flags(command)
    args.given = _given(parser, command, sys.argv[1:] if argv is None else list(argv))

    existing: dict[Path, tuple[int, int, int]] = {}
    try:
        existing = _existing_outputs(getattr(args, "out", None))
        return int(args.handler(args) or 0)
    except (ToolboxError, ValueError, OSError) as exc:
        text = str(exc) if isinstance(exc, StatedError) else in_cli_terms(str(exc), args.flags)
        print(f"{args.prog}: error: {text}", file=sys.stderr)
        return 2
    finally:
        overwritten = [path for path, stamp in existing.items()
                       if path.is_file() and _stamp(path) != stamp]
        if overwritten:
            print(f"{args.prog}: note: overwrote "
                  f"{', '.join(str(path) for path in overwritten)}", file=sys.stderr)



def _existing_outputs(out: str | None) -> dict[Path, tuple[int, int, int]]:
    """The files ``--out`` (a file, or a folder's files) holds before a command runs."""
    if out is None:
        return {}
    path = Path(out)
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    return {file: _stamp(file) for file in files if file.is_file()}


def _stamp(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns, stat.st_size

