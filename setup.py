"""Packaging that pyproject.toml cannot say alone: the data folders go into the wheel as `hil/data/...`.

The product keeps `boards/`, `budgets/` and `firmware/` at the top of the repository (they are edited
there, and `make firmware` builds from there). An installed et-hil needs them too, so each folder is
mapped into the package as a data-only sub-package (`package_dir`), and hil.base.paths.data_dir() finds
them with importlib.resources. From a checkout (editable install) the same function falls back to
the top-level folders, so there is one copy of every file and nothing is generated at build time.
Everything else (name, version, dependencies, entry points) is in pyproject.toml.

Building leaves the checkout as it was: setuptools' scratch folders (`build/`, `et_hil.egg-info/`) go to a
temporary folder of this process, removed when it ends, instead of the tree `pip wheel` was given.
"""

import atexit
import shutil
import tempfile

from setuptools import find_packages, setup

SCRATCH = tempfile.mkdtemp(prefix="et-hil-build-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)

DATA_PACKAGES = {
    "hil.data.boards": "boards",
    "hil.data.budgets": "budgets",
    "hil.data.firmware": "firmware",
}
# Only the sources: never a build folder (firmware/rt700/build) or an editor's leftovers.
FIRMWARE_FILES = [
    "app/*.c", "app/*.cpp", "app/*.h", "cmake/*.cmake",
    "common/*.c", "common/*.h",
    "qemu/*.c", "qemu/*.h", "qemu/*.ld", "qemu/README.md",
    "qemu/runtime/*.c", "qemu/runtime/*.cpp", "qemu/runtime/*.h", "qemu/runtime/*.ld", "qemu/runtime/CMakeLists.txt",
    "qemu/runtime/README.md",
    "rt700/CMakeLists.txt", "rt700/README.md", "rt700/pins.toml", "rt700/rt700.mk",
    "rt700/check/*.h", "rt700/check/README.md", "rt700/cmake/*.cmake", "rt700/link/*.ld",
    "rt700/src/*.c",
]

setup(
    packages=[*find_packages(include=["hil", "hil.*"]), *DATA_PACKAGES],
    package_dir=DATA_PACKAGES,
    package_data={
        "hil.emu": ["*.c"],  # the native instruction counter, built on first use (hil/emu/block_count.py)
        "hil": ["py.typed"],  # PEP 561: the package's type hints are meant for its users' type checkers
        "hil.data.boards": ["*.toml"],
        "hil.data.budgets": ["*.toml"],
        "hil.data.firmware": FIRMWARE_FILES,
    },
    include_package_data=False,
    options={"build": {"build_base": f"{SCRATCH}/build"}, "egg_info": {"egg_base": SCRATCH}},
)
