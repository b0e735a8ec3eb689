"""The layer contract of pyproject.toml's [tool.importlinter] holds: simulations > controllers >
dmdidc > privacy > _toolbox, the neutral base imports none of ours, dmdidc and simulations keep
their inner layers, old module paths are not used inside, and no import cycle exists between
modules or packages (lazy imports inside functions count too)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    code = ("import sys\n"
            "from importlinter.cli import lint_imports\n"
            "sys.exit(lint_imports(no_cache=True, no_logo=True))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout, done.stdout
