"""The decision on a comparison: pass, fail, or cannot judge. One function, for `hil compare` and pytest.

A comparison lists every event's verdict; what a nightly does with them is decided here and only
here, so the exit status of `hil compare` and the outcome of the pytest gate can never disagree on
the same runs. A regression fails, and so does an output SNR that dropped (hil.numerics.gate). A comparison that could not judge (slower events no rule could
decide, or new runs disturbed by machine load) passes with its reason said in the output, the JUnit
properties and the history, and fails under strict mode (`--hil-strict`, `hil compare --strict`),
which a nightly that must never be blind turns on.
"""

from __future__ import annotations

from dataclasses import dataclass

from hil.regress.verdicts import Comparison

PASS, FAIL, CANNOT_JUDGE = "pass", "regression", "cannot judge"
# Why a run was not judged, as the JUnit property `hil.<model>.not_judged` names it.
NO_BASELINE, TOO_FEW_RUNS, OTHER_TIME_BASE, UNKNOWN_TIME_BASE = "no-baseline", "too-few-runs", "other-time-base", "unknown-time-base"
MACHINE_LOAD, RUNS_NEEDED = "machine-load", "runs-needed"


@dataclass(frozen=True)
class Decision:
    """The outcome of one comparison: `status` is a name (pass, regression, cannot judge), `reason` one line,
    `why_not` (a run not judged) one of the codes above."""

    status: str
    failed: bool
    reason: str
    runs_needed: int = 0
    why_not: str = ""

    @property
    def judged(self) -> bool:
        """A verdict was reached (pass or regression): the run was compared with runs of its own time base."""
        return self.status != CANNOT_JUDGE

    def properties(self, base: str) -> list[tuple[str, str]]:
        """JUnit properties under `base` (`hil.<model>`): names and numbers, never sentences."""
        props = [(f"{base}.verdict", self.status), (f"{base}.judged", "true" if self.judged else "false")]
        if not self.judged:
            props.append((f"{base}.not_judged", self.why_not))
        if self.runs_needed:
            props.append((f"{base}.baseline_runs_needed", str(self.runs_needed)))
        return props


def decide(comparison: Comparison, *, strict: bool = False) -> Decision:
    """Pass, fail or cannot judge (failing only under `strict`); see the module docstring."""
    regressions = comparison.regressions
    numerics = f"; {comparison.numerics_drop}" if comparison.numerics_drop else ""
    if regressions:
        worst = regressions[0]
        change = "" if worst.change_pct is None else f" {worst.change_pct:+.1f}%"
        return Decision(FAIL, True, f"regression: {len(regressions)} event(s) slower, first {worst.name}{change}{numerics}")
    if comparison.numerics_drop:
        return Decision(FAIL, True, f"regression: {comparison.numerics_drop}")
    if comparison.disturbed:
        return Decision(CANNOT_JUDGE, strict, "cannot judge: the new run was slowed as a whole by machine load; re-run it",
                        why_not=MACHINE_LOAD)
    if comparison.cannot_judge:
        needed = comparison.runs_needed
        names = ", ".join(d.name for d in comparison.cannot_judge[:3])
        return Decision(CANNOT_JUDGE, strict, f"cannot judge: {needed} more baseline run(s) needed ({names} slower)",
                        needed, RUNS_NEEDED)
    return Decision(PASS, False, f"pass: no regression among {len(comparison.deltas)} events")


def no_baseline(where: str, *, strict: bool) -> Decision:
    """A run with nothing to compare against: said aloud, and a failure under `strict`."""
    return Decision(CANNOT_JUDGE, strict, f"cannot judge: no baseline under {where}", why_not=NO_BASELINE)


def not_judged(why_not: str, reason: str, *, strict: bool, runs_needed: int = 0) -> Decision:
    """A run the gate could not compare (too few runs of its time base, a baseline of another base, a base
    nobody knows): `reason` says it in one line; a failure under `strict`."""
    return Decision(CANNOT_JUDGE, strict, f"cannot judge: {reason}", runs_needed, why_not)
