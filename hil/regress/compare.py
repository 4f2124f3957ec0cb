"""Baseline comparison: which events got slower than both the tolerance and the noise allow.

The rule (one event, p50 of each run, MAD of each run):

    delta    = now_p50 - baseline_p50
    noise    = noise_k * MAD_TO_SIGMA * sqrt(mad_baseline^2 + mad_now^2)
    regressed  when delta >  tolerance * baseline_p50  and  delta >  noise  and  delta > min_delta_us
    improved   when -delta meets the same three limits

The noise term is the spread of the difference of two runs (in sigmas, from their MADs), times
`noise_k` (default 3). It is deliberately not divided by sqrt(iterations): run-to-run variation
on a board (temperature, clock settling, a different flash) is not seen inside one run, so the
within-run spread is taken as the per-run uncertainty. A quiet board is therefore judged by the
tolerance, a noisy one by its noise, and neither cries wolf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hil.regress.identity import UNJUDGED_KINDS, display_name, keyed_events, op_types_text
from hil.regress.stats import MAD_TO_SIGMA, event_spread

DEFAULT_TOLERANCE = 0.05
DEFAULT_NOISE_K = 3.0

def parse_tolerance(text: str) -> float:
    """`5`, `5%` or `0.05` -> 0.05: a tolerance is given as people say it (numbers >= 1 are percent)."""
    value = float(text.rstrip("%"))
    return value / 100.0 if text.endswith("%") or value >= 1 else value


REGRESSION, IMPROVEMENT, UNCHANGED, ADDED, REMOVED = "regression", "improvement", "unchanged", "added", "removed"


@dataclass
class EventDelta:
    """One event, before and after."""

    key: str
    kind: str
    name: str
    op_types: str
    baseline_us: float | None
    now_us: float | None
    noise_us: float
    verdict: str

    @property
    def change_pct(self) -> float | None:
        if not self.baseline_us or self.now_us is None:
            return None
        return 100.0 * (self.now_us - self.baseline_us) / self.baseline_us


@dataclass
class Comparison:
    """Every event's verdict, with the limits that produced them."""

    deltas: list[EventDelta]
    tolerance: float = DEFAULT_TOLERANCE
    noise_k: float = DEFAULT_NOISE_K
    min_delta_us: float = 0.0
    notes: list[str] = field(default_factory=list)

    def _by(self, verdict: str) -> list[EventDelta]:
        return [d for d in self.deltas if d.verdict == verdict]

    @property
    def regressions(self) -> list[EventDelta]:
        """Worst (largest relative slowdown) first."""
        return sorted(self._by(REGRESSION), key=lambda d: -(d.change_pct or 0.0))

    @property
    def improvements(self) -> list[EventDelta]:
        return sorted(self._by(IMPROVEMENT), key=lambda d: d.change_pct or 0.0)

    @property
    def has_regression(self) -> bool:
        return any(d.verdict == REGRESSION for d in self.deltas)


def judge(base_p50: float, base_mad: float, now_p50: float, now_mad: float, *, tolerance: float, noise_k: float,
          min_delta_us: float = 0.0) -> tuple[str, float]:
    """Verdict and noise (us) for one event; see the module docstring for the rule."""
    noise = noise_k * MAD_TO_SIGMA * math.hypot(base_mad, now_mad)
    delta = now_p50 - base_p50
    limit = max(tolerance * base_p50, noise, min_delta_us)
    if delta > limit:
        return REGRESSION, noise
    if -delta > limit:
        return IMPROVEMENT, noise
    return UNCHANGED, noise


def compare_profiles(
    baseline: dict[str, Any],
    current: dict[str, Any],
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    noise_k: float = DEFAULT_NOISE_K,
    min_delta_us: float = 0.0,
) -> Comparison:
    """Compare every event of `current` with the same event of `baseline`."""
    before, after = keyed_events(baseline.get("events", [])), keyed_events(current.get("events", []))
    deltas: list[EventDelta] = []
    for key in list(after) + [k for k in before if k not in after]:
        event = after.get(key) or before[key]
        kind, name = str(event.get("kind")), display_name(event)
        types = op_types_text(event)
        if key not in before or key not in after:
            verdict = ADDED if key not in before else REMOVED
            value = event_spread(dict(event))[0]
            base_v, now_v = (None, value) if verdict == ADDED else (value, None)
            deltas.append(EventDelta(key, kind, name, types, base_v, now_v, 0.0, verdict))
            continue
        base_p50, base_mad = event_spread(dict(before[key]))
        now_p50, now_mad = event_spread(dict(after[key]))
        if kind in UNJUDGED_KINDS:
            verdict, noise = UNCHANGED, noise_k * MAD_TO_SIGMA * math.hypot(base_mad, now_mad)
        else:
            verdict, noise = judge(base_p50, base_mad, now_p50, now_mad, tolerance=tolerance, noise_k=noise_k,
                                   min_delta_us=min_delta_us)
        deltas.append(EventDelta(key, kind, name, types, base_p50, now_p50, noise, verdict))
    notes = []
    for side, prof in (("baseline", baseline), ("now", current)):
        notes.append(f"{side}: board {prof.get('board')}, model {prof.get('model')}, {prof.get('iterations')} iterations")
    if baseline.get("board") != current.get("board"):
        notes.append(f"warning: boards differ ({baseline.get('board')} vs {current.get('board')})")
    added, removed = sum(d.verdict == ADDED for d in deltas), sum(d.verdict == REMOVED for d in deltas)
    if added or removed:
        notes.append(f"program structure changed: {added} event(s) added, {removed} removed (not judged)")
    return Comparison(deltas, tolerance, noise_k, min_delta_us, notes)


def _fmt_us(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _rows_table(title: str, rows: list[EventDelta]) -> list[str]:
    headers = ("event", "kind", "op types", "baseline us", "now us", "change %", "noise us")
    cells = [
        (d.name, d.kind, d.op_types, _fmt_us(d.baseline_us), _fmt_us(d.now_us),
         "-" if d.change_pct is None else f"{d.change_pct:+.1f}", f"{d.noise_us:.1f}")
        for d in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = lambda values: "  ".join(v.ljust(w) if i < 3 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))  # noqa: E731
    return [title, line(headers), line(tuple("-" * w for w in widths)), *(line(c) for c in cells)]


def format_comparison(comparison: Comparison, *, limit: int = 10) -> str:
    """The regression table people read: worst regressions first, then improvements."""
    regs, imps = comparison.regressions, comparison.improvements
    head = (
        f"{len(regs)} regression(s), {len(imps)} improvement(s) among {len(comparison.deltas)} events "
        f"(tolerance {comparison.tolerance * 100:g}%, noise {comparison.noise_k:g} sigma)"
    )
    out = [head, *comparison.notes]
    if regs:
        out += ["", *_rows_table(f"worst regressions (of {len(regs)}):", regs[:limit])]
    if imps:
        out += ["", *_rows_table(f"improvements (of {len(imps)}):", imps[:limit])]
    return "\n".join(out)


def comparison_to_dict(comparison: Comparison) -> dict[str, Any]:
    """JSON-ready form (for history, reports and `hil compare --json`)."""
    return {
        "tolerance": comparison.tolerance,
        "noise_k": comparison.noise_k,
        "has_regression": comparison.has_regression,
        "notes": comparison.notes,
        "events": [
            {"key": d.key, "kind": d.kind, "name": d.name, "op_types": d.op_types, "baseline_us": d.baseline_us,
             "now_us": d.now_us, "change_pct": d.change_pct, "noise_us": d.noise_us, "verdict": d.verdict}
            for d in comparison.deltas
        ],
    }
