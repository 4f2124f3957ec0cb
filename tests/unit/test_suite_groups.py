"""The root conftest.py's scheduling groups of `make test`: every file it names exists (a misspelt one would
quietly move its tests back to the first worker) and no unit test joins a board group."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _root_conftest():
    """The repository's conftest.py by its path: `import conftest` finds whichever conftest pytest loaded first."""
    spec = importlib.util.spec_from_file_location("et_hil_root_conftest", REPO / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conftest = _root_conftest()


def test_every_file_of_the_second_board_group_exists_and_is_a_board_test() -> None:
    assert conftest._BESIDE_UNIT_TESTS
    for name in conftest._BESIDE_UNIT_TESTS:
        assert (REPO / name).is_file(), name
        assert conftest.board_group(f"{name}::test_x") == "board tests beside the unit tests"


def test_unit_tests_are_their_own_units_and_other_board_tests_share_one_group() -> None:
    assert conftest.board_group("tests/unit/test_code_size.py::test_x") is None
    assert conftest.board_group("tests/device/test_cpu_profile.py::test_x") == "board tests"
    assert conftest.board_group("tests/system/test_hil_run.py::test_x[a]") == "board tests"
