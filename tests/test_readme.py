"""The README's Python examples and command lines run as written (so the README stays true)."""

import re
import shlex
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
#: Command lines of the README's bash blocks that the tests run (the others, e.g. the privacy
#: comparison, take minutes).
RUN_COMMANDS = ("identify", "simulate")


def _blocks(language: str = "python") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def _commands() -> list[list[str]]:
    lines = [shlex.split(line, comments=True) for block in _blocks("bash")
             for line in block.replace("\\\n", " ").splitlines()]   # join continued lines
    return [words[1:] for words in lines
            if len(words) > 1 and words[0] == "dmdidc" and words[1] in RUN_COMMANDS]


def test_readme_has_examples():
    assert len(_blocks()) >= 3
    assert {words[0] for words in _commands()} == set(RUN_COMMANDS)


@pytest.fixture(scope="module")
def readme_dir(tmp_path_factory):
    """A folder in which every Python block of the README has run, in order."""
    folder = tmp_path_factory.mktemp("readme")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)              # the examples write model.json, data files
        namespace: dict = {}
        for block in _blocks():          # later blocks use names from earlier ones
            exec(compile(block, str(README), "exec"), namespace)
    return folder


@pytest.mark.slow
def test_readme_examples_run(readme_dir):
    for name in ("model.json", "true.json", "data.npz", "x.csv", "u.csv"):
        assert (readme_dir / name).exists(), name


@pytest.mark.slow
def test_readme_commands_run(readme_dir, monkeypatch):
    from simulations.cli import main
    monkeypatch.chdir(readme_dir)
    for argv in _commands():
        assert main(argv) == 0, argv
