"""Old import paths of renamed packages, kept working for one release.

A renamed package keeps its old name as a thin alias: ``import hil.road.process`` returns the very
module object ``hil.target.process`` (one module, one state: the registry of live child processes
must not exist twice), and says once, as a DeprecationWarning, which path to use instead.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

# old dotted package -> new dotted package; removed one release after the rename.
MOVED_PACKAGES: dict[str, str] = {
    "hil.road": "hil.target",
    "hil.buffers": "hil.replay",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name by importing the new one and handing back that same module."""

    def __init__(self, new_name: str) -> None:
        self.new_name = new_name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a placeholder; exec_module swaps in the real module

    def exec_module(self, module: ModuleType) -> None:
        # The import system returns what sys.modules holds under the name after this call, so the
        # real module is handed back untouched (its __name__ and __spec__ stay the new ones).
        sys.modules[module.__name__] = importlib.import_module(self.new_name)


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds modules under a moved package's old name."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        for old, new in MOVED_PACKAGES.items():
            if fullname == old or fullname.startswith(old + "."):
                new_name = new + fullname[len(old):]
                warnings.warn(f"{fullname} is now {new_name}; the old path goes away in the next release",
                              DeprecationWarning, stacklevel=3)
                return importlib.util.spec_from_loader(fullname, _AliasLoader(new_name),
                                                       is_package=fullname == old)
        return None


def install() -> None:
    """Puts the finder in front of the normal ones (once)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
