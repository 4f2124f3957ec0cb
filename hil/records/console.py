"""Facts read from the target's console log, in the line format of NXP's RT700 ExecuTorch example
(`Core/NPU Frequency: 324 MHz`, `method_allocator_used: Total ...`, `Inference time: N us`, `Model Size: ...`).

The ETDump says how long each event took in ticks; only the console says at which clock the
core ran, how much of each allocator the method used and how big the model is. The parser is
line-based and tolerant: unknown lines are skipped, CR LF and LF both work, so a log captured
from a USB virtual COM port and one from QEMU's socket parse the same.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

_NUM = r"(?:0x[0-9a-fA-F]+|\d+)"

_CLOCK = re.compile(r"Core/NPU Frequency:\s*(\d+(?:\.\d+)?)\s*MHz", re.IGNORECASE)
_INFERENCE = re.compile(r"Inference time:\s*(\d+(?:\.\d+)?)\s*us", re.IGNORECASE)
_ALLOCATOR_USED = re.compile(
    r"^\s*(?P<name>\w+?)_used:\s*Total\s+" + _NUM + r"\s*\((?P<total>\d+)\s*B\)\s*;\s*"
    r"Used\s+" + _NUM + r"\s*\((?P<used>\d+)\s*B\)"
)
_ALLOCATOR_ADDR = re.compile(
    r"^\s*(?P<name>\w+?)\s+Addr:\s*(?P<start>0x[0-9a-fA-F]+)\s*-\s*(?P<end>0x[0-9a-fA-F]+)"
)
_MODEL_SIZE = re.compile(r"Model Size:\s*" + _NUM + r"\s*\((\d+)\s*B\)")
_RESULT = re.compile(r"Result buf:\s*(0x[0-9a-fA-F]+|\d+|\(nil\))\s*,\s*size:\s*(\d+)")
_COMPLETE = re.compile(r"Program complete, exiting\.")
_PLANNED = re.compile(r"Setting up planned buffer\s+(\d+),\s*size\s+(\d+)")
# The run-configuration handshake (firmware/common/hil_protocol.h: HIL_FMT_RUN_CONFIG with
# HIL_RUN_CONFIG_FROM_DEBUGGER or HIL_RUN_CONFIG_DEFAULTS, and HIL_FMT_RUN_CONFIG_REFUSED).
RUN_CONFIG_FROM_DEBUGGER = "set by the debugger"
RUN_CONFIG_DEFAULTS = "defaults: no debugger wrote hil_run_config"
RUN_CONFIG_LINE = re.compile(r"Run config:\s*iterations\s+(\d+),\s*warm-up\s+(\d+)\s*\(([^\r\n]*)\)")
RUN_CONFIG_REFUSED_LINE = re.compile(
    r"HIL error: run config out of range \(iterations\s+(\d+),\s*warm-up\s+(\d+),\s*at most\s+(\d+) runs\)"
)
# Either line: what a reader waits for after the handshake.
RUN_CONFIG_ANY = re.compile(f"{RUN_CONFIG_LINE.pattern}|{RUN_CONFIG_REFUSED_LINE.pattern}")


class RunConfig(NamedTuple):
    """What the firmware says it runs: `source` is "debugger" (the harness's values), "defaults"
    (nobody wrote hil_run_config), "refused" (out of range: the firmware runs nothing), or the
    firmware's own words when it printed something else in the parentheses."""

    iterations: int
    warmup: int
    source: str


def parse_run_config(line: str) -> RunConfig | None:
    """The `Run config:` or run-config refusal line in `line`, or None."""
    if m := RUN_CONFIG_LINE.search(line):
        said = m.group(3).strip()
        source = {RUN_CONFIG_FROM_DEBUGGER: "debugger", RUN_CONFIG_DEFAULTS: "defaults"}.get(said, said)
        return RunConfig(int(m.group(1)), int(m.group(2)), source)
    if m := RUN_CONFIG_REFUSED_LINE.search(line):
        return RunConfig(int(m.group(1)), int(m.group(2)), "refused")
    return None


@dataclass
class AllocatorUsage:
    """One allocator's use as printed by the firmware (`<name>_used: Total ...; Used ...`)."""

    used: int
    total: int
    start: int | None = None
    end: int | None = None


@dataclass
class ConsoleFacts:
    """What one run's console told us; every field is None/empty when its line never came."""

    clock_mhz: float | None = None
    inference_times_us: list[float] = field(default_factory=list)
    allocators: dict[str, AllocatorUsage] = field(default_factory=dict)
    model_size: int | None = None
    model_addr: int | None = None
    planned_buffers: dict[int, int] = field(default_factory=dict)
    result_buf: int | None = None
    result_size: int | None = None
    run_config: RunConfig | None = None
    program_complete: bool = False
    lines: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (without the raw lines, which live in serial.log)."""
        data = asdict(self)
        data.pop("lines")
        data["planned_buffers"] = {str(k): v for k, v in self.planned_buffers.items()}
        return data


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]}... is no finite number")
    return int(value) if value.is_integer() else value


def _address(text: str) -> int:
    """`0x...` as hex, `(nil)` as 0, bare digits as decimal (never int(x, 0): `0838000000` is no literal)."""
    if text == "(nil)":
        return 0
    return int(text, 16) if text[:2].lower() == "0x" else int(text, 10)


def parse_console(text: str) -> ConsoleFacts:
    """Parse a whole console log; later lines of the same kind win (except inference times, all kept).

    A line whose number cannot be one (over Python's 4300-digit int() limit, a float overflowing to
    inf: bytes garbled on the wire) is skipped like any line that is not ours, never raised.
    """
    facts = ConsoleFacts()
    facts.lines = [line.rstrip("\r") for line in text.replace("\r\n", "\n").split("\n")]
    for line in facts.lines:
        try:
            _parse_line(line, facts)
        except ValueError:
            continue
    return facts


def _parse_line(line: str, facts: ConsoleFacts) -> None:
    if run_config := parse_run_config(line):
        facts.run_config = run_config
    elif m := _CLOCK.search(line):
        facts.clock_mhz = _number(m.group(1))
    elif m := _INFERENCE.search(line):
        facts.inference_times_us.append(_number(m.group(1)))
    elif m := _ALLOCATOR_USED.search(line):
        used, total = int(m["used"]), int(m["total"])  # both parse before the allocator is recorded
        usage = facts.allocators.setdefault(m["name"], AllocatorUsage(0, 0))
        usage.used, usage.total = used, total
    elif (m := _ALLOCATOR_ADDR.search(line)) and m["name"].lower() == "model":
        facts.model_addr = int(m["start"], 16)
    elif m := _ALLOCATOR_ADDR.search(line):
        start, end = int(m["start"], 16), int(m["end"], 16)
        usage = facts.allocators.setdefault(m["name"], AllocatorUsage(0, 0))
        usage.start, usage.end = start, end
    elif m := _MODEL_SIZE.search(line):
        facts.model_size = int(m.group(1))
    elif m := _RESULT.search(line):
        buf, size = _address(m.group(1)), int(m.group(2))
        facts.result_buf, facts.result_size = buf, size
    elif m := _PLANNED.search(line):
        facts.planned_buffers[int(m.group(1))] = int(m.group(2))
    elif _COMPLETE.search(line):
        facts.program_complete = True
