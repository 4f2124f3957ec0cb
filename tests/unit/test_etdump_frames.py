"""The streamed ETDump's frame decoder (hil.records.etdump_frames), fed frames made here by hand: base64 and
zlib.crc32 of the test's own bytes, in the line format of firmware/common/hil_protocol.h."""

from __future__ import annotations

import base64
import re
import zlib
from pathlib import Path

import pytest

from hil.records.etdump_frames import StreamError, decode_stream

FRAME_BYTES = 180  # HIL_FRAME_BYTES
PROTOCOL = Path(__file__).resolve().parents[2] / "firmware" / "common" / "hil_protocol.h"


def frame(seq: int, data: bytes, *, crc: int | None = None) -> str:
    return f"HIL frame {seq} {len(data)} 0x{zlib.crc32(data) if crc is None else crc:x} {base64.b64encode(data).decode()}"


def dump_lines(index: int, data: bytes, runs: int, first_seq: int) -> list[str]:
    chunks = [data[at:at + FRAME_BYTES] for at in range(0, len(data), FRAME_BYTES)]
    return ([f"HIL etdump {index} begin: runs {runs}, size {len(data)}, crc32 0x{zlib.crc32(data):x}"]
            + [frame(first_seq + k, chunk) for k, chunk in enumerate(chunks)]
            + [f"HIL etdump {index} end: {len(chunks)} frames"])


def stream(dumps: list[tuple[bytes, int]]) -> list[str]:
    lines, seq = ["Run config: iterations 3, warm-up 0 (set by the debugger)", "HIL etdump stream: at most 2 runs per dump"], 0
    for index, (data, runs) in enumerate(dumps):
        lines += dump_lines(index, data, runs, seq)
        lines.append(f"Inference time: {100 + index} us")
        seq += -(-len(data) // FRAME_BYTES)
    lines.append(f"HIL etdump stream end: {len(dumps)} dumps, {seq} frames, {sum(r for _, r in dumps)} runs")
    return lines


FIRST, SECOND = bytes(range(256)) * 2, b"\x00\xffED00" * 50  # 512 B (3 frames) and 300 B (2 frames)


def text(lines: list[str]) -> str:
    return "\r\n".join(lines) + "\r\n"


def test_the_dumps_come_back_whole_and_in_order_between_other_console_lines() -> None:
    dumps, runs = decode_stream(text(stream([(FIRST, 2), (SECOND, 1)])))
    assert [(d.index, d.runs, d.data) for d in dumps] == [(0, 2, FIRST), (1, 1, SECOND)]
    assert runs == 3


def test_a_lost_frame_is_named_by_its_sequence_number() -> None:
    lines = stream([(FIRST, 2), (SECOND, 1)])
    lost = lines.pop(lines.index(frame(1, FIRST[180:360])))
    with pytest.raises(StreamError, match=r"frame 2 where frame 1 was expected \(frame\(s\) lost\)") as err:
        decode_stream(text(lines))
    assert lost and err.value.dumps == [] and err.value.partial == FIRST[:180]  # what arrived is kept


def test_reordered_frames_are_named() -> None:
    lines = stream([(FIRST, 2), (SECOND, 1)])
    one, two = lines.index(frame(3, SECOND[:180])), lines.index(frame(4, SECOND[180:]))
    lines[one], lines[two] = lines[two], lines[one]
    with pytest.raises(StreamError, match=r"frame 4 where frame 3 was expected") as err:
        decode_stream(text(lines))
    assert [d.data for d in err.value.dumps] == [FIRST]  # the first dump arrived whole


def test_a_repeated_frame_is_named() -> None:
    lines = stream([(FIRST, 2)])
    at = lines.index(frame(1, FIRST[180:360]))
    lines.insert(at + 1, lines[at])
    with pytest.raises(StreamError, match=r"frame 1 where frame 2 was expected \(frame\(s\) repeated or reordered\)"):
        decode_stream(text(lines))


def test_a_corrupted_frame_names_the_crc_it_should_have_and_the_one_read() -> None:
    lines = stream([(FIRST, 2)])
    at = lines.index(frame(2, FIRST[360:]))
    garbled = bytearray(FIRST[360:])
    garbled[7] ^= 0x10
    lines[at] = frame(2, bytes(garbled), crc=zlib.crc32(FIRST[360:]))
    expected, read = zlib.crc32(FIRST[360:]), zlib.crc32(bytes(garbled))
    with pytest.raises(StreamError, match=rf"frame 2 is corrupted: expected crc32 0x{expected:08x} and 152 B, "
                                          rf"read crc32 0x{read:08x} and 152 B"):
        decode_stream(text(lines))


def test_a_garbled_line_and_a_cut_stream_are_named() -> None:
    lines = stream([(FIRST, 2)])
    at = lines.index(frame(1, FIRST[180:360]))
    cut = lines[:at]
    lines[at] = lines[at].replace("HIL frame 1 180", "HIL frame 1 1#0")
    with pytest.raises(StreamError, match=r"garbled stream line \(expected frame 1\)"):
        decode_stream(text(lines))
    with pytest.raises(StreamError, match=r"cut short.*inside dump 0 after frame 0"):
        decode_stream(text(cut))


def test_a_lost_end_line_and_a_dump_that_does_not_add_up_are_named() -> None:
    lines = stream([(FIRST, 2), (SECOND, 1)])
    without_end = [line for line in lines if line != "HIL etdump 0 end: 3 frames"]
    with pytest.raises(StreamError, match=r"dump 1 begins before dump 0 ended"):
        decode_stream(text(without_end))
    wrong_size = [line.replace("size 512,", "size 513,") for line in lines]
    with pytest.raises(StreamError, match=r"dump 0 does not add up: the firmware sent 3 frames, 513 B"):
        decode_stream(text(wrong_size))


def test_the_formats_decoded_are_the_firmwares() -> None:
    """The lines made here, and so the decoder's, are hil_protocol.h's formats filled in (C's %u, %x, %s read
    the same in Python's % formatting), with HIL_FRAME_BYTES bytes a frame."""
    header = PROTOCOL.read_text()
    formats = dict(re.findall(r'#define (HIL_FMT_(?:FRAME|DUMP_BEGIN|DUMP_END|STREAM_END|STREAM_START)) "([^"]*)"', header))
    assert int(re.search(r"#define HIL_FRAME_BYTES (\d+)", header).group(1)) == FRAME_BYTES
    made = stream([(FIRST, 2)])
    assert made[1] == formats["HIL_FMT_STREAM_START"] % 2
    assert made[2] == formats["HIL_FMT_DUMP_BEGIN"] % (0, 2, 512, zlib.crc32(FIRST))
    assert made[3] == formats["HIL_FMT_FRAME"] % (0, 180, zlib.crc32(FIRST[:180]), base64.b64encode(FIRST[:180]).decode())
    assert made[6] == formats["HIL_FMT_DUMP_END"] % (0, 3)
    assert made[-1] == formats["HIL_FMT_STREAM_END"] % (1, 3, 2)


def test_a_line_still_arriving_is_not_called_corrupted() -> None:
    lines = stream([(FIRST, 2)])
    at = lines.index(frame(1, FIRST[180:360]))
    arriving = text(lines[:at]) + lines[at][:40]  # the console has half of frame 1 so far
    with pytest.raises(StreamError, match=r"cut short.*inside dump 0 after frame 0") as err:
        decode_stream(arriving)
    assert err.value.partial == FIRST[:180]
