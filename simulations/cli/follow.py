"""``dmdidc identify --follow FILE``: identify while a logger writes the CSV file.

The file is followed like ``tail -f`` by :func:`dmdidc.follow_csv` and fed to an
:class:`~dmdidc.OnlineDMDidc` by :func:`dmdidc.track`.  One line is printed every ``--every``
samples (samples, lost samples, each input's delay with its interval), one per detected
change and one per sample read as an outlier (down-weighted, not a change; after the first
five, one summary line per report, and a warning when outliers come faster than Gaussian
noise explains); after a change, a warning at the end says that the model rests only on the
samples since it.  The model is
written to ``--out`` at the end (``--idle-timeout`` seconds without a new line, or Ctrl-C) and
on SIGUSR1 (``kill -USR1 <pid>``): at once while waiting for data, after the update under way
otherwise, so the estimator is never saved half-updated; a request that cannot be met (too few
samples yet) is reported and the following goes on.  A Ctrl-C during an update stops after it.
"""

from __future__ import annotations

import argparse
import itertools
import math
import signal
import sys
from typing import Any

from simulations.cli.atomic import staged_file
from simulations.cli.common import MODEL_SUFFIXES, _bounded, given_options, output_path
from simulations.cli.identify import model_out, refuse_delay_at_bound, require_max_delay
from simulations.cli.terms import warn

__all__ = ["add_follow_arguments", "run_follow"]

#: Outliers printed one per line; after them one summary line per snapshot.
_OUTLIER_LINES = 5

#: Options of ``identify`` that the live fit does not take (name: default).
_BATCH_ONLY = {"outputs": None, "horizon": None, "reference": None, "residuals": None,
               "svd_rank": None, "method": "auto", "detrend": "auto", "missing": "error",
               "significance": None, "block_rtol": None, "check_level": 0.01,
               "order": None, "max_order": None, "feedthrough": False}
#: The live options (name: default).
_FOLLOW_ONLY = {"every": 500, "idle_timeout": None, "poll": 0.2, "forgetting": None,
                "window": None, "bad_lines": "error"}


