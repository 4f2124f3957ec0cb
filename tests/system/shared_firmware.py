"""A cache of a test's own for the export side, sharing the suite's firmware builds.

Why: the tests of a nightly history (a model widened, read through a config or an environment variable)
need an export cache no other test filled, so that what they see exported is their own; nothing of what
they check lies in the firmware folder. Each building ExecuTorch's runtime libraries again in a private
cache cost about a minute of a 2-core `make test` apiece. The firmware folder is keyed by content and its
entries are built under a lock (hil.firmware.runtime_image), so sharing it is what a second install on one
machine does. Tests about the cache itself (test_fault_matrix_cache, test_parallel_sessions' cold cache,
test_shared_files' file modes) keep theirs wholly private.
"""

from __future__ import annotations

from pathlib import Path

from hil.base.paths import cache_dir


def cache_sharing_firmware(folder: Path) -> Path:
    """`folder` (made if missing) as a HIL_CACHE_DIR whose `firmware` is the suite's own; idempotent."""
    folder.mkdir(parents=True, exist_ok=True)
    link, suite = folder / "firmware", cache_dir() / "firmware"
    suite.mkdir(parents=True, exist_ok=True)  # a link to a missing folder would refuse the build's mkdir
    if not link.is_symlink():
        link.symlink_to(suite, target_is_directory=True)
    return folder
