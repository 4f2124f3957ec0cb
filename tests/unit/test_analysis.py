"""ETDump + ETRecord -> profile, with real ExecuTorch: export, host runtime, Inspector.

Two programs are made once per module: a CPU-only one run 3 times by the host runtime (real
ETDump, nanoseconds), and one lowered to a stand-in NPU backend (a Python BackendDetails
whose debug-handle map looks like the Neutron backend's) with an ETDump written by hand in
the RT700 runtime's layout, because no runtime can execute the stand-in's payload.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any, final

import pytest
import torch

from hil.analysis import events as ev
from hil.analysis.console import parse_console
from hil.analysis.profile import TimeScale, build_profile
from hil.pte import pte_memory
from hil.analysis.table import format_table
from hil.errors import AnalysisError

from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult
from executorch.exir.backend.utils import tag_constant_data

ITERATIONS = 3
PAYLOAD = b"stand-in npu microcode"
NPU_OPS = {"aten.permute_copy.default", "aten.addmm.default", "aten.relu.default"}


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + 1.0


class Other(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * 2.0) - 0.5


@final
class StandInNpu(BackendDetails):
    """One 'kernel' per delegated node plus an empty last entry, like the Neutron map."""

    @staticmethod
    def preprocess(edge_program: Any, compile_specs: list[Any]) -> PreprocessResult:
        nodes = [n for n in edge_program.graph_module.graph.nodes if n.op == "call_function"]
        handles = {i: (n.meta["debug_handle"],) for i, n in enumerate(nodes)}
        handles[len(nodes)] = ()
        return PreprocessResult(processed_bytes=PAYLOAD, debug_handle_map=handles)


class StandInPartitioner(Partitioner):
    def __init__(self) -> None:
        super().__init__()
        self._spec = DelegationSpec(StandInNpu.__name__, [])

    def partition(self, exported_program: Any) -> PartitionResult:
        for node in exported_program.graph_module.graph.nodes:
            if node.op == "call_function" and getattr(node.target, "__name__", "") in NPU_OPS:
                node.meta["delegation_tag"] = "npu0"
        tag_constant_data(exported_program)
        return PartitionResult(exported_program, {"npu0": self._spec})


def _export(module: torch.nn.Module, out: Path, stem: str, partitioner: list[Any] | None = None) -> Any:
    example = (torch.randn(1, 8),)
    edge = to_edge_transform_and_lower(
        torch.export.export(module.eval(), example), partitioner=partitioner, generate_etrecord=True
    )
    program = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    program.get_etrecord().save(str(out / f"{stem}.etrecord"))
    (out / f"{stem}.pte").write_bytes(program.buffer)
    return program, example


@pytest.fixture(scope="module")
def art(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    out = tmp_path_factory.mktemp("analysis")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIL_CACHE_DIR", str(out / "cache"))
        torch.manual_seed(0)
        program, example = _export(Tiny(), out, "tiny")
        _export(Other(), out, "other")
        delegated, _ = _export(Tiny(), out, "npu", [StandInPartitioner()])
    buffer = program.buffer  # the binding does not copy it: keep it alive while running
    module = _load_for_executorch_from_buffer(buffer, enable_etdump=True, debug_buffer_size=1 << 20)
    for _ in range(ITERATIONS):
        module.forward(example)
    module.write_etdump_result_to_file(str(out / "tiny.etdump"), str(out / "tiny.debug"))
    del module, buffer
    return {"out": out, "program": program.executorch_program, "npu_program": delegated.executorch_program}


@pytest.fixture(scope="module")
def host_profile(art: dict[str, Any]) -> dict[str, Any]:
    out = art["out"]
    return build_profile(out / "tiny.etdump", out / "tiny.etrecord", board="host", model="tiny",
                         simulated=False, ticks_per_us=1000.0)


def test_schema_fields(host_profile: dict[str, Any]) -> None:
    p = host_profile
    assert p["schema"] == "et-hil/profile/1"
    assert (p["board"], p["model"], p["simulated"], p["time_unit"]) == ("host", "tiny", False, "us")
    assert p["iterations"] == ITERATIONS
    assert p["totals_us"]["method_execute"] > 0
    for event in p["events"]:
        assert event["kind"] in ev.KINDS
        assert {"name", "op_types", "delegate_debug_id", "times_us", "p50_us"} <= set(event)
        assert len(event["times_us"]) == ITERATIONS
        assert all(t > 0 for t in event["times_us"])
        assert event["min_us"] <= event["p50_us"] <= event["max_us"]
    assert [e["kind"] for e in p["events"]].count("method") == 1
    assert p["events"][0]["name"] == "Method::execute"


def test_every_cpu_op_of_the_program_appears(art: dict[str, Any], host_profile: dict[str, Any]) -> None:
    plan = art["program"].execution_plan[0]
    kernels = {
        i: plan.operators[ins.instr_args.op_index].name.split("::")[-1]
        for i, ins in enumerate(plan.chains[0].instructions)
        if hasattr(ins.instr_args, "op_index")
    }
    cpu = {e["instruction_id"]: e for e in host_profile["events"] if e["kind"] == "cpu_op"}
    assert set(cpu) == set(kernels)
    for instruction, op in kernels.items():
        assert cpu[instruction]["name"].startswith(f"native_call_{op}")
        assert any(f".{op}." in t for t in cpu[instruction]["op_types"])
    assert host_profile["cpu_fallback_ops"] == ev.unique(t for e in cpu.values() for t in e["op_types"])
    assert not any(e["name"] == "OPERATOR_CALL" for e in host_profile["events"])


def test_cpu_time_fits_inside_method(host_profile: dict[str, Any]) -> None:
    cpu = [e["p50_us"] for e in host_profile["events"] if e["kind"] == "cpu_op"]
    assert 0 < sum(cpu) <= host_profile["totals_us"]["method_execute"]
    assert host_profile["npu_fraction"] == 0
    assert host_profile["totals_us"]["npu_kernels"] == 0
    assert set(host_profile["load_us"]) == {"Method::init", "Program::load_method"}


def test_scaling_is_explicit(art: dict[str, Any], host_profile: dict[str, Any]) -> None:
    out = art["out"]
    raw = build_profile(out / "tiny.etdump", out / "tiny.etrecord", board="host", model="tiny",
                        simulated=False, time_scale=TimeScale(1.0))
    for ns, us in zip(raw["events"], host_profile["events"]):
        assert ns["name"] == us["name"]
        assert ns["p50_us"] == pytest.approx(us["p50_us"] * 1000.0, rel=1e-6, abs=1e-3)
    # A clock-following scale takes the console's clock over the board file's.
    console = parse_console("Core/NPU Frequency: 500 MHz\r\nInference time: 3 us\r\n")
    clocked = build_profile(out / "tiny.etdump", out / "tiny.etrecord", board="rt700", model="tiny",
                            simulated=False, time_scale=TimeScale.core_cycles(250), console=console)
    assert clocked["time_scale"]["ticks_per_us"] == 500
    assert clocked["totals_us"]["method_execute"] == pytest.approx(raw["totals_us"]["method_execute"] / 500, rel=1e-4)
    assert clocked["console"]["inference_times_us"] == [3] and clocked["console"]["clock_mhz"] == 500
    with pytest.raises(ValueError):
        build_profile(out / "tiny.etdump", out / "tiny.etrecord", board="b", model="m", simulated=False)


def test_table(host_profile: dict[str, Any]) -> None:
    text = format_table(host_profile)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    for event in host_profile["events"]:
        assert any(line.startswith(event["name"][:28]) and event["kind"] in line for line in lines)
    method_line = next(line for line in lines if line.startswith("Method::execute "))
    assert f"{host_profile['totals_us']['method_execute']:.3f}" in method_line and "100.0%" in method_line
    assert any(line.startswith("NPU fraction") for line in lines)


@pytest.mark.parametrize("damage", ["truncated", "random", "empty"])
def test_bad_etdump_names_the_file(art: dict[str, Any], tmp_path: Path, damage: str) -> None:
    good = (art["out"] / "tiny.etdump").read_bytes()
    data = {"truncated": good[: len(good) // 2], "random": random.Random(7).randbytes(4096), "empty": b""}[damage]
    bad = tmp_path / f"{damage}.etdump"
    bad.write_bytes(data)
    with pytest.raises(AnalysisError, match=str(bad)):
        build_profile(bad, art["out"] / "tiny.etrecord", board="host", model="tiny", simulated=False,
                      ticks_per_us=1000.0)


def test_corrupt_flatbuffer_body_names_the_file(art: dict[str, Any], tmp_path: Path) -> None:
    good = bytearray((art["out"] / "tiny.etdump").read_bytes())
    good[12:] = random.Random(3).randbytes(len(good) - 12)  # valid header, garbage body
    bad = tmp_path / "body.etdump"
    bad.write_bytes(bytes(good))
    with pytest.raises(AnalysisError, match=str(bad)):
        build_profile(bad, art["out"] / "tiny.etrecord", board="host", model="tiny", simulated=False,
                      ticks_per_us=1000.0)


def test_missing_or_foreign_etrecord(art: dict[str, Any], tmp_path: Path) -> None:
    out = art["out"]
    kwargs = dict(board="host", model="tiny", simulated=False, ticks_per_us=1000.0)
    with pytest.raises(AnalysisError, match=str(tmp_path / "none.etrecord")):
        build_profile(out / "tiny.etdump", tmp_path / "none.etrecord", **kwargs)
    junk = tmp_path / "junk.etrecord"
    junk.write_bytes(b"not a zip")
    with pytest.raises(AnalysisError, match=str(junk)):
        build_profile(out / "tiny.etdump", junk, **kwargs)
    with pytest.raises(AnalysisError, match="does not belong") as info:
        build_profile(out / "tiny.etdump", out / "other.etrecord", **kwargs)
    assert str(out / "tiny.etdump") in str(info.value) and str(out / "other.etrecord") in str(info.value)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (bytes([0]), {"kind": "profiling_dump"}),
        (bytes([5]), {"kind": "kernel", "function_code": 5}),
        (bytes([255]), {"kind": "kernel", "function_code": 255}),
        ((0x3 << 8 | 0x2 << 4 | 0x0).to_bytes(2, "little"), {"kind": "sdk_version", "version": "3.2.0"}),
        ((0x1 << 8 | 0xF << 4 | 0x9).to_bytes(2, "little"), {"kind": "sdk_version", "version": "1.15.9"}),
        (b"\x01\x02\x03", {"kind": "invalid", "raw": "010203"}),
        (b"", {"kind": "none"}),
        (None, {"kind": "none"}),
    ],
)
def test_decode_neutron_metadata(data: bytes | None, expected: dict[str, Any]) -> None:
    decoded = ev.decode_neutron_metadata(data)
    assert {k: decoded[k] for k in expected} == expected


def test_metadata_bytes_accepts_inspector_forms() -> None:
    assert ev.metadata_bytes(b"\x07") == b"\x07"
    assert ev.metadata_bytes("") is None and ev.metadata_bytes(None) is None
    assert ev.metadata_bytes([1, 2]) == b"\x01\x02"
    assert ev.decode_event_metadata([b"\x07", b"\x08"])["varies_between_runs"] is True


# ---- (B) a delegated program and an ETDump in the RT700 runtime's layout -------------------------


def _profile_event(name: str | None, instr: int, start: int, end: int, delegate_id: int = -1,
                   metadata: bytes | None = None, chain: int = 0) -> Any:
    from executorch.devtools.etdump.schema_flatcc import Event, ProfileEvent

    return Event(
        profile_event=ProfileEvent(name=name, chain_index=chain, instruction_id=instr,
                                   delegate_debug_id_int=delegate_id, delegate_debug_id_str=None,
                                   delegate_debug_metadata=metadata, start_time=start, end_time=end),
        allocation_event=None, debug_event=None,
    )


def _neutron_like_etdump(path: Path, plan: Any, metadata: list[bytes | None], seed: int,
                         prefixed: bool = True) -> dict[str, list[int]]:
    """Write an ETDump as the Neutron runtime would post it: kernels "0".."n-1", the dump "n",
    DELEGATE_CALL, the CPU ops, Method::execute. Returns the raw durations it wrote."""
    from executorch.devtools.etdump.schema_flatcc import ETDumpFlatCC, RunData
    from executorch.devtools.etdump.serialize import serialize_to_etdump_flatcc

    rng = random.Random(seed)
    instrs = plan.chains[0].instructions
    delegate_instr = next(i for i, x in enumerate(instrs) if hasattr(x.instr_args, "delegate_index"))
    cpu_instr = next(i for i, x in enumerate(instrs) if hasattr(x.instr_args, "op_index"))
    cpu_op = plan.operators[instrs[cpu_instr].instr_args.op_index].name.split("::")[-1]
    wrote: dict[str, list[int]] = {"kernels": [], "dump": [], "call": [], "cpu": [], "method": []}
    runs = []
    for run in range(ITERATIONS):
        t, npu, events = 10_000 * (run + 1), 5_000 * (run + 1), []
        for index, meta in enumerate(metadata):
            length = rng.randint(100, 900)
            events.append(_profile_event(None, delegate_instr, npu, npu + length, index, meta))
            wrote["dump" if index == len(metadata) - 1 else "kernels"].append(length)
            npu += length
        call = sum(wrote["kernels"][-(len(metadata) - 1):]) + wrote["dump"][-1] + rng.randint(50, 150)
        cpu = rng.randint(40, 80)
        events += [
            _profile_event("DELEGATE_CALL", delegate_instr, t + 10, t + 10 + call),
            _profile_event(f"native_call_{cpu_op}.out", cpu_instr, t + call + 30, t + call + 30 + cpu),
            _profile_event("OPERATOR_CALL", cpu_instr, t + call + 20, t + call + 40 + cpu),
            _profile_event("Method::execute", 0, t, t + call + cpu + 100, chain=-1),
        ]
        wrote["call"].append(call)
        wrote["cpu"].append(cpu)
        wrote["method"].append(call + cpu + 100)
        runs.append(RunData(name="Execute", bundled_input_index=-1, allocators=[], events=events))
    body = serialize_to_etdump_flatcc(ETDumpFlatCC(version=0, run_data=runs))
    # The runtime's layout is size-prefixed; build_profile also accepts the bare flatbuffer.
    path.write_bytes(struct.pack("<I", len(body)) + body if prefixed else body)
    return wrote


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def test_neutron_like_delegate(art: dict[str, Any], tmp_path: Path) -> None:
    out = art["out"]
    plan = art["npu_program"].execution_plan[0]
    metadata = [bytes([7]), bytes([9]), bytes([3]), bytes([0])]
    wrote = _neutron_like_etdump(tmp_path / "npu.etdump", plan, metadata, seed=1)
    pal, npu = 324.0, 100.0
    console = parse_console("Model Size: 0x100 (256 B)\nmethod_allocator_used: Total 0x10 (16 B); Used 0x8 (8 B)\n")
    p = build_profile(tmp_path / "npu.etdump", out / "npu.etrecord", board="rt700", model="tiny",
                      simulated=True, ticks_per_us=pal, neutron_ticks_per_us=npu, console=console,
                      pte_path=out / "npu.pte")
    kinds = [e["kind"] for e in p["events"]]
    assert kinds[:2] == ["method", "delegate_call"]
    assert kinds[2:6] == ["npu_kernel"] * 3 + ["profiling_dump"]
    assert kinds[6:] == ["cpu_op"]
    kernels = [e for e in p["events"] if e["kind"] == "npu_kernel"]
    assert [e["name"] for e in kernels] == ["0", "1", "2"]
    assert [e["delegate_debug_id"] for e in kernels] == [0, 1, 2]
    assert [e["metadata"]["function_code"] for e in kernels] == [7, 9, 3]
    assert all(e["delegate_backend_name"] == "StandInNpu" for e in kernels)
    # Each kernel maps to the ATen ops of its debug handle (the ETRecord delegate map).
    assert {t for e in kernels for t in e["op_types"]} == NPU_OPS
    assert "aten.relu.default" in kernels[2]["op_types"]
    dump = next(e for e in p["events"] if e["kind"] == "profiling_dump")
    assert dump["op_types"] == [] and dump["metadata"] == {"kind": "profiling_dump"}
    assert p["cpu_fallback_ops"] == ["aten.add.Tensor"]
    # Neutron events use the Neutron scale, CPU events the PAL scale.
    n_kernels = len(metadata) - 1
    assert kernels[0]["times_us"] == pytest.approx([w / npu for w in wrote["kernels"][::n_kernels]])
    totals = p["totals_us"]
    kernel_sums = [sum(wrote["kernels"][i * n_kernels:(i + 1) * n_kernels]) / npu for i in range(ITERATIONS)]
    assert totals["npu_kernels"] == pytest.approx(_median(kernel_sums), abs=1e-3)
    assert totals["method_execute"] == pytest.approx(_median([m / pal for m in wrote["method"]]), abs=1e-3)
    # The dump is subtracted only where it fits beside the kernels (NeutronBackend.cpp's dump event
    # adds the PAL-timed run, so it usually overlaps them); otherwise overhead = call - kernels.
    overhead = [
        c / pal - k - d / npu if c / pal - k - d / npu >= 0 else c / pal - k
        for c, k, d in zip(wrote["call"], kernel_sums, wrote["dump"])
    ]
    assert any(o == c / pal - k for o, c, k in zip(overhead, wrote["call"], kernel_sums))  # the overlap case ran
    assert totals["delegate_overhead"] == pytest.approx(_median(overhead), abs=1e-3)
    assert totals["profiling_dump"] == pytest.approx(_median([d / npu for d in wrote["dump"]]), abs=1e-3)
    assert p["npu_fraction"] == pytest.approx(totals["npu_kernels"] / totals["method_execute"], rel=1e-4)
    # Memory: console lines and the .pte itself.
    assert p["memory"]["model_size_bytes"] == 256
    assert p["memory"]["allocators"]["method_allocator"]["used"] == 8
    delegates = p["memory"]["pte"]["methods"]["forward"]["delegates"]
    assert delegates == [{"backend": "StandInNpu", "payload_bytes": len(PAYLOAD)}]
    assert p["memory"]["pte"]["methods"]["forward"]["planned_bytes"] > 0
    text = format_table(p)
    assert "profiling_dump" in text and max(len(line) for line in text.splitlines()) <= 100


def test_neutron_like_metadata_missing_or_invalid(art: dict[str, Any], tmp_path: Path) -> None:
    """No metadata: the last delegated event without ops is the dump; bad metadata: a warning."""
    out = art["out"]
    plan = art["npu_program"].execution_plan[0]
    _neutron_like_etdump(tmp_path / "plain.etdump", plan, [None, None, None, None], seed=2, prefixed=False)
    p = build_profile(tmp_path / "plain.etdump", out / "npu.etrecord", board="rt700", model="tiny",
                      simulated=True, ticks_per_us=324.0)
    assert [e["kind"] for e in p["events"] if e["delegate_debug_id"] is not None] == ["npu_kernel"] * 3 + [
        "profiling_dump"]
    assert p["time_scale"]["neutron_ticks_per_us"] == 324.0
    sdk = (3 << 8 | 2 << 4).to_bytes(2, "little")
    _neutron_like_etdump(tmp_path / "odd.etdump", plan, [bytes([1]), b"\xde\xad\xbe", bytes([2]), sdk], seed=3)
    p = build_profile(tmp_path / "odd.etdump", out / "npu.etrecord", board="rt700", model="tiny",
                      simulated=True, ticks_per_us=324.0)
    odd = next(e for e in p["events"] if e["name"] == "1")
    assert odd["metadata"] == {"kind": "invalid", "raw": "deadbe"} and odd["kind"] == "npu_kernel"
    assert any("deadbe" in w for w in p["warnings"])
    last = next(e for e in p["events"] if e["name"] == "3")
    assert last["kind"] == "profiling_dump" and last["metadata"]["version"] == "3.2.0"


def test_pte_memory_of_cpu_program(art: dict[str, Any], tmp_path: Path) -> None:
    memory = pte_memory(art["out"] / "tiny.pte")
    forward = memory["methods"]["forward"]
    assert forward["planned_bytes"] == sum(art["program"].execution_plan[0].non_const_buffer_sizes[1:]) > 0
    assert forward["delegates"] == [] and memory["file_bytes"] == (art["out"] / "tiny.pte").stat().st_size
    (tmp_path / "bad.pte").write_bytes(b"\x00" * 64)
    with pytest.raises(AnalysisError, match="bad.pte"):
        pte_memory(tmp_path / "bad.pte")
