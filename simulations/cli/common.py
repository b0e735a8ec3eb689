"""Helpers shared by the modules of the ``dmdidc`` command line.

The parser class that shows every option's default, the bounded-number argument types, the
checks and conversions of output paths and JSON numbers, and the human-readable table written
beside every JSON summary.  Every command-group module imports
them from here, never from the root command (:mod:`simulations.cli.root`), which imports the
command groups.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["output_path", "given_options", "was_given", "refuse_unused", "json_number",
           "lower_bounds", "upper_bounds",
           "positive_vector", "per_channel", "summary_table", "write_summary", "write_table",
           "strict_json", "known", "seed_warning", "refuse_delta_without_effect",
           "check_unit_window",
           "progress_bar", "show_progress",
           "elapsed_status", "LONG_FIT_SAMPLES",
           "MODEL_SUFFIXES", "FIGURE_SUFFIXES"]


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


def finite_vector(text: str) -> list[float]:
    """argparse type: one finite number (either sign), or several separated by commas."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"must be a finite number or comma-separated finite "
                                         f"numbers; got {text!r}")
    return values


def upper_bounds(text: str) -> list[float]:
    """argparse type: upper bounds, each a finite number or ``inf`` (no bound on that channel,
    as :class:`~controllers.DelayedMPC` takes it), separated by commas."""
    return _bounds(text, math.inf)


def lower_bounds(text: str) -> list[float]:
    """argparse type: lower bounds, each a finite number or ``-inf`` (no bound on that
    channel), separated by commas."""
    return _bounds(text, -math.inf)


def _bounds(text: str, free: float) -> list[float]:
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) or v == free for v in values):
        raise argparse.ArgumentTypeError(f"must be a finite number or comma-separated ones, "
                                         f"{free:g} for a channel without this bound; got "
                                         f"{text!r}")
    return values


