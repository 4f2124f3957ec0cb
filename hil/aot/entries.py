"""Where an exported model lives in the cache, and which entry may be served: no torch here.

Layout: `<cache>/models/<name>-<static16>/<variant16>/` with model.pte, etrecord.bin, inputs.pt,
meta.json, reads.json and sha256.json (what each file held, checked by every read: hil.base.entry_check),
and the numerics references in `references/` (sealed on their own: hil.aot.references). The static key
(hil.aot.export.cache_key: model file, local imports, declared data files, options, versions) picks the
folder; inside it, one variant per set of run-time reads (hil.aot.reads), named by their digest. A lookup
serves the first variant whose reads all still hold, so switching a variable back and forth hits both
models, and two sessions exporting the same inputs at once publish the same variant name: the first
rename wins and both are the same.

An export whose reads cannot be checked again (a socket, ...) is published as `uncached-<random>`:
used by the run that made it, never served to another; such leftovers older than a day are removed.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from hil.aot.cache import ContentKey
from hil.aot.reads import Reads, first_change, read_reads
from hil.base.cache_entry import served

PTE_NAME, ETRECORD_NAME, INPUTS_NAME, META_NAME = "model.pte", "etrecord.bin", "inputs.pt", "meta.json"
UNCACHED_PREFIX = "uncached-"
UNCACHED_KEEP_S = 24 * 3600  # longer than any run that could still be reading its uncached entry


def entry_key(static_key: str, reads: Reads) -> str:
    """The key of what one entry holds: the static key and the reads it was made from."""
    return ContentKey("et-hil/model-entry").add_text("static", static_key).add_text("reads", reads.digest()).hexdigest()


def variant_name(reads: Reads) -> str:
    return reads.digest()[:16] if reads.cacheable else f"{UNCACHED_PREFIX}{secrets.token_hex(8)}"


def read_meta(folder: Path, static_key: str | None) -> tuple[dict[str, Any], Reads] | None:
    """(meta, reads) of a complete entry made from `static_key` (None: whichever it records, for an
    entry just made: a model file edited meanwhile does not unmake what ran); None otherwise. An
    entry whose files fail their check (hil.base.entry_check: a truncated model.pte, ...) or whose
    records do not fit together is removed (the first with one line saying so), so the export rebuilds it."""
    if not served(folder, "exported model"):
        return None
    try:
        meta = json.loads((folder / META_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    reads = read_reads(folder)
    complete = all((folder / name).is_file() for name in (PTE_NAME, ETRECORD_NAME, INPUTS_NAME))
    made_from = meta.get("static_key") if isinstance(meta, dict) else None
    if (reads is None or not complete or not isinstance(made_from, str) or made_from != (static_key or made_from)
            or meta.get("cache_key") != entry_key(made_from, reads)):
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return meta, reads


def find_valid(folder: Path, static_key: str, model_dir: Path | None) -> tuple[Path, dict[str, Any], Reads] | None:
    """The variant in `folder` whose recorded reads all still hold, or None (a miss)."""
    try:
        variants = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", UNCACHED_PREFIX)))
    except OSError:
        return None
    for variant in variants:
        found = read_meta(variant, static_key)
        if found is not None and first_change(found[1], model_dir) is None:
            return variant, *found
    return None


def remove_old_uncached(folder: Path, keep: Path) -> None:
    """Drop `uncached-*` entries of earlier runs; a recent one may still be in use by its run."""
    now = time.time()
    for old in folder.glob(f"{UNCACHED_PREFIX}*"):
        try:
            stale = old != keep and now - old.stat().st_mtime > UNCACHED_KEEP_S
        except OSError:
            continue
        if stale:
            shutil.rmtree(old, ignore_errors=True)
