"""`hil check-image`: is this firmware ELF one the harness can flash, stop and trust?

Why: every way an image goes wrong here fails late and far from its cause. A boot header off its
address leaves a blank EVK dead; a missing handshake symbol shows up as a GDB timeout; the wrong
compiled-in model gives a profile of the wrong operators; a section past its region overwrites
the stack; an operator archive linked whole twice aborts before main with "Kernel registration
failed"; a `%zu` in a console line prints "zu" and the harness misreads the result. Each check
reads the ELF alone (no board, no debugger), so it runs after every firmware build and on any
image a user hands us. The board file's `[image]` section says what its images look like.

CLI: `python -m hil.firmware.image_check ELF --model model.pte [--board rt700 | --board-config F] [--json]`
(also `hil check-image`). Exit 0 when every check passes, 1 when one fails, 2 for input errors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from hil.config.board_config import load_board_config
from hil.base.errors import HilError
from hil.records.elf_reader import ElfImage, ElfReadError, read_elf
from hil.firmware.image_spec import ImageSpec, Region, span
from hil.firmware.sdk_printf import format_problems
from hil.records.validate.pte import check_pte_bytes

RUN_CONFIG_SYMBOL = "hil_run_config"
CONFIG_BREAKPOINT_SYMBOL = "hil_config_ready"
RUN_CONFIG_SIZE = 16  # struct hil_run_config_t: four uint32_t (firmware/common/hil_result.h)
IO_SYMBOL = "hil_io"  # the tensor handshake (firmware/common/hil_io.h): inputs in, outputs out
IO_TABLE_ROWS, IO_MAX_DIMS = 16, 8  # HIL_IO_MAX_TENSORS, HIL_IO_MAX_DIMS
INIT_ARRAY = ".init_array"
MODEL_ALIGN = 16  # hil.firmware.model_array aligns the array to 16 bytes
# Fixed text of the line-protocol formats (firmware/common/hil_protocol.h): a string holding one is ours.
PROTOCOL_MARKERS = (
    "Result buf:", "Run config:", "Inference time:", "Core/NPU Frequency:", "Model Size:", "Model Addr:",
    " Addr: ", "_used: Total", "Debug buf:", "HIL error:", "Setting up planned buffer", "Model buffer loaded",
    "Running method", "outputs:", "et-hil profiling firmware", "Inputs: ", "HIL etdump ", "HIL frame ",
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Status(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    NOT_APPLICABLE = "N/A"


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict: `subjects` is what it looked at, `problems` what it found wrong."""

    check: str
    status: Status
    detail: str
    subjects: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    def line(self) -> str:
        return f"{self.status.value:<4} {self.check}: {self.detail}"


