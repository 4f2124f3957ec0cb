"""The report's per-op bars and tables, each event named by the user's layer where the ETRecord named it.

`native_call_convolution.out #2` says which kernel ran, not which of the user's convolutions; the module
path (`features.3`) and line (`models.py:13`) do. The bars put the module path first, so a label cut to
its column still shows it; the diff table gives it a column of its own, as `hil table` does.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from hil.records.profile_model import Profile
from hil.regress.compare import Comparison
from hil.regress.identity import EventLabel, event_labels, keyed_events, op_types_text
from hil.report import svg

MAX_BARS = 40
_ROW_CSS = {"regression": "reg", "improvement": "imp", "cannot judge": "warn"}


def fmt(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def breakable(text: str) -> str:
    """`text` escaped, with a line-break chance after each `.`, `_` and `/`: a long operator or module name
    wraps in its cell instead of widening the table past the page."""
    return re.sub(r"([._/])", r"\1<wbr>", escape(text))


def _table(title: str, head: str, body: str) -> str:
    return f"<h3>{escape(title)}</h3><table>{head}{body}</table>"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def bar_label(label: EventLabel, modules: tuple[str, ...]) -> str:
    """`features.3: native_call_convolution.out`: the user's module paths first, then the event's name."""
    return f"{', '.join(modules)}: {label.name}" if modules else label.name


def bars(profile: Profile) -> str:
    """The latest run's per-op p50 bars (NPU kernels and CPU operators), longest first, with a legend."""
    labels = {id(e): label for e, label in zip(profile.events, event_labels(profile.events))}
    events = sorted(profile.of_kind("npu_kernel", "cpu_op"), key=lambda e: -e.spread[0])[:MAX_BARS]
    drawn = [svg.Bar(bar_label(labels[id(e)], e.modules), e.spread[0], str(e.kind),
                     f"{labels[id(e)].text} ({e.kind}; op types {op_types_text(e)})") for e in events]
    if not drawn:
        return "<p>No operator events.</p>"
    totals = profile.totals_us
    legend = ('<p class="legend"><span class="npu" style="background:#2a9d8f"></span>NPU kernels '
              f"{fmt(totals.get('npu_kernels'))} us<span style=\"background:#e76f51\"></span>CPU operators "
              f"{fmt(totals.get('cpu_ops'))} us; NPU fraction {fmt(profile.npu_fraction, 3)}</p>")
    return legend + svg.bar_chart(drawn, label=f"per-op p50 of {profile.model}")


def diff_table(comparison: Comparison, now: Profile, title: str, limit: int = 10) -> str:
    """The largest changes between two runs, as numbers only: a diff, never a verdict (the gate's is above).
    Events are named as in `now`, the user's layer in a column of its own when any event has one."""
    rows = sorted((d for d in comparison.deltas if d.baseline_us is not None and d.now_us is not None),
                  key=lambda d: -abs(d.delta_us))[:limit]
    if not rows:
        return f"<p>{escape(title)}: no event in both runs.</p>"
    named = dict(zip(keyed_events(now.events), event_labels(now.events)))
    labels = [named.get(d.key, EventLabel(d.name)) for d in rows]
    layered = any(label.where for label in labels)
    body = "".join(
        "<tr>" + (f'<td class="l layer">{breakable(label.where) or "-"}</td>' if layered else "")
        + f'<td class="l">{breakable(label.name)}</td><td class="l">{breakable(d.kind)}</td>'
        f'<td class="l">{breakable(d.op_types)}</td>'
        f"<td>{fmt(d.baseline_us)}</td><td>{fmt(d.now_us)}</td><td>{_signed(d.change_pct)}</td><td>{d.delta_us:+.1f}</td></tr>"
        for d, label in zip(rows, labels)
    )
    head = ("<tr>" + ("<th class='l'>layer (line)</th>" if layered else "")
            + "<th class='l'>event</th><th class='l'>kind</th><th class='l'>op types</th><th>previous us</th>"
            "<th>now us</th><th>change %</th><th>change us</th></tr>")
    return _table(title, head, body)


def recorded_table(recorded: dict[str, Any], title: str, limit: int = 20) -> str:
    """The rows of a comparison the gate stored (regressions first), as it named them."""
    rows = [e for e in recorded.get("events", []) if e.get("verdict") in ("regression", "improvement", "cannot judge")]
    rows.sort(key=lambda e: (e["verdict"] != "regression", -abs(e.get("change_pct") or 0)))
    rows = rows[:limit]
    if not rows:
        return f"<p>{escape(title)}: no regression, no improvement.</p>"
    body = "".join(
        f'<tr class="{_ROW_CSS[e["verdict"]]}"><td>{breakable(str(e["name"]))}</td>'
        f'<td class="l">{breakable(str(e["kind"]))}</td><td class="l">{breakable(str(e["op_types"]))}</td>'
        f'<td>{fmt(e.get("baseline_us"))}</td><td>{fmt(e.get("now_us"))}</td><td>{(e.get("change_pct") or 0):+.1f}</td>'
        f'<td>{escape(e["verdict"])}</td></tr>'
        for e in rows
    )
    head = "<tr><th>event</th><th class='l'>kind</th><th class='l'>op types</th><th>baseline us</th><th>now us</th><th>change %</th><th></th></tr>"
    return _table(title, head, body)
