"""Atomic outputs (issue 20 item 3): all files of a run appear together, or none does."""

import pytest

from simulations.cli.atomic import staged_file, staged_folder


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_a_good_run_replaces_its_files_and_keeps_the_others(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "old.txt").write_text("kept")
    (out / "summary.json").write_text("old")
    with staged_folder(out) as stage:
        (stage / "summary.json").write_text("new")
        (stage / "figures").mkdir()
        (stage / "figures" / "a.png").write_bytes(b"\x89PNG")
        assert not (out / "figures").exists()            # nothing visible before the end
    assert (out / "summary.json").read_text() == "new"
    assert (out / "old.txt").read_text() == "kept"
    assert (out / "figures" / "a.png").read_bytes() == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


@pytest.mark.parametrize("error", [ValueError, OSError, KeyboardInterrupt])
def test_a_failing_run_changes_nothing(tmp_path, error):
    out = tmp_path / "run"
    with staged_folder(out) as stage:
        (stage / "summary.json").write_text("good")
    before = snapshot(out)
    with pytest.raises(error):
        with staged_folder(out) as stage:
            (stage / "summary.json").write_text("partial")
            (stage / "trajectory.csv").write_text("half a tab")
            raise error("the run failed")
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]     # no staging left


def test_a_missing_destination_is_created_only_on_success(tmp_path):
    out = tmp_path / "deep" / "run"
    with pytest.raises(ValueError):
        with staged_folder(out):
            raise ValueError
    assert not out.exists()
    with staged_folder(out) as stage:
        (stage / "a").write_text("1")
    assert (out / "a").read_text() == "1"


@pytest.mark.parametrize("suffix", [".json", ".npz", ".png"])
def test_a_staged_file_keeps_the_suffix_and_replaces_on_success_only(tmp_path, suffix):
    target = tmp_path / f"model{suffix}"
    with staged_file(target) as temporary:
        assert temporary.suffix == suffix and temporary.parent == tmp_path
        temporary.write_text("good")
    with pytest.raises(RuntimeError):
        with staged_file(target) as temporary:
            temporary.write_text("bad")
            raise RuntimeError
    assert target.read_text() == "good"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_staged_file_gets_the_permissions_of_a_plainly_written_file(tmp_path):
    """The temporary file is private (mkstemp: 0600); the model a user shares must not be."""
    import os
    import stat

    plain = tmp_path / "plain.json"
    plain.write_text("{}")                                  # the umask's default mode
    staged = tmp_path / "model.json"
    with staged_file(staged) as temporary:
        temporary.write_text("{}")
    assert stat.S_IMODE(staged.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)
    os.chmod(staged, 0o640)                                 # a mode the user chose is kept
    with staged_file(staged) as temporary:
        temporary.write_text("{}")
    assert stat.S_IMODE(staged.stat().st_mode) == 0o640
