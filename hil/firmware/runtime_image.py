"""Build the QEMU runtime image: ExecuTorch's runtime, ETDumpGen and a program's kernels for mps2-an505.

The image is `firmware/qemu/runtime/` (the shared application of `firmware/app/` with QEMU's board
glue), built by CMake from the pinned source workspace (`hil sources`). Two levels of caching:

- one build folder per *runtime* (pinned ExecuTorch, compiler, flatc, CMake files and options, by
  content, never by where they lie): the ExecuTorch libraries are compiled there once per machine,
  whichever venv, checkout or wheel asks (hil.firmware.runtime_sources: the entry configures from
  its own copy of the firmware sources); a new model reconfigures it (seconds) and compiles only
  the model's kernels, the registration code and the application;
- one finished ELF per *image* (runtime + the .pte + every firmware source): a second run of the
  same model builds nothing.

Both are checked when used (hil.base.entry_check): an image's ELF against the sha256 recorded when it
was published (a damaged one is removed and linked again), the runtime's libraries against theirs
before each link (hil.firmware.runtime_libraries: a damaged one is archived again).

Why a private copy of the workspace's ExecuTorch per runtime folder: ExecuTorch's configure deletes
and rebuilds `third-party/flatcc/lib` inside its own source tree, so two builds over one checkout
(this one and the RT700's, or two runtimes) break each other's link, and a read-only workspace
cannot be configured at all. The build folder is locked while in use, so concurrent harnesses
(pytest-xdist workers) take turns and then share the images.

A cache that cannot be written (restored read-only) serves the images it holds: a hit opens
nothing for writing. A miss there is a BuildError naming the folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hil.base.no_follow import no_follow
from hil.base.atomic import copy_error, copy_file, make_public_dir
from hil.base.cache_entry import served
from hil.base.entry_check import seal
from hil.base.errors import BuildError, EnvironmentFault
from hil.firmware.image_generated import write_generated
from hil.firmware.qemu_firmware import RUNTIME_TICK_MHZ
from hil.firmware.build_faults import disk_full, refused_write
from hil.firmware.runtime_libraries import record_libraries, repair_libraries
from hil.firmware.runtime_sources import entry_flatc, file_sha256, sync_firmware
from hil.firmware.toolchain import BuildCommandError, compiler_version, find_arm_gcc, run_logged
from hil.base.paths import FIRMWARE_DIR, PACKAGE_DIR, cache_dir

RUNTIME_DIR = FIRMWARE_DIR / "qemu" / "runtime"
ELF_NAME = "hil_qemu_runtime.elf"
LOG_NAME = "build.log"
CMSIS_NN_DIR = "cmsis-nn"  # the runtime folder's copy of the workspace's CMSIS-NN
# The runtime is built once (minutes); a model's image after that in well under this.
CONFIGURE_TIMEOUT_S = 600.0
BUILD_TIMEOUT_S = 1800.0
LOCK_TIMEOUT_S = BUILD_TIMEOUT_S + CONFIGURE_TIMEOUT_S
# Bump when the layout of the cache or the build's options change.
_RUNTIME_VERSION = "2"
# Bump when an image entry's layout changes (2: it holds the record of its ELF, hil.base.entry_check).
_IMAGE_VERSION = "2"
IMAGE_WHAT = "QEMU runtime image"
# The image CMake's choice of kernels (firmware/qemu/runtime/CMakeLists.txt): ON links the prebuilt portable_kernels
# library, every kernel compiled once per runtime folder; "OFF" in `options` compiles the program's own kernel files.
KERNELS_PREBUILT = "HIL_KERNELS_PREBUILT"
# What shapes the runtime libraries (besides the ExecuTorch sources, the compiler and flatc), under FIRMWARE_DIR.
_RUNTIME_INPUTS = ("cmake", "qemu/runtime/CMakeLists.txt")
# What shapes one image on top of its runtime.
_IMAGE_INPUTS = (FIRMWARE_DIR / "app", FIRMWARE_DIR / "common", FIRMWARE_DIR / "qemu", RUNTIME_DIR,
                 PACKAGE_DIR / "firmware" / "model_array.py", PACKAGE_DIR / "firmware" / "kernel_sources.py",
                 PACKAGE_DIR / "firmware" / "sim_neutron_table.py", PACKAGE_DIR / "firmware" / "image_generated.py",
                 PACKAGE_DIR / "replay")
# The simulated NPU's clock when the board file names none (firmware/qemu/runtime/CMakeLists.txt's default).
DEFAULT_NPU_CLOCK_MHZ = 250.0
_SOURCE_SUFFIXES = {".c", ".cpp", ".h", ".ld", ".S", ".cmake", ".txt", ".py"}
_COMPILER_ERROR = re.compile(r"^(?P<where>[^\s:]+:\d+(?::\d+)?): (?:fatal )?error: .*$", re.MULTILINE)
_CMAKE_ERROR = re.compile(r"^CMake Error at (?P<where>\S+:\d+).*$(?:\n\s*\n)?(?:\n?^ +\S.*$)?", re.MULTILINE)
_LINK_ERROR = re.compile(r"^.*(?:undefined reference to|region `\w+' overflowed|ld: .*error).*$", re.MULTILINE)


@dataclass(frozen=True)
class RuntimeSources:
    """The ExecuTorch and CMSIS-NN checkouts of a source workspace and the pins it was made from (for the cache key)."""

    executorch: Path
    pins_record: bytes
    cmsis_nn: Path | None = None  # the Cortex-M backend's kernels (CMSIS_NN_LOCAL_PATH); None: a workspace without

    @classmethod
    def from_workspace(cls, workspace: Path) -> "RuntimeSources":
        from hil.firmware.workspace import SUMMARY_FILE, workspace_paths

        from hil.firmware.sources_cmd import HINT

        paths = workspace_paths(workspace)
        root = Path(paths.get("EXECUTORCH_ROOT", ""))
        if not paths or not (root / "CMakeLists.txt").is_file():
            raise EnvironmentFault(f"{workspace} is not a finished source workspace (no ExecuTorch checkout named in "
                                   f"its workspace.env), so no runtime image is built; assemble it with {HINT}")
        cmsis_nn = Path(paths.get("CMSIS_NN", ""))
        if not (cmsis_nn / "CMakeLists.txt").is_file():
            raise EnvironmentFault(f"{workspace} holds no CMSIS-NN checkout (CMSIS_NN in its workspace.env), which the "
                                   f"runtime's Cortex-M kernels are built from; assemble it again with {HINT}")
        return cls(root, _pins_record(workspace / SUMMARY_FILE, root), cmsis_nn)


def _pins_record(summary: Path, root: Path) -> bytes:
    """What the workspace holds, by content: each repository's name, place, commit and files left out.

    Not the summary's bytes: they name the workspace's folder and the mirror it came from, so two
    workspaces of the same commits (the checkout's, a wheel user's own) would build the runtime twice.
    """
    try:
        data = json.loads(summary.read_text(encoding="utf-8"))
        repos = [{key: repo[key] for key in ("repo", "path", "commit", "absent")} for repo in data["repos"]]
    except (OSError, ValueError, KeyError, TypeError):
        return str(root).encode()  # a workspace of unknown commits: only this one folder's builds share
    return json.dumps({"bench_commits": bool(data.get("bench_commits")), "repos": repos}, sort_keys=True).encode()


def build_runtime_image(pte: Path, sources: RuntimeSources, *, flatc: Path | None = None,
                        options: dict[str, str] | None = None, cache: Path | None = None,
                        jobs: int | None = None, ask_cmake: bool = False) -> Path:
    """The runtime ELF for the program `pte`: from the image cache, else built (and cached).

    `options` are the image's CMake settings (`HIL_SIM_NPU_CLOCK_MHZ`, ...), part of its cache key.
    `ask_cmake` leaves the kernel list and the simulated-Neutron table to the CMake's own `python -m` children,
    as a build by hand does (the same image, seconds slower: bench/new_model_image.py's other side).
    A failed build raises BuildError naming the first error's file and line and the kept log.
    """
    options = dict(sorted((options or {}).items()))
    pte = Path(pte)
    runtime_key = _runtime_key(sources, compiler_version(find_arm_gcc()), flatc, FIRMWARE_DIR)
    root = _root(runtime_key, cache)
    image_key = _image_key(runtime_key, pte.read_bytes(), options)
    final = root / "images" / image_key[:24] / ELF_NAME
    if served(final.parent, IMAGE_WHAT):  # checked: a damaged ELF is removed and linked again
        return final
    with Locked(root, f"the image of {pte}"):
        if served(final.parent, IMAGE_WHAT):  # another harness built it while we waited
            return final
        build = _prepare_runtime(root, sources)
        repair_libraries(root, build)  # a damaged library is archived again, not linked
        source = sync_firmware(FIRMWARE_DIR, root)
        flatc = entry_flatc(flatc, root)
        model = root / "models" / f"{image_key[:24]}.pte"
        model.parent.mkdir(exist_ok=True)
        copy_file(pte, model)  # a disk that refuses it: one line naming `model` (shutil's error names `pte`)
        try:
            generated = None if ask_cmake else write_generated(model, root / "executorch", tick_mhz=RUNTIME_TICK_MHZ,
                                                               npu_clock_mhz=float(options.get(
                                                                   "HIL_SIM_NPU_CLOCK_MHZ", DEFAULT_NPU_CLOCK_MHZ)))
        except BuildError as exc:  # as the configure said it: the program's operator has no portable kernel
            raise BuildError(f"QEMU runtime image for {pte}: {exc}") from exc
        log = root / "images" / f"{image_key[:24]}.{LOG_NAME}"
        log.parent.mkdir(exist_ok=True)
        log.unlink(missing_ok=True)
        step = "configure"
        try:
            configure = _configure_command(source, root, build, model, flatc, options) + (
                generated.cmake_options() if generated is not None else ["-UHIL_KERNEL_LIST", "-UHIL_SIM_TABLE_SOURCE",
                                                                        "-UHIL_KERNEL_LIBRARIES"])
            run_logged(configure, cwd=root, log=log, timeout=CONFIGURE_TIMEOUT_S)
            step = "build"
            run_logged(["cmake", "--build", str(build), "--target", "hil_qemu_runtime", "--parallel",
                        str(jobs or os.cpu_count() or 2)], cwd=root, log=log, timeout=BUILD_TIMEOUT_S)
        except BuildCommandError as exc:
            cause = disk_full(log, step) or _first_error(log) or exc.reason
            raise BuildError(f"QEMU runtime image for {pte}: {cause} (log: {log})") from exc
        except OSError as exc:  # the log refused the harness's own line: a full (or read-only) disk
            cause = refused_write(exc, log, step)
            if cause is None:
                raise
            raise BuildError(f"QEMU runtime image for {pte}: {cause} (log: {log})") from exc
        record_libraries(root, build)
        publish(build / ELF_NAME, final)
        for made in (model, *(() if generated is None else (generated.kernel_list, generated.sim_table))):
            if made is not None:
                made.unlink(missing_ok=True)
    return final


def runtime_root(sources: RuntimeSources, *, flatc: Path | None = None, cache: Path | None = None) -> Path:
    """The cache folder of the runtime `build_runtime_image` builds from `sources` with this compiler and
    `flatc`: its libraries' build folder, its sources' copy and its images (tests copy it)."""
    return _root(_runtime_key(sources, compiler_version(find_arm_gcc()), flatc, FIRMWARE_DIR), cache)


def _root(runtime_key: str, cache: Path | None) -> Path:
    """The runtime's folder by its real path: CMake records its build folder's absolute path and refuses it
    under any other name, so a cache reached through a symbolic link (a CI cache restored by a link, a
    `firmware` folder linked from another cache) must give the same path as the folder itself."""
    return ((cache or cache_dir()) / "firmware" / "qemu-runtime").resolve() / runtime_key[:24]


def _runtime_key(sources: RuntimeSources, compiler: str, flatc: Path | None, firmware: Path) -> str:
    """sha256 over what the ExecuTorch libraries depend on, by content: the pins, the compiler's version,
    flatc's bytes and the CMake files under `firmware`. No path: every install on a machine shares it."""
    digest = hashlib.sha256()
    for label, blob in (("version", _RUNTIME_VERSION.encode()), ("compiler", compiler.encode()),
                        ("pins", sources.pins_record), ("flatc", file_sha256(flatc).encode() if flatc else b"")):
        digest.update(f"{label}:{len(blob)}:".encode() + blob)
    hash_tree(digest, tuple(firmware / part for part in _RUNTIME_INPUTS))
    return digest.hexdigest()


def _image_key(runtime_key: str, pte: bytes, options: dict[str, str]) -> str:
    """sha256 over the runtime, the program, the image's options and every source the image compiles."""
    digest = hashlib.sha256(runtime_key.encode() + _IMAGE_VERSION.encode())
    digest.update(hashlib.sha256(pte).digest())
    digest.update(repr(sorted(options.items())).encode())
    hash_tree(digest, _IMAGE_INPUTS)
    return digest.hexdigest()


def hash_tree(digest: "hashlib._Hash", paths: tuple[Path, ...]) -> None:
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in _SOURCE_SUFFIXES)
        for file in files:
            if "__pycache__" in file.parts:
                continue
            blob = file.read_bytes()
            # Named from the listed folder's parent: the same in a checkout and in an installed wheel.
            digest.update(f"{file.relative_to(path.parent)}:{len(blob)}:".encode() + blob)


