"""The import graph of the hil package, read from its source (ast), and the layers it must respect.

Modules are grouped in floors, lowest first; a module may import its own floor and those below.
An import that runs back up a floor couples the lower one to everything above it, and a circle of
imports means no module in it can be read, tested or replaced alone. `python -m hil.layers` prints
the floors, any circle, and every arrow that runs up; tests/unit/test_layers.py holds the limits.
Imports under `if TYPE_CHECKING:` are annotations only and are not counted.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent

# Lowest first. A module belongs to the first floor with a prefix that names it or a package around it.
# Every top-level package of hil/ sits on one floor, so the folders show the layers.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Errors, logging, progress, atomic writes, the JSON record, paths, locks, field checks.
    ("base", ("hil.base",)),
    # The typed records of what a run reads and writes (.pte, console, ELF, tensors, profile, manifest), their checks.
    ("records", ("hil.records",)),
    # Board files, options, capabilities and the user's inputs.
    ("configuration", ("hil.config",)),
    # The emulated RT700 (hil.emu) is a target behind a pyOCD probe, beside the probe code that drives it.
    ("target I/O", ("hil.target", "hil.probe", "hil.emu")),
    ("analysis", ("hil.analysis",)),
    ("models and images", ("hil.aot", "hil.numerics", "hil.replay", "hil.drift")),
    ("boards", ("hil.boards", "hil.lab")),
    # Which QEMU firmware a board file runs is a board's choice (hil.firmware.qemu_firmware).
    ("firmware", ("hil.firmware",)),
    ("judging", ("hil.regress",)),
    ("publishing", ("hil.report",)),
    ("runs", ("hil.run",)),
    ("front ends", ("hil.cli", "hil.plugin", "hil.layers")),
)
# The modules allowed directly in hil/ (beside the packages): the package's own __init__ and this map.
MAX_ROOT_MODULES = 10


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _resolve(name: str, modules: set[str]) -> str | None:
    """The hil module `name` refers to (`hil.a.b.c` -> `hil.a.b` when c is a name inside it)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The hil modules one file imports at run time (module level or inside functions)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_lines(tree)
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        names: Iterable[str] = ()
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names]
        for name in names:
            target = _resolve(name, modules) if name.startswith("hil") else None
            if target and target != me:
                found.add(target)
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    return {name: imports_of(path, modules) for name, path in files.items()}


def floor_of(module: str) -> int:
    """Index of the module's floor: the most specific prefix wins (a front end inside a library package)."""
    if module == "hil":  # the package's __init__: its version, nothing else
        return 0
    best, length = -1, -1
    for index, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = index, len(prefix)
    if best < 0:
        raise KeyError(f"{module}: on no floor of hil.layers.FLOORS; add it to one")
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def upward_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits on a higher floor."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if floor_of(b) > floor_of(a))


def top_level(module: str) -> str:
    """The top-level package (or root module) of hil that holds `module`: hil.run.pipeline -> hil.run."""
    return ".".join(module.split(".")[:2])


def package_ties(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of top-level packages (or root modules) that import each other, each pair once, sorted."""
    arrows = {(top_level(a), top_level(b)) for a, targets in graph.items() for b in targets}
    return sorted((a, b) for a, b in arrows if a < b and (b, a) in arrows)


def root_modules(root: Path = PACKAGE) -> list[str]:
    """The .py files directly in hil/, beside its packages."""
    return sorted(path.name for path in root.glob("*.py"))


def main() -> int:
    graph = import_graph()
    for index, (name, _) in enumerate(FLOORS):
        print(f"{index:2d} {name}: {', '.join(sorted(m for m in graph if floor_of(m) == index))}")
    for circle in cycles(graph):
        print("circle: " + " -> ".join(circle))
    for a, b in package_ties(graph):
        print(f"tie: {a} <-> {b}")
    print(f"root modules: {', '.join(root_modules())}")
    for a, b in upward_arrows(graph):
        print(f"up: {a} ({FLOORS[floor_of(a)][0]}) -> {b} ({FLOORS[floor_of(b)][0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
