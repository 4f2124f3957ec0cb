"""The files a user's model file depends on, found without running it: the cache key covers them all.

Why: a key of the model's own `.py` alone would let `hil export` answer "from cache" with the old
program after an edit to a helper module the model imports. So the key covers

* every module the model file imports, transitively, whose file lies outside the Python installation
  (sys.prefix, sys.base_prefix, the site-packages folders): the user's own helpers, a sibling
  package, a checkout on PYTHONPATH. Installed packages (torch, executorch) are keyed by their
  versions instead;
* every data file the model file declares in a module-level `HIL_DATA_FILES = ["weights.npz", ...]`
  (a literal list or tuple of paths, relative to the model file's folder): weights, calibration data,
  label files the factory reads.

Imports are read from the source (`ast`), not by importing it, so a cache hit still costs
milliseconds and no torch. What a static reading cannot see (a module name computed at run time
and passed to importlib, a checkpoint the factory loads) is recorded while the model is exported
(hil.aot.follow) and checked again by every lookup (hil.aot.reads).
"""

from __future__ import annotations

import ast
import site
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

from hil.base.errors import ModelSpecError

DATA_FILES_NAME = "HIL_DATA_FILES"


@lru_cache(maxsize=1)
def installation_roots() -> tuple[Path, ...]:
    """The folders of the Python installation: the interpreter's prefixes, stdlib and site-packages."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(sysconfig.get_paths().get(name, "") for name in ("stdlib", "platstdlib", "purelib", "platlib"))
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except AttributeError:  # a virtualenv's stripped-down site module
        pass
    # Another environment's site-packages reached through a `.pth` line: installed too. Walked as local,
    # torch's thousands of modules were parsed one by one before the export started (minutes; issue 33).
    roots.update(entry for entry in sys.path if Path(entry).name in ("site-packages", "dist-packages"))
    return tuple(sorted({Path(root).resolve() for root in roots if root}))


def is_installed(path: Path) -> bool:
    """True when `path` belongs to the Python installation (or its site-packages)."""
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(root) for root in installation_roots())


def _find_module(name: str, search: list[Path]) -> list[Path]:
    """The files Python would execute for `import name` (each package's __init__.py on the way),
    looked up as the import system would, on `search`; [] when not found as a plain file."""
    top, *rest = name.split(".")
    found: list[Path] = []
    for entry in search:
        package, module = entry / top, entry / f"{top}.py"
        if (package / "__init__.py").is_file() or (package.is_dir() and rest):
            base = package
            break
        if module.is_file():
            return [module] if not rest else []
    else:
        return []
    if (base / "__init__.py").is_file():
        found.append(base / "__init__.py")
    for part in rest:
        if (base / part / "__init__.py").is_file():
            base = base / part
            found.append(base / "__init__.py")
        elif (base / f"{part}.py").is_file():
            found.append(base / f"{part}.py")
            break
        elif (base / part).is_dir():
            base = base / part  # a namespace package: no file of its own
        else:
            break  # `from pkg import name` where name is an attribute, not a module
    return found


def _imports(tree: ast.AST, package: str | None) -> list[str]:
    """Dotted names the module imports (`from a import b` gives a and a.b), relative ones resolved
    against `package` (the importing module's package; None for a top-level file)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if not package:
                    continue  # a relative import in a top-level file fails when run: nothing to key
                parts = package.split(".")
                if node.level - 1 > len(parts) - 1:
                    continue
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names if alias.name != "*"]
    return [name for name in names if name]


def _parse(path: Path) -> ast.AST | None:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None  # importing it will fail and say so; nothing more to key


def _module_package(path: Path, root: Path) -> str | None:
    """The package a local module belongs to, from its place below the search entry `root`."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return ".".join(parts) or None
    return ".".join(parts[:-1]) or None


def package_root(model_file: Path) -> tuple[Path, str | None]:
    """(the folder a model file is imported from, its package's dotted name or None).

    A model file in a folder without `__init__.py` is a top-level module imported from its own folder. One inside
    a package (`models/__init__.py` beside `models/net.py`) is the module `models.net`, imported from the project
    root: the folder above the topmost package, as `python -m models.net` run there would. So both
    `from models.layers import Block` and `from .layers import Block` work, as in the user's own code.
    """
    folder = Path(model_file).resolve().parent
    parts: list[str] = []
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return folder, ".".join(parts) or None


def local_imports(model_file: Path) -> list[Path]:
    """Every local module `model_file` imports, directly or through other local modules, sorted.

    Searched as the harness imports a model (hil.aot.models): from its package root (`package_root`) first,
    then sys.path; relative imports resolved against the model's own package.
    """
    model_file = Path(model_file).resolve()
    root, package = package_root(model_file)
    search = [root] + [Path(entry or ".").resolve() for entry in sys.path]
    search = [entry for entry in dict.fromkeys(search) if entry.is_dir()]
    seen: set[Path] = {model_file}
    pending: list[tuple[Path, str | None]] = [(model_file, package)]
    while pending:
        path, package = pending.pop()
        tree = _parse(path)
        if tree is None:
            continue
        for name in _imports(tree, package):
            if name.split(".")[0] in sys.builtin_module_names:
                continue
            for found in _find_module(name, search):
                found = found.resolve()
                if found in seen or is_installed(found):
                    continue
                seen.add(found)
                root = next((entry for entry in search if found.is_relative_to(entry)), found.parent)
                pending.append((found, _module_package(found, root)))
    seen.discard(model_file)
    return sorted(seen)


def declared_data_files(model_file: Path) -> list[Path]:
    """The files named by the model file's module-level `HIL_DATA_FILES`, resolved and checked to exist."""
    model_file = Path(model_file).resolve()
    tree = _parse(model_file)
    if tree is None:
        return []
    value = None
    for node in getattr(tree, "body", []):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == DATA_FILES_NAME for t in targets) and node.value is not None:
            value = node.value
    if value is None:
        return []
    try:
        paths = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        paths = None
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) and p for p in paths):
        raise ModelSpecError(f"{model_file}: {DATA_FILES_NAME} must be a literal list of file paths (strings)")
    files = []
    for text in paths:
        path = (model_file.parent / Path(text).expanduser()).resolve()
        if not path.is_file():
            raise ModelSpecError(f"{model_file}: {DATA_FILES_NAME} names {text!r}, which is not a file ({path})")
        files.append(path)
    return files
