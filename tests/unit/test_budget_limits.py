"""Budget limits that no run can be judged against (NaN, infinity, a negative duration or size) are the
user's input, refused naming the key: by budget_from_mapping, and by pytest before any test runs."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hil.base.errors import BoardConfigError
from hil.regress.budgets import budget_from_mapping, budget_limit, check_budget_file

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("values", "says"), [
    ({"total_us": math.nan}, "total_us must be a finite number, got nan"),
    ({"snr_db_min": math.inf}, "snr_db_min must be a finite number, got inf"),
    ({"max_abs_error": -math.inf}, "max_abs_error must be a finite number, got -inf"),
    ({"total_us": -1}, "total_us must be >= 0 (a duration or size), got -1"),
    ({"memory_bytes": -4096}, "memory_bytes must be >= 0 (a duration or size), got -4096"),
    ({"max_abs_error": -1e-3}, "max_abs_error must be >= 0 (a duration or size), got -0.001"),
    ({"ops": {"aten.add.Tensor": -5}}, "ops['aten.add.Tensor'] must be >= 0 (a duration or size), got -5"),
    ({"memory": {"planned": math.nan}}, "memory['planned'] must be a finite number, got nan"),
    ({"npu_fraction_min": 1.5}, "npu_fraction_min must be a share between 0 and 1, got 1.5"),
    ({"total_us": True}, "total_us must be a finite number, got True"),
    ({"ops": [1, 2]}, "ops must be a table of limits, got [1, 2]"),
])
def test_a_limit_no_run_can_be_judged_against_is_refused_naming_the_key(values, says):
    with pytest.raises(BoardConfigError) as caught:
        budget_from_mapping(values, "m")
    assert str(caught.value) == f"budget from m: {says}"


def test_limits_at_the_edge_are_kept():
    budget = budget_from_mapping({"total_us": 0, "snr_db_min": -20, "npu_fraction_min": 1, "ops": {"0": 0.0}}, "m")
    assert (budget.total_us, budget.snr_db_min, budget.npu_fraction_min, budget.ops) == (0, -20, 1, {"0": 0.0})


def test_a_budget_file_is_checked_table_by_table(tmp_path):
    path = tmp_path / "qemu.toml"
    path.write_text("[cifar10]\ntotal_us = 900\n[mobilenet]\ntotal_us = nan\n")  # TOML spells NaN `nan`
    with pytest.raises(BoardConfigError) as caught:
        check_budget_file(path)
    assert str(caught.value) == f"budget from {path} [mobilenet]: total_us must be a finite number, got nan"


@pytest.mark.parametrize(("where", "says"), [
    ("marker", "budget from @hil_budget on test_x.py::test_x: total_us must be >= 0 (a duration or size), got -1"),
    ("file", "budget from {budgets} [cifar10]: total_us must be a finite number, got nan"),
])
def test_pytest_refuses_a_bad_budget_before_any_test_runs(tmp_path, where, says):
    """pytest's usage-error status (4, as for a bad --hil-* option), one line, and the test never ran."""
    mark = "@pytest.mark.hil_budget(total_us=-1)\n" if where == "marker" else ""
    (tmp_path / "test_x.py").write_text(f"import pytest\n\n{mark}def test_x():\n    open('ran', 'w').close()\n")
    budgets = tmp_path / "budgets.toml"
    budgets.write_text("[cifar10]\ntotal_us = nan\n" if where == "file" else "[cifar10]\ntotal_us = 900\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_x.py",
                           "--hil-budgets", str(budgets)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 4, done.stdout + done.stderr
    assert [line for line in done.stderr.splitlines() if line] == [f"ERROR: {says.format(budgets=budgets)}"]
    assert not (tmp_path / "ran").exists()


def test_one_limit_is_checked_by_the_same_rule_outside_a_budget():
    """budget_limit is the rule budget_from_mapping applies to every limit (a new table of limits reuses it)."""
    assert budget_limit("total_us", 0, "m") == 0 and budget_limit("planned", 4096, "m", group="memory") == 4096
    with pytest.raises(BoardConfigError) as caught:
        budget_limit("conv1", -2, "file.toml [m]", group="ops")
    assert str(caught.value) == "budget from file.toml [m]: ops['conv1'] must be >= 0 (a duration or size), got -2"
    with pytest.raises(BoardConfigError) as caught:
        budget_limit("snr_db_min", math.nan, "m")
    assert str(caught.value) == "budget from m: snr_db_min must be a finite number, got nan"
    assert budget_limit("snr_db_min", -20, "m") == -20  # decibels may be negative
