"""A QEMU kept between runs of one image (hil.boards.qemu_keep): real QEMU, gdb and replay images.

Each replay image hands back the exact ETDump it was built with, so a run on a kept QEMU whose core was
reset (not a new process) is seen to run the image again from its start; QEMU processes are counted from
/proc (hil.target.process.os_children), not from what the harness says about them, less those the pytest
session running these tests keeps (its device tests may have left one: hil.boards.qemu_keep.session_kept_pids).
A kept QEMU's own log is the keeper's file; each run folder's qemu.log is that run's part, and no file of a
run folder changes after its run (read back byte for byte after later runs and the keeper's end).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hil.base.errors import TargetError
from hil.boards.base import RunPlan
from hil.boards.qemu import QemuBoard
from hil.boards.qemu_keep import QemuKeeper, session_kept_pids, unkept_children
from hil.config.board_config import load_board_config
from hil.target.process import os_children

from test_gdbmi import no_orphans  # noqa: F401  (shared fixture: nothing of ours left running)
from test_qemu_board import CONSOLE, PLAN, RUNS

ETDUMP_SIZE = 4096


def _qemus() -> list[int]:
    """Our QEMU children, less any the pytest session running this file keeps (not this test's)."""
    session = session_kept_pids()
    return [pid for pid, name in os_children() if name.startswith("qemu") and pid not in session]


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, bytes]]:
    from hil.firmware.qemu_image import build_qemu_image

    cache = tmp_path_factory.mktemp("cache")
    made = {}
    for name in ("a", "b"):
        etdump = os.urandom(ETDUMP_SIZE)
        made[name] = (build_qemu_image(etdump, CONSOLE, runs=RUNS, cache=cache), etdump)
    return made


def _run(keeper: QemuKeeper | None, images, name: str, workdir: Path, *, force: bool = False,
         plan: RunPlan = PLAN, **overrides: str) -> tuple[dict, list[int]]:
    """One run as the pipeline does it: flash, run, close; (the flash record, QEMUs alive during the run)."""
    elf, etdump = images[name]
    board = QemuBoard(load_board_config("qemu").with_overrides(overrides), workdir, keeper=keeper)
    try:
        board.flash(elf, force=force)
        capture = board.run(timeout=60, plan=plan)
        alive = _qemus()
        assert capture.etdump == etdump and capture.exit_code == 0
        assert capture.console.count("Program complete, exiting.") == 1  # this run's console only
        return dict(board.flash_record or {}), alive
    finally:
        board.close()


def test_three_runs_of_one_image_start_one_qemu_and_the_keeper_ends_it(images, tmp_path, no_orphans):
    keeper = QemuKeeper(tmp_path / "kept")
    try:
        first = _run(keeper, images, "a", tmp_path / "run0")
        after_first = _files(tmp_path / "run0")
        runs = [first] + [_run(keeper, images, "a", tmp_path / f"run{n}") for n in (1, 2)]
        assert [r["done"] for r, _ in runs] == ["downloaded", "skipped", "skipped"]
        assert len({tuple(alive) for _, alive in runs}) == 1 and len(runs[0][1]) == 1  # one and the same QEMU
        assert _qemus() == runs[0][1]  # kept between runs, halted
        assert all((tmp_path / f"run{n}" / "serial.log").read_text().startswith("Run config:") for n in range(3))
        assert "holds sha256" in runs[2][0]["why"] and "2 run(s) so far" in runs[2][0]["why"]
        assert _files(tmp_path / "run0") == after_first  # the kept QEMU's later runs wrote nothing into it
    finally:
        keeper.close()
    assert _qemus() == []
    assert _files(tmp_path / "run0") == after_first  # nor did its end
    (whole,) = (tmp_path / "kept").glob("qemu-*.log")  # one QEMU, one log, outside every run folder
    assert {record["qemu_log"] for record, _ in runs} == {str(whole)}
    parts = [(tmp_path / f"run{n}" / "qemu.log").read_bytes() for n in range(3)]
    assert parts[0].startswith(b"$ qemu-system-arm ") and not any(b"$ qemu" in part for part in parts[1:])
    log = whole.read_bytes()
    assert log.startswith(b"".join(parts))  # each run's part, one after another
    assert b"[qemu ended, exit status " in log[len(b"".join(parts)):]  # its end, at the session's: no run's


def test_the_sessions_kept_qemu_is_told_from_a_leak_and_ends_with_its_keeper(images, tmp_path, no_orphans):
    before = session_kept_pids()  # the session running this file may keep one of its own
    session, other = QemuKeeper(tmp_path / "session", session=True), QemuKeeper(tmp_path / "other")
    try:
        _, (kept,) = _run(session, images, "a", tmp_path / "session-run")
        _, (held,) = _run(other, images, "b", tmp_path / "other-run")
        assert session_kept_pids() - before == {kept}
        assert [child.pid for child in unkept_children()] == [held]  # a keeper a test made: its own to end
    finally:
        session.close()
        other.close()
    assert session_kept_pids() == before and _qemus() == []


def test_a_changed_image_or_a_forced_flash_starts_a_new_qemu(images, tmp_path, no_orphans):
    keeper = QemuKeeper(tmp_path / "kept")
    try:
        _, first = _run(keeper, images, "a", tmp_path / "a")
        record, second = _run(keeper, images, "b", tmp_path / "b")
        assert record["done"] == "downloaded" and "none kept holds" in record["why"]
        assert len(second) == 1 and second != first  # the one holding a was ended, not left beside
        record, third = _run(keeper, images, "b", tmp_path / "b-forced", force=True)
        assert record["done"] == "downloaded" and record["why"] == "forced (--force-flash)" and third != second
        assert len({record["qemu_log"], *map(str, (tmp_path / "kept").glob("qemu-*.log"))}) == 3  # one per QEMU
    finally:
        keeper.close()


def test_a_failed_run_is_not_kept(images, tmp_path, no_orphans):
    keeper = QemuKeeper(tmp_path / "kept")
    try:
        _run(keeper, images, "a", tmp_path / "first")
        # Fails with QEMU alive and halted (a breakpoint the image lacks): its state is nobody's to trust.
        with pytest.raises(TargetError, match="no_such_function"):
            _run(keeper, images, "a", tmp_path / "failed", **{"debug.breakpoint": "no_such_function"})
        assert _qemus() == []
        assert b"[qemu ended, exit status " in (tmp_path / "failed" / "qemu.log").read_bytes()  # its end: its run's
        record, _ = _run(keeper, images, "a", tmp_path / "again")
        assert record["done"] == "downloaded"
        with pytest.raises(TargetError):  # a plan the image refuses: it ends QEMU itself
            _run(keeper, images, "a", tmp_path / "too-many", plan=RunPlan(iterations=RUNS + 5))
        assert _qemus() == []
    finally:
        keeper.close()


def test_without_a_keeper_qemu_ends_with_the_run(images, tmp_path, no_orphans):
    record, alive = _run(None, images, "a", tmp_path / "run")
    assert record["done"] == "downloaded" and "no session keeps one" in record["why"]
    # The debugger takes the image's exit (QEMU serves no semihosting): QEMU waits halted, and close() ends it.
    assert len(alive) == 1 and _qemus() == []


def test_two_keepers_given_one_folder_never_share_a_log(tmp_path):
    first, second = QemuKeeper(tmp_path), QemuKeeper(tmp_path)  # two sessions of one second and pid folder
    try:
        logs = [first.new_log(), second.new_log(), first.new_log()]
        assert len(set(logs)) == 3 and all(log.parent == tmp_path and log.is_file() for log in logs)
    finally:
        first.close()
        second.close()
