"""A finished source workspace as `hil sources` leaves one, written by hand from firmware/rt700/pins.toml (tomllib):
workspace.env, workspace.json and one stamp per pin in its checkout's .git, never by the code under test."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from hil.base.paths import FIRMWARE_DIR

PINS = tomllib.loads((FIRMWARE_DIR / "rt700" / "pins.toml").read_text())["pin"]


def write_workspace(root: Path, moved: str | None = None) -> Path:
    """The workspace at `root`, every pin at its commit but `moved` (a repository) at 000...0."""
    for pin in PINS:
        commit = "0" * 40 if pin["repo"] == moved else pin["commit"]
        stamp = {"repo": pin["repo"], "commit": commit, "sparse": pin.get("sparse", []), "source": "/mirror"}
        (root / pin["path"] / ".git").mkdir(parents=True, exist_ok=True)
        (root / pin["path"] / ".git" / "hil-pin.json").write_text(json.dumps(stamp))
    (root / "workspace.env").write_text(f"export EXECUTORCH_ROOT={root / 'executorch'}\n")
    (root / "workspace.json").write_text(json.dumps({"bench_commits": False}))
    return root
