"""Read the debug buffer of intermediate outputs through the debugger, at the ETDump's breakpoint.

The firmware (built with HIL_DEBUG_BUFFER_SIZE > 0) has published `hil_debug_result.buf` / `.size`
(the bytes its data sink used) and printed `Debug buf: 0x..., size: N, crc32: 0x...` before it
stopped there (firmware/common/hil_result.h, hil_protocol.h). What is read must agree with the line
and its CRC-32, and lie inside the board's RAM, as for the ETDump.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from hil.config.board_config import MemoryRegion
from hil.base.errors import TargetError
from hil.target.capture import CONSOLE_LAG_S, RunContext
from hil.target.gdbmi import GdbMiSession

DEBUG_RESULT_EXPR = "hil_debug_result"
DEBUG_FILE = "debug.bin"
DEBUG_LINE = re.compile(r"Debug buf: (0x[0-9a-fA-F]{1,16}), size: (\d{1,20}), crc32: 0x([0-9a-fA-F]{1,8})[^\n]*\n")
NO_BUFFER = ("the image has no debug buffer (hil_debug_result is empty): build it with "
             "-DHIL_DEBUG_BUFFER_SIZE=<bytes> (the harness does for the QEMU runtime image)")


def read_out_debug_buffer(gdb: GdbMiSession, ctx: RunContext, regions: list[MemoryRegion], out_path: Path) -> bytes:
    """Dump the debug buffer to `out_path` and return its bytes, checked against the console's line."""
    try:
        address = gdb.evaluate_int(f"({DEBUG_RESULT_EXPR}).buf")
        size = gdb.evaluate_int(f"({DEBUG_RESULT_EXPR}).size")
    except TargetError as exc:
        raise ctx.failure(f"cannot read '{DEBUG_RESULT_EXPR}': {exc} ({NO_BUFFER})") from exc
    if address == 0 or size == 0:
        raise ctx.failure(NO_BUFFER)
    if not any(region.contains(address, size) for region in regions):
        raise ctx.failure(f"'{DEBUG_RESULT_EXPR}' = [0x{address:08x}, +{size}) lies outside the board's RAM; "
                          "refusing to dump it")
    try:
        match = ctx.serial.expect(DEBUG_LINE, CONSOLE_LAG_S)
    except TargetError as exc:
        raise ctx.failure(f"the console never printed 'Debug buf: ..., size: ..., crc32: ...': {exc}") from exc
    printed = (int(match.group(1), 16), int(match.group(2)))
    if printed != (address, size):
        raise ctx.failure(f"console says debug buf 0x{printed[0]:08x}, size {printed[1]} but GDB read "
                          f"0x{address:08x}, size {size}")
    gdb.dump_memory(address, size, out_path)
    data = Path(out_path).read_bytes()
    crc = int(match.group(3), 16)
    if zlib.crc32(data) != crc:
        raise ctx.failure(f"debug buffer CRC-32 mismatch: the firmware printed 0x{crc:08x} for its {size} bytes, "
                          f"the bytes read have 0x{zlib.crc32(data):08x}")
    return data
