"""Budgets by the user's layer (`modules=`), per event (`ops=`) and summed (`ops_total=`), and the one label the
table, the gate, the budgets and JUnit give an event, on hand-written profiles (figures worked out in comments)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from hil.base.errors import BoardConfigError
from hil.regress.budgets import budget_from_mapping, check_budget, load_file_budget, merge_budgets

CONV = "aten.convolution.default"


def _event(name: str, kind: str, us: float, ops: list[str], modules: list[str] | None = None,
           sources: list[str] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"name": name, "kind": kind, "op_types": ops, "times_us": [us, us, us], "p50_us": us}
    if modules is not None:
        event.update(modules=modules, sources=sources or [])
    return event


# The run: two convolutions, 200,000 us (conv1) and 203,702 us (conv2), 403,702 us together.
TWO_CONVS = {
    "model": "user", "board": "qemu", "totals_us": {"method_execute": 420_000.0}, "npu_fraction": 0.0,
    "events": [
        _event("Method::execute", "method", 420_000.0, []),
        _event("native_call_convolution.out", "cpu_op", 200_000.0, [CONV], ["conv1"], ["models.py:12"]),
        _event("native_call_relu.out", "cpu_op", 1_000.0, ["aten.relu.default"], [], ["models.py:12"]),
        _event("native_call_convolution.out", "cpu_op", 203_702.0, [CONV], ["conv2"], ["models.py:13"]),
        _event("native_call_addmm.out", "cpu_op", 5_000.0, ["aten.addmm.default"], ["head.1"], ["models.py:14"]),
    ],
}


def _said(limits: dict[str, Any], profile: dict[str, Any] = TWO_CONVS) -> list[str]:
    return [v.describe() for v in check_budget(profile, budget_from_mapping(limits, "t"))]


def test_ops_limits_each_event_and_ops_total_their_sum_naming_every_event_summed():
    assert _said({"ops": {CONV: 380_000}}) == []  # each conv is under 380,000 us on its own
    assert _said({"ops_total": {CONV: 380_000}}) == [
        f"ops_total '{CONV}' (sum of its events): measured 403702 us, limit (max) 380000 us "
        "[sum of 2 event(s): native_call_convolution.out in conv1 (models.py:12) 200000 us, "
        "native_call_convolution.out #2 in conv2 (models.py:13) 203702 us]"]
    assert _said({"ops_total": {CONV: 403_702}}) == []  # met exactly
    assert _said({"ops": {CONV: 203_701}}) == [
        f"op '{CONV}' (each event): native_call_convolution.out #2 in conv2 (models.py:13): measured 203702 us, "
        f"limit (max) 203701 us [cpu_op, op types {CONV}]"]


def test_a_module_budget_sums_the_events_of_that_layer_and_of_the_layers_inside_it():
    assert _said({"modules": {"conv2": 50_000}}) == [
        "module 'conv2' (sum of its events): measured 203702 us, limit (max) 50000 us "
        "[sum of 1 event(s): native_call_convolution.out #2 in conv2 (models.py:13) 203702 us]"]
    assert _said({"modules": {"conv2": 203_702, "head": 5_000}}) == []  # head holds head.1
    assert _said({"modules": {"head": 4_999}})[0].startswith("module 'head' (sum of its events): measured 5000 us")
    # `conv` is no layer of this model (conv1 and conv2 are not inside it): a typo must fail
    assert _said({"modules": {"conv": 1e9}}) == [
        "module 'conv' (sum of its events): nothing measured, limit (max) 1e+09 us "
        "[no event matches it; nearest layers: conv2, conv1]"]
    assert _said({"modules": {"haed": 1e9}})[0].endswith("[no event matches it; nearest layers: head, head.1]")


def test_a_sum_never_counts_a_delegate_call_beside_its_own_kernels():
    npu = {"model": "m", "board": "b", "totals_us": {"method_execute": 100.0}, "events": [
        _event("DELEGATE_CALL", "delegate_call", 60.0, ["aten.linear.default"], ["fc1", "fc2"]),
        _event("0", "npu_kernel", 20.0, ["aten.linear.default"], ["fc1"], ["m.py:5"]),
        _event("1", "npu_kernel", 30.0, ["aten.linear.default"], ["fc2"], ["m.py:6"]),
        _event("2", "profiling_dump", 70.0, []),
    ]}
    # the kernels: 20 + 30 = 50 us; with the call it would be 110 us, with the dump 120 us
    assert _said({"ops_total": {"aten.linear.default": 50}, "modules": {"fc2": 30}}, npu) == []
    assert _said({"modules": {"fc1": 19}}, npu) == [
        "module 'fc1' (sum of its events): measured 20 us, limit (max) 19 us "
        "[sum of 1 event(s): call 0 / kernel 0: linear in fc1 (m.py:5) 20 us]"]


def test_budget_files_and_markers_take_modules_and_ops_total_and_refuse_bad_limits(tmp_path: Path):
    path = tmp_path / "qemu.toml"
    path.write_text('[user]\ntotal_us = 500000\n[user.modules]\n"conv2" = 50000\n'
                    f'[user.ops_total]\n"{CONV}" = 380000\n')
    budget = load_file_budget(path, "user")
    assert (budget.modules, budget.ops_total) == ({"conv2": 50000}, {CONV: 380000})
    marker = budget_from_mapping({"modules": {"conv2": 250000, "conv1": 1}}, "marker")
    merged = merge_budgets(budget, marker)
    assert merged.modules == {"conv2": 250000, "conv1": 1} and merged.ops_total == {CONV: 380000}
    assert [v.what for v in check_budget(TWO_CONVS, merged)] == [
        f"ops_total '{CONV}' (sum of its events)", "module 'conv1' (sum of its events)"]
    for bad, said in (({"modules": {"conv2": -1}}, "modules['conv2'] must be >= 0"),
                      ({"ops_total": {CONV: "fast"}}, f"ops_total['{CONV}'] must be a finite number"),
                      ({"modules": ["conv2"]}, "modules must be a table of limits")):
        with pytest.raises(BoardConfigError, match=__import__("re").escape(said)):
            budget_from_mapping(bad, "marker")


def test_the_gate_names_the_slower_layer_with_its_number_and_line():
    from hil.regress.compare import compare_profiles, format_comparison
    from hil.regress.gate import decide

    now = copy.deepcopy(TWO_CONVS)
    now["events"][3]["times_us"] = [254_627.5] * 3  # conv2 25% slower: 203,702 x 1.25
    decision = decide(compare_profiles(TWO_CONVS, now))
    assert decision.failed
    assert decision.reason.startswith("regression: 1 event(s) slower, first native_call_convolution.out #2 in conv2 "
                                      "(models.py:13) +25.0%")
    assert "native_call_convolution.out #2 in conv2 (models.py:13)" in format_comparison(compare_profiles(TWO_CONVS, now))


def test_junit_names_the_slowest_events_layer_and_line():
    from hil.report.figures import junit_properties

    props = dict(junit_properties(TWO_CONVS))
    # slowest first: conv2 (203,702 us), conv1 (200,000 us), addmm (5,000 us)
    assert [props[f"hil.user.top{n}.name"] for n in (1, 2, 3)] == [
        "native_call_convolution.out_#2", "native_call_convolution.out", "native_call_addmm.out"]
    assert [props[f"hil.user.top{n}.module"] for n in (1, 2, 3)] == ["conv2", "conv1", "head.1"]
    assert props["hil.user.top1.source"] == "models.py:13"


def test_the_table_and_the_gate_give_the_same_label():
    from hil.cli.table import format_table
    from hil.regress.identity import event_labels

    lines = format_table(TWO_CONVS).splitlines()
    # widths 30, 15, 12, 12 (right), 7 (right), then the layer; shares of 420,000 us: 47.6%, 0.2%, 48.5%
    assert lines[1:7] == [
        "event                         kind           op types         p50 us  share module (line)",
        "----------------------------- -------------- ----------- ----------- ------ ------------------------",
        "Method::execute               method                      420000.000 100.0%",
        "native_call_convolution.out   cpu_op         convolution  200000.000  47.6% conv1 (models.py:12)",
        "native_call_relu.out          cpu_op         relu           1000.000   0.2% (models.py:12)",
        "native_call_convolution.o~ #2 cpu_op         convolution  203702.000  48.5% conv2 (models.py:13)",
    ]
    labels = event_labels(TWO_CONVS["events"])
    assert labels[3].text == "native_call_convolution.out #2 in conv2 (models.py:13)"
