"""Another delegate's events, mismatched inputs and two-method programs, checked against ExecuTorch itself.

The XNNPACK program is real: two XNNPACK partitions with a CPU operator XNNPACK does not take
(`cumsum`) between them, run by the host runtime with event tracing. The reference is ExecuTorch's own
`Inspector.to_dataframe()`, whose rows the harness never sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from hil.analysis.profile import TimeScale, build_profile
from hil.base.errors import AnalysisError
from hil.regress.compare import compare_profiles

from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

ITERATIONS = 5


class TwoPartitions(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.cumsum(torch.relu(self.conv(x)), dim=1).flatten(1))


class Chain(torch.nn.Module):
    """Five CPU operators in a row; `Revised` has the same operators with sigmoid and tanh swapped."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.sigmoid(x * 2.0) - 0.5).abs() + 1.0


class Revised(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.tanh(x * 2.0) - 0.5).abs() + 1.0


class Other(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x + 1.0)


def _save(out: Path, stem: str, programs: Any, example: tuple, partitioner: list | None = None) -> Any:
    edge = to_edge_transform_and_lower(programs, partitioner=partitioner, generate_etrecord=True)
    program = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    program.get_etrecord().save(str(out / f"{stem}.etrecord"))
    (out / f"{stem}.pte").write_bytes(program.buffer)
    return program


def _run(out: Path, stem: str, example: tuple, runs: dict[str, int]) -> Path:
    """Run methods of `stem`.pte on the host runtime with event tracing; returns the ETDump path."""
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    buffer = (out / f"{stem}.pte").read_bytes()  # the binding does not copy it: keep it alive
    module = _load_for_executorch_from_buffer(buffer, enable_etdump=True, debug_buffer_size=0)
    for method, count in runs.items():
        for _ in range(count):
            module.run_method(method, example)
    module.write_etdump_result_to_file(str(out / f"{stem}.etdump"), str(out / f"{stem}.debug"))
    del module, buffer
    return out / f"{stem}.etdump"


def _build(out: Path) -> None:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    torch.manual_seed(0)
    image = (torch.randn(1, 3, 8, 8),)
    _save(out, "xnn", torch.export.export(TwoPartitions().eval(), image), image, [XnnpackPartitioner()])
    _run(out, "xnn", image, {"forward": ITERATIONS})
    vector = (torch.randn(1, 8),)
    _save(out, "chain", torch.export.export(Chain(), vector), vector)
    _save(out, "revised", torch.export.export(Revised(), vector), vector)
    _run(out, "chain", vector, {"forward": ITERATIONS})
    _save(out, "two", {"forward": torch.export.export(Chain(), vector), "other": torch.export.export(Other(), vector)},
          vector)
    _run(out, "two", vector, {"forward": ITERATIONS, "other": 2})


def _art_dir() -> Path:
    from programs import cached_folder

    return cached_folder("delegates", __file__, _build)


@pytest.fixture(scope="module")
def art() -> Path:
    return _art_dir()


def _profile(out: Path, dump: str, record: str, **kwargs: Any) -> dict[str, Any]:
    return build_profile(out / f"{dump}.etdump", out / f"{record}.etrecord", board="host", model=dump,
                         simulated=False, time_scale=TimeScale.nanoseconds(), **kwargs)


