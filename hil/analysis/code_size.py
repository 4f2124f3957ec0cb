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
of their name among the image's kernel units (kernel_unit_of: `_softmax` is op_softmax.cpp's,
`_native_batch_norm_legit_no_training` op_native_batch_norm.cpp's); an operator the program delegated
runs on the delegate, not on a kernel of this image.

The sizes depend on the image's bytes only, and reading the DWARF ranges is about half a second of a warm
run: they are kept per image sha256 in the cache (`code-size/`), recomputed when that entry is unreadable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from hil.base import atomic
from hil.base.paths import cache_dir
from hil.records import events as ev
from hil.records.elf_reader import ElfImage, ElfReadError, read_elf
from hil.records.profile_model import as_event

# The portable (and optimized) kernels' sources: one operator family per file.
KERNEL_UNIT = re.compile(r"^op_(?P<name>\w+)\.(?:cpp|cc|c)$")
MODEL_SECTION = ".modeldata"
NOT_IN_IMAGE_DELEGATED = "not in this image: delegated"
# The memo's format and method: a change of either makes every kept entry a miss.
SIZES_MEMO_VERSION = 1


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


def kernel_unit_of(operator: str, kernels: Mapping[str, int]) -> str | None:
    """The kernel unit, among the image's `kernels`, whose code runs `operator`; None when none does.

    By name first (`op__to_dim_order_copy.cpp` keeps its underscores); then without the leading underscores
    of ATen's private operators (`_softmax` is op_softmax.cpp's); then the longest unit name the operator's
    name starts with up to an underscore (`native_batch_norm` for `_native_batch_norm_legit_no_training`).
    Only units the image holds are candidates, and it holds just the program's kernels."""
    name = operator_kernel(operator)
    for candidate in (name, name.lstrip("_")):
        if candidate in kernels:
            return candidate
    bare = name.lstrip("_")
    prefixes = [unit for unit in kernels if bare.startswith(unit + "_")]
    return max(prefixes, key=len) if prefixes else None


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


def code_size_section(elf: ElfImage, events: Iterable[Any],
                      sizes: tuple[int, int, dict[str, int]] | None = None) -> dict[str, Any]:
    """profile.json's `code_size` section (docs/profile-format.md); `sizes`, kernel_sizes(elf) when known."""
    total, functions, kernels = sizes if sizes is not None else kernel_sizes(elf)
    operators: dict[str, dict[str, Any]] = {}
    for name, (delegated, op_types) in profile_operators(events).items():
        kernel = None if delegated else kernel_unit_of(name, kernels)
        entry: dict[str, Any] = {"op_types": list(op_types)}
        if kernel is not None:
            entry.update(kernel=f"op_{kernel}", bytes=kernels[kernel])
        else:
            note = (NOT_IN_IMAGE_DELEGATED if delegated
                    else f"not in this image: no kernel unit op_{operator_kernel(name)}")
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
        sections["code_size"] = code_size_section(elf, [as_event(e) for e in built.get("events") or ()],
                                                  remembered_sizes(elf))
    except ElfReadError as exc:
        sections["code_size"] = {"image": Path(image).name, "note": f"no code size: {exc}"}
    return sections


def remembered_sizes(elf: ElfImage) -> tuple[int, int, dict[str, int]]:
    """kernel_sizes(elf), from the cache when this image's bytes were measured before (by sha256).

    A memo that is unreadable, of another version or another image is measured again and rewritten; a
    cache that cannot be written (shared read-only) only costs the time."""
    digest = elf.sha256
    path = cache_dir() / "code-size" / f"{digest}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("version") == SIZES_MEMO_VERSION and kept.get("sha256") == digest:
            return int(kept["total"]), int(kept["functions"]), {str(k): int(v) for k, v in kept["kernels"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    total, functions, kernels = kernel_sizes(elf)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_json(path, {"version": SIZES_MEMO_VERSION, "sha256": digest, "total": total,
                                 "functions": functions, "kernels": kernels})
    except OSError:
        pass
    return total, functions, kernels
