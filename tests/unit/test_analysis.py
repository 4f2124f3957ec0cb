"""ETDump + ETRecord -> profile, with real ExecuTorch: export, host runtime, Inspector.

Two programs are made once per module: a CPU-only one run 3 times by the host runtime (real
ETDump, nanoseconds), and one lowered to the simulated Neutron backend with an ETDump written by
hand in the RT700 runtime's layout from fixed tick counts, whose totals are worked out by hand in
the test (no runtime can execute the simulated payload).
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest
import torch

from hil.records import events as ev
from hil.records.console import parse_console
from hil.analysis.profile import TimeScale, build_profile
from hil.records.pte import pte_memory
from hil.cli.table import format_table
from hil.base.errors import AnalysisError
from hil.regress.stats import drop_warmup

from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

ITERATIONS = 3


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + 1.0


class Other(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * 2.0) - 0.5


class TwoLayers(torch.nn.Module):
    """fc1 + relu (one Neutron kernel), sigmoid (left on the CPU), fc2 (another): two delegate calls once
    quantized (the simulated NPU takes int8 operators only). Its program's instructions: 0 quantize,
    1 delegate, 2 dequantize, 3 sigmoid, 4 quantize, 5 delegate, 6 dequantize."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 8)
        self.fc2 = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.sigmoid(torch.relu(self.fc1(x))))


def _export(module: torch.nn.Module, out: Path, stem: str, partitioner: list[Any] | None = None,
            quantizer: Any = None) -> Any:
    example = (torch.randn(1, 8),)
    module = module.eval()
    if quantizer is not None:
        from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

        from hil.aot.quantize import load_out_variants

        load_out_variants()
        prepared = prepare_pt2e(torch.export.export(module, example).module(), quantizer)
        prepared(*example)
        module = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(
        torch.export.export(module, example), partitioner=partitioner, generate_etrecord=True
    )
    program = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    program.get_etrecord().save(str(out / f"{stem}.etrecord"))
    (out / f"{stem}.pte").write_bytes(program.buffer)
    return program, example


def _build(out: Path) -> None:
    """Export the three programs and run the CPU-only one on the host runtime."""
    from programs import write_host_etdump

    from hil.aot.neutron_sim import neutron_sim_partitioners
    from hil.aot.quantize import neutron_scheme_quantizer

    torch.manual_seed(0)
    program, example = _export(Tiny(), out, "tiny")
    _export(Other(), out, "other")
    _export(TwoLayers(), out, "npu", neutron_sim_partitioners(), neutron_scheme_quantizer())
    write_host_etdump(program.buffer, example, ITERATIONS, out / "tiny.etdump")


@pytest.fixture(scope="module")
def art() -> dict[str, Any]:
    from hil.records.pte import load_program
    from programs import cached_folder

    out = cached_folder("analysis", __file__, _build)
    return {"out": out, "program": load_program(out / "tiny.pte")[0], "npu_program": load_program(out / "npu.pte")[0]}


@pytest.fixture  # per test, so each test that reads a profile also makes it (what `make mutation` needs)
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
    with pytest.raises(AnalysisError, match=rf"the Inspector cannot decode ETDump {bad} with ETRecord "
                                            rf"{art['out'] / 'tiny.etrecord'}: [A-Za-z]+Error: "):
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


# ---- (B) a program lowered to the simulated Neutron backend, with an ETDump written by hand ----------
#
# Fixed tick counts, so every total below is worked out by hand. PAL (CPU) ticks run at 100 per us,
# Neutron ticks at 50 per us. Per run i = 0, 1, 2:
#   Method::execute 20000 + 100 i PAL                   -> 200, 201, 202 us
#   instruction CALL_A: DELEGATE_CALL 5000 PAL (50 us): kernel 1000 NPU (20 us), dump 1200 NPU (24 us)
#   instruction SIGMOID: OPERATOR_CALL 3000 PAL (30 us) around native_call_sigmoid.out 2500 PAL (25 us)
#   instruction CALL_B: DELEGATE_CALL 4000 PAL (40 us): kernel 1500 NPU (30 us; run 2: 2500 = 50 us),
#                  dump 2000 NPU (40 us)
PAL, NPU = 100.0, 50.0
KERNEL2 = (1500, 1500, 2500)
# The instructions of TwoLayers' int8 program those events belong to (its quantize/dequantize operators have
# no events in this dump).
CALL_A, SIGMOID, CALL_B = 1, 3, 5
QDQ = ["quantized_decomposed.quantize_per_tensor.default", "quantized_decomposed.dequantize_per_tensor.default"]


