"""The harness's full QEMU cycle against a bare pygdbmi + QEMU script on the same ELF.

Both sides: start QEMU halted, load the ELF, write the run configuration at hil_config_ready,
break at hil_etdump_ready, read result.buf/size, dump the ETDump, let the image exit, analyse with
the Inspector. The bare side uses pygdbmi's
GdbController with its defaults and `-kernel` loading, as a user's first script would.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from _common import replay_image, report, timed

from hil.boards.base import RunPlan

from hil.analysis.profile import TimeScale, build_profile
from hil.config import load_board_config
from hil.boards.qemu import QemuBoard
from hil.road.ports import free_tcp_port
from hil.road.run_config import RUN_CONFIG_MAGIC

ITERATIONS = 3  # the runs the replay image holds


def harness_cycle(elf: Path, etrecord: Path, work: Path) -> None:
    board = QemuBoard(load_board_config("qemu"), work)
    try:
        board.flash(elf)
        board.run(60, RunPlan(ITERATIONS))
    finally:
        board.close()
    build_profile(work / "trace.etdump", etrecord, board="qemu", model="bench", simulated=True,
                  time_scale=TimeScale.nanoseconds())


def bare_cycle(elf: Path, etrecord: Path, work: Path) -> None:
    from executorch.devtools import Inspector
    from pygdbmi.gdbcontroller import GdbController

    port = free_tcp_port()
    qemu = subprocess.Popen(
        ["qemu-system-arm", "-M", "mps2-an505", "-cpu", "cortex-m33", "-nographic", "-monitor", "none",
         "-semihosting-config", "enable=on,target=native", "-S", "-gdb", f"tcp:127.0.0.1:{port}", "-kernel", str(elf)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    gdb = GdbController(["gdb-multiarch", "--nx", "--quiet", "--interpreter=mi3", str(elf)])
    try:
        gdb.write(f"-target-select remote 127.0.0.1:{port}", timeout_sec=10)
        gdb.write("-break-insert -t hil_config_ready", timeout_sec=10)
        gdb.write("-exec-continue", timeout_sec=10)
        for field, value in (("iterations", ITERATIONS), ("warmup", 0), ("magic", RUN_CONFIG_MAGIC)):
            gdb.write(f"-gdb-set var hil_run_config.{field}={value}", timeout_sec=10)
        gdb.write("-break-insert hil_etdump_ready", timeout_sec=10)
        gdb.write("-exec-continue", timeout_sec=10)
        out = work / "bare.etdump"
        gdb.write(f"dump binary memory {out} hil_etdump_result.buf "
                  "(char*)hil_etdump_result.buf+hil_etdump_result.size", timeout_sec=30)
        gdb.write("-exec-continue", timeout_sec=10, raise_error_on_timeout=False)
    finally:
        gdb.exit()
        qemu.wait(timeout=10)
    Inspector(etdump_path=str(out), etrecord=str(etrecord))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    compiled, elf = replay_image(iterations=ITERATIONS)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        harness = timed(lambda: harness_cycle(elf, compiled.etrecord_path, work / "harness"), args.repeats)
        bare = timed(lambda: bare_cycle(elf, compiled.etrecord_path, work), args.repeats)
    report("full QEMU cycle (flash, run, dump, analyse), cifar10 replay image",
           "et-hil QemuBoard + build_profile", harness, "bare pygdbmi + QEMU + Inspector", bare)


if __name__ == "__main__":
    main()
