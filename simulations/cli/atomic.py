"""Atomic output files: every file a command writes appears whole or not at all.

A command writes into a staging folder next to its destination (same filesystem, so
``os.replace`` is an atomic rename); only when the whole command succeeded are the files moved
into place.  A failing run therefore never leaves partial files, and never replaces the good
files of an earlier run.  Every writer of :mod:`simulations.cli` goes through
:func:`staged_folder` (a folder of outputs) or :func:`staged_file` (one output file).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["staged_folder", "staged_file", "written_files"]


@contextmanager
def staged_folder(out: str | Path) -> Iterator[Path]:
    """A fresh folder to write the outputs of ``out`` into, moved there on success.

    On leaving the block without an exception, every file of the staging folder (and of its
    sub-folders) replaces the file of the same name in ``out`` (created if missing); files of
    ``out`` that the run did not write are kept.  On an exception the staging folder is deleted
    and ``out`` is untouched.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()) / "run"
    >>> with staged_folder(out) as stage:
    ...     _ = (stage / "summary.json").write_text("{}")
    >>> sorted(p.name for p in out.iterdir())
    ['summary.json']
    >>> try:
    ...     with staged_folder(out) as stage:
    ...         _ = (stage / "summary.json").write_text("{partial")
    ...         raise ValueError("the run failed")
    ... except ValueError:
    ...     pass
    >>> (out / "summary.json").read_text()
    '{}'
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        yield stage
        out.mkdir(parents=True, exist_ok=True)
        for source in sorted(stage.rglob("*")):
            target = out / source.relative_to(stage)
            if source.is_dir():
                target.mkdir(exist_ok=True)
            else:
                os.replace(source, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


@contextmanager
def staged_file(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, so writers that choose the format by the
    suffix still do) that replaces ``path`` on success and is deleted on an exception.

    Examples
    --------
    >>> import tempfile
    >>> target = Path(tempfile.mkdtemp()) / "model.json"
    >>> with staged_file(target) as temporary:
    ...     _ = temporary.write_text("{}")
    >>> target.read_text(), temporary.exists()
    ('{}', False)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".partial{path.suffix}",
                                    dir=path.parent)
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        os.chmod(temporary, _mode(path))       # mkstemp made it private (0600)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _mode(path: Path) -> int:
    """The permissions ``path`` keeps when replaced: its own, or those ``open`` would give a new
    file (0666 less the umask)."""
    if path.exists():
        return stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0)                        # reading the umask means setting it
    os.umask(umask)
    return 0o666 & ~umask


def written_files(stage: Path) -> list[str]:
    """The files a run wrote into its staging folder (:func:`staged_folder`), relative and
    sorted: what a command's ``wrote ...`` line lists, rather than a fixed list that may name a
    file the run did not write or leave out one it did.

    Examples
    --------
    >>> import tempfile
    >>> stage = Path(tempfile.mkdtemp())
    >>> _ = (stage / "summary.json").write_text("{}")
    >>> written_files(stage)
    ['summary.json']
    """
    return sorted(str(p.relative_to(stage)) for p in Path(stage).rglob("*") if p.is_file())
