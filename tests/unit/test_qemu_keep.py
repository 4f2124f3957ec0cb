"""A QEMU kept between runs of one image (hil.boards.qemu_keep): real QEMU, gdb and replay images.

Each replay image hands back the exact ETDump it was built with, so a run on a kept QEMU whose core was
reset (not a new process) is seen to run the image again from its start; QEMU processes are counted from
/proc (hil.target.process.os_children), not from what the harness says about them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hil.base.errors import TargetError
from hil.boards.base import RunPlan
from hil.boards.qemu import QemuBoard
from hil.boards.qemu_keep import QemuKeeper
from hil.config.board_config import load_board_config
from hil.target.process import os_children

from test_gdbmi import no_orphans  # noqa: F401  (shared fixture: nothing of ours left running)
from test_qemu_board import CONSOLE, PLAN, RUNS

ETDUMP_SIZE = 4096


def _qemus() -> list[int]:
    return [pid for pid, name in os_children() if name.startswith("qemu")]


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
    keeper = QemuKeeper()
    try:
        runs = [_run(keeper, images, "a", tmp_path / f"run{n}") for n in range(3)]
        assert [r["done"] for r, _ in runs] == ["downloaded", "skipped", "skipped"]
        assert len({tuple(alive) for _, alive in runs}) == 1 and len(runs[0][1]) == 1  # one and the same QEMU
        assert _qemus() == runs[0][1]  # kept between runs, halted
        assert [(tmp_path / f"run{n}" / "qemu.log").is_file() for n in range(3)] == [True, False, False]
        assert all((tmp_path / f"run{n}" / "serial.log").read_text().startswith("Run config:") for n in range(3))
        assert "holds sha256" in runs[2][0]["why"] and "2 run(s) so far" in runs[2][0]["why"]
    finally:
        keeper.close()
    assert _qemus() == []


def test_a_changed_image_or_a_forced_flash_starts_a_new_qemu(images, tmp_path, no_orphans):
    keeper = QemuKeeper()
    try:
        _, first = _run(keeper, images, "a", tmp_path / "a")
        record, second = _run(keeper, images, "b", tmp_path / "b")
        assert record["done"] == "downloaded" and "none kept holds" in record["why"]
        assert len(second) == 1 and second != first  # the one holding a was ended, not left beside
        record, third = _run(keeper, images, "b", tmp_path / "b-forced", force=True)
        assert record == {"done": "downloaded", "why": "forced (--force-flash)"} and third != second
    finally:
        keeper.close()


def test_a_failed_run_is_not_kept(images, tmp_path, no_orphans):
    keeper = QemuKeeper()
    try:
        _run(keeper, images, "a", tmp_path / "first")
        # Fails with QEMU alive and halted (a breakpoint the image lacks): its state is nobody's to trust.
        with pytest.raises(TargetError, match="no_such_function"):
            _run(keeper, images, "a", tmp_path / "failed", **{"debug.breakpoint": "no_such_function"})
        assert _qemus() == []
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
    assert alive == [] and _qemus() == []  # the image's exit ended QEMU, as it always did
