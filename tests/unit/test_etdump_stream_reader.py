"""The streamed ETDump at the harness's end (hil.target.etdump_stream): a real socket console (pyserial
socket://, as QEMU's UART) fed with frames made by hand (test_etdump_frames), and ETDumps whose run data
ExecuTorch's own deserializer reads back. The whole path against the firmware on QEMU is
tests/system/test_etdump_stream.py."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from executorch.devtools.etdump import schema_flatcc as fb
from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
from test_etdump_frames import FRAME_BYTES, frame, stream, text
from test_serial_reader import console  # noqa: F401  (the fixture: a socket console and its run context)

from hil.base.errors import TargetError
from hil.records.etdump_flatc import serialize_etdump
from hil.target.etdump_stream import read_streamed_etdump


def etdump(name: str, start: int, runs: int) -> bytes:
    """A size-prefixed ETDump of `runs` blocks, each one Method::execute event from `start` on."""
    blocks = [fb.RunData(name=name, bundled_input_index=-1, allocators=None, events=[fb.Event(
        profile_event=fb.ProfileEvent(name="Method::execute", chain_index=0, instruction_id=-1, delegate_debug_id_int=None,
                                      delegate_debug_id_str=None, start_time=start + 100 * k, end_time=start + 100 * k + 50,
                                      delegate_debug_metadata=None),
        allocation_event=None, debug_event=None)]) for k in range(runs)]
    return serialize_etdump(fb.ETDumpFlatCC(version=0, run_data=blocks))


def test_the_batches_come_back_as_one_etdump_of_every_run(console, tmp_path: Path) -> None:
    server, ctx = console
    first, second = etdump("Execute", 1000, 3), etdump("Execute", 5000, 2)
    server.send(text(stream([(first, 3), (second, 2)])).encode())
    result, merged, record = read_streamed_etdump(ctx, tmp_path / "trace.etdump", timeout=10)
    assert (tmp_path / "trace.etdump").read_bytes() == merged and result.crc32 == zlib.crc32(merged)
    runs = deserialize_from_etdump_flatcc(merged).run_data
    starts = [run.events[0].profile_event.start_time for run in runs]
    assert starts == [1000, 1100, 1200, 5000, 5100]
    assert (record["dumps"], record["runs"], record["dump_runs"]) == (2, 5, [3, 2])


def test_a_corrupted_frame_fails_the_run_naming_it_and_keeps_what_arrived(console, tmp_path: Path) -> None:
    server, ctx = console
    first, second = etdump("Execute", 1000, 3), etdump("Execute", 5000, 40)
    lines = stream([(first, 3), (second, 40)])
    seq = -(-len(first) // FRAME_BYTES)  # the second dump's first frame
    good = second[:FRAME_BYTES]
    at = lines.index(frame(seq, good))
    lines[at] = frame(seq, bytes([good[0] ^ 1]) + good[1:], crc=zlib.crc32(good))
    server.send(text(lines).encode())
    with pytest.raises(TargetError) as err:
        read_streamed_etdump(ctx, tmp_path / "trace.etdump", timeout=10)
    message = str(err.value)
    assert f"frame {seq} is corrupted: expected crc32 0x{zlib.crc32(good):08x}" in message
    assert not (tmp_path / "trace.etdump").exists()
    assert (tmp_path / "trace.etdump.partial").read_bytes() == first  # the whole dump before the fault
    assert f"HIL frame {seq} " in (tmp_path / "serial.log").read_text()  # the frames' text stays in serial.log


def test_a_stream_that_stops_is_named_once_the_console_has_been_waited_for(console, tmp_path: Path) -> None:
    server, ctx = console
    lines = stream([(etdump("Execute", 1000, 3), 3)])
    server.send(text(lines[:-1]).encode())  # no end line: the target stopped streaming
    with pytest.raises(TargetError, match=r"cut short: no 'HIL etdump stream end' line \(after 1 whole dump"):
        read_streamed_etdump(ctx, tmp_path / "trace.etdump", timeout=1)