def _prepare_runtime(root: Path, sources: RuntimeSources) -> Path:
    """The runtime's build folder, with its private copies of the ExecuTorch and CMSIS-NN sources made on first use.

    CMSIS-NN is copied too, though nothing writes into it: the build folder names its sources by path, and a
    path into one workspace would tie the runtime folder (keyed by content) to where that workspace lies."""
    _private_copy(sources.executorch, root / "executorch")
    if sources.cmsis_nn is not None:
        _private_copy(sources.cmsis_nn, root / CMSIS_NN_DIR)
    return root / "build"


def _private_copy(origin: Path, private: Path) -> None:
    """`origin` copied to `private` once (a marker file says it finished); a failed copy leaves nothing."""
    root = private.parent
    if not (private / ".hil-copied").is_file():
        shutil.rmtree(private, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=".executorch.", dir=root))
        shutil.rmtree(tmp)
        try:
            shutil.copytree(origin, tmp, symlinks=True, ignore=_not_for_the_build)
            (tmp / ".hil-copied").write_text(str(origin), encoding="utf-8")
        except OSError as exc:  # shutil.Error too: a full disk fails every file after the first
            shutil.rmtree(tmp, ignore_errors=True)  # no half copy left, taking the room or served later
            error = copy_error(exc, private)
            if error is None:
                raise
            raise error from None
        os.rename(tmp, private)


