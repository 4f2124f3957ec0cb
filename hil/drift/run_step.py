"""The debug-output run's own steps, called by the pipeline: refuse what cannot fit before anything is
built, the image option, and the `drift` section after the run.

The inputs the target ran are the ETRecord's representative inputs: those the harness wrote into the
target when it wrote any (`inputs`), else the firmware's fill byte over every input tensor
(HIL_INPUT_FILL_BYTE = 0x00 in firmware/app/hil_config.h: zeros of the example inputs' shapes and dtypes);
`target_inputs` is the one place that decides, and the section's `inputs` says which it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.drift.debug_size import debug_buffer_room, debug_need
from hil.drift.gap import numeric_gap, with_representative_inputs
from hil.drift.readout import DEBUG_FILE
from hil.base.errors import AnalysisError, InputError
from hil.base.commands import SOURCES

if TYPE_CHECKING:
    import torch

    from hil.aot.export import CompiledModel
    from hil.config.board_config import BoardConfig
    from hil.records.manifest import Manifest

IMAGE_OPTION = "HIL_DEBUG_BUFFER_SIZE"
INPUTS_NOTE = "the firmware's inputs: every input byte 0x00 (HIL_INPUT_FILL_BYTE)"
WRITTEN_NOTE = "the inputs the harness wrote into the target"


def image_options(cfg: "BoardConfig") -> dict[str, str]:
    """The runtime image's CMake option: the board's debug buffer (a separate image cache key)."""
    return {IMAGE_OPTION: str(debug_buffer_room(cfg))}


def require_runtime(cfg: "BoardConfig", firmware_kind: str) -> None:
    """Only an image that runs the program records its outputs: a replay image has none to give."""
    if firmware_kind != "runtime":
        raise InputError(f"board '{cfg.name}': --hil-debug-outputs needs the QEMU runtime image (the firmware that "
                         f"runs the program), but this run would use the {firmware_kind} image; assemble its sources with "
                         f"{SOURCES} (or set RT700_SDK_DIR to a workspace), and use --delegate none or neutron-sim")


def target_inputs(compiled: "CompiledModel",
                  written: Sequence["torch.Tensor"] | None) -> tuple[list["torch.Tensor"], str]:
    """The input tensors the target ran and what they were (see the module's docstring)."""
    import torch

    from hil.aot.export import load_inputs

    if written is not None:
        if not all(isinstance(tensor, torch.Tensor) for tensor in written):
            raise TypeError(f"the inputs written into the target must be given as torch tensors, not "
                            f"{', '.join(sorted({type(t).__name__ for t in written}))}")
        return list(written), WRITTEN_NOTE
    return [torch.zeros_like(tensor) for tensor in load_inputs(compiled)], INPUTS_NOTE


def analyse(out: Path, compiled: "CompiledModel", debug_buffer: bytes | None, *, runs: int, threshold_db: float,
            simulated_npu: bool, figures: dict[str, int],
            inputs: Sequence["torch.Tensor"] | None = None) -> dict[str, Any]:
    """Save the run's ETRecord with the target's inputs (`inputs`: those written into it, if any) and compute
    the `drift` section."""
    tensors, note = target_inputs(compiled, inputs)
    with_representative_inputs(compiled.etrecord_path, tensors, out / "etrecord.bin")
    section = _gap_or_error(out, threshold_db, simulated_npu)
    section["inputs"] = note
    section["debug_buffer"] = buffer_figures(out / "model.pte", runs, debug_buffer, figures)
    return section


def buffer_figures(pte: Path, runs: int, debug_buffer: bytes | None, figures: dict[str, int]) -> dict[str, Any]:
    """The debug buffer's size, what the program predicted for `runs` runs and what the target used."""
    predicted = debug_need(pte).buffer_bytes(runs)
    used = None if debug_buffer is None else len(debug_buffer)
    return {"capacity_bytes": figures.get("debug_buffer_bytes"), "predicted_bytes": predicted, "used_bytes": used,
            "runs": runs, "as_predicted": used == predicted}


def drift_of_folder(folder: Path, manifest: Manifest, threshold_db: float | None) -> dict[str, Any]:
    """The `drift` section of a debug-output run folder, from its files (its ETRecord carries the inputs)."""
    from hil.drift.gap import DEFAULT_SNR_DB

    stored = DEFAULT_SNR_DB if manifest.drift_snr_db is None else manifest.drift_snr_db
    threshold = threshold_db if threshold_db is not None else stored
    section = _gap_or_error(folder, float(threshold), manifest.delegate == "neutron-sim")
    section["inputs"] = manifest.drift_inputs or INPUTS_NOTE
    figures = dict(manifest.debug_buffer or {})
    section["debug_buffer"] = buffer_figures(folder / "model.pte", int(figures.get("runs", 1)),
                                             (folder / DEBUG_FILE).read_bytes(), figures)
    return section


def _gap_or_error(folder: Path, threshold_db: float, simulated_npu: bool) -> dict[str, Any]:
    """The gap of a run folder's files; when the Inspector cannot give one, the section says why and the run's
    profile stands (its timings do not depend on it)."""
    try:
        return numeric_gap(folder / "trace.etdump", folder / "etrecord.bin", folder / DEBUG_FILE,
                           threshold_db=threshold_db, simulated_npu=simulated_npu)
    except AnalysisError as exc:
        return {"threshold_snr_db": threshold_db, "operators": [], "first_drift": None, "note": str(exc)}
