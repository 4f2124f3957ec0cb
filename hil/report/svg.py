"""Inline SVG charts for the report: no library, no network, readable as text in a diff.

Each function returns one `<svg>` element; colours come from CSS classes defined in the page
(`npu`, `cpu`, `method`, ...) so the look is set in one place.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from html import escape

from hil.report.timeline import Span, lanes_of

LABEL_W = 300
LABEL_CHARS = 46  # of a bar's label shown at 11 px in LABEL_W
NOTE_CHARS = 120  # of a line under a chart, at 11 px in 760 px
ROW_H = 18
LANES = ("method", "delegate_call", "cpu_op", "npu_kernel", "profiling_dump", "delegate_op")
LANE_NAMES = {"method": "Method::execute", "delegate_call": "delegate call", "cpu_op": "CPU ops",
              "npu_kernel": "NPU kernels", "profiling_dump": "profiling dump", "delegate_op": "other delegates"}


# Below this an axis has no round values worth drawing (1e-9 us is a femtosecond).
MIN_HIGH = 1e-9


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """At least `count` round values from 0 up to (and past) `high`: 0, 250, 500, 750, 1000 for 900.

    The last tick is never 0 (charts divide by it): a `high` of 0, or too small to have round values
    of its own (a run that timed nothing), gets the axis of 1.
    """
    high = high if high > MIN_HIGH else 1.0
    step = nice_step(high / (count - 1))
    ticks = [0.0]
    while ticks[-1] < high * (1 - 1e-9):  # relative: a small `high` gets its ticks too
        ticks.append(ticks[-1] + step)
    return ticks


def nice_step(raw: float) -> float:
    """The round step (1, 2, 2.5 or 5 times a power of ten) at or just above `raw` (> 0)."""
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)


def fmt_tick(value: float) -> str:
    return f"{value:g}" if value < 1e5 else f"{value:.3g}"


def _x_axis(left: float, right: float, y: float, high: float, unit: str) -> tuple[list[str], float]:
    """A horizontal axis from 0 (at `left`) to the last tick (at `right`), ticks labelled with `unit`;
    returns the SVG parts and the axis's top value (what `right` stands for)."""
    ticks = nice_ticks(high)
    top = ticks[-1]
    parts = [f'<line class="axis" x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}"/>']
    for tick in ticks:
        x = left + (right - left) * tick / top
        parts.append(f'<line class="axis" x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y + 4:.1f}"/>'
                     f'<text x="{x:.1f}" y="{y + 15:.1f}" text-anchor="middle">{fmt_tick(tick)}</text>')
    parts.append(f'<text x="{right:.1f}" y="{y + 28:.1f}" text-anchor="end">{escape(unit)}</text>')
    return parts, top


def _css(kind: str) -> str:
    return {"npu_kernel": "npu", "cpu_op": "cpu", "method": "method", "delegate_call": "call"}.get(kind, "other")


def svg_element(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg class="chart" role="img" aria-label="{escape(label)}" '
            f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}">' + "".join(body) + "</svg>")


@dataclass
class Bar:
    label: str
    value: float
    kind: str
    title: str = ""


def bar_chart(bars: list[Bar], *, width: int = 760, label: str = "per-op time", unit: str = "us") -> str:
    """Horizontal bars, one per event, coloured NPU or CPU, on an axis of round values in `unit`.

    A label too long for its column ends in an ellipsis; the whole of it is the bar's tooltip.
    """
    span = width - LABEL_W - 70
    axis, top = _x_axis(LABEL_W, LABEL_W + span, len(bars) * ROW_H + 4, max([b.value for b in bars] + [1e-9]), unit)
    body = []
    for i, bar in enumerate(bars):
        y = i * ROW_H
        w = max(1.0, span * bar.value / top)
        shown = bar.label if len(bar.label) <= LABEL_CHARS else bar.label[:LABEL_CHARS - 1] + "\u2026"
        body.append(
            f'<g><title>{escape(bar.title or bar.label)}: {bar.value:.1f} {escape(unit)}</title>'
            f'<text x="{LABEL_W - 6}" y="{y + 13}" text-anchor="end">{escape(shown)}</text>'
            f'<rect class="{_css(bar.kind)}" x="{LABEL_W}" y="{y + 3}" width="{w:.1f}" height="{ROW_H - 6}"/>'
            f'<text x="{LABEL_W + w + 4:.1f}" y="{y + 13}">{bar.value:.1f}</text></g>'
        )
    return svg_element(width, len(bars) * ROW_H + 40, body + axis, label)


def timeline(spans: list[Span], *, width: int = 760, label: str = "timeline of one inference") -> str:
    """One lane per event kind (more where its spans overlap in part), on an axis of round us values.

    A span that overlaps others of its kind or runs past Method::execute says why in a line under the
    chart (and in its tooltip): the Neutron profiling dump, timed on the NPU's clock, is the one that does.
    """
    lanes = lanes_of(spans)
    rows = sorted({(s.kind, lane) for s, lane in zip(spans, lanes)}, key=lambda r: (_lane_order(r[0]), r[1]))
    end = max([s.start_us + s.dur_us for s in spans] + [1e-9])
    start = min([s.start_us for s in spans] + [0.0])
    axis_y = len(rows) * (ROW_H + 6) + 4
    axis, top = _x_axis(140, width - 30, axis_y, end - start, "us from the start of Method::execute")
    scale = (width - 170) / top
    body = []
    for row, (kind, lane) in enumerate(rows):
        y = row * (ROW_H + 6)
        name = LANE_NAMES.get(kind, kind) + (f" ({lane + 1})" if lane else "")
        body.append(f'<text x="132" y="{y + 13}" text-anchor="end">{escape(name)}</text>')
        for s in (s for s, n in zip(spans, lanes) if s.kind == kind and n == lane):
            x = 140 + (s.start_us - start) * scale
            tip = f"{s.name} [{', '.join(s.op_types) or '-'}] {s.start_us:.1f}+{s.dur_us:.1f} us" + (f": {s.note}" if s.note else "")
            body.append(f'<rect class="{_css(s.kind)}" x="{x:.1f}" y="{y + 2}" width="{max(0.5, s.dur_us * scale):.1f}" '
                        f'height="{ROW_H - 2}"><title>{escape(tip)}</title></rect>')
    notes = sorted({f"{s.name}: {s.note}" for s in spans if s.note})
    text_y = axis_y + 44
    for line in (part for note in notes for part in textwrap.wrap(note, NOTE_CHARS, subsequent_indent="  ")):
        body.append(f'<text x="10" y="{text_y}">{escape(line)}</text>')
        text_y += 14
    return svg_element(width, text_y, body + axis, label)


def _lane_order(kind: str) -> int:
    return LANES.index(kind) if kind in LANES else len(LANES)
