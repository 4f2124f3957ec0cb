"""The trend chart: one value per run (a total latency, or one layer's p50), read at a glance.

Three things make a nightly's +2% visible: the value axis is fitted to the runs (an axis from 0 flattens
a 2% step into a pixel, so the chart says when its axis does not start at 0), a regression's change as
the gate measured it (against its baseline, from the comparison it stored) is written beside its marker, and each run's commit is written under the time axis
(short sha) with its date and time of day, not only in a tooltip. Marks (regression, not judged, failed)
come from hil.report.marks, each with its own colour and shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

from hil.report.marks import REGRESSION, Mark, marker_svg
from hil.report.svg import MIN_HIGH, nice_step, svg_element

# Runs too close to all be named under the time axis get X_LABELS of them named, plus the regressions.
X_LABELS = 5
MIN_LABEL_GAP = 64  # px between two named runs' labels (a date is ~60 px at 11 px)
SHORT_SHA = 7
_SHA_CSS = ' class="sha"'  # the commit's line under the axis, in a fixed-width font


@dataclass
class TrendPoint:
    label: str  # time and commit, shown on hover
    value: float | None  # the charted figure (total us, or a layer's p50 us); None: the run has none
    npu_fraction: float | None = None
    mark: Mark = field(default_factory=Mark)
    when: str = ""  # the run's time (ISO 8601), written under the axis as its date and time of day
    commit: str = ""  # the project's commit, written under the axis as its short sha
    gate_change: float | None = None  # percent, the charted figure's change as the gate stored it (vs its baseline)


def axis_label(point: TrendPoint) -> tuple[str, str, str]:
    """The lines under the time axis for one run: date, time of day (two runs of one day differ), short sha."""
    text = point.when or point.label.split(" ")[0]
    date, _, clock = text.replace(" ", "T", 1).partition("T")
    return date, clock.rstrip("Z")[:8], point.commit[:SHORT_SHA]


def fitted_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values from at or below `low` to at or above `high`, about `count` of them: 2440, 2460, ...
    for runs between 2448 and 2497. Equal values get a span of 1% of their size around them."""
    if high - low <= max(abs(high), 1.0) * 1e-9:
        pad = max(abs(high) * 0.01, MIN_HIGH)
        low, high = low - pad, high + pad
    step = nice_step((high - low) / (count - 1))
    first = math.floor(low / step) * step
    if low >= 0 > first:  # never below 0 for figures that cannot be
        first = 0.0
    ticks = [first]
    while ticks[-1] < high - step * 1e-9:
        ticks.append(ticks[-1] + step)
    return ticks if len(ticks) > 1 else ticks + [ticks[0] + step]


def tick_text(value: float, step: float) -> str:
    """A tick's value with as many decimals as its step needs (2447.5 stays 2447.5, never 2.45e+03)."""
    decimals = max(0, -math.floor(math.log10(step)) + (1 if round(step / 10 ** math.floor(math.log10(step)), 6) % 1 else 0))
    return f"{value:,.{decimals}f}"


def change_pct(points: list[TrendPoint], index: int) -> float | None:
    """The change of point `index` from the last run before it with a value, in percent (None: no such run)."""
    now = points[index].value
    before = next((p.value for p in reversed(points[:index]) if p.value is not None), None)
    if now is None or not before:
        return None
    return 100.0 * (now - before) / before


def _labelled(points: list[TrendPoint], x: list[float]) -> list[int]:
    """Which runs are named under the axis: all that fit; else the regressions first, then the first, last
    and evenly between, leaving out any closer than MIN_LABEL_GAP to one already named."""
    n = len(points)
    if n < 2 or x[1] - x[0] >= MIN_LABEL_GAP:
        return list(range(n))
    wanted = [i for i, p in enumerate(points) if p.mark.kind == REGRESSION]
    wanted += [round(i * (n - 1) / (X_LABELS - 1)) for i in range(X_LABELS)]
    chosen: list[int] = []
    for i in wanted:
        if all(abs(x[i] - x[j]) >= MIN_LABEL_GAP for j in chosen):
            chosen.append(i)
    return sorted(chosen)


