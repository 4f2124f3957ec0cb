"""`--board rt700-emu` without an image of the user's: the harness builds the run's RT700 image itself
(hil.firmware.rt700_runtime), and `hil rt700-image` gives the very bytes the run flashed.

What the run is checked against is computed here: hashlib's sha256 of the ELF the run names and of the one
`hil rt700-image` wrote, and the manifest's own words for which image ran (never the user's).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK_DIR = os.environ.get("RT700_SDK_DIR", "")
MODEL = "tests/fixtures/small_cnn.py:factory"
BUILD_TIMEOUT_S = 3600  # the first image of a workspace compiles the runtime (17 minutes at load 10 on two cores)

pytestmark = pytest.mark.skipif(
    not SDK_DIR or not Path(SDK_DIR, "workspace.env").is_file(),
    reason="RT700_SDK_DIR does not name a workspace made by `hil sources`: no RT700 image can be built",
)


def _hil(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=BUILD_TIMEOUT_S, check=False)


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_run_without_an_image_flashes_the_one_the_harness_built_and_rt700_image_gives_the_same_bytes(tmp_path):
    out = tmp_path / "run"
    done = _hil("run", "--board", "rt700-emu", "--model", str(REPO / MODEL), "--delegate", "none", "--iterations",
                "2", "--timeout", "120", "--out", str(out))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    flashed = Path(manifest["firmware"])
    assert manifest["firmware_kind"] == "harness"  # built on demand: not labelled as the user's image
    assert manifest["firmware_sha256"] == _sha256(flashed)
    assert "rt700-runtime" in flashed.parts  # from the runtime cache, not a board file's path
    built = _hil("rt700-image", "--model", str(REPO / MODEL), "--delegate", "none", "--out", str(tmp_path / "img"))
    assert built.returncode == 0, built.stderr[-3000:]
    assert _sha256(tmp_path / "img" / "hil_rt700.elf") == manifest["firmware_sha256"]
    # The same program again: served from the image cache, so the run names the same file.
    again = _hil("run", "--board", "rt700-emu", "--model", str(REPO / MODEL), "--delegate", "none", "--iterations",
                 "1", "--timeout", "120", "--out", str(tmp_path / "again"))
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-3000:]
    assert json.loads((tmp_path / "again" / "manifest.json").read_text())["firmware"] == str(flashed)
