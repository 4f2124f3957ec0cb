"""Inline SVG charts for the report: no library, no network, readable as text in a diff.

Each function returns one `<svg>` element; colours come from CSS classes defined in the page
(`npu`, `cpu`, `method`, ...) so the look is set in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from hil.report.timeline import Span

LABEL_W = 260
ROW_H = 18
LANES = ("method", "delegate_call", "cpu_op", "npu_kernel", "profiling_dump", "delegate_op")
LANE_NAMES = {"method": "Method::execute", "delegate_call": "delegate call", "cpu_op": "CPU ops",
              "npu_kernel": "NPU kernels", "profiling_dump": "profiling dump", "delegate_op": "other delegates"}


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


def bar_chart(bars: list[Bar], *, width: int = 760, label: str = "per-op time") -> str:
    """Horizontal bars, one per event, coloured NPU or CPU, longest scaled to the chart width."""
    top = max([b.value for b in bars] + [1e-9])
    span = width - LABEL_W - 70
    body = []
    for i, bar in enumerate(bars):
        y = i * ROW_H
        w = max(1.0, span * bar.value / top)
        body.append(
            f'<g><title>{escape(bar.title or bar.label)}: {bar.value:.1f} us</title>'
            f'<text x="{LABEL_W - 6}" y="{y + 13}" text-anchor="end">{escape(bar.label[:42])}</text>'
            f'<rect class="{_css(bar.kind)}" x="{LABEL_W}" y="{y + 3}" width="{w:.1f}" height="{ROW_H - 6}"/>'
            f'<text x="{LABEL_W + w + 4:.1f}" y="{y + 13}">{bar.value:.1f}</text></g>'
        )
    return _svg(width, max(ROW_H, len(bars) * ROW_H), body, label)


def timeline(spans: list[Span], *, width: int = 760, label: str = "timeline of one inference") -> str:
    """One lane per event kind, spans placed at their start and scaled to the iteration's length."""
    end = max([s.start_us + s.dur_us for s in spans] + [1e-9])
    start = min([s.start_us for s in spans] + [0.0])
    lanes = [k for k in LANES if any(s.kind == k for s in spans)]
    scale = (width - 140) / (end - start)
    body = []
    for row, lane in enumerate(lanes):
        y = row * (ROW_H + 6)
        body.append(f'<text x="132" y="{y + 13}" text-anchor="end">{LANE_NAMES[lane]}</text>')
        for s in (s for s in spans if s.kind == lane):
            x = 140 + (s.start_us - start) * scale
            tip = f"{s.name} [{', '.join(s.op_types) or '-'}] {s.start_us:.1f}+{s.dur_us:.1f} us"
            body.append(f'<rect class="{_css(s.kind)}" x="{x:.1f}" y="{y + 2}" width="{max(0.5, s.dur_us * scale):.1f}" '
                        f'height="{ROW_H - 2}"><title>{escape(tip)}</title></rect>')
    axis_y = len(lanes) * (ROW_H + 6) + 12
    body.append(f'<text x="140" y="{axis_y}">0 us</text><text x="{width - 4}" y="{axis_y}" text-anchor="end">{end - start:.0f} us</text>')
    return _svg(width, axis_y + 6, body, label)


@dataclass
class TrendPoint:
    label: str  # time and commit, shown on hover
    total_us: float | None
    npu_fraction: float | None
    flagged: str = ""  # why this run is marked (regression, failed); empty when it is not


def trend(points: list[TrendPoint], *, width: int = 760, height: int = 220, label: str = "nightly trend") -> str:
    """Total latency (left axis, line) and NPU fraction (right axis 0..1, dashed) per run; flagged runs in red."""
    left, right, top, bottom = 60, 50, 12, 28
    totals = [p.total_us for p in points if p.total_us is not None]
    hi = max(totals + [1e-9]) * 1.1
    n = len(points)
    x = lambda i: left + (width - left - right) * (i / (n - 1) if n > 1 else 0.5)  # noqa: E731
    y_total = lambda v: top + (height - top - bottom) * (1 - v / hi)  # noqa: E731
    y_frac = lambda v: top + (height - top - bottom) * (1 - v)  # noqa: E731
    body = [
        f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}"/>',
        f'<text x="{left - 4}" y="{top + 10}" text-anchor="end">{hi:.0f} us</text>',
        f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>',
        f'<text x="{width - right + 4}" y="{top + 10}">NPU 1.0</text>',
        f'<text x="{width - right + 4}" y="{height - bottom}">0.0</text>',
    ]
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
    body.append(f'<text x="{left}" y="{height - 8}">{escape(points[0].label if points else "")}</text>')
    if n > 1:
        body.append(f'<text x="{width - right}" y="{height - 8}" text-anchor="end">{escape(points[-1].label)}</text>')
    return _svg(width, height, body, label)
