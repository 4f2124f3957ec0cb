"""A hand-made nightly history whose report drawing the tests know in advance.

Nine nights of `synthnet` on `qemu`, every run's events named by the user's layers (module paths and lines
written here, as an ETRecord would give them), no noise, so every figure is what is written here:

- nights 1-3: the history is filling, the gate did not judge them (passed, "cannot judge: ... holds N of 3");
- night 4: not judged under --hil-strict (machine load), so the test failed: still no regression;
- nights 5, 6, 8, 9: judged, passed;
- night 7: the convolution of `features.3` is 2% slower and the gate found the regression (its stored
  decision names that convolution first, +2.0%).

The stored comparisons and decisions are written by hand in the shape the gate stores them
(hil.regress.judge._stored), never computed by the product.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hil.regress import history
from test_regress_synth import synth_profile

NIGHTS = 9
REGRESSION_NIGHT, STRICT_NIGHT = 7, 4
UNJUDGED_NIGHTS = (1, 2, 3, 4)
SLOWER = 1.02
CONV_KEY = "cpu_op:native_call_convolution.out#0"
# A layer deep in a model (one word a table must wrap, never widen the page for).
DEEP_LAYER = "backbone.stages.3.blocks.2.depthwise_separable_conv_with_squeeze_excitation"
# The user's layers per event (kind, name, occurrence), as the ETRecord's nn_module_stack would name them.
LAYERS = {
    ("cpu_op", "native_call_convolution.out", 0): (("features.3",), ("models.py:13",)),
    ("cpu_op", "native_call_convolution.out", 1): ((DEEP_LAYER,), ("models.py:17",)),
    ("cpu_op", "native_call__softmax.out", 0): (("classifier.softmax",), ("models.py:24",)),
    ("npu_kernel", "0", 0): (("features.0", "features.1"), ("models.py:9",)),
    ("npu_kernel", "2", 0): (("features.5",), ("models.py:15",)),
}
# What the gate said of each run it could not judge: one distinct line each (one carries markup a run
# could put in a path: the page must show it as text).
UNJUDGED_REASONS = {
    1: "cannot judge: history nightly.db holds 0 of the 3 passed runs of time base simulated-ticks it needs",
    2: "cannot judge: history nightly.db holds 1 of the 3 passed runs of time base simulated-ticks it needs",
    3: "cannot judge: history night<img src=x onerror=alert(1)>ly.db holds 2 of the 3 passed runs it needs",
    4: "cannot judge: the new run was slowed as a whole by machine load; re-run it",
}
# A run folder as CI names them: one long word a page must wrap, never scroll sideways for.
ARTIFACTS = ("/home/ci/builds/project-nightly/.hil/runs/tests_test_models.py__test_cifarnet_latency_on_the_board"
             "[qemu-cifarnet-neutron-sim-iterations-10]")
REGRESSION_REASON = "regression: 2 event(s) slower, first native_call_convolution.out in features.3 (models.py:13) +2.0%"


def commit(night: int) -> str:
    """Night N's commit: its short sha is the digit N seven times (`7777777`)."""
    return f"{night:x}" * 40


def night_profile(night: int) -> dict[str, Any]:
    slow = {("cpu_op", "native_call_convolution.out", 0): SLOWER} if night == REGRESSION_NIGHT else None
    profile = synth_profile(seed=night, jitter=0.0, slow=slow)
    seen: dict[tuple[str, str], int] = {}
    for event in profile["events"]:
        occurrence = seen.get((event["kind"], event["name"]), 0)
        seen[(event["kind"], event["name"])] = occurrence + 1
        modules, sources = LAYERS.get((event["kind"], event["name"], occurrence), ((), ()))
        if modules:
            event["modules"], event["sources"] = list(modules), list(sources)
    return profile


def _decision(night: int) -> dict[str, Any]:
    if night in UNJUDGED_REASONS:
        return {"status": "cannot judge", "failed": night == STRICT_NIGHT, "reason": UNJUDGED_REASONS[night],
                "runs_needed": 0, "judged": False, "not_judged": "too-few-runs"}
    if night == REGRESSION_NIGHT:
        return {"status": "regression", "failed": True, "reason": REGRESSION_REASON, "runs_needed": 0,
                "judged": True, "not_judged": None}
    return {"status": "pass", "failed": False, "reason": "pass: no regression among 10 events", "runs_needed": 0,
            "judged": True, "not_judged": None}


def _events(night: int, before: dict[str, Any], now: dict[str, Any]) -> list[dict[str, Any]]:
    """The stored rows of night 7's comparison: the convolution and Method::execute slower (the method
    by more microseconds, so only the gate's naming order puts the convolution first)."""
    if night != REGRESSION_NIGHT:
        return []
    conv_before, conv_now = (next(e["p50_us"] for e in p["events"] if e["name"] == "native_call_convolution.out")
                             for p in (before, now))
    total_before, total_now = before["totals_us"]["method_execute"], now["totals_us"]["method_execute"]
    return [
        {"key": "method:Method::execute#0", "kind": "method", "name": "Method::execute", "op_types": "-",
         "baseline_us": total_before, "now_us": total_now + 1.0, "change_pct": method_change(night),
         "verdict": "regression"},
        {"key": CONV_KEY, "kind": "cpu_op", "name": "native_call_convolution.out in features.3 (models.py:13)",
         "op_types": "aten.convolution.default", "baseline_us": conv_before, "now_us": conv_now,
         "change_pct": 2.0, "verdict": "regression"},
    ]


def method_change(night: int) -> float:
    """The change of Method::execute the gate stored for a night, in percent (the regression night's only):
    the true step of the total plus 1 us of the baseline's spread, as a median of runs would differ."""
    before, now = (night_profile(n)["totals_us"]["method_execute"] for n in (night - 1, night))
    return 100 * (now + 1.0 - before) / before


def write_history(db: Path) -> Path:
    """The nine nights above, in `db`."""
    before = night_profile(0)
    for night in range(1, NIGHTS + 1):
        profile = night_profile(night)
        stored = {"events": _events(night, before, profile), "has_regression": night == REGRESSION_NIGHT,
                  "decision": _decision(night), "baseline": "the last 3 passed run(s) in history nightly.db"}
        passed = night not in (REGRESSION_NIGHT, STRICT_NIGHT)
        history.record_run(db, profile, {"written_at": f"2026-06-{night:02d}T02:00:00Z",
                                         "project_commit": {"commit": commit(night), "dirty": False}},
                           passed=passed, comparison=stored, artifacts=ARTIFACTS + f"/2026-06-{night:02d}T02-00-00Z")
    return db
