"""`hil run --iterations N [--warmup W]` runs exactly that many inferences through the run-configuration handshake.

Real CLI, real QEMU and gdb: the count reaches the target by the debugger's writes to
`hil_run_config` (seen in mi.log), the firmware echoes it on the console, and the profile holds
one time per measured inference for every event.
"""

from __future__ import annotations

import json
import re
import time

import pytest


def writes(mi_log: str) -> list[tuple[str, int]]:
    """The debugger's assignments to hil_run_config, in the order it made them."""
    return [(field, int(value)) for field, value in
            re.findall(r'-data-evaluate-expression "hil_run_config\.(\w+) = (\d+)"', mi_log)]


@pytest.mark.parametrize(("iterations", "warmup"), [(7, 0), (3, 2)], ids=["7-iterations", "3-iterations-2-warmup"])
def test_the_run_asks_the_target_for_exactly_its_count(run_cli, tmp_path, iterations: int, warmup: int) -> None:
    out = tmp_path / "run"
    done = run_cli("run", "--board", "qemu", "--model", "cifar10", "--out", str(out),
                   "--iterations", str(iterations), "--warmup", str(warmup))
    assert done.returncode == 0, done.stderr

    assert writes((out / "mi.log").read_text()) == [
        ("iterations", iterations), ("warmup", warmup), ("magic", 0x314C4948),  # magic last
    ]
    console = (out / "serial.log").read_bytes().decode()
    assert f"Run config: iterations {iterations}, warm-up {warmup} (set by the debugger)\r\n" in console
    assert len(re.findall(r"Inference time: \d+ us", console)) == iterations + warmup  # every run on the target

    profile = json.loads((out / "profile.json").read_text())
    assert profile["iterations"] == iterations
    assert profile.get("warmup_iterations", 0) == warmup
    assert profile["events"] and all(len(event["times_us"]) == iterations for event in profile["events"])
    assert profile["console"]["run_config"] == {"iterations": iterations, "warmup": warmup, "source": "debugger"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["iterations"], manifest["warmup"], manifest["status"]) == (iterations, warmup, "passed")


def test_a_count_the_image_cannot_hold_is_refused_before_anything_is_written(run_cli, tmp_path) -> None:
    """Above the board's [limits].max_runs (the firmware's HIL_MAX_RUNS, 1000) nothing runs at all.

    The handshake's own refusal, for an image whose max_runs is below the plan, is tested in
    tests/unit/test_qemu_board.py."""
    out = tmp_path / "run"
    start = time.monotonic()
    done = run_cli("run", "--board", "qemu", "--model", "cifar10", "--out", str(out),
                   "--iterations", "999", "--warmup", "2", "--timeout", "60")
    assert time.monotonic() - start < 30
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "hil run: iterations 999 + warm-up 2 = 1001 runs: more than the 1000 board 'qemu' allows"
        " (limits.max_runs, the firmware's HIL_MAX_RUNS)")
    assert "Traceback" not in done.stderr
    assert not (out / "mi.log").exists() and not (out / "model.pte").exists()  # nothing was exported or run
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "1001 runs" in manifest["error"]
