"""Boards: one small class per kind of target, all behind the `Board` protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hil.boards.base import Board
from hil.config.board_config import BoardConfig
from hil.base.errors import BoardConfigError
from hil.base.progress import Progress

KINDS = ("qemu", "rt700", "rt700-emu")


def open_board(cfg: BoardConfig, workdir: Path, progress: Progress | None = None, *, keeper: Any = None) -> Board:
    """The board class for `cfg.kind`, constructed on `workdir` (where its logs go); `progress` hears
    of each of the board's own steps as it starts (hil.base.progress.Within; default: silent). `keeper`
    (a hil.boards.qemu_keep.QemuKeeper, the pytest session's) lets a QEMU board reuse a kept QEMU.

    Imports are lazy: the QEMU flow must not need pyOCD, and the RT700 flow not QEMU.
    """
    if cfg.kind == "qemu":
        from hil.boards.qemu import QemuBoard

        return QemuBoard(cfg, Path(workdir), progress, keeper)
    if cfg.kind == "rt700-emu":
        from hil.boards.rt700_emu import Rt700EmuBoard

        return Rt700EmuBoard(cfg, Path(workdir), progress)
    if cfg.kind == "rt700":
        from hil.boards.rt700 import Rt700Board

        return Rt700Board(cfg, Path(workdir), progress)
    raise BoardConfigError(
        f"board '{cfg.name}' ({cfg.source}): unknown kind '{cfg.kind}' (known: {', '.join(KINDS)})"
    )
