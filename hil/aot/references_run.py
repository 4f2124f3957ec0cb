"""Computing the numerics references of a run's inputs (hil.aot.references keeps them): in this process for a
built-in model, in a child (hil.aot.child) for a user's model.

Why apart from hil.aot.references: computing them needs the model's reference modules, which for a quantized
program come from the delegate's lowering (hil.aot.quantize_step, hil.aot.export); the export itself stores the
references it computes through hil.aot.references, so that module must not import the export back.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.aot import references
from hil.aot.child import child_main, run_in_child, where
from hil.aot.export import lowering_plan
from hil.aot.models import load_model, resolve_spec
from hil.aot.quantize import wants_quantization
from hil.aot.quantize_step import quantized_module
from hil.aot.references import FILE, WHAT, References, eager_outputs, host_reference, inputs_digest, load, store
from hil.base import atomic
from hil.base.errors import ModelError

if TYPE_CHECKING:
    import torch
    from torch import nn


def reference_modules(spec: str, delegate: str, options: Mapping[str, Any] | None
                      ) -> tuple["nn.Module", "nn.Module | None"]:
    """(the module a program's eager reference runs, the float model or None) for inputs other than the example
    ones: the int8 module when the export quantized (made again: the same calibration data gives the same
    observers), so a quantized program is never compared with its float model as if that were its reference."""
    source = load_model(spec)
    if not wants_quantization(options) and delegate != "neutron":
        return source.module, source.float_module
    module, record = quantized_module(source, lowering_plan(delegate, source, options or {}), delegate, options or {})
    return module, (source.module if record is not None and record.quantizer != "user" else source.float_module)


def compute(spec: str, program: bytes | Path, inputs: Sequence["torch.Tensor"], delegate: str,
            options: Mapping[str, Any] | None) -> References:
    """The references of `inputs`: the eager module's outputs (the int8 module's for a quantized program), the
    host runtime's (or why it was not run), and the float model's when it is known (the quantization error)."""
    module, float_module = reference_modules(spec, delegate, options)
    try:
        eager = eager_outputs(module, inputs)
    except Exception as exc:  # the model's forward on the user's inputs: its fault, named
        raise ModelError(f"the eager run of {where(spec)} on the run's inputs failed:"
                         f" {type(exc).__name__}: {exc}") from exc
    floats = None if float_module is None else eager_outputs(float_module, inputs)
    return References(eager, host_reference(program, inputs, delegate), floats)



def references_for(spec: str, entry: Path, pte: Path, inputs: Sequence["torch.Tensor"], delegate: str, *,
                   timeout_s: float, log_path: Path, options: Mapping[str, Any] | None = None) -> References:
    """The references of `inputs`: stored in the export entry `entry` (the export stores those of the example
    inputs), else computed and stored: a user's model in a child (hil.aot.child: the export's deadline,
    output appended to `log_path`), a built-in one (the harness's own code) in this process."""
    digest = inputs_digest(inputs)
    stored = load(entry, digest)
    if stored is not None:
        return stored
    if resolve_spec(spec).builtin:
        made = compute(spec, pte, inputs, delegate, options)
        store(entry, digest, made)
        return made
    return _computed_in_child(spec, entry, pte, inputs, delegate, digest, timeout_s=timeout_s, log_path=log_path,
                              options=options)


def _computed_in_child(spec: str, entry: Path, pte: Path, inputs: Sequence["torch.Tensor"], delegate: str,
                       digest: str, *, timeout_s: float, log_path: Path,
                       options: Mapping[str, Any] | None) -> References:
    import torch

    with tempfile.TemporaryDirectory(prefix="hil-references-") as scratch:
        given, made = Path(scratch) / "inputs.pt", Path(scratch) / FILE
        torch.save(tuple(inputs), given)
        job = {"spec": spec, "entry": str(entry), "pte": str(pte), "delegate": delegate, "inputs": str(given),
               "digest": digest, "out": str(made), "options": dict(options or {})}
        run_in_child("hil.aot.references_run:references_child", job, spec=spec, what=WHAT,
                     label=f"numerics references of {resolve_spec(spec).name}", timeout_s=timeout_s,
                     log=log_path, scratch=Path(scratch))
        try:
            found = References.from_data(torch.load(made, weights_only=True), digest)
        except (OSError, RuntimeError, ValueError, EOFError):
            found = None
    if found is None:
        raise ModelError(f"{WHAT} of {where(spec)} reported success but left no references (log: {log_path})")
    return found


def references_child(job_text: str) -> None:
    """The child: load the model, compute both references, store them in the entry and hand them over."""
    child_main(job_text, _references_job, WHAT)


def _references_job(job: dict[str, Any]) -> dict[str, Any]:
    import torch

    inputs = tuple(torch.load(job["inputs"], weights_only=True))
    _check_entry_holds(job)
    made = compute(job["spec"], Path(job["pte"]), inputs, job["delegate"], job.get("options"))
    _check_entry_holds(job)  # what the model read may have changed while it ran
    atomic.write_bytes(Path(job["out"]), references.saved(made.to_data(job["digest"])))
    return {"stored": store(Path(job["entry"]), job["digest"], made)}


def _check_entry_holds(job: dict[str, Any]) -> None:
    """The model loaded here must be the one the entry's program was exported from: a checkpoint retrained since
    the lookup would give references of new weights, stored beside the old program. ModelError when it changed."""
    from hil.aot.reads import first_change, read_reads

    entry = Path(job["entry"])
    reads = read_reads(entry)
    if reads is None or not reads.cacheable:
        return  # an entry made for this run alone (hil.aot.entries): nothing later to tell it from
    change = first_change(reads, resolve_spec(job["spec"]).source_files[0].parent)
    if change is not None:
        raise ModelError(f"{WHAT} of {where(job['spec'])} not computed: {change} since the program in {entry} was"
                         " exported; run again to export it afresh")