def _profile_event(name: str | None, instr: int, start: int, end: int, delegate_id: int = -1,
                   metadata: bytes | None = None, chain: int = 0) -> Any:
    from executorch.devtools.etdump.schema_flatcc import Event, ProfileEvent

    return Event(
        profile_event=ProfileEvent(name=name, chain_index=chain, instruction_id=instr,
                                   delegate_debug_id_int=delegate_id, delegate_debug_id_str=None,
                                   delegate_debug_metadata=metadata, start_time=start, end_time=end),
        allocation_event=None, debug_event=None,
    )


def _hand_etdump(path: Path, metadata: tuple[bytes | None, bytes | None] = (b"\x03", b"\x00"),
                 prefixed: bool = True, dumps: bool = True, vary: bool = False, short_call: bool = False) -> None:
    """Write the runs described above; the CPU operator's events first, though they start later (the
    analysis orders events by start time). `dumps=False` leaves out the dump events; `vary` gives
    run 2's kernels another function code; `short_call` makes run 2's OPERATOR_CALL 2300 PAL (23 us),
    shorter than the 25 us kernel it wraps (two timestamps read at different moments can do that)."""
    from executorch.devtools.etdump.schema_flatcc import ETDumpFlatCC, RunData
    from executorch.devtools.etdump.serialize import serialize_to_etdump_flatcc

    kernel_meta, dump_meta = metadata
    runs = []
    for i in range(ITERATIONS):
        t = 100_000 * (i + 1)  # PAL
        n = 40_000 * (i + 1)   # Neutron timer
        meta = b"\x04" if vary and i == 2 else kernel_meta
        events = [
            _profile_event("native_call_sigmoid.out", SIGMOID, t + 5300, t + 7800),
            _profile_event("OPERATOR_CALL", SIGMOID,
                           *((t + 5400, t + 7700) if short_call and i == 2 else (t + 5200, t + 8200))),
            _profile_event(None, CALL_A, n, n + 1000, 0, meta),
            *([_profile_event(None, CALL_A, n + 1000, n + 2200, 1, dump_meta)] if dumps else []),
            _profile_event("DELEGATE_CALL", CALL_A, t + 100, t + 5100),
            _profile_event(None, CALL_B, n + 5000, n + 5000 + KERNEL2[i], 0, meta),
            *([_profile_event(None, CALL_B, n + 9000, n + 11000, 1, dump_meta)] if dumps else []),
            _profile_event("DELEGATE_CALL", CALL_B, t + 8300, t + 12300),
            _profile_event("Method::execute", 0, t, t + 20000 + 100 * i, chain=-1),
        ]
        runs.append(RunData(name="Execute", bundled_input_index=-1, allocators=[], events=events))
    body = serialize_to_etdump_flatcc(ETDumpFlatCC(version=0, run_data=runs))
    # The runtime's layout is size-prefixed; build_profile also accepts the bare flatbuffer.
    path.write_bytes(struct.pack("<I", len(body)) + body if prefixed else body)


