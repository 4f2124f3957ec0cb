"""`hil report DB --out report.html`: one self-contained page from the history database.

Per model and board: the latest run's per-op bars (NPU / CPU), its timeline, the nightly trend
of total latency and NPU fraction with flagged runs marked, and the regression table, all telling the
verdict the gate stored with each run (`gate_verdict`), never a second judgement. Runs of different
time bases (hil.regress.timebase: instructions, host nanoseconds, ...) count different things, so each
time base gets its own trend chart and its own "previous run": a replayed run among runtime runs is
never joined to their line. Everything (SVG, CSS, a few lines of JS) is inline, so the file opens
offline and can be mailed or archived.

The page is read at a glance in a browser 1000 px wide: each marked run drawn as what it is (a regression,
a run not judged, a failed test: hil.report.marks) and its reason said once, the trend fitted to the runs
(hil.report.trend), events named by the user's layers (hil.report.tables) and the flagged layer's own
trend (hil.report.layer_trend); text wraps, nothing widens the page past its window.
"""

from __future__ import annotations

import time
from html import escape
from pathlib import Path
from typing import Any

from hil.base import atomic
from hil.records.events import METHOD, METHOD_EXECUTE
from hil.records.profile_model import Profile
from hil.regress import history
from hil.regress.compare import compare_profiles
from hil.regress.identity import event_key
from hil.regress.timebase import TimeBase
from hil.report import svg
from hil.report.layer_trend import layer_trend
from hil.report.marks import REGRESSION, STYLES, legend_html, mark_of, marks_css, not_judged_reason, stored_change
from hil.report.tables import bars, diff_table, fmt, recorded_table
from hil.report.timeline import layout_iteration
from hil.report.trend import SHORT_SHA, TrendPoint, trend

# The key of the total's own event (Method::execute) in a stored comparison: the trend's figure.
METHOD_KEY = event_key(METHOD, METHOD_EXECUTE, 0)

_CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:980px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;cursor:pointer;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:18px 0 6px}section.collapsed>div{display:none}
p,h3,li{overflow-wrap:anywhere}svg.chart{max-width:100%;height:auto}
.chart text{font:11px system-ui,sans-serif;fill:#333}.chart text.sha{font-family:monospace}
.npu{fill:#2a9d8f}.cpu{fill:#e76f51}.method{fill:#8d99ae}.call{fill:#e9c46a}.other{fill:#adb5bd}
.axis{stroke:#999}.grid{stroke:#eee}.line-total{fill:none;stroke:#264653;stroke-width:2}
.line-npu{fill:none;stroke:#2a9d8f;stroke-width:1.5;stroke-dasharray:4 3}
.point{fill:#264653}.chart text.change{font-weight:bold;paint-order:stroke;stroke:#fff;stroke-width:3px}
table{border-collapse:collapse;margin:6px 0;max-width:100%}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
td:first-child,th:first-child,td.l,th.l{text-align:left;white-space:normal}.reg{color:#d62828}.imp{color:#2a9d8f}.warn{color:#b36b00}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
.legend span.mark-key{width:auto;height:auto;margin:0 14px 0 0}.legend.marks svg{vertical-align:middle}
ul.flagged{padding-left:20px}.layer{font-family:monospace}
"""

_JS = """
document.querySelectorAll('h2').forEach(function(h){h.addEventListener('click',function(){
  h.parentElement.classList.toggle('collapsed');});});
"""


def gate_verdict(run: dict[str, Any]) -> tuple[str, str, str]:
    """(status, reason, baseline) of the verdict the gate stored with a run; ("", "", "") when it compared nothing.

    The report repeats this verdict everywhere (headline, trend marks, tables) and never judges again,
    so it cannot tell a different story from the one the nightly gave. Rows written before decisions
    were stored read as "regression" or "pass" from the comparison's own flag.
    """
    stored = run.get("comparison") or {}
    if not stored:
        return "", "", ""
    decision = stored.get("decision") or {}
    status = decision.get("status") or ("regression" if stored.get("has_regression") else "pass")
    return status, str(decision.get("reason") or status), str(stored.get("baseline") or "baseline")


def _flagged_runs(items: list[tuple[dict[str, Any], Profile]], *, latest_last: bool) -> str:
    """Every marked run but the page's latest (the headline says its verdict; `latest_last`: it ends `items`),
    its reason said once; a regression with the worst rows of its comparison."""
    lines, tables = [], []
    for run, _ in items[:-1] if latest_last else items:
        mark = mark_of(run)
        if not mark.kind:
            continue
        name = f"{run['time']} {str(run.get('git_commit') or '')[:SHORT_SHA]}".strip()
        lines.append(f'<li><span class="{STYLES[mark.kind].css}-text">{STYLES[mark.kind].name}'
                     f"</span>, run {escape(name)}: {escape(mark.reason)}</li>")
        if mark.kind == REGRESSION and run.get("comparison"):
            tables.append(recorded_table(run["comparison"], f"Regression of run {name}", limit=5))
    if not lines:
        return ""
    heading = "Marked runs before the latest" if latest_last else "Marked runs"
    return f'<h3>{heading}</h3><ul class="flagged">{"".join(lines)}</ul>' + "".join(tables)


def judged_of(run: dict[str, Any]) -> str:
    """Whether the gate judged a run, as stored with it: "yes", "no", or "" when it was not asked."""
    if not run.get("comparison"):
        return ""
    return "yes" if not_judged_reason(run) is None else "no"


def _headline(run: dict[str, Any]) -> str:
    """The latest run's verdict, its one line said once (the trend's mark of it has it on hover)."""
    status, reason, baseline = gate_verdict(run)
    if not status:
        return "<p><b>Gate verdict of the latest run:</b> not compared (the session had no --hil-baseline or --hil-history).</p>"
    css = {"regression": "reg", "pass": "imp"}.get(status, "warn")
    against = f", against {escape(baseline)}" if baseline and judged_of(run) == "yes" else ""
    return f'<p><b>Gate verdict of the latest run:</b> <span class="{css}">{escape(reason)}</span>{against}.</p>'


def _commit(run: dict[str, Any]) -> str:
    commit = str(run.get("git_commit") or "-")
    return commit + (" (uncommitted changes)" if run.get("commit_dirty") else "")


def _by_time_base(runs: list[dict[str, Any]], profiles: list[Profile]) -> dict[str, list[tuple[dict[str, Any], Profile]]]:
    """The runs of one model and board per time base, the latest run's base first."""
    groups: dict[str, list[tuple[dict[str, Any], Profile]]] = {}
    for run, profile in zip(reversed(runs), reversed(profiles)):
        groups.setdefault(str(run["time_base"]), []).insert(0, (run, profile))
    return groups


def _trend(model: str, board: str, key: str, items: list[tuple[dict[str, Any], Profile]], several: bool) -> str:
    """One time base's trend chart with its marks' legend, the runs it marked and the flagged layer's trend
    (or, when none of its runs has figures, the list of those runs)."""
    runs = [run for run, _ in items]
    base = TimeBase.parse(key)
    other = ("" if not several else
             " <b class=warn>(another time base than the latest run's: not comparable with it, never on its line)</b>")
    title = f"Nightly trend in time base {escape(base.describe())}: {len(runs)} run(s){other}"
    if all(run.get("total_us") is None for run in runs):
        listed = ", ".join(f"{escape(str(r['time']))} ({'passed' if r['passed'] else 'failed'})" for r in runs)
        return f"<h3>{title}</h3><p>No figures (runs that left no profile): {listed}.</p>"
    points = [TrendPoint(f"{run['time']} {str(run.get('git_commit') or '')[:SHORT_SHA]}".strip(), run.get("total_us"),
                         run.get("npu_fraction"), mark_of(run), when=str(run["time"]),
                         commit=str(run.get("git_commit") or ""), gate_change=stored_change(run, METHOD_KEY))
              for run in runs]
    kinds = {point.mark.kind for point in points if point.value is not None}
    parts = [f"<h3>{title}; total latency (solid) and NPU fraction (dashed)</h3>",
             trend(points, label=f"trend of {model} on {board} in {key}"), legend_html(kinds),
             _flagged_runs(items, latest_last=not several), layer_trend(model, board, key, items)]
    return "\n".join(part for part in parts if part)


def _section(model: str, board: str, runs: list[dict[str, Any]], profiles: list[Profile]) -> str:
    latest, latest_run = profiles[-1], runs[-1]
    groups = _by_time_base(runs, profiles)
    latest_key = str(latest_run["time_base"])
    judged = judged_of(latest_run)
    parts = [
        f"<section><h2>{escape(model)} on {escape(board)}</h2><div>",
        f"<p>{len(runs)} run(s); latest {escape(str(latest_run['time']))}, commit {escape(_commit(latest_run))}, "
        f"{'passed' if latest_run['passed'] else '<b class=reg>failed</b>'}, total {fmt(latest_run.get('total_us'))} us, "
        f"time base {escape(TimeBase.parse(latest_key).describe())}, "
        f"judged {escape(judged or 'not asked')}, artifacts {escape(str(latest_run.get('artifacts') or '-'))}</p>",
        _headline(latest_run),
        *(_trend(model, board, key, items, key != latest_key) for key, items in groups.items()),
        "<h3>Per-op time of the latest run (p50), by the user's layer where known</h3>", bars(latest),
        "<h3>Timeline of one inference of the latest run (p50 of each event)</h3>",
        svg.timeline(layout_iteration(latest, None), label=f"timeline of {model}"),
    ]
    if latest_run.get("comparison"):
        _, reason, baseline = gate_verdict(latest_run)
        parts.append(recorded_table(latest_run["comparison"], f"Latest run against {baseline} (the gate's verdict)"))
    same_base = [profile for run, profile in groups[latest_key] if run.get("total_us") is not None]
    if len(same_base) > 1 and latest_run.get("total_us") is not None:
        parts.append(diff_table(compare_profiles(same_base[-2], latest), latest,
                                "Difference from the previous run of the same time base (p50 change; a diff, not a verdict)"))
    parts.append("</div></section>")
    return "\n".join(parts)


def _left_out(notes: list[str], unverified: int) -> str:
    """The damaged rows the page leaves out, and the rows no checksum vouches for yet (hil.regress.history_seal)."""
    parts = [f'<p class="reg"><b>Left out, damaged:</b> {escape(note)}</p>' for note in notes]
    if unverified:
        parts.append(f'<p class="warn">{unverified} run(s) written before the history kept checksums: unverified '
                     "(the next run appended by this et-hil gives them theirs).</p>")
    return "\n".join(parts)


def build_report(db_path: Path) -> tuple[str, list[str]]:
    """The whole page as a string, and one line per damaged row it left out."""
    conn = history.open_existing(db_path)
    try:
        stored = history.read_history(conn)
    finally:
        conn.close()
    runs = [run for run, _ in stored.runs]
    notes = [damage.describe(db_path) for damage in stored.damaged]
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], Profile]]] = {}
    for run, events in stored.runs:
        groups.setdefault((run["model"], run["board"]), []).append((run, history.profile_from_history(run, events)))
    sections = [_section(model, board, [r for r, _ in items], [p for _, p in items]) for (model, board), items in sorted(groups.items())]
    generated = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime())
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>et-hil report</title>"
        f"<style>{_CSS}{marks_css()}</style></head><body><h1>et-hil nightly report</h1>"
        f"<p>{len(runs)} run(s) of {len(groups)} model/board pair(s) from {escape(str(db_path))}; generated {generated}.</p>"
        + _left_out(notes, stored.unverified)
        + ("\n".join(sections) or "<p>The history holds no runs yet.</p>")
        + f"<script>{_JS}</script></body></html>\n"
    ), notes


def render_report(db_path: Path) -> str:
    """The whole page as a string."""
    return build_report(db_path)[0]


def write_report(db_path: Path, out: Path) -> Path:
    return write_report_noting(db_path, out)[0]


def write_report_noting(db_path: Path, out: Path) -> tuple[Path, list[str]]:
    """The page written to `out`, and the damaged rows it left out (one line each, for the command to say)."""
    page, notes = build_report(db_path)
    return atomic.write_text(Path(out), page), notes
