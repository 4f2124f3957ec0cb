"""`--board rt700-emu`: the RT700 bench image, built by `hil rt700-image`, flashed and run on the emulated Cortex-M33
behind pyOCD's own `pyocd server` and `pyocd gdbserver`, by the RT700 board's own code.

The image is a small CNN's (tests/fixtures/small_cnn.py), built once for the module from the pinned workspace as
docs/lab-bench.md tells a user (RT700_EMU_IMAGE_DIR names a folder holding one already, to skip the build while
working on these tests). What the runs are checked against is computed here, not by the harness: ExecuTorch's own
runtime on the host for the outputs, ExecuTorch's Inspector and flatbuffer deserializer for the ETDump, zlib's
CRC-32, binutils' nm for addresses, and the emulator's own closing line for which breakpoints halted it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK_DIR = os.environ.get("RT700_SDK_DIR", "")
MODEL = "tests/fixtures/small_cnn.py:factory"
ITERATIONS = 3
RUN_TIMEOUT_S = 120  # the run takes seconds; a broken road fails in two minutes, not the board file's ten

pytestmark = pytest.mark.skipif(
    not SDK_DIR or not Path(SDK_DIR, "workspace.env").is_file(),
    reason="RT700_SDK_DIR does not name a workspace made by `hil sources`: no RT700 image can be built",
)


def _hil(*args: str, cwd: Path = REPO, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Path:
    """The folder `hil rt700-image` built: hil_rt700.elf, model.pte, etrecord.bin."""
    given = os.environ.get("RT700_EMU_IMAGE_DIR")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("rt700-emu") / "small_cnn"
    done = _hil("rt700-image", "--model", str(REPO / MODEL), "--delegate", "none", "--out", str(out), timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def run(image, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("rt700-emu-run") / "run"
    done = _hil("run", "--board", "rt700-emu", "--model", str(REPO / MODEL), "--delegate", "none", "--elf",
                str(image / "hil_rt700.elf"), "--iterations", str(ITERATIONS), "--timeout", str(RUN_TIMEOUT_S),
                "--out", str(out))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done, out


def _emulator_closing(out: Path) -> dict:
    lines = [line for line in (out / "emulator.log").read_text().splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def _nm(elf: Path, name: str) -> int:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, timeout=60).stdout
    return next(int(v, 16) for v, _k, n in (line.split() for line in out.splitlines() if len(line.split()) == 3)
                if n == name)


def test_outputs_equal_the_host_runtime_and_the_inspector_reads_the_etdump(run, image):
    import torch
    from executorch.devtools import Inspector
    from executorch.runtime import Runtime

    _, out = run
    sys.path.insert(0, str(REPO / "tests" / "fixtures"))
    try:
        import small_cnn
    finally:
        sys.path.pop(0)
    _module, inputs = small_cnn.factory()
    method = Runtime.get().load_program((out / "model.pte").read_bytes()).load_method("forward")
    expected = method.execute(list(inputs))
    got = torch.load(out / "outputs.pt")
    assert len(got) == len(expected)
    for target, host in zip(got, expected):
        torch.testing.assert_close(target, host, rtol=1e-5, atol=1e-6)
    inspector = Inspector(etdump_path=str(out / "trace.etdump"), etrecord=str(out / "etrecord.bin"))
    executes = [event for block in inspector.event_blocks for event in block.events
                if event.name == "Method::execute"]
    assert len(executes) == 1 and len(executes[0].perf_data.raw) == ITERATIONS


def test_the_table_and_profile_say_the_emulated_time_base_the_skips_and_no_npu(run):
    done, out = run
    header = done.stdout.splitlines()[0]
    assert "emulated Cortex-M33, no NPU; 1 us = 324 emulated instructions" in header
    assert "bring-up skipped: SystemInit, CLOCK_EnableClock, BOARD_BootClockHSRUN, neutronInit" in header
    profile = json.loads((out / "profile.json").read_text())
    assert profile["firmware"] == "rt700-emu" and profile["simulated"] is False
    assert profile["time_base"]["kind"] == "emulated RT700 instructions" and profile["time_base"]["npu"] == "none"
    assert profile["time_scale"] == {"ticks_per_us": 324.0, "neutron_ticks_per_us": 324.0, "follows_clock": False,
                                     "unit": "us"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["board_kind"] == "rt700-emu"


def test_times_are_the_dumps_instruction_counts_and_the_counter_reset_by_neutron_init_is_no_wrap(run):
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    _, out = run
    dump = deserialize_from_etdump_flatcc((out / "trace.etdump").read_bytes())
    events = [e.profile_event for r in dump.run_data for e in r.events if e.profile_event]
    # The emulated neutronInit sets CYCCNT to 0 after et_pal_init started it (as libNeutronFirmware.a does): a
    # false wrap of the PAL's 64-bit extension would put every timestamp above 2^32.
    assert all(e.start_time < 2**32 and e.end_time >= e.start_time for e in events)
    in_order = [e.end_time - e.start_time for e in events if e.name == "Method::execute"]
    raw = sorted(in_order)
    profile = json.loads((out / "profile.json").read_text())
    method = next(e for e in profile["events"] if e["name"] == "Method::execute")
    assert method["p50_us"] == pytest.approx(raw[len(raw) // 2] / 324.0, abs=1e-3)
    assert len(set(in_order[1:])) == 1  # after the first run (its one-time paths), the same count every run
    total = _emulator_closing(out)["instructions"]
    assert ITERATIONS * raw[0] < total  # an inference is a part of all the core executed


def test_flash_breakpoints_etdump_and_console_take_the_bench_road(run, image):
    _, out = run
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["flash"]["done"] == "programmed"  # the emulated flash starts blank
    closing = _emulator_closing(out)
    # Every halt was an FPB comparator: the XIP flash takes no BKPT (the emulator refuses one), as on silicon.
    assert closing["breakpoint_hits"]["bkpt"] == 0 and closing["breakpoint_hits"]["fpb"] >= 2
    assert closing["refused_flash_breakpoints"] == 0
    assert set(closing["skipped"]) == {"SystemInit", "CLOCK_EnableClock", "BOARD_BootClockHSRUN", "neutronInit"}
    console = (out / "serial.log").read_text(errors="replace")
    assert "et-hil profiling firmware (rt700)" in console and "Program complete, exiting." in console
    assert "Core/NPU Frequency: 64 MHz" in console  # the clock tree was skipped: the reset clock
    found = re.search(r"Result buf: 0x([0-9a-f]+), size: (\d+), crc32: 0x([0-9a-f]+)", console)
    assert found
    address, size, crc = int(found.group(1), 16), int(found.group(2)), int(found.group(3), 16)
    etdump = (out / "trace.etdump").read_bytes()
    assert len(etdump) == size and zlib.crc32(etdump) == crc
    assert 0x20000000 <= address and address + size <= 0x20780000  # in the RT700's SRAM
    stack = json.loads((out / "profile.json").read_text())["stack"]
    elf = image / "hil_rt700.elf"
    assert stack["size_bytes"] == _nm(elf, "__StackTop") - _nm(elf, "__StackLimit")
    assert 0 < stack["used_bytes"] < stack["size_bytes"]


def test_a_delegated_program_is_refused_before_anything_is_flashed(image, tmp_path):
    out = tmp_path / "npu"
    done = _hil("run", "--board", "rt700-emu", "--model", str(REPO / MODEL), "--delegate", "neutron-sim", "--elf",
                str(image / "hil_rt700.elf"), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert "neutron-sim" in done.stderr and "no NPU" in done.stderr
    assert not (out / "emulator.log").exists()


def test_native_and_python_counts_equal_a_per_instruction_oracle_over_a_whole_inference(image):
    """The small CNN's image from reset to hil_etdump_ready on the bare core: the native block hook, the Python block
    hook, and an oracle built on unicorn's UC_HOOK_CODE (counted here) agree exactly. unicorn 2.1.4 calls no code
    hook for an instruction whose IT condition failed (seen on `cmp r0,r0; it ne; movne r1,#1; nop`: hooks at
    +0, +2, +6 only), while the M33 executes it as a NOP: the oracle follows each IT instruction's mask and counts
    the covered instructions the hook never saw. It also sees each skipped bring-up function's first instruction
    (returned from before it ran) and the one the breakpoint stopped before; both are taken off. Measured when
    written: 2,379,841 for all."""
    from unicorn import UC_HOOK_CODE

    from hil.emu.block_count import thumb_starts
    from hil.emu.direct_run import load_core, run_to, symbol_address

    elf = image / "hil_rt700.elf"
    ready = symbol_address(elf, "hil_etdump_ready")
    counts = {}
    for counting in ("native", "python"):
        core = load_core(elf, counting)
        assert core.counter.native == (counting == "native")
        run_to(core, ready, RUN_TIMEOUT_S)
        counts[counting] = core.executed
    core = load_core(elf, "native")  # counted as well: the firmware reads CYCCNT, and its figures steer its path
    seen, failed, pending = [0], [0], []

    def count(uc, address, _size, _data):
        seen[0] += 1
        while pending and pending[0] != address:  # covered by an IT, not hooked: its condition failed
            failed[0] += 1
            pending.pop(0)
        if pending:
            pending.pop(0)
        half = int.from_bytes(uc.mem_read(address, 2), "little")
        if half & 0xFF00 == 0xBF00 and half & 0xF:  # IT: the mask's lowest set bit says how many follow (1-4)
            covered = 4 - ((half & 0xF) & -(half & 0xF)).bit_length() + 1
            pending[:] = thumb_starts(bytes(uc.mem_read(address + 2, 16)), address + 2)[:covered]

    core.uc.hook_add(UC_HOOK_CODE, count)
    run_to(core, ready, RUN_TIMEOUT_S)
    oracle = seen[0] + failed[0] - sum(core.skipped.values()) - 1
    assert counts["native"] == counts["python"] == core.executed == oracle > 1_000_000


def _registered_out_kernels(elf: Path) -> set[str]:
    """The `<ns>::<op>.out` kernel names the image's registration holds, read with binutils' strings."""
    text = subprocess.run(["arm-none-eabi-strings", "-n", "6", str(elf)], capture_output=True, text=True,
                          timeout=60).stdout
    return {line for line in text.splitlines() if re.fullmatch(r"(aten|quantized_decomposed|cortex_m)::\w+\.out", line)}


def test_the_image_registers_exactly_its_own_programs_kernels(image):
    """In the suite this image is linked in an RT700 build folder another program (cifar10) used first: the
    operator list must be this program's, not the first one's (ExecuTorch's list rule ignores the model file)."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary((image / "model.pte").read_bytes()).program
    wanted = {f"{op.name}.{op.overload}" for plan in program.execution_plan for op in plan.operators}
    assert _registered_out_kernels(image / "hil_rt700.elf") == {op for op in wanted if op.endswith(".out")}
