"""The board protocol every target implements, what a run is asked to do, and what it brings back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hil.target.run_config import RunPlan

__all__ = ["Board", "RunCapture", "RunPlan"]


@dataclass
class RunCapture:
    """Everything one run of the target produced, kept even when later steps fail."""

    serial_log: Path
    console: str
    etdump: bytes
    result_addr: int
    steps_s: dict[str, float] = field(default_factory=dict)
    exit_code: int | None = None
    # The CRC-32 check of the ETDump (EtdumpResult.crc_record): checked or skipped, both values.
    crc32: dict[str, Any] | None = None
    # What the board noticed and dealt with (a retried flash, a stale lock or debug server ended).
    notes: list[str] = field(default_factory=list)
    # The debug buffer of intermediate outputs, when the plan asked for it (hil.drift.readout).
    debug_buffer: bytes | None = None
    # The method's outputs after the last run (hil.target.tensor_io), when the plan carried inputs.
    outputs: tuple[Any, ...] | None = None
    # The stack's high-water mark read at the breakpoint (hil.target.stack_mark.StackMark.to_dict).
    stack: dict[str, Any] | None = None


class Board(Protocol):
    """A target the harness can flash, run to the ETDump-ready point, and release.

    Implementations compose the shared pieces (serial reader, GDB/MI session, process
    lifecycles); they never copy them.
    """

    name: str
    # After flash(): {"done": "programmed" | "downloaded" | "skipped", "why": ...}, the manifest's `flash`.
    flash_record: dict[str, str] | None

    def flash(self, image: Path, progress: Callable[[float], None] | None = None, *, force: bool = False) -> None:
        """Put `image` (an ELF) on the target; the target stays halted afterwards.

        A target that provably holds `image` already is not written again, unless `force`.
        `progress`, when given, hears the fraction written (0..1) where the board can tell."""

    def run(self, timeout: float, plan: RunPlan) -> RunCapture:
        """Reset, hand the target `plan` (the run-configuration handshake), run to the breakpoint,
        read the ETDump, let the target finish. A target that cannot run `plan` is an error, never
        a run of some other count."""

    def close(self) -> None:
        """Stop every process and port this board opened; safe to call twice."""
