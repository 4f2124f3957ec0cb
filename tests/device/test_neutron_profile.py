"""Neutron facts on the selected board: which ops ran as NPU kernels, which fell back to the CPU, and
(on a simulated board) that the kernel times the harness recovers are the simulation's exactly."""

from __future__ import annotations

import json

import pytest

from hil.aot.neutron_sim import SUPPORTED_OPS
from hil.records.pte import read_program

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
    return hil_profile(request.param, delegate=None, quantize=True)  # the NPU takes int8 only (NXP quantizes)


def kinds(profile, kind):
    return [event for event in profile["events"] if event["kind"] == kind]


def test_every_convolution_and_linear_op_is_an_npu_kernel(npu_run):
    profile = npu_run.profile
    # by the kernel each CPU event ran (native_call_<op>.out): in an int8 program a CPU quantize/dequantize shares
    # debug handles with its neighbours, so its op_types may name the delegated convolution or linear beside it
    on_cpu = {event["name"].removeprefix("native_call_").split(".")[0] for event in kinds(profile, "cpu_op")}
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


def _simulation(npu_run, hil_board_config):
    if hil_board_config.kind == "rt700":
        pytest.skip("a real board has no simulation to compare with")
    return json.loads((npu_run.out_dir / "simulation.json").read_text())


def test_recovered_kernel_times_equal_the_simulation_at_the_npu_clock(npu_run, hil_board_config):
    simulation = _simulation(npu_run, hil_board_config)
    assert simulation["npu_clock_mhz"] == hil_board_config.get("simulation.npu_clock_mhz") != hil_board_config.clock_mhz
    kernels = kinds(npu_run.profile, "npu_kernel")
    expected = [(d["instruction_id"], k["index"], k["ticks"]) for d in simulation["delegates"] for k in d["kernels"]]
    assert len(kernels) == len(expected)
    for event, (instruction_id, index, ticks) in zip(kernels, expected):
        assert (event["instruction_id"], event["delegate_debug_id"]) == (instruction_id, index)
        assert event["times_us"] == [round(t / simulation["npu_clock_mhz"], 3) for t in ticks], event["name"]
    if "method_execute_ticks" in simulation:  # the replay simulates the CPU too; the runtime image measures it
        (method,) = kinds(npu_run.profile, "method")
        assert method["times_us"] == [round(t / simulation["clock_mhz"], 3) for t in simulation["method_execute_ticks"]]


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def test_totals_match_the_simulations_ground_truth(npu_run, hil_board_config):
    simulation = _simulation(npu_run, hil_board_config)
    if "cpu_ops" not in simulation:
        pytest.skip("on the runtime image the CPU part is measured, not simulated: no CPU truth to compare totals with")
    cpu, npu = simulation["clock_mhz"], simulation["npu_clock_mhz"]
    runs = len(simulation["method_execute_ticks"])
    kernels = [sum(k["ticks"][i] for d in simulation["delegates"] for k in d["kernels"]) / npu for i in range(runs)]
    methods = [t / cpu for t in simulation["method_execute_ticks"]]
    ops = [sum(op["ticks"][i] for op in simulation["cpu_ops"]) / cpu for i in range(runs)]
    dispatch = [sum(op["dispatch_ticks"][i] for op in simulation["cpu_ops"]) / cpu for i in range(runs)]
    calls = [sum(d["delegate_call_ticks"][i] for d in simulation["delegates"]) / cpu for i in range(runs)]
    totals = npu_run.profile["totals_us"]
    assert totals["npu_kernels"] == pytest.approx(_median(kernels), abs=2e-3)
    assert totals["method_execute"] == pytest.approx(_median(methods), abs=2e-3)
    assert totals["cpu_call_overhead"] == pytest.approx(_median(dispatch), abs=2e-3)
    assert totals["unattributed"] == pytest.approx(
        _median([m - o - d - c for m, o, d, c in zip(methods, ops, dispatch, calls)]), abs=2e-3)
    assert totals["delegate_overhead"] > 0 and totals["delegate_ops"] == 0
    assert npu_run.profile["npu_fraction"] == pytest.approx(_median(kernels) / _median(methods), abs=1e-5)


def test_cpu_fallbacks_are_exactly_the_ops_the_backend_did_not_take(npu_run):
    profile = npu_run.profile
    program = read_program(npu_run.out_dir / "model.pte")
    left_on_cpu = {base_op(kernel.name) for kernel in program.kernels}
    assert {base_op(t) for t in profile["cpu_fallback_ops"]} == left_on_cpu
    # An operator the simulation runs may stay on the CPU only in float (the quantizer left it so: DS-CNN's
    # average pool under XNNPACKQuantizer's scheme); Neutron runs int8 only. The dtype is read from the program.
    supported_on_cpu = left_on_cpu & SUPPORTED_OPS
    assert supported_on_cpu <= _float_kernels(npu_run.out_dir / "model.pte"), "the simulation left an int8 op it runs"
    reasons = json.loads((npu_run.out_dir / "manifest.json").read_text())["cpu_fallback_reasons"]
    assert all(reasons[op].startswith("float operator") for op in supported_on_cpu), reasons


def _float_kernels(pte) -> set[str]:
    """The operators of the program's CPU kernel calls whose first argument is a float32 tensor."""
    from executorch.exir.schema import KernelCall, ScalarType, Tensor

    from hil.records.pte import method_plan

    plan = method_plan(pte, "forward")
    found = set()
    for instruction in plan.chains[0].instructions:
        args = instruction.instr_args
        if isinstance(args, KernelCall):
            first = plan.values[args.args[0]].val
            if isinstance(first, Tensor) and first.scalar_type == ScalarType.FLOAT:
                found.add(base_op(plan.operators[args.op_index].name))
    return found
