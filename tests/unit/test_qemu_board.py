"""QemuBoard end to end: real QEMU, real gdb-multiarch, real replay images; and every way it can fail."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
import zlib
from pathlib import Path

import pytest

from hil.boards import open_board
from hil.base.progress import Lines, Within
from hil.boards.base import RunPlan
from hil.boards.qemu import QemuBoard
from hil.config.board_config import BoardConfig, load_board_config
from hil.base.errors import BoardConfigError, TargetError, TimeoutExpired
from hil.firmware.qemu_image import build_qemu_image
from hil.boards.qemu_keep import session_kept_pids
from hil.target.process import ManagedProcess, live_children, os_children
from hil.target.qemu import QemuProcess
from hil.target.ports import port_listening

from test_gdbmi import no_orphans, spin_elf  # noqa: F401  (shared fixtures: orphan check, never-ending target)

CONSOLE = [
    "CIFARNET example using a ExecuTorch model",
    "Core/NPU Frequency: 324 MHz",
    "     Inference time: 907 us",
]
ETDUMP_SIZE = 300_000
STEPS = ("connect", "flash", "run_to_breakpoint", "read_etdump", "finish")
# The replay images here hold 3 runs; the plan that matches them.
RUNS = 3
PLAN = RunPlan(iterations=2, warmup=1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def etdump() -> bytes:
    return os.urandom(ETDUMP_SIZE)


@pytest.fixture
def cfg() -> BoardConfig:
    return load_board_config("qemu")


def image(etdump: bytes, cache: Path, runs: int = RUNS, **options) -> Path:
    return build_qemu_image(etdump, CONSOLE, runs=runs, cache=cache, **options)


def kill_child_soon(prefix: str, delay: float) -> threading.Thread:
    """SIGKILL our child whose name starts with `prefix` after `delay` s, while run() is busy (never a QEMU
    the pytest session keeps: not the run's)."""

    def kill() -> None:
        time.sleep(delay)
        kept = session_kept_pids()
        for pid, name in os_children():
            if name.startswith(prefix) and pid not in kept:
                os.kill(pid, signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def test_full_cycle_returns_the_exact_etdump(cfg, etdump, cache, tmp_path: Path) -> None:
    said: list[str] = []
    elf = image(etdump, cache)
    board = open_board(cfg, tmp_path, Within(Lines(said.append, durations=False)))
    assert isinstance(board, QemuBoard)
    with board:
        start = time.monotonic()
        board.flash(elf)
        capture = board.run(timeout=60, plan=PLAN)
        total = time.monotonic() - start
    assert capture.etdump == etdump
    assert (tmp_path / "trace.etdump").read_bytes() == etdump
    assert capture.exit_code == 0
    assert capture.result_addr == 0x38000000
    lines = capture.console.splitlines()
    assert lines[0] == "Run config: iterations 2, warm-up 1 (set by the debugger)"
    assert lines[1:4] == CONSOLE
    crc = zlib.crc32(etdump)  # the firmware's own CRC-32 (firmware/common/hil_crc32.c) against zlib's
    assert lines[4:] == [f"Result buf: 0x38000000, size: {ETDUMP_SIZE}, crc32: 0x{crc:x}", "Program complete, exiting."]
    assert capture.crc32 == {"checked": True, "firmware": f"0x{crc:08x}", "read": f"0x{crc:08x}"}
    writes = re.findall(r'-data-evaluate-expression "hil_run_config\.(\w+) = (\d+)"', (tmp_path / "mi.log").read_text())
    assert writes == [("iterations", "2"), ("warmup", "1"), ("magic", str(0x314C4948))]  # magic last
    assert capture.serial_log.read_bytes() == capture.console.encode()
    assert set(capture.steps_s) == set(STEPS) and all(t > 0 for t in capture.steps_s.values())
    # Each of the board's own steps was announced live, in order, as it started (hil.base.progress.Within).
    assert [line.split()[0] for line in said] == ["start", "download", "run", "read", "let"], said
    assert said[2] == f"  run {PLAN.describe()} to {cfg.breakpoint}…"
    assert {"serial.log", "mi.log", "qemu.log", "trace.etdump"} <= {p.name for p in tmp_path.iterdir()}
    print(f"\nQemuBoard cycle {total:.3f} s:", ", ".join(f"{k} {v:.3f}" for k, v in capture.steps_s.items()))


def test_board_can_be_flashed_and_run_twice(cfg, etdump, cache, tmp_path: Path) -> None:
    other = bytes(reversed(etdump[:4096]))
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache))
        assert board.run(timeout=60, plan=PLAN).etdump == etdump
        board.flash(image(other, cache, runs=1))
        assert board.run(timeout=60, plan=RunPlan(1)).etdump == other


def test_the_firmware_crc_is_the_standard_crc32(cfg, cache, tmp_path: Path) -> None:
    """CRC-32/IEEE's published check value: crc32(b"123456789") = 0xcbf43926."""
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(b"123456789", cache, runs=1))
        capture = board.run(timeout=60, plan=RunPlan(1))
    assert "Result buf: 0x38000000, size: 9, crc32: 0xcbf43926\r\n" in capture.console


