"""manifest.json: what a run folder holds (sha256 and size of each file) and where it came from."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.base import atomic
from hil.base.entry_check import file_sum
from hil.base.errors import AnalysisError
from hil.base.json_record import EMPTY, JsonRecord
from hil.base.paths import REPO_ROOT, in_checkout
from hil.records.manifest_seal import SEALED_SCHEMA, check_seal, seal
from hil.records.validate.manifest import check_manifest

MANIFEST_NAME = "manifest.json"
SCHEMA = SEALED_SCHEMA  # carries its own digest (hil.records.manifest_seal)


def _empty() -> Mapping[str, Any]:
    return EMPTY


@dataclass(frozen=True, eq=False)
class Manifest(JsonRecord):
    """manifest.json, typed: where a run came from (provenance), how it ended, and the files it left.

    Keys a run did not record (older runs, `hil_board` sessions) read as None; unknown keys are kept.
    """

    schema: str = SCHEMA
    written_at: str | None = None
    git_commit: str | None = None
    model: str | None = None
    model_name: str | None = None
    board: str | None = None
    board_kind: str | None = None
    board_file: str | None = None
    iterations: int | None = None
    warmup: int | None = None
    status: str | None = None
    delegate: str | None = None
    quantization: Mapping[str, Any] | None = None  # hil.aot.quantize.QuantizationRecord; null for a float program
    cpu_fallback_reasons: Mapping[str, Any] | None = None  # why each CPU operator was not delegated (the lowering's)
    delegate_note: str | None = None  # once per run: the delegate got nothing of the program (a float one on neutron-sim)
    time_scale: Mapping[str, Any] | None = None
    firmware: str | None = None
    firmware_sha256: str | None = None
    firmware_kind: str | None = None
    simulated: bool | None = None
    etdump_crc32: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    numerics: Mapping[str, Any] | None = None  # the outputs' check (hil.numerics): no dump holds it
    footprint: Mapping[str, Any] | None = None  # profile.json's `stack` and `code_size` (the run's, not the dump's)
    drift_snr_db: float | None = None  # a debug-output run's threshold (hil.drift)
    drift_inputs: str | None = None  # which inputs the ETRecord's reference graph ran
    debug_buffer: Mapping[str, Any] | None = None  # its capacity, the need predicted and the runs
    error: str | None = None
    versions: Mapping[str, Any] = field(default_factory=_empty)
    files: Mapping[str, Mapping[str, Any]] = field(default_factory=_empty)
    key_order: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=_empty)
    null_keys: frozenset[str] = frozenset()

    def file_sha256(self, name: str) -> str | None:
        """The sha256 the run recorded for one of its files, None when it lists no such file."""
        return (self.files.get(name) or {}).get("sha256")

    @property
    def board_crc32(self) -> str | None:
        """The CRC-32 the firmware printed for its ETDump, when the run checked one."""
        crc = self.etdump_crc32 or {}
        return crc.get("firmware") if crc.get("checked") else None

    @property
    def is_simulated(self) -> bool:
        """As the run recorded it; else by the board's kind (only an RT700 runs on silicon); runs that
        recorded neither: by the board's name."""
        if isinstance(self.simulated, bool):
            return self.simulated
        if self.board_kind is not None:
            return is_simulated(self.board_kind, self.firmware_kind)
        return self.board != "rt700"


def is_simulated(kind: str, firmware: str | None = None) -> bool:
    """Only a board of kind rt700 (any board file of that kind), the emulated RT700 (rt700-emu, which executes the
    bench image) or the QEMU runtime image runs the program."""
    return kind not in ("rt700", "rt700-emu") and firmware != "runtime"


def sha256_file(path: Path) -> str:
    """The sha256 of `path`, as a cache entry's record holds it (hil.base.entry_check, one block reader)."""
    return file_sum(path).sha256


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


# CI systems that check out a commit without (or with a detached) git repository still say which one.
CI_COMMIT_VARIABLES = ("GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT", "BITBUCKET_COMMIT", "GIT_COMMIT",
                       "TRAVIS_COMMIT", "CIRCLE_SHA1")


