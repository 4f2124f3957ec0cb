"""The gate keyed by time base (issue 27): a run without the firmware sources (the replay image, host
nanoseconds) between runtime runs (emulated instructions) is neither compared with them nor part of
their baseline, the history judges by itself from 3 runs of one base, a baseline file of another base
is refused naming both, and a failed run is recorded under its model's series."""

from __future__ import annotations

import json
import sqlite3

from hil.base import atomic
from hil.regress import history
from hil.regress.judge import JudgeOptions, judge_run
from test_regress_synth import synth_profile
from timebase_runs import run_folder

CONV = ("cpu_op", "native_call_convolution.out", 0)
# The replay image's host-ns times against the runtime image's instruction-derived ones: the issue's
# Method::execute 405149.7 -> 9549.9 is a factor of about 0.024.
HOST_NS_FACTOR = 0.024


def _judge(folder, db, **options):
    return judge_run(folder, JudgeOptions(history=db, **options), marker_budget=None, test_passed=True)


def _rows(db):
    conn = sqlite3.connect(db)  # the file itself, not the product's reader
    try:
        return conn.execute("SELECT id, model, time_base, passed, comparison FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()


def test_a_replay_between_runtime_runs_is_not_compared_and_a_wider_conv_after_it_fails(tmp_path):

    db = tmp_path / "h.db"
    first = _judge(run_folder(tmp_path, "n1", "runtime", 1, written_at="2026-02-01T00:00:00Z"), db)
    assert first.failures == [] and first.decision.status == "cannot judge"
    assert first.not_judged == ("cannot judge: history " + str(db) + " holds 0 of the 3 passed runs of time base "
                                "runtime-instructions/shift=2 it needs")
    assert ("hil.synthnet.judged", "false") in first.properties
    assert ("hil.synthnet.not_judged", "too-few-runs") in first.properties
    assert ("hil.synthnet.baseline_runs_needed", "3") in first.properties
    for night in (2, 3):
        assert _judge(run_folder(tmp_path, f"n{night}", "runtime", night, written_at=f"2026-02-0{night}T00:00:00Z"),
                      db).failures == []

    replay = _judge(run_folder(tmp_path, "n4", "replay", 4, scale=HOST_NS_FACTOR, written_at="2026-02-04T00:00:00Z"), db)
    assert replay.failures == [] and replay.comparison is None  # no "4 improvement(s)": nothing compared
    assert replay.not_judged == ("cannot judge: history " + str(db) + " holds 0 of the 3 passed runs of time base "
                                 "replay-host-ns it needs (left out, another time base: 3 of runtime-instructions/shift=2)")
    assert ("hil.synthnet.time_base", "replay-host-ns") in replay.properties
    assert any("not judged" in w or "cannot judge" in w for w in replay.warnings)

    wider = _judge(run_folder(tmp_path, "n5", "runtime", 5, slow={CONV: 1.3}, written_at="2026-02-05T00:00:00Z"), db)
    (failure,) = wider.failures
    assert failure.startswith("performance regression: synthnet against the last 3 passed run(s) in history")
    assert "native_call_convolution.out" in failure.split("worst regressions")[1].splitlines()[3]  # the first row
    assert "time base: runtime-instructions/shift=2" in failure

    rows = _rows(db)
    assert [(r[0], r[2], r[3]) for r in rows] == [
        (1, "runtime-instructions/shift=2", 1), (2, "runtime-instructions/shift=2", 1),
        (3, "runtime-instructions/shift=2", 1), (4, "replay-host-ns", 1), (5, "runtime-instructions/shift=2", 0)]
    stored = json.loads(rows[4][4])
    assert stored["baseline_run_ids"] == [1, 2, 3]  # the replay (row 4) passed, yet is not in the baseline
    assert stored["decision"]["judged"] is True and stored["time_base"] == "runtime-instructions/shift=2"
    assert json.loads(rows[3][4])["decision"] == {
        "status": "cannot judge", "failed": False, "judged": False, "not_judged": "too-few-runs", "runs_needed": 3,
        "reason": replay.not_judged}


def test_strict_mode_lets_a_filling_history_fill_and_fails_a_missing_baseline_file(tmp_path):
    db = tmp_path / "h.db"
    verdict = _judge(run_folder(tmp_path, "n1", "replay", 1), db, strict=True)
    assert verdict.failures == [] and verdict.decision.why_not == "too-few-runs"
    assert "history filling: this run is passed run 1 of the 3 it needs" in verdict.warnings[0]
    missing = _judge(run_folder(tmp_path, "n2", "replay", 2), db, strict=True, baseline=tmp_path / "nowhere")
    (failure,) = missing.failures
    assert "no baseline under" in failure and "holds 1 of the 3 passed runs" in failure and "--hil-strict" in failure
    conn = sqlite3.connect(db)  # the file itself: the filling run joins the history as passed and unjudged
    try:
        rows = conn.execute("SELECT passed, judged, not_judged FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()
    assert rows == [(1, 0, "too-few-runs"), (0, 0, "no-baseline")]


def test_a_baseline_file_of_another_time_base_is_refused_naming_both(tmp_path):
    from hil.regress.baseline import write_baseline
    from hil.regress.runs import load_run

    written = write_baseline(load_run(run_folder(tmp_path, "base", "runtime", 0)), tmp_path / "baselines")
    assert json.loads(written.read_text())["provenance"]["time_base"] == "runtime-instructions/shift=2"
    verdict = _judge(run_folder(tmp_path, "now", "replay", 1, scale=HOST_NS_FACTOR), None, baseline=tmp_path / "baselines")
    assert verdict.failures == [] and verdict.comparison is None
    assert verdict.not_judged.startswith(f"cannot judge: baseline {written} counts runtime-instructions/shift=2 "
                                         "(emulated instructions of the QEMU runtime image, -icount shift 2), "
                                         "this run replay-host-ns (host nanoseconds replayed")
    assert ("hil.synthnet.not_judged", "other-time-base") in verdict.properties
    same = _judge(run_folder(tmp_path, "again", "runtime", 2), None, baseline=tmp_path / "baselines")
    assert same.decision.judged and same.decision.status == "pass"


def test_a_failed_run_is_recorded_under_the_series_of_its_passing_runs(tmp_path):
    (tmp_path / "models.py").write_text("def kws_factory():\n    pass\n")
    db = tmp_path / "h.db"
    for name, manifest in (
        ("failed-export", {"model": f"{tmp_path / 'models.py'}:kws_factory", "delegate": "neutron-sim"}),
        ("failed-run", {"model": "models.py:kws_factory", "model_name": "models-kws_factory", "delegate": "none"}),
        ("bad-spec", {"model": "no_such_model"}),
    ):
        atomic.write_json(tmp_path / name / "manifest.json", {"board": "qemu", "status": "failed", "error": "boom",
                                                              **manifest})
        verdict = _judge(tmp_path / name, db)
        assert verdict.profile is None and "run failed: boom" in verdict.notes[0]
    # by hand: resolve_spec names `models.py:kws_factory` "models-kws_factory", as the export names its program
    assert [(r[1], r[3]) for r in _rows(db)] == [("models-kws_factory+neutron-sim", 0), ("models-kws_factory", 0),
                                                 ("no_such_model", 0)]


def test_a_run_whose_time_base_nobody_knows_is_compared_with_nothing(tmp_path):
    db = tmp_path / "h.db"
    for night in range(3):
        history.record_run(db, synth_profile(night), {"written_at": f"2026-01-0{night + 1}T00:00:00Z"}, passed=True)
    old = synth_profile(9)  # a profile that records neither its image nor its clocks, without a manifest's board kind
    del old["firmware"], old["time_scale"]
    atomic.write_json(tmp_path / "old" / "profile.json", old)
    atomic.write_json(tmp_path / "old" / "manifest.json", {"board": "qemu", "model": "synthnet"})
    verdict = _judge(tmp_path / "old", db)
    assert verdict.comparison is None and verdict.failures == []
    assert verdict.not_judged == ("cannot judge: the run's time base is unknown (the run records no time scale); "
                                  "it is compared with nothing")
    assert ("hil.synthnet.not_judged", "unknown-time-base") in verdict.properties
    assert [r[2] for r in _rows(db)][-1] == "unknown"
