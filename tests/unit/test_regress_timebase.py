"""A run's time base: derived from its folder as the pipeline writes it, kept in the history (older
databases migrated), and the history's baseline never mixing two bases."""

from __future__ import annotations

import json
import sqlite3

import pytest

from hil.regress import history
from hil.regress.runs import load_run
from hil.regress.timebase import TimeBase, from_history_row, time_base_of
from test_regress_synth import synth_profile
from timebase_runs import KEYS, NS, RUNTIME, run_folder, run_profile


@pytest.mark.parametrize("kind", sorted(KEYS))
def test_each_image_and_board_has_its_own_key(tmp_path, kind):
    run = load_run(run_folder(tmp_path, kind, kind, 1))
    base = time_base_of(run.profile, run.manifest)
    assert base.key == KEYS[kind] and base.known
    assert TimeBase.parse(base.key) == base  # the key the history stores reads back as the same base
    # a profile copied without its folder still tells (the baseline file case), except an RT700's board kind
    alone = time_base_of(run.profile)
    assert alone.key == (KEYS[kind] if kind != "rt700" else "unknown")


def test_an_unknown_base_matches_nothing_not_even_itself():
    old = time_base_of(load_run_like({"time_scale": {"ticks_per_us": 250.0, "follows_clock": True}}))
    assert old.key == "unknown" and not old.matches(old)
    assert "says neither which image ran nor the board's kind" in old.describe()
    assert time_base_of(load_run_like({})).why == "the run records no time scale"
    assert TimeBase.parse("runtime-instructions/shift=2").matches(TimeBase.parse("runtime-instructions/shift=2"))
    assert not TimeBase.parse("runtime-instructions/shift=2").matches(TimeBase.parse("runtime-instructions/shift=3"))
    assert TimeBase.parse("nanoseconds-of-the-future").key == "unknown"


def load_run_like(keys: dict):
    from hil.records.profile_model import Profile

    return Profile.from_json({"board": "qemu", "model": "m", "events": [], **keys})


# The runs table as et-hil wrote it before time bases were kept (no time_base, firmware_kind, commit_dirty).
OLD_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, time TEXT NOT NULL, git_commit TEXT, board TEXT NOT NULL,
    probe_id TEXT, model TEXT NOT NULL, test_id TEXT, firmware_sha256 TEXT, model_sha256 TEXT, etrecord_sha256 TEXT,
    versions TEXT, sdk_version TEXT, simulated INTEGER, iterations INTEGER, warmup INTEGER, total_us REAL,
    npu_fraction REAL, totals TEXT, memory TEXT, passed INTEGER NOT NULL, artifacts TEXT, comparison TEXT,
    time_scale TEXT, numerics TEXT);
CREATE TABLE events (run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, key TEXT NOT NULL,
    kind TEXT, name TEXT, op_types TEXT, delegate_debug_id INTEGER, n INTEGER, p50_us REAL, p90_us REAL,
    min_us REAL, max_us REAL, mad_us REAL, mean_us REAL, PRIMARY KEY (run_id, seq));
"""


def _old_database(path):
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    row = "INSERT INTO runs (time, board, model, simulated, passed, time_scale) VALUES (?, 'qemu', 'm', ?, 1, ?)"
    conn.execute(row, ("2026-01-01T00:00:00Z", 1, json.dumps(NS)))  # a replay: only it hands out host ns
    conn.execute(row, ("2026-01-02T00:00:00Z", 0, json.dumps(RUNTIME)))  # runtime or RT700: the row cannot tell
    conn.execute(row, ("2026-01-03T00:00:00Z", 1, None))  # no clock at all
    conn.commit()
    conn.close()


def test_rows_written_before_time_bases_get_the_base_they_tell_or_unknown(tmp_path):
    db = tmp_path / "old.db"
    _old_database(db)
    conn = history.open_existing(db)  # read-only: nothing migrated, the readers derive the same
    try:
        assert [r["time_base"] for r in history.read_runs(conn)] == ["replay-host-ns", "unknown", "unknown"]
    finally:
        conn.close()
    history.record_run(db, run_profile("runtime", 1), {"written_at": "2026-01-04T00:00:00Z"}, passed=True)
    raw = sqlite3.connect(db)
    try:
        stored = raw.execute("SELECT id, time_base FROM runs ORDER BY id").fetchall()
    finally:
        raw.close()
    assert stored == [(1, "replay-host-ns"), (2, "unknown"), (3, "unknown"), (4, "runtime-instructions/shift=2")]
    assert from_history_row({"time_base": None, "simulated": 1, "time_scale": "not json"}).key == "unknown"


def test_the_history_baseline_leaves_out_runs_of_another_base(tmp_path):
    db = tmp_path / "h.db"
    order = ["runtime", "runtime", "replay", "runtime", "runtime"]  # a run without firmware sources in between
    for night, kind in enumerate(order):
        history.record_run(db, run_profile(kind, night), {"written_at": f"2026-01-0{night + 1}T00:00:00Z"}, passed=True)
    history.record_run(db, synth_profile(9), {"written_at": "2026-01-09T00:00:00Z"}, passed=True)  # simulated ticks
    recent = history.recent_runs(db, "synthnet", "qemu", TimeBase.parse("runtime-instructions/shift=2"), 3)
    assert recent.ids == [2, 4, 5]  # row ids: the last three runtime runs, oldest first; row 3 (replay) left out
    assert recent.other_bases == {"replay-host-ns": 1, "simulated-ticks/cpu=324MHz/npu=250MHz": 1}
    assert [p.iterations for p in recent.profiles] == [10, 10, 10]
    assert history.recent_runs(db, "synthnet", "qemu", TimeBase.parse("unknown"), 10).ids == []


def test_the_series_time_base_is_the_latest_passed_runs(tmp_path):
    db = tmp_path / "h.db"
    assert history.series_time_base(db, "synthnet", "qemu") is None  # no history yet
    history.record_run(db, run_profile("runtime", 1), {"written_at": "2026-01-01T00:00:00Z"}, passed=True)
    history.record_run(db, run_profile("replay", 2), {"written_at": "2026-01-02T00:00:00Z"}, passed=False)
    assert history.series_time_base(db, "synthnet", "qemu").key == "runtime-instructions/shift=2"  # a failure: not it
    history.record_run(db, run_profile("replay", 3), {"written_at": "2026-01-03T00:00:00Z"}, passed=True)
    assert history.series_time_base(db, "synthnet", "qemu").key == "replay-host-ns"
    assert history.series_time_base(db, "othernet", "qemu") is None
