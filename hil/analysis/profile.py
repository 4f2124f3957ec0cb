"""ETDump + ETRecord -> the profile dict (written as profile.json by the pipeline).

The Inspector is asked for raw values in the runtime's own unit (source = target =
TimeScale.CYCLES gives a scale factor of exactly 1 for CPU events, and delegate events are
taken raw when no converter is given); the conversion to microseconds is done
here, explicitly, because the RT700 runtime writes PAL ticks (DWT cycles) for CPU events and
Neutron time units for delegate events, which no single Inspector scale can express.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.records import events as ev
from hil.analysis.blocks import Inspected, inspect_etdump, read_etrecord
from hil.records.console import ConsoleFacts
from hil.records.module_names import event_places
from hil.records.profile_model import SCHEMA
from hil.analysis.pairing import check_etrecord_matches_pte, check_events
from hil.records.statistics import percentile, summarize
from hil.analysis.timescale import TimeScale, board_time_scale  # noqa: F401  (re-exported: callers import it here)
from hil.analysis.totals import iterations_of, main_method, method_events, p50, rounded, totals_from_events
from hil.base.defaults import MIN_ITERATIONS
from hil.base.errors import AnalysisError
from hil.records.pte import pte_memory

_ETDUMP_ID = b"ED00"


@dataclass
class EventRow:
    """One Inspector event of one method, classified and scaled, before it becomes JSON."""

    name: str
    method: str
    delegated: bool
    backend: str | None
    op_types: list[str]
    delegate_debug_id: int | str | None
    instruction_id: int | None
    metadata: dict[str, Any] | None
    times_us: list[float]
    start: float
    modules: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    kind: str = ""
    call_overhead_us: list[float] | None = None
    last_of_delegate: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_json(self, *, exact: bool = False) -> dict[str, Any]:
        """The public event: identity, times, and their statistics, rounded once to the nanosecond.

        Times are held unrounded (ticks / clock) and every statistic is taken from them before it
        is rounded. `exact=True` gives the times unrounded: what totals are summed from, so a sum
        of many events is not off by their rounding.
        """
        keep = (lambda values: list(values)) if exact else (lambda values: [rounded(v) for v in values])
        out: dict[str, Any] = {
            "name": self.name, "kind": self.kind, "method": self.method, "op_types": self.op_types,
            "delegate_debug_id": self.delegate_debug_id, "delegate_backend_name": self.backend,
            "instruction_id": self.instruction_id, "metadata": self.metadata,
            "modules": list(self.modules), "sources": list(self.sources), "times_us": keep(self.times_us),
        }
        if self.call_overhead_us is not None:
            out["call_overhead_us"] = keep(self.call_overhead_us)
        out.update({k: rounded(v) for k, v in summarize(self.times_us).items()})
        if self.call_overhead_us is not None:
            out["call_overhead_p50_us"] = p50(self.call_overhead_us)
        return out


def build_profile(
    etdump_path: Path | str,
    etrecord_path: Path | str,
    *,
    board: str,
    model: str,
    simulated: bool,
    time_scale: TimeScale | None = None,
    ticks_per_us: float | None = None,
    neutron_ticks_per_us: float | None = None,
    console: ConsoleFacts | None = None,
    pte_path: Path | str | None = None,
    etrecord: Any = None,
) -> dict[str, Any]:
    """Decode one run's ETDump against its ETRecord (checked against `pte_path` first) into a profile.

    Give either `time_scale` or `ticks_per_us` (taken literally, never replaced by the console
    clock; use `TimeScale.core_cycles` for that). `etrecord` is the parsed ETRecord when the caller
    already read `etrecord_path`.
    """
    scale = _resolve_scale(time_scale, ticks_per_us, neutron_ticks_per_us).with_console(console)
    etdump_path, etrecord_path = Path(etdump_path), Path(etrecord_path)
    data = read_etdump(etdump_path)
    etrecord = etrecord if etrecord is not None else read_etrecord(etrecord_path)
    if pte_path is not None:
        check_etrecord_matches_pte(etrecord, etrecord_path, Path(pte_path))
    inspected = inspect_etdump(data, etdump_path, etrecord_path, etrecord)
    rows = [row for kept in inspected.methods for row in _rows(kept.block, kept.method, scale)]
    events = [row.to_json() for row in rows]
    exact = [row.to_json(exact=True) for row in rows]  # what totals are summed from
    warnings = inspected.warnings + [w for row in rows for w in row.warnings]
    warnings += check_events(events, etdump_path, etrecord_path)
    refuse_timeless(events, etdump_path)
    main = main_method(events)
    mine = method_events(exact, main)
    iterations = iterations_of(mine)
    if iterations < MIN_ITERATIONS:
        warnings.append(f"only {iterations} iteration(s): fewer than {MIN_ITERATIONS} cannot show the run's own "
                        f"spread, and a comparison with 1 cannot judge it (run more with --iterations)")
    totals, npu_fraction = totals_from_events(mine, iterations)
    return {
        "schema": SCHEMA,
        "board": board,
        "model": model,
        "simulated": bool(simulated),
        "iterations": iterations,
        "time_unit": scale.unit,
        "time_scale": scale.to_dict(),
        "events": events,
        "totals_us": totals,
        "npu_fraction": npu_fraction,
        "methods": _methods(inspected, exact),
        "cpu_fallback_ops": ev.unique(t for e in mine if e["kind"] == ev.CPU_OP
                                      for t in ev.kernel_op_types(e["name"], e["op_types"])),
        "load_us": _load_times(inspected.load_block, scale),
        "memory": _memory(console, pte_path),
        "console": _console(console),
        "warnings": warnings,
        "notes": _notes(events),
    }


def refuse_timeless(events: list[dict[str, Any]], etdump_path: Path) -> None:
    """A dump whose every event lasts 0 ticks says nothing about time: refuse it, naming the likely cause.

    The timer behind the firmware's PAL never ticked: a board without the counter the PAL reads (QEMU
    models no DWT cycle counter, so an RT700 PAL there stamps every event 0), a counter never
    enabled, or a PAL left at ExecuTorch's default, which returns constant timestamps.
    """
    timed = [t for e in events for t in e.get("times_us") or []]
    if timed and not any(timed):
        raise AnalysisError(
            f"{etdump_path}: all {len(timed)} event times are 0: the firmware's tick counter never ticked "
            "(et_pal_current_ticks() returns constant values: a counter the board does not have or never started, "
            "such as the DWT cycle counter on QEMU, or ExecuTorch's default PAL); no timing can be read from it")


def _resolve_scale(time_scale: TimeScale | None, ticks: float | None, npu_ticks: float | None) -> TimeScale:
    if (time_scale is None) == (ticks is None):
        raise ValueError("build_profile needs exactly one of time_scale or ticks_per_us")
    scale = time_scale or TimeScale(float(ticks), npu_ticks)
    if time_scale is not None and npu_ticks is not None:
        scale = TimeScale(time_scale.ticks_per_us, npu_ticks, time_scale.follows_clock, time_scale.unit)
    if scale.ticks_per_us <= 0 or scale.npu_ticks_per_us <= 0:
        raise ValueError(f"ticks per microsecond must be positive, got {scale}")
    return scale


def read_etdump(path: Path) -> bytes:
    """Read an ETDump and check its framing before flatc sees it, so errors name the real fault.

    The runtime writes a size-prefixed flatbuffer: [u32 size][u32 root][b"ED00"]...; a buffer
    without the prefix (as `serialize_to_etdump_flatcc` makes) is accepted and prefixed here.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AnalysisError(f"cannot read ETDump {path}: {exc}") from exc
    if len(data) >= 8 and data[4:8] == _ETDUMP_ID:
        return struct.pack("<I", len(data)) + data
    if len(data) < 12 or data[8:12] != _ETDUMP_ID:
        raise AnalysisError(
            f"{path} is not an ETDump: file identifier {_ETDUMP_ID!r} not found ({len(data)} bytes)"
        )
    (size,) = struct.unpack_from("<I", data)
    if size + 4 > len(data):
        raise AnalysisError(f"ETDump {path} is truncated: its header says {size + 4} bytes, file has {len(data)}")
    return data[: size + 4]


