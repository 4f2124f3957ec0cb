"""Artifacts isolated: one folder per test id, never outside the root; one run per run folder; the
manifest describes the run's own files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hil.base.errors import InputError
from hil.records.manifest import write_manifest
from hil.plugin.hooks import MAX_FOLDER_NAME, _folder_name, artifacts_subfolder
from hil.run.folder import LOCK_NAME, RunFolderBusy, RunFolderLock

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("first", "second"), [
    ("tests/x.py::test[a/b]", "tests/x.py::test[a b]"),   # both sanitise to tests_x.py_test_a_b_
    ("t::" + "x" * 200 + "1", "t::" + "x" * 200 + "2"),    # differ only after the cut
    ("a_b", "a/b"),                                        # a clean name and one that sanitises to it
])
def test_distinct_test_ids_get_distinct_folders(first: str, second: str) -> None:
    assert _folder_name(first) != _folder_name(second)
    for name in (_folder_name(first), _folder_name(second)):
        assert "/" not in name and name not in ("", ".", "..") and len(name) <= MAX_FOLDER_NAME + 11


def test_a_clean_name_stays_as_it_is_and_every_name_is_stable() -> None:
    assert _folder_name("cifar10") == "cifar10"
    assert _folder_name("tests/x.py::test[a/b]") == _folder_name("tests/x.py::test[a/b]")
    for escape in ("..", "../../etc", "."):
        name = _folder_name(escape)
        assert name not in (".", "..") and "/" not in name and (Path("/root") / name).parent == Path("/root")


@pytest.mark.parametrize("subdir", ["..", "../escape", "a/../../b", "/tmp/abs", "", "a/.."])
def test_a_subdir_that_leaves_the_folder_is_refused(tmp_path: Path, subdir: str) -> None:
    with pytest.raises(InputError, match="subdir"):
        artifacts_subfolder(tmp_path, subdir)


def test_a_subdir_through_a_symlink_out_is_refused(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert artifacts_subfolder(tmp_path / "root", "a/b") == tmp_path / "root" / "a" / "b"
    with pytest.raises(InputError, match="leads outside"):
        artifacts_subfolder(tmp_path / "root", "link/run")


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from hil.run.folder import RunFolderLock
    with RunFolderLock(Path(sys.argv[1])):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


def hold(folder: Path, seconds: float) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(seconds)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_run_into_a_locked_folder_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    holder = hold(tmp_path, 60)
    try:
        start = time.monotonic()
        with pytest.raises(RunFolderBusy) as info:
            RunFolderLock(tmp_path).acquire()
        assert time.monotonic() - start < 5
        assert f"in use by pid {holder.pid}" in str(info.value) and "--wait" in str(info.value)
        assert "\n" not in str(info.value)
    finally:
        holder.kill()
        holder.wait()
    RunFolderLock(tmp_path).acquire().release()  # the kernel released the killed holder's lock


def test_wait_takes_the_folder_when_the_holder_is_done(tmp_path: Path) -> None:
    holder = hold(tmp_path, 1.5)
    said: list[str] = []
    with RunFolderLock(tmp_path, wait=True, report=said.append):
        assert said and f"pid {holder.pid}" in said[0]  # it waited, naming whom for
        assert holder.wait(timeout=30) == 0  # and got the folder once the holder had let go
    assert (tmp_path / LOCK_NAME).read_text() == ""  # released: nobody named as holder


def test_the_manifest_hashes_the_named_files_only(tmp_path: Path) -> None:
    (tmp_path / "serial.log").write_text("console\n")
    (tmp_path / "unrelated.bin").write_bytes(b"\0" * 4096)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "serial.log").write_text("another run's\n")
    manifest = write_manifest(tmp_path, {"status": "passed"}, ["serial.log", "profile.json"])
    assert set(manifest["files"]) == {"serial.log"}
    # sha256 of b"console\n", computed independently: `printf 'console\n' | sha256sum`
    import hashlib

    assert manifest["files"]["serial.log"] == {"sha256": hashlib.sha256(b"console\n").hexdigest(), "size": 8}
