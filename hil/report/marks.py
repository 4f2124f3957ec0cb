"""How the report marks one run on a trend: a regression, a run the gate did not judge, a failed test, or none.

A run the gate could not judge (a history still filling, no baseline, machine load) is not a regression,
and a page that draws both in one red makes a person chase a slowdown that was never found. So each run
gets one mark, each mark its own colour, marker shape and legend entry, and one line saying why: the
gate's own reason as it stored it with the run, never a second judgement.

Whether the gate judged a run is read in one place, `not_judged_reason`: today from the decision the gate
stored in the run's `comparison` (its `judged` flag, or for rows stored before that flag a "cannot judge"
status). A history with a column of its own for that flag needs only that function changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REGRESSION, NOT_JUDGED, FAILED = "regression", "not-judged", "failed"


@dataclass(frozen=True)
class MarkStyle:
    """How one kind of mark is drawn: its CSS class (colour), SVG marker shape, legend text."""

    css: str
    colour: str
    shape: str  # "circle", "diamond" or "triangle": told apart without colour too
    name: str  # what the mark is called in a line of text
    legend: str


STYLES = {
    REGRESSION: MarkStyle("mark-regression", "#d62828", "circle", "regression", "regression (the gate's verdict)"),
    NOT_JUDGED: MarkStyle("mark-not-judged", "#f4a000", "diamond", "not judged",
                          "not judged (the gate gave no verdict; why is said below)"),
    FAILED: MarkStyle("mark-failed", "#6a4c93", "triangle", "failed", "the test failed (the gate found no regression)"),
}


@dataclass(frozen=True)
class Mark:
    """One run's mark: `kind` (a key of STYLES, '' for none) and `reason`, the one line said for it."""

    kind: str = ""
    reason: str = ""

    @property
    def style(self) -> MarkStyle | None:
        return STYLES.get(self.kind)


def decision_of(run: dict[str, Any]) -> dict[str, Any]:
    """The decision the gate stored with a run ({} when it stored none)."""
    return (run.get("comparison") or {}).get("decision") or {}


def not_judged_reason(run: dict[str, Any]) -> str | None:
    """Why the gate did not judge this run (its one line), or None: judged, or no gate was asked.

    The one reader of "was this run judged" in the report (see the module docstring).
    """
    if not run.get("comparison"):
        return None
    decision = decision_of(run)
    judged = decision.get("judged")
    if judged is None:  # stored before `judged` was: a cannot-judge status is the only unjudged verdict
        judged = decision.get("status") != "cannot judge"
    return None if judged else str(decision.get("reason") or decision.get("not_judged") or "?")


def mark_of(run: dict[str, Any]) -> Mark:
    """The run's mark: not judged before anything else (a strict nightly fails such a run, and that failure
    is still no regression), then the gate's regression, then a failed test; none for a passed run."""
    failed = "" if run.get("passed") else "failed; "
    unjudged = not_judged_reason(run)
    if unjudged is not None:
        return Mark(NOT_JUDGED, failed + unjudged)
    decision = decision_of(run)
    status = decision.get("status") or ("regression" if (run.get("comparison") or {}).get("has_regression") else "")
    if status == "regression":
        against = (run.get("comparison") or {}).get("baseline") or "baseline"
        return Mark(REGRESSION, f"{decision['reason']}, against {against}" if decision.get("reason")
                    else f"regression against {against}")
    if not run.get("passed"):
        return Mark(FAILED, "the test failed" + (f" (gate: {decision['reason']})" if decision.get("reason") else ""))
    return Mark()


def stored_change(run: dict[str, Any], key: str) -> float | None:
    """The change in percent of event `key` (hil.regress.identity) in the comparison the gate stored with a
    run, against that comparison's baseline; None when it stored none for that event."""
    for event in (run.get("comparison") or {}).get("events") or []:
        if event.get("key") == key and isinstance(event.get("change_pct"), (int, float)):
            return float(event["change_pct"])
    return None


def marker_svg(kind: str, x: float, y: float, size: float, title: str = "") -> str:
    """One mark's SVG marker centred on (x, y); its tooltip `title` (already escaped) when given."""
    style = STYLES[kind]
    tip = f"<title>{title}</title>" if title else ""
    if style.shape == "circle":
        return f'<circle class="{style.css}" cx="{x:.1f}" cy="{y:.1f}" r="{size:.1f}">{tip}</circle>'
    if style.shape == "diamond":
        s = size * 1.3
        points = f"{x:.1f},{y - s:.1f} {x + s:.1f},{y:.1f} {x:.1f},{y + s:.1f} {x - s:.1f},{y:.1f}"
    else:
        s = size * 1.4
        points = f"{x:.1f},{y - s:.1f} {x + s:.1f},{y + s * 0.8:.1f} {x - s:.1f},{y + s * 0.8:.1f}"
    return f'<polygon class="{style.css}" points="{points}">{tip}</polygon>'


def legend_html(kinds: set[str]) -> str:
    """A legend line with each mark that `kinds` holds, drawn with its own marker ('' when none)."""
    entries = []
    for kind, style in STYLES.items():
        if kind in kinds:
            swatch = f'<svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true">{marker_svg(kind, 8, 8, 5)}</svg>'
            entries.append(f'<span class="mark-key">{swatch} {style.legend}</span>')
    return f'<p class="legend marks">{"".join(entries)}</p>' if entries else ""


def marks_css() -> str:
    """The marks' colours, for the page's style sheet (kept beside the styles they name)."""
    return "".join(f".{style.css},.chart text.{style.css}{{fill:{style.colour}}}"
                   f".{style.css}-text{{color:{style.colour};font-weight:bold}}" for style in STYLES.values())
