"""The printed table, line for line, for a hand-made profile: two methods, an NPU kernel, another
delegate's operator, ticks as the unit, a long name cut, notes and a wrapped warning."""

from __future__ import annotations

from hil.cli.table import format_table


def _event(name, kind, p50, ops=(), method="forward"):
    return {"name": name, "kind": kind, "method": method, "op_types": list(ops), "p50_us": p50}


PROFILE = {
    "model": "m", "board": "b", "simulated": True, "iterations": 2, "time_unit": "ticks",
    "events": [
        _event("Method::execute", "method", 200.0),
        _event("native_call_a_very_long_operator_name_x.out", "cpu_op", 50.0,
               ["aten.convolution.default", "aten.convolution.default", "aten.relu.default"]),
        _event("DELEGATE_CALL", "delegate_call", 100.0, ["aten.addmm.default"]),
        _event("0", "npu_kernel", 80.0, ["aten.addmm.default"]),
        _event("Conv #1", "delegate_op", 5.0),
        _event("Method::execute", "method", 40.0, method="other"),
        _event("native_call_add.out", "cpu_op", 10.0, ["add"], method="other"),
    ],
    "totals_us": {"method_execute": 200.0, "npu_kernels": 80.0, "unattributed": 12.5},
    "npu_fraction": 0.4, "cpu_fallback_ops": ["aten.convolution.default", "foo"],
    "methods": {"forward": {}, "other": {}},
    "console": {"inference_times_us": [200, 201.5]},
    "notes": ["n"], "warnings": ["w " * 60],
}


def test_the_table_line_for_line():
    assert format_table(PROFILE).splitlines() == [
        "m on b (simulated): 2 iteration(s), times in ticks",
        "event                         kind           op types                        p50 ticks  share",
        "----------------------------- -------------- ---------------------------- ------------ ------",
        "[method forward]",
        "Method::execute               method                                           200.000 100.0%",
        "native_call_a_very_long_oper~ cpu_op         convolution,relu                   50.000  25.0%",
        "DELEGATE_CALL                 delegate_call  addmm                             100.000  50.0%",
        "  0                           npu_kernel     addmm                              80.000  40.0%",
        "  Conv #1                     delegate_op                                        5.000   2.5%",
        "[method other]",
        "Method::execute               method                                            40.000 100.0%",
        "native_call_add.out           cpu_op         add                                10.000  25.0%",
        "",
        "totals of method forward:",
        "Method::execute                            200.000 ticks  100.0%",
        "NPU kernels                                 80.000 ticks   40.0%",
        "unattributed                                12.500 ticks    6.2%",
        "NPU fraction                                 0.400",
        "CPU fallback ops: convolution, foo",
        "console inference time: 200, 201.5 us",
        "note: n",
        "warning: w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w",
        "  w w w w w w w w w w w w w w",
    ]


def test_one_method_in_us_without_a_fraction_or_fallbacks():
    profile = {"model": "m", "board": "b", "iterations": 1, "events": [_event("Method::execute", "method", 0.0)],
               "totals_us": {"method_execute": 0.0}, "npu_fraction": None}
    assert format_table(profile).splitlines() == [
        "m on b: 1 iteration(s), times in us",
        "event                         kind           op types                           p50 us  share",
        "----------------------------- -------------- ---------------------------- ------------ ------",
        "Method::execute               method                                             0.000",
        "",
        "Method::execute                              0.000 us",
        "NPU fraction                                   n/a",
        "CPU fallback ops: none",
    ]


def test_long_lists_of_mismatches_name_eight_and_count_the_rest():
    from hil.analysis.pairing import _named

    assert _named([f"e{i}" for i in range(10)]) == "e0; e1; e2; e3; e4; e5; e6; e7 and 2 more"
    assert _named([f"e{i}" for i in range(8)]) == "e0; e1; e2; e3; e4; e5; e6; e7"


def test_a_profile_written_before_methods_and_units_existed():
    old = {"model": "m", "board": "b", "iterations": 1,
           "events": [{"name": "Method::execute", "kind": "method", "p50_us": 0.5},
                      {"name": "x" * 30, "kind": "cpu_op", "p50_us": 0.25}, {"name": "y", "kind": "cpu_op"}],
           "warnings": ["a" * 92]}
    assert format_table(old).splitlines()[3:6] == [
        "Method::execute               method                                             0.500 100.0%",
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxx~ cpu_op                                             0.250  50.0%",
        "y                             cpu_op                                             0.000",
    ]
    assert format_table(old).splitlines()[-2:] == ["warning:", "  " + "a" * 92]  # 101 characters do not fit
    assert format_table({"model": "m", "board": "b"}).splitlines()[-2:] == [
        "NPU fraction                                   n/a", "CPU fallback ops: none"]


def test_a_share_over_the_whole_says_why_and_totals_with_nothing_behind_them_are_left_out():
    profile = {
        "model": "m", "board": "b", "iterations": 1, "time_unit": "us",
        "events": [_event("Method::execute", "method", 100.0), _event("DELEGATE_CALL", "delegate_call", 90.0),
                   _event("0", "npu_kernel", 60.0, ["aten.convolution.default"]), _event("1", "profiling_dump", 116.0)],
        "totals_us": {"method_execute": 100.0, "npu_kernels": 60.0, "delegate_ops": 0.0, "cpu_ops": 0.0,
                      "cpu_call_overhead": 0.0, "delegate_calls": 90.0, "delegate_overhead": 0.0,
                      "profiling_dump": 116.0, "unattributed": 0.0},
        "npu_fraction": 0.6,
    }
    lines = format_table(profile).splitlines()
    assert lines[3:7] == [
        "Method::execute               method                                           100.000 100.0%",
        "DELEGATE_CALL                 delegate_call                                     90.000  90.0%",
        "  0                           npu_kernel     convolution                        60.000  60.0%",
        "  1                           profiling_dump over 100%: overlaps kernels       116.000 116.0%",
    ]
    assert lines[8:15] == [
        "Method::execute                            100.000 us     100.0%",
        "NPU kernels                                 60.000 us      60.0%",
        "delegate calls                              90.000 us      90.0%",
        "delegate overhead                            0.000 us       0.0%",  # a call with no overhead: said
        "profiling dump (not in other totals)       116.000 us     116.0%  over 100%: overlaps the kernels",
        "unattributed                                 0.000 us       0.0%",
        "NPU fraction                                 0.600",
    ]
