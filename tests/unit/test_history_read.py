"""A WAL history (as the plugin's writer leaves it) read in a read-only folder, a read-only file, and refused
when a write-ahead log it could not read sits beside it. The read-only mounts are made in a user and mount
namespace (root ignores permission bits); the reader runs there as a child, and what it read is compared
with what sqlite3 reads here, outside."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_regress_synth import synth_profile

from hil.regress.history import record_run

REPO = Path(__file__).resolve().parents[2]
READER = ("import json, sys\nfrom hil.base.errors import HilError\nfrom hil.regress.history import open_existing, read_runs\n"
          "try:\n    conn = open_existing(sys.argv[1])\nexcept HilError as exc:\n    print(exc)\n    sys.exit(2)\n"
          "print(json.dumps([[run['id'], run['board']] for run in read_runs(conn)]))\n")
READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 97; shift; exec "$@"'


def read_in_namespace(mounted: Path, db: Path) -> subprocess.CompletedProcess:
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace: {probe.stderr.decode().strip()}")
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", READ_ONLY, "sh", str(mounted),
                           sys.executable, "-c", READER, str(db)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture
def history(tmp_path: Path) -> Path:
    db = tmp_path / "shared" / "history.db"
    for night in range(3):
        record_run(db, synth_profile(night), {"written_at": f"2026-01-0{night + 1}T02:00:00Z"}, passed=True)
    (db.parent / "history.db.lock").unlink()
    assert db.read_bytes()[18:20] == b"\x02\x02"  # WAL mode (sqlite.org/fileformat.html, offsets 18 and 19)
    return db


def rows(db: Path) -> list[list]:
    conn = sqlite3.connect(db)
    try:
        return [list(row) for row in conn.execute("SELECT id, board FROM runs ORDER BY time, id")]
    finally:
        conn.close()


@pytest.mark.parametrize("what", ["folder", "file"])
def test_a_wal_history_reads_in_a_read_only_folder_or_file(history: Path, what: str):
    done = read_in_namespace(history.parent if what == "folder" else history, history)
    assert done.returncode == 0, done.stdout + done.stderr  # was: "unable to open database file"
    assert json.loads(done.stdout) == rows(history)


def test_a_write_ahead_log_that_cannot_be_read_is_refused_not_skipped(history: Path, tmp_path: Path):
    archived = tmp_path / "archived"
    archived.mkdir()
    writer = sqlite3.connect(history, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE runs SET board = 'rt700' WHERE id = 3")  # held in history.db-wal only
    for name in ("history.db", "history.db-wal"):
        shutil.copy(history.parent / name, archived / name)
    writer.close()
    done = read_in_namespace(archived, archived / "history.db")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.strip() == (
        f"history database {archived / 'history.db'}: its write-ahead log {archived / 'history.db-wal'} holds changes "
        f"not yet in the database, and {archived} cannot be written, so SQLite cannot read them: copy the folder "
        "somewhere writable")


def test_a_hot_rollback_journal_in_a_read_only_folder_is_refused_not_read_half_written(history: Path, tmp_path: Path):
    """A writer stopped mid-transaction leaves its pages half written and the journal that undoes them:
    the reader must not take the half-written pages (immutable=1 would), and says so in one line."""
    conn = sqlite3.connect(history, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    stopped = os.fork()
    if stopped == 0:  # the writer: its changes spill into the file (a 2-page cache), then it dies uncommitted
        writer = sqlite3.connect(history, isolation_level=None)
        writer.execute("PRAGMA cache_size = 2")
        writer.execute("BEGIN")
        writer.execute("UPDATE events SET name = 'half-written'")
        writer.execute("UPDATE runs SET board = 'half-written'")
        os._exit(0)
    os.waitpid(stopped, 0)
    journal = Path(f"{history}-journal")
    assert journal.stat().st_size > 0  # the hot journal sqlite.org/fileformat.html describes
    done = read_in_namespace(history.parent, history)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.strip() == f"history database {history}: attempt to write a readonly database"
    assert "half-written" not in [board for _, board in rows(history)]  # here, writable: rolled back, as SQLite does
