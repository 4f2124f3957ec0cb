"""manifest.json's digest of itself, so a figure the manifest alone holds is verified before it is used.

The manifest lists the sha256 of every file of its run, so a changed profile.json or trace.etdump shows.
But some figures live only in the manifest (the warm-up, the stack and flash footprint, the numerics, the
annotations, the clock `hil inspect RUN_DIR` reads the dump with), and nothing checked those: an audit
changed the warm-up from 0 to 2 and `hil inspect` printed "iterations 5 -> 3" with exit 0. So every
manifest this et-hil writes carries `manifest_sha256`, the sha256 of its own canonical JSON (sorted keys,
no spaces, ASCII, that key left out), and `schema` "et-hil/manifest/2" says it must.

What that catches: any change to any field (a hand edit, a flipped byte that still parses, a tool that
rewrote one value), a deleted field, and the digest itself changed or deleted (a /2 manifest without one
is refused). What it leaves alone: whitespace and key order (the same JSON, so the same figures). It is
not a signature: who rewrites a field and the digest on purpose is not stopped, which is no accident.
A manifest written before the digest (schema /1, or no schema) is read as before, unverified: its
files' sha256s still hold for the files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hil.base.errors import FileContentError

SEAL_KEY = "manifest_sha256"
SEALED_SCHEMA = "et-hil/manifest/2"
# Manifests written before the digest: read unverified.
UNSEALED_SCHEMAS = (None, "et-hil/manifest/1")


def manifest_digest(data: Mapping[str, Any]) -> str:
    """The sha256 of `data`'s canonical JSON, SEAL_KEY left out."""
    body = {key: value for key, value in data.items() if key != SEAL_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def seal(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` as a sealed manifest: its schema the sealed one, its digest last (computed over the rest)."""
    body = {key: value for key, value in data.items() if key != SEAL_KEY}
    body["schema"] = SEALED_SCHEMA
    # As a reader parses it: tuples are lists, keys are strings (the digest is of what the file says).
    body = json.loads(json.dumps(body))
    return {**body, SEAL_KEY: manifest_digest(body)}


def is_sealed(data: Mapping[str, Any]) -> bool:
    """Whether `data` carries a digest (so its fields, and the files it lists, were all verified)."""
    return SEAL_KEY in data


def check_seal(data: Mapping[str, Any], path: Path | str) -> None:
    """Refuse (FileContentError, one line naming the file and both sha256s) a manifest whose fields no
    longer hash to its digest, or a sealed-schema manifest without one; an unsealed old one passes."""
    recorded = data.get(SEAL_KEY)
    if SEAL_KEY not in data:
        if data.get("schema") in UNSEALED_SCHEMAS:
            return
        raise FileContentError(f"{path}: schema {data.get('schema')!r} but no {SEAL_KEY}: the manifest's digest of "
                               "its own fields was removed, so none of them can be verified")
    actual = manifest_digest(data)
    if recorded != actual:
        raise FileContentError(f"{path}: its fields hash to sha256 {actual}, but its {SEAL_KEY} is "
                               f"{str(recorded)[:64]!s}: the manifest changed after the run")