def add_follow_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--follow`` and its options to the ``dmdidc identify`` parser: its handler then
    follows the file when ``--follow`` is given, and refuses the live options otherwise."""
    batch = parser.get_default("handler")

    def handler(args: argparse.Namespace) -> int:
        if args.follow is not None:
            return run_follow(args)
        refuse_follow_options(args)
        return batch(args)

    parser.set_defaults(handler=handler)
    group = parser.add_argument_group("live data (--follow)")
    group.add_argument("--follow", metavar="CSV",
                       help="follow this CSV table while it is written (like tail -f; columns "
                            "by --inputs, --states, --time): print the delay every --every "
                            "samples and each detected change, write the model to --out at "
                            "the end (--idle-timeout or Ctrl-C) and on SIGUSR1")
    group.add_argument("--every", type=_bounded(int, 1), default=_FOLLOW_ONLY["every"],
                       metavar="N",
                       help="samples between printed lines")
    group.add_argument("--idle-timeout", type=_bounded(float, 0, strict=True), metavar="S",
                       help="stop after S seconds without a new line (default: follow until "
                            "Ctrl-C)")
    group.add_argument("--poll", type=_bounded(float, 0, strict=True), default=_FOLLOW_ONLY["poll"],
                       metavar="S", help="seconds between looks at a file without new lines")
    group.add_argument("--forgetting", type=float, metavar="LAMBDA",
                       help="forgetting factor in (0, 1] (memory about 1/(1 - lambda) samples)")
    group.add_argument("--window", type=_bounded(int, 1), metavar="W",
                       help="keep exactly the last W samples instead (not with --forgetting)")
    group.add_argument("--bad-lines", choices=("error", "lost"), default="error",
                       help="a malformed line (a duplicated row too) stops with its line "
                            "number, or is reported and passed over: one lost sample without "
                            "a time column; with one the time stamps place the rows around it")


def run_follow(args: argparse.Namespace) -> int:
    """The ``--follow`` handler of ``dmdidc identify``."""
    from _toolbox.errors import ParameterError
    from dmdidc import OnlineDMDidc, follow_csv, track

    _refuse_batch_options(args)
    args.out = model_out(args)
    output_path(args.out, folder=False, suffixes=MODEL_SUFFIXES)
    source = iter(follow_csv(
        args.follow, inputs=_specs(args.inputs, "--inputs"),
        states=None if args.states is None else _specs(args.states, "--states"),
        time=_time_spec(args.time), dt=args.dt, poll=args.poll,
        idle_timeout=args.idle_timeout, bad_lines=args.bad_lines, report=_note,
        chunk=args.every, first_column=1,         # a backlog is read in update periods
        time_tolerance=args.time_tolerance))
    guard = _Guard(args.out)
    guard.source = args.follow
    with guard:
        try:
            first = next(source, None)
        except KeyboardInterrupt:
            first = None
        if first is None:
            raise ParameterError(f"{args.follow}: no complete sample before the end; no model "
                                 f"written")
        dt = args.dt if args.dt is not None else first.dt
        if dt is None:
            raise ParameterError(f"{args.follow} has no time column: give --dt, the sampling "
                                 f"period T in seconds")
        live = OnlineDMDidc(max_delay=args.max_delay, dt=dt, forgetting=args.forgetting,
                            window=args.window,
                            estimator="iv" if args.estimator == "auto" else args.estimator)
        guard.live, guard.signals, names = live, first, first.input_names
        print(f"following {args.follow}: states {', '.join(first.state_names)}; inputs "
              f"{', '.join(names)}; T = {dt:g} s; a line every {args.every} samples", flush=True)
        snapshot, shown = None, {"outliers": 0, "rate": False}
        try:
            for snapshot in track(guard.chunks(first, source), live,
                                  every=args.every, level=args.level):
                for line in _lines(snapshot, names, args.level, len(first.state_names),
                                   shown):
                    print(line, flush=True)
        except KeyboardInterrupt:
            print("interrupted (Ctrl-C)")
        except ValueError:
            # the file went wrong mid-stream (a malformed line, a clock step): the model of
            # the samples before it is still the data's, and hours of following are not
            # thrown away with it; written only between updates (the estimator whole)
            if not guard.busy and getattr(live, "samples_seen_", 0):
                try:
                    _write(live, args.out, "before the error below", first, args.follow)
                except (ValueError, OSError) as exc:
                    _note(str(exc))
            raise
    _write(live, args.out, "at the end", first, args.follow)
    for warning in () if snapshot is None else snapshot.warnings:
        warn(warning, args)
    return 0


class _Guard:
    """Ctrl-C and SIGUSR1 while following: a Ctrl-C during an update (or a fit) stops after
    it, one while waiting for data stops at once; SIGUSR1 asks for the model, which is written
    between updates."""

    def __init__(self, out: str) -> None:
        self.busy = self.stop = self.requested = False
        self.out, self.live, self.signals, self.source = out, None, None, None
        self._saved: dict = {}

    def __enter__(self) -> _Guard:
        for name, handler in (("SIGINT", self._interrupt), ("SIGUSR1", self._request)):
            number = getattr(signal, name, None)
            if number is not None:
                try:
                    self._saved[number] = signal.signal(number, handler)
                except ValueError:               # not the main thread: the defaults stay
                    pass
        return self

    def __exit__(self, *exc: Any) -> None:
        for number, handler in self._saved.items():
            signal.signal(number, handler)

    def _interrupt(self, signum: int, frame: Any) -> None:
        if not self.busy:
            raise KeyboardInterrupt
        self.stop = True

    def _request(self, signum: int, frame: Any) -> None:
        if self.busy:
            self.requested = True
        else:                                    # between updates: the estimator is whole
            self._write_requested()

    def _write_requested(self) -> None:
        from _toolbox.errors import ToolboxError

        self.requested = False
        if self.live is None or not getattr(self.live, "samples_seen_", 0):  # (unfed: none)
            _note("no model written on request (SIGUSR1): no sample received yet")
            return
        try:
            _write(self.live, self.out, "on request (SIGUSR1)", self.signals, self.source)
        except (ToolboxError, ValueError, OSError) as exc:     # the following goes on
            _note(str(exc))

    def chunks(self, first, source):
        """The chunks, marked busy while the estimator holds one."""
        for chunk in itertools.chain([first], source):
            self.busy = True
            yield chunk
            self.busy = False
            if self.requested:                   # asked during the update (from now on the
                self._write_requested()          # handler writes at once)
            if self.stop:
                print("interrupted (Ctrl-C)")
                return


def _write(live, out: str, when: str, signals=None, source=None) -> None:
    """Save the current model (refused, as by ``identify``, with the delay at the bound), with
    the names and units of the header of ``signals`` (a :class:`~dmdidc.follow.Chunk`)."""
    import warnings

    from _toolbox.errors import ParameterError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = live.model_
            refuse_delay_at_bound(live.estimator_, "--max-delay")
        except ValueError as exc:
            raise ParameterError(f"no model written {when} ({live.samples_seen_} samples): "
                                 f"{exc}") from exc
    if signals is not None:
        model = model.with_info(model.signal_info.renamed(
            state_names=signals.state_names, input_names=signals.input_names,
            state_units=signals.state_units, input_units=signals.input_units))
    # the live fit has no IdData: its provenance says what the stream did instead (changes,
    # outliers, the samples the model rests on)
    provenance = dict(model.signal_info.provenance or {})
    provenance["live"] = live.history()
    if source is not None and provenance.get("data") is None:
        provenance["data"] = {"source": str(source), "followed": True}
    model = model.with_info(model.signal_info.renamed(provenance=provenance))
    with staged_file(out) as staged:
        model.save(staged)
    print(f"wrote {out} {when} ({live.samples_seen_} samples)", flush=True)


def _lines(snapshot, names: tuple[str, ...], level: float, n_states: int,
           shown: dict | None = None) -> list[str]:
    """The lines of one snapshot; ``shown`` counts the outliers printed one per line (after
    :data:`_OUTLIER_LINES`, one summary line per snapshot: heavy-tailed noise named ~1 % of
    the rows, a line each) and whether the outlier rate warning was printed."""
    shown = {"outliers": 0, "rate": False} if shown is None else shown
    room = max(_OUTLIER_LINES - shown["outliers"], 0)
    lines = [f"outlier at sample {o.sample} (residual q = {o.score:.3g}, where a sample that "
             f"fits has about {n_states}): down-weighted to {o.weight:.2g}, not read as a change"
             for o in snapshot.outliers[:room]]
    rest = snapshot.outliers[room:]
    if rest:
        lines.append(f"{len(rest)} more outliers (samples {rest[0].sample} to "
                     f"{rest[-1].sample}), down-weighted, not read as changes")
    shown["outliers"] += len(snapshot.outliers)
    rate = [w for w in snapshot.warnings if w.startswith("outlier rate check")]
    if rate and not shown["rate"]:
        shown["rate"] = True
        lines.append(f"warning: {rate[0]}")
    for event in snapshot.events:
        before = "" if event.old_delay is None else ": delay was " + ", ".join(
            f"{name} {d:.4g} s" for name, d in zip(names, event.old_delay, strict=True))
        lines.append(f"change detected at sample {event.sample} (onset {event.onset}, evidence "
                     f"{event.statistic:.3g}){before}; relearning")
    head = f"samples {snapshot.samples} (lost {snapshot.dropped})"
    if snapshot.delay is None:
        return lines + [f"{head}: no delay yet ({snapshot.note})"]
    delays = "; ".join(_delay_text(name, d, lo, hi) for name, d, lo, hi in zip(
        names, snapshot.delay, snapshot.low, snapshot.high, strict=True))
    return lines + [f"{head}: delay {delays} ({level:.0%} intervals)"]


def _delay_text(name: str, delay: float, low: float, high: float) -> str:
    """One input's delay with its interval, as every interval is printed, always with its
    ends: ``+/-`` for one input and ends for the next on the same line read as two kinds."""
    from _toolbox.formatting import interval_text

    if not math.isfinite(delay):     # the data do not determine it yet (delay_status_)
        return f"{name} undetermined"
    return f"{name} {interval_text(delay, low, high, unit='s', symmetric=False)}"


def _note(message: str) -> None:
    print(f"dmdidc identify --follow: {message}", file=sys.stderr, flush=True)


def _specs(text: str | None, option: str) -> list:
    """Comma-separated header names or 1-based column numbers (a header name is never a
    number) as :func:`dmdidc.follow_csv` takes them with ``first_column=1`` (its messages
    then number as the command line does)."""
    from _toolbox.errors import ParameterError

    if text is None:
        raise ParameterError(f"--follow needs {option} COLUMNS (header names or 1-based "
                             f"numbers, comma separated)")
    if option == "--inputs" and text.strip() == "none":
        # (identify's record without inputs; read here as a column named 'none' before)
        raise ParameterError("--follow needs input columns: the live fit identifies the "
                             "inputs' delays; a record without inputs (plain DMD): identify "
                             "the file without --follow, 'dmdidc identify FILE --inputs none'")
    return [int(part) if part.strip().isdigit() else part.strip()
            for part in text.split(",")]


def _time_spec(text: str | None):
    if text is None:
        return "auto"                        # a column named time, t or timestamp
    if text == "none":
        return None
    if text == "ignore":
        return "ignore"                      # the column found is left out; --dt is required
    return _specs(text, "--time")[0]


def _refuse_batch_options(args: argparse.Namespace) -> None:
    from _toolbox.errors import ParameterError

    given = (["the data file"] if args.data else []) + given_options(
        args, _BATCH_ONLY)
    if given:
        raise ParameterError(f"--follow (live identification, OnlineDMDidc) does not take "
                             f"{', '.join(given)}: they configure the batch fit")
    require_max_delay(args, "--follow")
    if args.max_delay is None:
        raise ParameterError("--follow needs an integer --max-delay (the bound is not chosen "
                             "automatically on a live stream)")
    if args.estimator not in ("auto", "iv", "ls"):
        raise ParameterError(f"--follow takes --estimator auto (iv), iv or ls; got "
                             f"{args.estimator}")


def refuse_follow_options(args: argparse.Namespace) -> None:
    """The live options without ``--follow`` are refused (they would do nothing)."""
    from _toolbox.errors import ParameterError

    given = given_options(args, _FOLLOW_ONLY)
    if given:
        verb = "configures" if len(given) == 1 else "configure"
        raise ParameterError(f"{', '.join(given)} {verb} live identification: give "
                             f"--follow FILE")
