"""`hil doctor --board B`: what B's firmware choice needs to build its image, each part with the command that brings it.

Why apart from hil/cli/doctor.py: the probe and console checks ask the bench; these ask what the
firmware build will ask minutes later (the pinned source workspace and its pins, CMake, Ninja, the
cross and host compilers), and which of them count follows from the board file's choice:

- QEMU, firmware "runtime", or "auto" while the runtime image is what a run would use (a workspace
  is there, or HIL_GIT_BASE is set: hil.firmware.qemu_firmware): every part is required;
- QEMU, "auto" otherwise: the same lines as notes (the run takes the replay image and says so);
- QEMU, "replay": none (the replay image is built from the package's own sources);
- RT700: the workspace's pins, CMake and both cross compilers (its firmware build,
  firmware/rt700/rt700.mk, uses CMake's default generator: no Ninja), beside doctor.py's paths.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from hil.cli.doctor_tools import Check, _answer, _tool
from hil.config.board_config import BoardConfig

CMAKE_MIN = (3, 24)  # cmake_minimum_required of firmware/qemu/runtime/CMakeLists.txt and firmware/rt700/CMakeLists.txt
CMAKE_BANNER = r"^cmake version \d+\.\d+"
NINJA_BANNER = r"^\d+\.\d+"  # `ninja --version` prints the version alone
GXX_BANNER = r"^arm-none-eabi-g\+\+"
HOST_CC_BANNER = r"^(cc|gcc|clang|.*\b(gcc|clang)\b)"
CROSS_FIX = "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi, or set ARMGCC_DIR"

Named = tuple[str, Callable[[], Check]]


def wants_runtime(cfg: BoardConfig) -> bool | None:
    """For a QEMU board: True when its runs use the runtime image, False when they may replay meanwhile
    (`auto` without sources), None when they never build it (`replay`)."""
    from hil.firmware.qemu_firmware import find_workspace, wanted

    choice = wanted(cfg)
    if choice == "replay":
        return None
    return choice == "runtime" or bool(os.environ.get("HIL_GIT_BASE")) or find_workspace() is not None


def check_sources(required: bool) -> Check:
    """The pinned source workspace: there, finished, and stamped at the installed package's pins."""
    from hil.firmware.pins import shown
    from hil.firmware.qemu_firmware import workspace_folder
    from hil.firmware.sources_cmd import HINT, read_pins
    from hil.firmware.workspace import ENV_FILE, stale_pins

    folder, name = workspace_folder(), "firmware sources"
    pins = read_pins()
    base = os.environ.get("HIL_GIT_BASE")
    fix = f"{HINT}" + (f"; with HIL_GIT_BASE={base} set, `hil run` and pytest also assemble it on demand" if base else "")
    if not (folder / ENV_FILE).is_file():
        meanwhile = "" if required else "; until it is there, firmware = \"auto\" runs the replay image"
        return Check(name, False, f"no workspace at {folder} (RT700_SDK_DIR){meanwhile}", fix, required)
    stale = stale_pins(folder, pins)
    if stale:
        return Check(name, False, f"{folder} is not at the pins of {shown(pins.source)}: {'; '.join(stale)}",
                     fix, required)
    return Check(name, True, f"{folder}: {len(pins.pins)} repositories at the pins of {shown(pins.source)}")


def check_cmake(required: bool) -> Check:
    fix = f"apt-get install cmake ({'.'.join(map(str, CMAKE_MIN))} or later)"
    found = _tool("cmake", "cmake", fix, CMAKE_BANNER)
    match = re.search(r"cmake version (\d+)\.(\d+)", found.detail)
    if found.ok and match and (int(match.group(1)), int(match.group(2))) < CMAKE_MIN:
        return Check("cmake", False, f"{found.detail}: older than {'.'.join(map(str, CMAKE_MIN))}, which the "
                     "firmware's CMakeLists.txt needs", fix, required)
    return _as(found, required)


def check_cross_gxx(cfg: BoardConfig, required: bool) -> Check:
    """arm-none-eabi-g++ beside the gcc doctor.py checks (ExecuTorch's runtime is C++), of the same version."""
    from pathlib import Path

    root = os.environ.get("ARMGCC_DIR") or str(cfg.get("paths.armgcc_dir", "") or "")
    found = _tool("arm-none-eabi-g++", "arm-none-eabi-g++", CROSS_FIX, GXX_BANNER, [Path(root) / "bin"] if root else [])
    gcc = _tool("arm-none-eabi-gcc", "arm-none-eabi-gcc", CROSS_FIX, r"^arm-none-eabi-gcc\b",
                [Path(root) / "bin"] if root else [])
    if found.ok and gcc.ok and _version(found.detail) != _version(gcc.detail):
        return Check("arm-none-eabi-g++", False, f"{found.detail} is not the version of {gcc.detail}", CROSS_FIX,
                     required)
    return _as(found, required)


def check_host_cc(required: bool) -> Check:
    """ExecuTorch builds its flatcc compiler for the host (third-party/CMakeLists.txt, flatcc_ep)."""
    import shutil

    fix = "apt-get install gcc (a host C compiler: ExecuTorch's build compiles flatcc for the host)"
    path = shutil.which("cc") or shutil.which("gcc")
    if path is None:
        return Check("host C compiler", False, "neither 'cc' nor 'gcc' on PATH", fix, required)
    ok, answer = _answer(path, HOST_CC_BANNER)
    return Check("host C compiler", ok, f"{path} ({answer})" if ok else answer, fix, required)


def firmware_checks(cfg: BoardConfig) -> list[Named]:
    """The checks of `cfg`'s firmware build (see the module docstring), to run beside doctor.py's."""
    if cfg.kind == "rt700":
        return [("firmware sources", lambda: _pins_only(check_sources(True))),
                ("cmake", lambda: check_cmake(True)),
                ("arm-none-eabi-g++", lambda: check_cross_gxx(cfg, True))]
    if cfg.kind != "qemu":
        return []
    runtime = wants_runtime(cfg)
    if runtime is None:
        return []
    return [("firmware sources", lambda: check_sources(runtime)),
            ("cmake", lambda: check_cmake(runtime)),
            ("ninja", lambda: _as(_tool("ninja", "ninja", "apt-get install ninja-build", NINJA_BANNER), runtime)),
            ("arm-none-eabi-g++", lambda: check_cross_gxx(cfg, runtime)),
            ("host C compiler", lambda: check_host_cc(runtime))]


def _pins_only(found: Check) -> Check:
    """On the RT700 the paths may come from elsewhere (doctor.py's MCUX_SDK, ... checks): a workspace that
    is absent is a note, one at other pins is still a finding."""
    from dataclasses import replace

    return replace(found, required=False) if found.detail.startswith("no workspace at") else found


def _as(found: Check, required: bool) -> Check:
    from dataclasses import replace

    return replace(found, required=required)


def _version(detail: str) -> str:
    match = re.search(r"\) (\d+\.\d+\.\d+)", detail) or re.search(r"(\d+\.\d+\.\d+)", detail)
    return match.group(1) if match else detail