def _rows(block: Any, method: str, scale: TimeScale) -> list[EventRow]:
    """One row per Inspector event of one method's block, classified, scaled, in execution order."""
    rows = [_row(e, method, scale) for e in block.events if e.perf_data is not None]
    last: dict[Any, EventRow] = {}
    for row in rows:
        if row.delegated:
            last[row.instruction_id] = row
    for row in last.values():
        row.last_of_delegate = True
    for row in rows:
        row.kind = ev.classify(row.name, is_delegated=row.delegated, backend=row.backend, op_types=row.op_types,
                               metadata=row.metadata, is_last_of_delegate=row.last_of_delegate)
    return _execution_order(_fold_operator_calls(rows))


def _row(event: Any, method: str, scale: TimeScale) -> EventRow:
    delegated = bool(event.is_delegated_op)
    neutron = delegated and ev.is_neutron(event.delegate_backend_name)
    per_us = scale.npu_ticks_per_us if neutron else scale.ticks_per_us
    metadata = ev.decode_event_metadata(event.raw_delegate_debug_metadatas) if neutron else None
    modules, sources = event_places(event.module_hierarchy, event.stack_traces)
    row = EventRow(
        name=event.name, method=method, delegated=delegated, backend=event.delegate_backend_name,
        op_types=ev.unique(event.op_types), delegate_debug_id=event.delegate_debug_identifier,
        instruction_id=event._instruction_id,  # no public accessor; needed to pair events
        metadata=metadata, times_us=[t / per_us for t in event.perf_data.raw],
        start=(event.start_time or [0])[0], modules=modules, sources=sources,
    )
    if metadata is not None and metadata["kind"] == "invalid":
        row.warnings.append(f"event {event.name}: invalid Neutron metadata 0x{metadata['raw']}")
    if metadata is not None and metadata.get("varies_between_runs"):
        row.warnings.append(f"event {event.name}: metadata differs between runs")
    return row


