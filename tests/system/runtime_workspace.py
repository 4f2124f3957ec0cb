"""The pinned source workspace the QEMU runtime image is built from, for the tests that need it.

`make test` assembles it (CI from its lab mirror, HIL_GIT_BASE) and names it in RT700_SDK_DIR;
without one, the tests marked `needs_runtime` skip and say why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SDK_DIR = os.environ.get("RT700_SDK_DIR", "")
needs_runtime = pytest.mark.skipif(
    not SDK_DIR or not Path(SDK_DIR, "workspace.env").is_file(),
    reason="RT700_SDK_DIR names no source workspace (`make rt700-sdk`): the QEMU runtime image is built from it",
)
