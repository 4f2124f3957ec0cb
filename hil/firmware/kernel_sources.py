"""The kernels one program needs: its portable kernel sources and the other kernel libraries it calls.

Why: ExecuTorch's `portable_kernels` library is all 170-odd operator files of
`kernels/portable/cpu/`; a board image needs only the program's operators (as Arm's and NXP's
runners build them). The image links them from that library, built once per runtime folder; this
list refuses, before any build, a program with an operator no portable kernel defines, and it is
what the selective build (HIL_KERNELS_PREBUILT=OFF) compiles. Each operator of the program (`aten::convolution` + overload `out`) is looked
up in `kernels/portable/functions.yaml` for its kernel function (`torch::executor::convolution_out`),
and that function's definition is found in the operator files. The registration code itself comes
from ExecuTorch's own codegen (`gen_selected_ops`, in the image's CMake).

Operators of ExecuTorch's other kernel libraries are not portable kernels: the quantized portable kernels
(`quantized_decomposed::*`, `kernels/quantized/quantized.yaml`, library `quantized_kernels`) and the Cortex-M
backend's CMSIS-NN operators (`cortex_m::*`, `backends/cortex_m/ops/operators.yaml`, library
`cortex_m_kernels`). Each is compiled whole once per runtime folder; a program that calls one of their
operators gets that library's registration of exactly its operators (`program_libraries`).

CLI (the image's CMake calls it): `python -m hil.firmware.kernel_sources MODEL.pte EXECUTORCH_ROOT`
prints the source paths, one per line; `... --libraries` prints the names of the other kernel libraries
the program calls (`quantized`, `cortex_m`), one per line. An operator no library has exits 2, naming it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from hil.base.errors import BuildError

FUNCTIONS_YAML = Path("kernels/portable/functions.yaml")
KERNEL_DIR = Path("kernels/portable/cpu")
PRIM_OPS = Path("kernels/prim_ops/register_prim_ops.cpp")
# The helpers that pattern.h's DEFINE_UNARY_UFUNC_* kernels call (unary_ufunc_realhbf16.cpp, ...): part of the
# portable kernels' sources in ExecuTorch's own list (shim_et/xplat/executorch/build/build_variables.bzl, the
# PATTERN_SRCS added to PORTABLE_KERNELS_SRCS), so they go with any kernel; the image is linked from a static
# library, which takes only the members something calls.
PATTERN_DIR = KERNEL_DIR / "pattern"


@dataclass(frozen=True)
class KernelLibrary:
    """A kernel library of ExecuTorch besides the portable one: compiled whole once per runtime folder."""

    name: str  # what the image's CMake is told (HIL_KERNEL_LIBRARIES)
    yaml: Path  # its operators, relative to the ExecuTorch root
    target: str  # its CMake target (the kernels, without registration)


QUANTIZED = KernelLibrary("quantized", Path("kernels/quantized/quantized.yaml"), "quantized_kernels")
CORTEX_M = KernelLibrary("cortex_m", Path("backends/cortex_m/ops/operators.yaml"), "cortex_m_kernels")
LIBRARIES = (QUANTIZED, CORTEX_M)
_OP_ENTRY = re.compile(r"^- (?:op|func): *([A-Za-z0-9_.:]+)", re.MULTILINE)
_KERNEL_NAME = re.compile(r"kernel_name: *([A-Za-z0-9_:]+)")


@dataclass(frozen=True)
class KernelSource:
    """One operator of the program and the portable source file that defines its kernel."""

    operator: str  # "aten::convolution.out"
    kernel: str  # "torch::executor::convolution_out"
    source: Path


def program_operators(pte: Path) -> list[str]:
    """Every operator the program's methods call, as `name.overload` (`aten::add.out`), sorted."""
    from hil.records.pte import load_program

    program, _, _ = load_program(pte)
    names = {f"{op.name}.{op.overload}" if op.overload else op.name
             for plan in program.execution_plan for op in plan.operators}
    return sorted(names)


def kernel_functions(functions_yaml: Path) -> dict[str, str]:
    """`op.overload` -> kernel function name, from ExecuTorch's portable functions.yaml.

    A line-based read (the file is a flat list of `- op:` entries with their `kernel_name`) keeps
    this free of a YAML dependency; an entry without a kernel name is skipped.
    """
    text = functions_yaml.read_text(encoding="utf-8")
    entries = list(_OP_ENTRY.finditer(text))
    table: dict[str, str] = {}
    for index, entry in enumerate(entries):
        end = entries[index + 1].start() if index + 1 < len(entries) else len(text)
        kernel = _KERNEL_NAME.search(text, entry.end(), end)
        if kernel is not None:
            name = entry.group(1)
            table[name if "::" in name else f"aten::{name}"] = kernel.group(1)
    return table


