"""A real ETDump from the ExecuTorch runtime on this machine: the buffer the QEMU image carries
when the program has no delegate ("simulated buffer, real for now").

Behaviour of the pybindings runtime seen here (executorch 1.5.1), which this module relies on:
- the binding does not copy the program bytes: they must outlive the module, or `forward` segfaults;
- every `forward` adds one "Execute" run_data block; loading adds one "Default" block
  (`Method::init`, `Program::load_method`);
- `write_etdump_result_to_file` hands the buffer over: a second call on the same module segfaults,
  and a call before any `forward` writes nothing. So: one fresh module per ETDump, written once;
- times are nanoseconds; the file is the size-prefixed runtime layout ("ED00" at bytes 8..12).
Runtime errors (bad inputs, a bad program) raise RuntimeError rather than crash, and repeated
runs keep memory flat, so this runs in-process.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base.errors import ModelError
from hil.records.validate.etdump import ETDUMP_IDENTIFIER, HEAD_BYTES, IDENTIFIER_AT
from hil.records.validate.pte import PTE_IDENTIFIER

if TYPE_CHECKING:
    import torch


def host_etdump(
    pte_bytes: bytes,
    inputs: Sequence["torch.Tensor"],
    iterations: int,
    *,
    debug_buffer_size: int = 0,
    label: str = "program",
) -> bytes:
    """Run `pte_bytes` `iterations` times with event tracing on and return the ETDump bytes.

    `debug_buffer_size` > 0 also records intermediate outputs (a bigger ETDump). `label` names the
    program in error messages (e.g. the .pte path).
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    program = bytes(pte_bytes)  # our own reference: kept alive until the module is gone
    if program[4:8] != PTE_IDENTIFIER:
        raise ModelError(f"{label} is not an ExecuTorch program (identifier {program[4:8]!r}, want {PTE_IDENTIFIER!r})")
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    from hil.base.native_log import native_lines

    with native_lines(f"replay: run {label} {iterations} time(s) on the host runtime for its ETDump"):
        data = _traced_runs(_load_for_executorch_from_buffer, program, inputs, iterations, debug_buffer_size, label)
    if data[IDENTIFIER_AT:HEAD_BYTES] != ETDUMP_IDENTIFIER:
        raise ModelError(f"host runtime ETDump for {label} lacks the size-prefixed {ETDUMP_IDENTIFIER!r} header")
    return data


def _traced_runs(load: Any, program: bytes, inputs: Sequence["torch.Tensor"], iterations: int,
                 debug_buffer_size: int, label: str) -> bytes:
    """One fresh module over `program`: `iterations` forwards, then its ETDump written once and read back."""
    module = load(program, enable_etdump=True, debug_buffer_size=debug_buffer_size)
    try:
        for index in range(iterations):
            try:
                module.forward(tuple(inputs))
            except RuntimeError as exc:
                raise ModelError(f"host runtime failed on {label}, iteration {index + 1}: {exc}") from exc
        with tempfile.TemporaryDirectory(prefix="hil-etdump-") as tmp:
            etdump_path = Path(tmp) / "trace.etdump"
            module.write_etdump_result_to_file(str(etdump_path), str(Path(tmp) / "debug.bin"))
            if not etdump_path.is_file():
                raise ModelError(f"host runtime wrote no ETDump for {label} (runtime built without event tracer?)")
            return etdump_path.read_bytes()
    finally:
        del module  # before `program` (the caller's), which it points into
