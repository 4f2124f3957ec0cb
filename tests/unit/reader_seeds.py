"""Run folders and a history database to damage: what the reader tests start each example from.

Two run folders as `hil run` leaves them (trace.etdump, etrecord.bin, model.pte, serial.log,
profile.json, manifest.json with every file's sha256 computed here with hashlib): `cpu`, the analysis
tests' CPU-only program run by the host runtime (nanoseconds), and `npu`, their program lowered to the
simulated Neutron backend with a synthesized dump (ticks; delegate calls, NPU kernels, a profiling dump).
The history holds three nights of both and one failed run. Made once per test session.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

SERIAL_LOG = "Core/NPU Frequency: 324 MHz\r\n     Inference time: 7 us\r\nProgram complete, exiting.\r\n"


def listing(folder: Path) -> dict[str, dict[str, object]]:
    """sha256 and size of every file in `folder` but the manifest."""
    return {p.name: {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), "size": p.stat().st_size}
            for p in sorted(folder.iterdir()) if p.is_file() and p.name != "manifest.json"}


def _folder(root: Path, name: str, art: Path, stem: str, dump: bytes, time_scale: dict, delegate: str) -> Path:
    from hil.cli.inspect_cmd import inspect_run

    folder = root / name
    folder.mkdir(parents=True)
    (folder / "trace.etdump").write_bytes(dump)
    shutil.copyfile(art / f"{stem}.etrecord", folder / "etrecord.bin")
    shutil.copyfile(art / f"{stem}.pte", folder / "model.pte")
    (folder / "serial.log").write_text(SERIAL_LOG)
    manifest = {"schema": "et-hil/manifest/1", "written_at": "2026-01-01T00:00:00Z", "board": "qemu", "model": stem,
                "model_name": stem, "delegate": delegate, "iterations": 3, "warmup": 0, "status": "passed",
                "time_scale": time_scale, "firmware_kind": "replay", "files": listing(folder)}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    profile = {**inspect_run(folder).to_json(), "firmware": "replay"}  # the profile `hil run` would write, its image
    (folder / "profile.json").write_text(json.dumps(profile))  # named: each seed's time base is known
    manifest["files"] = listing(folder)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def make_seeds(root: Path) -> dict[str, Path]:
    """Folders `cpu` and `npu` and the history `history.db` under `root`."""
    import test_analysis
    from programs import cached_folder

    from hil.analysis.timescale import TimeScale
    from hil.replay.neutron_etdump import synthesize_neutron_etdump

    art = cached_folder("analysis", test_analysis.__file__, test_analysis._build)
    dump, _ = synthesize_neutron_etdump(art / "npu.pte", art / "npu.etrecord", iterations=3, clock_mhz=324,
                                        npu_clock_mhz=250, seed=0, jitter=0.05)
    seeds = {
        "cpu": _folder(root, "cpu", art, "tiny", (art / "tiny.etdump").read_bytes(), TimeScale.nanoseconds().to_dict(),
                       "none"),
        "npu": _folder(root, "npu", art, "npu", dump, TimeScale.core_cycles(324, 250).to_dict(), "neutron-sim"),
    }
    seeds["history.db"] = _history(root / "history.db", seeds)
    return seeds


def _history(db: Path, folders: dict[str, Path]) -> Path:
    import sqlite3

    from hil.regress import history
    from hil.regress.compare import compare_profiles, comparison_to_dict

    for night in range(3):
        for name, folder in folders.items():
            profile = json.loads((folder / "profile.json").read_text())
            stored = {**comparison_to_dict(compare_profiles(profile, profile)), "baseline": "baselines/x.json",
                      "decision": {"status": "pass", "reason": "pass: no regression", "failed": False}}
            history.record_run(db, profile, {"written_at": f"2026-01-0{night + 1}T02:00:00Z", "git_commit": "c0ffee"},
                               passed=True, comparison=stored if night else None)
    history.record_run(db, {"board": "qemu", "model": "npu", "events": []}, {"written_at": "2026-01-04T02:00:00Z"},
                       passed=False)
    conn = sqlite3.connect(db, isolation_level=None)  # one file, no -wal beside it: each example copies one file
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return db
