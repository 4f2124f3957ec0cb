"""ETDump + ETRecord -> the profile dict (written as profile.json by the pipeline).

The Inspector is asked for raw values in the runtime's own unit (source = target =
TimeScale.CYCLES gives a scale factor of exactly 1 for CPU events, and an identity
delegate converter keeps delegate events raw too); the conversion to microseconds is done
here, explicitly, because the RT700 runtime writes PAL ticks (DWT cycles) for CPU events and
Neutron time units for delegate events, which no single Inspector scale can express.
"""

from __future__ import annotations

import struct
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hil.analysis import events as ev
from hil.analysis.console import ConsoleFacts
from hil.analysis.statistics import percentile, summarize
from hil.errors import AnalysisError
from hil.pte import pte_memory

SCHEMA = "et-hil/profile/1"
_ETDUMP_ID = b"ED00"


@dataclass(frozen=True)
class TimeScale:
    """How many raw ticks make one microsecond, for CPU (PAL) events and Neutron events.

    `follows_clock` marks ticks that are core-clock cycles: the console's `Core/NPU Frequency`
    line then replaces the board file's clock. `neutron_ticks_per_us=None` means "same as PAL".
    """

    ticks_per_us: float
    neutron_ticks_per_us: float | None = None
    follows_clock: bool = False

    @classmethod
    def nanoseconds(cls) -> "TimeScale":
        """The host runtime's clock (and the simulated buffer made from it)."""
        return cls(1000.0)

    @classmethod
    def core_cycles(cls, clock_mhz: float, neutron_ticks_per_us: float | None = None) -> "TimeScale":
        """RT700-style raw PAL ticks counted at the core clock."""
        return cls(float(clock_mhz), neutron_ticks_per_us, follows_clock=True)

    def with_console(self, console: ConsoleFacts | None) -> "TimeScale":
        if self.follows_clock and console is not None and console.clock_mhz:
            return replace(self, ticks_per_us=float(console.clock_mhz))
        return self

    @property
    def npu_ticks_per_us(self) -> float:
        return self.neutron_ticks_per_us or self.ticks_per_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "ticks_per_us": self.ticks_per_us,
            "neutron_ticks_per_us": self.npu_ticks_per_us,
            "follows_clock": self.follows_clock,
        }


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
) -> dict[str, Any]:
    """Decode one run's ETDump against its ETRecord into a JSON-ready profile.

    Give either `time_scale` or `ticks_per_us` (taken literally, never replaced by the console
    clock; use `TimeScale.core_cycles` for that).
    """
    scale = _resolve_scale(time_scale, ticks_per_us, neutron_ticks_per_us).with_console(console)
    etdump_path, etrecord_path = Path(etdump_path), Path(etrecord_path)
    data = read_etdump(etdump_path)
    block, load_block, notes = _inspect(data, etdump_path, etrecord_path)
    rows = _rows(block.events, scale)
    _check_pair(rows, etdump_path, etrecord_path)
    method = [r for r in rows if r["kind"] == ev.METHOD]
    iterations = len(method[0]["times_us"])
    totals, npu_fraction = totals_from_events(rows, iterations)
    memory: dict[str, Any] = {}
    if console is not None:
        memory = {
            "allocators": {k: vars(v).copy() for k, v in console.allocators.items()},
            "model_size_bytes": console.model_size,
            "planned_buffers": {str(k): v for k, v in console.planned_buffers.items()},
        }
    if pte_path is not None:
        memory["pte"] = pte_memory(pte_path)
    return {
        "schema": SCHEMA,
        "board": board,
        "model": model,
        "simulated": bool(simulated),
        "iterations": iterations,
        "time_unit": "us",
        "time_scale": scale.to_dict(),
        "events": [_public(r) for r in rows],
        "totals_us": totals,
        "npu_fraction": npu_fraction,
        "cpu_fallback_ops": ev.unique(t for r in rows if r["kind"] == ev.CPU_OP for t in r["op_types"]),
        "load_us": _load_times(load_block, scale),
        "memory": memory,
        "console": None if console is None else {
            "clock_mhz": console.clock_mhz,
            "inference_times_us": list(console.inference_times_us),
            "program_complete": console.program_complete,
            # What the firmware said it ran (the run-configuration handshake), or None for older firmware.
            "run_config": None if console.run_config is None else console.run_config._asdict(),
        },
        "warnings": notes + [w for r in rows for w in r.pop("_warnings", [])],
    }


def _resolve_scale(time_scale: TimeScale | None, ticks: float | None, npu_ticks: float | None) -> TimeScale:
    if (time_scale is None) == (ticks is None):
        raise ValueError("build_profile needs exactly one of time_scale or ticks_per_us")
    scale = time_scale or TimeScale(float(ticks), npu_ticks)
    if time_scale is not None and npu_ticks is not None:
        scale = replace(time_scale, neutron_ticks_per_us=npu_ticks)
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


