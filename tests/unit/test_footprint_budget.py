"""`stack_bytes_max` and the profile's `stack` / `code_size` sections: the budget key is checked like every
limit (finite, >= 0, refused naming the key: exit 2), judged against `stack.used_bytes`, and a section
read back from disk with a figure of the wrong kind is refused naming the field.

Truths: the sections and the messages are written out by hand, as hil.target.stack_mark and
hil.analysis.code_size write them.
"""

from __future__ import annotations

import math

import pytest
from test_validate import PROFILE, _edited

from hil.base.errors import BoardConfigError, FileContentError
from hil.cli.main import exit_code_for
from hil.cli.table import format_table
from hil.records.validate.profile import check_profile
from hil.regress.budgets import budget_from_mapping, check_budget, check_budget_file, merge_budgets

STACK = {"used_bytes": 2328, "size_bytes": 32768, "free_bytes": 30440, "limit": "0x383f8000", "top": "0x38400000",
         "overflowed": False, "method": "painted with 0xc5ac5ac5, read at the ETDump breakpoint"}
CODE_SIZE = {"image": "hil_qemu_runtime.elf", "total_bytes": 177140, "functions_bytes": 115108,
             "kernels_bytes": 37128, "runtime_bytes": 140012, "kernels": {"op_addmm": 32268, "op_relu": 4860},
             "operators": {"native_call_addmm.out": {"op_types": ["aten.addmm.default"], "kernel": "op_addmm",
                                                     "bytes": 32268},
                           "aten.linear.default": {"op_types": ["aten.linear.default"], "kernel": None, "bytes": None,
                                                   "note": "not in this image: delegated"}}}
WITH_FOOTPRINT = {**PROFILE, "stack": STACK, "code_size": CODE_SIZE}


@pytest.mark.parametrize(("value", "says"), [
    (-1, "stack_bytes_max must be >= 0 (a duration or size), got -1"),
    (math.nan, "stack_bytes_max must be a finite number, got nan"),
    ("16k", "stack_bytes_max must be a finite number, got '16k'"),
])
def test_a_bad_stack_limit_is_refused_naming_the_key(value, says, tmp_path):
    with pytest.raises(BoardConfigError) as caught:
        budget_from_mapping({"stack_bytes_max": value}, "m")
    assert str(caught.value) == f"budget from m: {says}"
    assert exit_code_for(caught.value) == 2
    path = tmp_path / "qemu.toml"
    path.write_text(f"[cifar10]\nstack_bytes_max = {'-1' if value == -1 else 'nan'}\n")
    with pytest.raises(BoardConfigError, match="stack_bytes_max must be"):
        check_budget_file(path)


@pytest.mark.parametrize(("limit", "broken"), [(2328, False), (4096, False), (2327, True), (0, True)])
def test_the_stack_limit_is_judged_against_the_high_water_mark(limit, broken):
    violations = check_budget(WITH_FOOTPRINT, budget_from_mapping({"stack_bytes_max": limit}, "m"))
    assert bool(violations) is broken
    if broken:
        assert violations[0].describe() == f"stack (high-water mark): measured 2328 B, limit (max) {limit} B"


def test_a_run_without_a_measured_stack_breaks_the_limit():
    unmeasured = {**PROFILE, "stack": {**STACK, "used_bytes": None, "note": "the image has no __StackLimit"}}
    for profile in (PROFILE, unmeasured):
        (violation,) = check_budget(profile, budget_from_mapping({"stack_bytes_max": 1 << 20}, "m"))
        assert violation.measured is None and "nothing measured" in violation.describe()


def test_the_marker_stack_limit_wins_over_the_files():
    merged = merge_budgets(budget_from_mapping({"stack_bytes_max": 8192, "total_us": 5}, "file"),
                           budget_from_mapping({"stack_bytes_max": 4096}, "marker"))
    assert merged is not None and (merged.stack_bytes_max, merged.total_us) == (4096, 5)


def test_sections_as_the_harness_writes_them_are_accepted_and_printed():
    assert check_profile(WITH_FOOTPRINT, "p.json") is WITH_FOOTPRINT
    table = format_table(WITH_FOOTPRINT)
    assert "stack high-water mark: 2328 of 32768 B (7.1%)" in table
    assert "flash (code, constants): 177140 B: operator kernels 37128 B, runtime 140012 B" in table


@pytest.mark.parametrize(("path", "value", "says"), [
    (("stack",), [], "stack is a list, not an object"),
    (("stack", "used_bytes"), "2 KiB", "stack.used_bytes is '2 KiB', not a whole number >= 0"),
    (("stack", "used_bytes"), -4, "stack.used_bytes is -4, not a whole number >= 0"),
    (("stack", "overflowed"), "no", "stack.overflowed is 'no', not true or false"),
    (("code_size", "total_bytes"), 1.5, "code_size.total_bytes is 1.5, not a whole number >= 0"),
    (("code_size", "kernels", "op_addmm"), None, "code_size.kernels.op_addmm is null, not a whole number >= 0"),
    (("code_size", "operators", "native_call_addmm.out", "bytes"), "32k",
     "code_size.operators.native_call_addmm.out.bytes is '32k', not a whole number >= 0"),
])
def test_a_footprint_field_of_the_wrong_kind_is_named(path, value, says):
    with pytest.raises(FileContentError) as refused:
        check_profile(_edited(path, value, WITH_FOOTPRINT), "run/profile.json")
    assert str(refused.value).startswith(f"run/profile.json: {says}")
    assert exit_code_for(refused.value) == 2
