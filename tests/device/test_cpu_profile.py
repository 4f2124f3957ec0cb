"""Profile CPU-only programs on the selected board and check what the Inspector says against the program
itself (the .pte), the raw ETDump flatbuffer decoded by ExecuTorch, and sha256 digests made here."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from hil.records.pte import read_program

pytestmark = pytest.mark.device

MODELS = ["cifar10", "ds_cnn"]
ARTIFACTS = ["model.pte", "etrecord.bin", "trace.etdump", "serial.log", "profile.json", "manifest.json"]


@pytest.fixture(params=MODELS)
def cpu_run(request, hil_profile):
    return hil_profile(request.param, delegate="none")


def _events(profile, kind):
    return [event for event in profile["events"] if event["kind"] == kind]


def _op_name(operator: str) -> str:
    """`aten::convolution` -> `convolution`: how the runtime names the kernel call."""
    return operator.split("::")[-1]


def _raw_durations(etdump_path):
    """Per run, name -> durations in the dump's own unit, decoded by ExecuTorch's deserializer."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    dump = deserialize_from_etdump_flatcc(etdump_path.read_bytes())
    runs = []
    for run in dump.run_data:
        if run.name != "Execute":
            continue
        found: dict[str, list[int]] = {}
        for event in run.events or []:
            if event.profile_event is not None:
                p = event.profile_event
                found.setdefault(p.name, []).append(p.end_time - p.start_time)
        runs.append(found)
    return runs


def test_every_cpu_operator_appears_with_its_op_types(cpu_run):
    program = read_program(cpu_run.out_dir / "model.pte")
    cpu_ops = _events(cpu_run.profile, "cpu_op")
    assert len(cpu_ops) == len(program.kernels) > 0
    for kernel, event in zip(program.kernels, cpu_ops):
        assert _op_name(kernel.name) in event["name"], (kernel, event["name"])
        assert event["op_types"], f"{event['name']} has no op types: the ETRecord did not map it"
    assert cpu_run.profile["warnings"] == []


def _ticks_per_us(run) -> float:
    """What the dump's ticks are, from outside the profile: a replayed CPU-only dump is the host runtime's
    nanoseconds; firmware that runs (the RT700's, the QEMU runtime image) prints its tick clock."""
    if run.profile.get("firmware") == "replay":
        return 1000.0
    clock = re.search(r"Core/NPU Frequency: (\d+) MHz", (run.out_dir / "serial.log").read_text(errors="replace"))
    assert clock is not None, "the firmware printed no clock line"
    return float(clock.group(1))


def test_times_are_the_raw_dump_at_the_dumps_own_clock(cpu_run, hil_board_config):
    profile = cpu_run.profile
    assert profile["schema"] == "et-hil/profile/1" and profile["time_unit"] == "us"
    assert profile["simulated"] is (hil_board_config.kind != "rt700" and profile.get("firmware") != "runtime")
    raw = _raw_durations(cpu_run.out_dir / "trace.etdump")[profile.get("warmup_iterations", 0):]
    per_us = profile["time_scale"]["ticks_per_us"]
    assert per_us == _ticks_per_us(cpu_run)
    (method,) = _events(profile, "method")
    assert method["times_us"] == [round(run["Method::execute"][0] / per_us, 3) for run in raw]
    ops = _events(profile, "cpu_op")
    for event in ops:
        index = [e for e in ops if e["name"] == event["name"]].index(event)  # its occurrence in the run
        assert event["times_us"] == [round(run[event["name"]][index] / per_us, 3) for run in raw], event["name"]
        assert all(t > 0 for t in event["times_us"])


def test_operators_and_dispatch_fit_inside_method_execute(cpu_run):
    profile = cpu_run.profile
    (method,) = _events(profile, "method")
    totals = profile["totals_us"]
    for i in range(profile["iterations"]):
        ops = sum(event["times_us"][i] + event["call_overhead_us"][i] for event in _events(profile, "cpu_op"))
        assert ops <= method["times_us"][i], f"iteration {i}: ops {ops} us > Method::execute {method['times_us'][i]} us"
    assert totals["npu_kernels"] == totals["delegate_calls"] == totals["delegate_ops"] == 0
    assert profile["npu_fraction"] == 0
    assert totals["cpu_call_overhead"] > 0 and totals["unattributed"] > 0
    assert totals["cpu_ops"] + totals["cpu_call_overhead"] + totals["unattributed"] == pytest.approx(
        totals["method_execute"], abs=0.01 * totals["method_execute"])


def test_console_inference_times_are_the_dumps(cpu_run):
    console = (cpu_run.out_dir / "serial.log").read_text(errors="replace")
    printed = [int(v) for v in re.findall(r"Inference time: (\d+) us", console)]
    raw = _raw_durations(cpu_run.out_dir / "trace.etdump")
    per_us = cpu_run.profile["time_scale"]["ticks_per_us"]
    events = [run["Method::execute"][0] / per_us for run in raw]
    if cpu_run.profile.get("firmware") == "replay":  # its console was rendered from the same dump, half up
        assert printed == [int(t + 0.5) for t in events]
    else:  # firmware that runs times its execute() call, which holds the Method::execute event
        assert len(printed) == len(events)
        assert all(t - 0.5 <= p <= t * 1.001 + 1 for p, t in zip(printed, events)), (printed, events)


def test_run_folder_holds_every_artifact_with_a_true_manifest(cpu_run):
    manifest = json.loads((cpu_run.out_dir / "manifest.json").read_text())
    assert manifest["status"] == "passed"
    for name in ARTIFACTS[:-1]:
        data = (cpu_run.out_dir / name).read_bytes()
        assert data, name
        assert manifest["files"][name] == {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    assert manifest["versions"]["executorch"] == "1.5.1"
    assert manifest["versions"]["torch"].startswith("2.13.0")
