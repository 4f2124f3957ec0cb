"""What a board can do, and tests that need it: `[board].features` and `@pytest.mark.hil_requires(...)`.

A board file declares its features (`features = ["npu", "probe", "console"]`; the words are
hil.config.board_schema.FEATURES). A test that needs one says so:

    @pytest.mark.hil_requires("npu")
    def test_npu_fraction(hil_profile): ...

and on a board that lacks it, the test is skipped with the reason (the board, its file, what it
lacks and what it has), like labgrid's `lg_feature`. The board is the test's own when it
parametrizes `hil_board` or `hil_board_config` (`indirect=True`), else the session's; a board file
without `features` has none. A misspelt feature fails the test instead of skipping it forever.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from hil.config.board_schema import FEATURES
from hil.config.board_config import BoardConfig

MARKER = "hil_requires"
MARKER_HELP = (f"{MARKER}(*features): skip unless the test's board declares every feature "
               f"([board].features; known: {', '.join(sorted(FEATURES))})")


def required(item: pytest.Item) -> list[str]:
    """Every feature the test's `hil_requires` markers name (class, module and function marks together)."""
    names = [str(name) for mark in item.iter_markers(MARKER) for name in mark.args]
    unknown = sorted(set(names) - set(FEATURES))
    if unknown:
        pytest.fail(f"{item.nodeid}: @pytest.mark.{MARKER}({', '.join(map(repr, unknown))}): unknown feature "
                    f"(known: {', '.join(sorted(FEATURES))})", pytrace=False)
    return list(dict.fromkeys(names))


def missing(cfg: BoardConfig, needed: Iterable[str]) -> str | None:
    """Why `cfg` cannot run a test needing `needed`, or None when it has them all."""
    lacking = [name for name in needed if name not in cfg.features]
    if not lacking:
        return None
    has = ", ".join(sorted(cfg.features)) or "none declared"
    return f"board '{cfg.name}' ({cfg.source}) lacks {', '.join(lacking)} (its features: {has})"
