"""Which board a test runs on: the session's (`--board`, HIL_BOARD, `hil_board`), or its own.

A suite can cover two boards in one pytest run by parametrizing the board fixtures indirectly:

    @pytest.mark.parametrize("hil_board_config", ["qemu", "bench"], indirect=True)
    def test_cifar10(hil_profile): ...          # hil_profile and hil_board follow hil_board_config

    @pytest.mark.parametrize("hil_board", ["qemu", "rt700"], indirect=True)
    def test_my_firmware(hil_board): ...

A parameter is a board name (looked up as `--board` is) or a board file path (`.toml`). Each
board is loaded, its command-line overrides applied and, in a shared lab, held (hil.lab.session)
once per session, then reused by every test that names it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from hil.config.board_config import BoardConfig, load_board_config
from hil.config.options import overrides_from
from hil.plugin.settings import override_origins

DEFAULT = None  # the session's board, as the settings chose it
PARAMETRIZED = ("hil_board", "hil_board_config")


def _name_and_file(pytestconfig: pytest.Config, param: Any) -> tuple[str | None, Path | None]:
    if param is DEFAULT:
        return pytestconfig.getoption("board"), pytestconfig.getoption("board_config")
    text = str(param)  # a board file named in a test is the project's: from the rootdir, as pytest's own paths
    return (None, pytestconfig.rootpath / Path(text).expanduser()) if text.endswith(".toml") else (text, None)


def load(pytestconfig: pytest.Config, param: Any = DEFAULT) -> BoardConfig:
    """The board file of `param` with the command line's overrides, not held (cheap: for markers)."""
    name, file = _name_and_file(pytestconfig, param)
    cfg = load_board_config(name, file, project_dirs=[pytestconfig.rootpath])
    return cfg.with_overrides(overrides_from(vars(pytestconfig.option)), override_origins(pytestconfig))


class BoardPool:
    """The boards of one session, each loaded and held once; all given back when the session ends."""

    def __init__(self, pytestconfig: pytest.Config) -> None:
        self._config = pytestconfig
        self._held: dict[str, BoardConfig] = {}
        self._stack = contextlib.ExitStack()

    def get(self, param: Any = DEFAULT) -> BoardConfig:
        key = "" if param is DEFAULT else str(param)
        if key not in self._held:
            from hil.lab.session import LabOptions, held_board

            worker = getattr(self._config, "workerinput", {}).get("workerid")
            options = LabOptions.from_values(vars(self._config.option), worker)
            self._held[key] = self._stack.enter_context(held_board(load(self._config, param), options))
        return self._held[key]

    def close(self) -> None:
        self._stack.close()


def own_board(item: pytest.Item) -> Any:
    """The board a test parametrized itself (`hil_board` or `hil_board_config`), else DEFAULT."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return next((params[name] for name in PARAMETRIZED if name in params), DEFAULT)
