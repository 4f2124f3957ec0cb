"""Neutron facts on the selected board: which ops ran as NPU kernels, which fell back to the CPU, and
(on a simulated board) that the kernel times the harness recovers are the simulation's exactly."""

from __future__ import annotations

import json

import pytest

from hil.aot.neutron_sim import SUPPORTED_OPS
from hil.pte import read_program

pytestmark = pytest.mark.device

MODELS = ["cifar10", "resnet8", "ds_cnn"]
NPU_MUST_RUN = {"convolution", "addmm", "mm", "linear"}


def base_op(op_type: str) -> str:
    """'aten.convolution.default' or 'aten::convolution' -> 'convolution'."""
    return op_type.replace("::", ".").split(".")[1] if "." in op_type.replace("::", ".") else op_type


@pytest.fixture(scope="module")
def etrecord_delegate_map():
    from executorch.devtools.etrecord import parse_etrecord

    def read(path):
        return parse_etrecord(str(path))._delegate_map["forward"]

    return read


@pytest.fixture(params=MODELS)
def npu_run(request, hil_profile):
    return hil_profile(request.param, delegate=None)


def kinds(profile, kind):
    return [event for event in profile["events"] if event["kind"] == kind]


def test_every_convolution_and_linear_op_is_an_npu_kernel(npu_run):
    profile = npu_run.profile
    on_cpu = {base_op(t) for event in kinds(profile, "cpu_op") for t in event["op_types"]}
    assert not on_cpu & NPU_MUST_RUN, f"ran on the CPU: {on_cpu & NPU_MUST_RUN}"
    on_npu = {base_op(t) for event in kinds(profile, "npu_kernel") for t in event["op_types"]}
    assert "convolution" in on_npu or on_npu & {"addmm", "mm", "linear"}
    assert all(event["metadata"]["kind"] == "kernel" for event in kinds(profile, "npu_kernel"))


def test_kernel_count_is_the_delegate_map_size_minus_one(npu_run, etrecord_delegate_map):
    profile = npu_run.profile
    delegate_map = etrecord_delegate_map(npu_run.out_dir / "etrecord.bin")
    assert delegate_map, "the program has no delegate"
    for instruction_id, delegate in delegate_map.items():
        kernels = [e for e in kinds(profile, "npu_kernel") if e["instruction_id"] == int(instruction_id)]
        assert len(kernels) == len(delegate["delegate_map"]) - 1, instruction_id


def test_the_last_delegate_event_is_the_profiling_dump_without_op_types(npu_run):
    events = npu_run.profile["events"]
    calls = [i for i, e in enumerate(events) if e["kind"] == "delegate_call"]
    assert calls
    for start, end in zip(calls, calls[1:] + [len(events)]):
        inside = [e for e in events[start + 1:end] if e["kind"] in ("npu_kernel", "profiling_dump")]
        assert inside and inside[-1]["kind"] == "profiling_dump"
        assert inside[-1]["op_types"] == [] and inside[-1]["metadata"] == {"kind": "profiling_dump"}
        assert [e["kind"] for e in inside[:-1]] == ["npu_kernel"] * (len(inside) - 1)


def test_recovered_kernel_times_equal_the_simulation(npu_run, hil_board_config):
    if hil_board_config.kind == "rt700":
        pytest.skip("a real board has no simulation to compare with")
    simulation = json.loads((npu_run.out_dir / "simulation.json").read_text())
    ticks_per_us = simulation["clock_mhz"]
    kernels = kinds(npu_run.profile, "npu_kernel")
    expected = [(d["instruction_id"], k["index"], k["ticks"]) for d in simulation["delegates"] for k in d["kernels"]]
    assert len(kernels) == len(expected)
    for event, (instruction_id, index, ticks) in zip(kernels, expected):
        assert (event["instruction_id"], event["delegate_debug_id"]) == (instruction_id, index)
        recovered = [round(t * ticks_per_us) for t in event["times_us"]]
        assert recovered == ticks, event["name"]


def test_npu_fraction_is_a_real_share_of_method_execute(npu_run):
    profile = npu_run.profile
    assert 0 < profile["npu_fraction"] <= 1
    assert profile["npu_fraction"] == pytest.approx(
        profile["totals_us"]["npu_kernels"] / profile["totals_us"]["method_execute"], rel=1e-4
    )
    assert profile["totals_us"]["delegate_overhead"] >= 0


def test_cpu_fallbacks_are_exactly_the_ops_the_backend_did_not_take(npu_run):
    profile = npu_run.profile
    program = read_program(npu_run.out_dir / "model.pte")
    left_on_cpu = {base_op(kernel.name) for kernel in program.kernels}
    assert {base_op(t) for t in profile["cpu_fallback_ops"]} == left_on_cpu
    assert not left_on_cpu & SUPPORTED_OPS, "the simulated backend supports an op it left on the CPU"
