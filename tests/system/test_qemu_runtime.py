"""The QEMU board running the real firmware: ExecuTorch's runtime on the emulated Cortex-M33.

Each run is `hil run --board qemu --delegate none` as a user types it; what is checked comes from
elsewhere: the host runtime's own ETDump of the same .pte read by the bare Inspector, ExecuTorch's
flatbuffer deserializer, zlib's CRC-32, hashlib, and binutils' nm on the image.

The runtime image is built from the pinned source workspace (`make rt700-sdk`); `make test` assembles it
(CI from its lab mirror, HIL_GIT_BASE) and names it in RT700_SDK_DIR. Without one these tests skip and
say so.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIL = [sys.executable, "-m", "hil.cli.main"]

from runtime_workspace import SDK_DIR, needs_runtime  # noqa: E402,F401
pytestmark = needs_runtime
SMALL_CNN = f"{REPO / 'tests' / 'fixtures' / 'small_cnn.py'}:factory"
ITERATIONS = 3

CONV_MODEL = """
import torch

class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.conv = torch.nn.Conv2d(4, {channels}, kernel_size=3, padding=1)

    def forward(self, x):
        return self.conv(x)

def factory():
    return Conv().eval(), (torch.randn(1, 4, 16, 16),)
"""


def hil_run(out: Path, model: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([*HIL, "run", "--board", "qemu", "--model", model, "--delegate", "none",
                           "--iterations", str(ITERATIONS), "--out", str(out), *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=900)


def _ran(out: Path, model: str) -> Path:
    done = hil_run(out, model)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="module")
def two_boots(tmp_path_factory) -> tuple[Path, Path]:
    """The small CNN run twice, each in its own QEMU (one image: the second build is a cache hit)."""
    root = tmp_path_factory.mktemp("runtime")
    return _ran(root / "a", SMALL_CNN), _ran(root / "b", SMALL_CNN)


def _inspector_events(etdump: Path, etrecord: Path) -> list[tuple[str, tuple[str, ...], int]]:
    """Events of the Execute block, in order: (name, op types, runs it was seen in), read by ExecuTorch's
    Inspector itself (which folds the runs of one method into one block, a time per run)."""
    from executorch.devtools import Inspector
    from executorch.devtools.inspector import TimeScale

    inspector = Inspector(etdump_path=str(etdump), etrecord=str(etrecord),
                          source_time_scale=TimeScale.CYCLES, target_time_scale=TimeScale.CYCLES)
    (block,) = [block for block in inspector.event_blocks if block.name.startswith("Execute")]
    return [(e.name, tuple(e.op_types or ()), len(e.perf_data.raw)) for e in block.events]


def _host_etdump(pte: Path, out: Path, runs: int) -> Path:
    """The host runtime's ETDump of `pte`, `runs` inferences on the model's example input."""
    import torch

    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    program = pte.read_bytes()  # kept alive: the binding does not copy it
    module = _load_for_executorch_from_buffer(program, enable_etdump=True)
    for _ in range(runs):
        module.forward((torch.randn(1, 1, 8, 8),))
    path = out / "host.etdump"
    module.write_etdump_result_to_file(str(path))
    return path


def _durations(etdump: Path) -> list[list[tuple[str, int, int]]]:
    """Per Execute run: (name, start, end) of each profile event, from ExecuTorch's deserializer."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    data = etdump.read_bytes()
    dump = deserialize_from_etdump_flatcc(data)
    return [[(e.profile_event.name, e.profile_event.start_time, e.profile_event.end_time)
             for e in run.events or [] if e.profile_event is not None]
            for run in dump.run_data if run.name == "Execute"]


def test_the_target_traces_the_events_the_host_runtime_traces(two_boots, tmp_path) -> None:
    run = two_boots[0]
    target = _inspector_events(run / "trace.etdump", run / "etrecord.bin")
    host = _inspector_events(_host_etdump(run / "model.pte", tmp_path, ITERATIONS), run / "etrecord.bin")
    assert target == host
    assert {runs for _, _, runs in target} == {ITERATIONS}
    assert any(name.startswith("native_call_convolution") for name, _, _ in target)


