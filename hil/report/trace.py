"""trace.json: one run as a Chrome/Perfetto trace, ETDump events and console lines on one time axis.

Open it in ui.perfetto.dev or chrome://tracing. One process per run, one track (thread) per
event kind, "X" complete events with ts/dur in microseconds, console lines as instant events on
their own track. Both viewers draw slices of one track as a stack, so two slices that overlap only
in part are drawn wrongly: a slice that would overlap another of its track goes to an extra track
of that kind ("Neutron profiling dump (overlapping 2)"), and its `args.note` says why it overlaps. The device's console has no clock of its own in the log, so each line is placed
by what it says: set-up lines at the start, the k-th `Inference time:` line at the end of
iteration k, any other line at the time of the line before it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from collections.abc import Mapping

from hil.base import atomic
from hil.records.profile_model import Profile, as_profile
from hil.regress.runs import load_run
from hil.report.timeline import Span, iteration_length, lanes_of, layout_iteration
from hil.records.validate.files import read_bytes

TRACKS = {"method": 1, "delegate_call": 2, "cpu_op": 3, "npu_kernel": 4, "profiling_dump": 5, "console": 6,
          "delegate_op": 7}
TRACK_NAMES = {
    "method": "Method::execute", "delegate_call": "delegate calls", "cpu_op": "CPU operators",
    "npu_kernel": "NPU kernels", "profiling_dump": "Neutron profiling dump", "console": "console",
    "delegate_op": "other delegates' operators",
}
ITERATION_GAP_US = 10.0
_INFERENCE = re.compile(r"Inference time:", re.IGNORECASE)


def build_trace(profile: Profile | Mapping[str, Any], console_lines: list[str]) -> dict[str, Any]:
    """The trace as a dict in the Chrome trace event format."""
    profile = as_profile(profile)
    iterations = max([len(e.times_us or ()) for e in profile.events] + [1])
    pid = 1
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
         "args": {"name": f"{profile.model} on {profile.board}"}},
    ]
    events += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": TRACK_NAMES[kind]}}
               for kind, tid in TRACKS.items()]
    ends: list[float] = []
    offset = 0.0
    placed: list[tuple[int, Span]] = []
    for i in range(iterations):
        placed += [(i, span) for span in layout_iteration(profile, i, offset)]
        offset += iteration_length(profile, i)
        ends.append(offset)
        offset += ITERATION_GAP_US
    lanes = lanes_of([span for _, span in placed])
    for (i, span), lane in zip(placed, lanes):
        args: dict[str, Any] = {"op_types": span.op_types, "iteration": i, **({"note": span.note} if span.note else {})}
        events.append({"name": span.name, "cat": span.kind, "ph": "X", "ts": round(span.start_us, 3),
                       "dur": round(span.dur_us, 3), "pid": pid, "tid": _tid(span.kind, lane), "args": args})
    for kind, lane in sorted({(span.kind, lane) for (_, span), lane in zip(placed, lanes) if lane}):
        events += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": _tid(kind, lane),
                    "args": {"name": f"{TRACK_NAMES.get(kind, kind)} (overlapping {lane + 1})"}},
                   {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": _tid(kind, lane),
                    "args": {"sort_index": _tid(kind, lane)}}]
    events += _console_events(console_lines, ends, pid)
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"model": profile.model, "board": profile.board,
                          "simulated": profile.simulated, "time_unit": "us"}}


def _tid(kind: str, lane: int) -> int:
    """The track of a kind's `lane`: the kind's own for lane 0, then extra tracks sorted after it."""
    base = TRACKS.get(kind, TRACKS["cpu_op"])
    return base if lane == 0 else 100 + 10 * base + lane


def _console_events(lines: list[str], iteration_ends: list[float], pid: int) -> list[dict[str, Any]]:
    out, ts, seen = [], 0.0, 0
    for line in lines:
        if not line.strip():
            continue
        if _INFERENCE.search(line) and seen < len(iteration_ends):
            ts = iteration_ends[seen]
            seen += 1
        out.append({"name": line.strip(), "cat": "console", "ph": "i", "s": "t", "ts": round(ts, 3),
                    "pid": pid, "tid": TRACKS["console"]})
    return out


def write_trace_json(run_folder: Path) -> Path:
    """Write `trace.json` into a run folder from its profile.json and serial.log; returns its path."""
    folder = Path(run_folder)
    run = load_run(folder)  # profile.json verified against the manifest (hil.regress.runs)
    log = folder / "serial.log"
    if log.is_file() and run.manifest:
        from hil.records.evidence import verify_read

        verify_read(folder, run.manifest, log.name)
    lines = read_bytes(log, "a console log").decode("utf-8", errors="replace").splitlines() if log.is_file() else []
    return atomic.write_json(folder / "trace.json", build_trace(run.profile, lines))
