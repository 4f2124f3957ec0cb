"""What a `.pte` program holds, read from its flatbuffer: the operator calls in execution order,
the delegate calls, the planned memory and the delegate payloads.

Tests use it as the independent truth ("every CPU operator of the program appears in the profile"),
the analysis uses it for the memory figures a board cannot print.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.base.errors import AnalysisError, FileContentError
from hil.records.validate.pte import check_pte_bytes


@dataclass(frozen=True)
class Instruction:
    """One instruction of the method's chain that does work: a CPU kernel or a delegate call."""

    instruction_id: int
    kind: str  # "kernel" or "delegate"
    name: str  # operator name ("aten::convolution") or delegate backend id


@dataclass
class ProgramInfo:
    method: str
    instructions: list[Instruction]
    planned_buffer_sizes: list[int]

    @property
    def kernels(self) -> list[Instruction]:
        return [ins for ins in self.instructions if ins.kind == "kernel"]

    @property
    def delegates(self) -> list[Instruction]:
        return [ins for ins in self.instructions if ins.kind == "delegate"]


def load_program(pte: Path | bytes) -> tuple[Any, str, int]:
    """The decoded Program, a name for error messages, and the file size.

    The flatbuffer file identifier is checked first (hil.records.validate.pte): the deserializer turns
    garbage into an empty Program instead of failing.
    """
    from executorch.exir._serialize._program import deserialize_pte_binary

    where = "the given bytes" if isinstance(pte, bytes) else str(pte)
    try:
        data = pte if isinstance(pte, bytes) else Path(pte).read_bytes()
        check_pte_bytes(data, where)
        program = deserialize_pte_binary(data).program
    except FileContentError:
        raise
    except Exception as exc:
        raise AnalysisError(f"{where} is not an ExecuTorch program (.pte): {type(exc).__name__}: {exc}") from exc
    return program, where, len(data)


def method_plan(pte: Path | bytes, method: str = "forward") -> Any:
    """The execution plan of `method` in `pte`; AnalysisError naming the file when it is not a program or lacks it."""
    program, where, _ = load_program(pte)
    plans = {plan.name: plan for plan in program.execution_plan}
    if method not in plans:
        raise AnalysisError(f"{where} has no method '{method}' (methods: {', '.join(plans)})")
    return plans[method]


def read_program(pte: Path | bytes, method: str = "forward") -> ProgramInfo:
    """Decode `pte` and describe `method`; a file that is not a program raises AnalysisError naming it."""
    from executorch.exir.schema import DelegateCall, KernelCall

    plan = method_plan(pte, method)
    instructions = []
    for instruction_id, ins in enumerate(plan.chains[0].instructions):
        args = ins.instr_args
        if isinstance(args, KernelCall):
            op = plan.operators[args.op_index]
            instructions.append(Instruction(instruction_id, "kernel", op.name))
        elif isinstance(args, DelegateCall):
            instructions.append(Instruction(instruction_id, "delegate", plan.delegates[args.delegate_index].id))
    sizes = [int(size) for size in (plan.non_const_buffer_sizes or [])[1:]]
    return ProgramInfo(method, instructions, sizes)


def pte_memory(pte_path: Path | str) -> dict[str, Any]:
    """Planned-buffer sizes and delegate payload sizes per method: the memory a board cannot print."""
    from executorch.exir.schema import DataLocation

    program, _, file_bytes = load_program(Path(pte_path))
    methods = {}
    for plan in program.execution_plan:
        delegates = []
        for delegate in plan.delegates:
            ref = delegate.processed
            size = len(program.backend_delegate_data[ref.index].data) if ref.location == DataLocation.INLINE else None
            delegates.append({"backend": delegate.id, "payload_bytes": size})
        planned = list(plan.non_const_buffer_sizes[1:])  # index 0 is reserved for constants
        methods[plan.name] = {"planned_buffers": planned, "planned_bytes": sum(planned), "delegates": delegates}
    return {"file_bytes": file_bytes, "methods": methods}
