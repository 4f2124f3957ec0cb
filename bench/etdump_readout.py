"""Reading a 1 MiB ETDump out of the target: `dump binary memory` against MI reads in chunks.

One QEMU + GDB session (run configured at hil_config_ready, as the harness does) stopped at
hil_etdump_ready; both methods read the same bytes, in turns (dump, chunks, dump, ...), and must agree,
so the ratio compares equal work under the same load.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _common import interleaved, report

from hil.config.board_config import load_board_config
from hil.firmware.qemu_image import build_qemu_image
from hil.target.gdbmi import GdbMiSession
from hil.target.ports import LOOPBACK
from hil.target.run_config import RUN_CONFIG_MAGIC
from hil.target.qemu import QemuProcess

SIZE = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=None, help="bytes per -data-read-memory-bytes (default: harness's)")
    args = parser.parse_args()
    payload = os.urandom(SIZE)
    elf = build_qemu_image(payload, ["et-hil readout benchmark"], runs=1)
    cfg = load_board_config("qemu")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
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
            addr = gdb.evaluate_int("hil_etdump_result.buf")
            size = gdb.evaluate_int("hil_etdump_result.size")
            assert size == SIZE
            out = work / "dump.bin"
            chunk = {"chunk": args.chunk} if args.chunk else {}
            assert gdb.read_memory(addr, size, **chunk) == payload
            gdb.dump_memory(addr, size, out)
            assert out.read_bytes() == payload
            # the reads above were each side's warm-up
            dump, mi = interleaved(lambda: gdb.dump_memory(addr, size, out),
                                   lambda: gdb.read_memory(addr, size, **chunk), args.repeats, warm_up=False)
        finally:
            gdb.close()
            qemu.close()
    report("reading a 1 MiB ETDump from QEMU over the GDB stub",
           "dump binary memory", dump, "-data-read-memory-bytes chunks", mi)


if __name__ == "__main__":
    main()
