"""Per-operator numeric gap between the target's intermediate outputs and the ETRecord's reference graph.

ExecuTorch's Inspector does the comparison (`calculate_numeric_gap`): it runs the ETRecord's reference
graph on the ETRecord's representative inputs, takes the runtime's outputs from the ETDump's debug events
and the debug buffer they point into, and pairs the two by debug handle. So the ETRecord must carry the
inputs the target ran (`with_representative_inputs`), or every gap compares different inputs.

The rule for naming the drift: operators in execution order (their debug handles), the first whose SNR
is below the threshold. An operator whose output is the same to the bit has an infinite SNR (kept as
`snr_db: null, identical: true`, JSON having no infinity). Outputs a simulated NPU never computed are
said to be so, and so are the operators after them, whose inputs are those outputs: neither gets a gap.
A simulated-NPU program is not compared at all (the Inspector cannot pair a delegate's uncomputed
outputs): its delegate calls and operators are listed from the ETDump, each saying why it has no gap.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base.errors import AnalysisError

if TYPE_CHECKING:
    import torch

DEFAULT_SNR_DB = 40.0
DISTANCES = ("SNR", "MSE")
NOT_COMPUTED = "outputs not computed (simulated NPU)"
DOWNSTREAM = "inputs not computed (a simulated-NPU program): no gap"
DELEGATE_EVENT = "DELEGATE_CALL"
# ETDump events that are not one operator's output (the Inspector leaves them out of the gap too).
NOT_OPERATORS = frozenset({"OPERATOR_CALL", "Method::execute", "Method::init", "Program::load_method"})


def with_representative_inputs(etrecord_path: Path, inputs: Sequence["torch.Tensor"], out_path: Path) -> None:
    """Save the ETRecord of `etrecord_path` to `out_path` with `inputs` as its representative inputs."""
    from hil.analysis.blocks import read_etrecord

    etrecord = read_etrecord(Path(etrecord_path))
    etrecord.update_representative_inputs([tensor.clone() for tensor in inputs])
    tmp = Path(out_path).with_name(f".{Path(out_path).name}.partial")
    try:
        etrecord.save(str(tmp))
        tmp.replace(out_path)
    finally:
        tmp.unlink(missing_ok=True)


def numeric_gap(etdump: Path, etrecord: Path, debug_buffer: Path, *, threshold_db: float = DEFAULT_SNR_DB,
                simulated_npu: bool = False) -> dict[str, Any]:
    """The `drift` section: every operator's SNR and MSE against the reference, in execution order, and the
    first operator below `threshold_db` (None when none is)."""
    if simulated_npu:
        return _uncomputed(etdump, etrecord, debug_buffer, threshold_db)
    frames = _gap_frames(etdump, etrecord, debug_buffer)
    operators = []
    for _, row in frames["SNR"].iterrows():
        handles = [int(h) for h in row["aot_debug_handle"]]
        operators.append({
            "op": ", ".join(row["aot_ops"]),
            "runtime_ops": [str(name) for name in row["runtime_ops"]],
            "debug_handles": handles,
            "snr_db": _worst(row["gap"], min),
        })
    mse = {tuple(int(h) for h in row["aot_debug_handle"]): _worst(row["gap"], max)
           for _, row in frames["MSE"].iterrows()}
    operators.sort(key=lambda entry: min(entry["debug_handles"], default=0))
    for entry in operators:
        entry["mse"] = mse.get(tuple(entry["debug_handles"]))
        snr = entry["snr_db"]
        entry["identical"] = snr == math.inf
        if snr == math.inf:
            entry["snr_db"] = None
        entry["status"] = "drift" if snr is not None and snr < threshold_db else "ok"
    first = next((entry for entry in operators if entry["status"] == "drift"), None)
    return {
        "distance": "SNR (dB) of the target's output against the ETRecord's reference graph; MSE beside it",
        "threshold_snr_db": threshold_db,
        "operators": operators,
        "first_drift": None if first is None else {"op": first["op"], "snr_db": first["snr_db"],
                                                   "runtime_ops": first["runtime_ops"]},
    }


def _uncomputed(etdump: Path, etrecord: Path, debug_buffer: Path, threshold_db: float) -> dict[str, Any]:
    """The section of a simulated-NPU program: its operator events in order, none compared."""
    from hil.analysis.blocks import inspect_etdump, read_etrecord
    from hil.records.events import short_op

    _require(etdump, etrecord, debug_buffer)
    inspected = inspect_etdump(Path(etdump).read_bytes(), Path(etdump), Path(etrecord), read_etrecord(Path(etrecord)))
    operators = []
    for method in inspected.methods:
        for event in method.block.events:
            if event.name in NOT_OPERATORS or event.is_delegated_op or not event.op_types:
                continue
            delegated = event.name == DELEGATE_EVENT
            operators.append({"op": ", ".join(dict.fromkeys(short_op(str(t)) for t in event.op_types)),
                              "runtime_ops": [str(event.name)], "debug_handles": _handles(event.debug_handles),
                              "snr_db": None, "mse": None, "identical": False,
                              "status": NOT_COMPUTED if delegated else DOWNSTREAM})
        break  # the main method's block
    return {"distance": "none: " + NOT_COMPUTED, "threshold_snr_db": threshold_db, "operators": operators,
            "first_drift": None, "note": NOT_COMPUTED}


def _handles(handles: Any) -> list[int]:
    if handles is None:
        return []
    return [int(handles)] if isinstance(handles, int) else [int(h) for h in handles]


def _require(*paths: Path) -> None:
    for path in paths:
        if not Path(path).is_file():
            raise AnalysisError(f"numeric gap: {path} does not exist")


def _worst(gaps: Any, pick: Any) -> float | None:
    """One number for an operator with several outputs: its worst gap (`pick`: min for SNR, max for MSE).
    A NaN is 0/0, an all-zero output on both sides: identical (infinite SNR)."""
    identical = math.inf if pick is min else 0.0
    values = [float(g) for g in (gaps if isinstance(gaps, (list, tuple)) else [gaps])]
    return pick(identical if math.isnan(v) else v for v in values) if values else None


def _gap_frames(etdump: Path, etrecord: Path, debug_buffer: Path) -> dict[str, Any]:
    """calculate_numeric_gap's frame for each of DISTANCES, from one Inspector; any failure becomes an
    AnalysisError naming the files."""
    from executorch.devtools import Inspector

    where = f"ETDump {etdump}, debug buffer {debug_buffer}, ETRecord {etrecord}"
    _require(etdump, etrecord, debug_buffer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            inspector = Inspector(etdump_path=str(etdump), etrecord=str(etrecord), debug_buffer_path=str(debug_buffer))
            return {distance: inspector.calculate_numeric_gap(distance) for distance in DISTANCES}
        except Exception as exc:  # the Inspector raises ValueError, RuntimeError, KeyError...
            raise AnalysisError(f"the Inspector cannot compute the numeric gap of {where}: "
                                f"{type(exc).__name__}: {exc}") from exc
