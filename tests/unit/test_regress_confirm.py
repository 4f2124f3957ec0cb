"""A suspected regression is re-run before it fails (`--hil-confirm N`), against a baseline made of the
history's last runs: judge_run with re-runs written by the test itself."""

from __future__ import annotations

from pathlib import Path

from hil.base import atomic
from hil.regress import history
from hil.regress.judge import JudgeOptions, judge_run
from test_regress_synth import synth_profile

SLOW = {("npu_kernel", "3", 0): 1.15}


def _folder(root: Path, name: str, profile: dict) -> Path:
    atomic.write_json(root / name / "profile.json", profile)
    atomic.write_json(root / name / "manifest.json", {"board": "qemu", "model": "synthnet"})
    return root / name


def _history(tmp_path: Path, runs: int) -> Path:
    db = tmp_path / "h.db"
    for seed in range(runs):
        history.record_run(db, synth_profile(seed), {"written_at": f"2026-01-{seed + 1:02d}T00:00:00Z"}, passed=True)
    return db


def _options(tmp_path: Path, db: Path, confirm: int) -> JudgeOptions:
    return JudgeOptions(baseline=tmp_path / "baselines", history=db, confirm=confirm, baseline_runs=5)


def test_a_regression_confirmed_by_its_re_runs_fails(tmp_path):
    db = _history(tmp_path, 5)
    made = []

    def rerun(index: int) -> Path:
        made.append(index)
        return _folder(tmp_path, f"again{index}", synth_profile(100 + index, slow=SLOW))

    verdict = judge_run(_folder(tmp_path, "now", synth_profile(99, slow=SLOW)), _options(tmp_path, db, 2),
                        marker_budget=None, test_passed=True, rerun=rerun)
    assert made == [1, 2]
    (failure,) = verdict.failures
    assert "performance regression: synthnet against the last 5 passed run(s) in history" in failure
    assert "suspected: call 0 / kernel 3: addmm; after 2 confirmation re-run(s): confirmed" in failure
    assert verdict.comparison.now_runs == 3 and verdict.comparison.baseline_runs == 5


def test_a_suspect_the_re_runs_do_not_confirm_passes(tmp_path):
    db = _history(tmp_path, 5)
    verdict = judge_run(_folder(tmp_path, "now", synth_profile(99, slow=SLOW)), _options(tmp_path, db, 2),
                        marker_budget=None, test_passed=True,
                        rerun=lambda index: _folder(tmp_path, f"again{index}", synth_profile(100 + index)))
    assert verdict.failures == []
    assert any("after 2 confirmation re-run(s): not confirmed, passes" in note for note in verdict.notes)


def test_without_confirmation_a_lone_run_against_five_is_judged_by_its_within_run_spread(tmp_path):
    db = _history(tmp_path, 5)
    verdict = judge_run(_folder(tmp_path, "now", synth_profile(99, slow=SLOW)), _options(tmp_path, db, 0),
                        marker_budget=None, test_passed=True, rerun=None)
    (failure,) = verdict.failures
    assert "regression: 1 event(s) slower, first call 0 / kernel 3: addmm +15" in failure
    assert verdict.decision.status == "regression" and verdict.comparison.regressions[0].rule == "within-run"


def test_too_short_a_history_falls_back_to_the_baseline_file(tmp_path):
    db = _history(tmp_path, 2)
    verdict = judge_run(_folder(tmp_path, "now", synth_profile(99)), _options(tmp_path, db, 0),
                        marker_budget=None, test_passed=True)
    assert any("no baseline under" in note for note in verdict.notes) and verdict.comparison is None