def test_xnnpack_events_are_delegate_ops_as_the_inspector_lists_them(art: Path) -> None:
    from executorch.devtools import Inspector

    frame = Inspector(etdump_path=str(art / "xnn.etdump"), etrecord=str(art / "xnn.etrecord")).to_dataframe()
    rows = frame[frame["is_delegated_op"]]
    assert set(rows["delegate_backend_name"]) == {"XnnpackBackend"} and len(rows) >= 4
    profile = _profile(art, "xnn", "xnn", pte_path=art / "xnn.pte")
    ops = [e for e in profile["events"] if e["kind"] == "delegate_op"]
    assert [(e["name"], e["delegate_debug_id"], e["delegate_backend_name"]) for e in ops] == [
        (r.event_name, r.delegate_debug_identifier, r.delegate_backend_name) for r in rows.itertuples()]
    assert all(isinstance(e["delegate_debug_id"], str) for e in ops)
    for event, row in zip(ops, rows.itertuples()):  # the Inspector's default unit is ms
        assert event["times_us"] == [round(t * 1000, 3) for t in row.raw]
    assert not [e for e in profile["events"] if e["kind"] in ("npu_kernel", "profiling_dump")]
    assert profile["npu_fraction"] == 0 and profile["totals_us"]["npu_kernels"] == 0
    per_run = [sum(r.raw[i] for r in rows.itertuples()) * 1000 for i in range(ITERATIONS)]
    assert profile["totals_us"]["delegate_ops"] == round(sorted(per_run)[ITERATIONS // 2], 3)
    assert profile["cpu_fallback_ops"] == ["aten.cumsum.default"]
    assert profile["notes"] == [f"{len(rows)} XnnpackBackend event(s) carry no op types: that backend records no "
                                "per-operator debug-handle map"]
    calls = frame[frame["event_name"] == "DELEGATE_CALL"]
    assert [e["delegate_backend_name"] for e in profile["events"] if e["kind"] == "delegate_call"] == \
        list(calls["delegate_backend_name"])


def test_every_xnnpack_operator_is_judged_the_last_of_each_call_too(art: Path) -> None:
    profile = _profile(art, "xnn", "xnn")
    ops = [e for e in profile["events"] if e["kind"] == "delegate_op"]
    slower = {**profile, "events": [dict(e) for e in profile["events"]]}
    last = next(e for e in reversed(slower["events"]) if e["kind"] == "delegate_op")
    last["times_us"] = [1000.0 + 16 * t for t in last["times_us"]]  # the call's last GEMM, far slower
    comparison = compare_profiles(profile, slower, min_share=0.0)
    judged = {d.key: d.verdict for d in comparison.deltas if d.kind == "delegate_op"}
    assert len(judged) == len(ops) and set(judged.values()) <= {"unchanged", "regression"}
    assert [d.name for d in comparison.regressions] == [f"XnnpackBackend {last['name']}"]


def test_an_etrecord_of_a_revised_model_is_refused_against_the_pte(art: Path) -> None:
    with pytest.raises(AnalysisError, match="does not belong to") as info:
        _profile(art, "chain", "revised", pte_path=art / "chain.pte")
    assert "instruction 1: the .pte calls sigmoid, the ETRecord has aten.tanh.default" in str(info.value)
    _profile(art, "chain", "chain", pte_path=art / "chain.pte")  # its own ETRecord passes


def test_an_etrecord_of_a_revised_model_without_pte_names_the_mismatched_events(art: Path) -> None:
    profile = _profile(art, "chain", "revised")
    (warning,) = [w for w in profile["warnings"] if "do not match" in w]
    assert warning.startswith("2 event(s) do not match")
    assert "native_call_sigmoid.out (forward, instruction 1: op types aten.tanh.default)" in warning
    assert "native_call_tanh.out (forward, instruction 3: op types aten.sigmoid.default)" in warning


def test_two_methods_give_events_per_method(art: Path) -> None:
    profile = _profile(art, "two", "two", pte_path=art / "two.pte")
    assert [(m, v["iterations"], v["left_out_runs"]) for m, v in profile["methods"].items()] == [
        ("forward", ITERATIONS, 0), ("other", 2, 0)]
    assert [e["method"] for e in profile["events"]] == ["forward"] * 7 + ["other"] * 3
    assert profile["methods"]["other"]["totals_us"]["method_execute"] == profile["events"][7]["p50_us"]
    other = [(e["kind"], e["name"], e["op_types"]) for e in profile["events"] if e["method"] == "other"]
    assert other == [("method", "Method::execute", []), ("cpu_op", "native_call_add.out", ["aten.add.Tensor"]),
                     ("cpu_op", "native_call_tanh.out", ["aten.tanh.default"])]
    assert profile["iterations"] == ITERATIONS and profile["warnings"] == []


def test_left_out_runs_are_counted_as_runs(art: Path, tmp_path: Path) -> None:
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc, serialize_to_etdump_flatcc

    dump = deserialize_from_etdump_flatcc((art / "chain.etdump").read_bytes())
    executes = [r for r in dump.run_data if r.name == "Execute"]
    for run in executes[:2]:  # two runs lose an operator event: one other sequence, two runs
        run.events = [e for e in run.events if not (e.profile_event and e.profile_event.name == "native_call_abs.out")]
    (tmp_path / "chain.etdump").write_bytes(serialize_to_etdump_flatcc(dump))
    for suffix in ("etrecord", "pte"):
        (tmp_path / f"chain.{suffix}").write_bytes((art / f"chain.{suffix}").read_bytes())
    profile = _profile(tmp_path, "chain", "chain")
    assert profile["iterations"] == ITERATIONS - 2
    assert "method forward: 2 of 5 run(s) had a different event sequence and are left out" in profile["warnings"]


def test_pte_and_etrecord_differences_are_named():
    from hil.analysis.blocks import read_etrecord
    from hil.analysis.pairing import pte_mismatches

    art = _art_dir()
    assert pte_mismatches(read_etrecord(art / "two.etrecord"), art / "chain.pte") == [
        "methods ['forward'] in the .pte, ['forward', 'other'] in the ETRecord"]
    found = pte_mismatches(read_etrecord(art / "chain.etrecord"), art / "xnn.pte")
    assert "forward instruction 0: the .pte calls delegate XnnpackBackend, the ETRecord has none" in found
    assert "forward instruction 1: the .pte calls cumsum, the ETRecord has aten.sigmoid.default" in found
    assert pte_mismatches(read_etrecord(art / "xnn.etrecord"), art / "xnn.pte") == []
