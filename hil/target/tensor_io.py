"""The tensor handshake on the debugger's side: inputs written at the run-configuration stop, outputs read at the ETDump stop.

The firmware publishes a table per side in `hil_io` (firmware/common/hil_io.h): where each tensor's
bytes are, how many, its dtype and shape. Before writing a byte the harness checks the input table
against the program it exported (an image built from another program is refused, naming the input),
and every address against the board's RAM; the magic is written last, so the firmware never runs on
half-written inputs. The console then says who gave the inputs, and a firmware that kept its fallback
fill although the harness wrote them is an error, never a quiet run on other inputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hil.config.board_config import MemoryRegion
from hil.base.errors import TargetError
from hil.records.tensors import InputTensor, TensorSpec
from hil.target.capture import CONSOLE_LAG_S, RunContext
from hil.target.gdbmi import GdbMiSession

# Fixed by firmware/common/hil_io.h (HIL_IO_SYMBOL, HIL_IO_MAGIC, HIL_IO_NOT_A_TENSOR).
IO_SYMBOL = "hil_io"
IO_MAGIC = 0x314F4948  # "HIO1"
NOT_A_TENSOR = 0xFFFFFFFF
# HIL_FMT_INPUTS_SET / HIL_FMT_INPUTS_FALLBACK of firmware/common/hil_protocol.h, whole lines.
INPUTS_LINE = re.compile(r"Inputs: (\d+) tensor\(s\) (set by the debugger|filled with byte 0x[0-9a-fA-F]+ \(fallback[^)\n]*\))[^\n]*\n")
REBUILD_HINT = ("rebuild it with firmware/common/hil_io.c and firmware/app/io_tables.cpp (the shared application"
                " has them), or run without the numerics check (--no-numerics)")


@dataclass(frozen=True)
class TableEntry:
    """One row of a `hil_io` table: the tensor's position in the method, its spec and where its bytes are."""

    index: int
    spec: TensorSpec | None  # None: an output that is no tensor
    address: int
    nbytes: int


@dataclass(frozen=True)
class OutputTensor:
    """One output as the target left it after its last run."""

    index: int
    spec: TensorSpec | None
    data: bytes


def write_inputs(gdb: GdbMiSession, ctx: RunContext, inputs: Sequence[InputTensor], regions: list[MemoryRegion]) -> None:
    """At `hil_config_ready`: check the image's input table against `inputs`, write their bytes, then the magic."""
    table = read_table(gdb, ctx, "inputs")
    if len(table) != len(inputs):
        raise ctx.failure(f"the image publishes {len(table)} tensor input(s) in {IO_SYMBOL}, the program has"
                          f" {len(inputs)}: the image was built from another program; nothing was written")
    for entry, tensor in zip(table, inputs):
        if (entry.index, entry.spec) != (tensor.index, tensor.spec) or entry.nbytes != len(tensor.data):
            shown = "no tensor" if entry.spec is None else entry.spec.describe()
            raise ctx.failure(
                f"input {tensor.index}: the image's {IO_SYMBOL} table says input {entry.index} is {shown}"
                f" ({entry.nbytes} B), the program's is {tensor.spec.describe()} ({len(tensor.data)} B):"
                " the image was built from another program; nothing was written")
        _check_in_ram(ctx, f"input {entry.index}", entry, regions)
    try:
        for entry, tensor in zip(table, inputs):
            gdb.write_memory(entry.address, tensor.data)
        gdb.write_int(f"{IO_SYMBOL}.inputs_magic", IO_MAGIC)  # last: it makes the rest valid
    except TargetError as exc:
        raise ctx.failure(f"cannot write the inputs into {IO_SYMBOL}: {exc}") from exc


def check_inputs_echo(ctx: RunContext, count: int, timeout: float = CONSOLE_LAG_S) -> None:
    """The console's `Inputs:` line must say the firmware took the `count` inputs the debugger wrote."""
    try:
        match = ctx.serial.expect(INPUTS_LINE, timeout)
    except TargetError as exc:
        raise ctx.failure(f"the console never printed 'Inputs: ...' after the harness wrote {count} input(s): {exc}") from exc
    said = int(match.group(1))
    if match.group(2) != "set by the debugger" or said != count:
        raise ctx.failure(f"the harness wrote {count} input(s) but the firmware says {match.group(0).strip()!r}")


def read_outputs(gdb: GdbMiSession, ctx: RunContext, regions: list[MemoryRegion]) -> tuple[OutputTensor, ...]:
    """At `hil_etdump_ready`: every output the firmware published, its bytes read through the debugger."""
    table = read_table(gdb, ctx, "outputs")
    outputs = []
    for entry in table:
        if entry.spec is None:
            outputs.append(OutputTensor(entry.index, None, b""))
            continue
        if entry.nbytes != entry.spec.nbytes:
            raise ctx.failure(f"output {entry.index}: {IO_SYMBOL} says {entry.nbytes} B for a {entry.spec.describe()}"
                              f" tensor ({entry.spec.nbytes} B)")
        _check_in_ram(ctx, f"output {entry.index}", entry, regions)
        try:
            data = gdb.read_memory(entry.address, entry.nbytes) if entry.nbytes else b""
        except TargetError as exc:
            raise ctx.failure(f"cannot read output {entry.index}: {exc}") from exc
        outputs.append(OutputTensor(entry.index, entry.spec, data))
    return tuple(outputs)


def read_table(gdb: GdbMiSession, ctx: RunContext, side: str) -> list[TableEntry]:
    """The `hil_io.inputs` or `.outputs` table as the firmware filled it; an image without `hil_io` is refused."""
    count_field = "num_inputs" if side == "inputs" else "num_outputs"
    try:
        count = gdb.evaluate_int(f"{IO_SYMBOL}.{count_field}")
        limit = gdb.evaluate_int(f"sizeof({IO_SYMBOL}.{side}) / sizeof({IO_SYMBOL}.{side}[0])")
    except TargetError as exc:
        raise ctx.failure(f"image {gdb.elf} has no {IO_SYMBOL}: it predates the tensor handshake; {REBUILD_HINT}"
                          f" [gdb: {exc}]") from exc
    if count > limit:
        raise ctx.failure(f"{IO_SYMBOL}.{count_field} = {count}, more than the table's {limit} rows")
    entries = []
    try:
        for k in range(count):
            row = f"{IO_SYMBOL}.{side}[{k}]"
            dtype, dim = gdb.evaluate_int(f"{row}.dtype"), gdb.evaluate_int(f"{row}.dim")
            sizes = tuple(_signed(gdb.evaluate_int(f"{row}.sizes[{d}]")) for d in range(min(dim, 8)))
            spec = None if dtype == NOT_A_TENSOR else TensorSpec(dtype, sizes)
            entries.append(TableEntry(gdb.evaluate_int(f"{row}.index"), spec, gdb.evaluate_int(f"{row}.data"),
                                      gdb.evaluate_int(f"{row}.nbytes")))
    except TargetError as exc:
        raise ctx.failure(f"cannot read {IO_SYMBOL}.{side}: {exc}") from exc
    return entries


def _check_in_ram(ctx: RunContext, what: str, entry: TableEntry, regions: list[MemoryRegion]) -> None:
    if entry.nbytes and not any(region.contains(entry.address, entry.nbytes) for region in regions):
        raise ctx.failure(f"{what}: [0x{entry.address:08x}, +{entry.nbytes}) lies outside the board's RAM; refusing it")


def _signed(value: int) -> int:
    """An int32_t gdb printed through `(unsigned long long)` (sign-extended)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value
