"""Bad numbers are refused before any work: every numeric option of `hil compare`, `hil baseline update`
and the pytest regression options, and baseline or history figures that are not finite."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hil.base.errors import AnalysisError
from hil.regress import history
from hil.regress.runs import load_run
from test_regress_cli import hil, run_folder
from test_regress_synth import SIM_TICKS, synth_profile

REPO = Path(__file__).resolve().parents[2]
COMPARE_REFUSED = [
    ("--tolerance", "nan"), ("--tolerance", "-5"), ("--tolerance", "inf"), ("--min-delta-us", "inf"),
    ("--min-delta-us", "-1"), ("--alpha", "2"), ("--alpha", "nan"), ("--alpha", "0"), ("--noise-k", "-1"),
    ("--noise-k", "nan"), ("--min-share", "-1"), ("--min-share", "1.5"), ("--limit", "-1"), ("--limit", "0"),
    ("--warmup", "-1"),
]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return run_folder(root, "a", synth_profile(1)), run_folder(root, "b", synth_profile(2, slow={("npu_kernel", "1", 0): 2.0}))


@pytest.mark.parametrize("flag,value", COMPARE_REFUSED)
def test_hil_compare_refuses_each_bad_number_in_one_line_naming_the_option(two_runs, flag, value):
    done = hil("compare", *two_runs, flag, value)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"hil compare: {flag} ") and "must be" in line, line


def test_good_numbers_are_taken_and_the_doubled_kernel_still_fails(two_runs):
    done = hil("compare", *two_runs, "--tolerance", "5%", "--alpha", "1", "--min-share", "0", "--limit", "1",
               "--noise-k", "0", "--min-delta-us", "0", "--warmup", "0")
    assert done.returncode == 1 and "call 0 / kernel 1: convolution" in done.stdout, done.stdout + done.stderr


def test_hil_baseline_update_refuses_a_negative_warmup(two_runs, tmp_path):
    done = hil("baseline", "update", two_runs[0], "--out", tmp_path / "b", "--warmup", "-2")
    assert done.returncode == 2 and done.stderr.splitlines() == ["hil baseline: --warmup -2: must be an integer >= 0"]
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("flag,value,shown,rule", [
    ("--hil-tolerance", "nan", "nan", "a finite number >= 0"), ("--hil-min-delta-us", "inf", "inf", "a finite number >= 0"),
    ("--hil-noise-k", "-1", "-1.0", "a finite number >= 0"), ("--hil-warmup", "-1", "-1", "an integer >= 0"),
    ("--hil-confirm", "-3", "-3", "an integer >= 0"), ("--hil-baseline-runs", "0", "0", "an integer >= 1")])
def test_pytest_refuses_each_bad_regression_option_naming_it(tmp_path, flag, value, shown, rule):
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_x.py", flag, value],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's own exit status for a usage error
    assert [line for line in done.stderr.splitlines() if "must be" in line] == [f"ERROR: {flag} {shown}: must be {rule}"]


def test_a_baseline_whose_totals_are_nan_is_refused_naming_the_file_and_figure(two_runs, tmp_path):
    profile = synth_profile(3)
    profile["totals_us"]["method_execute"] = math.nan
    path = tmp_path / "synthnet.json"
    path.write_text(json.dumps({"schema": "et-hil/baseline/1", "provenance": {}, "profile": profile}))  # writes NaN
    done = hil("compare", path, two_runs[1])
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"hil compare: {path}: profile.totals_us.method_execute = nan; figures must be finite"]
    profile = synth_profile(3)
    profile["events"][3]["times_us"][2] = math.inf
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "profile.json").write_text(json.dumps(profile))
    with pytest.raises(AnalysisError, match=r"run/profile.json: events\[3\].times_us\[2\] = inf; figures must be finite"):
        load_run(tmp_path / "run")


def test_a_history_row_with_an_infinite_figure_is_refused_naming_the_database_and_event(tmp_path):
    db = tmp_path / "h.db"
    history.record_run(db, synth_profile(1), {"written_at": "2026-01-01"}, passed=True)
    conn = history.connect(db)
    try:
        conn.execute("UPDATE events SET min_us = ? WHERE key = 'npu_kernel:2#0'", (math.inf,))
        # A row written with that figure (its checksum matches: hil.regress.history_seal) is refused whole.
        conn.execute("UPDATE runs SET checksum = NULL")
        conn.execute("PRAGMA user_version = 0")
    finally:
        conn.close()
    with pytest.raises(AnalysisError, match=rf"history database {db}, run 1: event npu_kernel:2#0.min_us = inf; figures must be finite"):
        history.recent_runs(db, "synthnet", "qemu", SIM_TICKS, 10).profiles
