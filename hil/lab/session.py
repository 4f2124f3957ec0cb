"""One session's board in a shared lab: a lab-file entry claimed, a labgrid place held, settings applied.

The pytest plugin and `hil run` both go through `held_board`: it takes the board file (with its
command-line overrides), claims an entry of the lab file when one is given, holds the labgrid place
named by `--hil-place`, the lab entry or the board file's `[place].name`, and yields the board file
with the console, probe and `[lab]` record the place provides. Everything is given back when the block
ends, however it ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.base import log
from hil.config.board_config import BoardConfig

DEFAULT_COORDINATOR = "127.0.0.1:20408"  # labgrid's own default
DEFAULT_PLACE_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class LabOptions:
    """The lab-related command-line options, shared by the pytest plugin and the CLI."""

    place: str | None = None
    place_timeout: float | None = None
    coordinator: str | None = None
    lab: Path | None = None
    lab_tags: tuple[str, ...] = ()
    worker: str | None = None

    @classmethod
    def from_values(cls, values: dict[str, Any], worker: str | None = None) -> "LabOptions":
        tags = values.get("hil_lab_tags") or ""
        return cls(values.get("hil_place"), values.get("hil_place_timeout"), values.get("hil_coordinator"),
                   values.get("hil_lab"), tuple(t for t in tags.split(",") if t), worker)


# (flags, dest, type, help): registered by both front ends.
LAB_OPTIONS: tuple[tuple[str, str, Any, str, str], ...] = (
    ("--hil-place", "hil_place", str, "PLACE", "labgrid place to reserve and acquire for the session (its console and probe)"),
    ("--hil-place-timeout", "hil_place_timeout", float, "S",
     f"seconds to wait for a busy place or lab board (default {DEFAULT_PLACE_TIMEOUT_S:g})"),
    ("--hil-coordinator", "hil_coordinator", str, "HOST:PORT",
     f"labgrid coordinator HOST:PORT (default: the lab file's, $LG_COORDINATOR, or {DEFAULT_COORDINATOR})"),
    ("--hil-lab", "hil_lab", Path, "FILE", "lab file (TOML) naming several boards; each session/xdist worker takes a free one"),
    ("--hil-lab-tags", "hil_lab_tags", str, "TAGS", "only lab boards carrying all these tags (comma-separated)"),
)


@contextmanager
def held_board(cfg: BoardConfig, options: LabOptions) -> Iterator[BoardConfig]:
    """`cfg` with a lab board claimed and its place held for the duration of the block (module docstring)."""
    timeout = options.place_timeout if options.place_timeout is not None else DEFAULT_PLACE_TIMEOUT_S
    with ExitStack() as stack:
        coordinator = options.coordinator
        if options.lab is not None:
            from hil.lab.labfile import claim_board, load_lab, worker_index

            lab = load_lab(options.lab)
            entry = stack.enter_context(claim_board(
                lab, cfg.name, tags=frozenset(options.lab_tags), start=worker_index(options.worker),
                timeout=timeout, report=log.warning))
            cfg = cfg.with_overrides(entry.overrides())
            coordinator = coordinator or lab.coordinator
        place = options.place or cfg.get("place.name")
        if place:
            from hil.lab.place import PlaceHold

            coordinator = (coordinator or cfg.get("place.coordinator") or os.environ.get("LG_COORDINATOR")
                           or DEFAULT_COORDINATOR)
            lease = stack.enter_context(PlaceHold(str(place), str(coordinator), timeout=timeout, report=log.warning))
            cfg = cfg.with_overrides(lease.overrides())
        yield cfg
