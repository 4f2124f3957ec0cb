"""The ETDump streamed over the console, read back: the frames of firmware/common/hil_protocol.h.

Why frames: a console line can be lost (a UART overrun, a reader that attached late), repeated or
garbled, and one long blob would only say "the CRC is wrong". Each frame carries its sequence number
(counted over the whole run from 0) and the CRC-32 of its bytes (zlib.crc32, as hil_crc32.c); each
dump (one batch of runs) is announced with its size and CRC-32 and closed with its frame count. The
decoder names the first frame at fault: its number, and the CRC expected and read, or the number
expected and the one that came. What arrived before the fault is kept (`StreamError.dumps`,
`.partial`) so a failed run still leaves it on disk.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from dataclasses import dataclass, field

from hil.base.errors import TargetError

STREAM_START = re.compile(r"HIL etdump stream: at most (\d+) runs per dump")
DUMP_BEGIN = re.compile(r"HIL etdump (\d+) begin: runs (\d+), size (\d+), crc32 0x([0-9a-fA-F]{1,8})\s*$")
FRAME = re.compile(r"HIL frame (\d+) (\d+) 0x([0-9a-fA-F]{1,8}) ([A-Za-z0-9+/=]*)\s*$")
DUMP_END = re.compile(r"HIL etdump (\d+) end: (\d+) frames\s*$")
STREAM_END = re.compile(r"HIL etdump stream end: (\d+) dumps, (\d+) frames, (\d+) runs\s*$")
# Any line of the stream, whole or garbled: a line that starts like one but matches none is a fault.
_STREAM_LINE = re.compile(r"HIL (?:frame|etdump) ")


@dataclass(frozen=True)
class Dump:
    """One batch's ETDump as the firmware sent it: its number, its runs and its bytes (CRC-checked)."""

    index: int
    runs: int
    data: bytes


class StreamError(TargetError):
    """A frame was lost, repeated, reordered or corrupted (the message names it), or the stream ended early.
    `dumps` holds the whole dumps before the fault, `partial` the checked bytes of the dump it broke."""

    def __init__(self, message: str, dumps: list[Dump], partial: bytes) -> None:
        super().__init__(message)
        self.dumps = dumps
        self.partial = partial


@dataclass
class _Reader:
    """The decoder's state: what is complete, the dump under way, the next sequence number."""

    dumps: list[Dump] = field(default_factory=list)
    seq: int = 0
    open: tuple[int, int, int, int] | None = None  # index, runs, size, crc32 of the dump under way
    frames: int = 0
    chunks: list[bytes] = field(default_factory=list)
    ended: tuple[int, int, int] | None = None

    def fail(self, what: str) -> StreamError:
        return StreamError(what, list(self.dumps), b"".join(self.chunks))


def decode_stream(text: str) -> tuple[list[Dump], int]:
    """The dumps of a streamed run's console `text`, in order, and the run count the end line states.

    StreamError names the first fault: a frame out of sequence (lost, repeated or reordered), one whose
    CRC-32 or length is not its bytes', a dump whose size, CRC or frame count disagrees, a garbled
    stream line, or no end line (the stream was cut short).
    """
    reader = _Reader()
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")):
        lines.pop()  # still arriving: a line cut here is no fault of the line's
    for number, line in enumerate(lines, 1):
        at = line.find("HIL ")
        if at < 0 or not _STREAM_LINE.match(line, at):
            continue
        _line(reader, line[at:], number)
    if reader.ended is None:
        where = (f"inside dump {reader.open[0]} after frame {reader.seq - 1}" if reader.open is not None
                 else f"after {len(reader.dumps)} whole dump(s) and {reader.seq} frame(s)")
        raise reader.fail(f"the ETDump stream was cut short: no 'HIL etdump stream end' line ({where})")
    dumps, frames, runs = reader.ended
    if (dumps, frames) != (len(reader.dumps), reader.seq):
        raise reader.fail(f"the stream's end line says {dumps} dumps, {frames} frames, but {len(reader.dumps)} "
                          f"dumps, {reader.seq} frames arrived")
    if runs != sum(d.runs for d in reader.dumps):
        raise reader.fail(f"the stream's end line says {runs} runs, its dumps hold {sum(d.runs for d in reader.dumps)}")
    return reader.dumps, runs


def _line(reader: _Reader, line: str, number: int) -> None:
    """Take one stream line (line `number` of the console) into `reader`; StreamError at the first fault."""
    if reader.ended is not None:
        raise reader.fail(f"console line {number}: a stream line after the stream's end line: {line[:80]!r}")
    if (frame := FRAME.match(line)) is not None:
        _frame(reader, frame, number)
    elif (begin := DUMP_BEGIN.match(line)) is not None:
        if reader.open is not None:
            raise reader.fail(f"console line {number}: dump {begin.group(1)} begins before dump {reader.open[0]} "
                              f"ended (its end line was lost after frame {reader.seq - 1})")
        index = int(begin.group(1))
        if index != len(reader.dumps):
            raise reader.fail(f"console line {number}: dump {index} begins where dump {len(reader.dumps)} was expected"
                              " (a dump lost or reordered)")
        reader.open = (index, int(begin.group(2)), int(begin.group(3)), int(begin.group(4), 16))
        reader.frames, reader.chunks = 0, []
    elif (end := DUMP_END.match(line)) is not None:
        _close(reader, int(end.group(1)), int(end.group(2)), number)
    elif (done := STREAM_END.match(line)) is not None:
        if reader.open is not None:
            raise reader.fail(f"console line {number}: the stream ends inside dump {reader.open[0]}")
        reader.ended = (int(done.group(1)), int(done.group(2)), int(done.group(3)))
    elif not STREAM_START.match(line):
        raise reader.fail(f"console line {number}: a garbled stream line (expected frame {reader.seq}): {line[:80]!r}")


def _frame(reader: _Reader, frame: re.Match[str], number: int) -> None:
    seq, size, crc = int(frame.group(1)), int(frame.group(2)), int(frame.group(3), 16)
    if reader.open is None:
        raise reader.fail(f"console line {number}: frame {seq} outside any dump (a dump's begin line was lost)")
    if seq != reader.seq:
        what = "lost" if seq > reader.seq else "repeated or reordered"
        raise reader.fail(f"console line {number}: frame {seq} where frame {reader.seq} was expected "
                          f"(frame(s) {what})")
    try:
        data = base64.b64decode(frame.group(4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise reader.fail(f"console line {number}: frame {seq} is not base64 ({exc}); expected crc32 0x{crc:08x}") from exc
    read = zlib.crc32(data)
    if read != crc or len(data) != size:
        raise reader.fail(f"console line {number}: frame {seq} is corrupted: expected crc32 0x{crc:08x} and {size} B, "
                          f"read crc32 0x{read:08x} and {len(data)} B")
    reader.chunks.append(data)
    reader.seq += 1
    reader.frames += 1


def _close(reader: _Reader, index: int, frames: int, number: int) -> None:
    if reader.open is None or reader.open[0] != index:
        raise reader.fail(f"console line {number}: dump {index} ends but it never began (its begin line was lost)")
    _, runs, size, crc = reader.open
    data = b"".join(reader.chunks)
    read = zlib.crc32(data)
    if frames != reader.frames or len(data) != size or read != crc:
        raise reader.fail(f"console line {number}: dump {index} does not add up: the firmware sent {frames} frames, "
                          f"{size} B, crc32 0x{crc:08x}; read {reader.frames} frames, {len(data)} B, crc32 0x{read:08x}")
    reader.dumps.append(Dump(index, runs, data))
    reader.open, reader.chunks, reader.frames = None, [], 0
