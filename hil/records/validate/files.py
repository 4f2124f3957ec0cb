"""Reading a file a user or an earlier run provides: a missing, unreadable or malformed file is one line
naming it (hil.base.errors.FileContentError, exit status 2), never an OSError or a JSON traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hil.base.errors import FileContentError


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`, or a FileContentError naming the file and what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))  # a BOM is not JSON, nor a fault
    except FileNotFoundError as exc:
        raise FileContentError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise FileContentError(f"{path}: a folder, not a file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # deep nesting recurses
        raise FileContentError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise FileContentError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def read_bytes(path: Path, what: str) -> bytes:
    """The bytes of `path`, `what` it should be (`an ETDump`) named when it cannot be read."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise FileContentError(f"{path}: no such file ({what} was expected there)") from exc
    except IsADirectoryError as exc:
        raise FileContentError(f"{path}: a folder, not {what}") from exc
    except OSError as exc:
        raise FileContentError(f"{path}: cannot read {what} ({exc.strerror or exc})") from exc


def read_head(path: Path, size: int) -> bytes:
    """The first `size` bytes of `path` (fewer for a shorter file), the file named when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise FileContentError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
