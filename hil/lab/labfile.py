"""The lab file: several boards of one kind, each a probe and console or a labgrid place, with tags.

```toml
[labgrid]
coordinator = "lab-server:20408"

[[boards]]
name = "evk-1"              # unique in the file
board = "rt700"             # which board file (`--board`) this entry is an instance of
probe = "0BFJXK2W3NM3J"     # pyOCD unique id, or remote:HOST:PORT
port = "/dev/ttyACM0"       # console (optional: the probe's VCOM is found by its serial number)
tags = ["npu", "nightly"]

[[boards]]
name = "evk-3"
board = "rt700"
place = "rt700-evk-3"       # a labgrid place instead of a probe: console and probe come from it
[boards.settings]           # any other board-file key
"pyocd.frequency_hz" = 1000000
```

`claim_board` gives the calling process (one pytest-xdist worker, one CI job) one entry to itself:
each entry has a lock file, taken like a probe lock (an flock the kernel drops when its holder dies),
so two processes on this host never share an entry. When every matching entry is taken, it waits
(saying which are busy) instead of failing. Workers start their search at their own index, so N workers
and N boards pair up without waiting. Boards on other hosts are kept apart by their labgrid places.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hil.base import log
from hil.base.errors import BoardConfigError, TimeoutExpired
from hil.probe.lock import ProbeLock

POLL_S = 0.5


@dataclass(frozen=True)
class LabBoard:
    """One entry of the lab file."""

    name: str
    board: str
    probe: str | None = None
    port: str | None = None
    place: str | None = None
    tags: frozenset[str] = frozenset()
    settings: dict[str, Any] = field(default_factory=dict)

    def overrides(self) -> dict[str, Any]:
        """Board-file settings this entry stands for (a place's console and probe come later, from labgrid)."""
        found: dict[str, Any] = {"lab.board": self.name, **self.settings}
        if self.probe:
            found["pyocd.probe_id"] = self.probe
        if self.port:
            found["serial.url"] = self.port
        if self.place:
            found["place.name"] = self.place
        return found


@dataclass(frozen=True)
class Lab:
    source: Path
    boards: tuple[LabBoard, ...]
    coordinator: str | None = None

    def candidates(self, board: str, tags: frozenset[str] = frozenset()) -> list[LabBoard]:
        return [b for b in self.boards if b.board == board and tags <= b.tags]


def load_lab(path: Path | str) -> Lab:
    """Read and check a lab file; every mistake is reported with the file and the entry."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM (Windows editors) is no statement
    except FileNotFoundError as exc:
        raise BoardConfigError(f"lab file not found: {path}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BoardConfigError(f"lab file {path} is not valid TOML: {exc}") from exc
    boards: list[LabBoard] = []
    for i, entry in enumerate(data.get("boards", [])):
        where = f"lab file {path}, boards[{i}]"
        unknown = set(entry) - {"name", "board", "probe", "port", "place", "tags", "settings"}
        if unknown:
            raise BoardConfigError(f"{where}: unknown keys {sorted(unknown)}")
        if not entry.get("name") or not entry.get("board"):
            raise BoardConfigError(f"{where}: needs 'name' and 'board'")
        if entry.get("place") and (entry.get("probe") or entry.get("port")):
            raise BoardConfigError(f"{where} ({entry['name']}): a place brings its own probe and console; "
                                   "give either 'place' or 'probe'/'port'")
        boards.append(LabBoard(
            name=str(entry["name"]), board=str(entry["board"]), probe=entry.get("probe"), port=entry.get("port"),
            place=entry.get("place"), tags=frozenset(map(str, entry.get("tags", []))),
            settings=dict(entry.get("settings", {})),
        ))
    names = [b.name for b in boards]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise BoardConfigError(f"lab file {path}: board names used twice: {', '.join(duplicates)}")
    return Lab(path, tuple(boards), data.get("labgrid", {}).get("coordinator"))


def worker_index(worker_id: str | None) -> int:
    """pytest-xdist's worker number (gw3 -> 3); 0 outside xdist."""
    digits = "".join(ch for ch in (worker_id or "") if ch.isdigit())
    return int(digits) if digits else 0


@contextmanager
def claim_board(lab: Lab, board: str, *, tags: frozenset[str] = frozenset(), start: int = 0,
                timeout: float = 600.0, report: Callable[[str], None] = log.warning) -> Iterator[LabBoard]:
    """Hold one free entry of `lab` for `board` for the duration of the block (see the module docstring)."""
    candidates = lab.candidates(board, tags)
    if not candidates:
        wanted = f"board '{board}'" + (f" with tags {sorted(tags)}" if tags else "")
        raise BoardConfigError(f"lab file {lab.source}: no entry for {wanted} "
                               f"(entries: {', '.join(f'{b.name} ({b.board})' for b in lab.boards) or 'none'})")
    order = candidates[start % len(candidates):] + candidates[: start % len(candidates)]
    began = time.monotonic()
    announced = False
    while True:
        for entry in order:
            lock = ProbeLock(f"lab-{entry.name}", timeout=0.0)
            try:
                lock.acquire()
            except TimeoutExpired:
                continue
            try:
                yield entry
            finally:
                lock.release()
            return
        waited = time.monotonic() - began
        if waited >= timeout:
            raise TimeoutExpired(f"lab file {lab.source}: all {len(order)} '{board}' boards stayed busy for "
                                 f"{waited:.0f} s ({', '.join(b.name for b in order)})")
        if not announced:
            report(f"all {len(order)} '{board}' boards of {lab.source} are busy "
                   f"({', '.join(b.name for b in order)}); waiting up to {timeout:g} s")
            announced = True
        time.sleep(POLL_S)
