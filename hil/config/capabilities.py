"""What a board can do, and tests that need it: `[board].features` and `@pytest.mark.hil_requires(...)`.

A board file declares its features (`features = ["npu", "probe", "console"]`; the words are
hil.config.board_schema.FEATURES). A test that needs one says so:

    @pytest.mark.hil_requires("npu")
    def test_npu_fraction(hil_profile): ...

and on a board that lacks it, the test is skipped with the reason (the board, its file, what it
lacks and what it has), like labgrid's `lg_feature`. The board is the test's own when it
parametrizes `hil_board` or `hil_board_config` (`indirect=True`), else the session's; a board file
without `features` has none. The QEMU board has `runtime` while its runs execute the runtime image
(`features_now`). A misspelt feature fails the test instead of skipping it forever. The skip is
reported at the test's own line, as a `skipif` mark's is (hil.plugin.hooks).
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from hil.config.board_schema import FEATURES
from hil.config.board_config import BoardConfig

MARKER = "hil_requires"
RUNTIME = "runtime"
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


def features_now(cfg: BoardConfig, *, replay_reason: str | None) -> frozenset[str]:
    """What the board can do in this session: its declared features, and on a QEMU board `runtime` while its
    runs execute the runtime image (ExecuTorch's runtime on the emulated core), which the firmware choice and
    the source workspace decide, not the board file's list. `replay_reason`: why its runs replay, or None
    (hil.firmware.qemu_firmware.replay_reason; asked by the caller, a floor above this one)."""
    if cfg.kind == "qemu" and replay_reason is None:
        return cfg.features | {RUNTIME}
    return cfg.features


def missing(cfg: BoardConfig, needed: Iterable[str], *, replay_reason: str | None) -> str | None:
    """Why `cfg` cannot run a test needing `needed`, or None when it has them all (`features_now`)."""
    features = features_now(cfg, replay_reason=replay_reason)
    lacking = [name for name in needed if name not in features]
    if not lacking:
        return None
    has = ", ".join(sorted(features)) or "none declared"
    why = f"; {RUNTIME}: {replay_reason}" if cfg.kind == "qemu" and RUNTIME in lacking and replay_reason else ""
    return f"board '{cfg.name}' ({cfg.source}) lacks {', '.join(lacking)} (its features: {has}){why}"