def test_a_wrong_crc_is_refused_naming_both_values(cfg, etdump, cache, tmp_path: Path) -> None:
    crc = zlib.crc32(etdump)
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache, result_crc="wrong"))
        with pytest.raises(TargetError) as info:
            board.run(timeout=60, plan=PLAN)
    first = str(info.value).splitlines()[0]
    assert "CRC-32 mismatch" in first
    assert f"0x{crc ^ 0x00010000:08x}" in first and f"0x{crc:08x}" in first  # printed (one bit off) and read


def test_firmware_without_a_crc_is_read_unchecked(cfg, etdump, cache, tmp_path: Path) -> None:
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache, result_crc="absent"))
        capture = board.run(timeout=60, plan=PLAN)
    assert capture.etdump == etdump and f"Result buf: 0x38000000, size: {ETDUMP_SIZE}\r\n" in capture.console
    assert capture.crc32 == {"checked": False, "read": f"0x{zlib.crc32(etdump):08x}",
                             "note": "the firmware printed no CRC-32: check skipped"}


def test_breakpoint_never_reached(cfg, etdump, cache, tmp_path: Path) -> None:
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache, call_ready=False))
        start = time.monotonic()
        with pytest.raises(TargetError) as info:
            board.run(timeout=30, plan=PLAN)
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert "board 'qemu'" in message and "breakpoint 'hil_etdump_ready'" in message
    assert "exited, in semihost_exit, exit code 0" in message  # the exit, taken by the debugger
    assert "Program complete, exiting." in message  # the console tail
    assert str(tmp_path / "serial.log") in message


def test_unknown_breakpoint_function_is_named(cfg, etdump, cache, tmp_path: Path) -> None:
    cfg = cfg.with_overrides({"debug.breakpoint": "hil_no_such_function"})
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache))
        with pytest.raises(TargetError, match="'hil_no_such_function' cannot be resolved"):
            board.run(timeout=30, plan=PLAN)


def test_deadline_interrupts_a_target_that_never_gets_there(cfg, spin_elf, tmp_path: Path) -> None:
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(spin_elf)
        start = time.monotonic()
        with pytest.raises(TimeoutExpired) as info:
            board.run(timeout=1.0, plan=PLAN)
    assert time.monotonic() - start < 5
    first = str(info.value).splitlines()[0]
    assert re.match(r"Hang: breakpoint 'hil_config_ready' not reached within (0\.9|1\.0) s", first), first
    assert "the core is in spin_reset (spin.c:" in first  # the spinning image never asks for its config
    assert json.loads((tmp_path / "fault.json").read_text())["kind"] == "hang"


@pytest.mark.parametrize("victim", ["qemu-system", "gdb-multiarch"])
def test_killed_process_mid_run_fails_fast(cfg, spin_elf, tmp_path: Path, victim: str) -> None:
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(spin_elf)
        killer = kill_child_soon(victim[:15], 0.5)  # /proc comm is at most 15 characters
        start = time.monotonic()
        with pytest.raises(TargetError) as info:
            board.run(timeout=60, plan=PLAN)
        killer.join()
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert "board 'qemu'" in message and str(tmp_path / "serial.log") in message
    if victim == "qemu-system":
        # QEMU's death leads (gdb only saw its stub go away), the debugger's view follows
        assert message.startswith("board 'qemu': QEMU was killed by SIGKILL (signal 9); last lines of")
        assert "the debugger then said:" in message and "disconnected" in message
    else:
        assert "gdb exited (status -9)" in message


@pytest.mark.parametrize(
    ("size", "complaint"),
    [(0, "empty ETDump"), (16 * 1024 * 1024, "outside the board's RAM")],
)
def test_bad_result_size_is_refused(cfg, etdump, cache, tmp_path: Path, size: int, complaint: str) -> None:
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache, result_size_override=size))
        with pytest.raises(TargetError, match=complaint):
            board.run(timeout=30, plan=PLAN)
    assert not (tmp_path / "trace.etdump").exists()


def mi_writes(tmp_path: Path) -> list[str]:
    """Every assignment to hil_run_config in the GDB transcript."""
    return re.findall(r"hil_run_config\.\w+ = \d+", (tmp_path / "mi.log").read_text())


def test_an_image_made_for_another_count_fails_naming_both(cfg, etdump, cache, tmp_path: Path) -> None:
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache, runs=3))
        start = time.monotonic()
        with pytest.raises(TargetError) as info:
            board.run(timeout=30, plan=RunPlan(5))
    assert time.monotonic() - start < 5
    first_line = str(info.value).splitlines()[0]
    assert "replay image holds 3 runs, asked for 5 (iterations 5, warm-up 0)" in first_line, str(info.value)
    assert first_line.startswith("board 'qemu': the firmware stopped after taking iterations 5, warm-up 0")
    assert "HardFault" not in str(info.value)  # the exit is taken by the debugger before its trap runs
    assert not (tmp_path / "trace.etdump").exists()