def _definition(function: str) -> re.Pattern[str]:
    """A kernel's definition: its last name component, then the runtime context parameter; or the name as the
    first argument of one of `kernels/portable/cpu/pattern/pattern.h`'s `DEFINE_UNARY_UFUNC_*(op_name, fn)`
    macros, which define `Tensor& op_name(KernelRuntimeContext& ctx, ...)` (op_tanh.cpp, op_exp.cpp, ...)."""
    name = re.escape(function.rsplit("::", 1)[-1])
    return re.compile(rf"\b{name}\s*\(\s*(?:[A-Za-z_:]+::)?(?:Kernel)?RuntimeContext\s*&"
                      rf"|\bDEFINE_UNARY_UFUNC_\w+\(\s*{name}\s*,")


def kernel_sources(pte: Path, executorch_root: Path) -> list[KernelSource]:
    """The portable kernel file of each operator `pte` calls; BuildError names any that has none."""
    yaml = executorch_root / FUNCTIONS_YAML
    if not yaml.is_file():
        raise BuildError(f"{executorch_root} holds no {FUNCTIONS_YAML}: not an ExecuTorch source tree")
    functions = kernel_functions(yaml)
    # Operators the runtime registers itself (`executorch` links its prim ops): no kernel file.
    prim_ops = executorch_root / PRIM_OPS
    prim = prim_ops.read_text(encoding="utf-8", errors="replace") if prim_ops.is_file() else ""
    elsewhere = set().union(*library_operators(executorch_root).values())
    files = {path: path.read_text(encoding="utf-8", errors="replace")
             for path in sorted((executorch_root / KERNEL_DIR).glob("op_*.cpp"))}
    found: list[KernelSource] = []
    missing: list[str] = []
    for operator in program_operators(pte):
        if f'"{operator}"' in prim or operator in elsewhere:
            continue
        function = functions.get(operator)
        pattern = _definition(function) if function else None
        source = next((path for path, text in files.items() if pattern and pattern.search(text)), None)
        if function is None or source is None:
            missing.append(operator)
            continue
        found.append(KernelSource(operator, function, source))
    if missing:
        raise BuildError(f"{pte}: no kernel in {executorch_root / KERNEL_DIR} nor in "
                         f"{', '.join(str(lib.yaml) for lib in LIBRARIES)} for {', '.join(missing)} (the QEMU runtime "
                         "image runs ExecuTorch's portable, quantized and Cortex-M kernels only)")
    return found


def library_operators(executorch_root: Path) -> dict[KernelLibrary, set[str]]:
    """The operators of each other kernel library, from its yaml (a library missing from the tree has none)."""
    return {lib: set(kernel_functions(executorch_root / lib.yaml)) if (executorch_root / lib.yaml).is_file() else set()
            for lib in LIBRARIES}


def program_libraries(pte: Path, executorch_root: Path) -> list[KernelLibrary]:
    """The other kernel libraries whose operators `pte` calls, in LIBRARIES' order."""
    operators = set(program_operators(pte))
    return [lib for lib, names in library_operators(executorch_root).items() if operators & names]


def build_sources(pte: Path, executorch_root: Path) -> list[Path]:
    """Every source the program's kernel library compiles: its kernels' files and, with any, the pattern helpers."""
    kernels = {item.source for item in kernel_sources(pte, executorch_root)}
    helpers = sorted((executorch_root / PATTERN_DIR).glob("*.cpp")) if kernels else []
    return sorted(kernels) + helpers


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    libraries = args[2:] == ["--libraries"]
    if len(args) != 2 and not libraries:
        print("usage: python -m hil.firmware.kernel_sources MODEL.pte EXECUTORCH_ROOT [--libraries]", file=sys.stderr)
        return 2
    try:
        sources = build_sources(Path(args[0]), Path(args[1]))
        lines = [lib.name for lib in program_libraries(Path(args[0]), Path(args[1]))] if libraries else sources
    except BuildError as exc:
        print(f"kernel_sources: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
