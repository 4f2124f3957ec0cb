"""Budgets from a marker-style mapping and from budgets/<board>.toml: pass, fail, and what the failure says."""

from __future__ import annotations

import pytest

from hil.base.errors import BoardConfigError
from hil.regress.budgets import (budget_from_mapping, check_budget, format_violations, load_file_budget,
                                 memory_footprint, merge_budgets)
from test_regress_synth import synth_profile


@pytest.fixture
def profile():
    return synth_profile(seed=3)


def test_limits_above_the_measurement_pass(profile):
    total = profile["totals_us"]["method_execute"]
    budget = budget_from_mapping({"total_us": total * 1.01, "npu_fraction_min": profile["npu_fraction"] * 0.99,
                                  "ops": {"aten.convolution.default": 10_000, "0": 1_000},
                                  "memory_bytes": memory_footprint(profile["memory"])}, "test")
    assert check_budget(profile, budget) == []


def test_a_broken_budget_names_measured_value_limit_and_artifacts(profile, tmp_path):
    total = profile["totals_us"]["method_execute"]
    kernel0 = profile["events"][3]
    assert kernel0["name"] == "0" and kernel0["kind"] == "npu_kernel"
    budget = budget_from_mapping({"total_us": total * 0.9, "ops": {"0": kernel0["p50_us"] * 0.5}}, "@hil_budget")
    violations = check_budget(profile, budget)
    assert [v.what.split(": ")[0] for v in violations] == ["total latency (Method::execute p50)", "op '0' (each event)"]
    text = format_violations(violations, profile, budget, tmp_path / "run")
    assert f"measured {total:.6g} us" in text and f"limit (max) {total * 0.9:.6g} us" in text
    assert "call 0 / kernel 0: convolution, relu" in text and "aten.convolution.default, aten.relu.default" in text
    assert f"artifacts: {tmp_path / 'run'}" in text and "'synthnet' on board 'qemu'" in text


def test_npu_fraction_memory_and_unknown_op_fail(profile):
    used = memory_footprint(profile["memory"])
    assert used == 4037 + 41262
    budget = budget_from_mapping({"npu_fraction_min": 0.99, "memory_bytes": used - 1, "ops": {"aten.nonexistent": 1},
                                  "memory": {"model_size_bytes": 1000}}, "test")
    whats = [v.what for v in check_budget(profile, budget)]
    assert whats == ["NPU fraction (min)", "op 'aten.nonexistent' (each event)", "memory (allocators used)", "memory 'model_size_bytes'"]


def test_op_type_limit_applies_to_every_matching_event(profile):
    convs = [e for e in profile["events"] if "aten.convolution.default" in e["op_types"]]
    assert len(convs) == 5  # three NPU kernels, two CPU fallbacks
    fastest = min(e["p50_us"] for e in convs)
    violations = check_budget(profile, budget_from_mapping({"ops": {"aten.convolution.default": fastest + 1e-6}}, "t"))
    assert len(violations) == len(convs) - 1


def test_file_budgets_are_keyed_by_model_and_the_marker_wins(tmp_path, profile):
    path = tmp_path / "qemu.toml"
    path.write_text('[synthnet]\ntotal_us = 1\nnpu_fraction_min = 0.1\n[synthnet.ops]\n"0" = 5000\n[other]\ntotal_us = 2\n')
    file_budget = load_file_budget(path, "synthnet")
    assert file_budget.total_us == 1 and file_budget.ops == {"0": 5000} and str(path) in file_budget.source
    assert load_file_budget(path, "absent") is None and load_file_budget(tmp_path / "none.toml", "synthnet") is None
    merged = merge_budgets(file_budget, budget_from_mapping({"total_us": 1e9}, "marker"))
    assert merged.total_us == 1e9 and merged.npu_fraction_min == 0.1 and merged.ops == {"0": 5000}
    assert check_budget(profile, merged) == []
    assert [v.what for v in check_budget(profile, file_budget)] == ["total latency (Method::execute p50)"]


def test_bad_budgets_are_refused_with_their_source(tmp_path):
    with pytest.raises(BoardConfigError, match=r"budget from m: unknown key\(s\) \['total'\]"):
        budget_from_mapping({"total": 3}, "m")
    with pytest.raises(BoardConfigError, match=r"ops\['0'\] must be a finite number, got 'fast'"):
        budget_from_mapping({"ops": {"0": "fast"}}, "m")
    bad = tmp_path / "b.toml"
    bad.write_text("[x\n")
    with pytest.raises(BoardConfigError, match=str(bad)):
        load_file_budget(bad, "x")