def test_an_image_without_the_handshake_is_refused_before_it_runs(cfg, etdump, cache, tmp_path: Path) -> None:
    elf = image(etdump, cache, run_config="absent")
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(elf)
        start = time.monotonic()
        with pytest.raises(TargetError) as info:
            board.run(timeout=30, plan=PLAN)
    assert time.monotonic() - start < 5
    message = str(info.value)
    assert f"image {elf} has no hil_run_config / hil_config_ready: it predates the iteration handshake" in message
    assert "rebuild it (" in message and "breakpoint 'hil_config_ready'" in message
    assert str(tmp_path / "serial.log") in message and str(tmp_path / "mi.log") in message
    assert mi_writes(tmp_path) == []
    assert "Run config" not in (tmp_path / "serial.log").read_text()  # the target never ran
    # no_orphans (autouse, from test_gdbmi) then checks that no QEMU or gdb is left


def test_a_firmware_that_ignores_the_written_config_is_caught_by_its_echo(cfg, etdump, cache, tmp_path: Path) -> None:
    """It reaches the ETDump breakpoint with an ETDump of its own count: only the console says so."""
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache, run_config="ignored"))
        with pytest.raises(TargetError) as info:
            board.run(timeout=30, plan=RunPlan(1))
    first_line = str(info.value).splitlines()[0]
    assert first_line.startswith(
        "board 'qemu': the firmware ran its defaults (iterations 3, warm-up 0) although the harness wrote"
        " iterations 1, warm-up 0"
    ), str(info.value)
    assert len(mi_writes(tmp_path)) == 3  # the harness did write; the firmware did not listen
    assert not (tmp_path / "trace.etdump").exists()  # no profile of the wrong count


@pytest.mark.parametrize(("plan", "runs"), [(RunPlan(1000, 1), 1001), (RunPlan(2, 999), 1001)])
def test_a_plan_above_max_runs_is_refused_before_anything_is_written(
    cfg, etdump, cache, tmp_path: Path, plan: RunPlan, runs: int
) -> None:
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(image(etdump, cache))
        with pytest.raises(TargetError) as info:
            board.run(timeout=30, plan=plan)
    first_line = str(info.value).splitlines()[0]
    assert f"the plan needs {runs} runs ({plan.describe()}) but the image holds at most 1000" in first_line
    assert "nothing was written" in first_line
    assert mi_writes(tmp_path) == []
    assert "-data-evaluate-expression \"(unsigned long long)(hil_run_config.max_runs)\"" in (
        tmp_path / "mi.log").read_text()


def test_unknown_board_kind(cfg, tmp_path: Path) -> None:
    odd = BoardConfig(name="odd", kind="fpga", source=None, data={"board": {"kind": "fpga"}})
    with pytest.raises(BoardConfigError, match="unknown kind 'fpga'"):
        open_board(odd, tmp_path)


def test_managed_process_close_ends_its_whole_group(tmp_path: Path) -> None:
    log = tmp_path / "sleeper.log"
    # A shell that leaves a grandchild behind: closing must end both (one process group).
    proc = ManagedProcess(["sh", "-c", "sleep 60 & echo grandchild=$!; wait"], "sleeper", log).start()
    deadline = time.monotonic() + 5
    while not (found := re.search(r"^grandchild=(\d+)$", log.read_text(), re.M)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert found, log.read_text()
    grandchild = int(found.group(1))
    assert proc in live_children()
    with pytest.raises(TimeoutExpired, match=r"sleeper \(pid \d+\) still running after 0.1 s"):
        proc.wait(0.1)
    proc.close()
    assert proc.returncode is not None and proc not in live_children()
    time.sleep(0.1)
    state = Path(f"/proc/{grandchild}/stat")
    assert not state.exists() or state.read_text().split(") ")[1].startswith("Z")
    assert "[sleeper ended" in log.read_text()


def test_qemu_process_listens_and_closes(tmp_path: Path) -> None:
    qemu = QemuProcess("qemu-system-arm", "mps2-an505", "cortex-m33", tmp_path / "qemu.log").start()
    try:
        assert qemu.alive and port_listening(qemu.gdb_port) and port_listening(qemu.serial_port)
        assert qemu.exit_status(timeout=0.1) is None  # halted (-S), not exited
    finally:
        qemu.close()
    assert not qemu.alive and not port_listening(qemu.gdb_port)


def test_qemu_that_cannot_start_names_its_log(tmp_path: Path) -> None:
    qemu = QemuProcess("qemu-system-arm", "no-such-machine", None, tmp_path / "qemu.log")
    with pytest.raises(TimeoutExpired, match="exited before .* was listening.*qemu.log"):
        qemu.start(timeout=10)
    assert "no-such-machine" in (tmp_path / "qemu.log").read_text()
