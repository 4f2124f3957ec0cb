"""Where the harness finds its data (board files, firmware sources, budgets) and keeps its caches.

The data lives in the repository's top-level `boards/`, `budgets/` and `firmware/` folders (the
product's layout, and what a developer edits). A built wheel carries copies of them as package
data under `hil/data/` (setup.py maps the folders into the package), so an installed et-hil works
outside any checkout. `data_dir()` asks importlib.resources for the packaged copy first and falls
back to the checkout, so one code path serves both an installed wheel and an editable checkout.
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

from hil.base.errors import HilError

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the hil package (this module is hil/base/paths.py)
# The folder holding the `hil` package: the repository root when running from a checkout.
REPO_ROOT = PACKAGE_DIR.parent
DATA_FOLDERS = ("boards", "budgets", "firmware")


def data_dir(name: str) -> Path:
    """The packaged `hil/data/<name>` when installed from a wheel, else the checkout's top-level `<name>/`."""
    if name not in DATA_FOLDERS:
        raise ValueError(f"unknown data folder {name!r} (known: {', '.join(DATA_FOLDERS)})")
    packaged = importlib.resources.files("hil").joinpath("data", name)
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = REPO_ROOT / name
    if checkout.is_dir():
        return checkout
    raise HilError(f"et-hil's {name}/ folder is missing: neither {packaged} (installed package) nor {checkout} "
                   "(checkout) exists; reinstall et-hil")


def in_checkout() -> bool:
    """True when the package runs from a git checkout of et-hil (not from an installed wheel)."""
    return (REPO_ROOT / ".git").exists() and (REPO_ROOT / "pyproject.toml").is_file()


BOARDS_DIR = data_dir("boards")
BUDGETS_DIR = data_dir("budgets")
FIRMWARE_DIR = data_dir("firmware")


def cache_dir() -> Path:
    """The content-addressed cache for exported models and firmware images.

    `HIL_CACHE_DIR` wins so CI and tests can isolate it; otherwise the user's cache folder.
    """
    env = os.environ.get("HIL_CACHE_DIR")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "et-hil"
    base.mkdir(parents=True, exist_ok=True)
    return base
