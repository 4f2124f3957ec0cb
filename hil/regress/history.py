"""History: every run appended to one SQLite file, so a report can draw the nightly trend.

Several pytest sessions (two boards on one bench, CI shards) may append at once. SQLite handles
that when every writer uses WAL mode, a busy timeout, and one short `BEGIN IMMEDIATE` transaction
per run (the write lock is taken up front, so two writers queue instead of dead-locking on an
upgrade from a read lock).
"""

from __future__ import annotations

import fcntl
import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.base.no_follow import no_follow, not_a_link
from hil.records.profile_model import Profile, as_profile, history_profile
from hil.records.statistics import summarize
from hil.base.errors import AnalysisError, FileContentError
from hil.base.json_record import thaw
from hil.records.manifest import Manifest
from hil.numerics.gate import numerics_summary
from hil.regress.history_read import connect_read_only
from hil.regress.history_seal import DamagedRow, is_sealed, row_problem, seal_history, seal_row
from hil.regress.identity import keyed_events
from hil.regress.timebase import TimeBase, from_history_row, time_base_of
from hil.records.validate.fields import one_line
from hil.records.validate.files import read_head
from hil.records.validate.history import SQLITE_HEADER, TABLES, check_event_row, check_header, check_run_row, check_tables

BUSY_TIMEOUT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    git_commit TEXT, board TEXT NOT NULL, probe_id TEXT, model TEXT NOT NULL, test_id TEXT,
    firmware_sha256 TEXT, model_sha256 TEXT, etrecord_sha256 TEXT,
    versions TEXT, sdk_version TEXT,
    simulated INTEGER, iterations INTEGER, warmup INTEGER,
    total_us REAL, npu_fraction REAL, totals TEXT, memory TEXT,
    passed INTEGER NOT NULL, artifacts TEXT, comparison TEXT
);
CREATE TABLE IF NOT EXISTS events (
    run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, key TEXT NOT NULL,
    kind TEXT, name TEXT, op_types TEXT, delegate_debug_id INTEGER,
    n INTEGER, p50_us REAL, p90_us REAL, min_us REAL, max_us REAL, mad_us REAL, mean_us REAL,
    module_paths TEXT, source_lines TEXT,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX IF NOT EXISTS runs_by_model ON runs(model, board, time);
"""

_EVENT_COLUMNS = ("p50_us", "p90_us", "min_us", "max_us", "mad_us", "mean_us")
# Later columns of `events`: an event's `modules` and `sources` (JSON lists; NULL when the ETRecord named none),
# named apart from the profile's keys so that an older et-hil, which checks those keys as lists, reads on.
_EVENT_PLACES = {"modules": "module_paths", "sources": "source_lines"}


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) a history database ready for concurrent writers."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        not_a_link(path.with_name(name))  # SQLite opens each by name, following a link
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        with _setup_lock(path):
            conn.execute("PRAGMA journal_mode = WAL")
            with transaction(conn):
                _create(conn)
    except sqlite3.DatabaseError as exc:
        raise AnalysisError(f"history database {path}: {exc}") from exc
    return conn


@contextmanager
def _setup_lock(path: Path) -> Iterator[None]:
    """Serialise opening-time set-up between processes.

    Switching a new database to WAL needs it to itself, and SQLite answers "database is locked" at
    once (without its busy handler) when two writers open a fresh file together; everything after
    the switch is covered by the busy timeout. The lock file sits beside the database.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    with open(path.with_name(path.name + ".lock"), "a+b", opener=no_follow) as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise sqlite3.OperationalError(f"set-up lock {handle.name} held for over {BUSY_TIMEOUT_S} s")
                time.sleep(0.01)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _create(conn: sqlite3.Connection) -> None:
    for statement in filter(str.strip, _SCHEMA.split(";")):
        conn.execute(statement)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    # Columns of later versions, added to databases written before them: the clock, the outputs' numerics,
    # the time base and the image that ran (hil.regress.timebase), whether the project's tree was dirty.
    for column, kind in _LATER_COLUMNS:
        if column not in columns:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")
    # The user's layers each event ran (nn.Module paths and source lines, JSON lists), so the report can
    # name a bar and a layer's trend as the user does; rows written before them read as naming none.
    event_columns = {row[1] for row in conn.execute("PRAGMA table_info(events)")}
    for column in _EVENT_PLACES.values():
        if column not in event_columns:
            conn.execute(f"ALTER TABLE events ADD COLUMN {column} TEXT")
    # Rows written before the time base was kept get the one they still tell, else "unknown" (which
    # matches nothing): never left empty, so no reader can take an old row for a run of any base.
    old = [dict(r) for r in conn.execute("SELECT id, simulated, time_scale FROM runs WHERE time_base IS NULL")]
    conn.executemany("UPDATE runs SET time_base = ? WHERE id = ?", [(from_history_row(r).key, r["id"]) for r in old])
    seal_history(conn)  # last: the rows as they are now get their checksums (hil.regress.history_seal), once


_LATER_COLUMNS = (("time_scale", "TEXT"), ("numerics", "TEXT"), ("time_base", "TEXT"), ("firmware_kind", "TEXT"),
                  ("commit_dirty", "INTEGER"), ("judged", "INTEGER"), ("not_judged", "TEXT"),
                  ("checksum", "TEXT"))


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction that takes the lock at its start and commits or rolls back whole."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _sdk_version(versions: dict[str, Any]) -> str | None:
    return versions.get("eiq-neutron-sdk") or versions.get("eiq_neutron_sdk")


def project_commit(manifest: Manifest) -> tuple[str | None, bool | None]:
    """The commit of the project that ran et-hil, as its manifest recorded it (hil.records.manifest.project_commit),
    and whether its tree had uncommitted changes; (None, None) when the run knew none."""
    found = manifest.extra.get("project_commit")
    if not isinstance(found, Mapping) or not found.get("commit"):
        return None, None
    dirty = found.get("dirty")
    return str(found["commit"]), dirty if isinstance(dirty, bool) else None


def record_run(
    path: Path,
    profile: Profile | Mapping[str, Any],
    manifest: Manifest | Mapping[str, Any] | None = None,
    *,
    passed: bool,
    test_id: str | None = None,
    probe_id: str | None = None,
    artifacts: Path | str | None = None,
    comparison: dict[str, Any] | None = None,
    when: str | None = None,
    time_base: TimeBase | None = None,
) -> int:
    """Append one run (its provenance, time base, totals and per-event statistics); returns its row id.

    `time_base`: the run's, when the caller has derived it already; else derived here from the profile
    and the manifest (hil.regress.timebase.time_base_of).
    """
    profile, manifest = as_profile(profile), Manifest.from_json(manifest or {})
    versions = thaw(manifest.versions)
    totals = thaw(profile.totals_us)
    commit, dirty = project_commit(manifest)
    run_row = {
        "time": when or manifest.written_at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": commit,
        "commit_dirty": None if dirty is None else int(dirty),
        "board": str(profile.board or manifest.board or "?"),
        "probe_id": probe_id or manifest.extra.get("probe_id"),
        "model": profile.series if profile.model else str(manifest.model or "?"),
        "test_id": test_id,
        "firmware_sha256": manifest.firmware_sha256,
        "model_sha256": manifest.file_sha256("model.pte"),
        "etrecord_sha256": manifest.file_sha256("etrecord.bin"),
        "versions": json.dumps(versions, sort_keys=True),
        "sdk_version": _sdk_version(versions),
        "simulated": int(bool(profile.simulated)),
        "iterations": profile.iterations,
        "warmup": profile.warmup_iterations if "warmup_iterations" in profile else 0,
        "total_us": totals.get("method_execute"),
        "npu_fraction": profile.npu_fraction,
        "totals": json.dumps(totals, sort_keys=True),
        "memory": json.dumps(thaw(profile.memory), sort_keys=True),
        "passed": int(bool(passed)),
        "artifacts": None if artifacts is None else str(artifacts),
        "comparison": None if comparison is None else json.dumps(comparison),
        "time_scale": json.dumps(thaw(profile.time_scale), sort_keys=True),
        "numerics": json.dumps(thaw(numerics_summary(profile.numerics)), sort_keys=True),
        "time_base": (time_base or time_base_of(profile, manifest)).key,
        "firmware_kind": profile.firmware or manifest.firmware_kind,
        **_judgement(comparison),
    }
    event_rows = []
    for seq, (key, event) in enumerate(keyed_events(profile.events).items()):
        stats = summarize(event.times_us or ()) or {c: getattr(event, c) for c in _EVENT_COLUMNS}
        event_rows.append(
            (seq, key, event.kind, str(event.name), json.dumps(list(event.op_types)),
             event.delegate_debug_id, len(event.times_us or ()) or None, *(stats.get(c) for c in _EVENT_COLUMNS),
             *(json.dumps(list(getattr(event, key))) if getattr(event, key) else None for key in _EVENT_PLACES))
        )
    conn = connect(path)
    try:
        with transaction(conn):
            cols = ", ".join(run_row)
            cursor = conn.execute(f"INSERT INTO runs ({cols}) VALUES ({', '.join('?' * len(run_row))})", tuple(run_row.values()))
            run_id = int(cursor.lastrowid)
            conn.executemany(
                "INSERT INTO events (run_id, seq, key, kind, name, op_types, delegate_debug_id, n, "
                + ", ".join(_EVENT_COLUMNS + tuple(_EVENT_PLACES.values())) + ") VALUES ("
                + ", ".join("?" * (8 + len(_EVENT_COLUMNS) + len(_EVENT_PLACES))) + ")",
                [(run_id, *row) for row in event_rows],
            )
            seal_row(conn, run_id)
    except sqlite3.DatabaseError as exc:
        raise AnalysisError(f"history database {path}: cannot append run of {run_row['model']}: {exc}") from exc
    finally:
        conn.close()
    return run_id


def _judgement(comparison: Mapping[str, Any] | None) -> dict[str, Any]:
    """The gate's decision as two columns a reader needs no JSON for: `judged` (1 a verdict was reached, 0
    the run passed or failed unjudged, NULL no gate was asked for) and `not_judged` (why not: the
    `hil.<model>.not_judged` code, `too-few-runs` for a run of a history still filling)."""
    decision = (comparison or {}).get("decision") or {}
    if not decision:
        return {"judged": None, "not_judged": None}
    return {"judged": int(bool(decision.get("judged"))), "not_judged": decision.get("not_judged") or None}


def open_existing(path: Path) -> sqlite3.Connection:
    """Open a history database that must already exist, read-only (readers: reports, queries, the gate).

    Read-only, so a reader never writes: an empty or foreign file given to `hil report` is refused
    (hil.records.validate.history), never turned into a new database. WAL databases read as usual.
    """
    path = Path(path)
    if not path.is_file():
        raise AnalysisError(f"history database {path}: no such file (write one with pytest --hil-history {path})")
    check_header(read_head(path, len(SQLITE_HEADER)), path)
    with _reading(path):
        conn = connect_read_only(path, BUSY_TIMEOUT_S)  # a read-only folder too (hil.regress.history_read)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        check_tables({table: {row[1] for row in conn.execute(f"PRAGMA table_info({table})")} for table in TABLES},
                     path)
    return conn


