"""What a person reads and a machine parses: the comparison table and JSON, tolerances as people write
them, and the within-run rule at its boundaries, all against text and numbers written out by hand."""

from __future__ import annotations

import pytest

from hil.records.console import AllocatorUsage, parse_console
from hil.regress.compare import Comparison, EventDelta, comparison_to_dict, format_comparison, judge, parse_tolerance

DELTAS = [
    EventDelta("npu_kernel:3#0", "npu_kernel", "npu kernel 3", "aten.convolution.default", 100.0, 112.0, 3.0,
               "regression", 0.0909),
    EventDelta("cpu_op:native_call_add.out#0", "cpu_op", "native_call_add.out", "-", 50.0, None, 0.0, "removed"),
    EventDelta("cpu_op:x#0", "cpu_op", "x", "-", 200.0, 150.0, 1.25, "improvement"),
    EventDelta("cpu_op:new#0", "cpu_op", "new op", "-", 0.0, 5.0, 0.0, "regression"),
]


def test_the_comparison_table_reads_as_written():
    text = format_comparison(Comparison(DELTAS, 0.05, 3.0, 0.0, ["a note"]))
    assert text.splitlines() == [
        "2 regression(s), 1 improvement(s) among 4 events (tolerance 5%, noise 3 sigma)",
        "a note",
        "",
        "worst regressions (of 2):",
        "event         kind        op types                  baseline us  now us  change %  added us  noise us       p",
        "------------  ----------  ------------------------  -----------  ------  --------  --------  --------  ------",
        "npu kernel 3  npu_kernel  aten.convolution.default        100.0   112.0     +12.0     +12.0       3.0  0.0909",
        "new op        cpu_op      -                                 0.0     5.0         -      +5.0       0.0       -",
        "",
        "improvements (of 1):",
        "event  kind    op types  baseline us  now us  change %  added us  noise us  p",
        "-----  ------  --------  -----------  ------  --------  --------  --------  -",
        "x      cpu_op  -               200.0   150.0     -25.0     -50.0       1.2  -",
    ]
    assert format_comparison(Comparison(DELTAS[1:2], 0.1, 2.0), limit=1).splitlines() == [
        "0 regression(s), 0 improvement(s) among 1 events (tolerance 10%, noise 2 sigma)"]


def test_the_json_form_is_every_field_of_every_event():
    data = comparison_to_dict(Comparison(DELTAS[:2], 0.05, 3.0, 0.0, ["n"], baseline_runs=4, now_runs=2))
    assert data == {
        "tolerance": 0.05, "noise_k": 3.0, "has_regression": True, "numerics_drop": None, "disturbed": False, "baseline_runs": 4,
        "now_runs": 2, "notes": ["n"], "alpha": 0.1, "best_p_value": pytest.approx(1 / 15), "runs_needed": 0,
        "events": [
            {"key": "npu_kernel:3#0", "kind": "npu_kernel", "name": "npu kernel 3", "op_types": "aten.convolution.default",
             "baseline_us": 100.0, "now_us": 112.0, "change_pct": 12.0, "noise_us": 3.0, "verdict": "regression",
             "p_value": 0.0909, "rule": None, "runs_needed": 0},
            {"key": "cpu_op:native_call_add.out#0", "kind": "cpu_op", "name": "native_call_add.out", "op_types": "-",
             "baseline_us": 50.0, "now_us": None, "change_pct": None, "noise_us": 0.0, "verdict": "removed",
             "p_value": None, "rule": None, "runs_needed": 0},
        ],
    }
    assert DELTAS[1].delta_us == 0.0 and DELTAS[2].delta_us == -50.0


def test_tolerances_as_people_write_them():
    assert parse_tolerance("1") == pytest.approx(0.01)
    assert parse_tolerance("0.5%") == pytest.approx(0.005) and parse_tolerance("0.5") == 0.5
    assert parse_tolerance("12%") == pytest.approx(0.12)


def test_the_within_run_rule_at_its_boundaries():
    assert judge(100, 0, 100.5, 0, tolerance=0, noise_k=0)[0] == "regression"
    assert judge(100, 0, 105, 0, tolerance=0.05, noise_k=0)[0] == "unchanged"  # exactly at the limit
    assert judge(100, 0, 95, 0, tolerance=0.05, noise_k=0)[0] == "unchanged"
    assert judge(100, 0, 90, 0, tolerance=0.05, noise_k=0) == ("improvement", 0.0)
    verdict, noise = judge(100, 1, 100, 0, tolerance=0, noise_k=2)
    assert (verdict, noise) == ("unchanged", pytest.approx(2 * 1.4826))


def test_metadata_text_is_read_as_latin_1():
    from hil.records.events import metadata_bytes

    assert metadata_bytes("\xff") == b"\xff" and metadata_bytes("\u0100") == b"?"


def test_console_allocators_and_planned_buffers():
    facts = parse_console("pool Addr: 0x10 - 0x30\r\nSetting up planned buffer 0, size 128.\r\n")
    assert facts.allocators == {"pool": AllocatorUsage(0, 0, 16, 48)}
    assert facts.to_dict()["planned_buffers"] == {"0": 128} and "lines" not in facts.to_dict()
    assert facts.lines == ["pool Addr: 0x10 - 0x30", "Setting up planned buffer 0, size 128.", ""]
    assert parse_console("Core/NPU Frequency: 324.5 MHz\n").clock_mhz == 324.5
    assert isinstance(parse_console("Core/NPU Frequency: 324 MHz\n").clock_mhz, int)


def test_the_within_run_tolerance_is_a_share_of_the_baseline():
    assert judge(100, 0, 105.2, 0, tolerance=0.05, noise_k=0)[0] == "regression"  # 5% of 105.2 would be 5.26
