"""hil.replay.host_runtime: a real ETDump from the ExecuTorch runtime, read by the real Inspector."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from hil.aot.export import CompiledModel, export_model, load_inputs
from hil.replay.host_runtime import host_etdump
from hil.base.errors import ModelError


@pytest.fixture(scope="module")
def cifar10(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CompiledModel]:
    root = tmp_path_factory.mktemp("hil-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIL_CACHE_DIR", str(root))
        yield export_model("cifar10")


def _inspector(data: bytes, compiled: CompiledModel):  # -> Inspector
    from executorch.devtools import Inspector

    return Inspector(etdump_data=data, etrecord=str(compiled.etrecord_path))


def _run_data(data: bytes) -> list:
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    return deserialize_from_etdump_flatcc(data).run_data


def test_three_iterations_give_three_times_for_every_execute_event(cifar10: CompiledModel) -> None:
    data = host_etdump(cifar10.pte_path.read_bytes(), load_inputs(cifar10), 3, label=str(cifar10.pte_path))
    assert int.from_bytes(data[:4], "little") == len(data) - 4  # the runtime's size prefix
    blocks = {block.name: block for block in _inspector(data, cifar10).event_blocks}
    assert set(blocks) == {"Default", "Execute"}
    execute = blocks["Execute"].events
    names = [event.name for event in execute]
    assert names.count("Method::execute") == 1
    assert "native_call_convolution.out" in names and "OPERATOR_CALL" in names
    for event in execute:
        assert len(event.perf_data.raw) == 3 and all(t > 0 for t in event.perf_data.raw), event.name
        if event.name != "Method::execute":
            assert event.op_types, f"{event.name} has no op_types: the ETRecord did not map it"
    # Loading the method is recorded once, in its own block.
    assert {e.name: len(e.perf_data.raw) for e in blocks["Default"].events} == {
        "Method::init": 1, "Program::load_method": 1}


@pytest.mark.parametrize("iterations", [1, 3])
def test_one_run_data_block_per_iteration_plus_load(cifar10: CompiledModel, iterations: int) -> None:
    data = host_etdump(cifar10.pte_path.read_bytes(), load_inputs(cifar10), iterations)
    assert [run.name for run in _run_data(data)] == ["Default"] + ["Execute"] * iterations


def test_times_are_nanoseconds_and_the_inspector_shows_milliseconds(cifar10: CompiledModel) -> None:
    started = time.perf_counter()
    data = host_etdump(cifar10.pte_path.read_bytes(), load_inputs(cifar10), 2)
    wall_ns = (time.perf_counter() - started) * 1e9
    execute_ns = [
        event.profile_event.end_time - event.profile_event.start_time
        for run in _run_data(data) if run.name == "Execute"
        for event in run.events if event.profile_event and event.profile_event.name == "Method::execute"
    ]
    assert len(execute_ns) == 2
    # The forwards are most of the call's wall time: only nanoseconds fit between these bounds.
    assert 0.2 * wall_ns < sum(execute_ns) <= wall_ns
    method = next(e for b in _inspector(data, cifar10).event_blocks for e in b.events if e.name == "Method::execute")
    assert method.perf_data.raw == pytest.approx([ns / 1e6 for ns in execute_ns])


def test_not_a_program_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="bogus.pte is not an ExecuTorch program"):
        host_etdump(b"\0" * 64, (torch.ones(1),), 1, label="bogus.pte")


def test_wrong_inputs_name_the_program_and_iteration(cifar10: CompiledModel) -> None:
    with pytest.raises(ModelError, match=r"host runtime failed on .*model\.pte, iteration 1"):
        host_etdump(cifar10.pte_path.read_bytes(), (torch.ones(1, 3, 16, 16),), 2, label=str(cifar10.pte_path))


def test_zero_iterations_is_refused(cifar10: CompiledModel) -> None:
    with pytest.raises(ValueError, match="iterations"):
        host_etdump(cifar10.pte_path.read_bytes(), load_inputs(cifar10), 0)


def test_repeated_calls_each_give_a_whole_etdump(cifar10: CompiledModel, tmp_path: Path) -> None:
    """A module's ETDump can be written only once (a second write segfaults): each call must use
    its own module, so calls never see each other's events."""
    pte = cifar10.pte_path.read_bytes()
    first = host_etdump(pte, load_inputs(cifar10), 1)
    second = host_etdump(pte, load_inputs(cifar10), 1)
    assert [r.name for r in _run_data(first)] == [r.name for r in _run_data(second)] == ["Default", "Execute"]
