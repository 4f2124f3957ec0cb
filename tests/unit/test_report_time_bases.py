"""The report and `hil compare` keep time bases apart: a replayed run among runtime runs gets its own
trend chart (never a point on their line), the project's commit and each run's date and time of day are
shown, and comparing runs of two bases is refused naming both."""

from __future__ import annotations

import re

from hil.regress import history
from hil.regress.judge import JudgeOptions, judge_run
from hil.report.html import write_report
from test_regress_cli import hil
from timebase_runs import run_folder, run_profile

COMMIT = "c0ffee1234567890c0ffee1234567890c0ffee12"


def _line_points(svg: str) -> int:
    """How many runs the solid total-latency line joins (its polyline's coordinate pairs)."""
    (points,) = re.findall(r'<polyline class="line-total" points="([^"]*)"', svg)
    return len(points.split())


def test_a_replay_among_runtime_runs_is_drawn_apart_with_commit_and_time_of_day(tmp_path):
    db = tmp_path / "h.db"
    # four runtime nights and, on the second day's afternoon, a run without firmware sources (replay)
    nights = [("runtime", "2026-02-01T02:00:00Z"), ("runtime", "2026-02-02T02:00:00Z"), ("replay", "2026-02-02T14:30:00Z"),
              ("runtime", "2026-02-03T02:00:00Z"), ("runtime", "2026-02-04T02:00:00Z")]
    for seed, (kind, when) in enumerate(nights):
        history.record_run(db, run_profile(kind, seed, scale=0.024 if kind == "replay" else 1.0),
                           {"written_at": when, "project_commit": {"commit": COMMIT, "dirty": seed == 4}}, passed=True)
    html = write_report(db, tmp_path / "r.html").read_text()
    section = html[html.index("<h2>synthnet on qemu</h2>"):]
    charts = re.findall(r'<svg class="chart" role="img" aria-label="trend of [^"]*".*?</svg>', section)
    assert len(charts) == 2
    runtime, replay = charts  # the latest run's base first
    assert 'aria-label="trend of synthnet on qemu in runtime-instructions/shift=2"' in runtime
    assert _line_points(runtime) == 4 and "2026-02-02T14:30:00Z" not in runtime
    assert 'aria-label="trend of synthnet on qemu in replay-host-ns"' in replay and "2026-02-02T14:30:00Z" in replay
    assert "in time base replay-host-ns (host nanoseconds replayed by the QEMU replay image): 1 run(s) " \
           "<b class=warn>(another time base than the latest run's" in section
    assert f"commit {COMMIT} (uncommitted changes)" in section
    assert "time base runtime-instructions/shift=2 (emulated instructions" in section
    assert "judged not asked" in section  # these rows were recorded without a gate
    # the axis under the runtime line: every run's date and time of day (first, last and between)
    assert re.findall(r">(\d\d:\d\d:\d\d)</text>", runtime) == ["02:00:00"] * 4
    assert re.findall(r">(2026-02-0\d)</text>", runtime) == ["2026-02-01", "2026-02-02", "2026-02-03", "2026-02-04"]
    assert re.findall(r">(\d\d:\d\d:\d\d)</text>", replay) == ["14:30:00"]


def test_the_report_says_whether_the_gate_judged_the_latest_run(tmp_path):
    db = tmp_path / "h.db"
    judge_run(run_folder(tmp_path, "n1", "runtime", 1), JudgeOptions(history=db), marker_budget=None, test_passed=True)
    html = write_report(db, tmp_path / "r.html").read_text()
    reason = ("cannot judge: history " + str(db) + " holds 0 of the 3 passed runs of time base "
              "runtime-instructions/shift=2 it needs")
    assert "judged no," in html and f'<span class="warn">{reason}</span>.</p>' in html  # the headline says why
    # marked as not judged (never as a regression), never "against" anything
    (flag,) = re.findall(r'<polygon class="mark-not-judged"[^>]*><title>([^<]*)</title>', html)
    assert flag.endswith(f"({reason})") and "against" not in flag and "mark-regression" not in html.split("<body>")[1]


def test_compare_refuses_runs_of_two_time_bases_naming_both(tmp_path):
    runtime, replay = run_folder(tmp_path, "rt", "runtime", 1), run_folder(tmp_path, "rp", "replay", 2, scale=0.024)
    refused = hil("compare", runtime, replay)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"A ({runtime / 'profile.json'}) counts runtime-instructions/shift=2" in refused.stderr
    assert f"B ({replay / 'profile.json'}) counts replay-host-ns" in refused.stderr and refused.stdout == ""
    same = hil("compare", runtime, run_folder(tmp_path, "rt2", "runtime", 3))
    assert same.returncode == 0 and "time base: runtime-instructions/shift=2" in same.stdout, same.stdout + same.stderr
