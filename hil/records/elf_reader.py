"""The facts about a firmware ELF that the image checks need, read once with pyelftools.

Why one reader: the image check (hil.firmware.image_check), the run's model check
(hil.firmware.elf_model) and anything else that asks "what is in this image" should agree on
what a section, a load address or a symbol is. The ELF is read into memory in one go (a 30 MB
debug image reads in tens of milliseconds) and parsed eagerly, so a file that is not an ELF, or
a truncated one, fails here with one ElfReadError instead of deep inside a check.

Addresses are the target's: a section's `addr` is its run (virtual) address, `lma` its load
address, taken from the PT_LOAD segment that carries its bytes (segment p_paddr + the section's
offset into the segment); a NOBITS section (.bss) is never loaded and has no LMA.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import struct
import zlib
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from elftools.common.exceptions import DWARFError, ELFError, ELFParseError
from elftools.construct import ConstructError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from hil.base.errors import HilError

# What a malformed file can raise from pyelftools' parsers (struct/construct errors included).
_PARSE_ERRORS = (
    ELFError, ELFParseError, DWARFError, ConstructError, struct.error, ValueError, IndexError, KeyError, AssertionError,
    NotImplementedError, zlib.error,  # unknown field values; a damaged compressed section
)
# A NUL-terminated run of printable ASCII (tab, CR and LF included): how C string literals look in an image.
_C_STRING = re.compile(rb"[\x20-\x7e\t\r\n]{4,}(?=\x00)")


class ElfReadError(HilError):
    """The file is missing, unreadable, not an ELF, or too damaged to parse."""


@dataclass(frozen=True)
class Section:
    """One section header, with its load address resolved from the program headers."""

    name: str
    kind: str  # sh_type as pyelftools names it: "SHT_PROGBITS", "SHT_NOBITS", ...
    addr: int
    size: int
    flags: int
    lma: int | None  # where its bytes are loaded (flashed); None when nothing is loaded

    @property
    def end(self) -> int:
        return self.addr + self.size

    @property
    def alloc(self) -> bool:
        return bool(self.flags & SH_FLAGS.SHF_ALLOC)

    @property
    def progbits(self) -> bool:
        return self.kind == "SHT_PROGBITS"


@dataclass(frozen=True)
class Symbol:
    """One defined symbol of .symtab. `address` is `value` without the Thumb bit on Arm functions."""

    name: str
    value: int
    address: int
    size: int
    kind: str  # "FUNC", "OBJECT", "NOTYPE", ...
    local: bool


class ElfImage:
    """A firmware ELF held in memory: sections, segments, symbols, bytes by address, DWARF units."""

    def __init__(self, path: Path, data: bytes) -> None:
        self.path = path
        self._data = data
        self._elf = ELFFile(io.BytesIO(data))
        self.is_arm = self._elf["e_machine"] == "EM_ARM"
        self.pointer_size = 4 if self._elf.elfclass == 32 else 8
        self._endian = "<" if self._elf.little_endian else ">"
        segments = [seg.header for seg in self._elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
        self.sections: tuple[Section, ...] = tuple(
            Section(
                name=sec.name, kind=sec["sh_type"], addr=sec["sh_addr"], size=sec["sh_size"],
                flags=sec["sh_flags"], lma=_load_address(sec.header, segments),
            )
            for sec in self._elf.iter_sections()
        )
        # Loaded bytes are read now (they are small; the debug sections are not read here), so a
        # damaged section fails in read_elf, not halfway through a check.
        self._bytes = {
            sec.name: sec.data() for sec in self._elf.iter_sections()
            if sec["sh_flags"] & SH_FLAGS.SHF_ALLOC and sec["sh_type"] != "SHT_NOBITS"
        }
        self.symbols: tuple[Symbol, ...] = self._read_symbols()

    def _read_symbols(self) -> tuple[Symbol, ...]:
        table = self._elf.get_section_by_name(".symtab")
        if table is None or not hasattr(table, "iter_symbols"):
            return ()
        symbols = []
        for sym in table.iter_symbols():
            if not sym.name or sym["st_shndx"] == "SHN_UNDEF":
                continue
            kind = str(sym["st_info"]["type"]).removeprefix("STT_")  # an unknown type is a number
            value = sym["st_value"]
            symbols.append(Symbol(
                name=sym.name, value=value, address=self.code_address(value) if kind == "FUNC" else value,
                size=sym["st_size"], kind=kind, local=sym["st_info"]["bind"] == "STB_LOCAL",
            ))
        return tuple(symbols)

    def code_address(self, value: int) -> int:
        """A code pointer as the address of the instruction: Arm Thumb pointers carry bit 0 set."""
        return value & ~1 if self.is_arm else value

    def section(self, name: str) -> Section | None:
        return next((sec for sec in self.sections if sec.name == name), None)

    def section_bytes(self, section: Section) -> bytes:
        """The file contents of allocated `section` (empty for NOBITS)."""
        return self._bytes.get(section.name, b"")

    @cached_property
    def sha256(self) -> str:
        """Of the bytes read, whatever the file holds later; computed only when asked (the code-size memo's key)."""
        return hashlib.sha256(self._data).hexdigest()

    @cached_property
    def _by_name(self) -> dict[str, list[Symbol]]:
        table: dict[str, list[Symbol]] = {}
        for sym in self.symbols:
            table.setdefault(sym.name, []).append(sym)
        return table

    def symbols_named(self, name: str) -> list[Symbol]:
        return list(self._by_name.get(name, ()))

    @cached_property
    def _functions(self) -> tuple[list[int], list[Symbol]]:
        funcs = sorted((s for s in self.symbols if s.kind == "FUNC"), key=lambda s: (s.address, s.local))
        return [f.address for f in funcs], funcs

    def function_at(self, address: int) -> Symbol | None:
        """The function symbol whose body holds `address` (an instruction address, Thumb bit clear)."""
        starts, funcs = self._functions
        index = bisect_right(starts, address)
        if index == 0:
            return None
        nearest = starts[index - 1]
        # Aliases share a start: take the first (globals sort before locals) whose body holds the address.
        for func in funcs[bisect_right(starts, nearest - 1):index]:
            if address < func.address + max(func.size, 1):
                return func
        return None

    def read(self, address: int, size: int) -> bytes | None:
        """`size` bytes at run address `address`, from the loaded section holding them; None if none does."""
        for sec in self.sections:
            if sec.alloc and sec.kind != "SHT_NOBITS" and sec.addr <= address and address + size <= sec.end:
                start = address - sec.addr
                data = self.section_bytes(sec)[start:start + size]
                return data if len(data) == size else None  # a truncated file holds fewer bytes
        return None

    def read_words(self, address: int, count: int) -> list[int] | None:
        """`count` pointer-sized words at `address`, in the target's byte order."""
        raw = self.read(address, count * self.pointer_size)
        if raw is None:
            return None
        code = "I" if self.pointer_size == 4 else "Q"
        return [value for (value,) in struct.iter_unpack(self._endian + code, raw)]

    def strings(self, sections: Iterable[Section]) -> list[tuple[int, str]]:
        """NUL-terminated printable strings of at least 4 characters, with their addresses.

        Data before a string may happen to be printable (a pointer 0x28xxxxxx ends in '('), so a
        string is cut where an object symbol (a named char array) starts inside it.
        """
        starts = sorted({s.address for s in self.symbols if s.kind == "OBJECT"})
        found = []
        for sec in sections:
            for match in _C_STRING.finditer(self.section_bytes(sec)):
                start, end = sec.addr + match.start(), sec.addr + match.end()
                inside = bisect_right(starts, end - 1)
                cut = max(start, starts[inside - 1]) if inside else start
                found.append((cut, match.group()[cut - start:].decode("ascii")))
        return found

    def compile_units_at(self, addresses: Iterable[int]) -> dict[int, str | None] | None:
        """The source path (comp_dir joined with the unit's name) of the unit holding each address.

        Found through .debug_aranges, so only the units asked for are parsed: a unit is the
        translation unit itself, where a line-table lookup (addr2line) names the innermost inlined
        line, which may be a header many units share. None when the image has no DWARF address
        ranges (no -g, stripped, or a compiler that omits .debug_aranges).
        """
        if not self._elf.has_dwarf_info():
            return None
        try:
            dwarf = self._elf.get_dwarf_info()
            aranges = dwarf.get_aranges() if dwarf.has_debug_info else None
            if aranges is None or not aranges.entries:
                return None
            names: dict[int, str | None] = {}
            units: dict[int, str | None] = {}
            for address in addresses:
                offset = aranges.cu_offset_at_addr(address)
                if offset is not None and offset not in units:
                    units[offset] = _unit_path(dwarf.get_CU_at(offset).get_top_DIE().attributes)
                names[address] = units.get(offset) if offset is not None else None
            return names
        except _PARSE_ERRORS as exc:
            raise ElfReadError(f"{self.path}: debug information cannot be read: {exc}") from exc


def _unit_path(attributes: dict[str, Any]) -> str | None:
    name = attributes.get("DW_AT_name")
    if name is None:
        return None
    comp_dir = attributes.get("DW_AT_comp_dir")
    text = name.value.decode("utf-8", "replace") if isinstance(name.value, bytes) else str(name.value)
    base = comp_dir.value.decode("utf-8", "replace") if comp_dir and isinstance(comp_dir.value, bytes) else ""
    return os.path.normpath(os.path.join(base, text))


def _load_address(header: Any, segments: list[Any]) -> int | None:
    """LMA = p_paddr + (sh_offset - p_offset) of the PT_LOAD segment whose file bytes hold the section."""
    if header["sh_type"] == "SHT_NOBITS" or not header["sh_flags"] & SH_FLAGS.SHF_ALLOC:
        return None
    start, end = header["sh_offset"], header["sh_offset"] + header["sh_size"]
    for seg in segments:
        if seg["p_offset"] <= start and end <= seg["p_offset"] + seg["p_filesz"] and seg["p_filesz"]:
            return seg["p_paddr"] + (start - seg["p_offset"])
    return None


def read_elf(path: Path) -> ElfImage:
    """Read and parse `path`; ElfReadError (one line, naming the file) when that is not possible."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ElfReadError(f"ELF file not found: {path}") from exc
    except OSError as exc:
        raise ElfReadError(f"cannot read ELF file {path}: {exc.strerror or exc}") from exc
    if not data.startswith(b"\x7fELF"):
        raise ElfReadError(f"{path} is not an ELF file (no ELF magic)")
    try:
        return ElfImage(path, data)
    except _PARSE_ERRORS as exc:
        raise ElfReadError(f"{path} is not a readable ELF file: {exc or type(exc).__name__}") from exc
