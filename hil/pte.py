"""What a `.pte` program holds, read from its flatbuffer: the operator calls in execution order,
the delegate calls, the planned memory and the delegate payloads.

Tests use it as the independent truth ("every CPU operator of the program appears in the profile"),
the analysis uses it for the memory figures a board cannot print.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hil.errors import AnalysisError


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
    delegate_payload_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def kernels(self) -> list[Instruction]:
        return [ins for ins in self.instructions if ins.kind == "kernel"]

    @property
    def delegates(self) -> list[Instruction]:
        return [ins for ins in self.instructions if ins.kind == "delegate"]


def read_program(pte: Path | bytes, method: str = "forward") -> ProgramInfo:
    """Decode `pte` and describe `method`; a file that is not a program raises AnalysisError naming it."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import DelegateCall, KernelCall

    data = pte if isinstance(pte, bytes) else Path(pte).read_bytes()
    where = "the given bytes" if isinstance(pte, bytes) else str(pte)
    try:
        program = deserialize_pte_binary(data).program
    except Exception as exc:
        raise AnalysisError(f"{where} is not an ExecuTorch program (.pte): {exc}") from exc
    plans = {plan.name: plan for plan in program.execution_plan}
    if method not in plans:
        raise AnalysisError(f"{where} has no method '{method}' (methods: {', '.join(plans)})")
    plan = plans[method]
    instructions = []
    for instruction_id, ins in enumerate(plan.chains[0].instructions):
        args = ins.instr_args
        if isinstance(args, KernelCall):
            op = plan.operators[args.op_index]
            instructions.append(Instruction(instruction_id, "kernel", op.name))
        elif isinstance(args, DelegateCall):
            instructions.append(Instruction(instruction_id, "delegate", plan.delegates[args.delegate_index].id))
    payloads = {}
    for delegate in plan.delegates:
        ref = delegate.processed
        if int(ref.location) == 0 and ref.index < len(program.backend_delegate_data):
            payloads[delegate.id] = payloads.get(delegate.id, 0) + len(program.backend_delegate_data[ref.index].data)
    sizes = [int(size) for size in (plan.non_const_buffer_sizes or [])[1:]]
    return ProgramInfo(method, instructions, sizes, payloads)
