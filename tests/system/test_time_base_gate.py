"""Issue 27 end to end on the real QEMU board: three nights of a small CNN on the runtime image (emulated
instructions), a night without the firmware sources (the replay image: host nanoseconds), then its
convolution widened from 8 to 24 channels. The replay night is said not judged (terminal summary, JUnit)
and stays out of the runtime baseline; the wider convolution fails the suite with exit 1 naming it, judged
from the history alone (no --hil-baseline). The history rows are read with sqlite3, not the product."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from runtime_workspace import needs_runtime
from shared_firmware import cache_sharing_firmware

REPO = Path(__file__).resolve().parents[2]
SUITE = '''
def test_cnn(hil_profile):
    hil_profile({model!r}, delegate="none")
'''


def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_cnn.py", "--hil-artifacts", "art",
         "--hil-iterations", "5", "--rootdir", str(cwd), "--hil-history", str(cwd / "history.db"), *args],
        cwd=cwd, capture_output=True, text=True, timeout=900,
        env=env or {**os.environ, "HIL_CACHE_DIR": str(cache_sharing_firmware(cwd / "cache")), "PYTHONPATH": str(REPO)})


@needs_runtime
def test_a_run_without_sources_between_runtime_runs_is_not_compared_and_a_wider_conv_fails(tmp_path, qemu_board_file):
    (tmp_path / "cnn.py").write_text((REPO / "tests" / "fixtures" / "small_cnn.py").read_text())
    (tmp_path / "test_cnn.py").write_text(SUITE.format(model=f"{tmp_path / 'cnn.py'}:factory"))
    replay_board = qemu_board_file(**{'firmware = "auto"': 'firmware = "replay"'})  # a run without the sources

    for night in range(3):
        done = _pytest(tmp_path, "--board", "qemu")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "hil: runs not judged" in done.stdout and "holds 2 of the 3 passed runs" in done.stdout

    # The board file leaves the choice to `auto`, the sources are gone (an empty workspace folder, no mirror):
    # the runtime series' next run fails naming the missing part, never falling back to the replay image.
    (tmp_path / "no-sources").mkdir()
    sourceless = {**os.environ, "HIL_CACHE_DIR": str(cache_sharing_firmware(tmp_path / "cache")), "PYTHONPATH": str(REPO),
                  "RT700_SDK_DIR": str(tmp_path / "no-sources")}
    sourceless.pop("HIL_GIT_BASE", None)
    refused = _pytest(tmp_path, "--board", "qemu", env=sourceless)
    # exit 6: the only failure is a part this machine lacks (the sources), not a regression (docs/pytest.md)
    assert refused.returncode == 6, refused.stdout[-3000:] + refused.stderr[-2000:]
    assert "requires the runtime image" in refused.stdout and "history.db measured cnn on qemu" in refused.stdout, \
        refused.stdout[-3000:]
    assert str(tmp_path / "no-sources") in refused.stdout and "replays" not in refused.stdout

    replayed = _pytest(tmp_path, "--hil-board-config", str(replay_board), "--junitxml=replay.xml")
    assert replayed.returncode == 0, replayed.stdout[-3000:] + replayed.stderr[-2000:]
    assert "(replay-host-ns): not judged" in replayed.stdout, replayed.stdout[-3000:]
    assert "left out, another time base: 3 of runtime-instructions/shift=2" in replayed.stdout
    assert "improvement" not in replayed.stdout  # never compared with the instruction counts
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "replay.xml").getroot().iter("property")}
    test_id = "@test_cnn.py::test_cnn"
    assert props[f"hil.cnn.judged{test_id}"] == "false" and props[f"hil.cnn.not_judged{test_id}"] == "too-few-runs"
    assert props[f"hil.cnn.time_base{test_id}"] == "replay-host-ns"

    model = tmp_path / "cnn.py"
    model.write_text(model.read_text().replace("CHANNELS = 8\n", "CHANNELS = 24\n"))
    wider = _pytest(tmp_path, "--board", "qemu")
    assert wider.returncode == 1, wider.stdout[-4000:] + wider.stderr[-2000:]
    assert "performance regression: cnn against the last 3 passed run(s) in history" in wider.stdout
    table = wider.stdout.split("worst regressions")[1].splitlines()
    assert "native_call_convolution.out" in table[3] and "aten.convolution.default" in table[3], wider.stdout[-4000:]

    conn = sqlite3.connect(tmp_path / "history.db")
    try:
        rows = conn.execute("SELECT id, model, time_base, passed, comparison FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()
    assert [(r[1], r[2], r[3]) for r in rows] == [("cnn", "runtime-instructions/shift=2", 1)] * 3 + [
        ("cnn", "unknown", 0), ("cnn", "replay-host-ns", 1), ("cnn", "runtime-instructions/shift=2", 0)]
    assert json.loads(rows[5][4])["baseline_run_ids"] == [1, 2, 3]  # the passed replay (row 5) is not among them