def trend(points: list[TrendPoint], *, axis_name: str = "total us", npu_line: bool = True, width: int = 760,
          height: int = 250, label: str = "nightly trend") -> str:
    """The value per run (left axis, fitted to the runs, solid line) and, with `npu_line`, the NPU fraction
    (right axis 0..1, dashed); marked runs drawn with their mark, a regression's change written beside it."""
    left, right, top, bottom = 78, 60 if npu_line else 40, 30, 70
    values = [p.value for p in points if p.value is not None] or [0.0]
    ticks = fitted_ticks(min(values), max(values))
    low, high, step = ticks[0], ticks[-1], ticks[1] - ticks[0]
    n = len(points)
    xs = [left + (width - left - right) * (i / (n - 1) if n > 1 else 0.5) for i in range(n)]
    y_value = lambda v: top + (height - top - bottom) * (1 - (v - low) / (high - low))  # noqa: E731
    y_frac = lambda v: top + (height - top - bottom) * (1 - v)  # noqa: E731
    bottom_y = height - bottom
    named = axis_name if low <= 0 else f"{axis_name} (axis from {tick_text(low, step)}, not 0)"
    body = [f'<line class="axis" x1="{left}" y1="{bottom_y}" x2="{width - right}" y2="{bottom_y}"/>',
            f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{bottom_y}"/>',
            f'<text x="4" y="{top - 14}">{escape(named)}</text>']
    for tick in ticks:
        body.append(f'<text x="{left - 6}" y="{y_value(tick) + 4:.1f}" text-anchor="end">{tick_text(tick, step)}</text>'
                    f'<line class="grid" x1="{left}" y1="{y_value(tick):.1f}" x2="{width - right}" y2="{y_value(tick):.1f}"/>')
    series = [(lambda p: p.value, y_value, "line-total")]
    if npu_line:
        body += [f'<line class="axis" x1="{width - right}" y1="{top}" x2="{width - right}" y2="{bottom_y}"/>',
                 f'<text x="{width - 4}" y="{top - 14}" text-anchor="end">NPU fraction</text>']
        body += [f'<text x="{width - right + 6}" y="{y_frac(t) + 4:.1f}">{t:g}</text>' for t in (0.0, 0.25, 0.5, 0.75, 1.0)]
        series.append((lambda p: p.npu_fraction, y_frac, "line-npu"))
    for pick, ys, css in series:
        coords = " ".join(f"{xs[i]:.1f},{ys(v):.1f}" for i, p in enumerate(points) if (v := pick(p)) is not None)
        if coords:
            body.append(f'<polyline class="{css}" points="{coords}"/>')
    for i, p in enumerate(points):
        if p.value is not None:
            body.append(_marker(points, i, xs[i], y_value(p.value)))
    for i in _labelled(points, xs):
        lines = [text for text in axis_label(points[i]) if text]
        body.append(f'<line class="axis" x1="{xs[i]:.1f}" y1="{bottom_y}" x2="{xs[i]:.1f}" y2="{bottom_y + 4}"/>')
        body += [f'<text x="{xs[i]:.1f}" y="{bottom_y + 16 + 13 * row}" text-anchor="middle"{_SHA_CSS * (row == 2)}>'
                 f'{escape(text)}</text>' for row, text in enumerate(lines)]
    body.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 4}" text-anchor="middle">'
                "run: date, time of day (UTC) and commit</text>")
    return svg_element(width, height, body, label)


def _marker(points: list[TrendPoint], i: int, x: float, y: float) -> str:
    """One run's point: a small dot, or its mark with a tooltip; a regression's change (the gate's) written
    above it, inside the chart at either end."""
    p = points[i]
    change = change_pct(points, i)
    said = "" if change is None else f", {change:+.1f}% from the run before"
    said += "" if p.gate_change is None else f", {p.gate_change:+.1f}% against the gate's baseline"
    npu = f", NPU {p.npu_fraction:.3f}" if p.npu_fraction is not None else ""
    tip = escape(f"{p.label}: {p.value:.1f} us{npu}{said}" + (f" ({p.mark.reason})" if p.mark.kind else ""))
    if not p.mark.kind:
        return f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3"><title>{tip}</title></circle>'
    drawn = marker_svg(p.mark.kind, x, y, 5.5, tip)
    if p.mark.kind == REGRESSION and p.gate_change is not None:
        anchor, dx = ("end", -8) if i == len(points) - 1 and i else ("start", 8) if i == 0 else ("middle", 0)
        drawn += (f'<text class="change {p.mark.style.css}" x="{x + dx:.1f}" y="{y - 11:.1f}" '
                  f'text-anchor="{anchor}">{p.gate_change:+.1f}% vs baseline</text>')
    return drawn
