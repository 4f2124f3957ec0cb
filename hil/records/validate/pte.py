"""What makes a file an ExecuTorch program (.pte): its flatbuffer file identifier.

A flatbuffer starts with the 4-byte offset of its root table, then the schema's 4-byte file
identifier: `ET12` for ExecuTorch's program schema (schema/program.fbs, `file_identifier "ET12"`).
ExecuTorch's deserializer turns many foreign files into an empty Program instead of failing, and a
firmware check would compare a text file byte by byte with the compiled-in model, so the identifier
is checked first, wherever a .pte is read.
"""

from __future__ import annotations

from pathlib import Path

from hil.base.errors import FileContentError

PTE_IDENTIFIER = b"ET12"
IDENTIFIER_AT = 4


def check_pte_bytes(data: bytes, path: Path | str) -> bytes:
    """`data` (read from `path`) when it carries the program schema's identifier; else FileContentError."""
    found = data[IDENTIFIER_AT:IDENTIFIER_AT + len(PTE_IDENTIFIER)]
    if found != PTE_IDENTIFIER:
        what = f"file identifier {found!r} at offset {IDENTIFIER_AT}" if found else f"only {len(data)} bytes"
        raise FileContentError(f"{path} is not an ExecuTorch program (.pte): {what}, not {PTE_IDENTIFIER!r}")
    return data
