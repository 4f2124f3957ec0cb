"""hil.drift on the host runtime: the debug buffer's size and the first operator that drifts.

The truths come from ExecuTorch, not from et-hil: the debug events of the host runtime's own ETDump
(read with ExecuTorch's ETDump deserializer: every tensor it logged, its shape, type and offset in the
debug buffer), and a program with one layer made wrong in the .pte alone (tests/fixtures/wrong_layer.py),
whose operator is found in the ETRecord's graph.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hil.aot.export import CompiledModel, export_model, load_inputs
from hil.config.board_config import load_board_config
from hil.drift.debug_size import ROOM_KEY, check_debug_fits, debug_need
from hil.drift.gap import numeric_gap, with_representative_inputs
from hil.base.errors import InputError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from wrong_layer import TWO_CONV, consumer_of, host_run, logged_tensors, with_wrong_weight  # noqa: E402


@pytest.fixture(scope="module")
def two_conv() -> CompiledModel:
    return export_model(TWO_CONV)


def test_the_debug_need_is_what_the_runtime_logs(two_conv: CompiledModel, tmp_path: Path) -> None:
    etdump, _ = host_run(two_conv.pte_path.read_bytes(), tuple(load_inputs(two_conv)), tmp_path, runs=2)
    first, second = logged_tensors(etdump)
    need = debug_need(two_conv.pte_path)
    assert list(need.tensor_sizes) == [size for _, size in first] == [size for _, size in second]
    # The sink's layout: offsets from the first tensor's (the buffer's own start need not be aligned).
    start = first[0][0]
    assert need.buffer_bytes(1) == first[-1][0] - start + first[-1][1]
    assert need.buffer_bytes(2) == second[-1][0] - start + second[-1][1]


def test_runs_that_would_not_fit_are_refused_naming_the_sizes(two_conv: CompiledModel, tmp_path: Path) -> None:
    etdump, _ = host_run(two_conv.pte_path.read_bytes(), tuple(load_inputs(two_conv)), tmp_path, runs=2)
    first, second = logged_tensors(etdump)
    two_runs = second[-1][0] - first[0][0] + second[-1][1]
    board = load_board_config("qemu").with_overrides({ROOM_KEY: two_runs})
    assert check_debug_fits(board, two_conv.pte_path, 2)["need_bytes"] == two_runs
    with pytest.raises(InputError) as refused:
        check_debug_fits(board, two_conv.pte_path, 3)
    message = str(refused.value)
    per_run = sum(size for _, size in first)
    for figure in (f"{per_run} B", f"{two_runs} B", f"{len(first)} tensors", "3 run(s)", "at most 2", ROOM_KEY):
        assert figure in message, message


def test_a_board_without_a_debug_buffer_says_which_setting_is_missing(two_conv: CompiledModel) -> None:
    board = load_board_config("rt700")
    with pytest.raises(InputError, match=ROOM_KEY):
        check_debug_fits(board, two_conv.pte_path, 1)


def _gap(pte: bytes, compiled: CompiledModel, tmp_path: Path, zeros: bool = False, **options) -> dict:
    inputs = tuple(load_inputs(compiled))
    if zeros:  # what the firmware runs today
        inputs = tuple(tensor * 0 for tensor in inputs)
    etdump, debug = host_run(pte, inputs, tmp_path)
    etrecord = tmp_path / "etrecord.bin"
    with_representative_inputs(compiled.etrecord_path, inputs, etrecord)
    return numeric_gap(etdump, etrecord, debug, **options)


def test_the_host_runtime_matches_the_etrecord_everywhere(two_conv: CompiledModel, tmp_path: Path) -> None:
    drift = _gap(two_conv.pte_path.read_bytes(), two_conv, tmp_path)
    assert drift["first_drift"] is None
    ops = [entry["op"] for entry in drift["operators"]]
    for parameter in ("conv1.weight", "conv2.weight", "fc.weight"):
        assert consumer_of(two_conv.etrecord_path, parameter) in ops
    assert all(entry["identical"] or entry["snr_db"] > 100 for entry in drift["operators"]), drift


@pytest.mark.parametrize("parameter", ["conv2.weight", "fc.weight"])
def test_a_layer_wrong_in_the_pte_only_is_named(two_conv: CompiledModel, tmp_path: Path, parameter: str) -> None:
    from two_conv import factory

    module, _ = factory()
    weight = dict(module.named_parameters())[parameter]
    drift = _gap(with_wrong_weight(two_conv.pte_path.read_bytes(), weight), two_conv, tmp_path)
    wrong = consumer_of(two_conv.etrecord_path, parameter)
    assert drift["first_drift"]["op"] == wrong, drift
    assert drift["first_drift"]["snr_db"] < drift["threshold_snr_db"]
    before = [entry for entry in drift["operators"]][: [e["op"] for e in drift["operators"]].index(wrong)]
    assert before and all(entry["status"] == "ok" for entry in before)



def test_the_first_drifting_layer_is_named_not_the_worst(two_conv: CompiledModel, tmp_path: Path) -> None:
    from two_conv import factory

    module, _ = factory()
    drift = _gap(with_wrong_weight(two_conv.pte_path.read_bytes(), module.conv2.weight), two_conv, tmp_path, zeros=True)
    wrong = consumer_of(two_conv.etrecord_path, "conv2.weight")
    worst = min((entry for entry in drift["operators"] if entry["snr_db"] is not None), key=lambda e: e["snr_db"])
    assert worst["op"] != wrong  # downstream of the wrong layer the gap grows: the case tells first from worst
    assert drift["first_drift"]["op"] == wrong, drift
