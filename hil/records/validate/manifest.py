"""What a run folder's manifest.json must hold before `hil inspect`, a baseline or the history reads it.

A failed run writes a manifest too, with fewer fields, and older runs lack fields added since, so
every field is optional; the rule is that each field present has the type its readers expect
(hil.cli.inspect_cmd, hil.records.evidence, hil.regress.baseline, hil.regress.history). A recorded
clock (`time_scale`) must name its CPU tick rate; without `neutron_ticks_per_us` Neutron events
are taken to count at the same rate (hil.analysis.timescale.TimeScale).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hil.records.validate.fields import Fields, at
from hil.records.validate.profile import check_time_scale

MANIFEST_SCHEMA_PREFIX = "et-hil/manifest/"
TEXTS = ("board", "model", "model_name", "delegate", "status", "error", "error_kind", "written_at", "git_commit",
         "firmware", "firmware_sha256", "firmware_kind", "board_file", "board_file_sha256", "probe_id", "fault",
         "drift_inputs", "delegate_note")
OBJECTS = ("annotations", "versions", "model_memory", "project_commit", "steps_s", "debug_buffer", "firmware_choice",
           "aot_followed", "flash", "footprint", "quantization", "cpu_fallback_reasons")
SHA256 = re.compile(r"[0-9a-f]{64}")


def check_manifest(data: Any, path: Path | str) -> dict[str, Any]:
    """`data` (parsed from `path`) when it is a manifest its readers can use; else FileContentError."""
    fields = Fields(path)
    manifest = fields.mapping(data, "", optional=False)
    schema = fields.text(manifest.get("schema"), "schema")
    if schema is not None and not schema.startswith(MANIFEST_SCHEMA_PREFIX):
        fields.wrong(schema, "schema", f"{MANIFEST_SCHEMA_PREFIX}N")
    for key in TEXTS:
        fields.text(manifest.get(key), key)
    for key in OBJECTS:
        fields.mapping(manifest.get(key), key)
    fields.whole(manifest.get("iterations"), "iterations")
    fields.whole(manifest.get("warmup"), "warmup")
    fields.flag(manifest.get("simulated"), "simulated")
    fields.number(manifest.get("drift_snr_db"), "drift_snr_db")  # a debug-output run's threshold (hil.drift)
    fields.whole((manifest.get("debug_buffer") or {}).get("runs"), "debug_buffer.runs", at_least=1)
    check_time_scale(fields, manifest.get("time_scale"), "time_scale")
    fields.entries(manifest.get("files"), "files", lambda entry, name: _file(fields, entry, name))
    crc = fields.mapping(manifest.get("etdump_crc32"), "etdump_crc32")
    fields.flag(crc.get("checked"), "etdump_crc32.checked")
    for key in ("firmware", "read"):
        fields.text(crc.get(key), at("etdump_crc32", key))
    return manifest


def _file(fields: Fields, value: Any, where: str) -> None:
    """One file of the run: its sha256 (what hil.records.evidence compares) and size."""
    entry = fields.mapping(value, where, optional=False)
    digest = fields.text(entry.get("sha256"), at(where, "sha256"), optional=False)
    if not SHA256.fullmatch(digest):
        fields.wrong(digest, at(where, "sha256"), "64 lower-case hex digits")
    fields.whole(entry.get("size"), at(where, "size"))


def check_simulation(data: Any, path: Path | str) -> dict[str, Any]:
    """simulation.json of a simulated run (what the cost model used): the clocks its ticks count at."""
    fields = Fields(path)
    simulation = fields.mapping(data, "", optional=False)
    fields.number(simulation.get("clock_mhz"), "clock_mhz", optional=False, above=0)
    fields.number(simulation.get("npu_clock_mhz"), "npu_clock_mhz", above=0)
    return simulation
