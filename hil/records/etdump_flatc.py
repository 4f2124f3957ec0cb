"""ETDump bytes from the schema's dataclasses, and the run data of several dumps as one ETDump.

Why here, low in the layers: the QEMU replay writes ETDumps it synthesised (hil.replay.neutron_etdump), and a
streamed run (hil.records.etdump_frames) gets one ETDump per batch of runs, which the Inspector must see as one
run of all of them. Both go through the flatc bundled with ExecuTorch, size-prefixed: the layout a runtime
writes and the only one the Inspector reads (ExecuTorch's own serialize_to_etdump_flatcc writes it without
the size prefix).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base.errors import AnalysisError

if TYPE_CHECKING:
    from executorch.devtools.etdump import schema_flatcc as fb

FLATC_TIMEOUT_S = 60


def json_ready(obj: Any) -> Any:
    """Dataclasses -> JSON for flatc: drop unset (None) fields, bytes -> list of ubyte."""
    if dataclasses.is_dataclass(obj):
        return {f.name: json_ready(v) for f in dataclasses.fields(obj) if (v := getattr(obj, f.name)) is not None}
    if isinstance(obj, (bytes, bytearray)):
        return list(obj)
    if isinstance(obj, list):
        return [json_ready(v) for v in obj]
    return obj


def serialize_etdump(etdump: fb.ETDumpFlatCC) -> bytes:
    """Size-prefixed ETDump flatbuffer (the runtime layout) via the flatc bundled with ExecuTorch."""
    flatc = Path(str(importlib.resources.files("executorch.data.bin").joinpath("flatc")))
    with tempfile.TemporaryDirectory(prefix="hil-etdump-") as tmp:
        d = Path(tmp)
        for name in ("etdump_schema_flatcc.fbs", "scalar_type.fbs"):
            (d / name).write_bytes(importlib.resources.files("executorch.devtools.etdump").joinpath(name).read_bytes())
        (d / "etdump.json").write_text(json.dumps(json_ready(etdump)))
        cmd = [str(flatc), "--binary", "--size-prefixed", "-o", str(d), str(d / "etdump_schema_flatcc.fbs"), str(d / "etdump.json")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=FLATC_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise AnalysisError(f"flatc ({flatc}) took over {FLATC_TIMEOUT_S} s serializing the ETDump") from exc
        if proc.returncode != 0:
            raise AnalysisError(f"flatc ({flatc}) failed to serialize the ETDump: {proc.stderr.strip()}")
        return (d / "etdump.etdp").read_bytes()


def merge_etdumps(dumps: list[bytes]) -> bytes:
    """One size-prefixed ETDump holding every dump's run data, in order (the first dump's version and the
    rest of its header); one dump is returned as it is. AnalysisError when one is no ETDump."""
    if len(dumps) == 1:
        return dumps[0]
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    parsed = []
    for index, data in enumerate(dumps):
        try:
            parsed.append(deserialize_from_etdump_flatcc(data))
        except Exception as exc:  # flatc reports a foreign buffer in many ways
            raise AnalysisError(f"streamed dump {index} ({len(data)} B) is no ETDump: {type(exc).__name__}: {exc}") from exc
    runs = [run for dump in parsed for run in dump.run_data]
    return serialize_etdump(dataclasses.replace(parsed[0], run_data=runs))
