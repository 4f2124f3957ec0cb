"""Neutron profile records and the runtime's record -> ETDump-event rule, ported to Python.

Why this exists: without the eIQ Neutron SDK nothing produces a real Neutron profile buffer, so the
simulation lays one out itself and then turns it into delegate events with *the same rule* the
runtime uses (ExecuTorch ``backends/nxp/runtime/NeutronBackend.cpp``, the loop that posts
``event_tracer_log_profiling_delegate`` under ``ET_EVENT_TRACER_ENABLED``).  Keeping
the two steps apart means the oddities of the runtime (folded setup records, a final "profiling dump"
event whose end mixes Neutron time units with PAL ticks) reach the Inspector exactly as on a board.

Layout.  One record is 16 bytes: a start stamp then a stop stamp, each
``{u8 eventCode, u8 opCode, u8 functionCode, u8 timestampCode, u32 time}`` little-endian.

The rule (``events_from_records``):

* walk the records in order; remember the *first* start stamp seen since the last logged event;
* a record whose stop ``opCode != 6`` (KOPC_CALLARGS) logs nothing: it is folded into the next event;
* a record whose stop ``opCode == 6`` logs ``event(name=None, delegate_debug_id=index++,
  start=<remembered start>.time, end=stop.time, metadata=bytes([<this record's start>.functionCode]))``:
  the time spans the folded records, the metadata comes from the CALLARGS record's *own* start stamp
  (``&neutron_events[i].startEvent.functionCode`` in the runtime's loop);
* after the walk one more event, ``delegate_debug_id=index``, covers the profiling dump:
  ``start = last record's start.time``, ``end = last record's stop.time + (pal_after - pal_before)``
  where the PAL ticks are taken around ``neutronRunBlocking``.  That end adds PAL ticks to a Neutron
  timestamp; the runtime does this, so the port does too.  Its metadata is the last record's start
  ``functionCode`` (``&neutron_events[events_num - 1].startEvent.functionCode``), which the Neutron
  firmware sets to 0 (= profiling dump) on its closing record.

Only opCode 6 has a meaning fixed by the runtime.  The other codes below are the simulation's own,
named ``SIM_*`` so nobody mistakes them for documented Neutron firmware codes.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Sequence

from hil.base.errors import AnalysisError

KOPC_CALLARGS = 6
"""The only opCode the runtime looks at: a record with this stop opCode is a Neutron kernel call."""

SIM_EVENT_START = 1
SIM_EVENT_STOP = 2
SIM_OPC_GRAPH_SETUP = 1
"""Simulated: loading the microcode / graph descriptors before the first kernel."""
SIM_OPC_WEIGHT_FETCH = 2
"""Simulated: DMA of a kernel's weights into NPU-local memory, right before the kernel."""
SIM_OPC_SYNC = 3
"""Simulated: final synchronisation after the last kernel (it becomes the dump event's start)."""

DUMP_FUNCTION_CODE = 0
"""Function code of the closing record, hence the last event's metadata byte: 0 = profiling dump."""
SIM_FUNCTION_PREPARE = 0x7F
"""Simulated: the function code of preparatory records (setup, weight fetch). The runtime ignores it
(only a CALLARGS record's own start names a kernel), so it is chosen unlike any kernel code: a port
that took metadata from a folded record would show it."""

_STAMP = struct.Struct("<BBBBI")
RECORD_SIZE = 2 * _STAMP.size
U32_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class Stamp:
    """One half of a record: what happened and when, in Neutron time units (u32, wraps)."""

    event_code: int
    op_code: int
    function_code: int
    timestamp_code: int
    time: int


@dataclass(frozen=True)
class ProfileRecord:
    """A start/stop pair as the Neutron firmware writes it into the profile buffer."""

    start: Stamp
    stop: Stamp


@dataclass(frozen=True)
class DelegateEvent:
    """What the runtime posts with ``event_tracer_log_profiling_delegate`` (name is always null)."""

    delegate_debug_id: int
    start_time: int
    end_time: int
    metadata: bytes