def _fold_operator_calls(rows: list[EventRow]) -> list[EventRow]:
    """Merge each OPERATOR_CALL into the `native_call_*` of the same instruction.

    OPERATOR_CALL wraps the kernel call (it adds the runtime's dispatch), so counting both
    would count the operator twice; its extra time (never below 0) is kept as `call_overhead_us`.
    """
    natives = {r.instruction_id: r for r in rows if r.name.startswith(ev.NATIVE_CALL_PREFIX)}
    kept = []
    for row in rows:
        native = natives.get(row.instruction_id) if row.name == ev.OPERATOR_CALL_NAME else None
        if native is None:
            kept.append(row)
            continue
        native.call_overhead_us = [max(0.0, o - n) for o, n in zip(row.times_us, native.times_us)]
    return kept


def _execution_order(rows: list[EventRow]) -> list[EventRow]:
    """Method first, then host events by start time, each delegate's events right after its call.

    Delegate events are not sorted by time: their clock (Neutron) need not be the PAL clock.
    """
    host = sorted((r for r in rows if not r.delegated), key=lambda r: (r.kind != ev.METHOD, r.start))
    inner = [r for r in rows if r.delegated]
    ordered: list[EventRow] = []
    for row in host:
        ordered.append(row)
        if row.kind == ev.DELEGATE_CALL:
            ordered += [r for r in inner if r.instruction_id == row.instruction_id]
    ordered += [r for r in inner if r not in ordered]
    return ordered


def _methods(inspected: Inspected, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Per method: iterations, runs left out, totals and NPU fraction (a program may run several)."""
    out = {}
    for kept in inspected.methods:
        mine = method_events(events, kept.method)
        totals, fraction = totals_from_events(mine, iterations_of(mine))
        out[kept.method] = {"iterations": iterations_of(mine), "left_out_runs": kept.left_out_runs,
                            "totals_us": totals, "npu_fraction": fraction}
    return out


def _notes(events: list[dict[str, Any]]) -> list[str]:
    """What the reader should know that is not a fault: delegates that map their events to no op."""
    silent: dict[str, int] = {}
    for e in events:
        if e["kind"] == ev.DELEGATE_OP and not e["op_types"]:
            silent[str(e["delegate_backend_name"])] = silent.get(str(e["delegate_backend_name"]), 0) + 1
    return [f"{n} {backend} event(s) carry no op types: that backend records no per-operator debug-handle map"
            for backend, n in silent.items()]


def _memory(console: ConsoleFacts | None, pte_path: Path | str | None) -> dict[str, Any]:
    memory: dict[str, Any] = {}
    if console is not None:
        memory = {
            "allocators": {k: vars(v).copy() for k, v in console.allocators.items()},
            "model_size_bytes": console.model_size,
            "planned_buffers": {str(k): v for k, v in console.planned_buffers.items()},
        }
    if pte_path is not None:
        memory["pte"] = pte_memory(pte_path)
    return memory


def _console(console: ConsoleFacts | None) -> dict[str, Any] | None:
    if console is None:
        return None
    return {
        "clock_mhz": console.clock_mhz,
        "inference_times_us": list(console.inference_times_us),
        "program_complete": console.program_complete,
        # What the firmware said it ran (the run-configuration handshake), or None for older firmware.
        "run_config": None if console.run_config is None else console.run_config._asdict(),
    }


def _load_times(block: Any, scale: TimeScale) -> dict[str, float]:
    if block is None:
        return {}
    return {
        e.name: rounded(percentile(e.perf_data.raw, 50) / scale.ticks_per_us)
        for e in block.events
        if e.name in ev.LOAD_EVENT_NAMES and e.perf_data is not None
    }
