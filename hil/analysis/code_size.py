"""Flash bytes of each operator's kernel and of the rest of the runtime, from the image itself.

On a microcontroller the flash an operator's kernel costs decides as much as its time whether a model
ships. The total is what the image puts in flash: every allocated section with file bytes (code,
constants, the initial values of .data, the vector table), the model's own bytes (.modeldata) left
out. A kernel's share comes from the ELF's symbol table (the sizes `nm --size-sort` prints): every
function symbol with a size, aliases at one address counted once, belongs to the kernel whose
translation unit emitted it, by DWARF's address ranges. The portable kernels are one source file
each, `op_<name>.cpp`, so `op_convolution.cpp`'s functions, lambdas and the templates it instantiated
are convolution's (a template two kernels share counts once, for the unit the linker kept). DWARF's
ranges cover code only: a kernel's constants (tables, message strings) count with the runtime, which
is everything else (the executor, the PAL, ETDump, libc, the application).

The profile's operators (`aten.convolution.default`, `native_call_convolution.out`) map to the kernel
of their name; an operator the program delegated runs on the delegate, not on a kernel of this image.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from hil.records import events as ev
from hil.records.elf_reader import ElfImage, ElfReadError, read_elf
from hil.records.profile_model import as_event

# The portable (and optimized) kernels' sources: one operator family per file.
KERNEL_UNIT = re.compile(r"^op_(?P<name>\w+)\.(?:cpp|cc|c)$")
MODEL_SECTION = ".modeldata"
NOT_IN_IMAGE_DELEGATED = "not in this image: delegated"


def flash_bytes(elf: ElfImage) -> int:
    """Bytes the image puts in flash: allocated sections with file bytes, the model's (.modeldata) excluded."""
    return sum(s.size for s in elf.sections if s.alloc and s.kind != "SHT_NOBITS" and s.name != MODEL_SECTION)


def function_sizes(elf: ElfImage) -> dict[int, int]:
    """Address -> size of each sized function: aliases (one address) counted once, the larger."""
    found: dict[int, int] = {}
    for sym in elf.symbols:
        if sym.kind == "FUNC" and sym.size:
            found[sym.address] = max(sym.size, found.get(sym.address, 0))
    return found


def kernel_name(unit: str | None) -> str | None:
    """`convolution` for a unit `.../op_convolution.cpp`; None for any other source."""
    match = KERNEL_UNIT.match(PurePosixPath(unit).name) if unit else None
    return match.group("name") if match else None


def kernel_sizes(elf: ElfImage) -> tuple[int, int, dict[str, int]]:
    """(flash bytes, function bytes, function bytes per kernel) of `elf`: every kernel unit's by its name."""
    symbols = function_sizes(elf)
    units = elf.compile_units_at(symbols) or {}  # none: no DWARF ranges, every byte the runtime's
    kernels: dict[str, int] = {}
    for address, size in symbols.items():
        name = kernel_name(units.get(address))
        if name is not None:
            kernels[name] = kernels.get(name, 0) + size
    return flash_bytes(elf), sum(symbols.values()), dict(sorted(kernels.items()))


def operator_kernel(operator: str) -> str:
    """The kernel name of a profile operator: `aten.convolution.default` and `native_call_convolution.out`
    are both `convolution` (the op type's second part, the event name without its prefix and overload)."""
    if operator.startswith(ev.NATIVE_CALL_PREFIX):
        return operator[len(ev.NATIVE_CALL_PREFIX):].split(".")[0]
    parts = operator.split(".")
    return parts[1] if len(parts) >= 2 else parts[0]


def profile_operators(events: Iterable[Any]) -> dict[str, tuple[bool, tuple[str, ...]]]:
    """The profile's operators, each with whether it ran delegated and its op types: a CPU operator by its
    event's name (`native_call_addmm.out`: the kernel that ran, whatever op types it fused), a delegated
    one by its op types (`aten.linear.default`), else its event's name."""
    found: dict[str, tuple[bool, tuple[str, ...]]] = {}
    for event in events:
        if event.kind == ev.CPU_OP:
            found[event.name] = (False, tuple(event.op_types))
        elif event.kind in ev.DELEGATED_KINDS and event.kind != ev.PROFILING_DUMP:
            for name in event.op_types or (event.name,):
                found.setdefault(name, (True, (name,)))
    return found


def code_size_section(elf: ElfImage, events: Iterable[Any]) -> dict[str, Any]:
    """profile.json's `code_size` section (docs/profile-format.md)."""
    total, functions, kernels = kernel_sizes(elf)
    operators: dict[str, dict[str, Any]] = {}
    for name, (delegated, op_types) in profile_operators(events).items():
        kernel = operator_kernel(name)
        entry: dict[str, Any] = {"op_types": list(op_types)}
        if not delegated and kernel in kernels:
            entry.update(kernel=f"op_{kernel}", bytes=kernels[kernel])
        else:
            note = NOT_IN_IMAGE_DELEGATED if delegated else f"not in this image: no kernel unit op_{kernel}"
            entry.update(kernel=None, bytes=None, note=note)
        operators[name] = entry
    kernel_bytes = sum(kernels.values())
    return {
        "image": elf.path.name,
        "total_bytes": total,
        "functions_bytes": functions,
        "kernels_bytes": kernel_bytes,
        "runtime_bytes": total - kernel_bytes,
        "kernels": {f"op_{name}": size for name, size in kernels.items()},
        "operators": operators,
        "method": "flash: allocated sections with file bytes, the model excluded; kernels: function symbols"
                  " by DWARF compile unit op_<name>.cpp (their constants count with the runtime)",
    }


def footprint_sections(image: Path, built: Mapping[str, Any], stack: Mapping[str, Any] | None) -> dict[str, Any]:
    """profile.json's `stack` (read at the breakpoint, when the board read it) and `code_size` (from
    `image`, for the operators of `built`, build_profile's profile); an unreadable image costs the
    code size, with a note, never the run."""
    sections: dict[str, Any] = {} if stack is None else {"stack": dict(stack)}
    try:
        elf = read_elf(image)
        sections["code_size"] = code_size_section(elf, [as_event(e) for e in built.get("events") or ()])
    except ElfReadError as exc:
        sections["code_size"] = {"image": Path(image).name, "note": f"no code size: {exc}"}
    return sections
