"""The numerics check's references (hil.numerics.check): what the eager PyTorch model and the host ExecuTorch
runtime compute from a run's inputs, computed where the model's code may run and kept in the export's entry.

Why here, not in the numerics check: the eager outputs need the user's model, and its factory and forward
are arbitrary code that must not run in hil's own process (a fork outlived hil, `sys.exit(0)` gave exit 0
and no profile, 100 MB of prints broke `--json`: hil.aot.child). So the references of the example inputs
are computed by the export itself (hil.aot.export, in the export's child for a user's model) and stored in
its cache entry; a run with other inputs (`--inputs FILE`) computes them in a child of their own, with the
export's deadline and log, and stores them the same way. A warm run never runs the model's code, nor
loads the program on the host runtime, for inputs it has seen.

Layout: `<entry>/references/<digest16>/references.pt`, sealed (hil.base.entry_check); the digest is the
sha256 of the inputs (each tensor's dtype, shape and bytes), and the full digest is kept inside too. The
entry's own record lists its flat files only, so this folder, added after the entry was sealed, does not
unseal it. A damaged references folder is removed and computed again (hil.base.cache_entry). A cache that
cannot be written (a shared, read-only CI cache) still works: the references are computed, not stored.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.aot.cache import publish_dir, staging_dir
from hil.base import atomic, log
from hil.base.cache_entry import CacheFault, served
from hil.base.entry_check import seal
from hil.base.errors import ModelError

if TYPE_CHECKING:
    import torch
    from torch import nn

FOLDER = "references"
FILE = "references.pt"
SCHEMA = "et-hil/references/1"
WHAT = "the numerics references"
WHAT_ENTRY = "numerics references"


@dataclass(frozen=True)
class References:
    """The reference outputs of one program on one set of inputs: eager PyTorch's, and the host runtime's
    or the words why it was not run (e.g. "not run: the host runtime has no neutron backend")."""

    eager: tuple["torch.Tensor", ...]
    host_runtime: tuple["torch.Tensor", ...] | str
    # The float model's outputs, for a quantized program whose float model is known: the quantization error.
    float_model: tuple["torch.Tensor", ...] | None = None

    def to_data(self, digest: str) -> dict[str, Any]:
        host = self.host_runtime if isinstance(self.host_runtime, str) else list(self.host_runtime)
        floats = None if self.float_model is None else list(self.float_model)
        return {"schema": SCHEMA, "inputs_sha256": digest, "eager": list(self.eager), "host_runtime": host,
                "float_model": floats}

    @classmethod
    def from_data(cls, data: object, digest: str) -> "References | None":
        """The references `data` holds for inputs of `digest`; None for anything else."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("inputs_sha256") != digest:
            return None
        eager, host = _tensor_tuple(data.get("eager")), data.get("host_runtime")
        host = host if isinstance(host, str) else _tensor_tuple(host)
        floats = None if data.get("float_model") is None else _tensor_tuple(data.get("float_model"))
        return None if eager is None or host is None else cls(eager, host, floats)


def _tensor_tuple(value: object) -> tuple["torch.Tensor", ...] | None:
    import torch

    if not isinstance(value, list) or not all(isinstance(t, torch.Tensor) for t in value):
        return None
    return tuple(value)


def inputs_digest(inputs: Sequence["torch.Tensor"]) -> str:
    """sha256 over each input's dtype, shape and bytes, in order: what names the inputs' references."""
    from hil.records.tensors import tensor_bytes

    digest = hashlib.sha256()
    for tensor in inputs:
        digest.update(f"{tensor.dtype}|{list(tensor.shape)}|".encode())
        data = tensor_bytes(tensor)
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def host_runtime_reason(delegate: str) -> str | None:
    """Why the host runtime cannot run the program (it has no NPU backend), or None when it can."""
    return None if delegate == "none" else f"not run: the host runtime has no {delegate} backend"


def eager_outputs(module: "nn.Module", inputs: Sequence["torch.Tensor"]) -> tuple["torch.Tensor", ...]:
    """The eager module's outputs (its tensors, flattened in order) on `inputs`, without autograd."""
    import torch

    with torch.no_grad():
        return tuple(_tensors(module(*inputs)))


def host_runtime_outputs(program: bytes | Path, inputs: Sequence["torch.Tensor"]) -> tuple["torch.Tensor", ...]:
    """The host ExecuTorch runtime's outputs of the program (a .pte or its bytes; portable kernels) on `inputs`."""
    from executorch.runtime import Runtime

    from hil.base.native_log import native_lines

    data = program if isinstance(program, bytes) else Path(program).read_bytes()  # referenced while it lives
    name = "the exported program" if isinstance(program, bytes) else Path(program).name
    with native_lines(f"numerics: load and run {name} on the host runtime"):
        loaded = Runtime.get().load_program(data)
        result = loaded.load_method("forward").execute(list(inputs))
        del loaded
    return tuple(_tensors(result))


def host_reference(program: bytes | Path, inputs: Sequence["torch.Tensor"],
                   delegate: str) -> tuple["torch.Tensor", ...] | str:
    """The host runtime's outputs, or the words why there are none: no backend for the delegate, or the runtime
    failed on the program (its error, in one line: the numerics section says it instead of a figure)."""
    reason = host_runtime_reason(delegate)
    if reason is not None:
        return reason
    try:
        return host_runtime_outputs(program, inputs)
    except Exception as exc:  # the runtime's own error (RuntimeError from the binding): the reference's, not the run's
        said = str(exc).splitlines()[0] if str(exc) else "no detail"
        return f"not run: the host runtime failed on the program ({type(exc).__name__}: {said})"


def _tensors(value: Any) -> list["torch.Tensor"]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value.detach().clone()]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    return []


def folder_of(entry: Path, digest: str) -> Path:
    return Path(entry) / FOLDER / digest[:16]


def store(entry: Path, digest: str, references: References) -> bool:
    """Keep `references` in the export entry `entry` (sealed, published in one rename); False when the cache
    cannot be written (they were computed all the same) or another session stored them first."""
    final = folder_of(entry, digest)
    try:
        with staging_dir(final.parent, f".{final.name}.") as staging:
            atomic.write_bytes(staging / FILE, saved(references.to_data(digest)))
            seal(staging)
            return publish_dir(staging, final)
    except OSError:
        return False  # a read-only cache: computed, not kept


def load(entry: Path, digest: str) -> References | None:
    """The references stored in `entry` for inputs of `digest`; None when there are none, or the stored ones
    were damaged (removed, so they are computed and stored again; left in place in a read-only cache)."""
    import torch

    folder = folder_of(entry, digest)
    try:
        if not served(folder, WHAT_ENTRY, [FILE]):
            return None
    except CacheFault as exc:  # a read-only cache: compute them, never serve the damaged copy
        log.warning(f"{exc}; computing them for this run")
        return None
    try:
        data = torch.load(folder / FILE, weights_only=True)
    except (OSError, RuntimeError, ValueError, EOFError) as exc:
        log.warning(f"cache entry {folder} ({WHAT_ENTRY}) cannot be read ({type(exc).__name__}); computing them again")
        return None
    return References.from_data(data, digest)


def saved(data: dict[str, Any]) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(data, buffer)
    return buffer.getvalue()
