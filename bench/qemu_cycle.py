"""The harness's full QEMU cycle against a tuned pygdbmi + QEMU script on the same ELF.

Both sides: start QEMU halted, load the ELF, write the run configuration at hil_config_ready,
break at hil_etdump_ready, read result.buf/size, dump the ETDump, let the image exit, analyse with
the Inspector; the two sides take turns (harness, bare, harness, ...). The bare side is what a careful
user writes: QEMU's `-kernel` loading, and pygdbmi told to wait for nothing but the record each
command ends with (`^done`, `^running`, then `*stopped`), not its default 0.2 s of quiet after every
write (which was most of a first script's time).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import tempfile
import time
from pathlib import Path

from _common import interleaved, replay_image, report

from hil.boards.base import RunPlan

from hil.analysis.profile import TimeScale, build_profile
from hil.config.board_config import load_board_config
from hil.boards.qemu import QemuBoard
from hil.target.ports import free_tcp_port
from hil.target.run_config import RUN_CONFIG_MAGIC

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


class TunedMi:
    """pygdbmi as a careful user drives it: write, then block until the one record that ends the command."""

    def __init__(self, argv: list[str]) -> None:
        from pygdbmi.gdbcontroller import GdbController

        # Return 1 ms after gdb last said something, instead of after 0.2 s of quiet (0 would turn the
        # early return off altogether: pygdbmi then waits out every timeout).
        self.gdb = GdbController(argv, time_to_check_for_additional_output_sec=0.001)
        self.pending: collections.deque[dict] = collections.deque()

    def until(self, wanted, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            while self.pending:
                record = self.pending.popleft()
                if wanted(record):
                    return record
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"gdb: no wanted record within {timeout} s")
            self.pending.extend(self.gdb.get_gdb_response(timeout_sec=left, raise_error_on_timeout=False))

    def command(self, line: str, timeout: float = 10) -> dict:
        self.gdb.write(line, read_response=False)
        result = self.until(lambda r: r["type"] == "result", timeout)
        if result["message"] == "error":
            raise RuntimeError(f"gdb refused {line!r}: {result['payload']}")
        return result

    def stopped(self, timeout: float = 30) -> dict:
        return self.until(lambda r: r["type"] == "notify" and r["message"] == "stopped", timeout)


def bare_cycle(elf: Path, etrecord: Path, work: Path) -> None:
    from executorch.devtools import Inspector

    port = free_tcp_port()
    qemu = subprocess.Popen(
        ["qemu-system-arm", "-M", "mps2-an505", "-cpu", "cortex-m33", "-nographic", "-monitor", "none",
         "-semihosting-config", "enable=on,target=native", "-S", "-gdb", f"tcp:127.0.0.1:{port}", "-kernel", str(elf)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    mi = TunedMi(["gdb-multiarch", "--nx", "--quiet", "--interpreter=mi3", str(elf)])
    out = work / "bare.etdump"
    try:
        mi.command(f"-target-select remote 127.0.0.1:{port}")
        mi.command("-break-insert -t hil_config_ready")
        mi.command("-exec-continue")
        mi.stopped()
        for field, value in (("iterations", ITERATIONS), ("warmup", 0), ("magic", RUN_CONFIG_MAGIC)):
            mi.command(f"-gdb-set var hil_run_config.{field}={value}")
        mi.command("-break-insert hil_etdump_ready")
        mi.command("-exec-continue")
        mi.stopped()
        mi.command(f"-interpreter-exec console \"dump binary memory {out} hil_etdump_result.buf "
                   "(char*)hil_etdump_result.buf+hil_etdump_result.size\"", timeout=30)
        mi.command("-exec-continue")
        mi.stopped()  # the image exits through semihosting: QEMU ends, gdb says the target exited
    finally:
        mi.gdb.exit()
        qemu.wait(timeout=10)
    Inspector(etdump_path=str(out), etrecord=str(etrecord))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    compiled, elf = replay_image(iterations=ITERATIONS)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        harness, bare = interleaved(lambda: harness_cycle(elf, compiled.etrecord_path, work / "harness"),
                                    lambda: bare_cycle(elf, compiled.etrecord_path, work), args.repeats)
    report("full QEMU cycle (flash, run, dump, analyse), cifar10 replay image",
           "et-hil QemuBoard + build_profile", harness, "tuned pygdbmi + QEMU + Inspector", bare)


if __name__ == "__main__":
    main()
