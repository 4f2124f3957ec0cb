"""gdb/MI records as the harness reads and writes them: a stop's reason, a quoted parameter, a transcript line.

Kept apart from the session (hil.target.gdbmi) that drives gdb: these are pure functions of one record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Longest record payload written to the transcript.
TRANSCRIPT_MAX = 600
# Stop reasons after which the target is gone (the run is over, whatever the cause).
GONE_REASONS = frozenset({"exited", "exited-normally", "exited-signalled", "disconnected"})


@dataclass(frozen=True)
class StopEvent:
    """Why the target stopped: gdb's `*stopped` reason, or "disconnected" when the stub went away."""

    reason: str
    frame_func: str | None = None
    exit_code: int | None = None
    breakpoint: int | None = None
    detail: str = ""

    @property
    def target_gone(self) -> bool:
        return self.reason in GONE_REASONS

    def describe(self) -> str:
        parts = [self.reason]
        if self.frame_func:
            parts.append(f"in {self.frame_func}")
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        if self.detail:
            parts.append(self.detail)
        return ", ".join(parts)


def mi_quote(text: str) -> str:
    """`text` as an MI c-string parameter."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def stop_event(payload: dict[str, Any]) -> StopEvent:
    frame = payload.get("frame") or {}
    exit_code = payload.get("exit-code")
    bkptno = payload.get("bkptno")
    return StopEvent(
        reason=str(payload.get("reason", "stopped")),
        frame_func=frame.get("func"),
        # gdb prints exit codes in octal ("03").
        exit_code=int(exit_code, 8) if exit_code is not None else (0 if payload.get("reason") == "exited-normally" else None),
        breakpoint=int(bkptno) if bkptno is not None else None,
        detail=str(payload.get("signal-name", "")),
    )


def render(record: dict[str, Any]) -> str:
    """One MI record as a transcript line."""
    token = record.get("token")
    head = f"{token if token is not None else ''}{record.get('type')}"
    if record.get("message"):
        head += f" {record['message']}"
    payload = record.get("payload")
    if payload is None:
        return head
    text = repr(payload) if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    if len(text) > TRANSCRIPT_MAX:  # memory reads: keep the log readable, the bytes are in the dump
        text = f"{text[:TRANSCRIPT_MAX]}... ({len(text)} chars)"
    return f"{head} {text}"
