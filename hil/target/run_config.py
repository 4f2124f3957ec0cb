"""The run-configuration handshake: tell the image how many inferences to run before it runs any.

One image serves any `--iterations` / `--warmup`: the firmware stops at `hil_config_ready`
(firmware/common/hil_result.h), where the debugger writes `hil_run_config.iterations`, `.warmup`
and, last, `.magic`; the firmware then prints what it took (`Run config: ...`). A count the image
did not take would be measured as if it had, so every step here refuses rather than guesses: an
image without the symbols, a count above the image's `max_runs`, and a console that does not echo
exactly what was written are all errors.

Shared by every board (QEMU and the RT700 bench): after the board's reset, `run_planned()`
replaces a bare `run_to_breakpoint()`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace

from hil.records.console import RUN_CONFIG_ANY, RunConfig, parse_run_config
from hil.base.errors import TargetError, TargetFault, TargetHang
from hil.config.board_config import MemoryRegion
from hil.base.checks import whole_number
from hil.records.tensors import InputTensor
from hil.target.capture import CONSOLE_LAG_S, RunContext, continue_to_breakpoint, run_to_breakpoint
from hil.target.gdbmi import GdbMiSession, StopEvent

# The names and the magic are fixed by firmware/common/hil_result.h (HIL_CONFIG_BREAKPOINT_SYMBOL,
# HIL_RUN_CONFIG_SYMBOL, HIL_RUN_CONFIG_MAGIC); a firmware that has them has them under these names.
CONFIG_BREAKPOINT = "hil_config_ready"
CONFIG_SYMBOL = "hil_run_config"
# The streamed transport's switch (HIL_STREAM_SYMBOL): set, the image prints its ETDump in frames (hil.target.etdump_stream).
STREAM_SYMBOL = "hil_etdump_stream"
RUN_CONFIG_MAGIC = 0x314C4948  # "HIL1"
# A `HIL error:` line the firmware printed after taking the configuration (why it stopped early).
_HIL_ERROR = re.compile(r"^.*HIL error:.*$", re.M)


@dataclass(frozen=True)
class RunPlan:
    """How many inferences the target runs: `warmup` first (traced, then dropped), then `iterations`."""

    iterations: int
    warmup: int = 0
    # Read the debug buffer of intermediate outputs beside the ETDump (an image built with one: hil.drift).
    debug_outputs: bool = False
    # The method's tensor inputs, written at the same stop (hil.target.tensor_io); None: the image keeps its fill.
    inputs: tuple[InputTensor, ...] | None = field(default=None, compare=False, repr=False)
    # Where the board's RAM is: every input buffer the image names must lie inside it.
    ram: tuple[MemoryRegion, ...] = field(default=(), compare=False, repr=False)
    # The ETDump comes over the console in frames, a dump per batch (`[debug].etdump_transport = "console"`).
    stream: bool = False

    def __post_init__(self) -> None:
        whole_number(self.iterations, "iterations", at_least=1)
        whole_number(self.warmup, "warm-up", at_least=0)

    @property
    def runs(self) -> int:
        """Inferences on the target: warm-up and measured."""
        return self.iterations + self.warmup

    def describe(self) -> str:
        debug = ", debug outputs" if self.debug_outputs else ""
        stream = ", ETDump streamed over the console" if self.stream else ""
        return f"iterations {self.iterations}, warm-up {self.warmup}{debug}{stream}"


def run_planned(
    gdb: GdbMiSession, ctx: RunContext, plan: RunPlan, deadline: float, *, rebuild: str
) -> StopEvent:
    """From reset: arm the fault watch, configure the run, run to ctx.breakpoint (the ETDump), check the echo.

    `deadline` is time.monotonic()'s; `rebuild` says how to rebuild an image that predates the
    handshake (it differs per board). When the target stops early, the console's verdict on the
    configuration (a refusal, a mismatch, a `HIL error:` line) is the error, not "stopped early".
    """
    if ctx.faults is not None:
        ctx.faults.arm(gdb)  # before the first instruction runs: a fault anywhere is caught intact
    configure_run(gdb, ctx, plan, _left(deadline), rebuild=rebuild)
    # Every line from here on was printed after the firmware took the configuration.
    start = ctx.serial.skip_to_end()
    try:
        stop = run_to_breakpoint(gdb, ctx, _left(deadline))
    except TargetError as exc:
        problem = None if isinstance(exc, (TargetFault, TargetHang)) else _early_stop_reason(ctx.serial.text[start:], plan)
        if problem is None:  # a fault or hang report says more than any console line
            raise
        raise ctx.failure(problem, type(exc)) from exc
    check_echo(ctx, plan, min(CONSOLE_LAG_S, max(1.0, _left(deadline))))
    if plan.inputs is not None:
        from hil.target.tensor_io import check_inputs_echo

        check_inputs_echo(ctx, len(plan.inputs), min(CONSOLE_LAG_S, max(1.0, _left(deadline))))
    return stop


def configure_run(gdb: GdbMiSession, ctx: RunContext, plan: RunPlan, timeout: float, *, rebuild: str) -> int:
    """Stop at `hil_config_ready`, refuse a plan above the image's `max_runs`, write the plan; returns max_runs.

    Nothing is written unless the image has both symbols and room for the plan, and the magic
    is written last, so the firmware never takes a half-written configuration.
    """
    here = replace(ctx, breakpoint=CONFIG_BREAKPOINT)
    number = _require_handshake(gdb, here, rebuild)
    continue_to_breakpoint(gdb, here, number, timeout)
    try:
        max_runs = gdb.evaluate_int(f"{CONFIG_SYMBOL}.max_runs")
    except TargetError as exc:
        raise here.failure(f"cannot read {CONFIG_SYMBOL}.max_runs: {exc}") from exc
    if plan.runs > max_runs and not plan.stream:  # streamed, max_runs bounds one dump (a batch), not the run
        raise here.failure(
            f"the plan needs {plan.runs} runs ({plan.describe()}) but the image holds at most {max_runs}"
            f" ({CONFIG_SYMBOL}.max_runs); nothing was written"
        )
    try:
        gdb.write_int(f"{CONFIG_SYMBOL}.iterations", plan.iterations)
        gdb.write_int(f"{CONFIG_SYMBOL}.warmup", plan.warmup)
        if plan.stream:
            _require_stream(gdb, here)
            gdb.write_int(STREAM_SYMBOL, 1)
        gdb.write_int(f"{CONFIG_SYMBOL}.magic", RUN_CONFIG_MAGIC)  # last: it makes the rest valid
    except TargetError as exc:
        raise here.failure(f"cannot write the run configuration ({plan.describe()}): {exc}") from exc
    if plan.inputs is not None:
        from hil.target.tensor_io import write_inputs

        write_inputs(gdb, here, plan.inputs, list(plan.ram))
    return max_runs


def check_echo(ctx: RunContext, plan: RunPlan, timeout: float = CONSOLE_LAG_S) -> RunConfig:
    """The console's `Run config:` line must say the firmware runs exactly `plan`, as set by the debugger."""
    try:
        match = ctx.serial.expect(RUN_CONFIG_ANY, timeout)
    except TargetError as exc:
        raise ctx.failure(
            f"the console never printed 'Run config: ...' after the harness wrote {plan.describe()}: {exc}"
        ) from exc
    said = parse_run_config(match.group(0))
    assert said is not None  # RUN_CONFIG_ANY matched one of the two lines parse_run_config reads
    problem = _echo_problem(said, match.group(0), plan)
    if problem is not None:
        raise ctx.failure(problem)
    return said


