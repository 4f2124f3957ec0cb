"""The ETDump over the console (framed, `[debug].etdump_transport = "console"`) against the GDB read-out.

The GDB side is bench/etdump_readout.py's: `dump binary memory` of a 1 MiB ETDump from QEMU stopped at
hil_etdump_ready. The console side is the same 1 MiB as the firmware frames it (hil_protocol.h: base64
lines of HIL_FRAME_BYTES with sequence number and CRC-32, a begin and an end line per dump), decoded by
the harness (hil.records.etdump_frames). A console moves 10 bits a byte (8N1), so at the board file's
`[serial].baudrate` it carries baud / 10 characters a second, and a frame line carries HIL_FRAME_BYTES
payload bytes in its length of characters; the console's throughput is the smaller of that wire rate and
the decoder's. Dump and decode are timed in turns (A B A B ...), so the load reaches both alike.
"""

from __future__ import annotations

import argparse
import base64
import os
import tempfile
import zlib
from pathlib import Path

from _common import interleaved, load_line, once, stopped_at_the_dump

from hil.config.board_config import load_board_config
from hil.records.etdump_frames import decode_stream

SIZE = 1 << 20
FRAME_BYTES = 180  # HIL_FRAME_BYTES
DUMP_BYTES = 200_000  # about one batch of the small CNN in a 512 KiB ETDump buffer (251 runs)


def framed(payload: bytes) -> str:
    """`payload` as the firmware streams it, in dumps of DUMP_BYTES, CR LF line ends."""
    lines, seq, dumps = [], 0, 0
    for start in range(0, len(payload), DUMP_BYTES):
        dump = payload[start:start + DUMP_BYTES]
        lines.append(f"HIL etdump {dumps} begin: runs 1, size {len(dump)}, crc32 0x{zlib.crc32(dump):x}")
        first = seq
        for at in range(0, len(dump), FRAME_BYTES):
            chunk = dump[at:at + FRAME_BYTES]
            lines.append(f"HIL frame {seq} {len(chunk)} 0x{zlib.crc32(chunk):x} {base64.b64encode(chunk).decode()}")
            seq += 1
        lines.append(f"HIL etdump {dumps} end: {seq - first} frames")
        dumps += 1
    lines.append(f"HIL etdump stream end: {dumps} dumps, {seq} frames, {dumps} runs")
    return "".join(line + "\r\n" for line in lines)


def gdb_dump_seconds(payload: bytes, decode: object, repeats: int) -> tuple[list[float], list[float]]:
    """The GDB read-out of `payload` from QEMU and `decode()`, each `repeats` times, in turns."""
    with tempfile.TemporaryDirectory() as tmp, stopped_at_the_dump(payload, "et-hil stream benchmark",
                                                                   Path(tmp)) as (gdb, addr, size):
        out = Path(tmp) / "dump.bin"
        gdb.dump_memory(addr, size, out)
        assert out.read_bytes() == payload  # the untimed call of the GDB side
        return interleaved(lambda: gdb.dump_memory(addr, size, out), decode, repeats, warm_up=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--board", default="rt700", help="board file whose [serial].baudrate the console runs at")
    args = parser.parse_args()
    baud = int(load_board_config(args.board).get("serial.baudrate", 115200))
    payload = os.urandom(SIZE)
    text = framed(payload)
    check = lambda: [d.data for d in decode_stream(text)[0]]  # noqa: E731
    assert b"".join(check()) == payload  # the untimed call of the decoding side
    once(check)
    dump, decode = gdb_dump_seconds(payload, check, args.repeats)
    dump_s, decode_s = sorted(dump)[len(dump) // 2], sorted(decode)[len(decode) // 2]
    wire_s = len(text) * 10 / baud  # 8N1: ten bits on the wire a character
    console_s = max(wire_s, decode_s)
    mib = SIZE / (1 << 20)
    print(f"the ETDump out of the target, {mib:.0f} MiB ({len(text)} characters framed: {len(text) / SIZE:.2f} a byte)")
    print(f"  GDB read-out (dump binary memory, QEMU)   median {dump_s * 1000:9.1f} ms  {mib / dump_s:8.2f} MiB/s "
          f"({len(dump)} runs, interleaved)")
    print(f"  frame decoding on the host                median {decode_s * 1000:9.1f} ms  {mib / decode_s:8.2f} MiB/s "
          f"({len(decode)} runs, interleaved)")
    print(f"  console at {baud} baud (8N1)              {console_s:9.1f} s   {SIZE / console_s / 1024:8.2f} KiB/s "
          f"of ETDump (board '{args.board}')")
    print(f"  ratio console / GDB read-out: {console_s / dump_s:.0f}")
    print(f"  {load_line()}")


if __name__ == "__main__":
    main()
