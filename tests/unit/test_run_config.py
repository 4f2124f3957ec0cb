"""The harness's side of the run-configuration handshake, without a target: the plan, and the console check.

The console is a real socket console (pyserial socket://, as QEMU's UART is read) fed with
hand-written lines, because a real firmware that takes the configuration always echoes it right;
these are the lines a broken one (stale cache, lost write, other defaults) would print.
The handshake against real QEMU and gdb is in test_qemu_board.py and tests/system/test_iterations.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_serial_reader import ConsoleServer

from hil.records.console import RunConfig
from hil.base.errors import HilError, TargetError
from hil.target.capture import RunContext
from hil.target.ports import free_tcp_port
from hil.target.run_config import RunPlan, check_echo
from hil.target.serial_reader import SerialReader


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[ConsoleServer, RunContext]]:
    server = ConsoleServer(free_tcp_port()).listen()
    reader = SerialReader(f"socket://127.0.0.1:{server.port}", tmp_path / "serial.log").start()
    ctx = RunContext("qemu", "hil_etdump_ready", reader, tmp_path / "mi.log", tmp_path / "firmware.elf")
    yield server, ctx
    reader.close()
    server.hang_up()


def test_plan_counts_and_refuses_nonsense() -> None:
    plan = RunPlan(3, 2)
    assert (plan.runs, plan.describe()) == (5, "iterations 3, warm-up 2")
    assert RunPlan(7).warmup == 0
    for iterations, warmup in [(0, 0), (-1, 0), (1, -1), (True, 0), (2.5, 0)]:
        with pytest.raises(HilError):
            RunPlan(iterations, warmup)  # type: ignore[arg-type]


def test_the_echo_of_what_was_written_passes(console) -> None:
    server, ctx = console
    server.send(b"banner\r\nRun config: iterations 7, warm-up 2 (set by the debugger)\r\nmore\r\n")
    assert check_echo(ctx, RunPlan(7, 2), timeout=5) == RunConfig(7, 2, "debugger")


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ("Run config: iterations 5, warm-up 0 (defaults: no debugger wrote hil_run_config)",
         r"ran its defaults \(iterations 5, warm-up 0\) although the harness wrote iterations 7, warm-up 2"),
        ("Run config: iterations 7, warm-up 0 (set by the debugger)",
         r"says it runs iterations 7, warm-up 0 \(debugger\) but the harness wrote iterations 7, warm-up 2"),
        ("Run config: iterations 7, warm-up 2 (clamped to what fits)",
         r"\(clamped to what fits\) but the harness wrote iterations 7, warm-up 2"),
        ("HIL error: run config out of range (iterations 7, warm-up 2, at most 8 runs)",
         r"refused the run configuration \(the harness wrote iterations 7, warm-up 2\): HIL error: .*at most 8 runs"),
    ],
    ids=["defaults", "other-count", "other-source", "refused"],
)
def test_an_echo_that_is_not_what_was_written_is_an_error_naming_both(console, line: str, complaint: str) -> None:
    server, ctx = console
    server.send(f"{line}\r\n".encode())
    with pytest.raises(TargetError, match=complaint) as info:
        check_echo(ctx, RunPlan(7, 2), timeout=5)
    message = str(info.value)
    assert message.startswith("board 'qemu': ") and "firmware.elf" in message and "serial.log" in message


def test_no_echo_at_all_is_an_error(console) -> None:
    server, ctx = console
    server.send(b"an old firmware's banner\r\nInference time: 12 us\r\n")
    with pytest.raises(TargetError, match="never printed 'Run config: ...' after the harness wrote iterations 1"):
        check_echo(ctx, RunPlan(1), timeout=0.3)


def test_an_echo_from_before_the_handshake_does_not_count(console) -> None:
    """A line already in the log when the firmware took the configuration is another boot's."""
    server, ctx = console
    server.send(b"Run config: iterations 1, warm-up 0 (set by the debugger)\r\n")
    ctx.serial.expect("set by the debugger", 5)  # it has arrived
    ctx.serial.skip_to_end()
    with pytest.raises(TargetError, match="never printed"):
        check_echo(ctx, RunPlan(1), timeout=0.3)


@pytest.mark.parametrize(("line", "hinted"), [
    ("HIL error: load_method failed (error 0x21)", True),
    ("HIL error: planned memory failed (error 0x21)", True),
    ("HIL error: load_method failed (error 0x12)", False),   # InvalidArgument: not the pool
    ("HIL error: set_input failed (error 0x21)", False),     # after set-up: not the method pool's doing
])
def test_a_method_pool_that_overflows_is_said_to_hold_more_than_the_planned_buffers(line: str, hinted: bool) -> None:
    """ResNet8 int8 portable plans 511,488 B of the 524,288 B pool and fails at load_method with 0x21
    (MemoryAllocationFailed in ExecuTorch's runtime/core/error.h): the message must not leave the user to believe
    the planned bytes were the whole need."""
    from hil.target.run_config import _early_stop_reason

    reason = _early_stop_reason(f"{line}\r\n", RunPlan(1, 0))
    assert reason is not None and line in reason
    assert ("memory.planned_bytes" in reason and "counts the planned buffers only" in reason) == hinted
