"""The flagged layer's own trend: the event a regression named first, its p50 in every run of one time base.

A total that moved by half a percent hides which layer moved by two; the gate names that event first in
its reason ("first native_call_convolution.out in features.3 ... +2.0%"), so the report follows the same
event (its stable key, hil.regress.identity) through the runs and names it by the user's module path.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from hil.records.profile_model import Profile
from hil.regress.identity import event_labels, keyed_events
from hil.regress.verdicts import REGRESSION as EVENT_REGRESSION, naming_order
from hil.report.marks import REGRESSION, mark_of, stored_change
from hil.report.trend import SHORT_SHA, TrendPoint, trend


@dataclass(frozen=True)
class FlaggedLayer:
    """The event a regression named first: its key, its run's time and commit."""

    key: str
    run_time: str
    run_commit: str


def flagged_layer(runs: list[dict[str, Any]]) -> FlaggedLayer | None:
    """The first regressed event (as the gate names them) of the latest run the gate found a regression in."""
    for run in reversed(runs):
        if mark_of(run).kind != REGRESSION:
            continue
        slower = [e for e in (run.get("comparison") or {}).get("events") or []
                  if e.get("verdict") == EVENT_REGRESSION and e.get("key")]
        if slower:
            first = min(slower, key=lambda e: naming_order(str(e.get("kind")), _delta(e)))
            return FlaggedLayer(str(first["key"]), str(run["time"]), str(run.get("git_commit") or ""))
    return None


def _delta(event: dict[str, Any]) -> float:
    before, now = event.get("baseline_us"), event.get("now_us")
    return 0.0 if before is None or now is None else float(now) - float(before)


def layer_name(profiles: list[Profile], key: str) -> tuple[str, str]:
    """(the user's layer, `module (line)`, or '' when no run's ETRecord named one; the event's name)."""
    for profile in reversed(profiles):
        keyed = list(keyed_events(profile.events))
        if key in keyed:
            label = event_labels(profile.events)[keyed.index(key)]
            return label.where, label.name
    return "", key


def layer_trend(model: str, board: str, key: str, items: list[tuple[dict[str, Any], Profile]]) -> str:
    """The flagged layer's trend chart with its heading ('' when no run of `items` was flagged so)."""
    flagged = flagged_layer([run for run, _ in items])
    if flagged is None:
        return ""
    where, name = layer_name([profile for _, profile in items], flagged.key)
    points = []
    for run, profile in items:
        event = keyed_events(profile.events).get(flagged.key)
        commit = str(run.get("git_commit") or "")
        points.append(TrendPoint(f"{run['time']} {commit[:SHORT_SHA]}".strip(),
                                 None if event is None else event.spread[0], mark=mark_of(run),
                                 when=str(run["time"]), commit=commit, gate_change=stored_change(run, flagged.key)))
    called = f"{where}: {name}" if where else name
    heading = (f"<h3>Trend of the flagged layer <span class=layer>{escape(called)}</span> (p50 us), the first "
               f"regression of run {escape(flagged.run_time)} {escape(flagged.run_commit[:SHORT_SHA])}</h3>")
    chart = trend(points, axis_name="p50 us", npu_line=False, height=220,
                  label=f"trend of the flagged layer {called} of {model} on {board} in {key}")
    return heading + chart
