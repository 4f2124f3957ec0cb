"""Whether the target already holds an image: read its loaded bytes back through the probe and compare.

Programming the RT700's image (~650 KB of text) costs seconds per test and wears the flash, while a
nightly suite runs many tests of one image. Before programming, the harness reads back, through the
same pyOCD session, exactly the bytes the ELF loads (each allocated PROGBITS section at its load
address, what pyOCD's FileProgrammer writes) and compares their sha256 with the ELF's. Reading costs
a fraction of an erase and program, and writes nothing. Reading back the bytes themselves (not a
build id) works for any ELF, the user's own too, and cannot be fooled by a stale id.

Anything short of a proven match flashes: a read the probe refuses (a fault, flash not mapped yet,
a secure region), a short read, a section without a load address, an ELF that cannot be parsed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hil.base.errors import HilError
from hil.records.elf_reader import ElfImage, read_elf

# Bytes per read: each read runs under the probe timeout, so a wedged probe fails within it.
READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class FlashDecision:
    """What the flash step did and why, as the manifest's `flash` section records it."""

    done: str  # "programmed" or "skipped" (QEMU: "downloaded" or "skipped")
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"done": self.done, "why": self.why}


def loaded_ranges(elf: ElfImage) -> list[tuple[int, bytes]]:
    """(load address, bytes) of every section the image puts on the target, in address order."""
    ranges = []
    for section in elf.sections:
        if section.alloc and section.progbits and section.size:
            if section.lma is None:  # bytes that some loader places: nothing to compare them with
                raise ValueError(f"section {section.name} has no load address")
            ranges.append((section.lma, elf.section_bytes(section)))
    return sorted(ranges)


def image_sha256(ranges: list[tuple[int, bytes]]) -> str:
    """sha256 over the loaded bytes in address order (the addresses themselves included)."""
    digest = hashlib.sha256()
    for address, data in ranges:
        digest.update(address.to_bytes(8, "little") + len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def compare(session: Any, image: Path, *, read: Callable[[Callable[[], Any], str], Any]) -> FlashDecision:
    """"skipped" when the target's memory holds `image`'s loaded bytes, else "programmed" (to be), with why.

    `read(fn, what)` runs one probe call under the probe timeout (hil.probe.pyocd_flash._with_timeout)."""
    try:
        ranges = loaded_ranges(read_elf(image))
    except (HilError, ValueError) as exc:
        return FlashDecision("programmed", f"{image.name} cannot be compared: {exc}")
    want = image_sha256(ranges)
    held = []
    try:
        for address, data in ranges:
            chunks = []
            for offset in range(0, len(data), READ_CHUNK):
                size = min(READ_CHUNK, len(data) - offset)
                chunk = read(lambda a=address + offset, n=size: session.target.read_memory_block8(a, n),
                             f"reading back 0x{address + offset:08x}")
                chunks.append(bytes(chunk))
            held.append((address, b"".join(chunks)))
    except HilError:
        raise  # a probe that stops answering is the run's failure, not a reason to write flash
    except Exception as exc:  # a fault or transfer error: this content cannot be read back
        return FlashDecision("programmed", f"the target's memory cannot be read back ({type(exc).__name__}: {exc})")
    if image_sha256(held) != want:
        return FlashDecision("programmed", f"the target does not hold sha256 {want[:16]} of {image.name}")
    size = sum(len(data) for _, data in ranges)
    return FlashDecision("skipped", f"target holds sha256 {want[:16]} of {image.name}'s {size} loaded bytes "
                                    f"(read back through the probe)")
