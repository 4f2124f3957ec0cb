"""Where each event of one iteration sits in time, for the trace and the report's timeline.

Spans are named as a reader calls the event (`call 0 / kernel 1: convolution`: hil.regress.identity).
profile.json holds durations, not start times (unless the analysis adds `start_us`, which wins).
Without them the layout follows the program: `Method::execute` spans the iteration, CPU operators
and delegate calls run one after another inside it, and each group of consecutive NPU events
(kernels, then the profiling dump) runs inside the delegate call it belongs to, in order. A dump
that does not fit beside the kernels in its call (Neutron measures it on its own clock, and its time
includes the kernels': hil.analysis.totals.call_overhead) starts with its call instead, overlapping
the kernels, and says so in its span's `note`, as does one longer than the call itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hil.records.profile_model import Event, Profile, as_profile
from hil.regress.identity import readable_names

# Events that run inside a delegate call: Neutron kernels and dump, any other delegate's operators.
NPU_KINDS = ("npu_kernel", "profiling_dump", "delegate_op")


@dataclass
class Span:
    kind: str
    name: str
    op_types: list[str]
    start_us: float
    dur_us: float
    note: str = ""  # why the span overlaps others or runs past its container, when it does


def _duration(event: Event, iteration: int | None) -> float:
    times = event.times_us or ()
    if iteration is not None and iteration < len(times):
        return float(times[iteration])
    return float(event.p50_us or (sorted(times)[len(times) // 2] if times else 0.0))


def _npu_groups(events: list[Event]) -> list[list[Event]]:
    groups: list[list[Event]] = []
    previous_npu = False
    for event in events:
        is_npu = event.kind in NPU_KINDS
        if is_npu and not previous_npu:
            groups.append([])
        if is_npu:
            groups[-1].append(event)
        previous_npu = is_npu
    return groups


def layout_iteration(profile: Profile | Mapping[str, Any], iteration: int | None = 0, offset_us: float = 0.0) -> list[Span]:
    """Spans of one iteration (None: the p50 of each event), starting at `offset_us`."""
    profile = as_profile(profile)
    events = [e.replace(name=label) for e, label in zip(profile.events, readable_names(profile.events))]
    dur: Callable[[Event], float] = lambda e: _duration(e, iteration)  # noqa: E731
    explicit = all(e.start_us is not None for e in events) and events
    spans: list[Span] = []
    if explicit:
        for e in events:
            starts = e.start_us if isinstance(e.start_us, tuple) else (e.start_us,)
            start = starts[iteration] if iteration is not None and iteration < len(starts) else starts[0]
            spans.append(Span(e.kind, str(e.name), list(e.op_types), offset_us + start, dur(e)))
        return spans
    groups = _npu_groups(events)
    cursor = offset_us
    call_index = 0
    for e in events:
        kind = e.kind
        span = lambda start, ev=e: Span(str(ev.kind), str(ev.name), list(ev.op_types), start, dur(ev))  # noqa: E731
        if kind == "method":
            spans.append(span(offset_us))
        elif kind in ("cpu_op", "delegate_call"):
            spans.append(span(cursor))
            if kind == "delegate_call" and call_index < len(groups):
                spans += _inside_call(groups[call_index], cursor, dur(e), span, dur)
                call_index += 1
            cursor += dur(e)
    for group in groups[call_index:]:  # NPU events with no delegate call to sit in: after the CPU work
        for npu in group:
            spans.append(Span(str(npu.kind), str(npu.name), list(npu.op_types), cursor, dur(npu)))
            cursor += dur(npu)
    return spans


# Said on a profiling dump that cannot sit after the kernels of its call.
OVERLAPS_KERNELS = "overlaps the kernels (the dump's time includes theirs)"
LONGER_THAN_CALL = "longer than its delegate call (timed on the NPU's clock)"


def _inside_call(group: list[Event], start: float, length: float, span: Callable[..., Span],
                 dur: Callable[[Event], float]) -> list[Span]:
    """The NPU events of one delegate call, one after another from its start; see the module docstring."""
    out, inner = [], start
    for npu in group:
        if npu.kind == "profiling_dump" and inner + dur(npu) > start + length + 1e-9:
            placed = span(start, npu)
            placed.note = OVERLAPS_KERNELS + ("; " + LONGER_THAN_CALL if dur(npu) > length + 1e-9 else "")
            out.append(placed)
            continue
        out.append(span(inner, npu))
        inner += dur(npu)
    return out


def iteration_length(profile: Profile | Mapping[str, Any], iteration: int | None) -> float:
    """How long one iteration lasts on the time axis (Method::execute, else the end of its last span)."""
    spans = layout_iteration(profile, iteration)
    method = [s.dur_us for s in spans if s.kind == "method"]
    ends = [s.start_us + s.dur_us for s in spans]
    return max(method + ends + [0.0])


# Spans this close count as touching, not overlapping (times are rounded to 1 ns).
EPS_US = 1e-6


def lanes_of(spans: list[Span]) -> list[int]:
    """Per span, the first lane of its kind whose slices all end before it starts (no partial overlap)."""
    ends: dict[str, list[float]] = {}
    lanes = [0] * len(spans)
    for index in sorted(range(len(spans)), key=lambda j: (spans[j].start_us, -spans[j].dur_us)):
        span = spans[index]
        kind_ends = ends.setdefault(span.kind, [])
        lane = next((n for n, end in enumerate(kind_ends) if end <= span.start_us + EPS_US), len(kind_ends))
        if lane == len(kind_ends):
            kind_ends.append(0.0)
        kind_ends[lane] = span.start_us + span.dur_us
        lanes[index] = lane
    return lanes