def pack_records(records: Iterable[ProfileRecord]) -> bytes:
    """Serialize records to the 16-byte-per-record buffer layout the firmware writes."""
    out = bytearray()
    for rec in records:
        for s in (rec.start, rec.stop):
            out += _STAMP.pack(s.event_code, s.op_code, s.function_code, s.timestamp_code, s.time & U32_MASK)
    return bytes(out)


def unpack_records(buf: bytes) -> list[ProfileRecord]:
    """Parse a profile buffer; a length that is not a multiple of 16 means a truncated dump (AnalysisError)."""
    if len(buf) % RECORD_SIZE:
        raise AnalysisError(
            f"Neutron profile buffer of {len(buf)} bytes is not a whole number of {RECORD_SIZE}-byte records"
        )
    stamps = [Stamp(*_STAMP.unpack_from(buf, off)) for off in range(0, len(buf), _STAMP.size)]
    return [ProfileRecord(stamps[i], stamps[i + 1]) for i in range(0, len(stamps), 2)]


def events_from_records(records: Sequence[ProfileRecord], pal_before: int, pal_after: int) -> list[DelegateEvent]:
    """The runtime's rule (module docstring), record for record.

    `pal_before`/`pal_after` are the PAL ticks read just before and after ``neutronRunBlocking``.
    An empty buffer yields no events: with nothing recorded there is no "last record" to anchor the
    dump event on, and the runtime only posts events when the profile holds data.
    """
    events: list[DelegateEvent] = []
    if not records:
        return events
    index = 0
    first_start: Stamp | None = None
    for rec in records:
        if first_start is None:
            first_start = rec.start
        if rec.stop.op_code != KOPC_CALLARGS:
            continue
        events.append(DelegateEvent(index, first_start.time, rec.stop.time, bytes([rec.start.function_code])))
        index += 1
        first_start = None
    last = records[-1]
    end = last.stop.time + (pal_after - pal_before)
    events.append(DelegateEvent(index, last.start.time, end, bytes([last.start.function_code])))
    return events


@dataclass(frozen=True)
class KernelSlot:
    """Ticks of one simulated Neutron kernel, as the cost model gives them."""

    function_code: int
    compute_ticks: int
    fetch_ticks: int = 0
    """Weight DMA before the kernel; 0 = no separate fetch record."""


def _record(op_code: int, function_code: int, start: int, stop: int) -> ProfileRecord:
    return ProfileRecord(
        Stamp(SIM_EVENT_START, op_code, function_code, 0, start & U32_MASK),
        Stamp(SIM_EVENT_STOP, op_code, function_code, 0, stop & U32_MASK),
    )


def layout_delegate_call(
    kernels: Sequence[KernelSlot], t0: int, *, setup_ticks: int, sync_ticks: int, gap_ticks: int
) -> tuple[list[ProfileRecord], int]:
    """Lay out the records one delegate call writes, starting at Neutron time `t0`.

    Order: a graph-setup record (folded into kernel 0), then per kernel an optional weight-fetch record
    (folded into that kernel) and its CALLARGS record, then a sync record (the dump event's anchor,
    function code 0). Preparatory records carry SIM_FUNCTION_PREPARE: the runtime takes a kernel's
    metadata from its CALLARGS record, never from the records folded into it.
    Returns the records and the Neutron time at which the last record stops.
    """
    if not kernels:
        raise ValueError("a Neutron delegate call needs at least one kernel")
    records: list[ProfileRecord] = []
    t = t0

    def emit(op_code: int, function_code: int, ticks: int) -> None:
        nonlocal t
        records.append(_record(op_code, function_code, t, t + ticks))
        t += ticks + gap_ticks

    emit(SIM_OPC_GRAPH_SETUP, SIM_FUNCTION_PREPARE, setup_ticks)
    for k in kernels:
        if k.fetch_ticks > 0:
            emit(SIM_OPC_WEIGHT_FETCH, SIM_FUNCTION_PREPARE, k.fetch_ticks)
        emit(KOPC_CALLARGS, k.function_code, k.compute_ticks)
    emit(SIM_OPC_SYNC, DUMP_FUNCTION_CODE, sync_ticks)
    return records, t - gap_ticks