def positive_vector(text: str) -> list[float]:
    """argparse type: one finite number > 0, or several separated by commas."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"must be a number > 0 or comma-separated numbers > 0; "
                                         f"got {text!r}")
    return values


def per_channel(option: str, values: list[float], size: int, noun: str) -> Any:
    """``values`` of ``option`` as one scalar, or one value per channel (an array of ``size``).

    Raises
    ------
    DimensionError
        For a count other than 1 or ``size``, naming the option.
    """
    import numpy as np

    from _toolbox.errors import DimensionError

    if len(values) == 1:
        return values[0]
    if len(values) != size:
        raise DimensionError(f"{option} has {len(values)} values; give one, or {size} (one per "
                             f"{noun})")
    return np.array(values, dtype=float)


def refuse_delta_without_effect(mechanism: str, delta: float | None) -> None:
    """Refuse ``--delta`` with ``--mechanism laplace``, for every command that releases.

    Laplace noise is calibrated for pure epsilon-DP whatever delta is; a delta would only
    weaken the printed claim to ``(epsilon', delta)`` with the same noise (``privacy identify``
    printed (1, 1e-5) for the noise of (1, 0)), so the flag would take no effect.

    Raises
    ------
    ParameterError
        ``delta`` given with ``mechanism == "laplace"``.
    """
    from _toolbox.errors import ParameterError

    if delta is not None and mechanism == "laplace":
        raise ParameterError(f"--delta applies to --mechanism gaussian or sas; got --delta "
                             f"{delta} with --mechanism laplace (pure epsilon-DP: its noise "
                             f"does not depend on delta); leave --delta out")


def check_unit_window(unit: str, window: int | None) -> None:
    """``--window`` exactly with ``--unit window``, for every command that releases with a
    privacy unit (checked before the data are read).

    Raises
    ------
    ParameterError
        ``--window`` with another unit, or ``--unit window`` without ``--window``.
    """
    from _toolbox.errors import ParameterError

    if window is not None and unit != "window":
        raise ParameterError("--window needs --unit window")
    if unit == "window" and window is None:
        raise ParameterError("--unit window needs --window STEPS (the time steps one window "
                             "protects)")


def refuse_interpolation(args: argparse.Namespace) -> None:
    """Refuse ``--missing interpolate`` for a command that releases the data privately.

    One real reading sets every interpolated value of the gaps beside it, so replacing it
    changes the whole gap (a 40-sample gap: 41 time steps, the released vector moved 4.6 times
    the declared per-sample sensitivity, epsilon 5.5 where 1 was printed).

    Raises
    ------
    ParameterError
        With ``--missing interpolate``, naming ``--missing drop`` as the remedy.
    """
    from _toolbox.errors import ParameterError

    if getattr(args, "missing", None) == "interpolate":
        raise ParameterError(
            "--missing interpolate is refused with a private release: an interpolated value "
            "depends on the real readings on both sides of its gap, so replacing one reading "
            "changes every value of the gap and the privacy guarantee per time step would not "
            "hold. Use --missing drop (the record splits into experiments at the gaps; their "
            "lengths are public)")


def show_progress() -> bool:
    """Whether progress bars belong on stderr: only on a terminal, since a pipe or a log file
    would collect every carriage-return frame. Library functions that take ``progress: bool``
    (the smart-grid studies) get this; the others get :func:`progress_bar`."""
    import sys

    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty is not None and isatty())


def progress_bar(*args: Any, **options: Any) -> Any:
    """A tqdm progress bar on stderr, shown only on a terminal (:func:`show_progress`)."""
    import sys

    from tqdm import tqdm

    return tqdm(*args, file=sys.stderr, disable=not show_progress(), **options)


#: Samples from which a fit shows its elapsed time on a terminal (a million took 12-30 s with
#: nothing on the screen).
LONG_FIT_SAMPLES = 100_000


@contextlib.contextmanager
def elapsed_status(desc: str, *, show: bool = True, every: float = 0.5) -> Iterator[None]:
    """A status line ``desc ... 12 s`` on stderr, refreshed every ``every`` seconds while the
    block runs (work whose steps cannot be counted, a fit); only on a terminal
    (:func:`show_progress`) and with ``show``; cleared when the block ends."""
    import sys
    import threading

    from tqdm import tqdm

    if not (show and show_progress()):
        yield
        return
    bar = tqdm(total=None, desc=desc, file=sys.stderr, bar_format="{desc}: {elapsed}",
               leave=False)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(every):
            bar.refresh()

    ticker = threading.Thread(target=tick, daemon=True, name="dmdidc-elapsed-status")
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        bar.close()


def _open_interval(low: float, high: float):
    """argparse type: a number strictly between ``low`` and ``high``."""
    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low < value < high:             # also refuses nan
            raise argparse.ArgumentTypeError(f"must be a number in ({low:g}, {high:g}); got "
                                             f"{text!r}")
        return value

    return convert


#: A level or probability; a SaS stability index.
_probability, _alpha = _open_interval(0.0, 1.0), _open_interval(0.0, 2.0)


def seed_warning(seed: int, noise: str, outputs: str) -> str:
    """The warning of a ``--seed`` that seeds real privacy noise: the seed removes the noise, so
    it is a secret and no output records it.

    Parameters
    ----------
    seed : int
        The ``--seed`` value.
    noise : str
        Whose noise it seeds, e.g. ``"the clients' noise"``.
    outputs : str
        The files the command writes (the message says the seed is not in them).

    Returns
    -------
    str
    """
    return (f"--seed {seed} seeds {noise}: anyone with this seed can remove the noise from the "
            f"release, so keep it secret like a key (it is not written to {outputs}); leave "
            f"--seed out for fresh randomness, as a real release needs")


_count = _bounded(int, 1)
_seed = _bounded(int, 0)
_scale = _bounded(float, 0.0)
_bound = _bounded(float, 0.0, strict=True)


# what :func:`simulations.cli.root.main` adds to the parsed options (not options themselves)
MAIN_SETS = ("handler", "flags", "prog", "given")


def option_values(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``args`` as a command records them (``settings`` of a JSON file): what
    the user chose, without what ``main`` adds (``MAIN_SETS``: the handler, the command's
    flags and name, the set of options given, which JSON cannot hold).

    Examples
    --------
    >>> import argparse
    >>> option_values(argparse.Namespace(seed=3, prog="dmdidc x", given=frozenset({"seed"})))
    {'seed': 3}
    """
    return {key: value for key, value in vars(args).items() if key not in MAIN_SETS}


def was_given(args: argparse.Namespace, name: str, default: Any) -> bool:
    """Whether the user gave option ``name``: from ``args.given`` (the options on the command
    line, set by :func:`simulations.cli.root.main`, so a default value given explicitly
    counts), else (a namespace built by hand) whether its value differs from ``default``."""
    given = getattr(args, "given", None)
    if given is not None:
        return name in given
    return getattr(args, name, default) != default


def given_options(args: argparse.Namespace, defaults: Mapping[str, Any]) -> list[str]:
    """The options of ``args`` the user gave among ``defaults`` (name: default), as
    ``--name``: those a mode refuses because they would do nothing there."""
    return ["--" + name.replace("_", "-") for name, default in defaults.items()
            if was_given(args, name, default)]


def refuse_unused(args: argparse.Namespace,
                  rules: Mapping[str, tuple[Any, bool, str]]) -> None:
    """Refuse every option of ``rules`` (name: ``(default, acts, what it needs)``) the user
    gave (:func:`was_given`: also at its default value) where it would not act, naming what
    it needs.

    Examples
    --------
    >>> args = argparse.Namespace(alpha=1.2, delta=1e-5)
    >>> refuse_unused(args, {"alpha": (1.5, False, "sas among --mechanisms"),
    ...                      "delta": (1e-5, False, "gaussian among --mechanisms")})
    Traceback (most recent call last):
    ...
    _toolbox.errors.ParameterError: --alpha 1.2 has no effect here: it needs sas among --mechanisms
    """
    from _toolbox.errors import ParameterError

    for name, (default, acts, needs) in rules.items():
        value = getattr(args, name, default)
        if was_given(args, name, default) and not acts:
            raise ParameterError(f"--{name.replace('_', '-')} {value:g} has no effect here: it "
                                 f"needs {needs}")


