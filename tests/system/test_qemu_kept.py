"""One QEMU per image and pytest session (hil.boards.qemu_keep), the plugin's default: three tests of one image
start QEMU once, a changed image starts a new one, the kept QEMU ends with the session, and a run on the kept QEMU
(its core reset, no new process) profiles exactly what a fresh QEMU does (the runtime image counts instructions:
exact figures). `--hil-no-keep-qemu` starts one QEMU per run.

QEMU starts are counted from what each start leaves: one log per process in the session's kept-qemu folder,
and the line `$ qemu-system-arm ...` opening the part of it in the run folder of the run that started it (each
run folder's qemu.log is what QEMU wrote during that run); the manifests' `flash` sections must say the same.
No file of a run folder changes after its run: each folder is read when its test ends (the suite's own fixture
records it) and again after the session. The kept QEMU ends with the session itself, not with the interpreter's
atexit safety net: the child session's conftest lists its QEMU children from /proc once the session is over.
"""

from __future__ import annotations

import hashlib
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
import hashlib
import json
import pytest

@pytest.mark.parametrize("model", [{a!r}, {a!r}, {a!r}, {b!r}])
def test_tiny(model, hil_profile):
    run = hil_profile(model, iterations=2, delegate="none")
    assert run.profile["totals_us"]["method_execute"] > 0
    files = {{p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in run.out_dir.iterdir() if p.is_file()}}
    (run.out_dir.parent / "at-its-end.json").write_text(json.dumps(files))
'''
# Once the session is over (its fixtures torn down, the keeper's among them): the QEMU children still alive.
CONFTEST = '''
import json
from pathlib import Path

from hil.target.process import os_children

def pytest_sessionfinish(session):
    qemus = [pid for pid, name in os_children() if name.startswith("qemu")]
    Path(session.config.getoption("hil_artifacts"), "qemu-at-session-end.json").write_text(json.dumps(qemus))
'''


def _session(tmp_path: Path, name: str, *extra: str) -> tuple[list[Path], str]:
    """Run the suite in a child pytest; the run folders in test order, and what it printed (`-v`: the step lines)."""
    tag = f"kept-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "test_kept.py", "--board", "qemu",
         "--hil-firmware", "runtime", "--hil-artifacts", name, "--rootdir", str(tmp_path), *extra],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(REPO), "HIL_SESSION_TAG": tag})
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]
    assert json.loads((tmp_path / name / "qemu-at-session-end.json").read_text()) == []  # ended by the session
    assert left_after(tag) == []  # the kept QEMU (and every gdb) ended with the session
    folders = sorted((p.parent for p in (tmp_path / name).rglob("manifest.json")), key=lambda p: p.parent.name)
    for folder in folders:  # not one file of a run folder changed once its run was over
        now = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}
        assert now == json.loads((folder.parent / "at-its-end.json").read_text()), folder
    return folders, done.stdout


def _started_qemu(folder: Path) -> bool:
    """Whether the run in `folder` started QEMU: its part of QEMU's log opens with the command line."""
    return (folder / "qemu.log").read_text().startswith("$ qemu-system-arm ")


def _events(folder: Path) -> list[tuple[str, float]]:
    profile = json.loads((folder / "profile.json").read_text())
    return [(e["name"], e["p50_us"]) for e in profile["events"]]


def test_one_qemu_per_image_and_session_and_the_kept_one_profiles_as_a_fresh_one(tmp_path):
    (tmp_path / "a.py").write_text(linear_relu_source(inputs=12, outputs=6, seed=5, name="A"))
    (tmp_path / "b.py").write_text(linear_relu_source(inputs=14, outputs=6, seed=6, name="B"))
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_kept.py").write_text(SUITE.format(a=f"{tmp_path / 'a.py'}:factory",
                                                        b=f"{tmp_path / 'b.py'}:factory"))
    kept, said = _session(tmp_path, "kept")
    assert len(kept) == 4
    assert said.count("[hil] flash skipped: QEMU (pid ") == 2, said[-4000:]  # the progress line says so, and why
    assert [_started_qemu(folder) for folder in kept] == [True, False, False, True]  # a once; b (changed) its own
    (logs,) = (tmp_path / "kept" / "kept-qemu").iterdir()  # the session's folder: one log per QEMU it started
    assert sorted(p.name for p in logs.glob("qemu-*.log")) == ["qemu-1.log", "qemu-2.log"]
    flash = [json.loads((folder / "manifest.json").read_text())["flash"] for folder in kept]
    assert [f["done"] for f in flash] == ["downloaded", "skipped", "skipped", "downloaded"], flash
    assert [Path(f["qemu_log"]).resolve() for f in flash] == [(logs / f"qemu-{n}.log").resolve() for n in (1, 1, 1, 2)]
    assert "holds sha256" in flash[1]["why"] and f"{logs.name}/qemu-1.log)" in flash[2]["why"]
    whole = (logs / "qemu-1.log").read_bytes()  # the three runs' parts, one after another
    assert whole.startswith(b"".join((folder / "qemu.log").read_bytes() for folder in kept[:3]))
    for folder in kept:  # each run's console is its own, from the banner of its own boot to the image's end
        console = (folder / "serial.log").read_text()
        assert console.startswith("et-hil profiling firmware") and console.count("Program complete, exiting.") == 1

    fresh, said = _session(tmp_path, "fresh", "--hil-no-keep-qemu")
    assert "flash skipped" not in said
    assert all(_started_qemu(folder) for folder in fresh) and not (tmp_path / "fresh" / "kept-qemu").exists()
    assert {json.loads((f / "manifest.json").read_text())["flash"]["why"] for f in fresh} == {
        "a new QEMU (no session keeps one)"}  # keeping off: a new QEMU for every run
    # Exact instruction counts: the reset core runs the program as a fresh QEMU does, run for run.
    assert [_events(f) for f in kept] == [_events(f) for f in fresh]
    assert _events(kept[0])[0][0] == "Method::execute"