def test_the_profile_says_what_ran_and_what_the_numbers_are(two_boots) -> None:
    profile = json.loads((two_boots[0] / "profile.json").read_text())
    assert profile["firmware"] == "runtime" and profile["simulated"] is False
    assert profile["time_base"]["kind"] == "emulated instructions"
    assert profile["time_base"]["icount_shift"] == 2 and profile["time_base"]["instructions_per_us"] == 250
    # The runtime image's PAL counts mps2-an505's 20 MHz FPGAIO counter, and its console says so.
    assert profile["time_scale"]["ticks_per_us"] == 20.0
    assert "Core/NPU Frequency: 20 MHz" in (two_boots[0] / "serial.log").read_text()
    # Memory as the target used it: the ETDump buffer line names the dumped bytes, of the 512 KiB buffer.
    etdump = profile["memory"]["allocators"]["etdump_buffer"]
    assert etdump["total"] == 512 * 1024 and etdump["used"] == len((two_boots[0] / "trace.etdump").read_bytes())
    assert 0 < profile["memory"]["allocators"]["method_allocator"]["used"] <= 512 * 1024


def test_hil_inspect_of_the_run_folder_gives_the_runs_profile(two_boots) -> None:
    run = two_boots[0]
    done = subprocess.run([*HIL, "inspect", str(run), "--json"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    original = json.loads((run / "profile.json").read_text())
    original.pop("harness_steps_s")  # how long the harness took: no file holds it
    assert json.loads(done.stdout) == original


def test_two_boots_trace_identical_ticks(two_boots) -> None:
    first, second = (_durations(run / "trace.etdump") for run in two_boots)
    assert first == second and len(first) == ITERATIONS
    assert all(end > start for run in first for name, start, end in run if name == "Method::execute")
    digests = {hashlib.sha256((run / "trace.etdump").read_bytes()).hexdigest() for run in two_boots}
    assert len(digests) == 1


def test_every_iteration_computes_on_the_same_inputs(two_boots) -> None:
    """relu and max pooling branch on their data: a run computing on what the previous one left in a reused
    input buffer takes another instruction count. Within a boot each kernel's ticks differ only by the
    counter's phase (a tick is 12.5 instructions)."""
    runs = _durations(two_boots[0] / "trace.etdump")
    kernels = [[end - start for name, start, end in run if name.startswith("native_call_")] for run in runs]
    assert len({len(k) for k in kernels}) == 1 and kernels[0]
    for position, ticks in enumerate(zip(*kernels)):
        assert max(ticks) - min(ticks) <= 1, (position, ticks)


def test_the_printed_crc_is_zlibs_crc_of_the_dumped_bytes(two_boots) -> None:
    run = two_boots[0]
    printed = re.search(r"Result buf: 0x[0-9a-f]+, size: (\d+), crc32: 0x([0-9a-f]+)", (run / "serial.log").read_text())
    assert printed is not None
    data = (run / "trace.etdump").read_bytes()
    assert int(printed.group(1)) == len(data)
    assert int(printed.group(2), 16) == zlib.crc32(data)


def test_the_image_registers_only_the_programs_operators(two_boots) -> None:
    from executorch.exir._serialize._program import deserialize_pte_binary

    run = two_boots[0]
    elf = json.loads((run / "manifest.json").read_text())["firmware"]
    program = deserialize_pte_binary((run / "model.pte").read_bytes()).program
    wanted = {f"{op.name.split('::')[-1]}_out" for plan in program.execution_plan for op in plan.operators}
    nm = subprocess.run(["arm-none-eabi-nm", "-C", "--defined-only", elf], capture_output=True, text=True,
                        timeout=60, check=True).stdout
    kernels = set(re.findall(r"torch::executor::native::(\w+_out)\(", nm))
    assert kernels == wanted


def test_twice_the_output_channels_cost_about_twice_the_ticks(tmp_path) -> None:
    ticks = {}
    for channels in (8, 16):
        model = tmp_path / f"conv{channels}.py"
        model.write_text(CONV_MODEL.format(channels=channels))
        run = _ran(tmp_path / f"run{channels}", f"{model}:factory")
        runs = _durations(run / "trace.etdump")
        ticks[channels] = [end - start for name, start, end in runs[-1] if name.startswith("native_call_convolution")][0]
    assert 1.8 <= ticks[16] / ticks[8] <= 2.2, ticks


UNARY_MODEL = """
import torch

class Unary(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) + torch.exp(-x * x)

def factory():
    torch.manual_seed(5)
    return Unary().eval(), (torch.randn(1, 16),)
"""


def test_kernels_defined_through_pattern_macros_run_on_the_target_as_on_the_host(tmp_path) -> None:
    """tanh and exp are two of the 25 portable kernels defined by a DEFINE_UNARY_UFUNC_* macro of
    pattern.h (op_tanh.cpp, op_exp.cpp); their image used to fail with "no portable kernel"."""
    import torch
    from executorch.runtime import Runtime

    model = tmp_path / "unary.py"
    model.write_text(UNARY_MODEL)
    run = _ran(tmp_path / "run", f"{model}:factory")
    namespace: dict = {}
    exec(UNARY_MODEL, namespace)  # the model file's own inputs, made again here
    _, inputs = namespace["factory"]()
    data = (run / "model.pte").read_bytes()  # kept alive: the binding does not copy it
    host = Runtime.get().load_program(data).load_method("forward").execute(list(inputs))
    target = torch.load(run / "outputs.pt")
    assert len(target) == len(host) == 1 and target[0].shape == host[0].shape
    # The same portable kernels; newlib's tanhf/expf against the host's libm may differ in the last bits.
    assert torch.allclose(target[0], host[0], rtol=1e-5, atol=1e-6), (target[0], host[0])
    assert len(set(host[0].flatten().tolist())) > 8  # computed values, not a fill byte


GATE_MODEL = """
import torch

class Gate(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * torch.abs(x + {offset!r})

def factory():
    torch.manual_seed(9)
    return Gate().eval(), (torch.randn(1, 32),)
"""


def _ninja_entries(log: Path) -> dict[str, tuple[str, str]]:
    """Target -> (mtime, command hash) from Ninja's log (v5: start, end, mtime, target, hash; tab-separated). Ninja
    rewrites the file now and then, so what a build compiled is what changed between two reads, not new lines."""
    entries = {}
    for line in log.read_text().splitlines():
        fields = line.split("\t")
        if not line.startswith("#") and len(fields) == 5:
            entries[fields[3]] = (fields[2], fields[4])
    return entries


def test_a_new_programs_image_compiles_its_registration_and_links_the_prebuilt_kernels(two_boots, tmp_path) -> None:
    """The runtime folder holds every portable kernel in ExecuTorch's portable_kernels library; an image of an op
    set (sigmoid, abs, add, mul) compiles no kernel file: Ninja's own log of the build says what it compiled, the
    build file what the ELF was linked from, and nm that the image still holds only the program's kernels."""
    runtime = Path(json.loads((two_boots[0] / "manifest.json").read_text())["firmware"]).parents[2]
    ninja_log = runtime / "build" / ".ninja_log"
    before = _ninja_entries(ninja_log)
    model = tmp_path / "gate.py"
    # A program no earlier run of this cache holds (the offset is a constant of the .pte): its image is built here.
    model.write_text(GATE_MODEL.format(offset=time.time_ns() % 10**9 / 10**9))
    run = _ran(tmp_path / "run", f"{model}:factory")
    elf = json.loads((run / "manifest.json").read_text())["firmware"]
    assert Path(elf).parents[2] == runtime
    built = sorted(target for target, stamp in _ninja_entries(ninja_log).items() if before.get(target) != stamp)
    assert any("RegisterCodegenUnboxedKernelsEverything" in target for target in built), built  # this image's build
    assert not [target for target in built if "/kernels/portable/cpu/op_" in target], built
    link = re.search(r"^build hil_qemu_runtime\.elf:.*?\n(?:  .*\n)*", (runtime / "build" / "build.ninja").read_text(),
                     re.MULTILINE)
    assert link is not None and "libportable_kernels.a" in link.group(0) and "hil_model_kernels" not in link.group(0)
    nm = subprocess.run(["arm-none-eabi-nm", "-C", "--defined-only", elf], capture_output=True, text=True,
                        timeout=60, check=True).stdout
    assert set(re.findall(r"torch::executor::native::(\w+_out)\(", nm)) == {"sigmoid_out", "abs_out", "add_out", "mul_out"}


def test_a_simulated_neutron_program_runs_on_the_target_with_the_simulations_kernel_times(tmp_path) -> None:
    """int8 cifar10 lowered to the simulated Neutron backend: the image's NeutronSimBackend posts each call's
    kernels; their durations in the dumped bytes equal simulation.json's (the Python port of
    NeutronBackend.cpp's rule over the same records), every iteration alike."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    run = tmp_path / "sim"
    done = subprocess.run([*HIL, "run", "--board", "qemu", "--model", "cifar10", "--delegate", "neutron-sim",
                           "--quantize", "--iterations", "2", "--out", str(run)], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    profile = json.loads((run / "profile.json").read_text())
    assert profile["firmware"] == "runtime"
    assert profile["delegated_outputs"].startswith("delegated outputs are not computed (simulated NPU)")
    truth = json.loads((run / "simulation.json").read_text())
    wanted = {(d["instruction_id"], k["index"]): k["ticks"][0] for d in truth["delegates"] for k in d["kernels"]}
    assert all(len(set(k["ticks"])) == 1 for d in truth["delegates"] for k in d["kernels"])
    assert len(wanted) >= 4
    dump = deserialize_from_etdump_flatcc((run / "trace.etdump").read_bytes())
    for block in (r for r in dump.run_data if r.name == "Execute"):
        posted = {}
        for event in block.events:
            p = event.profile_event
            if p is not None and p.name is None and (p.instruction_id, p.delegate_debug_id_int) in wanted:
                posted[(p.instruction_id, p.delegate_debug_id_int)] = p.end_time - p.start_time
        assert posted == wanted


def test_a_runtime_elf_given_with_elf_is_checked_and_labelled_as_the_runtime_image(two_boots, tmp_path) -> None:
    """`hil run --elf` with the runtime image the first boot built: the same program, so it runs, is labelled
    what it is (runtime, instruction counts, not simulated) and, under -icount, traces the first boot's bytes."""
    first = two_boots[0]
    elf = json.loads((first / "manifest.json").read_text())["firmware"]
    out = tmp_path / "given"
    done = hil_run(out, SMALL_CNN, "--elf", elf)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["firmware"], manifest["firmware_kind"], manifest["simulated"]) == (elf, "runtime", False)
    profile = json.loads((out / "profile.json").read_text())
    assert profile["firmware"] == "runtime" and profile["simulated"] is False
    assert profile["time_base"]["kind"] == "emulated instructions" and profile["time_scale"]["ticks_per_us"] == 20.0
    assert _durations(out / "trace.etdump") == _durations(first / "trace.etdump")


def test_a_runtime_elf_of_another_program_is_refused_naming_both_hashes(two_boots, tmp_path) -> None:
    elf = json.loads((two_boots[0] / "manifest.json").read_text())["firmware"]
    model = tmp_path / "conv4.py"
    model.write_text(CONV_MODEL.format(channels=4))
    out = tmp_path / "mismatch"
    done = hil_run(out, f"{model}:factory", "--elf", elf)
    assert done.returncode == 2, done.stdout + done.stderr
    carried = hashlib.sha256((two_boots[0] / "model.pte").read_bytes()).hexdigest()  # what the ELF was built with
    wanted = hashlib.sha256((out / "model.pte").read_bytes()).hexdigest()
    assert carried != wanted
    line = done.stderr.strip().splitlines()[-1]
    assert carried in line and wanted in line and elf in line and str(out / "model.pte") in line
    assert not (out / "serial.log").exists()  # refused before QEMU started
