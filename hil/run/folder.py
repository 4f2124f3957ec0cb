"""A run folder: the one way a run is finished (profile.json, manifest.json) and read back.

`hil run` (hil.run.pipeline), the `hil_board` fixture (hil.run.board_session) and `hil inspect RUN_DIR` all
finish a profile through `finish_profile` and write through `RunFolder`, so they agree on what a
profile holds beside the dump (the delegate, what ran on QEMU), on where warm-up is dropped (here,
once), and on the provenance (the board's kind, not its name, says whether it was simulated).

One run writes a run folder at a time: an flock on a lock file inside it. A second run into the
same folder fails at once naming the holder's pid, or waits for it (`--wait`), so serial.log, mi.log
and qemu.log never hold two runs interleaved. flock is the kernel's: a holder killed with SIGKILL
releases it, so a lock is never stale; the file records who holds it (pid, host, since) only so the
refusal can say whom it waits for. The descriptor is close-on-exec, so QEMU and gdb never inherit it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.run import session_mark
from hil.base.no_follow import no_follow
from hil.base import atomic
from hil.records.profile_model import Profile
from hil.analysis.warmup import drop_warmup
from hil.base.errors import InputError
from hil.base.held_lock import HeldLock
from hil.base.json_record import thaw
from hil.records.manifest_seal import is_sealed
from hil.records.manifest import (MANIFEST_NAME, Manifest, describe_files, load_manifest, sha256_file, write_manifest,
                                  write_sealed)
from hil.probe.lock import LockHolder

if TYPE_CHECKING:
    from hil.analysis.timescale import TimeScale
    from hil.config.board_config import BoardConfig

LOCK_NAME = ".hil-run.lock"
# What a run writes into its folder; a new run in the same folder starts by removing those an earlier
# run wrote (hil.run.out_folder refuses any other), so logs that are appended to (serial.log, mi.log) never
# mix two runs, and the manifest describes these alone. Nothing else in the folder is touched or hashed.
RUN_FILES = (
    "model.pte", "etrecord.bin", "trace.etdump", "serial.log", "mi.log", "qemu.log", "profile.json",
    "simulation.json", "neutron_convert.log", "manifest.json", "error.txt", "trace.json", "fault.json",
    "gdb-mi.log", "gdbserver.log", "export.log", "debug.bin", "outputs.pt", "host_runtime.log",
)
PROFILE_NAME = "profile.json"


def board_provenance(cfg: BoardConfig) -> dict[str, Any]:
    """The board as a manifest records it: its name, its kind, and the file it was read from."""
    source = cfg.source
    return {"board": cfg.name, "board_kind": cfg.kind, "board_file": str(source) if source else None,
            "board_file_sha256": sha256_file(source) if source else None}


def finish_profile(built: Mapping[str, Any], *, warmup: int = 0, delegate_note: str | None = None,
                   **keys: Any) -> Profile:
    """The profile a run folder holds: `build_profile`'s, then `keys` the run knows beside the dump
    (`delegate`, what ran on QEMU), in that order, then its first `warmup` iterations dropped. `delegate_note`
    (the lowering's: the delegate got nothing of the program) joins the profile's notes, under the table."""
    profile = Profile.from_json(built)
    if delegate_note:
        profile = profile.replace(notes=(*profile.notes, delegate_note))
    if keys:
        profile = profile.replace(**keys)
    return drop_warmup(profile, warmup) if warmup else profile


@dataclass(frozen=True)
class RunFolder:
    """The folder one run writes: its lock, its profile and its manifest."""

    path: Path

    def lock(self, *, wait: bool = False, report: Callable[[str], None] | None = None) -> "RunFolderLock":
        return RunFolderLock(self.path, wait=wait, report=report)

    def write_profile(self, profile: Profile) -> Path:
        return atomic.write_json(self.path / PROFILE_NAME, profile.to_json())

    def read_profile(self) -> Profile:
        return Profile.read(self.path / PROFILE_NAME)

    def write_manifest(self, provenance: Mapping[str, Any], names: Iterable[str] | None = RUN_FILES) -> Manifest:
        """manifest.json describing the folder now (names=None: every file in it)."""
        # the session that wrote it (hil.run.session_mark): a shared artifacts folder's runs stay apart
        return Manifest.from_json(write_manifest(self.path, {**dict(provenance), **session_mark.mark()}, names))

    def relist(self, names: Iterable[str] = ("trace.json",)) -> None:
        """Files written after the run (`names`: trace.json) listed in its manifest too, so the manifest stays
        true; the manifest is verified first and resealed after (an older, unsealed one stays unsealed), and
        the files it listed before keep their sha256s (re-hashing them all would bless a profile.json changed
        since the run)."""
        if self.has_manifest:
            manifest = self.manifest()
            files = {**thaw(manifest.files), **describe_files(self.path, names)}
            relisted = manifest.replace(files=files).to_json()
            if is_sealed(manifest):
                write_sealed(self.path, relisted)
            else:
                atomic.write_json(self.path / MANIFEST_NAME, relisted)

    @property
    def has_manifest(self) -> bool:
        return (self.path / MANIFEST_NAME).is_file()

    def manifest(self, *, verify: bool = True) -> Manifest:
        """manifest.json; an AnalysisError naming it when it is missing or corrupt (`verify=False`: its own
        digest not checked, hil.records.manifest_seal)."""
        return load_manifest(self.path, verify=verify)


class RunFolderBusy(InputError):
    """Another run holds the run folder's lock."""


class RunFolderLock(HeldLock):
    """Exclusive use of `folder` by this process while a run writes it; a context manager."""

    def __init__(self, folder: Path, *, wait: bool = False, report: Callable[[str], None] | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.wait = wait
        self.report = report
        self._fd: int | None = None

    def _holder(self) -> str:
        try:
            holder = LockHolder.parse(self.path.read_text())
        except OSError:
            holder = None
        return holder.describe() if holder is not None else "another process"

    def acquire(self) -> "RunFolderLock":
        if self._fd is not None:
            return self
        fd = no_follow(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                who = self._holder()
                if not self.wait:
                    raise RunFolderBusy(
                        f"run folder {self.folder} is in use by {who}, another run writing it; wait for it"
                        " with --wait or choose another --out"
                    ) from None
                if self.report is not None:
                    self.report(f"run folder {self.folder} is in use by {who}; waiting for it")
                fcntl.flock(fd, fcntl.LOCK_EX)
            os.ftruncate(fd, 0)
            os.pwrite(fd, LockHolder.me().dumps().encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self


def finish_session(folder: RunFolder, cfg: BoardConfig, profile: Profile, image: Path, time_scale: TimeScale) -> Profile:
    """A `hil_board` session's run: profile.json, then a manifest of every file in the folder, recording
    the board's kind, whether it was simulated and the clock, so `hil inspect` reads it as it was made."""
    folder.write_profile(profile)
    folder.write_manifest({"model": profile.model, **board_provenance(cfg), "status": "passed", "firmware": str(image),
                           "firmware_sha256": sha256_file(image), "simulated": profile.simulated,
                           "time_scale": time_scale.to_dict()}, names=None)
    return profile
