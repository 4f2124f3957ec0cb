"""Event kinds, Neutron metadata, op-type matching, the main method, the pairing checks and a delegate call's
overhead, on events written by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.records import events as ev
from hil.analysis.pairing import check_events, unmatched_events
from hil.analysis.totals import iterations_of, main_method
from hil.base.errors import AnalysisError

KERNEL, DUMP, SDK = {"kind": "kernel", "function_code": 3}, {"kind": "profiling_dump"}, {"kind": "sdk_version"}


def kind(name="0", *, delegated=True, backend="NeutronBackend", ops=(), metadata=None, last=False):
    return ev.classify(name, is_delegated=delegated, backend=backend, op_types=list(ops), metadata=metadata,
                       is_last_of_delegate=last)


def test_neutron_events_by_metadata_then_by_position():
    assert kind(metadata=KERNEL, last=True) == "npu_kernel"  # metadata wins over position
    assert kind(metadata=DUMP) == "profiling_dump" and kind(metadata=SDK) == "profiling_dump"
    assert kind(last=True) == "profiling_dump"  # no metadata: the last event without ops
    assert kind(last=True, ops=["aten.add.Tensor"]) == "npu_kernel" and kind() == "npu_kernel"
    assert kind(backend="NeutronSimBackend", metadata=DUMP) == "profiling_dump"


def test_other_backends_and_host_events():
    assert kind(backend="XnnpackBackend", metadata=DUMP, last=True) == "delegate_op"
    assert kind(backend=None, last=True) == "delegate_op"
    assert kind("Method::execute", delegated=False) == "method"
    assert kind("DELEGATE_CALL", delegated=False, backend="XnnpackBackend") == "delegate_call"
    assert kind("native_call_add.out", delegated=False, backend=None) == "cpu_op"
    assert ev.is_neutron("NeutronBackend") and ev.is_neutron("NeutronSimBackend") and not ev.is_neutron("Xnnpack")


@pytest.mark.parametrize(("name", "ops", "fits"), [
    ("native_call__softmax.out", ["aten._softmax.default"], True),
    ("native_call__to_dim_order_copy.out", ["dim_order_ops._to_dim_order_copy.default"], True),
    ("native_call_max_pool2d_with_indices.out", ["aten.max_pool2d_with_indices.default"], True),
    ("native_call_add.out", ["add"], True),
    ("native_call_add.out", ["aten.sub.Tensor", "aten.add.Tensor"], True),
    ("native_call_add.out", ["aten.sub.Tensor"], False),
    ("native_call_add.out", [], False),
    ("native_call_tanh.out", ["aten.sigmoid.default"], False),
    # The kernel's base name may be the start of the op type's: an in-place form, a suffixed variant...
    ("native_call_add.out", ["aten.add_.Tensor"], True),
    ("native_call_max_pool2d.out", ["aten.max_pool2d_with_indices.default"], True),
    # ... but never the other way round: a longer kernel name does not fit a shorter op type.
    ("native_call_max_pool2d_with_indices.out", ["aten.max_pool2d.default"], False),
    ("OPERATOR_CALL", ["aten.add.Tensor"], None),
    ("DELEGATE_CALL", [], None),
])
def test_op_type_matching(name, ops, fits):
    assert ev.op_type_matches(name, ops) is fits


def test_native_op_names_and_metadata_forms():
    assert ev.native_op_name("native_call_add.out") == "add" and ev.native_op_name("native_call__softmax") == "_softmax"
    assert ev.native_op_name("DELEGATE_CALL") is None
    assert ev.metadata_bytes(bytearray(b"\x01")) == b"\x01" and ev.metadata_bytes(b"") is None
    assert ev.metadata_bytes("\x05") == b"\x05" and ev.metadata_bytes(7) is None and ev.metadata_bytes(["x"]) is None
    assert ev.metadata_bytes([300, 1]) == bytes([300 & 0xFF, 1])
    assert ev.decode_event_metadata([b"", ""]) is None and ev.decode_event_metadata([]) is None
    assert ev.decode_event_metadata([b"\x03", b"\x03"]) == KERNEL
    assert ev.decode_neutron_metadata((2 << 8 | 1 << 4 | 3).to_bytes(2, "little")) == {
        "kind": "sdk_version", "version": "2.1.3", "raw": "1302"}


def test_the_main_method_is_forward_else_the_first():
    assert main_method([{"method": "other"}, {"method": "forward"}]) == "forward"
    assert main_method([{"method": "b"}, {"method": "c"}]) == "b"
    assert main_method([]) == "forward" and main_method([{"kind": "method"}]) == "forward"
    assert iterations_of([{"kind": "cpu_op", "times_us": [1]}, {"kind": "method", "times_us": [1, 2]}]) == 2
    assert iterations_of([]) == 0 and iterations_of([{"kind": "method"}]) == 0


def _op(name, ops, kind="cpu_op", method="forward", instruction=1):
    return {"name": name, "kind": kind, "method": method, "op_types": ops, "instruction_id": instruction,
            "delegate_backend_name": "NeutronBackend" if kind == "npu_kernel" else None}


def test_unmatched_events_are_named_with_method_and_instruction():
    assert unmatched_events([_op("native_call_x.out", [], method="m", instruction=3),
                             _op("native_call_add.out", ["aten.add.Tensor"]),
                             _op("0", [], kind="npu_kernel", instruction=4),
                             _op("1", [], kind="profiling_dump")]) == [
        "native_call_x.out (m, instruction 3: op types none)", "0 (forward, instruction 4: op types none)"]


def test_a_pair_is_refused_when_most_operator_events_do_not_fit():
    where = (Path("d.etdump"), Path("r.bin"))
    half = [_op("native_call_add.out", ["aten.add.Tensor"]), _op("native_call_mul.out", ["aten.sub.Tensor"], instruction=2)]
    (warning,) = check_events(half, *where)
    assert warning == ("1 event(s) do not match ETRecord r.bin, their op types may be another op's (is it the "
                       "ETRecord of this model?): native_call_mul.out (forward, instruction 2: op types aten.sub.Tensor)")
    with pytest.raises(AnalysisError) as info:
        check_events(half + [_op("native_call_div.out", ["aten.sub.Tensor"], instruction=3)], *where)
    assert str(info.value) == ("ETDump d.etdump does not belong to ETRecord r.bin: 2 of 3 operator events do not "
                               "match the ETRecord's op types")
    unknown = [_op("0", ["aten.add.Tensor"], kind="npu_kernel")]
    unknown[0]["delegate_backend_name"] = None
    with pytest.raises(AnalysisError, match="r.bin: its delegate events are unknown to the ETRecord$"):
        check_events(unknown, *where)
    assert check_events([_op("0", ["aten.add.Tensor"], kind="npu_kernel")], *where) == []


def test_no_method_time_means_no_fraction():
    from hil.analysis.totals import totals_from_events

    method = {"kind": "method", "times_us": [0.5]}
    kernel = {"kind": "npu_kernel", "times_us": [0.25], "instruction_id": 0}
    assert totals_from_events([method, kernel], 1)[1] == 0.5
    assert totals_from_events([], 0) == (totals_from_events([], 0)[0], None)
    assert totals_from_events([], 0)[0]["method_execute"] == 0.0


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


def test_a_dump_that_exactly_fits_beside_the_kernels_is_subtracted():
    from hil.analysis.totals import call_overhead

    assert call_overhead(10.0, 6.0, 4.0) == 0.0  # fits exactly: nothing left
    assert call_overhead(10.0, 6.0, 3.5) == 0.5
    assert call_overhead(10.0, 6.0, 5.0) == 4.0  # does not fit: call minus kernels
    assert call_overhead(10.0, 12.0, 1.0) == 0.0  # kernels outlast the call: never negative


def test_a_quantize_kernels_neighbour_sharing_its_debug_handle_is_not_a_cpu_fallback():
    # An int8 program's CPU quantize beside a delegated linear: the Inspector gives it both op types.
    from hil.records.events import kernel_op_types

    both = ["aten.addmm.default", "quantized_decomposed.quantize_per_tensor.default"]
    assert kernel_op_types("native_call_quantize_per_tensor.out", both) == [
        "quantized_decomposed.quantize_per_tensor.default"]
    assert kernel_op_types("native_call_addmm.out", both) == ["aten.addmm.default"]
    # nothing fits, or a name that is no kernel wrapper: kept as given (the pairing check speaks for those)
    assert kernel_op_types("native_call_relu.out", ["aten.addmm.default"]) == ["aten.addmm.default"]
    assert kernel_op_types("DELEGATE_CALL", both) == both
