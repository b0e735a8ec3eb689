"""The README's Python examples run as written (so the README stays true)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(_blocks()) >= 3


@pytest.mark.slow
def test_readme_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)          # the examples write model.json
    namespace: dict = {}
    for block in _blocks():              # later blocks use names from earlier ones
        exec(compile(block, str(README), "exec"), namespace)
    assert (tmp_path / "model.json").exists()