def wheel_flatc() -> Path | None:
    """The `flatc` the executorch wheel ships (the pinned flatbuffers' version): passed to the build,
    it saves compiling a host flatc from source (most of a cold runtime build)."""
    import importlib.util

    spec = importlib.util.find_spec("executorch")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        flatc = Path(folder) / "data" / "bin" / "flatc"
        if flatc.is_file() and os.access(flatc, os.X_OK):
            return flatc
    return None


def _not_for_the_build(folder: str, names: list[str]) -> list[str]:
    """What the private copy leaves out: hidden entries (git, CI and editor files the build never reads) and
    symlinks into the parts the workspace's sparse checkout left out (they would dangle)."""
    return [name for name in names if name.startswith(".")
            or (os.path.islink(os.path.join(folder, name)) and not os.path.exists(os.path.join(folder, name)))]


def _configure_command(source: Path, root: Path, build: Path, model: Path, flatc: Path | None,
                       options: dict[str, str]) -> list[str]:
    """Configure from the entry's copy of the sources. This interpreter and the folder holding its `hil`
    are passed every time (the build's code generators import both): the last install to use the
    entry may be gone, and its paths must not linger in the CMake cache."""
    command = ["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja",
               f"-DEXECUTORCH_ROOT={root / 'executorch'}", f"-DMODEL={model}", f"-DHIL_PYTHON={sys.executable}",
               f"-DPYTHON_EXECUTABLE={sys.executable}", f"-DHIL_PYTHONPATH={PACKAGE_DIR.parent}",
               f"-DCMSIS_NN_LOCAL_PATH={root / CMSIS_NN_DIR}"]
    if flatc is not None:
        command.append(f"-DFLATC_EXECUTABLE={flatc}")
    # Said every time: a CMake cache keeps the last configure's value, and the image key holds only `options`.
    settings = {KERNELS_PREBUILT: "ON", **options}
    return command + [f"-D{name}={value}" for name, value in settings.items()]


