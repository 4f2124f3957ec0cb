"""The replay image's console (rendered on the host) reads back as the same facts through the parser
that reads a real board's console: the two sides of the line protocol agree."""

from __future__ import annotations

import random

from hil.records.console import parse_console
from hil.replay.console import ConsoleScript, PoolUsage, render_console


def test_rendered_console_parses_back_to_the_same_facts():
    rng = random.Random(7)
    times = [rng.uniform(100, 5000) for _ in range(6)]
    script = ConsoleScript(
        model_name="CIFAR10",
        model_size=rng.randrange(10_000, 2_000_000),
        clock_mhz=324,
        inference_times_us=times,
        planned_buffers=[rng.randrange(1, 1 << 20) for _ in range(2)],
        allocators=(PoolUsage("method_allocator", 0x20080000, 0x80000, rng.randrange(1, 0x80000)),),
    )
    lines = render_console(script)
    facts = parse_console("\r\n".join(lines) + "\r\n")
    assert facts.clock_mhz == 324
    assert facts.inference_times_us == [round(t) for t in times]
    assert facts.model_size == script.model_size
    assert facts.planned_buffers == dict(enumerate(script.planned_buffers))
    pool = facts.allocators["method_allocator"]
    assert (pool.used, pool.total, pool.start, pool.end) == (
        script.allocators[0].used, 0x80000, 0x20080000, 0x20080000 + 0x80000,
    )
    assert not facts.program_complete  # the firmware, not the host, prints the last line
