"""Opening a history database for reading only, where the reader may not write a byte beside it.

SQLite's `mode=ro` still needs the WAL index (`history.db-shm`) of a WAL database (the plugin's writer
keeps WAL, hil.regress.history.connect), and creates it beside the file: in a read-only folder (a
shared, archived or mounted history) `hil report` answered "unable to open database file" (issue 32).
There the database is opened `immutable=1` as well. What that promises, per sqlite.org/uri.html
("immutable=1"): the caller tells SQLite the file sits on read-only media and cannot be modified, even
by another process with elevated privileges; SQLite then opens it read-only and skips all file locking
and change detection, and if the file changes anyhow it "might return incorrect query results and/or
SQLITE_CORRUPT errors". So it is used only where this reader cannot write the folder (no -shm can be
made there), and only when no write-ahead log holds changes the file lacks: a non-empty `-wal` beside
it is refused, never silently left unread. A writer that appends to the file through another mount
while it is read this way is the risk immutable=1 takes; `mode=ro` alone, tried first, takes none.
A rollback journal left by a writer stopped mid-transaction ("hot") needs rolling back, which a
read-only folder forbids: SQLite refuses that itself ("attempt to write a readonly database"), and
immutable=1 is not tried, since it would read the half-written pages.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from hil.base.errors import FileContentError

# What sqlite3 says when it cannot create the -shm (or -wal) of a read-only open.
CANNOT_OPEN = "unable to open database file"


def connect_read_only(path: Path, timeout_s: float) -> sqlite3.Connection:
    """A read-only connection to the existing database `path`; immutable only in a folder it cannot write."""
    uri = Path(path).resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=timeout_s)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the first read opens the WAL index
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        folder = Path(path).resolve().parent
        if CANNOT_OPEN not in str(exc) or os.access(folder, os.W_OK):
            raise
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise FileContentError(
                f"history database {path}: its write-ahead log {wal} holds changes not yet in the database, and "
                f"{folder} cannot be written, so SQLite cannot read them: copy the folder somewhere writable") from exc
        return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=timeout_s)
