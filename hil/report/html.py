"""`hil report DB --out report.html`: one self-contained page from the history database.

Per model and board: the latest run's per-op bars (NPU / CPU), its timeline, the nightly trend
of total latency and NPU fraction with flagged runs marked, and the regression table, all telling the
verdict the gate stored with each run (`gate_verdict`), never a second judgement. Runs of different
time bases (hil.regress.timebase: instructions, host nanoseconds, ...) count different things, so each
time base gets its own trend chart and its own "previous run": a replayed run among runtime runs is
never joined to their line. Everything (SVG, CSS, a few lines of JS) is inline, so the file opens
offline and can be mailed or archived.
"""

from __future__ import annotations

import time
from html import escape
from pathlib import Path
from typing import Any

from hil.base import atomic
from hil.records.profile_model import Profile
from hil.regress import history
from hil.regress.compare import Comparison, compare_profiles
from hil.regress.identity import op_types_text, readable_names
from hil.regress.timebase import TimeBase
from hil.report import svg
from hil.report.timeline import layout_iteration

MAX_BARS = 40
_ROW_CSS = {"regression": "reg", "improvement": "imp", "cannot judge": "warn"}

_CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:980px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;cursor:pointer;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:18px 0 6px}section.collapsed>div{display:none}
.chart text{font:11px system-ui,sans-serif;fill:#333}
.npu{fill:#2a9d8f}.cpu{fill:#e76f51}.method{fill:#8d99ae}.call{fill:#e9c46a}.other{fill:#adb5bd}
.axis{stroke:#999}.grid{stroke:#eee}.line-total{fill:none;stroke:#264653;stroke-width:2}
.line-npu{fill:none;stroke:#2a9d8f;stroke-width:1.5;stroke-dasharray:4 3}
.point{fill:#264653}.flag{fill:#d62828}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
td:first-child,th:first-child,td.l,th.l{text-align:left}.reg{color:#d62828}.imp{color:#2a9d8f}.warn{color:#b36b00}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
"""

_JS = """
document.querySelectorAll('h2').forEach(function(h){h.addEventListener('click',function(){
  h.parentElement.classList.toggle('collapsed');});});
"""


def _fmt(value: Any, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def _bars(profile: Profile) -> str:
    events = sorted(profile.of_kind("npu_kernel", "cpu_op"), key=lambda e: -e.spread[0])[:MAX_BARS]
    names = {id(e): name for e, name in zip(profile.events, readable_names(profile.events))}
    bars = [svg.Bar(names[id(e)], e.spread[0], str(e.kind),
                    f"{names[id(e)]} ({e.kind}; op types {op_types_text(e)})") for e in events]
    if not bars:
        return "<p>No operator events.</p>"
    totals = profile.totals_us
    legend = ('<p class="legend"><span class="npu" style="background:#2a9d8f"></span>NPU kernels '
              f"{_fmt(totals.get('npu_kernels'))} us<span style=\"background:#e76f51\"></span>CPU operators "
              f"{_fmt(totals.get('cpu_ops'))} us; NPU fraction {_fmt(profile.npu_fraction, 3)}</p>")
    return legend + svg.bar_chart(bars, label=f"per-op p50 of {profile.model}")


def _diff_table(comparison: Comparison, title: str, limit: int = 10) -> str:
    """The largest changes between two runs, as numbers only: a diff, never a verdict (the gate's is above)."""
    rows = sorted((d for d in comparison.deltas if d.baseline_us is not None and d.now_us is not None),
                  key=lambda d: -abs(d.delta_us))[:limit]
    if not rows:
        return f"<p>{escape(title)}: no event in both runs.</p>"
    body = "".join(
        f'<tr><td>{escape(d.name)}</td><td class="l">{escape(d.kind)}</td><td class="l">{escape(d.op_types)}</td>'
        f"<td>{_fmt(d.baseline_us)}</td><td>{_fmt(d.now_us)}</td><td>{_signed(d.change_pct)}</td><td>{d.delta_us:+.1f}</td></tr>"
        for d in rows
    )
    head = ("<tr><th>event</th><th class='l'>kind</th><th class='l'>op types</th><th>previous us</th><th>now us</th>"
            "<th>change %</th><th>change us</th></tr>")
    return f"<h3>{escape(title)}</h3><table>{head}{body}</table>"


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


def _recorded_table(recorded: dict[str, Any], title: str, limit: int = 20) -> str:
    rows = [e for e in recorded.get("events", []) if e.get("verdict") in ("regression", "improvement", "cannot judge")]
    rows.sort(key=lambda e: (e["verdict"] != "regression", -abs(e.get("change_pct") or 0)))
    rows = rows[:limit]
    if not rows:
        return f"<p>{escape(title)}: no regression, no improvement.</p>"
    body = "".join(
        f'<tr class="{_ROW_CSS[e["verdict"]]}"><td>{escape(str(e["name"]))}</td>'
        f'<td class="l">{escape(str(e["kind"]))}</td><td class="l">{escape(str(e["op_types"]))}</td>'
        f'<td>{_fmt(e.get("baseline_us"))}</td><td>{_fmt(e.get("now_us"))}</td><td>{(e.get("change_pct") or 0):+.1f}</td>'
        f'<td>{escape(e["verdict"])}</td></tr>'
        for e in rows
    )
    head = "<tr><th>event</th><th class='l'>kind</th><th class='l'>op types</th><th>baseline us</th><th>now us</th><th>change %</th><th></th></tr>"
    return f"<h3>{escape(title)}</h3><table>{head}{body}</table>"


def _flagged_runs(runs: list[dict[str, Any]], points: list[svg.TrendPoint]) -> str:
    """Every flagged run but the latest, with the worst rows of its baseline comparison."""
    parts = []
    for run, point in list(zip(runs, points))[:-1]:
        if not point.flagged:
            continue
        title = f"Flagged run {point.label}: {point.flagged} ({gate_verdict(run)[1] or 'no comparison'})"
        recorded = run.get("comparison")
        parts.append(_recorded_table(recorded, title, limit=5) if recorded else f"<h3>{escape(title)}</h3>")
    return "\n".join(parts)


def _flags(run: dict[str, Any]) -> str:
    """Why a run is marked on the trend: the test failed, or the gate's stored verdict was not a pass."""
    status, _, baseline = gate_verdict(run)
    flags = [] if run["passed"] else ["failed"]
    if judged_of(run).startswith("no"):  # compared with nothing: said as such, never "against" a baseline
        flags.append(f"not judged ({judged_of(run)[len('no: '):]})")
    elif status and status != "pass":
        flags.append(f"{status} against {baseline}")
    return "; ".join(flags)


def judged_of(run: dict[str, Any]) -> str:
    """Whether the gate judged a run, as stored with it: "yes", "no: <why>", or "" when it was not asked."""
    stored = run.get("comparison") or {}
    decision = stored.get("decision") or {}
    if not stored:
        return ""
    judged = decision.get("judged")
    if judged is None:  # stored before `judged` was: a cannot-judge status is the only unjudged verdict
        judged = decision.get("status") != "cannot judge"
    return "yes" if judged else f"no: {decision.get('reason') or decision.get('not_judged') or '?'}"


def _headline(run: dict[str, Any]) -> str:
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
    """One time base's trend chart (or, when none of its runs has figures, the list of those runs)."""
    runs = [run for run, _ in items]
    base = TimeBase.parse(key)
    mark = ("" if not several else
            " <b class=warn>(another time base than the latest run's: not comparable with it, never on its line)</b>")
    title = f"Nightly trend in time base {escape(base.describe())}: {len(runs)} run(s){mark}"
    if all(run.get("total_us") is None for run in runs):
        listed = ", ".join(f"{escape(str(r['time']))} ({'passed' if r['passed'] else 'failed'})" for r in runs)
        return f"<h3>{title}</h3><p>No figures (runs that left no profile): {listed}.</p>"
    points = [svg.TrendPoint(f"{run['time']} {str(run.get('git_commit') or '')[:8]}".strip(), run.get("total_us"),
                             run.get("npu_fraction"), _flags(run), when=str(run["time"])) for run in runs]
    parts = [f"<h3>{title}; total latency (solid) and NPU fraction (dashed); red = the test failed or the gate's "
             "verdict was not a pass</h3>", svg.trend(points, label=f"trend of {model} on {board} in {key}"),
             _flagged_runs(runs, points)]
    return "\n".join(parts)


def _section(model: str, board: str, runs: list[dict[str, Any]], profiles: list[Profile]) -> str:
    latest, latest_run = profiles[-1], runs[-1]
    groups = _by_time_base(runs, profiles)
    latest_key = str(latest_run["time_base"])
    judged = judged_of(latest_run)
    parts = [
        f"<section><h2>{escape(model)} on {escape(board)}</h2><div>",
        f"<p>{len(runs)} run(s); latest {escape(str(latest_run['time']))}, commit {escape(_commit(latest_run))}, "
        f"{'passed' if latest_run['passed'] else '<b class=reg>failed</b>'}, total {_fmt(latest_run.get('total_us'))} us, "
        f"time base {escape(TimeBase.parse(latest_key).describe())}, "
        f"judged {escape(judged or 'not asked')}, artifacts {escape(str(latest_run.get('artifacts') or '-'))}</p>",
        _headline(latest_run),
        *(_trend(model, board, key, items, key != latest_key) for key, items in groups.items()),
        "<h3>Per-op time of the latest run (p50)</h3>", _bars(latest),
        "<h3>Timeline of one inference of the latest run (p50 of each event)</h3>",
        svg.timeline(layout_iteration(latest, None), label=f"timeline of {model}"),
    ]
    if latest_run.get("comparison"):
        _, reason, baseline = gate_verdict(latest_run)
        parts.append(_recorded_table(latest_run["comparison"], f"Latest run against {baseline} (the gate's verdict)"))
    same_base = [profile for run, profile in groups[latest_key] if run.get("total_us") is not None]
    if len(same_base) > 1 and latest_run.get("total_us") is not None:
        parts.append(_diff_table(compare_profiles(same_base[-2], latest),
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
        f"<style>{_CSS}</style></head><body><h1>et-hil nightly report</h1>"
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
