"""A checksum per history row, written with the row and checked when it is read.

SQLite keeps no checksum of its pages: a flipped bit in a REAL, a cell another tool rewrote, an event row
lost or moved to another run reads back as a valid row, and an audit saw 4 of 200 such changes alter
`hil report` with nothing said. So each run row carries `checksum`: the sha256 of the run's cells and of
all its event rows (every column written at this version, each value with its SQLite type, so 5 and 5.0
and "5" differ), computed from the row as SQLite gives it back (a REAL column turns an int into a float),
in the transaction that wrote it. A row whose cells no longer give it is damaged: readers name it (its
id, time and run folder) and leave it out, the rest of the history is still drawn and judged.

Rows written before checksums were kept: the first et-hil of this version that appends to the history
computes theirs (they are sealed as they are then) and sets the database's `PRAGMA user_version` to
SEALED; from then a row without a checksum is damaged too. A history no such writer has touched yet is
read as before, its rows counted as unverified.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CHECKSUM = "checksum"
VERSION = "v1"
SEALED = 1  # PRAGMA user_version of a history whose every row carries a checksum
# The columns a v1 checksum covers: every column of the tables as this version writes them.
RUN_COLUMNS = ("id", "time", "git_commit", "board", "probe_id", "model", "test_id", "firmware_sha256", "model_sha256",
               "etrecord_sha256", "versions", "sdk_version", "simulated", "iterations", "warmup", "total_us",
               "npu_fraction", "totals", "memory", "passed", "artifacts", "comparison", "time_scale", "numerics",
               "time_base", "firmware_kind", "commit_dirty", "judged", "not_judged")
EVENT_COLUMNS = ("run_id", "seq", "key", "kind", "name", "op_types", "delegate_debug_id", "n", "p50_us", "p90_us",
                 "min_us", "max_us", "mad_us", "mean_us", "module_paths", "source_lines")


def _cell(value: Any) -> list[str]:
    """A cell with its type: SQLite's five storage classes, a float exactly (hex)."""
    if value is None:
        return ["null", ""]
    if isinstance(value, bool) or isinstance(value, int):
        return ["integer", str(int(value))]
    if isinstance(value, float):
        return ["real", value.hex()]
    if isinstance(value, bytes):
        return ["blob", value.hex()]
    return ["text", str(value)]


def row_checksum(run: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> str:
    """The checksum of a run row and its event rows (in `seq` order), as stored."""
    cells = [[_cell(run.get(column)) for column in RUN_COLUMNS],
             [[_cell(event.get(column)) for column in EVENT_COLUMNS] for event in events]]
    text = json.dumps(cells, separators=(",", ":"), ensure_ascii=True)
    return f"{VERSION}:{hashlib.sha256(text.encode('ascii')).hexdigest()}"


def _stored(conn: sqlite3.Connection, run_id: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    run = conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    events = conn.execute("SELECT * FROM events WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    return dict(run), [dict(e) for e in events]


def seal_row(conn: sqlite3.Connection, run_id: int) -> None:
    """Write the checksum of run `run_id` as SQLite holds it now (inside the transaction that wrote it)."""
    run, events = _stored(conn, run_id)
    conn.execute(f"UPDATE runs SET {CHECKSUM} = ? WHERE id = ?", (row_checksum(run, events), run_id))


def seal_history(conn: sqlite3.Connection) -> None:
    """Once per history (a writer's set-up): the rows written before checksums get theirs, and the
    database is marked SEALED, after which a row without one is damaged."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= SEALED:
        return
    for (run_id,) in conn.execute(f"SELECT id FROM runs WHERE {CHECKSUM} IS NULL").fetchall():
        seal_row(conn, run_id)
    conn.execute(f"PRAGMA user_version = {SEALED}")


def is_sealed(conn: sqlite3.Connection) -> bool:
    return int(conn.execute("PRAGMA user_version").fetchone()[0]) >= SEALED


@dataclass(frozen=True)
class DamagedRow:
    """A history row whose cells no longer give its checksum: named, never drawn nor judged."""

    run_id: Any
    time: Any
    artifacts: Any
    problem: str

    def describe(self, db: object) -> str:
        return (f"history database {db}, run {self.run_id} (recorded {self.time}, run folder {self.artifacts or '-'}): "
                f"{self.problem}: left out")


def row_problem(run: Mapping[str, Any], events: Sequence[Mapping[str, Any]], sealed: bool) -> DamagedRow | None:
    """The damage of one stored run row (raw cells) with its event rows; None when it checks, or is an
    unverified row of a history not yet sealed."""
    recorded = run.get(CHECKSUM)
    if recorded is None and not sealed:
        return None
    if recorded is None:
        problem = "its checksum is missing (every row of this history carries one)"
    else:
        actual = row_checksum(run, events)
        if actual == recorded:
            return None
        problem = f"its cells give checksum {actual}, not the {str(recorded)[:80]} written with it"
    return DamagedRow(run.get("id"), run.get("time"), run.get("artifacts"), problem)