def _inspect(data: bytes, etdump_path: Path, etrecord_path: Path) -> tuple[Any, Any, list[str]]:
    """Run the Inspector; return the block holding Method::execute, the load block (or None), notes."""
    from executorch.devtools import Inspector, parse_etrecord
    from executorch.devtools.inspector import TimeScale as EtTimeScale

    if not etrecord_path.is_file():
        raise AnalysisError(f"ETRecord {etrecord_path} does not exist (needed to decode {etdump_path})")
    try:
        etrecord = parse_etrecord(str(etrecord_path))
    except Exception as exc:  # the parser raises RuntimeError, KeyError, zip errors...
        raise AnalysisError(f"cannot read ETRecord {etrecord_path}: {exc}") from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Output Buffer not found": we never ask for tensors
        try:
            inspector = Inspector(
                etdump_data=data,
                etrecord=etrecord,
                source_time_scale=EtTimeScale.CYCLES,
                target_time_scale=EtTimeScale.CYCLES,
                delegate_time_scale_converter=lambda _name, ticks: ticks,
            )
        except Exception as exc:
            raise AnalysisError(
                f"the Inspector cannot decode ETDump {etdump_path} with ETRecord {etrecord_path}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    blocks = [b for b in inspector.event_blocks if any(e.name == ev.METHOD_EXECUTE for e in b.events)]
    if not blocks:
        raise AnalysisError(f"ETDump {etdump_path} holds no {ev.METHOD_EXECUTE} event: was the method run?")
    # Runs with the same event sequence share a block; if they differ, keep the most frequent.
    blocks.sort(key=lambda b: -len(_method_event(b).perf_data.raw))
    load = next((b for b in inspector.event_blocks if b not in blocks), None)
    notes = [
        f"{len(blocks) - 1} run(s) had a different event sequence and are left out" if len(blocks) > 1 else ""
    ]
    return blocks[0], load, [n for n in notes if n]


def _method_event(block: Any) -> Any:
    return next(e for e in block.events if e.name == ev.METHOD_EXECUTE)


def _rows(events: list[Any], scale: TimeScale) -> list[dict[str, Any]]:
    """One row per Inspector event, classified, scaled, in execution order."""
    rows = [_row(e, scale) for e in events if e.perf_data is not None]
    _mark_last_delegated(rows)
    for row in rows:
        row["kind"] = ev.classify(
            row["name"],
            is_delegated=row["_delegated"],
            op_types=row["op_types"],
            metadata=row["metadata"],
            is_last_of_delegate=row.pop("_last"),
        )
    return _execution_order(_fold_operator_calls(rows))


def _row(event: Any, scale: TimeScale) -> dict[str, Any]:
    delegated = bool(event.is_delegated_op)
    per_us = scale.npu_ticks_per_us if delegated else scale.ticks_per_us
    metadata = ev.decode_event_metadata(event.raw_delegate_debug_metadatas) if delegated else None
    did = event.delegate_debug_identifier
    row: dict[str, Any] = {
        "name": event.name,
        "kind": None,  # set by _rows once every row is known
        "op_types": ev.unique(event.op_types),
        "delegate_debug_id": did if isinstance(did, int) else None,
        "delegate_backend_name": event.delegate_backend_name,
        "instruction_id": event._instruction_id,  # no public accessor; needed to pair events
        "metadata": metadata,
        "times_us": [_us(t, per_us) for t in event.perf_data.raw],
        "_delegated": delegated,
        "_start": (event.start_time or [0])[0],
        "_warnings": [],
    }
    if metadata is not None and metadata["kind"] == "invalid":
        row["_warnings"].append(f"event {event.name}: invalid Neutron metadata 0x{metadata['raw']}")
    if metadata is not None and metadata.get("varies_between_runs"):
        row["_warnings"].append(f"event {event.name}: metadata differs between runs")
    return row


def _mark_last_delegated(rows: list[dict[str, Any]]) -> None:
    last: dict[Any, dict[str, Any]] = {}
    for row in rows:
        row["_last"] = False
        if row["_delegated"]:
            last[row["instruction_id"]] = row
    for row in last.values():
        row["_last"] = True


def _fold_operator_calls(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge each OPERATOR_CALL into the `native_call_*` of the same instruction.

    OPERATOR_CALL wraps the kernel call (it adds the runtime's dispatch), so counting both
    would count the operator twice; its extra time is kept as `call_overhead_us`.
    """
    natives = {r["instruction_id"]: r for r in rows if r["name"].startswith(ev.NATIVE_CALL_PREFIX)}
    kept = []
    for row in rows:
        native = natives.get(row["instruction_id"]) if row["name"] == ev.OPERATOR_CALL_NAME else None
        if native is None:
            kept.append(row)
            continue
        native["call_overhead_us"] = [round(max(0.0, o - n), 4) for o, n in zip(row["times_us"], native["times_us"])]
    return kept


def _execution_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Method first, then CPU events by start time, each delegate's events right after its call.

    Delegate events are not sorted by time: their clock (Neutron) is not the PAL clock.
    """
    host = sorted((r for r in rows if not r["_delegated"]), key=lambda r: (r["kind"] != ev.METHOD, r["_start"]))
    inner = [r for r in rows if r["_delegated"]]
    ordered: list[dict[str, Any]] = []
    for row in host:
        ordered.append(row)
        if row["kind"] == ev.DELEGATE_CALL:
            ordered += [r for r in inner if r["instruction_id"] == row["instruction_id"]]
    ordered += [r for r in inner if r not in ordered]
    return ordered


def _check_pair(rows: list[dict[str, Any]], etdump_path: Path, etrecord_path: Path) -> None:
    """Refuse an ETDump paired with another model's ETRecord instead of printing wrong op types."""
    checks = [ev.op_type_matches(r["name"], r["op_types"]) for r in rows]
    checks = [c for c in checks if c is not None]
    delegated = [r for r in rows if r["_delegated"]]
    mismatched_ops = checks and sum(checks) * 2 < len(checks)
    unknown_delegate = delegated and not any(r["delegate_backend_name"] for r in delegated)
    if mismatched_ops or unknown_delegate:
        raise AnalysisError(
            f"ETDump {etdump_path} does not belong to ETRecord {etrecord_path}: "
            + (f"{len(checks) - sum(checks)} of {len(checks)} operator events do not match the "
               "ETRecord's op types" if mismatched_ops else "its delegate events are unknown to the ETRecord")
        )


def _us(ticks: float, ticks_per_us: float) -> float:
    return round(ticks / ticks_per_us, 4)


def _p50(values: list[float]) -> float:
    """Median, rounded to 0.1 ns so JSON stays readable and stable."""
    return round(percentile(values, 50), 4) if values else 0.0


def totals_from_events(rows: list[dict[str, Any]], iterations: int) -> tuple[dict[str, float], float | None]:
    """Per-iteration sums by kind, reported as their median; npu_fraction from those medians.

    Public because the regression side recomputes totals after dropping warm-up iterations.
    """
    def per_iter(selected: list[dict[str, Any]], key: str = "times_us") -> list[float]:
        return [sum(r[key][i] for r in selected if key in r and i < len(r[key])) for i in range(iterations)]

    by_kind = {k: [r for r in rows if r["kind"] == k] for k in ev.KINDS}
    method = per_iter(by_kind[ev.METHOD])
    npu = per_iter(by_kind[ev.NPU_KERNEL])
    dump = per_iter(by_kind[ev.PROFILING_DUMP])
    calls = per_iter(by_kind[ev.DELEGATE_CALL])
    cpu = per_iter(by_kind[ev.CPU_OP])
    dispatch = per_iter(by_kind[ev.CPU_OP], "call_overhead_us")
    totals = {
        "method_execute": _p50(method),
        "npu_kernels": _p50(npu),
        "cpu_ops": _p50(cpu),
        "cpu_call_overhead": _p50(dispatch),
        "delegate_calls": _p50(calls),
        "delegate_overhead": _p50([_delegate_overhead(c, n, d) for c, n, d in zip(calls, npu, dump)]),
        "profiling_dump": _p50(dump),
        "unattributed": _p50([m - c - o - d for m, c, o, d in zip(method, cpu, dispatch, calls)]),
    }
    fraction = totals["npu_kernels"] / totals["method_execute"] if totals["method_execute"] > 0 else None
    fraction = None if fraction is None else round(fraction, 6)
    return totals, fraction


def _delegate_overhead(call: float, kernels: float, dump: float) -> float:
    """Time in the delegate call that no kernel or dump accounts for.

    NeutronBackend.cpp ends the dump event at the last record's stop plus the PAL-timed length of
    the whole `neutronRunBlocking`, so the logged dump usually overlaps the kernels and can exceed
    the call itself. Only a dump that fits beside the kernels is subtracted; otherwise the overhead
    is the call minus its kernels (and includes the dump generation).
    """
    beside_dump = call - kernels - dump
    return beside_dump if beside_dump >= 0 else call - kernels


def _public(row: dict[str, Any]) -> dict[str, Any]:
    """Drop private keys and add the per-event statistics."""
    out = {k: v for k, v in row.items() if not k.startswith("_")}
    out.update(summarize(out["times_us"]))
    if "call_overhead_us" in out:
        out["call_overhead_p50_us"] = _p50(out["call_overhead_us"])
    return out


def _load_times(block: Any, scale: TimeScale) -> dict[str, float]:
    if block is None:
        return {}
    return {
        e.name: _us(percentile(e.perf_data.raw, 50), scale.ticks_per_us)
        for e in block.events
        if e.name in ev.LOAD_EVENT_NAMES and e.perf_data is not None
    }
