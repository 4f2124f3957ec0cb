"""Reading what a run left behind: a run folder, a `profile.json`, or a baseline file, all alike.

`hil compare`, `hil baseline update` and the pytest hooks accept any of these, so the loading and
its error messages live in one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.analysis.profile_model import SCHEMA, Profile, as_profile
from hil.manifest import Manifest
from hil.errors import AnalysisError
from hil.regress.finite import check_finite

PROFILE_SCHEMA = SCHEMA
BASELINE_SCHEMA = "et-hil/baseline/1"


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


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`, or an AnalysisError naming the file and what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise AnalysisError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # deep nesting recurses
        raise AnalysisError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise AnalysisError(f"{path}: expected a JSON object, found {type(data).__name__}")
    return data


def read_manifest(folder: Path) -> dict[str, Any]:
    """manifest.json of a run folder, or {} when the folder has none (a copied profile, say)."""
    path = Path(folder) / "manifest.json"
    return read_json(path) if path.is_file() else {}


def load_run(path: Path) -> LoadedRun:
    """Load a run folder, a profile.json or a baseline JSON; errors name the path (and a non-finite
    figure its event: hil.regress.finite)."""
    run = _load_run(Path(path))
    check_finite(run.profile, str(run.source))
    return run


def _load_run(path: Path) -> LoadedRun:
    if path.is_dir():
        profile_path = path / "profile.json"
        if not profile_path.is_file():
            raise AnalysisError(f"{path}: run folder without profile.json (did the run fail? see {path / 'manifest.json'})")
        return LoadedRun(read_json(profile_path), profile_path, path, read_manifest(path))
    data = read_json(path)
    if data.get("schema") == BASELINE_SCHEMA:
        if not isinstance(data.get("profile"), dict) or not isinstance(data["profile"].get("events"), list):
            raise AnalysisError(f"{path}: a baseline ({BASELINE_SCHEMA}) without a profile holding a list of events")
        return LoadedRun(data["profile"], path, None, {}, dict(data.get("provenance") or {}))
    if data.get("schema") != PROFILE_SCHEMA or not isinstance(data.get("events"), list):
        raise AnalysisError(
            f"{path}: neither a profile ({PROFILE_SCHEMA}) nor a baseline ({BASELINE_SCHEMA}); schema={data.get('schema')!r}"
        )
    return LoadedRun(data, path, path.parent, read_manifest(path.parent))
