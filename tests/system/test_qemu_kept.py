"""One QEMU per image and pytest session (hil.boards.qemu_keep): three tests of one image start QEMU once, a
changed image starts a new one, the kept QEMU ends with the session, and a run on the kept QEMU (its core reset,
no new process) profiles exactly what a fresh QEMU does (the runtime image counts instructions: exact figures).

QEMU starts are counted from what each start leaves: its own qemu.log, in the run folder of the run that
started it; the manifests' `flash` sections must say the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from orphans import left_after
from tiny_models import linear_relu_source

REPO = Path(__file__).resolve().parents[2]
SUITE = '''
import pytest

@pytest.mark.parametrize("model", [{a!r}, {a!r}, {a!r}, {b!r}])
def test_tiny(model, hil_profile):
    run = hil_profile(model, iterations=2, delegate="none")
    assert run.profile["totals_us"]["method_execute"] > 0
'''


def _session(tmp_path: Path, name: str, *extra: str) -> tuple[list[Path], str]:
    """Run the suite in a child pytest; the run folders in test order, and what it printed (`-v`: the step lines)."""
    tag = f"kept-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_kept.py", "--board", "qemu",
         "--hil-firmware", "runtime", "--hil-artifacts", name, "--rootdir", str(tmp_path), "--hil-keep-qemu", *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(REPO), "HIL_SESSION_TAG": tag})
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]
    assert left_after(tag) == []  # the kept QEMU (and every gdb) ended with the session
    return sorted((p.parent for p in (tmp_path / name).rglob("manifest.json")), key=lambda p: p.parent.name), done.stdout


def _events(folder: Path) -> list[tuple[str, float]]:
    profile = json.loads((folder / "profile.json").read_text())
    return [(e["name"], e["p50_us"]) for e in profile["events"]]


def test_one_qemu_per_image_and_session_and_the_kept_one_profiles_as_a_fresh_one(tmp_path):
    (tmp_path / "a.py").write_text(linear_relu_source(inputs=12, outputs=6, seed=5, name="A"))
    (tmp_path / "b.py").write_text(linear_relu_source(inputs=14, outputs=6, seed=6, name="B"))
    (tmp_path / "test_kept.py").write_text(SUITE.format(a=f"{tmp_path / 'a.py'}:factory",
                                                        b=f"{tmp_path / 'b.py'}:factory"))
    kept, said = _session(tmp_path, "kept")
    assert len(kept) == 4
    assert said.count("[hil] flash skipped: QEMU (pid ") == 2, said[-4000:]  # the progress line says so, and why
    started = [(folder / "qemu.log").is_file() for folder in kept]
    assert started == [True, False, False, True]  # image a once for three tests; image b (changed) its own
    flash = [json.loads((folder / "manifest.json").read_text())["flash"] for folder in kept]
    assert [f["done"] for f in flash] == ["downloaded", "skipped", "skipped", "downloaded"], flash
    assert "holds sha256" in flash[1]["why"] and f"{kept[0].name}/qemu.log)" in flash[2]["why"]
    for folder in kept:  # each run's console is its own, from the banner of its own boot to the image's end
        console = (folder / "serial.log").read_text()
        assert console.startswith("et-hil profiling firmware") and console.count("Program complete, exiting.") == 1

    fresh, said = _session(tmp_path, "fresh", "--hil-force-flash")
    assert "flash skipped" not in said
    assert all((folder / "qemu.log").is_file() for folder in fresh)  # forced: a new QEMU for every run
    assert {json.loads((f / "manifest.json").read_text())["flash"]["why"] for f in fresh} == {"forced (--force-flash)"}
    # Exact instruction counts: the reset core runs the program as a fresh QEMU does, run for run.
    assert [_events(f) for f in kept] == [_events(f) for f in fresh]
    assert _events(kept[0])[0][0] == "Method::execute"
