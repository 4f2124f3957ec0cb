"""Shared set-up for the benchmarks: a real replay image of a real model, built once."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hil.aot.export import CompiledModel, export_model  # noqa: E402
from hil.buffers.simulated import simulated_buffer  # noqa: E402
from hil.firmware.qemu_image import build_qemu_image  # noqa: E402


def replay_image(model: str = "cifar10", iterations: int = 3, clock_mhz: float = 324) -> tuple[CompiledModel, Path]:
    """The model's program and a replay ELF carrying its host-runtime ETDump."""
    compiled = export_model(model, delegate="none")
    buffer = simulated_buffer(compiled, iterations=iterations, clock_mhz=clock_mhz)
    return compiled, build_qemu_image(buffer.etdump, buffer.console_lines, runs=iterations)


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    """Wall-clock seconds of `repeats` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def report(title: str, a_name: str, a: list[float], b_name: str, b: list[float]) -> None:
    """Print medians of both sides and the ratio b/a."""
    ma, mb = statistics.median(a), statistics.median(b)
    print(title)
    print(f"  {a_name:<40} median {ma * 1000:9.1f} ms  ({len(a)} runs)")
    print(f"  {b_name:<40} median {mb * 1000:9.1f} ms  ({len(b)} runs)")
    print(f"  ratio {b_name} / {a_name}: {mb / ma:.2f}")
