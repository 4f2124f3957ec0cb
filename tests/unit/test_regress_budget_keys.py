"""The output limits of a budget (`snr_db_min`, `max_abs_error`) as written and as merged, and the
refusal of a limit that is not a number: each value written out by hand, read back field by field."""

from __future__ import annotations

import pytest

from hil.base.errors import BoardConfigError
from hil.regress.budgets import Budget, budget_from_mapping, merge_budgets


def _limits(budget: Budget) -> tuple[float | None, float | None]:
    """The two output limits of a budget, in the order a budget file lists them."""
    return budget.snr_db_min, budget.max_abs_error


def test_the_output_limits_of_a_mapping_land_in_their_own_fields():
    # 40 dB and 1e-3, the values of the module docstring's example, each in its field and not swapped.
    both = budget_from_mapping({"snr_db_min": 40, "max_abs_error": 1e-3}, "budgets/qemu.toml [cifar10]")
    assert _limits(both) == (40, 1e-3)
    assert _limits(budget_from_mapping({"snr_db_min": 35.5}, "marker")) == (35.5, None)
    assert _limits(budget_from_mapping({"max_abs_error": 0.25}, "marker")) == (None, 0.25)
    assert not both.empty and budget_from_mapping({}, "marker").empty


def test_an_output_limit_that_is_not_a_number_is_refused_naming_key_value_and_source():
    with pytest.raises(BoardConfigError) as refused:
        budget_from_mapping({"snr_db_min": "loud"}, "budgets/rt700.toml [cifar10]")
    assert str(refused.value) == "budget from budgets/rt700.toml [cifar10]: snr_db_min must be a finite number, got 'loud'"
    with pytest.raises(BoardConfigError) as refused:
        budget_from_mapping({"total_us": [900]}, "@hil_budget")
    assert str(refused.value) == "budget from @hil_budget: total_us must be a finite number, got [900]"


@pytest.fixture
def file_budget() -> Budget:
    """What budgets/<board>.toml says for a model: both output limits set."""
    return budget_from_mapping({"total_us": 900, "snr_db_min": 40, "max_abs_error": 1e-3}, "file")


def test_a_marker_without_output_limits_keeps_the_files(file_budget: Budget):
    merged = merge_budgets(file_budget, budget_from_mapping({"total_us": 800}, "marker"))
    assert (merged.total_us, *_limits(merged), merged.source) == (800, 40, 1e-3, "file + marker")


def test_a_marker_output_limit_wins_over_the_files(file_budget: Budget):
    tighter = merge_budgets(file_budget, budget_from_mapping({"snr_db_min": 50, "max_abs_error": 1e-4}, "marker"))
    assert _limits(tighter) == (50, 1e-4)
    # one key from the marker, the other still from the file, key by key
    assert _limits(merge_budgets(file_budget, budget_from_mapping({"snr_db_min": 45}, "marker"))) == (45, 1e-3)
    assert _limits(merge_budgets(file_budget, budget_from_mapping({"max_abs_error": 0.5}, "marker"))) == (40, 0.5)


def test_an_output_limit_only_in_the_marker_is_added_to_a_file_without_one():
    merged = merge_budgets(budget_from_mapping({"total_us": 900}, "file"),
                           budget_from_mapping({"snr_db_min": 30, "max_abs_error": 0.01}, "marker"))
    assert (merged.total_us, *_limits(merged)) == (900, 30, 0.01)