def _require_handshake(gdb: GdbMiSession, ctx: RunContext, rebuild: str) -> int:
    """Set the one-shot breakpoint at `hil_config_ready` and check `hil_run_config` exists, before anything runs."""

    def predates(exc: TargetError) -> TargetError:
        return ctx.failure(
            f"image {gdb.elf} has no {CONFIG_SYMBOL} / {CONFIG_BREAKPOINT}: it predates the iteration"
            f" handshake and would run the count compiled into it, not the one asked for; rebuild it"
            f" ({rebuild}) [gdb: {exc}]"
        )

    try:
        number = gdb.break_insert(CONFIG_BREAKPOINT, temporary=True)
    except TargetError as exc:
        raise predates(exc) from exc
    try:
        gdb.evaluate_int(f"sizeof({CONFIG_SYMBOL}.magic) + sizeof({CONFIG_SYMBOL}.max_runs)")
    except TargetError as exc:
        raise predates(exc) from exc
    return number


def _require_stream(gdb: GdbMiSession, ctx: RunContext) -> None:
    """The image can stream its ETDump (it has `hil_etdump_stream`), or the run stops here, naming the board-file key."""
    try:
        gdb.evaluate_int(f"sizeof({STREAM_SYMBOL})")
    except TargetError as exc:
        raise ctx.failure(
            f"image {gdb.elf} has no {STREAM_SYMBOL}: it cannot stream its ETDump over the console, which the board"
            f" file asks for (debug.etdump_transport = \"console\"); rebuild it, or use the gdb transport [gdb: {exc}]"
        ) from exc


