"""MkDocs hook: the examples gallery, run at build time.

Every ``docs/examples/*.py`` runs in a temporary folder of its own (``PYTHONPATH`` the
repository, one BLAS thread); its printed output and the PNG files it writes go into a generated
page ``gallery.md`` (the navigation's "Examples gallery") with its docstring and source, and the
figures become files of the site under ``gallery/<example>/``.  An example that fails, or takes
longer than :data:`TIMEOUT`, fails the build.  ``tests/test_docs.py`` runs the same scripts.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
#: Seconds an example may take (each takes 2-4 s of CPU; a loaded machine stretches that).
TIMEOUT = 180
INTRO = ("Each script below ran while this site was built: its output and its figures are "
         "those of that run. The scripts are in `docs/examples/`; run one with `python "
         "docs/examples/<name>.py` from the repository (it writes its figures to the current "
         "folder).\n")


def run_example(script: Path, folder: Path) -> tuple[str, list[Path]]:
    """Run ``script`` in ``folder``; its standard output and the PNG files it wrote."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")])))
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        raise PluginError(f"gallery: {script.name} took more than {TIMEOUT} s") from exc
    if done.returncode:
        raise PluginError(f"gallery: {script.name} failed (exit {done.returncode}):\n"
                          f"{done.stderr[-3000:]}")
    return done.stdout, sorted(folder.glob("*.png"))


def example_markdown(script: Path, output: str, figures: list[str]) -> str:
    """The gallery section of one example: title, docstring, figures, output, source."""
    source = script.read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or script.stem
    title, _, text = doc.partition("\n")
    body = source
    if tree.body and isinstance(tree.body[0], ast.Expr):      # the source without the docstring
        body = "\n".join(source.splitlines()[tree.body[0].end_lineno:]).strip("\n")
    parts = [f"## {title.strip()}\n", text.strip() + "\n"]
    parts += [f"![{Path(f).stem}]({f})\n" for f in figures]
    if output.strip():
        parts.append(f"```text\n{output.rstrip()}\n```\n")
    parts.append(f"`docs/examples/{script.name}`:\n\n```python\n{body}\n```\n")
    return "\n".join(parts)


def on_files(files, config):
    """Run the examples and add the gallery page and its figures to the site's files."""
    sections = []
    with tempfile.TemporaryDirectory() as tmp:
        for script in sorted(EXAMPLES.glob("*.py")):
            folder = Path(tmp) / script.stem
            folder.mkdir()
            output, pngs = run_example(script, folder)
            uris = [f"gallery/{script.stem}/{png.name}" for png in pngs]
            for uri, png in zip(uris, pngs, strict=True):
                files.append(File.generated(config, uri, content=png.read_bytes()))
            sections.append(example_markdown(script, output, uris))
    page = "# Examples gallery\n\n" + INTRO + "\n" + "\n".join(sections)
    files.append(File.generated(config, "gallery.md", content=page))
    return files