def test_the_example_budget_file_parses():
    from hil.base.paths import REPO_ROOT

    budget = load_file_budget(REPO_ROOT / "budgets" / "qemu.toml", "cifar10")
    assert budget is not None and budget.total_us and budget.ops


def test_a_memory_limit_with_nothing_measured_fails_and_an_exact_fit_passes(profile):
    used = memory_footprint(profile["memory"])
    assert check_budget(profile, budget_from_mapping({"memory_bytes": used}, "t")) == []
    (violation,) = check_budget({**profile, "memory": {}}, budget_from_mapping({"memory_bytes": 10**9}, "t"))
    assert violation.measured is None and "nothing measured, limit (max) 1e+09 B" in violation.describe()
    assert memory_footprint({"planned_buffers": {"0": 100, "1": 28}}) == 128 and memory_footprint({}) is None


def test_an_op_limit_by_name_never_matches_the_profiling_dump(profile):
    dump = next(e for e in profile["events"] if e["kind"] == "profiling_dump")
    (violation,) = check_budget(profile, budget_from_mapping({"ops": {dump["name"]: 1e9}}, "t"))
    assert violation.detail.startswith("no event matches it; ")
    kernel = next(e for e in profile["events"] if e["kind"] == "npu_kernel")
    assert check_budget(profile, budget_from_mapping({"ops": {kernel["name"]: kernel["p50_us"]}}, "t")) == []


def test_violation_text_says_value_limit_sense_and_unit():
    from hil.regress.budgets import Violation

    assert Violation("total latency", 12.5, 10, "us").describe() == "total latency: measured 12.5 us, limit (max) 10 us"
    assert Violation("NPU fraction (min)", 0.25, 0.5, "").describe() == "NPU fraction (min): measured 0.25, limit (min) 0.5"
    assert Violation("memory", None, 64, "B", "x").describe() == "memory: nothing measured, limit (max) 64 B [x]"


def test_merged_budgets_take_each_key_from_the_override_first():
    base = budget_from_mapping({"total_us": 1, "npu_fraction_min": 0.1, "memory_bytes": 5, "ops": {"a": 1, "b": 2},
                                "memory": {"m": 1}}, "file")
    empty = budget_from_mapping({}, "marker")
    assert merge_budgets(base, None) is base and merge_budgets(None, empty) is empty and merge_budgets(None, None) is None
    kept = merge_budgets(base, empty)
    assert (kept.total_us, kept.npu_fraction_min, kept.memory_bytes, kept.ops, kept.memory, kept.source) == (
        1, 0.1, 5, {"a": 1, "b": 2}, {"m": 1}, "file + marker")
    over = merge_budgets(base, budget_from_mapping({"total_us": 9, "npu_fraction_min": 0.9, "memory_bytes": 7,
                                                    "ops": {"b": 3}, "memory": {"m": 2, "n": 3}}, "marker"))
    assert (over.total_us, over.npu_fraction_min, over.memory_bytes, over.ops, over.memory) == (
        9, 0.9, 7, {"a": 1, "b": 3}, {"m": 2, "n": 3})
    assert empty.empty and not base.empty and not budget_from_mapping({"ops": {"a": 1}}, "m").empty


HAND = {
    "model": "m", "board": "b", "totals_us": {"method_execute": 100.0}, "npu_fraction": 0.5,
    "events": [
        {"name": "0", "kind": "npu_kernel", "op_types": ["aten.convolution.default"], "times_us": [40.0, 40.0, 41.0]},
        {"name": "1", "kind": "profiling_dump", "op_types": [], "times_us": [5.0]},
    ],
    "memory": {"allocators": {"a": {"used": 10}, "b": {"total": 99}}, "model_size_bytes": 300},
}


def test_limits_met_exactly_pass():
    budget = budget_from_mapping({"total_us": 100, "npu_fraction_min": 0.5, "ops": {"0": 40}, "memory_bytes": 10,
                                  "memory": {"model_size_bytes": 300}}, "t")
    assert check_budget(HAND, budget) == []


