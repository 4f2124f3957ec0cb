"""manifest.json: what a run folder holds (sha256 and size of each file) and where it came from."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from hil import atomic
from hil.paths import REPO_ROOT

MANIFEST_NAME = "manifest.json"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def git_commit(repo: Path = REPO_ROOT) -> str | None:
    """The harness's own commit, so a result can be traced to the code that produced it."""
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def versions() -> dict[str, str | None]:
    names = ["et-hil", "executorch", "torch", "pyocd", "pyserial", "pygdbmi", "eiq-neutron-sdk"]
    found = {name: package_version(name) for name in names}
    found["python"] = platform.python_version()
    return found


def describe_files(folder: Path) -> dict[str, dict[str, Any]]:
    """sha256 and size of every regular file in `folder` except the manifest itself."""
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != MANIFEST_NAME and not path.name.startswith("."):
            files[str(path.relative_to(folder))] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    return files


def write_manifest(folder: Path, provenance: dict[str, Any]) -> dict[str, Any]:
    """Describe the folder as it is now; called at the end of a run, failed or not."""
    manifest = {
        "schema": "et-hil/manifest/1",
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": git_commit(),
        "versions": versions(),
        **provenance,
        "files": describe_files(folder),
    }
    atomic.write_json(folder / MANIFEST_NAME, manifest)
    return manifest
