"""Where the harness finds its data (board files, firmware sources) and keeps its caches."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BOARDS_DIR = REPO_ROOT / "boards"
FIRMWARE_DIR = REPO_ROOT / "firmware"


def cache_dir() -> Path:
    """The content-addressed cache for exported models and firmware images.

    `HIL_CACHE_DIR` wins so CI and tests can isolate it; otherwise the user's cache folder.
    """
    env = os.environ.get("HIL_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "et-hil"
    base.mkdir(parents=True, exist_ok=True)
    return base
