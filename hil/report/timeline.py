"""Where each event of one iteration sits in time, for the trace and the report's timeline.

profile.json holds durations, not start times (unless the analysis adds `start_us`, which wins).
Without them the layout follows the program: `Method::execute` spans the iteration, CPU operators
and delegate calls run one after another inside it, and each group of consecutive NPU events
(kernels, then the profiling dump) runs inside the delegate call it belongs to, in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Events that run inside a delegate call: Neutron kernels and dump, any other delegate's operators.
NPU_KINDS = ("npu_kernel", "profiling_dump", "delegate_op")


@dataclass
class Span:
    kind: str
    name: str
    op_types: list[str]
    start_us: float
    dur_us: float


def _duration(event: dict[str, Any], iteration: int | None) -> float:
    times = event.get("times_us") or []
    if iteration is not None and iteration < len(times):
        return float(times[iteration])
    return float(event.get("p50_us") or (sorted(times)[len(times) // 2] if times else 0.0))


def _npu_groups(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    groups: list[list[dict[str, Any]]] = []
    previous_npu = False
    for event in events:
        is_npu = event.get("kind") in NPU_KINDS
        if is_npu and not previous_npu:
            groups.append([])
        if is_npu:
            groups[-1].append(event)
        previous_npu = is_npu
    return groups


def layout_iteration(profile: dict[str, Any], iteration: int | None = 0, offset_us: float = 0.0) -> list[Span]:
    """Spans of one iteration (None: the p50 of each event), starting at `offset_us`."""
    events = profile.get("events", [])
    dur: Callable[[dict[str, Any]], float] = lambda e: _duration(e, iteration)  # noqa: E731
    explicit = all(e.get("start_us") is not None for e in events) and events
    spans: list[Span] = []
    if explicit:
        for e in events:
            starts = e["start_us"] if isinstance(e["start_us"], list) else [e["start_us"]]
            start = starts[iteration] if iteration is not None and iteration < len(starts) else starts[0]
            spans.append(Span(e["kind"], str(e["name"]), list(e.get("op_types") or []), offset_us + start, dur(e)))
        return spans
    groups = _npu_groups(events)
    cursor = offset_us
    call_index = 0
    for e in events:
        kind = e.get("kind")
        span = lambda start, ev=e: Span(str(ev.get("kind")), str(ev.get("name")), list(ev.get("op_types") or []), start, dur(ev))  # noqa: E731
        if kind == "method":
            spans.append(span(offset_us))
        elif kind in ("cpu_op", "delegate_call"):
            spans.append(span(cursor))
            if kind == "delegate_call" and call_index < len(groups):
                inner = cursor
                for npu in groups[call_index]:
                    spans.append(span(inner, npu))
                    inner += dur(npu)
                call_index += 1
            cursor += dur(e)
    for group in groups[call_index:]:  # NPU events with no delegate call to sit in: after the CPU work
        for npu in group:
            spans.append(Span(str(npu.get("kind")), str(npu.get("name")), list(npu.get("op_types") or []), cursor, dur(npu)))
            cursor += dur(npu)
    return spans


def iteration_length(profile: dict[str, Any], iteration: int | None) -> float:
    """How long one iteration lasts on the time axis (Method::execute, else the end of its last span)."""
    spans = layout_iteration(profile, iteration)
    method = [s.dur_us for s in spans if s.kind == "method"]
    ends = [s.start_us + s.dur_us for s in spans]
    return max(method + ends + [0.0])
