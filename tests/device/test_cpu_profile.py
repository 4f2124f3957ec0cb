"""Profile CPU-only programs on the selected board and check what the Inspector says against the program itself."""

from __future__ import annotations

import json
import re

import pytest

from hil.manifest import sha256_file
from hil.pte import read_program

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


def test_every_cpu_operator_appears_with_its_op_types(cpu_run):
    program = read_program(cpu_run.out_dir / "model.pte")
    cpu_ops = _events(cpu_run.profile, "cpu_op")
    assert len(cpu_ops) == len(program.kernels) > 0
    for kernel, event in zip(program.kernels, cpu_ops):
        assert _op_name(kernel.name) in event["name"], (kernel, event["name"])
        assert event["op_types"], f"{event['name']} has no op types: the ETRecord did not map it"


def test_each_time_is_positive_and_one_per_iteration(cpu_run, hil_board_config):
    profile = cpu_run.profile
    assert profile["schema"] == "et-hil/profile/1" and profile["time_unit"] == "us"
    assert profile["simulated"] is (hil_board_config.kind != "rt700")
    for event in profile["events"]:
        assert len(event["times_us"]) == profile["iterations"], event["name"]
        assert all(t > 0 for t in event["times_us"]), event
        assert event["p50_us"] > 0


def test_operators_sum_to_no_more_than_method_execute(cpu_run):
    profile = cpu_run.profile
    (method,) = _events(profile, "method")
    for i in range(profile["iterations"]):
        ops = sum(event["times_us"][i] for event in _events(profile, "cpu_op"))
        assert ops <= method["times_us"][i], f"iteration {i}: ops {ops} us > Method::execute {method['times_us'][i]} us"
    assert profile["totals_us"]["method_execute"] == pytest.approx(method["p50_us"])


def test_console_inference_time_agrees_with_the_etdump(cpu_run):
    console = (cpu_run.out_dir / "serial.log").read_text(errors="replace")
    printed = [int(v) for v in re.findall(r"Inference time: (\d+) us", console)]
    printed = printed[len(printed) - cpu_run.profile["iterations"]:]  # warm-up runs print too
    (method,) = _events(cpu_run.profile, "method")
    assert len(printed) == len(method["times_us"])
    for shown, measured in zip(printed, method["times_us"]):
        assert abs(shown - measured) <= max(1.0, 0.01 * measured), (shown, measured)


def test_run_folder_holds_every_artifact_with_a_true_manifest(cpu_run):
    manifest = json.loads((cpu_run.out_dir / "manifest.json").read_text())
    assert manifest["status"] == "passed"
    for name in ARTIFACTS[:-1]:
        path = cpu_run.out_dir / name
        assert path.is_file() and path.stat().st_size > 0, name
        assert manifest["files"][name] == {"sha256": sha256_file(path), "size": path.stat().st_size}
    assert manifest["versions"]["executorch"] == "1.5.1"
    assert manifest["versions"]["torch"].startswith("2.13.0")
    assert (cpu_run.out_dir / "trace.etdump").read_bytes() == cpu_run.capture.etdump