@contextmanager
def _reading(path: Path | str) -> Iterator[None]:
    """A damaged database ("database disk image is malformed") is one line naming it, as a bad JSON file is."""
    try:
        yield
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a TEXT cell that is no UTF-8: the latter
        raise FileContentError(f"history database {path}: {one_line(str(exc))}") from exc


def _database_path(conn: sqlite3.Connection) -> str:
    return str(conn.execute("PRAGMA database_list").fetchone()[2])


@dataclass
class StoredHistory:
    """What a history holds that a reader may use: each verified (or, in a history not yet sealed,
    unverified) run row with its event rows, decoded and checked, oldest first; the damaged rows, named
    and left out (hil.regress.history_seal); how many rows carry no checksum yet."""

    runs: list[tuple[dict[str, Any], list[dict[str, Any]]]] = field(default_factory=list)
    damaged: list[DamagedRow] = field(default_factory=list)
    unverified: int = 0


def read_history(conn: sqlite3.Connection) -> StoredHistory:
    """Every run, oldest first, each checked against its checksum before it is decoded; a row of the wrong
    shape that carries no checksum is refused naming it (hil.records.validate.history)."""
    path = _database_path(conn)
    with _reading(path):
        raw = [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY time, id")]
        events: dict[Any, list[dict[str, Any]]] = {}
        for row in conn.execute("SELECT * FROM events ORDER BY run_id, seq"):
            events.setdefault(row["run_id"], []).append(dict(row))
        sealed = is_sealed(conn)
    found = StoredHistory()
    for run in raw:
        mine = events.get(run["id"], [])
        damage = row_problem(run, mine, sealed)
        if damage is not None:
            found.damaged.append(damage)
            continue
        found.unverified += run.get("checksum") is None
        found.runs.append((_with_time_base(check_run_row(run, path)), [check_event_row(e, path) for e in mine]))
    return found


def read_runs(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every run that checks (read_history), oldest first, with JSON columns decoded."""
    return [run for run, _ in read_history(conn).runs]


def _with_time_base(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its `time_base` key filled: a database opened read-only may predate the column."""
    row["time_base"] = from_history_row(row).key
    return row


def read_events(conn: sqlite3.Connection, run_id: int) -> list[dict[str, Any]]:
    """One run's events as profile-like dicts (statistics, no per-iteration times), unverified: read_history
    checks them with their run."""
    path = _database_path(conn)
    with _reading(path):
        rows = [dict(r) for r in conn.execute("SELECT * FROM events WHERE run_id = ? ORDER BY seq", (run_id,))]
    return [check_event_row(row, path) for row in rows]


def profile_from_history(run: dict[str, Any], events: list[dict[str, Any]]) -> Profile:
    """A profile rebuilt from history rows (the same Profile type, events with `times_us=None`)."""
    return history_profile(run, events)


@dataclass
class RecentRuns:
    """The baseline the history holds for one run: its last passed runs of the same program, board and
    time base (row ids and profiles, oldest first), how many passed runs of other time bases it left out
    (key -> count), so a run that finds too few can say why, and the damaged rows it left out (named)."""

    ids: list[int] = field(default_factory=list)
    profiles: list[Profile] = field(default_factory=list)
    other_bases: dict[str, int] = field(default_factory=dict)
    damaged: list[str] = field(default_factory=list)


def _passed(path: Path, series: str, board: str) -> tuple[list[tuple[dict[str, Any], list[dict[str, Any]]]], list[str]]:
    """The passed runs of one program on one board that check, latest first, and the damaged rows named
    (any damaged row: its program may be the cell that changed)."""
    conn = open_existing(path)
    try:
        stored = read_history(conn)
    finally:
        conn.close()
    runs = [(run, events) for run, events in reversed(stored.runs)
            if run["model"] == series and run["board"] == board and run["passed"] == 1]
    return runs, [damage.describe(path) for damage in stored.damaged]


def recent_runs(path: Path, series: str, board: str, time_base: TimeBase, limit: int) -> RecentRuns:
    """The last `limit` passed runs of one program on one board in one time base, oldest first: a
    baseline made of several runs, so a comparison can see how much runs differ from each other.

    A run of another time base (a replay among runtime runs, say) is never part of it, and an unknown
    base matches nothing (hil.regress.timebase); a damaged row never is (hil.regress.history_seal)."""
    found = RecentRuns()
    if not Path(path).is_file() or limit <= 0:
        return found
    runs, found.damaged = _passed(path, series, board)
    for row, events in runs:
        base = from_history_row(row)
        if not base.matches(time_base):
            found.other_bases[base.key] = found.other_bases.get(base.key, 0) + 1
        elif len(found.ids) < limit:
            found.ids.insert(0, int(row["id"]))
            found.profiles.insert(0, profile_from_history(row, events))
    return found


def series_time_base(path: Path, series: str, board: str) -> TimeBase | None:
    """The time base of the latest passed run of one program on one board (None: the history holds none):
    what a nightly asks before a run, to require the image its series was made with (a runtime series
    must not quietly continue on the replay image)."""
    if not Path(path).is_file():
        return None
    runs, _ = _passed(path, series, board)
    return from_history_row(runs[0][0]) if runs else None