def _echo_problem(said: RunConfig, line: str, plan: RunPlan) -> str | None:
    """Why the firmware's echo does not confirm `plan`, or None when it does."""
    wrote = f"the harness wrote {plan.describe()}"
    if said.source == "refused":
        return f"the firmware refused the run configuration ({wrote}): {line.strip()}"
    if said.source == "defaults":
        return (
            f"the firmware ran its defaults (iterations {said.iterations}, warm-up {said.warmup}) although"
            f" {wrote}: it never saw the write ({line.strip()!r})"
        )
    if (said.iterations, said.warmup) != (plan.iterations, plan.warmup) or said.source != "debugger":
        return (
            f"the firmware says it runs iterations {said.iterations}, warm-up {said.warmup} ({said.source})"
            f" but {wrote} ({line.strip()!r})"
        )
    return None


def _early_stop_reason(printed: str, plan: RunPlan) -> str | None:
    """What the console says about a target that stopped before the ETDump breakpoint, or None if nothing."""
    match = RUN_CONFIG_ANY.search(printed)
    said = parse_run_config(match.group(0)) if match else None
    if said is not None and (problem := _echo_problem(said, match.group(0), plan)) is not None:
        return problem
    errors = _HIL_ERROR.findall(printed)
    if errors:
        return f"the firmware stopped after taking {plan.describe()}: {errors[0].strip()}{_pool_hint(errors[0])}"
    return None


def _pool_hint(error: str) -> str:
    """What error 0x21 (MemoryAllocationFailed, runtime/core/error.h) while the method is set up means here: the
    method pool holds the planned buffers AND the method's own tables (its values, tensors, kernel and argument
    lists), so a program whose planned bytes fit memory.planned_bytes (the only figure checked before flashing)
    can still not fit; said, since the .pte alone does not give those tables' size on the target."""
    if "error 0x21" not in error or not any(f"{step} failed" in error for step in _POOL_STEPS):
        return ""
    return (" (MemoryAllocationFailed: the method pool, the board file's memory.planned_bytes, holds the program's"
            " planned buffers and the method's own tables; the check before flashing counts the planned buffers"
            " only)")


# The firmware's steps that allocate from the method pool (firmware/app/main.cpp): fail("<step>", ...).
_POOL_STEPS = ("planned memory", "load_method", "prepare_inputs")


def _left(deadline: float) -> float:
    """Seconds left before `deadline`, never negative (a 0 s wait still checks once)."""
    return max(0.0, deadline - time.monotonic())
