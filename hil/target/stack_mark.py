"""The stack's high-water mark: how deep the firmware's stack ever went, read at the ETDump breakpoint.

The firmware paints [__StackLimit, sp) with PAINT_WORD at start (firmware/common/hil_stack.h); the
deepest call since overwrote the paint from the top down. At `hil_etdump_ready`, after every
inference, the harness reads the whole region in one memory read and finds the lowest word that no
longer holds the pattern: the stack used is from there to __StackTop. A budget on it
(`stack_bytes_max`) decides whether a model fits a board's stack, the figure the allocator and the
planned memory do not give.

A word the program happened to write with the pattern's value reads as unused (the usual limit of
painting); the pattern is odd and unlikely as a pointer or a small integer. Reading the mark never
fails a run: a figure that cannot be had is None with a note saying why.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from hil.base.errors import TargetError
from hil.config.board_config import MemoryRegion
from hil.target.gdbmi import GdbMiSession

# firmware/common/hil_stack.h: HIL_STACK_PAINT_WORD, and the link scripts' bound symbols.
PAINT_WORD = 0xC5AC5AC5
LIMIT_SYMBOL = "__StackLimit"
TOP_SYMBOL = "__StackTop"
WORD = 4
# A stack larger than this is no stack the firmware painted (a wrong symbol): not read.
MAX_STACK_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class StackMark:
    """The painted stack's bounds and how much of it was used; `used_bytes` None when unknown (`note` says why)."""

    limit: int | None
    top: int | None
    used_bytes: int | None
    overflowed: bool = False
    note: str | None = None

    @property
    def size_bytes(self) -> int | None:
        return None if self.limit is None or self.top is None else self.top - self.limit

    def to_dict(self) -> dict[str, Any]:
        """profile.json's `stack` section (docs/profile-format.md)."""
        size = self.size_bytes
        record: dict[str, Any] = {
            "used_bytes": self.used_bytes,
            "size_bytes": size,
            "free_bytes": None if self.used_bytes is None or size is None else size - self.used_bytes,
            "limit": None if self.limit is None else f"0x{self.limit:08x}",
            "top": None if self.top is None else f"0x{self.top:08x}",
            "overflowed": self.overflowed,
            "method": f"painted with 0x{PAINT_WORD:08x}, read at the ETDump breakpoint",
        }
        if self.note:
            record["note"] = self.note
        return record


def high_water(region: bytes, limit: int, top: int, word: int = PAINT_WORD) -> StackMark:
    """The mark in `region`, the bytes of [limit, top): the lowest word not holding `word` starts the used part.

    Every word overwritten, none left painted: the image does not paint (used unknown). The bottom
    word overwritten but paint left above it: the stack reached its limit (used = its size, overflowed).
    """
    count = len(region) // WORD
    words = struct.unpack(f"<{count}I", region[:count * WORD])
    lowest = next((index for index, value in enumerate(words) if value != word), count)
    if lowest == 0:
        if word not in words:
            return StackMark(limit, top, None, note=f"no word of [0x{limit:08x}, 0x{top:08x}) holds the paint"
                             f" 0x{word:08x}: the image does not paint its stack (firmware/common/hil_stack.h)")
        return StackMark(limit, top, top - limit, overflowed=True,
                         note="the stack's lowest word is overwritten: it reached __StackLimit (or overflowed it)")
    return StackMark(limit, top, top - (limit + lowest * WORD))


def read_stack_mark(gdb: GdbMiSession, regions: list[MemoryRegion]) -> StackMark:
    """At the breakpoint: the bounds from the image's symbols, the region in one memory read, its mark."""
    try:
        limit = gdb.evaluate_int(f"&{LIMIT_SYMBOL}")
        top = gdb.evaluate_int(f"&{TOP_SYMBOL}")
    except TargetError:
        return StackMark(None, None, None, note=f"the image has no {LIMIT_SYMBOL}/{TOP_SYMBOL} symbols")
    size = top - limit
    if not 0 < size <= MAX_STACK_BYTES or size % WORD or limit % WORD:
        return StackMark(limit, top, None, note=f"{LIMIT_SYMBOL}..{TOP_SYMBOL} is no stack: {size} bytes")
    if regions and not any(region.contains(limit, size) for region in regions):
        return StackMark(limit, top, None, note="the stack lies outside the board's RAM regions: not read")
    try:
        region = gdb.read_memory(limit, size, chunk=size)
    except TargetError as exc:
        return StackMark(limit, top, None, note=f"the stack could not be read: {exc}")
    return high_water(region, limit, top)
