"""Exported test programs kept between test sessions, keyed by the test file that makes them.

Exporting a model and running it on the host runtime takes seconds; the analysis tests (and every
mutant `make mutation` runs them against) need only the files. A folder is made once per content of
the test file and ExecuTorch version, in a temporary folder renamed into place, so concurrent
sessions never see half of it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
from collections.abc import Callable
from pathlib import Path


def cached_folder(tag: str, source_file: str | Path, build: Callable[[Path], None]) -> Path:
    """The folder `build` fills, made once for this content of `source_file`."""
    digest = hashlib.sha256(Path(source_file).read_bytes())
    digest.update(importlib.metadata.version("executorch").encode())
    root = Path(os.environ.get("HIL_CACHE_DIR", Path.home() / ".cache" / "et-hil")) / "test-programs"
    folder = root / f"{tag}-{digest.hexdigest()[:16]}"
    if (folder / ".complete").is_file():
        return folder
    scratch = root / f".{folder.name}.{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    build(scratch)
    (scratch / ".complete").touch()
    try:
        scratch.rename(folder)
    except OSError:  # another session finished first: use its folder
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def write_host_etdump(buffer: bytes, inputs: tuple, iterations: int, etdump: Path) -> None:
    """Run the program `buffer` `iterations` times on the host runtime and write its ETDump (and debug buffer,
    beside it as `.debug`): the dump the analysis tests read, made by ExecuTorch itself."""
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    runner = _load_for_executorch_from_buffer(buffer, enable_etdump=True, debug_buffer_size=1 << 20)
    for _ in range(iterations):
        runner.forward(inputs)
    runner.write_etdump_result_to_file(str(etdump), str(etdump.with_suffix(".debug")))
    del runner  # before the buffer goes: the binding does not copy it


def lower_neutron_sim(model: "object", inputs: tuple, *, int8: bool = True) -> tuple:
    """(edge, executorch program) as neutron-sim lowers `model`: int8 first (the stand-in quantizer, calibrated on
    `inputs`: the only programs the simulated NPU takes), or float (`int8=False`: it takes nothing of them)."""
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower

    from hil.aot.neutron_sim import neutron_sim_partitioners
    from hil.aot.quantize import Calibration, load_out_variants, neutron_scheme_quantizer, quantize_pt2e

    torch.manual_seed(0)
    model = model.eval()
    if int8:
        model = quantize_pt2e(model, inputs, neutron_scheme_quantizer(), Calibration((inputs,), "example inputs", "0" * 64))
        load_out_variants()
    edge = to_edge_transform_and_lower(
        torch.export.export(model, inputs), partitioner=neutron_sim_partitioners(), generate_etrecord=True)
    return edge, edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