def refuse_without_privacy(args: argparse.Namespace, defaults: dict[str, Any]) -> None:
    """Refuse the noise and budget options given with ``--no-privacy``: without noise they
    would do nothing (``defaults``: option name -> its default)."""
    from _toolbox.errors import ParameterError

    given = given_options(args, defaults)
    if given:
        raise ParameterError(f"{', '.join(given)} {'have' if len(given) > 1 else 'has'} no "
                             f"effect with --no-privacy (no noise, no budget): leave "
                             f"{'them' if len(given) > 1 else 'it'} out, or drop --no-privacy")


#: Suffixes of the model files DelayedPlant.save writes, and of the figures matplotlib writes.
MODEL_SUFFIXES = (".json", ".npz")
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".tif", ".tiff", ".webp")


def output_path(out: str | None, *, folder: bool, suffixes: Sequence[str] = (),
                option: str = "--out") -> Path | None:
    """``--out`` (or ``option``) as a path, refused before any work when it names the wrong
    kind of entry or, with ``suffixes``, a file of another format.

    Raises
    ------
    ParameterError
        A folder option naming an existing file, a file option naming a folder, or a suffix
        outside ``suffixes``.
    """
    from _toolbox.errors import ParameterError

    if out is None:
        return None
    path = Path(out)
    # as written: the writers (DelayedPlant.save) read '.NPZ' as no format, after the fit
    if suffixes and path.suffix not in suffixes:
        raise ParameterError(f"{option} {out!r} must end in {', '.join(suffixes)} (the suffix, "
                             f"in lower case, chooses the format)")
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



def known(value: Any, show: Any, why: str | None) -> str:
    """``show(value)``, or ``n/a (why)`` for a missing or non-finite number: a console never
    prints a bare ``nan``.  ``why=""`` prints ``n/a`` alone (the reason is printed nearby);
    ``why=None`` prints nothing.

    Examples
    --------
    >>> known(0.25, "{:.2f}".format, "no model"), known(float("nan"), "{:.2f}".format, "no model")
    ('0.25', 'n/a (no model)')
    """
    if value is not None and math.isfinite(value):
        return show(value)
    if why is None:
        return ""
    return f"n/a ({why})" if why else "n/a"


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``"inf"`` / ``"-inf"`` / ``"nan"``."""
    if isinstance(value, Mapping):
        return {str(key): strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    if isinstance(value, float):
        return json_number(value)
    return value


def summary_table(summary: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table of a JSON summary: ``| key | value |`` rows for a mapping (nested keys
    joined by dots), or one row per record for a list of records.

    Examples
    --------
    >>> print(summary_table({"cost": 5.6640001, "run": {"steps": 50}}))
    | quantity | value |
    | --- | --- |
    | cost | 5.664 |
    | run.steps | 50 |
    >>> print(summary_table([{"alpha": 2.0, "scale": 1.5}, {"alpha": 1.9, "scale": None}]))
    | alpha | scale |
    | --- | --- |
    | 2 | 1.5 |
    | 1.9 | n/a |
    """
    if isinstance(summary, Mapping):
        rows = [(key, _cell(value)) for key, value in _flatten(summary)]
        return "\n".join(["| quantity | value |", "| --- | --- |"]
                         + [f"| {key} | {value} |" for key, value in rows])
    records = [dict(_flatten(record)) for record in summary]
    columns = list(dict.fromkeys(key for record in records for key in record))
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(_cell(record.get(key)) for key in columns) + " |"
              for record in records]
    return "\n".join(lines)


def write_summary(path: Path, summary: Mapping[str, Any] | Sequence[Mapping[str, Any]], *,
                  title: str) -> tuple[Path, Path]:
    """Write ``summary`` as strict JSON to ``path`` and its table, under ``title``, beside it
    (the same name with ``.md``)."""
    path = Path(path)
    path.write_text(json.dumps(strict_json(summary), indent=2))
    return path, write_table(path.with_suffix(".md"), summary, title=title)


def write_table(path: Path, summary: Mapping[str, Any] | Sequence[Mapping[str, Any]] | str, *,
                title: str) -> Path:
    """Write a Markdown page: ``title``, then the table of ``summary`` (a preformatted text
    table as is)."""
    body = f"```\n{summary}\n```" if isinstance(summary, str) else summary_table(summary)
    path = Path(path)
    path.write_text(f"# {title}\n\n{body}\n")
    return path


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    items = []
    for key, value in mapping.items():
        if isinstance(value, Mapping) and not value:
            # an empty mapping would leave no row: `missing: {}` says that nothing is missing
            items.append((f"{prefix}{key}", "none"))
        elif isinstance(value, Mapping):
            items += _flatten(value, f"{prefix}{key}.")
        else:
            items.append((f"{prefix}{key}", value))
    return items


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        shown = ", ".join(_cell(item) for item in value[:6])
        return f"[{shown}{', ...' if len(value) > 6 else ''}]"
    # a line break or a bare '|' would end the row or split the cell of a Markdown table
    return " ".join(str(value).splitlines()).replace("|", "\\|")
