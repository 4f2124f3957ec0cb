"""How much debug buffer a program's intermediate outputs take per run, read from its .pte, and whether
a board's buffer holds the runs asked for: refused before anything is built or flashed otherwise.

What ETDumpGen writes (executorch 1.5.1, the pinned runtime): after each kernel, the tensors of its
out arguments (the codegen logs `f.func.arguments.out`, or the one return slot of a functional op);
after a delegate call, every argument (the runtime cannot tell its inputs from its outputs); after
each run, the program's outputs. Each tensor goes to the buffer's data sink at the next 64-byte
boundary (BufferDataSink). Shapes are the program's planned (upper-bound) shapes, so this is the most
a run can take.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base.errors import InputError
from hil.base.checks import whole_number
from hil.config.inputs import mib

if TYPE_CHECKING:
    from hil.config.board_config import BoardConfig

# BufferDataSink's default alignment of each tensor it stores.
SINK_ALIGNMENT = 64
# The board file's room for the debug buffer: the size the image's HIL_DEBUG_BUFFER_SIZE is built with.
ROOM_KEY = "memory.debug_buffer_bytes"


@dataclass(frozen=True)
class DebugNeed:
    """The tensors one run writes into the debug buffer, in order, and what they come to."""

    tensor_sizes: tuple[int, ...]

    @property
    def tensor_bytes(self) -> int:
        """The bytes of the tensors alone, without the sink's padding."""
        return sum(self.tensor_sizes)

    def buffer_bytes(self, runs: int) -> int:
        """What `runs` runs leave used in a 64-byte-aligned buffer: each tensor starts at the next boundary."""
        used = 0
        for _ in range(runs):
            for size in self.tensor_sizes:
                if size:
                    used = -(-used // SINK_ALIGNMENT) * SINK_ALIGNMENT + size
        return used

    def max_runs(self, room: int) -> int:
        """The most runs whose outputs fit in `room` bytes."""
        per_run = self.buffer_bytes(2) - self.buffer_bytes(1) if self.tensor_bytes else 0
        if per_run == 0:
            return 1 << 31
        return max(0, (room - self.buffer_bytes(1)) // per_run + 1) if room >= self.buffer_bytes(1) else 0


def debug_need(pte: Path | bytes, method: str = "forward") -> DebugNeed:
    """The debug-buffer tensors of one run of `method` of the program `pte`."""
    from executorch.exir.schema import DelegateCall, KernelCall

    from hil.records.pte import method_plan

    plan = method_plan(pte, method)
    sizes: list[int] = []
    for chain in plan.chains:
        for ins in chain.instructions:
            args = ins.instr_args
            if isinstance(args, KernelCall):
                op = plan.operators[args.op_index]
                logged = _logged_arguments(list(args.args), _out_arguments(op.name, op.overload))
            elif isinstance(args, DelegateCall):
                logged = list(args.args)
            else:
                continue
            for index in logged:
                sizes.extend(_tensor_sizes(plan.values, index))
    for index in plan.outputs:
        sizes.extend(_tensor_sizes(plan.values, index))
    return DebugNeed(tuple(sizes))


def _logged_arguments(args: list[int], outs: int) -> list[int]:
    """The values a kernel call logs. The emitted argument list ends with the out arguments and then the
    return slot (which aliases them); the generated wrapper logs the out arguments, or the return slot of an
    operator without any."""
    return args[-1 - outs:-1] if outs else args[-1:]


def _out_arguments(name: str, overload: str) -> int:
    """How many out arguments the operator has by torch's schema of it (1 for an operator torch does not know)."""
    import torch

    namespace, _, op = name.partition("::")
    try:
        packet = getattr(getattr(torch.ops, namespace), op)
        schema = getattr(packet, overload or "default")._schema
    except (AttributeError, RuntimeError):
        return 1
    return sum(1 for argument in schema.arguments if argument.is_out)


def _tensor_sizes(values: list[Any], index: int) -> list[int]:
    """Bytes of the tensor(s) value `index` holds: one tensor, a tensor list's members, or none."""
    from executorch.exir.schema import Tensor, TensorList

    val = values[index].val
    if isinstance(val, Tensor):
        return [_nbytes(val)]
    if isinstance(val, TensorList):
        return [_nbytes(values[item].val) for item in val.items]
    return []


def _nbytes(tensor: Any) -> int:
    from executorch.exir.tensor import get_scalar_type

    count = 1
    for size in tensor.sizes:
        count *= int(size)
    return count * get_scalar_type(tensor.scalar_type).itemsize


def debug_buffer_room(cfg: "BoardConfig") -> int:
    """`[memory].debug_buffer_bytes`: the debug buffer this board's image is built with; InputError without it."""
    room = cfg.get(ROOM_KEY)
    if room is None:
        raise InputError(f"board '{cfg.name}' ({cfg.source}) keeps no debug buffer for intermediate outputs: "
                         f"set {ROOM_KEY} in its board file (and build its image with -DHIL_DEBUG_BUFFER_SIZE=that)")
    return int(whole_number(room, f"board '{cfg.name}' ({cfg.source}): {ROOM_KEY}", at_least=1))


def check_debug_fits(cfg: "BoardConfig", pte: Path, runs: int, *, etdump_buffer: int | None = None) -> dict[str, int]:
    """Refuse (InputError, naming the sizes) a program whose `runs` runs of intermediate outputs would not
    fit the board's debug buffer; returns the figures for the run's manifest."""
    room = debug_buffer_room(cfg)
    need = debug_need(pte)
    used = need.buffer_bytes(runs)
    figures = {"debug_buffer_bytes": room, "need_bytes": used, "per_run_tensor_bytes": need.tensor_bytes,
               "tensors_per_run": len(need.tensor_sizes), "runs": runs}
    if used > room:
        beside = f", beside the ETDump buffer of {mib(etdump_buffer)}" if etdump_buffer else ""
        fits = need.max_runs(room)
        hint = (f"run at most {fits} inference(s) (--iterations, --warmup)" if fits
                else f"not even one run fits: give the board a larger {ROOM_KEY}")
        raise InputError(
            f"the intermediate outputs of {pte} do not fit board '{cfg.name}': {runs} run(s) x "
            f"{len(need.tensor_sizes)} tensors ({mib(need.tensor_bytes)} a run) need {mib(used)} of debug buffer, "
            f"the board keeps {mib(room)} ({ROOM_KEY}{beside}); {hint}; refused before flashing")
    return figures
