"""The profile as a plain-text table for a terminal or a CI log (fits in 100 columns).

Each event is named as the gate, the report and the budgets name it (hil.regress.identity.event_labels):
a repeated operator's later runs get `#2`, `#3`, and when the ETRecord names the user's layers a last
column says which (`conv2 (models.py:13)`), narrowing the op types to keep 100 columns.
Shows the same numbers as profile.json, so a reader of the log and a reader of the
file never disagree; nothing here recomputes a total. The unit is the profile's own: microseconds,
or raw ticks when no clock was known (then the table says ticks, never us).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from hil.records.events import short_op as _short_op
from hil.records.profile_model import Event, Profile, as_profile
from hil.analysis.totals import main_method
from hil.drift.report import drift_lines
from hil.regress.identity import event_labels
from hil.records.numerics_section import numerics_line

_COLUMNS = (("event", 30), ("kind", 15), ("op types", 29), ("p50 {unit}", 13), ("share", 7))
# When the ETRecord names the user's layers (hil.records.module_names), op types give room to them: 100 columns.
_LAYER_COLUMNS = (("event", 30), ("kind", 15), ("op types", 12), ("p50 {unit}", 12), ("share", 7),
                  ("module (line)", 25))  # its last blank is stripped: 100 columns
_TOTAL_LABELS = (
    ("method_execute", "Method::execute"),
    ("npu_kernels", "NPU kernels"),
    ("delegate_ops", "other delegates' operators"),
    ("cpu_ops", "CPU operators"),
    ("cpu_call_overhead", "CPU operator dispatch"),
    ("delegate_calls", "delegate calls"),
    ("delegate_overhead", "delegate overhead"),
    ("profiling_dump", "profiling dump (not in other totals)"),
    ("unattributed", "unattributed"),
)
_INDENTED = ("npu_kernel", "profiling_dump", "delegate_op")
# A total of 0 whose events the program does not have says nothing: it is left out.
_TOTAL_KINDS = {"npu_kernels": "npu_kernel", "delegate_ops": "delegate_op", "cpu_ops": "cpu_op",
                "cpu_call_overhead": "cpu_op", "delegate_calls": "delegate_call", "delegate_overhead": "delegate_call",
                "profiling_dump": "profiling_dump"}
# Said on a line whose share is over 100%: only the Neutron profiling dump, timed on the NPU's clock
# with the kernels inside it, gets there.
OVER_WHOLE = "over 100%: overlaps the kernels"


def _cell(text: str, width: int, right: bool = False) -> str:
    if len(text) > width - 1:
        base, mark, count = text.rpartition(" #")
        keep = f"{mark}{count}" if mark and count.isdigit() else ""  # `#2` says which run: never cut it
        text = (base if keep else text)[: width - 2 - len(keep)] + "~" + keep
    return text.rjust(width - 1) + " " if right else text.ljust(width)


def _row(values: list[str], columns: tuple[tuple[str, int], ...] = _COLUMNS) -> str:
    return "".join(
        _cell(v, w, right=3 <= i <= 4) for i, (v, (_, w)) in enumerate(zip(values, columns))
    ).rstrip()


def _pct(part: float | None, whole: float) -> str:
    return "" if part is None or whole <= 0 else f"{100.0 * part / whole:.1f}%"


def _method_p50(events: Sequence[Event], method: str) -> float:
    """Each event's share is of its own method's Method::execute."""
    return next((float(e.p50_us or 0.0) for e in events if e.kind == "method" and e.method_name == method), 0.0)


def _firmware(profile: Profile) -> str:
    """What ran on a QEMU board, and what its numbers are: the header must not let a reader guess."""
    base = profile.time_base or {}
    if profile.firmware == "runtime":
        rate = base.get("instructions_per_us")
        what = f"1 us = {rate:g} emulated instructions" if rate else "emulated time"
        return f" [runtime firmware on the emulated Cortex-M33; {what}]"
    if profile.firmware == "replay":
        return " [replayed ETDump]"
    if profile.firmware == "rt700-emu":
        skipped = ", ".join(base.get("skipped") or ()) or "none"
        return (f" [RT700 image on the emulated Cortex-M33, no NPU; 1 us = {base.get('instructions_per_us', 0):g} "
                f"emulated instructions; bring-up skipped: {skipped}]")
    return ""


def _footprint_lines(profile: Profile) -> list[str]:
    """The stack's high-water mark and the image's flash bytes (profile.json's `stack`, `code_size`)."""
    lines = []
    stack = profile.stack or {}
    if stack:
        used, size = stack.get("used_bytes"), stack.get("size_bytes")
        if used is None:
            lines.append(f"stack high-water mark: not measured ({stack.get('note') or 'no reason given'})")
        else:
            share = f" ({100.0 * used / size:.1f}%)" if size else ""
            over = "  OVERFLOWED: the stack reached its limit" if stack.get("overflowed") else ""
            lines.append(f"stack high-water mark: {used} of {size} B{share}{over}")
    code = profile.code_size or {}
    if code.get("total_bytes") is not None:
        lines.append(f"flash (code, constants): {code['total_bytes']} B: operator kernels"
                     f" {code.get('kernels_bytes')} B, runtime {code.get('runtime_bytes')} B")
    elif code.get("note"):
        lines.append(f"flash (code, constants): {code['note']}")
    return lines


def _fallback(op_type: str, reasons: Any) -> str:
    """An operator left on the CPU, with the lowering's reason when it gave one ("float operator: ...")."""
    short = _short_op(op_type)
    return f"{short} ({reasons[short]})" if short in reasons else short


def format_table(profile: Profile | Mapping[str, Any]) -> str:
    """Render events (name, kind, op types, p50, share of Method::execute), then the totals."""
    profile = as_profile(profile)
    totals = profile.totals_us
    unit = profile.time_unit or "us"
    method = float(totals.get("method_execute") or 0.0)
    sim = " (simulated)" if profile.simulated else ""
    events = profile.events
    several = len({e.method_name for e in events}) > 1
    labels = event_labels(events)  # the gate's own names: `#2`, and the user's layer where known
    columns = _LAYER_COLUMNS if any(label.where for label in labels) else _COLUMNS
    lines = [
        f"{profile.model} on {profile.board}{sim}{_firmware(profile)}: {profile.iterations} "
        f"iteration(s), times in {unit}",
        _row([name.format(unit=unit) for name, _ in columns], columns),
        _row(["-" * (w - 1) for _, w in columns], columns),
    ]
    for event, label in zip(events, labels):
        name = event.method_name
        if several and event.kind == "method":
            lines.append(f"[method {name}]")
        indent = "  " if event.kind in _INDENTED else ""
        ops = ",".join(dict.fromkeys(_short_op(t) for t in event.op_types))
        whole = _method_p50(events, name)
        if not ops and whole > 0 and float(event.p50_us or 0.0) > whole:
            ops = OVER_WHOLE.replace("overlaps the", "overlaps")  # fits the column
        lines.append(_row([
            indent + (str(event.name) if indent else label.name),  # a delegate's events sit under their call
            str(event.kind),
            ops,
            f"{event.p50_us or 0.0:.3f}",
            _pct(event.p50_us, whole),
            label.where,
        ], columns))
    lines.append("")
    if several:
        lines.append(f"totals of method {main_method(events)}:")
    kinds = {str(e.kind) for e in events}
    for key, label in _TOTAL_LABELS:
        if key in totals and not (totals[key] == 0 and key in _TOTAL_KINDS and _TOTAL_KINDS[key] not in kinds):
            line = f"{label:<38}{totals[key]:>12.3f} {unit:<5} {_pct(totals[key], method):>7}".rstrip()
            lines.append(line + (f"  {OVER_WHOLE}" if method > 0 and totals[key] > method else ""))
    fraction = profile.npu_fraction
    lines.append(f"{'NPU fraction':<38}{'n/a' if fraction is None else f'{fraction:.3f}':>12}")
    lines.append("CPU fallback ops: " + (", ".join(_fallback(t, profile.cpu_fallback_reasons)
                                                   for t in profile.cpu_fallback_ops) or "none"))
    times_us = profile.console_inference_times_us
    if times_us:
        times = ", ".join(f"{t:.0f}" if float(t).is_integer() else f"{t:g}" for t in times_us)
        lines.append(f"console inference time: {times} us")
    numerics = numerics_line(profile.numerics)
    if numerics:
        lines.append(numerics)
    lines += _footprint_lines(profile)
    if profile.delegated_outputs:
        lines.append(f"note: {profile.delegated_outputs}")
    lines += drift_lines(profile)
    for label, texts in (("note", profile.notes), ("warning", profile.warnings)):
        for text in texts:
            lines += textwrap.wrap(f"{label}: {text}", 100, subsequent_indent="  ")
    return "\n".join(lines) + "\n"
