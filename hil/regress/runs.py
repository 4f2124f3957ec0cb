"""Reading what a run left behind: a run folder, a `profile.json`, or a baseline file, all alike.

`hil compare`, `hil baseline update` and the pytest hooks accept any of these, so the loading and
its error messages live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.analysis.stored_figures import check_stored_figures
from hil.records.profile_model import Profile, as_profile
from hil.base.errors import AnalysisError
from hil.records.manifest import Manifest
from hil.records.validate.files import read_json
from hil.records.validate.profile import BASELINE_SCHEMA, PROFILE_SCHEMA, check_baseline, check_profile

__all__ = ["BASELINE_SCHEMA", "PROFILE_SCHEMA", "LoadedRun", "load_run", "read_json", "read_manifest"]


@dataclass
class LoadedRun:
    """A profile plus what is known of where it came from (an empty Manifest when nothing is)."""

    profile: Profile
    source: Path
    folder: Path | None = None
    manifest: Manifest = field(default_factory=Manifest)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.profile = as_profile(self.profile)
        self.manifest = Manifest.from_json(self.manifest)

    @property
    def label(self) -> str:
        return str(self.source)


def read_manifest(folder: Path) -> dict[str, Any]:
    """manifest.json of a run folder, or {} when the folder has none (a copied profile, say)."""
    from hil.records.manifest import MANIFEST_NAME, read_manifest as read_checked

    return read_checked(folder) if (Path(folder) / MANIFEST_NAME).is_file() else {}


def load_run(path: Path) -> LoadedRun:
    """Load a run folder, a profile.json or a baseline JSON; a file that is none of these, or holds a
    field of the wrong type, is refused naming the file and the field (hil.records.validate)."""
    return _load_run(Path(path))


def _load_run(path: Path) -> LoadedRun:
    if path.is_dir():
        profile_path = path / "profile.json"
        if not profile_path.is_file():
            raise AnalysisError(f"{path}: run folder without profile.json (did the run fail? see {path / 'manifest.json'})")
        manifest = _verified(profile_path)
        return LoadedRun(_checked(read_json(profile_path), profile_path), profile_path, path, manifest)
    manifest = _verified(path) if path.name == "profile.json" else read_manifest(path.parent)
    data = read_json(path)
    if data.get("schema") == BASELINE_SCHEMA:
        check_baseline(data, path)
        check_stored_figures(data["profile"], path, where="profile")
        return LoadedRun(data["profile"], path, None, {}, dict(data.get("provenance") or {}))
    if data.get("schema") != PROFILE_SCHEMA:
        raise AnalysisError(
            f"{path}: neither a profile ({PROFILE_SCHEMA}) nor a baseline ({BASELINE_SCHEMA}); schema={data.get('schema')!r}"
        )
    return LoadedRun(_checked(data, path), path, path.parent, manifest)


def _verified(profile_path: Path) -> dict[str, Any]:
    """The manifest beside a run's profile.json (its own digest checked), after the profile was checked
    against the sha256 it lists (hil.records.evidence.verify_read: one line naming both, exit 2); {} for a
    profile with no manifest beside it (a copy: nothing to verify it against)."""
    from hil.records.evidence import verify_read

    manifest = read_manifest(profile_path.parent)
    if manifest:
        verify_read(profile_path.parent, manifest, profile_path.name)
    return manifest


def _checked(data: Any, path: Path) -> dict[str, Any]:
    """A profile whose fields have the types their readers expect and whose stored figures agree with
    its times (hil.records.validate.profile, hil.analysis.stored_figures); else FileContentError."""
    profile = check_profile(data, path)
    check_stored_figures(profile, path)
    return profile
