"""A small file system for one `hil` command: an unshare'd user and mount namespace holding a tmpfs.

The command sees a tmpfs of `size` at `mount` (and nothing else changes); the namespace, and its tmpfs,
end with the command, so the shell copies what the tmpfs holds to `keep` first, for the test to read.
Used by the fault-matrix rows of a full disk (test_fault_matrix_run_path.py, test_fault_matrix_disk_full.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SMALL_DISK = ('mnt=$1; keep=$2; size=$3; shift 3; mount -t tmpfs -o size="$size" tmpfs "$mnt" || exit 97; "$@";'
              ' rc=$?; cp -a "$mnt"/. "$keep"/; exit $rc')


def small_disk(mount: Path, keep: Path, size: str = "512k") -> tuple[str, ...]:
    """The prefix that runs a command with a `size` tmpfs at `mount` (skips when no namespace can be made)."""
    mount.mkdir()
    keep.mkdir()
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True,
                           timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace for a small tmpfs: {probe.stderr.decode().strip()}")
    return ("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", SMALL_DISK, "sh", str(mount), str(keep),
            size)
