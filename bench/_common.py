"""Shared set-up for the benchmarks: a real replay image of a real model, built once; both sides of a
comparison timed in turns (A B A B ...), so a change in the machine's load reaches both alike; and the
load average printed beside every ratio, because on a shared machine a ratio means little without it.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

if TYPE_CHECKING:
    from hil.aot.export import CompiledModel


def replay_image(model: str = "cifar10", iterations: int = 3, clock_mhz: float = 324) -> tuple[CompiledModel, Path]:
    """The model's program and a replay ELF carrying its host-runtime ETDump (imports torch: only when asked)."""
    from hil.aot.export import export_model
    from hil.replay.simulated import simulated_buffer
    from hil.firmware.qemu_image import build_qemu_image

    compiled = export_model(model, delegate="none")
    buffer = simulated_buffer(compiled, iterations=iterations, clock_mhz=clock_mhz)
    return compiled, build_qemu_image(buffer.etdump, buffer.console_lines, runs=iterations)


def source_workspace() -> Path:
    """The pinned source workspace the QEMU runtime image is built from, or exit saying how to get one."""
    from hil.firmware.qemu_firmware import find_workspace

    workspace = find_workspace()
    if workspace is None:
        raise SystemExit("no source workspace: run `make rt700-sdk` (or set RT700_SDK_DIR)")
    return workspace


# The machine's load when the bench started: printed beside the ratio with the load at the end.
LOAD_AT_START = os.getloadavg()


def once(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of one call."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(a: Callable[[], object], b: Callable[[], object], repeats: int,
                warm_up: bool = True) -> tuple[list[float], list[float]]:
    """Seconds of `repeats` calls of each, taken in turns (a b a b ...), after one untimed call of each."""
    if warm_up:
        a(), b()
    times_a, times_b = [], []
    for _ in range(repeats):
        times_a.append(once(a))
        times_b.append(once(b))
    return times_a, times_b


def load_line() -> str:
    """The 1-, 5- and 15-minute load averages at the start and now, with the core count."""
    fmt = lambda load: " ".join(f"{x:.1f}" for x in load)  # noqa: E731
    return f"load average (1/5/15 min) at start {fmt(LOAD_AT_START)}, now {fmt(os.getloadavg())}, on {os.cpu_count()} cores"


def report(title: str, a_name: str, a: list[float], b_name: str, b: list[float]) -> None:
    """Print medians of both sides, the ratio b/a and the machine's load."""
    ma, mb = statistics.median(a), statistics.median(b)
    print(title)
    print(f"  {a_name:<40} median {ma * 1000:9.1f} ms  ({len(a)} runs, interleaved)")
    print(f"  {b_name:<40} median {mb * 1000:9.1f} ms  ({len(b)} runs, interleaved)")
    print(f"  ratio {b_name} / {a_name}: {mb / ma:.2f}")
    print(f"  {load_line()}")


@contextmanager
def stopped_at_the_dump(payload: bytes, label: str, work: Path) -> Iterator[tuple[Any, int, int]]:
    """A replay image holding `payload` as its ETDump, on QEMU, configured at hil_config_ready as the harness
    does and stopped at the ETDump breakpoint: (the gdb session, the dump's address, its size). Both ETDump
    benches (etdump_readout.py, etdump_stream.py) read the dump from here."""
    from hil.config.board_config import load_board_config
    from hil.firmware.qemu_image import build_qemu_image
    from hil.target.gdbmi import GdbMiSession
    from hil.target.ports import LOOPBACK
    from hil.target.qemu import QemuProcess
    from hil.target.run_config import RUN_CONFIG_MAGIC

    elf = build_qemu_image(payload, [label], runs=1)
    cfg = load_board_config("qemu")
    qemu = QemuProcess("qemu-system-arm", cfg.require("qemu.machine"), cfg.get("qemu.cpu"), work / "qemu.log")
    qemu.start()
    gdb = GdbMiSession(cfg.gdb, elf, work / "mi.log")
    try:
        gdb.connect(LOOPBACK, qemu.gdb_port)
        gdb.download()
        gdb.reset()
        gdb.break_insert("hil_config_ready", temporary=True)
        gdb.continue_until_stop(30)
        for field, value in (("iterations", 1), ("warmup", 0), ("magic", RUN_CONFIG_MAGIC)):
            gdb.write_int(f"hil_run_config.{field}", value)
        gdb.break_insert(cfg.breakpoint)
        stop = gdb.continue_until_stop(30)
        assert stop.reason == "breakpoint-hit", stop.describe()
        addr, size = gdb.evaluate_int("hil_etdump_result.buf"), gdb.evaluate_int("hil_etdump_result.size")
        assert size == len(payload), (size, len(payload))
        yield gdb, addr, size
    finally:
        gdb.close()
        qemu.close()
