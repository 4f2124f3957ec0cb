"""The synthesized Neutron ETDump: opens in the real Inspector with the simulated kernel times, exactly."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from executorch.devtools import Inspector
from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc
from executorch.devtools.inspector._inspector_utils import TimeScale

from hil.aot.neutron_sim import BACKEND_ID
from hil.replay.neutron_etdump import synthesize_neutron_etdump
from hil.base.errors import AnalysisError


class PadConvPoolLinear(nn.Module):
    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3)
        self.fc = nn.Linear(channels * 3 * 3, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv(nn.functional.pad(x, (1, 1, 1, 1)))), 2)
        return torch.softmax(self.fc(torch.flatten(x, 1)), dim=1)


def export(model: nn.Module, inputs: tuple, folder) -> tuple:
    """The int8 program neutron-sim makes of `model` (a float one it would not delegate) and its ETRecord."""
    from programs import lower_neutron_sim

    _, prog = lower_neutron_sim(model, inputs)
    folder.mkdir(parents=True, exist_ok=True)
    pte, etrecord = folder / "model.pte", folder / "etrecord.bin"
    pte.write_bytes(prog.buffer)
    prog.get_etrecord().save(str(etrecord))
    return pte, etrecord


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    return export(PadConvPoolLinear(), (torch.randn(1, 3, 6, 6),), tmp_path_factory.mktemp("neutron_etdump"))


def inspect(etdump: bytes, etrecord) -> Inspector:
    return Inspector(etdump_data=etdump, etrecord=str(etrecord),
                     source_time_scale=TimeScale.CYCLES, target_time_scale=TimeScale.CYCLES)


def compute(op_types: list[str]) -> list[str]:
    """The operators of a kernel that compute (not its int8/float conversions)."""
    return [t for t in op_types if not t.startswith("quantized_decomposed")]


def test_inspector_maps_kernels_and_cpu_ops_with_simulated_ticks(artifacts) -> None:
    pte, etrecord = artifacts
    etdump, sim = synthesize_neutron_etdump(pte, etrecord, iterations=3, clock_mhz=324, seed=7, jitter=0.1)
    assert int.from_bytes(etdump[:4], "little") == len(etdump) - 4 and etdump[8:12] == b"ED00"  # size-prefixed
    json.dumps(sim)  # simulation.json must be writable as is
    assert sim["simulated"] and sim["clock_mhz"] == 324 and sim["seed"] == 7 and sim["iterations"] == 3

    execute = [b for b in inspect(etdump, etrecord).event_blocks if b.name == "Execute"]
    assert len(execute) == 1
    events = execute[0].events
    assert len(sim["delegates"]) == 2  # conv+relu+pool | (flatten on the CPU side) | linear
    for delegate in sim["delegates"]:
        kernel_events = [e for e in events if e.is_delegated_op and e._instruction_id == delegate["instruction_id"]]
        assert [e.name for e in kernel_events] == [str(i) for i in range(len(delegate["kernels"]) + 1)]
        for event, kernel in zip(kernel_events, delegate["kernels"]):
            assert event.delegate_backend_name == BACKEND_ID
            # the compute operators of the kernel (its quantize/dequantize nodes share debug handles with the
            # neighbouring kernel's, so the Inspector may list a neighbour's operator too)
            assert compute(kernel["op_types"]) and set(compute(kernel["op_types"])) <= set(compute(event.op_types))
            assert event.perf_data.raw == [float(t) for t in kernel["ticks"]]
            assert event.delegate_debug_metadatas == [bytes([kernel["function_code"]])] * 3
        dump = kernel_events[-1]
        assert dump.op_types == [] and dump.perf_data.raw == [float(t) for t in delegate["profiling_dump"]["ticks"]]
        assert dump.delegate_debug_metadatas == [b"\x00"] * 3
        call = next(e for e in events if e.name == "DELEGATE_CALL" and e._instruction_id == delegate["instruction_id"])
        assert call.perf_data.raw == [float(t) for t in delegate["delegate_call_ticks"]]
        assert call.delegate_backend_name == BACKEND_ID
    assert compute(sim["delegates"][0]["kernels"][0]["op_types"]) == ["aten.convolution.default", "aten.relu.default"]
    assert {k["dtype"] for d in sim["delegates"] for k in d["kernels"]} == {"int8"}

    by_name = {e.name: e for e in events}
    names = [op["name"] for op in sim["cpu_ops"]]
    for op in (op for op in sim["cpu_ops"] if names.count(op["name"]) == 1):  # one event of that name
        event = by_name[op["name"]]
        assert op["op"].replace("::", ".").replace(".out", ".default") in event.op_types  # with neighbours' q/dq
        assert event.perf_data.raw == [float(t) for t in op["ticks"]]
    assert {"native_call_constant_pad_nd.out", "native_call__softmax.out"} <= {op["name"] for op in sim["cpu_ops"]}
    assert by_name["Method::execute"].perf_data.raw == [float(t) for t in sim["method_execute_ticks"]]


def test_events_nest_like_a_runtime_dump(artifacts) -> None:
    pte, _ = artifacts
    etdump, sim = synthesize_neutron_etdump(pte, iterations=2, seed=3, jitter=0.2)
    runs = deserialize_from_etdump_flatcc(etdump).run_data
    assert [r.name for r in runs] == ["Default", "Execute", "Execute"]
    for run in runs[1:]:
        events = [e.profile_event for e in run.events]
        method = events[-1]
        assert method.name == "Method::execute" and method.chain_index == -1
        assert all(method.start_time <= e.start_time <= e.end_time <= method.end_time for e in events[:-1]
                   if e.delegate_debug_id_int == -1)
        calls = [e for e in events if e.name == "DELEGATE_CALL"]
        assert len(calls) == len(sim["delegates"])
        for call in calls:
            kernels = [e for e in events if e.delegate_debug_id_int != -1 and e.instruction_id == call.instruction_id]
            assert [k.delegate_debug_id_int for k in kernels] == list(range(len(kernels)))
            assert all(k.name in (None, "") and k.chain_index == 0 for k in kernels)
            for k in kernels[:-1]:  # the dump event's end mixes units and may run past the call
                assert call.start_time < k.start_time < k.end_time < call.end_time
            assert call.start_time < kernels[-1].start_time and kernels[-1].start_time > kernels[-2].end_time
        starts = [e.start_time for e in events[:-1] if e.name and e.name.startswith("native_call")]
        assert starts == sorted(starts)


def test_determinism_and_seeded_jitter(artifacts) -> None:
    pte, _ = artifacts
    flat_a, sim_a = synthesize_neutron_etdump(pte, iterations=2, seed=1, jitter=0.0)
    flat_b, _ = synthesize_neutron_etdump(pte, iterations=2, seed=2, jitter=0.0)
    assert flat_a == flat_b  # no jitter: the seed does not matter
    assert all(len(set(k["ticks"])) == 1 for k in sim_a["delegates"][0]["kernels"])
    same_1, sim_1 = synthesize_neutron_etdump(pte, iterations=2, seed=5, jitter=0.1)
    same_2, _ = synthesize_neutron_etdump(pte, iterations=2, seed=5, jitter=0.1)
    other, sim_other = synthesize_neutron_etdump(pte, iterations=2, seed=6, jitter=0.1)
    assert same_1 == same_2 and same_1 != other
    assert sim_1["delegates"][0]["kernels"][0]["ticks"] != sim_other["delegates"][0]["kernels"][0]["ticks"]


def test_etrecord_of_another_program_is_refused(artifacts, tmp_path) -> None:
    pte, _ = artifacts

    class ConvOnly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 2, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x)

    _, other_etrecord = export(ConvOnly(), (torch.randn(1, 3, 4, 4),), tmp_path)
    with pytest.raises(AnalysisError, match="does not match"):
        synthesize_neutron_etdump(pte, other_etrecord, iterations=1)


def test_a_kernel_that_is_not_int8_is_refused_by_the_replay(artifacts) -> None:
    """The cost model counts int8 MACs: a payload kernel of another dtype (a float one, as a /1 payload made before
    neutron-sim took int8 only) is refused, naming the program and instruction, never timed as int8."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    from hil.base.errors import ModelError
    from hil.replay.neutron_etdump import program_steps

    pte, _ = artifacts
    program = deserialize_pte_binary(pte.read_bytes()).program
    plan = program.execution_plan[0]
    assert all(k["dtype"] == "int8" for s in program_steps(program, plan, "x.pte") if s["kind"] == "neutron"
               for k in s["kernels"])
    blob = program.backend_delegate_data[0]
    assert b'"dtype": "int8"' in blob.data
    blob.data = blob.data.replace(b'"dtype": "int8"', b'"dtype": "float32"', 1)
    with pytest.raises(ModelError, match=r"x\.pte: delegate at instruction \d+: kernel 0 .* is float32, not int8"):
        program_steps(program, plan, "x.pte")