def _first_error(log: Path) -> str | None:
    """The first compiler, CMake or linker error of a failed build, with its file and line."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    for pattern in (_CMAKE_ERROR, _COMPILER_ERROR, _LINK_ERROR):
        match = pattern.search(text)
        if match is not None:
            return " ".join(match.group(0).split())
    return None


def publish(elf: Path, final: Path) -> None:
    """Copy the ELF into its image folder in one rename, so a reader never sees half of it."""
    final.parent.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".image.", dir=final.parent.parent))
    try:
        copy_file(elf, work / final.name)
        seal(work)  # the ELF's size and sha256, recorded once it is whole
    except OSError:  # a full disk: no half entry left behind
        shutil.rmtree(work, ignore_errors=True)
        raise
    make_public_dir(work)
    try:
        os.rename(work, final.parent)
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
        if not final.is_file():
            raise


class Locked:
    """An exclusive flock on the build folder `root`, waited for up to LOCK_TIMEOUT_S; a folder that cannot
    be written (a read-only cache) is a BuildError naming it and what was to be built."""

    def __init__(self, root: Path, what: str, kind: str = "QEMU runtime") -> None:
        self.path = root / ".lock"
        self.what = what
        self.kind = kind
        self.fd: int | None = None

    def __enter__(self) -> "Locked":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = no_follow(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise BuildError(f"the {self.kind} cache folder {self.path.parent} cannot be written ({exc.strerror}): "
                             f"a read-only cache serves only the images it holds, and {self.what} is not among "
                             "them; point HIL_CACHE_DIR at a writable copy of it") from None
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    raise BuildError(f"the {self.kind} build folder {self.path.parent} stayed locked for "
                                     f"{LOCK_TIMEOUT_S:g} s by another build") from None
                time.sleep(0.5)

    def __exit__(self, *_exc: object) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
