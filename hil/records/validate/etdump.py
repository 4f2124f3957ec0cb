"""What makes a file an ETDump: the size-prefixed flatbuffer's file identifier, `ED00` at bytes 8..12.

ExecuTorch's ETDump schema declares `file_identifier "ED00"` (devtools/etdump/etdump_schema_flatcc.fbs),
and the runtime writes the buffer size-prefixed (4 bytes of size, then the root offset, then the
identifier), the only layout the Inspector reads (devtools/etdump/serialize.py,
`deserialize_from_etdump_flatcc(data, size_prefixed=True)`). Checked on the first 12 bytes, so a
console log or a .pte given as the dump is named at once, before torch and executorch are imported.
"""

from __future__ import annotations

from pathlib import Path

from hil.base.errors import FileContentError

ETDUMP_IDENTIFIER = b"ED00"
IDENTIFIER_AT = 8  # after the 4-byte size prefix and the 4-byte root offset
HEAD_BYTES = IDENTIFIER_AT + len(ETDUMP_IDENTIFIER)


def check_etdump_bytes(data: bytes, path: Path | str) -> bytes:
    """`data` (the start of `path`, HEAD_BYTES or more) when it carries the ETDump identifier; else FileContentError."""
    found = data[IDENTIFIER_AT:HEAD_BYTES]
    if found != ETDUMP_IDENTIFIER:
        what = (f"file identifier {found!r} at offset {IDENTIFIER_AT}" if len(found) == len(ETDUMP_IDENTIFIER)
                else f"only {len(data)} bytes")
        raise FileContentError(f"{path} is not an ETDump (a size-prefixed flatbuffer): {what}, not {ETDUMP_IDENTIFIER!r}")
    return data
