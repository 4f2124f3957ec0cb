"""The Neutron profile record layout and the port of NeutronBackend.cpp's record -> event rule.

Expected events are written out by hand from the rule in ExecuTorch's backends/nxp/runtime/NeutronBackend.cpp
(the loop under ET_EVENT_TRACER_ENABLED that posts event_tracer_log_profiling_delegate), not computed by the code:
a kernel event spans the records folded into it but takes its metadata byte from the CALLARGS record's own
start stamp; the last event starts at the last record's start and takes that record's start functionCode.
"""

from __future__ import annotations

import struct

import pytest

from hil.base.errors import AnalysisError
from hil.replay.neutron_records import (
    KOPC_CALLARGS,
    DelegateEvent,
    KernelSlot,
    ProfileRecord,
    Stamp,
    events_from_records,
    layout_delegate_call,
    pack_records,
    unpack_records,
)


def rec(start_op: int, fc: int, t0: int, stop_op: int, t1: int) -> ProfileRecord:
    return ProfileRecord(Stamp(1, start_op, fc, 0, t0), Stamp(2, stop_op, fc, 0, t1))


def test_record_is_16_bytes_little_endian() -> None:
    buf = pack_records([ProfileRecord(Stamp(1, 6, 9, 3, 0x01020304), Stamp(2, 6, 9, 3, 0xA0B0C0D0))])
    assert buf == bytes([1, 6, 9, 3, 4, 3, 2, 1, 2, 6, 9, 3, 0xD0, 0xC0, 0xB0, 0xA0])
    assert unpack_records(buf) == [ProfileRecord(Stamp(1, 6, 9, 3, 0x01020304), Stamp(2, 6, 9, 3, 0xA0B0C0D0))]


def test_times_wrap_at_32_bits_and_truncated_buffer_is_refused() -> None:
    buf = pack_records([rec(6, 1, 2**32 + 5, 6, 2**32 + 9)])
    assert struct.unpack_from("<I", buf, 4)[0] == 5
    with pytest.raises(AnalysisError, match="not a whole number"):
        unpack_records(buf[:-1])


def test_hand_computed_folding_and_dump_event() -> None:
    records = [
        rec(1, 5, 100, 1, 150),  # setup: folded into the next kernel
        rec(6, 1, 160, KOPC_CALLARGS, 400),  # kernel 0: start 100 (folded), metadata = its own start's fc (1)
        rec(6, 4, 410, KOPC_CALLARGS, 500),  # kernel 1: nothing folded
        rec(6, 3, 510, 2, 530),  # start says 6 but stop opCode 2: folded (the rule reads the stop)
        rec(6, 3, 540, KOPC_CALLARGS, 900),  # kernel 2: start 510
        rec(3, 0, 910, 3, 950),  # trailing sync: no event of its own
    ]
    events = events_from_records(unpack_records(pack_records(records)), pal_before=10_000, pal_after=12_345)
    assert events == [
        DelegateEvent(0, 100, 400, b"\x01"),
        DelegateEvent(1, 410, 500, b"\x04"),
        DelegateEvent(2, 510, 900, b"\x03"),
        # dump: start = last record's start; end = its stop + (12345 - 10000) PAL ticks (mixed units)
        DelegateEvent(3, 910, 950 + 2_345, b"\x00"),
    ]


def test_dump_event_uses_last_record_even_when_it_is_a_kernel() -> None:
    events = events_from_records([rec(6, 7, 10, 6, 20), rec(6, 8, 30, 6, 70)], pal_before=0, pal_after=100)
    # the dump event's metadata is the last record's start functionCode, here a kernel's (8)
    assert events[-1] == DelegateEvent(2, 30, 170, b"\x08")
    assert [e.delegate_debug_id for e in events] == [0, 1, 2]
    assert events_from_records([], 0, 10) == []


def test_layout_then_port_gives_hand_computed_kernel_spans() -> None:
    kernels = [KernelSlot(function_code=1, compute_ticks=1000, fetch_ticks=200), KernelSlot(4, 300)]
    records, last_stop = layout_delegate_call(kernels, 5_000, setup_ticks=50, sync_ticks=30, gap_ticks=10)
    # setup 5000-5050, fetch 5060-5260, conv 5270-6270, pool 6280-6580, sync 6590-6620
    assert [(r.start.op_code, r.start.time, r.stop.time) for r in records] == [
        (1, 5000, 5050), (2, 5060, 5260), (6, 5270, 6270), (6, 6280, 6580), (3, 6590, 6620)]
    # preparatory records carry the simulation's own code 0x7F, the closing sync record 0 (dump)
    assert [r.start.function_code for r in records] == [0x7F, 0x7F, 1, 4, 0]
    assert last_stop == 6620
    events = events_from_records(records, pal_before=4_900, pal_after=7_000)
    assert events == [
        DelegateEvent(0, 5000, 6270, b"\x01"),  # setup + fetch + compute of kernel 0
        DelegateEvent(1, 6280, 6580, b"\x04"),
        DelegateEvent(2, 6590, 6620 + 2_100, b"\x00"),
    ]
    with pytest.raises(ValueError):
        layout_delegate_call([], 0, setup_ticks=1, sync_ticks=1, gap_ticks=0)
