"""The streamed ETDump transport at the breakpoint: the frames the console carried, reassembled into one dump.

With `[debug].etdump_transport = "console"` the firmware prints each batch's ETDump in frames while it
runs (hil.records.etdump_frames) and stops at `hil_etdump_ready` with nothing to read out. Here the
console's frames are decoded and the batches' run data merged into one ETDump (hil.records.etdump_flatc),
so the Inspector sees every run. A frame at fault fails the run (TargetError: exit 3) and what arrived
stays: the frames' text in serial.log, the whole dumps and the broken one's checked bytes in
`<trace>.partial`.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from hil.base import atomic
from hil.base.errors import AnalysisError, TargetError
from hil.records.etdump_flatc import merge_etdumps
from hil.records.etdump_frames import STREAM_END, StreamError, decode_stream
from hil.config.board_config import MemoryRegion
from hil.target.capture import CONSOLE_LAG_S, EtdumpResult, RunContext, read_out_etdump
from hil.target.gdbmi import GdbMiSession


def partial_path(out_path: Path) -> Path:
    """Where a failed stream's bytes go: beside the ETDump it would have been."""
    return Path(out_path).with_name(Path(out_path).name + ".partial")


def read_streamed_etdump(ctx: RunContext, out_path: Path, start: int = 0,
                         timeout: float = CONSOLE_LAG_S) -> tuple[EtdumpResult, bytes, dict[str, Any]]:
    """At the breakpoint: wait for the stream's end line, decode the frames printed from `start` on, write the
    merged ETDump to `out_path`; returns it as a result (address 0), its bytes and the manifest's record."""
    try:
        ctx.serial.expect(STREAM_END, timeout)
    except TargetError:  # decoded anyway: the decoder says what is missing, not only that the line is
        pass
    try:
        dumps, runs = decode_stream(ctx.serial.text[start:])
    except StreamError as exc:
        kept = _keep_partial(out_path, [d.data for d in exc.dumps] + [exc.partial])
        raise ctx.failure(f"the streamed ETDump is broken: {exc} ({len(exc.dumps)} whole dump(s) before it; "
                          f"{kept}; the frames' text is in the serial log)") from exc
    try:
        etdump = merge_etdumps([d.data for d in dumps])
    except AnalysisError as exc:
        kept = _keep_partial(out_path, [d.data for d in dumps])
        raise ctx.failure(f"the streamed ETDump cannot be merged: {exc} ({kept})") from exc
    atomic.write_bytes(out_path, etdump)
    partial_path(out_path).unlink(missing_ok=True)
    # Every frame and every dump was CRC-checked against what the firmware printed for it (the decoder).
    record = {"checked": True, "transport": "console", "dumps": len(dumps), "runs": runs,
              "dump_runs": [d.runs for d in dumps], "streamed_bytes": sum(len(d.data) for d in dumps),
              "read": f"0x{zlib.crc32(etdump):08x}"}
    return EtdumpResult(0, len(etdump), zlib.crc32(etdump)), etdump, record


def _keep_partial(out_path: Path, parts: list[bytes]) -> str:
    """The bytes that arrived, concatenated (whole dumps, then the broken one's checked frames), in the partial file."""
    data = b"".join(parts)
    if not data:
        return "no frame arrived whole"
    path = partial_path(out_path)
    try:
        atomic.write_bytes(path, data)
    except OSError as exc:
        return f"the {len(data)} B that arrived not kept: {exc}"
    return f"the {len(data)} B that arrived are in {path}"


def read_out(gdb: GdbMiSession, ctx: RunContext, stream: bool, expr: str, regions: list[MemoryRegion],
             out_path: Path, start: int = 0, *, timeout: float = CONSOLE_LAG_S
             ) -> tuple[EtdumpResult, bytes, dict[str, Any]]:
    """At the breakpoint, by the plan's transport: the streamed frames from console position `start` on, or the
    debugger's read-out of `expr` (hil.target.capture); the result, its bytes, and what the manifest says of its check.
    `timeout`: how long the console may lag behind the target to deliver the stream's end line."""
    if stream:
        return read_streamed_etdump(ctx, out_path, start, timeout)
    result, etdump = read_out_etdump(gdb, ctx, expr, regions, out_path)
    return result, etdump, result.crc_record(etdump)