@dataclass(frozen=True)
class ImageReport:
    elf: str
    board: str
    results: tuple[CheckResult, ...]

    @property
    def ok(self) -> bool:
        return all(r.status is not Status.FAIL for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {"elf": self.elf, "board": self.board, "ok": self.ok,
                "checks": [{**asdict(r), "status": r.status.value} for r in self.results]}


def _result(check: str, problems: list[str], passed: str, subjects: list[str], failed: str = "") -> CheckResult:
    if problems:
        detail = "; ".join(problems) + (f" ({failed})" if failed else "")
        return CheckResult(check, Status.FAIL, detail, tuple(subjects), tuple(problems))
    return CheckResult(check, Status.PASS, passed, tuple(subjects))


def check_flash_config(image: ElfImage, spec: ImageSpec) -> CheckResult:
    """The boot header must be flashed at the address the boot ROM reads (a blank board boots from it)."""
    want = spec.flash_config
    if want is None:
        return CheckResult("flash-config", Status.NOT_APPLICABLE, f"board '{spec.board}' declares no boot header")
    sec = image.section(want.section)
    if sec is None:
        return _result("flash-config", [f"no {want.section} section: the image has no boot header"], "", [])
    problems = []
    if sec.addr != want.address:
        problems.append(f"{want.section} is at 0x{sec.addr:08x}, the boot ROM reads 0x{want.address:08x}")
    if sec.lma is not None and sec.lma != sec.addr:
        problems.append(f"{want.section} is loaded at 0x{sec.lma:08x}, not at its address 0x{sec.addr:08x}")
    if sec.size < want.min_size:
        problems.append(f"{want.section} holds 0x{sec.size:x} bytes, less than 0x{want.min_size:x}")
    if not (sec.progbits and sec.alloc):
        problems.append(f"{want.section} is {sec.kind}{'' if sec.alloc else ', not allocated'}: it is never flashed")
    return _result("flash-config", problems, f"{want.section}: 0x{sec.size:x} bytes of PROGBITS at 0x{sec.addr:08x}",
                   [f"{want.section} {span(sec.addr, sec.end)}"])


def check_handshake(image: ElfImage, spec: ImageSpec) -> CheckResult:
    """The debugger stops at the two breakpoints and reads/writes the two objects by name."""
    wanted = [
        (spec.breakpoint, "FUNC", None),
        (spec.result_expr, "OBJECT", 2 * image.pointer_size),  # {void *buf; size_t size;}
        (CONFIG_BREAKPOINT_SYMBOL, "FUNC", None),
        (RUN_CONFIG_SYMBOL, "OBJECT", RUN_CONFIG_SIZE),
    ]
    if not image.symbols:
        return _result("handshake", ["the image has no symbol table (stripped?): the debugger finds the handshake "
                                     "by name, so flash the unstripped ELF"], "", [])
    problems, subjects, skipped, missing = [], [], [], set()
    for name, kind, size in wanted:
        if not _IDENTIFIER.match(name):
            skipped.append(name)  # file.c:LINE or an expression: not a symbol to look up
            continue
        found = image.symbols_named(name)
        if not found:
            problems.append(f"{name} is missing")
            missing.add(name)
        elif len(found) > 1:
            problems.append(f"{name} is defined {len(found)} times")
        elif found[0].kind != kind:
            problems.append(f"{name} is a {found[0].kind}, expected a {kind}")
        elif size is not None and found[0].size != size:
            problems.append(f"{name} is {found[0].size} bytes, expected {size}")
        else:
            subjects.append(f"{name} {kind} at 0x{found[0].address:08x}")
    if missing & {RUN_CONFIG_SYMBOL, CONFIG_BREAKPOINT_SYMBOL}:
        problems.append("the image predates the iteration handshake: rebuild it")
    note = f"not symbols, not checked: {', '.join(skipped)}" if skipped else ""
    return _result("handshake", problems, f"{', '.join(s.split()[0] for s in subjects)} present"
                   + (f" ({note})" if note else ""), subjects, failed=note)


def io_struct_size(pointer_size: int) -> int:
    """sizeof(struct hil_io_t): four uint32_t, then two tables of rows {void *data; four uint32_t; int32_t sizes[8]}."""
    row = pointer_size + 4 * 4 + 4 * IO_MAX_DIMS
    row += -row % pointer_size
    return 16 + 2 * IO_TABLE_ROWS * row


def check_tensor_io(image: ElfImage, spec: ImageSpec) -> CheckResult:
    """The debugger writes the inputs into and reads the outputs out of `hil_io`: the object must be there, whole.

    Not applicable to a board whose images carry no program (the QEMU replay image runs no kernel, so
    it has no outputs to publish)."""
    if spec.model_section is None:
        return CheckResult("tensor-io", Status.NOT_APPLICABLE,
                           f"board '{spec.board}' images carry no program: outputs not computed (replay image)")
    found = image.symbols_named(IO_SYMBOL)
    want = io_struct_size(image.pointer_size)
    if not found:
        problems = [f"{IO_SYMBOL} is missing: the image cannot take real inputs or publish its outputs"
                    " (it predates the tensor handshake: rebuild it with firmware/common/hil_io.c)"]
    elif len(found) > 1 or found[0].kind != "OBJECT" or found[0].size != want:
        problems = [f"{IO_SYMBOL} is {len(found)} symbol(s), the first a {found[0].kind} of {found[0].size} bytes;"
                    f" expected one OBJECT of {want} bytes (firmware/common/hil_io.h)"]
    else:
        problems = []
    return _result("tensor-io", problems, f"{IO_SYMBOL} OBJECT of {want} bytes present",
                   [f"{IO_SYMBOL} OBJECT at 0x{found[0].address:08x}"] if found else [])


def check_model(image: ElfImage, spec: ImageSpec, pte: bytes | None, pte_name: str = "model.pte") -> CheckResult:
    """The compiled-in program must be this .pte, byte for byte, in the layout model_array writes.

    model_array writes `const unsigned char model_pte[N]` (16-byte aligned, in the model section)
    and `const size_t model_pte_len = N`, which the firmware hands to the loader: both are compared.
    Without symbols the section must start with the .pte and hold nothing after it but alignment zeros.
    """
    name = spec.model_section
    if name is None:
        return CheckResult("model", Status.NOT_APPLICABLE, f"board '{spec.board}' images carry no compiled-in model")
    if pte is None:
        return _result("model", ["no model given to compare the compiled-in one with"], "", [])
    sec = image.section(name)
    if sec is None or sec.size == 0 or not (sec.progbits and sec.alloc):
        return _result("model", [f"no loaded {name} section: the image was built without a compiled-in model"], "", [])
    data = image.section_bytes(sec)
    arrays = [s for s in image.symbols_named(spec.model_symbol) if s.kind == "OBJECT"]
    problems = []
    if arrays and sec.addr <= arrays[0].address and arrays[0].address + arrays[0].size <= sec.end:
        array = arrays[0]
        carried = data[array.address - sec.addr:array.address - sec.addr + array.size]
        length = image.symbols_named(f"{spec.model_symbol}_len")
        stored = image.read_words(length[0].address, 1) if length and length[0].size == image.pointer_size else None
        if stored is not None and stored[0] != array.size:
            problems.append(f"{spec.model_symbol}_len says {stored[0]} bytes, the array holds {array.size}")
        where = f"{spec.model_symbol} in {name}"
    else:
        carried, padding = data[:len(pte)], data[len(pte):]
        if len(padding) >= MODEL_ALIGN or padding.strip(b"\0"):
            problems.append(f"{name} holds {len(data) - len(pte)} bytes after the program that are not alignment padding")
        where = f"{name} (no {spec.model_symbol} symbol in it)"
    if carried != pte:
        problems.insert(0, _difference(carried, pte, where, pte_name))
    digest = hashlib.sha256(pte).hexdigest()[:16]
    return _result("model", problems, f"{where} is {pte_name} ({len(pte)} bytes, sha256 {digest}...)",
                   [f"{where} {span(sec.addr, sec.end)}"], failed=f"rebuild the firmware with MODEL={pte_name}")


def _difference(carried: bytes, pte: bytes, where: str, pte_name: str) -> str:
    if len(carried) != len(pte):
        first = f"{len(carried)} bytes, {pte_name} has {len(pte)}"
    else:
        offset = next(i for i, (a, b) in enumerate(zip(carried, pte)) if a != b)
        first = f"first difference at byte 0x{offset:x} of {len(pte)}"
    return (f"{where} is not {pte_name}: {first} (sha256 {hashlib.sha256(carried).hexdigest()[:16]}... vs "
            f"{hashlib.sha256(pte).hexdigest()[:16]}...)")


def check_regions(image: ElfImage, spec: ImageSpec) -> CheckResult:
    """Every allocated section, at its run address and (if different) its load address, lies in one region."""
    if not spec.regions:
        return CheckResult("regions", Status.NOT_APPLICABLE, f"board '{spec.board}' declares no [image].regions")
    problems, subjects = [], []
    placed = [sec for sec in image.sections if sec.alloc and sec.size > 0]
    for sec in placed:
        spans = [("", sec.addr)] + ([("load address of ", sec.lma)] if sec.lma not in (None, sec.addr) else [])
        for label, start in spans:
            problem, region = _placement(f"{label}section {sec.name}", start, start + sec.size, spec.regions)
            if problem:
                problems.append(problem)
            else:
                subjects.append(f"{label}{sec.name} {span(start, start + sec.size)} in {region.name}")
    return _result("regions", problems, f"{len(placed)} allocated sections inside the board's regions "
                   f"({', '.join(r.name for r in spec.regions)})", subjects)


def check_load_addresses(image: ElfImage, spec: ImageSpec) -> CheckResult:
    """Every byte the image carries is loaded into a `load_regions` region (the flash of an XIP board).

    Why: a flash programmer writes an ELF's load segments at their load addresses and has nowhere to
    put bytes whose load address is RAM (pyOCD skips them with a warning), so such a section -- a model
    placed in RAM without a flash load image, say -- never reaches the board.
    """
    if not spec.load_regions:
        return CheckResult("load-addresses", Status.NOT_APPLICABLE,
                           f"board '{spec.board}' declares no [image].load_regions (its loader writes RAM)")
    flash = tuple(r for r in spec.regions if r.name in spec.load_regions)
    loaded = [sec for sec in image.sections if sec.alloc and sec.progbits and sec.size > 0 and sec.lma is not None]
    problems, subjects = [], []
    for sec in loaded:
        if any(r.holds(sec.lma, sec.lma + sec.size) for r in flash):
            subjects.append(f"{sec.name} loaded at {span(sec.lma, sec.lma + sec.size)}")
        else:
            problems.append(f"section {sec.name} is loaded at {span(sec.lma, sec.lma + sec.size)}, outside "
                            f"{', '.join(spec.load_regions)}: a flash programmer cannot put it on the board")
    return _result("load-addresses", problems, f"{len(loaded)} loaded sections have their bytes in "
                   f"{', '.join(spec.load_regions)}", subjects)


def _placement(what: str, start: int, end: int, regions: tuple[Region, ...]) -> tuple[str | None, Region]:
    """(None, region) when one region holds [start, end); else the problem, said against the nearest region."""
    for region in regions:
        if region.holds(start, end):
            return None, region
    where = span(start, end)
    for region in regions:
        if region.start <= start < region.end:
            return f"{what} {where} overflows {region} by 0x{end - region.end:x} bytes", region
        if region.start < end <= region.end:
            return f"{what} {where} starts 0x{region.start - start:x} bytes before {region}", region
    nearest = min(regions, key=lambda r: max(r.start - end, start - r.end, 0))
    return f"{what} {where} lies in no region (nearest: {nearest})", nearest


def check_kernel_registration(image: ElfImage) -> CheckResult:
    """No translation unit's static initializer may run twice.

    ExecuTorch operator libraries register their kernels from a static initializer; an archive
    linked whole twice puts every member, and so every initializer, in the image twice, and the
    runtime aborts before main with "Kernel registration failed". Two `.init_array` entries from
    the same source file (full path: portable and quantized ops each have a Register...Everything.cpp)
    and the same function give it away. Without DWARF, entries are judged by function name and size.
    """
    sec = image.section(INIT_ARRAY)
    words = image.read_words(sec.addr, sec.size // image.pointer_size) if sec and sec.size else []
    if words is None:
        return _result("kernel-registration", [f"{INIT_ARRAY} holds no loaded bytes"], "", [])
    entries = [image.code_address(word) for word in words if word not in (0, (1 << 8 * image.pointer_size) - 1)]
    if not entries:
        return CheckResult("kernel-registration", Status.PASS, "no static initializers")
    try:
        units, why_weaker = image.compile_units_at(entries), "no DWARF address ranges (.debug_aranges)"
    except ElfReadError as exc:
        units, why_weaker = None, str(exc)
    groups: dict[tuple[str, str, str | int], list[int]] = defaultdict(list)
    subjects, unresolved = [], []
    for entry in entries:
        func = image.function_at(entry)
        unit = units.get(entry) if units else None
        subjects.append(f"0x{entry:08x} {func.name if func else '?'} {unit or '(no debug info)'}")
        if unit:
            groups[("unit", unit, func.name if func else "?")].append(entry)
        elif func:
            groups[("symbol", func.name, func.size)].append(entry)
        else:
            unresolved.append(f"0x{entry:08x}")
    problems = [_twice(how, first, second, found) for (how, first, second), found in groups.items() if len(found) > 1]
    if unresolved:
        problems.append(f"cannot tell: .init_array entries {', '.join(unresolved)} are in no function and no "
                        "debug information (stripped image?)")
    by_symbol = sum(len(found) for (how, _, _), found in groups.items() if how == "symbol")
    weaker = "" if not by_symbol else (
        f"; all judged by function name and size, a weaker check: {why_weaker}" if units is None
        else f"; {by_symbol} without debug info judged by function name and size")
    return _result("kernel-registration", problems,
                   f"{len(entries)} static initializers, none from the same source file twice{weaker}",
                   subjects, failed=f"an archive linked whole twice registers twice: drop the extra --whole-archive"
                   f"{weaker}")


def _twice(how: str, first: str, second: str | int, found: list[int]) -> str:
    where = ", ".join(f"0x{address:08x}" for address in found)
    if how == "unit":
        return f"{first}: its static initializer {second} is in .init_array {len(found)} times ({where})"
    return f"static initializer {first} ({second} bytes) is in .init_array {len(found)} times ({where})"


def check_console_formats(image: ElfImage, skip_sections: tuple[str, ...] = ()) -> CheckResult:
    """The line-protocol strings in the image must use only what the SDK's PRINTF prints.

    Strings come from every loaded section (link scripts put .rodata in .text or, like the RT700
    one, in .data); a string holding a line break before its end is printed text (the replay
    image's recorded console), not a format, and is left out.
    """
    sections = [s for s in image.sections if s.alloc and s.progbits and s.size and s.name not in skip_sections]
    texts = dict.fromkeys(
        text for _, text in image.strings(sections)
        if any(marker in text for marker in PROTOCOL_MARKERS) and "\n" not in text.rstrip("\r\n"))
    if not texts:
        return _result("console-formats", ["no line-protocol strings found: is this an et-hil firmware?"], "", [])
    problems = [f"{text!r}: {'; '.join(found)}" for text in texts if (found := format_problems(text))]
    return _result("console-formats", problems, f"{len(texts)} line-protocol strings use only what the SDK's "
                   "PRINTF prints", list(texts), failed=f"{len(problems)} of {len(texts)} line-protocol strings")


def check_image(image: ElfImage, spec: ImageSpec, pte: bytes | None, pte_name: str = "model.pte") -> ImageReport:
    """All eight checks, in the order a failure would bite: boot, debugger, tensors, model, layout, start-up, console."""
    results = (
        check_flash_config(image, spec), check_handshake(image, spec), check_tensor_io(image, spec),
        check_model(image, spec, pte, pte_name),
        check_regions(image, spec), check_load_addresses(image, spec),
        check_kernel_registration(image),
        check_console_formats(image, skip_sections=(spec.model_section,) if spec.model_section else ()),
    )
    return ImageReport(str(image.path), spec.board, results)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `hil check-image` and of `python -m hil.firmware.image_check` (one definition)."""
    parser.add_argument("elf", type=Path, metavar="ELF", help="the firmware image (ELF)")
    parser.add_argument("--model", type=Path, default=None, metavar="PTE",
                        help="the .pte the image must carry (needed when the board's images carry one)")
    parser.add_argument("--board", default="rt700", metavar="NAME", help="board name (boards/NAME.toml); default rt700")
    parser.add_argument("--board-config", type=Path, default=None, metavar="FILE", help="board file; wins over --board")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")


def run(elf: Path, *, model: Path | None = None, board: str = "rt700", board_config: Path | None = None,
        as_json: bool = False) -> int:
    """Check `elf` against the board's image rules and print the results; exit status: 0 all checks pass,
    1 a check fails, 2 an input cannot be read."""
    try:
        spec = ImageSpec.from_board(load_board_config(board, board_config))
        image = read_elf(elf)
        pte = _read_model(model, spec)
        report = check_image(image, spec, pte, str(model))
    except HilError as exc:
        print(f"check-image: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print("\n".join(r.line() for r in report.results))
    return 0 if report.ok else 1


def _read_model(path: Path | None, spec: ImageSpec) -> bytes | None:
    if path is None:
        if spec.model_section is not None:
            raise HilError(f"--model is required: board '{spec.board}' images carry the model in {spec.model_section}")
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HilError(f"cannot read model {path}: {exc.strerror or exc}") from exc
    if not data:
        raise HilError(f"model {path} is empty")
    return check_pte_bytes(data, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hil.firmware.image_check", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_command(parser.parse_args(argv))


def run_command(args: argparse.Namespace) -> int:
    """`hil check-image` and `python -m hil.firmware.image_check`: the options of `add_arguments` into `run`."""
    return run(args.elf, model=args.model, board=args.board, board_config=args.board_config, as_json=args.json)


if __name__ == "__main__":
    sys.exit(main())