def test_every_broken_limit_is_described_with_its_numbers():
    budget = budget_from_mapping({"total_us": 99, "npu_fraction_min": 0.6, "memory_bytes": 9,
                                  "ops": {"0": 39, "aten.convolution.default": 39, "nope": 1},
                                  "memory": {"model_size_bytes": 299, "absent": 1}}, "t")
    assert [v.describe() for v in check_budget(HAND, budget)] == [
        "total latency (Method::execute p50): measured 100 us, limit (max) 99 us",
        "NPU fraction (min): measured 0.5, limit (min) 0.6",
        "op '0' (each event): call 0 / kernel 0: convolution: measured 40 us, limit (max) 39 us "
        "[npu_kernel, op types aten.convolution.default]",
        "op 'aten.convolution.default' (each event): call 0 / kernel 0: convolution: measured 40 us, limit (max) 39 us "
        "[npu_kernel, op types aten.convolution.default]",
        "op 'nope' (each event): nothing measured, limit (max) 1 us "
        "[no event matches it; names and op types measured: 0, aten.convolution.default]",
        "memory (allocators used): measured 10 B, limit (max) 9 B",
        "memory 'model_size_bytes': measured 300 B, limit (max) 299 B",
        "memory 'absent': nothing measured, limit (max) 1 B",
    ]
    bare = {"events": [], "memory": {}}
    assert [v.describe() for v in check_budget(bare, budget_from_mapping({"total_us": 1, "npu_fraction_min": 0.1}, "t"))] == [
        "total latency (Method::execute p50): nothing measured, limit (max) 1 us",
        "NPU fraction (min): nothing measured, limit (min) 0.1",
    ]
    text = format_violations(check_budget(bare, budget_from_mapping({"total_us": 1}, "here")), bare,
                             budget_from_mapping({"total_us": 1}, "here"), None)
    assert text == ("budget exceeded for model 'None' on board 'None' (budget from here):\n"
                    "  - total latency (Method::execute p50): nothing measured, limit (max) 1 us\n"
                    "  artifacts: (unknown)")


def test_odd_inputs_are_violations_not_crashes():
    (violation,) = check_budget({}, budget_from_mapping({"ops": {"a": 1}}, "t"))
    assert violation.detail == "no event matches it; names and op types measured: none"
    (violation,) = check_budget({"memory": {"model_size_bytes": "big"}},
                                budget_from_mapping({"memory": {"model_size_bytes": 1}}, "t"))
    assert violation.measured is None
    assert memory_footprint({"planned_buffers": [100, 28]}) == 128


def test_a_budget_file_with_a_bom_reads_and_a_model_key_that_is_no_table_is_named(tmp_path):
    bommed = tmp_path / "bom.toml"
    bommed.write_bytes(b"\xef\xbb\xbf[synthnet]\ntotal_us = 250.0\n")  # what Windows Notepad saves
    budget = load_file_budget(bommed, "synthnet")
    assert budget is not None and budget.total_us == 250.0
    flat = tmp_path / "flat.toml"
    flat.write_text("synthnet = 3\n")
    with pytest.raises(BoardConfigError) as refused:
        load_file_budget(flat, "synthnet")
    assert str(refused.value) == f"budget file {flat}: [synthnet] must be a table"


def test_output_limits_are_judged_on_the_numerics_section_against_eager(profile):
    numerics = {"status": "computed", "vs_eager": {"snr_db": 30.0, "cosine": 0.99912, "max_abs_error": 0.25},
                "vs_runtime": {"snr_db": 200.0, "max_abs_error": 0.0}}
    checked = {**profile, "numerics": numerics}
    both = budget_from_mapping({"snr_db_min": 40, "max_abs_error": 0.1}, "marker")
    assert [v.describe() for v in check_budget(checked, both)] == [
        "output SNR vs eager PyTorch (min): measured 30 dB, limit (min) 40 dB [worst output, cosine 0.99912]",
        "output max abs error vs eager PyTorch: measured 0.25, limit (max) 0.1 [worst output]"]
    assert check_budget(checked, budget_from_mapping({"snr_db_min": 29.5, "max_abs_error": 0.25}, "m")) == []
    (snr_only,) = check_budget(checked, budget_from_mapping({"snr_db_min": 40}, "m"))
    assert snr_only.what == "output SNR vs eager PyTorch (min)"
    (abs_only,) = check_budget(checked, budget_from_mapping({"max_abs_error": 0.1}, "m"))
    assert abs_only.measured == 0.25
