"""Nothing the harness writes follows a link it did not make, and no reader of a run folder follows one out of it.

Each case plants a symbolic link where the harness writes (a lock, a log, a transcript, the history and its
side files, a whole-file write) pointing at a file the test owns, lets the harness at it, and checks the file
with hashlib afterwards: unchanged. The refusals are one line naming the link, exit 2 from the command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hil.base import atomic
from hil.base.no_follow import LinkRefused
from hil.firmware.runtime_image import Locked
from hil.firmware.toolchain import run_logged
from hil.probe.lock import ProbeLock
from hil.regress.history import connect
from hil.run.folder import RunFolderLock
from hil.target.process import ManagedProcess
from hil.target.serial_reader import SerialReader
from test_inspect_cmd import run_folder  # noqa: F401  (a real run folder with its manifest)

REPO = Path(__file__).resolve().parents[2]
OWNED = b"a file the test owns, which no harness write may reach\n" * 4


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    owned = tmp_path / "elsewhere" / "owned.txt"
    owned.parent.mkdir()
    owned.write_bytes(OWNED)
    return owned


def _plant(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


def _untouched(victim: Path) -> bool:
    return hashlib.sha256(victim.read_bytes()).hexdigest() == hashlib.sha256(OWNED).hexdigest()


def _refused(info: pytest.ExceptionInfo[LinkRefused], link: Path, victim: Path) -> None:
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{link} is a symbolic link (to {victim})"), message


def test_the_run_folders_lock(tmp_path: Path, victim: Path) -> None:
    link = _plant(tmp_path / "run" / ".hil-run.lock", victim)
    with pytest.raises(LinkRefused) as info:
        RunFolderLock(tmp_path / "run").acquire()
    _refused(info, link, victim)
    assert _untouched(victim)


def test_the_probes_lock(tmp_path: Path, victim: Path) -> None:
    lock = ProbeLock("0123ABCD", directory=tmp_path / "locks", timeout=1)
    link = _plant(lock.path, victim)
    with pytest.raises(LinkRefused) as info:
        lock.acquire()
    _refused(info, link, victim)
    assert _untouched(victim)


def test_the_runtime_caches_lock(tmp_path: Path, victim: Path) -> None:
    link = _plant(tmp_path / "runtime" / ".lock", victim)
    with pytest.raises(LinkRefused) as info:
        with Locked(tmp_path / "runtime", "a test's runtime"):
            pass
    _refused(info, link, victim)
    assert _untouched(victim)


@pytest.mark.parametrize("name", ["history.db", "history.db-wal", "history.db-shm", "history.db.lock"])
def test_the_history_and_its_side_files(tmp_path: Path, victim: Path, name: str) -> None:
    link = _plant(tmp_path / name, victim)
    with pytest.raises(LinkRefused) as info:
        connect(tmp_path / "history.db").close()
    _refused(info, link, victim)
    assert _untouched(victim)


def test_a_process_log_a_console_log_and_a_build_log(tmp_path: Path, victim: Path) -> None:
    log = _plant(tmp_path / "qemu.log", victim)
    with pytest.raises(LinkRefused):
        ManagedProcess(["true"], "true", log).start()
    serial = _plant(tmp_path / "serial.log", victim)
    with pytest.raises(LinkRefused):
        SerialReader("socket://127.0.0.1:9", serial).start()
    build = _plant(tmp_path / "build.log", victim)
    with pytest.raises(LinkRefused) as info:
        run_logged(["true"], cwd=tmp_path, log=build, timeout=10)
    _refused(info, build, victim)
    assert _untouched(victim)


def test_a_whole_file_write_replaces_the_link_never_its_target(tmp_path: Path, victim: Path) -> None:
    link = _plant(tmp_path / "run" / "profile.json", victim)
    atomic.write_bytes(link, b"{}")
    assert _untouched(victim) and not link.is_symlink() and link.read_bytes() == b"{}"


def _hil(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=os.environ.copy())


def test_a_run_refused_for_a_bad_option_leaves_a_lock_links_target_alone(tmp_path: Path, victim: Path) -> None:
    _plant(tmp_path / "run" / ".hil-run.lock", victim)
    done = _hil("run", "--board", "qemu", "--model", "cifar10", "--iterations", "0", "--out", tmp_path / "run")
    assert done.returncode == 2, done.stderr
    assert _untouched(victim)


def test_inspect_refuses_a_run_folders_file_that_links_out_of_it(run_folder: Path, victim: Path) -> None:  # noqa: F811
    manifest = json.loads((run_folder / "manifest.json").read_text())
    manifest["files"]["serial.log"] = {"sha256": hashlib.sha256(OWNED).hexdigest(), "size": len(OWNED)}
    (run_folder / "manifest.json").write_text(json.dumps(manifest))  # even one that lists the target's sum
    link = _plant(run_folder / "serial.log", victim)
    for extra in ((), ("--no-verify",)):
        done = _hil("inspect", run_folder, *extra)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"hil inspect: {link} is a symbolic link (to {victim}): a run folder's file that leads out of the folder is not"
            " the run's, and is not read; remove it or choose another folder"], done.stderr
    assert _untouched(victim)
