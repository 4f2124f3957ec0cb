"""GdbMiSession against a real QEMU mps2-an505 running real images (gdb-multiarch over MI)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hil.base.errors import TargetError, TimeoutExpired
from hil.firmware.qemu_image import build_qemu_image
from hil.base.paths import FIRMWARE_DIR
from hil.target.guest_exit import ExitWatch
from hil.target.gdbmi import GdbMiSession
from hil.target.ports import LOOPBACK
from hil.boards.qemu_keep import session_kept_pids, unkept_children
from hil.target.process import os_children
from hil.target.qemu import QemuProcess

ETDUMP_SIZE = 1 << 20
MAIN_C = FIRMWARE_DIR / "qemu" / "main.c"

# A target that never stops on its own: for interrupts, deadlines and killed processes. It has the
# handshake's symbols (so a board gets as far as running it) but never calls hil_config_ready.
SPIN_C = """
volatile unsigned int spin_counter;
volatile struct { unsigned int magic, iterations, warmup, max_runs; } hil_run_config = {0, 0, 0, 1000};
__attribute__((noinline, used)) void hil_config_ready(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline, used)) void hil_etdump_ready(void) { __asm__ volatile("" ::: "memory"); }
void spin_reset(void) { for (;;) { spin_counter++; } }
__attribute__((section(".vectors"), used)) void (*const spin_vectors[2])(void) = {
    (void (*)(void))0x38010000, spin_reset };
"""
SPIN_LD = """
MEMORY { CODE (rx) : ORIGIN = 0x10000000, LENGTH = 4M  RAM (rwx) : ORIGIN = 0x38000000, LENGTH = 4M }
SECTIONS { .vectors : { KEEP(*(.vectors)) } > CODE  .text : { *(.text*) } > CODE
           .data : { *(.data*) } > RAM AT > CODE  .bss (NOLOAD) : { *(.bss* COMMON) } > RAM }
"""
REPLAY_RUNS = 2


@pytest.fixture(scope="module")
def etdump() -> bytes:
    return os.urandom(ETDUMP_SIZE)


@pytest.fixture(scope="module")
def replay_elf(tmp_path_factory: pytest.TempPathFactory, etdump: bytes) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    return build_qemu_image(etdump, ["gdb session test", "second line"], runs=REPLAY_RUNS, cache=cache)


@pytest.fixture(scope="module")
def spin_elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("spin")
    (work / "spin.c").write_text(SPIN_C)
    (work / "spin.ld").write_text(SPIN_LD)
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-g", "-O1", "-nostdlib", "-nostartfiles",
         "-Tspin.ld", "spin.c", "-o", "spin.elf", "-Wl,--no-warn-rwx-segments"],
        cwd=work, check=True, timeout=60,
    )
    return work / "spin.elf"


@pytest.fixture(autouse=True)
def no_orphans() -> Iterator[None]:
    """Nothing a test started is left running; a QEMU the pytest session keeps (on by default: a device test
    ran before) is the session's, not a leak, and is left alone (hil.boards.qemu_keep.session_kept_pids)."""
    yield
    leaked, kept = unkept_children(), session_kept_pids()
    leftovers = [(pid, name) for pid, name in os_children() if name.startswith(("qemu", "gdb")) and pid not in kept]
    for child in leaked:  # one leak must not fail every later test too
        child.close(grace=0.5)
    assert leaked == [] and leftovers == []


def attach(elf: Path, workdir: Path) -> tuple[QemuProcess, GdbMiSession]:
    """QEMU halted, gdb connected, image downloaded and the CPU reset onto its vector table."""
    qemu = QemuProcess("qemu-system-arm", "mps2-an505", "cortex-m33", workdir / "qemu.log").start()
    gdb = GdbMiSession("gdb-multiarch", elf, workdir / "mi.log")
    try:
        gdb.connect(LOOPBACK, qemu.gdb_port)
        gdb.download()
        gdb.reset()
    except BaseException:
        gdb.close()
        qemu.close()
        raise
    return qemu, gdb


def configure(gdb: GdbMiSession, iterations: int, warmup: int = 0) -> None:
    """The run-configuration handshake by hand: a one-shot stop at hil_config_ready, three writes."""
    number = gdb.break_insert("hil_config_ready", temporary=True)
    stop = gdb.continue_until_stop(10)
    assert (stop.reason, stop.breakpoint) == ("breakpoint-hit", number)
    gdb.write_int("hil_run_config.iterations", iterations)
    gdb.write_int("hil_run_config.warmup", warmup)
    gdb.write_int("hil_run_config.magic", 0x314C4948)


@pytest.fixture
def replay(replay_elf: Path, tmp_path: Path) -> Iterator[tuple[QemuProcess, GdbMiSession]]:
    qemu, gdb = attach(replay_elf, tmp_path)
    configure(gdb, REPLAY_RUNS)
    yield qemu, gdb
    gdb.close()
    qemu.close()


@pytest.fixture
def spinning(spin_elf: Path, tmp_path: Path) -> Iterator[tuple[QemuProcess, GdbMiSession]]:
    qemu, gdb = attach(spin_elf, tmp_path)
    yield qemu, gdb
    gdb.close()
    qemu.close()


