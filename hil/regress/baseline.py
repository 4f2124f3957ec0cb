"""Baselines: a profile frozen with its provenance, one JSON file per model.

`--hil-baseline PATH` takes a folder (`PATH/<program>.json`, so a nightly keeps one folder per board,
e.g. `baselines/qemu/`) or one file (a single-model suite). A program is named as the run's series names
it (Profile.series): the model, plus `+<delegate>` when it was lowered to one (`models-ae_factory+neutron-sim`),
so the file name, the verdict's text and the history say the same key. A baseline carries where it came from
(git commit, date, board, model, versions, firmware and model hashes) so a surprising comparison
can be traced to the run that set the bar, and its time base (hil.regress.timebase): the gate refuses
to compare a run with a baseline that counts another thing (instructions against host nanoseconds).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from hil.base import atomic
from hil.records.profile_model import as_profile
from hil.analysis.warmup import with_statistics
from hil.base.errors import HilError
from hil.config.inputs import writable_folder
from hil.base.json_record import thaw
from hil.regress.runs import BASELINE_SCHEMA, LoadedRun, load_run
from hil.regress.timebase import TimeBase, time_base_of


def baseline_name(model: str, *, plus: str = "+") -> str:
    """File-system-safe name of a program's baseline file: the series as it is (`cifar10+neutron-sim`);
    `path/net.py:factory` -> `factory`. `plus="_"`: the name written before the `+` was kept."""
    base = model.split(":")[-1] if ":" in model else model
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", base).replace("+", plus).strip("_") or "model"


def baseline_path(path: Path, model: str) -> Path:
    """Where the baseline of `model` lives under `path` (a folder) or `path` itself (a .json file)."""
    path = Path(path)
    if path.suffix == ".json" and not path.is_dir():
        return path
    return path / f"{baseline_name(model)}.json"


def _written_before(path: Path, model: str) -> Path | None:
    """The file an older et-hil wrote for `model` under the folder `path` (`cifar10_neutron-sim.json`), if any."""
    if path.suffix == ".json" and not path.is_dir():
        return None
    older = path / f"{baseline_name(model, plus='_')}.json"
    return older if older.is_file() else None


def provenance_of(run: LoadedRun) -> dict[str, Any]:
    """Who made this run: read from its manifest.json, completed from the profile."""
    manifest, profile = run.manifest, as_profile(run.profile)
    return {
        "source": str(run.source),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run_written_at": manifest.written_at,
        "git_commit": manifest.git_commit,
        "project_commit": thaw(manifest.extra.get("project_commit")),
        "board": profile.board or manifest.board,
        "model": profile.model or manifest.model,
        "delegate": manifest.delegate,
        "iterations": profile.iterations,
        "warmup_iterations": profile.warmup_iterations if "warmup_iterations" in profile else 0,
        "versions": thaw(manifest.versions),
        "firmware_sha256": manifest.firmware_sha256,
        "model_sha256": manifest.file_sha256("model.pte"),
        "time_base": baseline_time_base(run).key,
        **({"inherited": run.provenance} if run.provenance else {}),
    }


def baseline_time_base(run: LoadedRun) -> TimeBase:
    """What a baseline's (or any loaded run's) figures count: as its provenance recorded it when it was
    written, else derived from its profile and manifest (a baseline file written before time bases were
    kept has no manifest: only its profile's own keys tell, and may leave it unknown)."""
    recorded = run.provenance.get("time_base")
    if isinstance(recorded, str) and recorded:
        return TimeBase.parse(recorded)
    return time_base_of(run.profile, run.manifest)


def write_baseline(run: LoadedRun, destination: Path) -> Path:
    """Freeze `run` as the baseline of its model under `destination` (folder or .json file)."""
    profile = with_statistics(run.profile)
    target = baseline_path(destination, profile.series)
    writable_folder(target.parent, "--out")  # a path through a file (/etc/hostname/x.json): one line, exit 2
    try:
        atomic.write_json(target, {"schema": BASELINE_SCHEMA, "provenance": provenance_of(run), "profile": profile.to_json()})
    except OSError as exc:
        raise HilError(f"cannot write baseline {target}: {exc.strerror or exc}") from exc
    return target


def find_baseline(path: Path, model: str) -> LoadedRun | None:
    """The baseline of `model` under `path`, or None when there is none yet (a new model, or the first
    night before any baseline folder exists: the caller notes it and says how to write one)."""
    path = Path(path)
    if not path.exists():
        return None
    target = baseline_path(path, model)
    if not target.is_file():
        target = _written_before(path, model) or target
    if not target.is_file():
        return None
    return load_run(target)
