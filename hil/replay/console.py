"""The console text a replay image prints: the same line protocol as NXP's RT700 example.

The QEMU board replays a simulated ETDump, so the lines a real board would print about the same run
(clock, memory, inference time per iteration) are rendered here on the host and linked into the image.
The `Result buf:` and `Program complete, exiting.` lines are printed by the firmware itself, because
only the target knows where the buffer ended up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PoolUsage:
    """One memory pool as the firmware reports it (`method_allocator`, `temp_allocator`)."""

    name: str
    base: int
    total: int
    used: int


@dataclass
class ConsoleScript:
    """What the replay image says about one simulated run."""

    model_name: str
    model_size: int
    clock_mhz: float
    inference_times_us: Sequence[float]
    planned_buffers: Sequence[int] = ()
    allocators: Sequence[PoolUsage] = field(default_factory=tuple)
    model_base: int = 0x20430000
    method_name: str = "forward"
    num_methods: int = 1


def render_console(script: ConsoleScript) -> list[str]:
    """Lines (without line ends) in the order NXP's profiling example prints them."""
    lines = [
        f"{script.model_name} example using a ExecuTorch model (et-hil simulated board)",
        f"Model buffer loaded, has {script.num_methods} methods",
        f"Running method {script.method_name}",
    ]
    lines += [f"Setting up planned buffer {i}, size {size}." for i, size in enumerate(script.planned_buffers)]
    lines += ["Method loaded.", "Preparing inputs...", "Input prepared.", "Starting the model execution..."]
    lines += ["Model executed successfully.", f"Core/NPU Frequency: {script.clock_mhz:g} MHz"]
    for pool in script.allocators:
        percent = pool.used * 100 // pool.total if pool.total else 0
        lines += [
            f"{pool.name} Addr: 0x{pool.base:08x} - 0x{pool.base + pool.total:08x}",
            f"{pool.name}_used: Total 0x{pool.total:x} ({pool.total} B); "
            f"Used 0x{pool.used:x} ({pool.used} B); Used/Total {percent} %",
        ]
    end = script.model_base + script.model_size
    lines += [
        f"Model Addr: 0x{script.model_base:08x} - 0x{end:08x}",
        f"Model Size: 0x{script.model_size:x} ({script.model_size} B)",
        "1 outputs:",
    ]
    # Half up, as the firmware rounds (firmware/app/main.cpp), not to even as round() would.
    lines += [f"     Inference time: {math.floor(t + 0.5)} us" for t in script.inference_times_us]
    return lines
