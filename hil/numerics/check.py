"""The numerics check of a run: which inputs the target gets, and how its outputs compare with the truth.

Two references, both computed on the host from the same inputs: the eager PyTorch model (what the
model means) and the host ExecuTorch runtime running the same `.pte` (what the program computes with
portable kernels; only for CPU-only programs, since the host has no NPU backend). They are computed
where the model's code may run, never in this process for a user's model, and kept in the export's cache
entry (hil.aot.references); this module only compares. The profile's `numerics` section is built here and
only here (`numerics_section`), a plain JSON-able dict.

Where no outputs are computed the section says why instead of giving numbers: the QEMU replay image
replays an ETDump and runs no kernel; a simulated-Neutron program's delegate calls take modelled
time and compute nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.numerics import metrics
from hil.records.numerics_section import COMPUTED, NOT_COMPUTED
from hil.records.tensors import (InputTensor, check_inputs, load_inputs_file, non_finite, program_io,
                                  tensor_from_bytes)

if TYPE_CHECKING:
    import torch

    from hil.aot.references import References
    from hil.target.tensor_io import OutputTensor

REPLAY_REASON = "replay image"
SIM_NPU_REASON = "simulated NPU"
DISABLED_REASON = "numerics check off (--no-numerics)"


@dataclass(frozen=True)
class RunInputs:
    """The inputs of one run: as the target gets them (checked against the program) and as torch tensors."""

    source: str
    tensors: tuple[InputTensor, ...]
    torch_inputs: tuple["torch.Tensor", ...]

    def describe(self) -> dict[str, Any]:
        return {"source": self.source,
                "tensors": [{"index": t.index, "dtype": t.spec.dtype_name, "shape": list(t.spec.shape),
                             "sha256": hashlib.sha256(t.data).hexdigest()} for t in self.tensors]}


def run_inputs(pte: Path, example_inputs: tuple["torch.Tensor", ...], model: str, inputs_file: Path | None, *,
               allow_nonfinite: bool = False) -> RunInputs:
    """The user's file, else the model factory's example inputs, checked against `pte`'s method (InputError otherwise;
    inputs holding NaN or infinity too, unless `allow_nonfinite`)."""
    if inputs_file is not None:
        names, tensors = load_inputs_file(inputs_file)
        source = f"file {inputs_file}"
    else:
        names, tensors = [f"input {i}" for i in range(len(example_inputs))], list(example_inputs)
        source = f"example inputs of {model}"
    checked = check_inputs(names, tensors, program_io(pte), source, allow_nonfinite=allow_nonfinite)
    return RunInputs(source, checked, tuple(tensors))


def skip_reason(*, enabled: bool, firmware: str, delegate: str, elf: Path | None = None) -> str | None:
    """Why this run computes no outputs to compare, or None when it does.

    A user's image (`firmware.elf`) without `hil_io` predates the tensor handshake: it still runs, on its
    fill byte, and the section says so instead of a number."""
    if not enabled:
        return DISABLED_REASON
    if firmware == "replay":
        return REPLAY_REASON
    if firmware == "user" and elf is not None and not has_tensor_io(elf):
        return f"image {elf.name} has no hil_io: it predates the tensor handshake, rebuild it"
    if delegate == "neutron-sim":
        return SIM_NPU_REASON
    return None


def has_tensor_io(elf: Path) -> bool:
    """Whether the image defines `hil_io` (firmware/common/hil_io.c), read from its symbol table."""
    from hil.records.elf_reader import read_elf
    from hil.target.tensor_io import IO_SYMBOL

    return bool(read_elf(elf).symbols_named(IO_SYMBOL))


def wants_references(inputs: RunInputs | None, outputs: "tuple[OutputTensor, ...] | None", *,
                     reason: str | None) -> bool:
    """Whether numerics_section compares with references: outputs were read, and all of them are finite."""
    if reason is not None or inputs is None or outputs is None:
        return False
    target = [tensor_from_bytes(o.data, o.spec) for o in outputs if o.spec is not None]
    return not _non_finite_outputs(outputs, target)


def numerics_section(inputs: RunInputs | None, outputs: "tuple[OutputTensor, ...] | None",
                     refs: "References | None", *, reason: str | None,
                     output_scales: "list[float | None] | None" = None) -> dict[str, Any]:
    """The profile's `numerics` section: the target's outputs against eager PyTorch and the host runtime.

    `refs` are the references of `inputs` (hil.aot.references), needed only when `wants_references`. For an int8
    program (`output_scales`: each output's quantization scale) the section adds `int8` (hil.numerics.int8), and
    with the float model known, `vs_float_model`: the quantization error."""
    section: dict[str, Any] = {"inputs": inputs.describe() if inputs is not None else None}
    if reason is not None or inputs is None or outputs is None:
        return {"status": NOT_COMPUTED, "reason": reason or "no outputs were read", **section}
    target = [tensor_from_bytes(o.data, o.spec) for o in outputs if o.spec is not None]
    broken = _non_finite_outputs(outputs, target)
    if broken:
        return {"status": COMPUTED, **section, **broken}
    if refs is None:
        raise ValueError("numerics_section: finite outputs to compare, and no references given")
    references: dict[str, list["torch.Tensor"] | str] = {
        "eager": list(refs.eager),
        "host_runtime": refs.host_runtime if isinstance(refs.host_runtime, str) else list(refs.host_runtime)}
    if refs.float_model is not None:
        references["float_model"] = list(refs.float_model)
    per_output: list[dict[str, Any]] = [
        {"index": o.index, "dtype": o.spec.dtype_name, "shape": list(o.spec.shape)} for o in outputs if o.spec is not None
    ]
    summary: dict[str, Any] = {}
    for name, ref in references.items():
        if isinstance(ref, str):
            summary[name] = {"skipped": ref}
            continue
        if len(ref) != len(target):
            summary[name] = {"skipped": f"{len(ref)} reference output(s) for {len(target)} on the target"}
            continue
        shapes = [(list(t.shape), list(r.shape)) for t, r in zip(target, ref) if t.shape != r.shape]
        if shapes:
            summary[name] = {"skipped": f"shapes differ: {shapes[0][0]} on the target, {shapes[0][1]} in the reference"}
            continue
        figures = [metrics.compare(t, r) for t, r in zip(target, ref)]
        for entry, fig in zip(per_output, figures):
            entry[f"vs_{name}"] = fig
        summary[name] = metrics.worst(figures)
    made = {"status": COMPUTED, **section, "outputs": per_output, "vs_eager": summary["eager"],
            "vs_host_runtime": summary["host_runtime"]}
    if "float_model" in summary:
        made["vs_float_model"] = summary["float_model"]  # the quantization error, apart from the reference's
    if output_scales:
        from hil.numerics.int8 import int8_figures

        made["int8"] = int8_figures(target, references, output_scales)
    return made


def _non_finite_outputs(outputs: "tuple[OutputTensor, ...]", target: list["torch.Tensor"]) -> dict[str, Any]:
    """The section's figures when a target output holds NaN or infinity: the counts, and figures that are no
    numbers. NaN against a NaN reference agrees in every arg-max (top-1 100%) and bounds nothing, so no
    comparison is made; a budget or the SNR gate reads `snr_db` None without `bit_exact` as not finite."""
    per_output = []
    for o, tensor in zip([o for o in outputs if o.spec is not None], target):
        nan, inf = non_finite(tensor)
        per_output.append({"index": o.index, "dtype": o.spec.dtype_name, "shape": list(o.spec.shape),
                           "nan": nan, "inf": inf})
    if not any(entry["nan"] or entry["inf"] for entry in per_output):
        return {}
    figures = {"max_abs_error": None, "max_rel_error": None, "snr_db": None, "cosine": None, "bit_exact": False,
               "non_finite": True}
    return {"non_finite_outputs": [e for e in per_output if e["nan"] or e["inf"]], "outputs": per_output,
            "vs_eager": dict(figures), "vs_host_runtime": dict(figures)}


def write_outputs(path: Path, outputs: "tuple[OutputTensor, ...]") -> Path:
    """The target's tensor outputs as a .pt (a tuple of tensors, in order: the format `--hil-inputs` reads)."""
    import io

    import torch

    from hil.base import atomic

    buffer = io.BytesIO()
    torch.save(tuple(tensor_from_bytes(o.data, o.spec) for o in outputs if o.spec is not None), buffer)
    return atomic.write_bytes(path, buffer.getvalue())
