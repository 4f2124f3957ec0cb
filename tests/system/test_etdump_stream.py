"""The ETDump streamed over the console on the QEMU runtime board: 1000 runs of a small CNN, more than one
ETDump buffer holds, in one `hil run` (boards/qemu.toml: `etdump_transport = "auto"`); and the same count with
the gdb transport refused before any work. What is checked comes from elsewhere: ExecuTorch's Inspector
counting the runs of the merged ETDump, the firmware's own bound as its console printed it, the console's
inference-time lines. The frame decoder's faults are tests/unit/test_etdump_frames.py and test_etdump_stream.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIL = [sys.executable, "-m", "hil.cli.main"]
SMALL_CNN = f"{REPO / 'tests' / 'fixtures' / 'small_cnn.py'}:factory"
RUNS = 1000

from runtime_workspace import needs_runtime  # noqa: E402

pytestmark = needs_runtime


def hil_run(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*HIL, "run", "--model", SMALL_CNN, "--delegate", "none", "--iterations", str(RUNS),
                           "--out", str(out), *extra], cwd=REPO, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def streamed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stream") / "run"
    done = hil_run(out, "--board", "qemu")
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_a_thousand_runs_stream_in_batches_and_the_inspector_sees_every_one(streamed: Path) -> None:
    from executorch.devtools import Inspector
    from executorch.devtools.inspector import TimeScale

    manifest = json.loads((streamed / "manifest.json").read_text())
    console = (streamed / "serial.log").read_text(errors="replace")
    per_dump = int(re.search(r"HIL etdump stream: at most (\d+) runs per dump", console).group(1))
    assert manifest["etdump_transport"]["max_traced_runs"] == per_dump < RUNS  # the host's bound is the firmware's
    assert manifest["etdump_crc32"]["transport"] == "console"
    assert manifest["etdump_crc32"]["dump_runs"] == [per_dump] * (RUNS // per_dump) + [RUNS % per_dump]
    assert len(re.findall(r"Inference time: \d+ us", console)) == RUNS
    inspector = Inspector(etdump_path=str(streamed / "trace.etdump"), etrecord=str(streamed / "etrecord.bin"),
                          source_time_scale=TimeScale.CYCLES, target_time_scale=TimeScale.CYCLES)
    executes = [event for block in inspector.event_blocks for event in block.events if event.name == "Method::execute"]
    assert sum(len(event.perf_data.raw) for event in executes) == RUNS
    profile = json.loads((streamed / "profile.json").read_text())
    assert profile["iterations"] == RUNS


def test_the_gdb_transport_refuses_the_count_before_any_image_is_built(streamed: Path, tmp_path: Path) -> None:
    board = tmp_path / "qemu-gdb.toml"
    board.write_text('[board]\nname = "qemu-gdb"\nextends = "qemu"\n\n[debug]\netdump_transport = "gdb"\n')
    started = time.monotonic()
    done = hil_run(tmp_path / "run", "--board-config", str(board))
    elapsed = time.monotonic() - started
    per_dump = json.loads((streamed / "manifest.json").read_text())["etdump_transport"]["max_traced_runs"]
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{RUNS} runs (iterations + warm-up)" in done.stderr and f"at most {per_dump} runs" in done.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert "build_image" not in manifest["steps_s"] and not (tmp_path / "run" / "serial.log").exists()
    assert elapsed < 120