@pytest.fixture
def npu_profile(art: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    out = art["out"]
    dump = tmp_path / "npu.etdump"
    _hand_etdump(dump)
    console = parse_console("Model Size: 0x100 (256 B)\nmethod_allocator_used: Total 0x10 (16 B); Used 0x8 (8 B)\n")
    return build_profile(dump, out / "npu.etrecord", board="rt700", model="two", simulated=True,
                         ticks_per_us=PAL, neutron_ticks_per_us=NPU, console=console, pte_path=out / "npu.pte")


def test_neutron_events_are_classified_and_mapped_by_the_delegate_map(npu_profile: dict[str, Any]) -> None:
    p = npu_profile
    assert [(e["kind"], e["name"], e["instruction_id"]) for e in p["events"]] == [
        ("method", "Method::execute", 0),
        ("delegate_call", "DELEGATE_CALL", CALL_A), ("npu_kernel", "0", CALL_A), ("profiling_dump", "1", CALL_A),
        ("cpu_op", "native_call_sigmoid.out", SIGMOID),
        ("delegate_call", "DELEGATE_CALL", CALL_B), ("npu_kernel", "0", CALL_B), ("profiling_dump", "1", CALL_B),
    ]
    kernels = [e for e in p["events"] if e["kind"] == "npu_kernel"]
    assert [e["op_types"] for e in kernels] == [
        # a kernel holds its QDQ cluster (the quantize/dequantize nodes round it), as Neutron's partitions do
        [*QDQ, "aten.permute_copy.default", "aten.addmm.default", "aten.relu.default"],
        [*QDQ, "aten.permute_copy.default", "aten.addmm.default"],
    ]
    assert all(e["metadata"] == {"kind": "kernel", "function_code": 3} for e in kernels)
    assert all(e["delegate_backend_name"] == "NeutronSimBackend" for e in kernels)
    assert p["cpu_fallback_ops"] == ["aten.sigmoid.default"]
    assert [w.split(":")[0] for w in p["warnings"]] == ["only 3 iteration(s)"]  # and nothing unmatched


def test_times_use_each_events_own_clock(npu_profile: dict[str, Any]) -> None:
    by = {(e["kind"], e["instruction_id"]): e for e in npu_profile["events"]}
    assert by[("method", 0)]["times_us"] == [200.0, 201.0, 202.0]
    assert by[("npu_kernel", CALL_A)]["times_us"] == [20.0, 20.0, 20.0]
    assert by[("npu_kernel", CALL_B)]["times_us"] == [30.0, 30.0, 50.0]
    assert by[("profiling_dump", CALL_B)]["times_us"] == [40.0, 40.0, 40.0]
    assert by[("cpu_op", SIGMOID)]["times_us"] == [25.0] * 3
    assert by[("cpu_op", SIGMOID)]["call_overhead_us"] == [5.0] * 3
    assert by[("cpu_op", SIGMOID)]["call_overhead_p50_us"] == 5.0
    assert by[("delegate_call", CALL_A)]["times_us"] == [50.0] * 3
    assert by[("delegate_call", CALL_B)]["times_us"] == [40.0] * 3


def test_totals_are_the_hand_computed_medians(npu_profile: dict[str, Any]) -> None:
    # per run: kernels 50, 50, 70; call overheads (50-20-24) + (40-30) = 16, 16, and 6 + 0 in run 2,
    # where the kernel (50 us) outlasts its call (40 us); unattributed = method - 25 - 5 - 90.
    assert npu_profile["totals_us"] == {
        "method_execute": 201.0, "npu_kernels": 50.0, "delegate_ops": 0.0, "cpu_ops": 25.0,
        "cpu_call_overhead": 5.0, "delegate_calls": 90.0, "delegate_overhead": 16.0, "profiling_dump": 64.0,
        "unattributed": 81.0,
    }
    assert npu_profile["npu_fraction"] == 0.248756  # 50 / 201


def test_delegate_overhead_is_never_negative(npu_profile: dict[str, Any]) -> None:
    last = drop_warmup(npu_profile, 2)  # run 2 alone: call 2 is 40 us, its kernel 50 us
    assert last["totals_us"]["delegate_overhead"] == 6.0  # 6 + 0, not 6 - 10
    assert last["totals_us"]["npu_kernels"] == 70.0 and last["totals_us"]["unattributed"] == 82.0
    assert last["npu_fraction"] == 0.346535  # 70 / 202
    assert last["methods"]["forward"]["iterations"] == 1
    assert last["methods"]["forward"]["totals_us"] == last["totals_us"]
    assert last["methods"]["forward"]["npu_fraction"] == 0.346535


def test_totals_are_exact_to_the_nanosecond_when_no_time_is(art: dict[str, Any], tmp_path: Path) -> None:
    """The same ticks read at 11x the clocks: every time is the figure above / 11, which no 3 decimals hold."""
    _hand_etdump(tmp_path / "npu.etdump")
    p = build_profile(tmp_path / "npu.etdump", art["out"] / "npu.etrecord", board="rt700", model="two",
                      simulated=True, ticks_per_us=11 * PAL, neutron_ticks_per_us=11 * NPU)
    # 201/11 = 18.2727, 50/11 = 4.54545, 25/11 = 2.2727, 5/11 = 0.45454, 90/11 = 8.18181, 16/11 = 1.45454,
    # 64/11 = 5.81818, 81/11 = 7.36363; summed from times rounded first, dispatch would be 2.727 - 2.273 =
    # 0.454, the calls 4.545 + 3.636 = 8.181, and the rest follow.
    assert p["totals_us"] == {
        "method_execute": 18.273, "npu_kernels": 4.545, "delegate_ops": 0.0, "cpu_ops": 2.273,
        "cpu_call_overhead": 0.455, "delegate_calls": 8.182, "delegate_overhead": 1.455, "profiling_dump": 5.818,
        "unattributed": 7.364,
    }
    assert p["npu_fraction"] == 0.248756  # 50 / 201, not 4.545 / 18.273 = 0.248728
    (sigmoid,) = [e for e in p["events"] if e["kind"] == "cpu_op"]
    assert sigmoid["times_us"] == [2.273] * 3 and sigmoid["call_overhead_us"] == [0.455] * 3
    assert sigmoid["call_overhead_p50_us"] == 0.455


def test_cpu_dispatch_is_never_negative(art: dict[str, Any], tmp_path: Path) -> None:
    _hand_etdump(tmp_path / "short.etdump", short_call=True)
    p = build_profile(tmp_path / "short.etdump", art["out"] / "npu.etrecord", board="rt700", model="two",
                      simulated=True, ticks_per_us=PAL, neutron_ticks_per_us=NPU)
    (sigmoid,) = [e for e in p["events"] if e["kind"] == "cpu_op"]
    assert sigmoid["call_overhead_us"] == [5.0, 5.0, 0.0]  # 30 - 25, 30 - 25, and 23 - 25 taken as 0
    last = drop_warmup(p, 2)
    assert last["totals_us"]["cpu_call_overhead"] == 0.0
    assert last["totals_us"]["unattributed"] == 87.0  # 202 - 25 (sigmoid) - 0 (dispatch) - 90 (calls 50 + 40)


def test_reading_npu_ticks_at_the_cpu_clock_changes_the_numbers(art: dict[str, Any], tmp_path: Path) -> None:
    _hand_etdump(tmp_path / "npu.etdump")
    one_clock = build_profile(tmp_path / "npu.etdump", art["out"] / "npu.etrecord", board="rt700", model="two",
                              simulated=True, ticks_per_us=PAL)
    assert one_clock["totals_us"]["npu_kernels"] == 25.0 and one_clock["time_scale"]["neutron_ticks_per_us"] == PAL


def test_memory_comes_from_the_console_and_the_pte(npu_profile: dict[str, Any], art: dict[str, Any]) -> None:
    memory = npu_profile["memory"]
    assert memory["model_size_bytes"] == 256 and memory["allocators"]["method_allocator"]["used"] == 8
    plan = art["npu_program"].execution_plan[0]
    data = art["npu_program"].backend_delegate_data
    assert memory["pte"]["methods"]["forward"]["delegates"] == [
        {"backend": "NeutronSimBackend", "payload_bytes": len(data[d.processed.index].data)} for d in plan.delegates]
    text = format_table(npu_profile)
    assert "profiling_dump" in text and max(len(line) for line in text.splitlines()) <= 100


def test_neutron_metadata_missing_or_invalid(art: dict[str, Any], tmp_path: Path) -> None:
    """No metadata: the last delegated event without ops is the dump; bad metadata: a warning."""
    etrecord = art["out"] / "npu.etrecord"
    _hand_etdump(tmp_path / "plain.etdump", (None, None), prefixed=False)
    p = build_profile(tmp_path / "plain.etdump", etrecord, board="rt700", model="two", simulated=True,
                      ticks_per_us=PAL)
    assert [e["kind"] for e in p["events"] if e["delegate_debug_id"] is not None] == ["npu_kernel", "profiling_dump"] * 2
    sdk = (3 << 8 | 2 << 4).to_bytes(2, "little")
    _hand_etdump(tmp_path / "odd.etdump", (b"\xde\xad\xbe", sdk))
    p = build_profile(tmp_path / "odd.etdump", etrecord, board="rt700", model="two", simulated=True, ticks_per_us=PAL)
    odd = next(e for e in p["events"] if e["name"] == "0")
    assert odd["metadata"] == {"kind": "invalid", "raw": "deadbe"} and odd["kind"] == "npu_kernel"
    assert any("deadbe" in w for w in p["warnings"])
    last = next(e for e in p["events"] if e["name"] == "1")
    assert last["kind"] == "profiling_dump" and last["metadata"]["version"] == "3.2.0"


def test_metadata_wins_over_position_and_a_kernel_with_ops_is_never_the_dump(art: dict[str, Any],
                                                                            tmp_path: Path) -> None:
    etrecord = art["out"] / "npu.etrecord"
    _hand_etdump(tmp_path / "swapped.etdump", (b"\x00", b"\x03"))  # the kernel's says dump, the last says kernel
    p = build_profile(tmp_path / "swapped.etdump", etrecord, board="rt700", model="two", simulated=True, ticks_per_us=PAL)
    assert [(e["name"], e["kind"]) for e in p["events"] if e["delegate_debug_id"] is not None] == [
        ("0", "profiling_dump"), ("1", "npu_kernel")] * 2
    _hand_etdump(tmp_path / "nodump.etdump", (None, None), dumps=False)  # no metadata, no dump event
    p = build_profile(tmp_path / "nodump.etdump", etrecord, board="rt700", model="two", simulated=True, ticks_per_us=PAL)
    assert [e["kind"] for e in p["events"] if e["delegate_debug_id"] is not None] == ["npu_kernel"] * 2
    _hand_etdump(tmp_path / "vary.etdump", vary=True)
    p = build_profile(tmp_path / "vary.etdump", etrecord, board="rt700", model="two", simulated=True, ticks_per_us=PAL)
    assert p["warnings"][:2] == ["event 0: metadata differs between runs"] * 2
    assert p["events"][2]["metadata"] == {"kind": "kernel", "function_code": 3, "varies_between_runs": True}


def test_a_dump_without_a_method_execute_or_that_the_inspector_rejects(art: dict[str, Any], tmp_path: Path) -> None:
    from executorch.devtools.etdump.schema_flatcc import ETDumpFlatCC, RunData
    from executorch.devtools.etdump.serialize import serialize_to_etdump_flatcc

    load_only = RunData(name="Default", bundled_input_index=-1, allocators=[],
                        events=[_profile_event("Program::load_method", 0, 0, 10, chain=-1)])
    (tmp_path / "load.etdump").write_bytes(serialize_to_etdump_flatcc(ETDumpFlatCC(version=0, run_data=[load_only])))
    with pytest.raises(AnalysisError) as info:
        build_profile(tmp_path / "load.etdump", art["out"] / "npu.etrecord", board="b", model="m", simulated=False,
                      ticks_per_us=1.0)
    assert str(info.value) == f"ETDump {tmp_path / 'load.etdump'} holds no Method::execute event: was the method run?"


def test_pte_memory_of_cpu_program(art: dict[str, Any], tmp_path: Path) -> None:
    memory = pte_memory(art["out"] / "tiny.pte")
    forward = memory["methods"]["forward"]
    assert forward["planned_bytes"] == sum(art["program"].execution_plan[0].non_const_buffer_sizes[1:]) > 0
    assert forward["delegates"] == [] and memory["file_bytes"] == (art["out"] / "tiny.pte").stat().st_size
    (tmp_path / "bad.pte").write_bytes(b"\x00" * 64)
    with pytest.raises(AnalysisError, match="bad.pte"):
        pte_memory(tmp_path / "bad.pte")


def test_a_dump_whose_timer_never_ticked_is_refused_naming_the_cause(art: dict[str, Any], tmp_path: Path) -> None:
    """What an RT700 PAL on QEMU writes (no DWT there): every event starts and ends at tick 0."""
    from executorch.devtools.etdump.schema_flatcc import ETDumpFlatCC, RunData
    from executorch.devtools.etdump.serialize import serialize_to_etdump_flatcc

    frozen = [_profile_event("native_call_sigmoid.out", SIGMOID, 0, 0), _profile_event("OPERATOR_CALL", SIGMOID, 0, 0),
              _profile_event("Method::execute", 0, 0, 0, chain=-1)]
    runs = [RunData(name="Execute", bundled_input_index=-1, allocators=[], events=frozen) for _ in range(2)]
    dump = tmp_path / "frozen.etdump"
    dump.write_bytes(serialize_to_etdump_flatcc(ETDumpFlatCC(version=0, run_data=runs)))
    with pytest.raises(AnalysisError) as info:
        build_profile(dump, art["out"] / "npu.etrecord", board="qemu", model="m", simulated=False,
                      time_scale=TimeScale.core_cycles(20))
    # The profile's events: the sigmoid kernel (its OPERATOR_CALL is its dispatch) and Method::execute, 2 runs each.
    assert str(info.value).startswith(f"{dump}: all 4 event times are 0: the firmware's tick counter never ticked")
    assert "DWT cycle counter on QEMU" in str(info.value)
    # One event that took time is enough to read the dump: a fast operator may really take 0 ticks.
    frozen[0] = _profile_event("native_call_sigmoid.out", SIGMOID, 0, 3)
    dump.write_bytes(serialize_to_etdump_flatcc(ETDumpFlatCC(version=0, run_data=runs)))
    assert build_profile(dump, art["out"] / "npu.etrecord", board="qemu", model="m", simulated=False,
                         time_scale=TimeScale.core_cycles(20))["iterations"] == 2


def test_npu_kernels_name_the_layers_the_delegate_map_places_there(art: dict[str, Any], npu_profile: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    """TwoLayers: fc1 + relu in the first delegate call, fc2 in the second, both called on one line of forward."""
    import inspect

    from executorch.devtools import Inspector

    kernels = [e for e in npu_profile["events"] if e["kind"] == "npu_kernel"]
    assert [e["modules"] for e in kernels] == [["fc1"], ["fc2"]]  # relu is torch.relu in forward: no layer
    lines, first = inspect.getsourcelines(TwoLayers.forward)
    line = first + next(i for i, text in enumerate(lines) if "self.fc2(" in text)
    assert [e["sources"] for e in kernels] == [[f"test_analysis.py:{line}"]] * 2
    # the Inspector's own mapping of the delegated events (delegate debug handles -> edge nodes)
    dump = tmp_path / "again.etdump"
    _hand_etdump(dump)
    inspector = Inspector(etdump_path=str(dump), etrecord=str(art["out"] / "npu.etrecord"))
    block = inspector.event_blocks[0]
    theirs = [sorted({v[0] for stack in e.module_hierarchy.values() for v in stack.values() if v[0]})
              for e in block.events if e.is_delegated_op and e.delegate_debug_identifier == 0]
    assert theirs == [["fc1"], ["fc2"]]