def test_break_at_function_read_and_dump_agree(replay, etdump: bytes, tmp_path: Path) -> None:
    qemu, gdb = replay
    assert ExitWatch(gdb).arm()  # QEMU serves no semihosting: the debugger takes the image's exit
    number = gdb.break_insert("hil_etdump_ready")
    stop = gdb.continue_until_stop(10)
    assert (stop.reason, stop.frame_func, stop.breakpoint) == ("breakpoint-hit", "hil_etdump_ready", number)

    address = gdb.evaluate_int("hil_etdump_result.buf")
    size = gdb.evaluate_int("hil_etdump_result.size")
    assert size == len(etdump)
    assert "hil_etdump_ram" in gdb.evaluate("hil_etdump_result.buf")
    assert gdb.evaluate_int("sizeof(hil_etdump_result)") == 8

    read = gdb.read_memory(address, size)
    dumped = gdb.dump_memory(address, size, tmp_path / "dir with blank" / "trace.etdump").read_bytes()
    assert read == dumped == etdump

    stop = gdb.continue_until_stop(10)
    assert (stop.reason, stop.frame_func, stop.exit_code) == ("exited", "semihost_exit", 0)
    assert qemu.alive  # halted at the exit, its trap not run
    transcript = (tmp_path / "mi.log").read_text()
    assert "-break-insert \"hil_etdump_ready\"" in transcript and "-target-download" in transcript


def test_break_at_file_line(replay) -> None:
    _qemu, gdb = replay
    line = next(n for n, text in enumerate(MAIN_C.read_text().splitlines(), 1) if "HIL_MSG_PROGRAM_COMPLETE" in text)
    gdb.break_insert(f"main.c:{line}")
    stop = gdb.continue_until_stop(10)
    assert (stop.reason, stop.frame_func) == ("breakpoint-hit", "main")
    assert gdb.evaluate_int("hil_etdump_result.size") == ETDUMP_SIZE


@pytest.mark.parametrize("location", ["no_such_function", "no_such_file.c:12"])
def test_unresolvable_breakpoint_names_location(replay, location: str) -> None:
    _qemu, gdb = replay
    with pytest.raises(TargetError, match=f"breakpoint location '{location}' cannot be resolved"):
        gdb.break_insert(location)
    assert gdb.evaluate_int("1 + 1") == 2  # the session is still usable


def test_error_record_carries_gdb_message_and_command(replay) -> None:
    _qemu, gdb = replay
    with pytest.raises(TargetError) as info:
        gdb.evaluate("no_such_symbol + 1")
    assert 'No symbol "no_such_symbol" in current context.' in str(info.value)
    assert "-data-evaluate-expression" in str(info.value) and "mi.log" in str(info.value)


def test_running_target_times_out_then_interrupts(spinning) -> None:
    _qemu, gdb = spinning
    start = time.monotonic()
    with pytest.raises(TimeoutExpired, match="did not stop within 0.5 s"):
        gdb.continue_until_stop(0.5)
    assert time.monotonic() - start < 2.0
    stop = gdb.interrupt()
    assert (stop.reason, stop.frame_func) == ("signal-received", "spin_reset")
    assert gdb.evaluate_int("spin_counter") > 0


def test_qemu_killed_while_running_is_a_disconnect(spinning) -> None:
    qemu, gdb = spinning
    gdb.break_insert("hil_etdump_ready")  # never reached
    gdb.command("-exec-continue")
    os.killpg(qemu.process.pid, signal.SIGKILL)
    start = time.monotonic()
    stop = gdb.wait_for_stop(10)
    assert time.monotonic() - start < 2.0
    assert stop.reason == "disconnected" and stop.target_gone
    assert qemu.exit_status(5) == -signal.SIGKILL


def test_gdb_killed_is_an_error_not_a_hang(spinning) -> None:
    _qemu, gdb = spinning
    gdb.command("-exec-continue")
    os.kill(gdb.pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(TargetError, match=r"gdb exited \(status -9\)"):
        gdb.wait_for_stop(30)
    with pytest.raises(TargetError, match="gdb exited"):
        gdb.evaluate("1")
    assert time.monotonic() - start < 2.0


def test_missing_gdb_or_elf_is_named(replay_elf: Path, tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="cannot start 'no-such-gdb'"):
        GdbMiSession("no-such-gdb", replay_elf, tmp_path / "mi.log")
    with pytest.raises(TargetError, match="ELF not found: .*missing.elf"):
        GdbMiSession("gdb-multiarch", tmp_path / "missing.elf", tmp_path / "mi.log")


def test_write_int_lands_in_target_memory_and_is_logged(replay, tmp_path: Path) -> None:
    _qemu, gdb = replay  # the fixture wrote the run configuration with write_int
    assert gdb.evaluate_int("hil_run_config.iterations") == REPLAY_RUNS
    assert gdb.evaluate_int("hil_run_config.magic") == 0x314C4948
    address = gdb.evaluate_int("&hil_run_config.warmup")
    gdb.write_int("hil_run_config.warmup", 0xA5A5)
    assert gdb.read_memory(address, 4) == (0xA5A5).to_bytes(4, "little")
    transcript = (tmp_path / "mi.log").read_text()
    assert '-break-insert -t "hil_config_ready"' in transcript
    assert f'-data-evaluate-expression "hil_run_config.magic = {0x314C4948}"' in transcript
    with pytest.raises(TargetError, match="no_such_symbol"):
        gdb.write_int("no_such_symbol", 1)


def test_temporary_breakpoint_is_gone_after_its_hit(replay) -> None:
    _qemu, gdb = replay  # the handshake's one-shot breakpoint was hit in the fixture
    listing = gdb.command("-break-list")["payload"]["BreakpointTable"]["body"]
    assert listing == []
