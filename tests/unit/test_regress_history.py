"""History database: what a run row holds, and two processes appending at the same time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from hil.regress import history
from test_regress_synth import SIM_TICKS_KEY, synth_profile

MANIFEST = {
    # git_commit is et-hil's own commit; the history keeps the project's (hil.records.manifest.project_commit)
    "written_at": "2026-01-02T03:04:05Z", "git_commit": "e7e7e7", "board": "qemu", "model": "synthnet",
    "project_commit": {"commit": "abc123", "source": "git /src/project", "dirty": False},
    "firmware_sha256": "f" * 64, "versions": {"executorch": "1.5.1", "torch": "2.13.0", "eiq-neutron-sdk": None},
    "files": {"model.pte": {"sha256": "a" * 64, "size": 10}, "etrecord.bin": {"sha256": "b" * 64, "size": 5}},
}


def test_a_run_is_stored_with_provenance_and_event_statistics(tmp_path):
    db = tmp_path / "h.db"
    profile = synth_profile(seed=1)
    run_id = history.record_run(db, profile, MANIFEST, passed=True, test_id="t::x", probe_id="P1", artifacts=tmp_path)
    conn = history.open_existing(db)
    try:
        (run,) = history.read_runs(conn)
        events = history.read_events(conn, run_id)
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    assert mode == "wal"
    assert (run["git_commit"], run["board"], run["probe_id"], run["model"], run["passed"]) == ("abc123", "qemu", "P1", "synthnet", 1)
    assert run["firmware_sha256"] == "f" * 64 and run["model_sha256"] == "a" * 64 and run["etrecord_sha256"] == "b" * 64
    assert run["versions"]["executorch"] == "1.5.1" and run["time"] == MANIFEST["written_at"]
    assert run["commit_dirty"] == 0 and run["time_base"] == SIM_TICKS_KEY and run["firmware_kind"] == "replay"
    assert run["total_us"] == profile["totals_us"]["method_execute"]
    assert len(events) == len(profile["events"])
    conv1 = [e for e in events if e["key"] == "cpu_op:native_call_convolution.out#1"][0]
    source = [e for e in profile["events"] if e["name"] == "native_call_convolution.out"][1]
    assert conv1["p50_us"] == source["p50_us"] and conv1["max_us"] == max(source["times_us"])
    assert conv1["op_types"] == ["aten.convolution.default"] and conv1["n"] == 10
    rebuilt = history.profile_from_history(run, events)
    assert rebuilt["events"][0]["kind"] == "method" and rebuilt["npu_fraction"] == profile["npu_fraction"]


WRITER = """
import sys, time, json
from pathlib import Path
from hil.regress.history import record_run
sys.path.insert(0, sys.argv[4])
from test_regress_synth import SIM_TICKS_KEY, synth_profile
db, go, who = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
while not go.exists():
    time.sleep(0.005)
for i in range(40):
    record_run(db, synth_profile(seed=i, model="m" + who), {"written_at": f"t{i:03d}"}, passed=True, test_id=f"{who}-{i}")
"""


def test_two_processes_appending_at_once_lose_nothing(tmp_path):
    db, go = tmp_path / "h.db", tmp_path / "go"
    here = str(Path(__file__).parent)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(go), who, here], stderr=subprocess.PIPE, text=True)
             for who in ("a", "b")]
    time.sleep(1.5)  # both interpreters are up and waiting
    go.touch()
    errors = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        errors.append((p.returncode, err))
    assert errors == [(0, ""), (0, "")]
    conn = history.open_existing(db)
    try:
        runs = history.read_runs(conn)
        n_events = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        per_run = conn.execute("SELECT MIN(c), MAX(c) FROM (SELECT COUNT(*) c FROM events GROUP BY run_id)").fetchone()
    finally:
        conn.close()
    assert sorted(r["test_id"] for r in runs) == sorted(f"{w}-{i}" for w in "ab" for i in range(40))
    events_per_run = len(synth_profile(seed=0)["events"])
    assert n_events == 80 * events_per_run and tuple(per_run) == (events_per_run, events_per_run)
    assert {r["model"] for r in runs} == {"ma", "mb"}
