"""The new-project case on the real QEMU board (simulated Neutron delegate, int8 as NXP's flow makes it: the
simulated NPU takes no float operator): three nights of a small CNN,
then its convolution widened from 8 to 24 channels. The gate must fail naming an NPU kernel with those 3
history runs alone, no baseline folder given (where the rank test cannot reach alpha), and with a baseline
file alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from shared_firmware import cache_sharing_firmware

REPO = Path(__file__).resolve().parents[2]
# The widened convolution's NPU kernel among the slower events (the int8 program's quantize/dequantize around it
# grow too, and may be named first).
NPU_CONV = re.compile(r"call \d+ / kernel \d+: [a-z_, ]*convolution[a-z_, ]* in conv \(cnn\.py:\d+\)")
SUITE = '''
def test_cnn(hil_profile):
    hil_profile({model!r})
'''


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_cnn.py", "--board", "qemu",
         "--hil-artifacts", "art", "--hil-iterations", "10", "--hil-quantize", "--rootdir", str(cwd), *args],
        cwd=cwd, capture_output=True, text=True, timeout=900,
        env={**os.environ, "HIL_CACHE_DIR": str(cache_sharing_firmware(cwd / "cache")), "PYTHONPATH": str(REPO)})


def _widen(model: Path) -> None:
    text = model.read_text()
    assert "CHANNELS = 8\n" in text
    model.write_text(text.replace("CHANNELS = 8\n", "CHANNELS = 24\n"))


def test_a_widened_convolution_fails_the_gate_with_three_history_runs_and_with_a_baseline_file(tmp_path):
    history_project, file_project = tmp_path / "history", tmp_path / "file"
    for project in (history_project, file_project):
        project.mkdir()
        (project / "cnn.py").write_text((REPO / "tests" / "fixtures" / "small_cnn.py").read_text())
        (project / "test_cnn.py").write_text(SUITE.format(model=f"{project / 'cnn.py'}:factory"))

    db = history_project / "history.db"
    for night in range(3):
        done = _pytest(history_project, "--hil-history", str(db))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    _widen(history_project / "cnn.py")
    done = _pytest(history_project, "--hil-history", str(db))  # the history judges by itself
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert "performance regression" in done.stdout and "against the last 3 passed run(s) in history" in done.stdout
    assert NPU_CONV.search(done.stdout.partition("worst regressions")[2]), done.stdout[-4000:]

    done = _pytest(file_project, "--hil-baseline", "baselines/qemu", "--hil-baseline-update")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    _widen(file_project / "cnn.py")
    done = _pytest(file_project, "--hil-baseline", "baselines/qemu")
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    assert "performance regression" in done.stdout, done.stdout[-4000:]
    assert NPU_CONV.search(done.stdout.partition("worst regressions")[2]), done.stdout[-4000:]
