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
    raw = high / (count - 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    ticks = [0.0]
    while ticks[-1] < high * (1 - 1e-9):  # relative: a small `high` gets its ticks too
        ticks.append(ticks[-1] + step)
    return ticks


def _fmt_tick(value: float) -> str:
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
                     f'<text x="{x:.1f}" y="{y + 15:.1f}" text-anchor="middle">{_fmt_tick(tick)}</text>')
    parts.append(f'<text x="{right:.1f}" y="{y + 28:.1f}" text-anchor="end">{escape(unit)}</text>')
    return parts, top


def _css(kind: str) -> str:
    return {"npu_kernel": "npu", "cpu_op": "cpu", "method": "method", "delegate_call": "call"}.get(kind, "other")


def _svg(width: float, height: float, body: list[str], label: str) -> str:
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
    return _svg(width, len(bars) * ROW_H + 40, body + axis, label)


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
    return _svg(width, text_y, body + axis, label)


def _lane_order(kind: str) -> int:
    return LANES.index(kind) if kind in LANES else len(LANES)


# Runs named under the trend's time axis (first, last and evenly between).
X_LABELS = 5


@dataclass
class TrendPoint:
    label: str  # time and commit, shown on hover
    total_us: float | None
    npu_fraction: float | None
    flagged: str = ""  # why this run is marked (regression, failed); empty when it is not
    when: str = ""  # the run's time (ISO 8601), written under the axis as its date and time of day


def axis_label(point: TrendPoint) -> tuple[str, str]:
    """The two lines under the time axis for one run: its date and its time of day (two runs of one day
    differ), from `when`, else from the label's first word."""
    text = point.when or point.label.split(" ")[0]
    date, _, clock = text.replace(" ", "T", 1).partition("T")
    return date, clock.rstrip("Z")[:8]


def trend(points: list[TrendPoint], *, width: int = 760, height: int = 220, label: str = "nightly trend") -> str:
    """Total latency (left axis, line) and NPU fraction (right axis 0..1, dashed) per run; flagged runs in red."""
    left, right, top, bottom = 70, 60, 24, 58
    totals = [p.total_us for p in points if p.total_us is not None]
    hi = nice_ticks(max(totals + [1e-9]))[-1]
    n = len(points)
    x = lambda i: left + (width - left - right) * (i / (n - 1) if n > 1 else 0.5)  # noqa: E731
    y_total = lambda v: top + (height - top - bottom) * (1 - v / hi)  # noqa: E731
    y_frac = lambda v: top + (height - top - bottom) * (1 - v)  # noqa: E731
    body = [f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}"/>',
            f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}"/>',
            f'<line class="axis" x1="{width - right}" y1="{top}" x2="{width - right}" y2="{height - bottom}"/>',
            f'<text x="{left}" y="{top - 10}" text-anchor="middle">total us</text>',
            f'<text x="{width - right}" y="{top - 10}" text-anchor="middle">NPU fraction</text>']
    for tick in nice_ticks(hi):
        body.append(f'<text x="{left - 6}" y="{y_total(tick) + 4:.1f}" text-anchor="end">{_fmt_tick(tick)}</text>'
                    f'<line class="grid" x1="{left}" y1="{y_total(tick):.1f}" x2="{width - right}" y2="{y_total(tick):.1f}"/>')
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(f'<text x="{width - right + 6}" y="{y_frac(tick) + 4:.1f}">{tick:g}</text>')
    for series, ys, css in (("total", y_total, "line-total"), ("npu", y_frac, "line-npu")):
        values = [(i, p.total_us if series == "total" else p.npu_fraction) for i, p in enumerate(points)]
        coords = " ".join(f"{x(i):.1f},{ys(v):.1f}" for i, v in values if v is not None)
        if coords:
            body.append(f'<polyline class="{css}" points="{coords}"/>')
    for i, p in enumerate(points):
        if p.total_us is None:
            continue
        css = "flag" if p.flagged else "point"
        tip = f"{p.label}: {p.total_us:.1f} us, NPU {p.npu_fraction if p.npu_fraction is not None else '-'}"
        tip += f" ({p.flagged})" if p.flagged else ""
        body.append(f'<circle class="{css}" cx="{x(i):.1f}" cy="{y_total(p.total_us):.1f}" r="{5 if p.flagged else 3}">'
                    f"<title>{escape(tip)}</title></circle>")
    shown = sorted({round(i * (n - 1) / (X_LABELS - 1)) for i in range(X_LABELS)}) if n > 1 else [0] * bool(n)
    for i in shown:
        date, clock = axis_label(points[i])
        body.append(f'<line class="axis" x1="{x(i):.1f}" y1="{height - bottom}" x2="{x(i):.1f}" y2="{height - bottom + 4}"/>'
                    f'<text x="{x(i):.1f}" y="{height - bottom + 16}" text-anchor="middle">{escape(date)}</text>'
                    f'<text x="{x(i):.1f}" y="{height - bottom + 29}" text-anchor="middle">{escape(clock)}</text>')
    body.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" text-anchor="middle">'
                "run (date and time, UTC; hover a point for its commit)</text>")
    return _svg(width, height, body, label)
