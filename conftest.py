"""Repository-level pytest set-up. The et-hil plugin itself is loaded through its `pytest11` entry point."""

from __future__ import annotations

import os
from pathlib import Path

# The test suite keeps its own cache inside the checkout (gitignored), so a fresh clone starts cold
# and a user's cache never hides a broken export.
os.environ.setdefault("HIL_CACHE_DIR", str(Path(__file__).resolve().parent / ".hil-cache"))
