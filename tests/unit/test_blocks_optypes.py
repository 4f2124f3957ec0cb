"""A method other than `forward` gets its own delegates resolved, not forward's.

The Inspector resolves every block against one graph (forward's); et-hil redoes a non-forward block
with that method's own debug-handle and delegate maps (hil.analysis.blocks._remap_op_types). The program
here has a CPU-only `forward` and an `other` method lowered to XNNPACK in two partitions around a
`cumsum` XNNPACK does not take (test_delegates_and_pairing's TwoPartitions), so only `other`'s own
delegate map can name the backend of its calls. Truths: the partitioner chosen in this file, and the
ETRecord's own per-method delegate map as ExecuTorch wrote it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from hil.analysis.profile import TimeScale, build_profile
from test_delegates_and_pairing import Chain, TwoPartitions, _run

RUNS = 3


def _build(out: Path) -> None:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    torch.manual_seed(0)
    image = (torch.randn(1, 3, 8, 8),)
    programs = {"forward": torch.export.export(Chain(), (torch.randn(1, 8),)),
                "other": torch.export.export(TwoPartitions().eval(), image)}
    edge = to_edge_transform_and_lower(programs, partitioner={"forward": [], "other": [XnnpackPartitioner()]},
                                       generate_etrecord=True)
    program = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    program.get_etrecord().save(str(out / "mixed.etrecord"))
    (out / "mixed.pte").write_bytes(program.buffer)
    _run(out, "mixed", image, {"other": RUNS})


@pytest.fixture(scope="module")
def mixed() -> Path:
    from programs import cached_folder

    return cached_folder("blocks-mixed", __file__, _build)


@pytest.fixture(scope="module")
def profile(mixed: Path) -> dict[str, Any]:
    return build_profile(mixed / "mixed.etdump", mixed / "mixed.etrecord", board="host", model="mixed",
                         simulated=False, time_scale=TimeScale.nanoseconds(), pte_path=mixed / "mixed.pte")


def test_the_etrecord_holds_xnnpack_delegates_for_the_other_method_only(mixed: Path) -> None:
    """The premise, from ExecuTorch's own ETRecord reader: forward has no delegate, other two XNNPACK calls."""
    from executorch.devtools import parse_etrecord

    record = parse_etrecord(str(mixed / "mixed.etrecord"))
    delegates = record._delegate_map or {}
    assert not delegates.get("forward")
    assert [entry["name"] for entry in delegates["other"].values()] == ["XnnpackBackend", "XnnpackBackend"]


def test_the_other_methods_delegate_calls_are_named_by_its_own_delegate_map(profile: dict[str, Any]) -> None:
    other = [e for e in profile["events"] if e["method"] == "other"]
    calls = [e for e in other if e["kind"] == "delegate_call"]
    # Two partitions (conv+relu, then linear) around the CPU cumsum: two calls a run, both XNNPACK's.
    assert [e["delegate_backend_name"] for e in calls] == ["XnnpackBackend", "XnnpackBackend"]
    assert all(len(e["times_us"]) == RUNS for e in calls)


def test_the_other_methods_delegate_ops_carry_their_backends_name(profile: dict[str, Any]) -> None:
    ops = [e for e in profile["events"] if e["method"] == "other" and e["kind"] == "delegate_op"]
    assert ops and {e["delegate_backend_name"] for e in ops} == {"XnnpackBackend"}
    # Its one CPU operator between the partitions keeps its op type from other's own graph.
    assert profile["cpu_fallback_ops"] == ["aten.cumsum.default"]
