"""`hil firmware-sources --out DIR`: the RT700 firmware's sources, copied out of the installed package.

A user who installed et-hil from a wheel has no checkout to run `make firmware` in; the sources
travel as package data (hil.base.paths.data_dir("firmware")). Copying `rt700/` and `common/` side by side
keeps the relative layout the build expects (rt700.mk and CMakeLists.txt reach `../common`), so
`make -f DIR/rt700/rt700.mk firmware BOARD=rt700 MODEL=model.pte` builds from the copy.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from hil.base.atomic import copy_error
from hil.base.errors import HilError, InputError
from hil.config.inputs import writable_folder
from hil.base.paths import FIRMWARE_DIR
from hil.base.commands import RT700_IMAGE

PARTS = ("rt700", "common")
_SKIP = shutil.ignore_patterns("build", "__pycache__", "*.o", "*.d")


def copy_sources(out: Path, *, force: bool = False) -> list[Path]:
    """Copy firmware/rt700 and firmware/common into `out`; refuse to overwrite unless `force`.

    Every destination is checked before anything is copied, so a refusal leaves `out` as it was.
    `force` replaces folders only: a file or a symbolic link in a destination's place is the user's,
    and is refused, never deleted (nor is a link's target).
    """
    out = writable_folder(Path(out))
    for part in PARTS:
        dest = out / part
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            kind = "a symbolic link" if dest.is_symlink() else "a file"
            raise InputError(f"{dest} is {kind}, not a folder of sources: remove it first"
                             " (--force replaces folders only)")
        if dest.exists() and not force:
            raise InputError(f"{dest} exists; pass --force to replace it")
    copied = []
    for part in PARTS:
        dest = out / part
        try:
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(FIRMWARE_DIR / part, dest, ignore=_SKIP)
        except OSError as exc:
            full = copy_error(exc, dest)  # a full disk: one line naming dest and the errno, not copytree's list
            if full is not None:
                shutil.rmtree(dest, ignore_errors=True)  # the half copy this call made: no build starts from it
                raise full from None
            raise HilError(f"cannot copy the firmware sources to {dest}: {exc.strerror or exc}"
                           + (f" ({exc.filename})" if exc.filename else "")) from exc
        copied.append(dest)
    return copied


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to copy rt700/ and common/ into")
    parser.add_argument("--force", action="store_true", help="replace rt700/ and common/ if DIR has them")


def run(args: argparse.Namespace) -> int:
    for dest in copy_sources(args.out, force=args.force):
        print(dest)
    print(f"build with: make -f {args.out / 'rt700' / 'rt700.mk'} firmware BOARD=rt700 MODEL=path/to/model.pte "
          f"PYTHON={sys.executable} (or, from the package itself: `{RT700_IMAGE} --model MODEL --out DIR`)")
    return 0