def _git(folder: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_commit(repo: Path = REPO_ROOT) -> str | None:
    """The harness's own commit, so a result can be traced to the code that produced it.

    Only from a checkout of et-hil: an installed wheel has no commit of its own, and asking git in
    site-packages would answer with whatever repository the virtualenv happens to sit in.
    """
    if repo == REPO_ROOT and not in_checkout():
        return None
    return _git(repo, "rev-parse", "HEAD") or None


def project_commit(folder: Path | None = None) -> dict[str, Any] | None:
    """The user's project commit: the git repository around `folder` (default: the current folder),
    else the CI's commit variable; None when neither says."""
    folder = Path.cwd() if folder is None else Path(folder)
    commit = _git(folder, "rev-parse", "HEAD")
    if commit:
        status = _git(folder, "status", "--porcelain", "--untracked-files=no")
        return {"commit": commit, "source": f"git {_git(folder, 'rev-parse', '--show-toplevel')}",
                "dirty": bool(status)}
    for name in CI_COMMIT_VARIABLES:
        if os.environ.get(name):
            return {"commit": os.environ[name], "source": name, "dirty": None}
    return None


def versions() -> dict[str, str | None]:
    names = ["et-hil", "executorch", "torch", "pyocd", "pyserial", "pygdbmi", "eiq-neutron-sdk"]
    found = {name: package_version(name) for name in names}
    found["python"] = platform.python_version()
    return found


def describe_files(folder: Path, names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """sha256 and size of the files `names` in `folder` that exist (default: every regular file
    below it), the manifest itself and dot files excepted."""
    paths = sorted(folder.rglob("*")) if names is None else [folder / name for name in sorted(set(names))]
    files = {}
    for path in paths:
        if path.is_file() and path.name != MANIFEST_NAME and not path.name.startswith("."):
            files[str(path.relative_to(folder))] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    return files


def write_manifest(folder: Path, provenance: dict[str, Any], names: Iterable[str] | None = None) -> dict[str, Any]:
    """Describe the folder as it is now, sealed (hil.records.manifest_seal); called at the end of a run,
    failed or not.

    `names`: the run's own files. A run folder may sit among other files (a `--out` that already
    held data): only the run's are hashed, so an unrelated 4 GB file neither slows the manifest nor
    appears in it.
    """
    manifest = {
        "schema": SCHEMA,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": git_commit(),  # et-hil's own commit (None when installed from a wheel)
        "project_commit": project_commit(),  # the commit of the project that ran et-hil
        "versions": versions(),
        **provenance,
        "files": describe_files(folder, names),
    }
    return write_sealed(folder, manifest)


def write_sealed(folder: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """`manifest` sealed and written as the folder's manifest.json; returns what was written."""
    sealed = seal(manifest)
    atomic.write_json(Path(folder) / MANIFEST_NAME, sealed)
    return sealed


def read_manifest(folder: Path, *, verify: bool = True) -> dict[str, Any]:
    """manifest.json of a run folder; AnalysisError naming the file when it is missing, not a JSON
    object, no longer hashes to its own digest (hil.records.manifest_seal; `verify=False`: not checked,
    `hil inspect --no-verify`) or holds a field of the wrong type (hil.records.validate.manifest): a
    corrupt file beside a trace must cost a clear message, never a traceback."""
    path = Path(folder) / MANIFEST_NAME
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError as exc:
        raise AnalysisError(f"{path}: no such file") from exc
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError; deep nesting recurses
        raise AnalysisError(f"{path}: not a readable manifest ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not isinstance(data, dict):
        raise AnalysisError(f"{path}: not a manifest: a JSON {type(data).__name__}, not an object")
    if verify:
        check_seal(data, path)
    return check_manifest(data, path)


def load_manifest(folder: Path, *, verify: bool = True) -> Manifest:
    """manifest.json of a run folder as a Manifest (errors as `read_manifest`)."""
    return Manifest.from_json(read_manifest(folder, verify=verify))
