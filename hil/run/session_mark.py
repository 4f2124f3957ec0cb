"""Which pytest session wrote a run folder, so two sessions sharing one artifacts folder never take each other's runs.

Why: with the same `--hil-artifacts`, two sessions' tests of one id write one run folder. A run refused there
(the folder busy with the other session's run) was recorded in the history as a failed row carrying the other
session's figures and folder: the plugin judged the folder its run had asked for, and its scan of the test's
artifacts folder took any manifest written during the call. Each session now has an id of its own, in the
environment (so a `hil run` a test starts inherits it), and every manifest records the id of the session that
wrote it; the plugin judges a folder only when its manifest says it is this session's. A refused run that wrote
no manifest of its own is then recorded nowhere, never under another session's figures.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from hil.base.errors import HilError
from hil.records.manifest import load_manifest

SESSION_ENV = "HIL_SESSION_ID"
MANIFEST_KEY = "session"


def mark() -> dict[str, str]:
    """The manifest's `session` key: the id of the session this process runs in, when it runs in one."""
    value = os.environ.get(SESSION_ENV)
    return {MANIFEST_KEY: value} if value else {}


def begin() -> str | None:
    """Give this process (a pytest session, or one xdist worker) an id of its own; returns the one it replaces."""
    previous = os.environ.get(SESSION_ENV)
    os.environ[SESSION_ENV] = uuid.uuid4().hex
    return previous


def end(previous: str | None) -> None:
    """Put back the id `begin()` replaced (a session run inside another: the suite's own system tests)."""
    if previous is None:
        os.environ.pop(SESSION_ENV, None)
    else:
        os.environ[SESSION_ENV] = previous


def writer(folder: Path) -> str | None:
    """The session id the folder's manifest records; None without a readable manifest or without the key."""
    try:
        return load_manifest(Path(folder)).extra.get(MANIFEST_KEY)
    except (HilError, OSError):
        return None


def ours(folder: Path) -> bool:
    """The folder's manifest was written in this session."""
    mine = os.environ.get(SESSION_ENV)
    return mine is not None and writer(folder) == mine


def others(folder: Path) -> bool:
    """The folder's manifest was written in another session (a manifest naming none is nobody's: False)."""
    found = writer(folder)
    return found is not None and found != os.environ.get(SESSION_ENV)
