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

from _common import interleaved, report, stopped_at_the_dump

SIZE = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=None, help="bytes per -data-read-memory-bytes (default: harness's)")
    args = parser.parse_args()
    payload = os.urandom(SIZE)
    with tempfile.TemporaryDirectory() as tmp, stopped_at_the_dump(payload, "et-hil readout benchmark",
                                                                   Path(tmp)) as (gdb, addr, size):
        out = Path(tmp) / "dump.bin"
        chunk = {"chunk": args.chunk} if args.chunk else {}
        assert gdb.read_memory(addr, size, **chunk) == payload
        gdb.dump_memory(addr, size, out)
        assert out.read_bytes() == payload
        # the reads above were each side's warm-up
        dump, mi = interleaved(lambda: gdb.dump_memory(addr, size, out),
                               lambda: gdb.read_memory(addr, size, **chunk), args.repeats, warm_up=False)
    report("reading a 1 MiB ETDump from QEMU over the GDB stub",
           "dump binary memory", dump, "-data-read-memory-bytes chunks", mi)


if __name__ == "__main__":
    main()
