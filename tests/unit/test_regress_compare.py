"""Baseline comparison on seeded synthetic runs: real slowdowns caught, noise never reported."""

from __future__ import annotations

import pytest

from hil.regress.compare import compare_profiles, format_comparison, judge, parse_tolerance
from test_regress_synth import KERNEL_NAMES, KERNEL_OPS, synth_profile


@pytest.mark.parametrize("kernel", ["1", "3"])
def test_a_ten_percent_slower_npu_kernel_is_a_regression_naming_it_and_its_op_types(kernel):
    base = synth_profile(seed=100)
    now = synth_profile(seed=200, slow={("npu_kernel", kernel, 0): 1.10})
    cmp = compare_profiles(base, now)
    kernels = [d for d in cmp.regressions if d.kind == "npu_kernel"]
    assert [d.name for d in kernels] == [KERNEL_NAMES[int(kernel)]]
    assert kernels[0].op_types == ", ".join(KERNEL_OPS[int(kernel)])
    assert kernels[0].change_pct == pytest.approx(10, abs=2.5)
    table = format_comparison(cmp)
    assert KERNEL_NAMES[int(kernel)] in table and KERNEL_OPS[int(kernel)][0] in table and "change %" in table


def test_one_percent_jitter_gives_no_false_alarm_in_100_seeded_comparisons():
    alarms = []
    for seed in range(100):
        cmp = compare_profiles(synth_profile(seed=2 * seed, iterations=5), synth_profile(seed=2 * seed + 1, iterations=5))
        alarms += [(seed, d.key) for d in cmp.regressions + cmp.improvements]
    assert alarms == []


def test_a_slower_cpu_fallback_op_is_caught_by_occurrence():
    base = synth_profile(seed=1)
    now = synth_profile(seed=2, slow={("cpu_op", "native_call_convolution.out", 1): 1.10})
    cmp = compare_profiles(base, now)
    assert [d.key for d in cmp.regressions if d.kind == "cpu_op"] == ["cpu_op:native_call_convolution.out#1"]
    assert cmp.regressions[0].op_types == "aten.convolution.default"


def test_improvements_are_reported_and_do_not_fail():
    cmp = compare_profiles(synth_profile(seed=1), synth_profile(seed=2, slow={("npu_kernel", "0", 0): 0.8}))
    assert not cmp.has_regression
    assert [d.name for d in cmp.improvements] == ["call 0 / kernel 0: convolution, relu"]
    assert "improvements" in format_comparison(cmp)


def test_on_a_noisy_board_a_change_within_the_noise_is_not_a_regression():
    base = synth_profile(seed=1, jitter=0.06)
    now = synth_profile(seed=2, jitter=0.06, slow={("npu_kernel", "2", 0): 1.08})
    assert not [d for d in compare_profiles(base, now).regressions if d.kind == "npu_kernel"]
    # the same 8% on a quiet board is beyond both tolerance and noise
    quiet = compare_profiles(synth_profile(seed=1, jitter=0.002), synth_profile(seed=2, jitter=0.002, slow={("npu_kernel", "2", 0): 1.08}))
    assert [d.name for d in quiet.regressions if d.kind == "npu_kernel"] == ["call 0 / kernel 2: max_pool2d"]


def test_rule_needs_both_tolerance_and_noise():
    assert judge(100, 0, 104, 0, tolerance=0.05, noise_k=3)[0] == "unchanged"  # under tolerance
    assert judge(100, 0, 106, 0, tolerance=0.05, noise_k=3)[0] == "regression"
    verdict, noise = judge(100, 2, 110, 2, tolerance=0.05, noise_k=3)  # noise = 3*1.4826*2*sqrt2 = 12.6
    assert verdict == "unchanged" and noise == pytest.approx(12.58, abs=0.01)
    assert judge(100, 0, 106, 0, tolerance=0.05, noise_k=3, min_delta_us=10)[0] == "unchanged"


def test_changed_program_structure_is_noted_not_judged():
    base = synth_profile(seed=1)
    now = synth_profile(seed=2)
    now["events"] = [e for e in now["events"] if e["name"] != "native_call__softmax.out"]
    cmp = compare_profiles(base, now)
    assert not cmp.has_regression
    assert [d.verdict for d in cmp.deltas if d.name == "native_call__softmax.out"] == ["removed"]
    assert any("1 removed" in n for n in cmp.notes)


def test_tolerance_is_read_as_people_write_it():
    assert parse_tolerance("5") == parse_tolerance("5%") == parse_tolerance("0.05") == pytest.approx(0.05)
