"""The ETDump a simulated board carries, and the console lines that go with it.

Two sources, chosen by the program: a CPU-only program runs for real in the host ExecuTorch runtime
(timestamps in ns); a program lowered to the simulated Neutron backend gets a synthesized buffer
from the cost model (timestamps in board clock cycles), as the RT700 runtime would write it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hil.analysis.timescale import TimeScale, board_time_scale
from hil.aot.export import CompiledModel, load_inputs
from hil.replay.console import ConsoleScript, PoolUsage, render_console
from hil.base.errors import AnalysisError
from hil.records.pte import read_program

# The RT700 example's method pool as its console prints it (`method_allocator Addr: 0x20080000 - 0x20100000`,
# 512 KiB), used for the simulated console's memory lines.
METHOD_POOL_BASE = 0x20080000
METHOD_POOL_BYTES = 0x80000


@dataclass
class SimulatedBuffer:
    """The bytes the replay image links in, plus how to read their timestamps."""

    etdump: bytes
    console_lines: list[str]
    time_scale: TimeScale
    source: str  # "host-runtime" or "neutron-sim"
    simulation: dict[str, Any] | None = None


def method_execute_ticks(etdump: bytes) -> list[int]:
    """Duration of every `Method::execute` event, one per run, in the dump's own ticks."""
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    try:
        dump = deserialize_from_etdump_flatcc(etdump)
    except Exception as exc:  # flatc reports a foreign buffer in many ways
        raise AnalysisError(f"simulated ETDump cannot be decoded: {exc}") from exc
    durations = []
    for run in dump.run_data:
        for event in run.events or []:
            profile = event.profile_event
            if profile is not None and profile.name == "Method::execute":
                durations.append(int(profile.end_time) - int(profile.start_time))
    return durations


def simulated_buffer(
    compiled: CompiledModel, *, iterations: int, clock_mhz: float, seed: int = 0, jitter: float = 0.0,
    npu_clock_mhz: float | None = None,
) -> SimulatedBuffer:
    """Make the ETDump for `compiled` and the console that a board running it would print.

    `npu_clock_mhz` is the simulated Neutron timer's rate (default: the core clock).
    """
    pte = compiled.pte_path.read_bytes()
    if compiled.delegated:
        from hil.replay.neutron_etdump import synthesize_neutron_etdump

        etdump, simulation = synthesize_neutron_etdump(
            compiled.pte_path, compiled.etrecord_path, iterations=iterations, clock_mhz=clock_mhz,
            npu_clock_mhz=npu_clock_mhz, seed=seed, jitter=jitter,
        )
        time_scale = board_time_scale("qemu", clock_mhz, neutron=True, npu_clock_mhz=simulation["npu_clock_mhz"])
        source = "neutron-sim"
        method_ticks = simulation["method_execute_ticks"]  # what the synthesizer wrote: no need to decode it
    else:
        from hil.replay.host_runtime import host_etdump

        etdump = host_etdump(pte, load_inputs(compiled), iterations)
        simulation, source = None, "host-runtime"
        time_scale = board_time_scale("qemu", clock_mhz, neutron=False)
        method_ticks = method_execute_ticks(etdump)
    times_us = [ticks / time_scale.ticks_per_us for ticks in method_ticks]
    planned = read_program(pte).planned_buffer_sizes
    script = ConsoleScript(
        model_name=compiled.name.upper(),
        model_size=len(pte),
        clock_mhz=clock_mhz,
        inference_times_us=times_us,
        planned_buffers=planned,
        # The planned buffers come out of the method pool, as on the board; that much is known.
        allocators=(PoolUsage("method_allocator", METHOD_POOL_BASE, METHOD_POOL_BYTES, sum(planned)),),
    )
    return SimulatedBuffer(etdump, render_console(script), time_scale, source, simulation)
