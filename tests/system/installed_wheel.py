"""et-hil as a user gets it: its wheel, built from the checkout's tracked files, in a fresh environment of its own.

The wheel is built from a copy of the repository's tracked files (`pip wheel --no-deps
--no-build-isolation`: offline, a second or two). The fresh environment is a venv without pip
whose site-packages holds one `.pth` line naming this interpreter's site-packages: the pinned heavy
dependencies (torch, executorch) are reused, not reinstalled. A plain path line in a `.pth` does
not run the other `.pth` files of that folder, so the checkout's editable install stays invisible
there. The user's own pins (USER_PINS: another pytest than constraints.txt's, another hypothesis)
go in first, from the index pip is configured with. Module-scoped fixtures: a test module that
imports `wheel` and `venv` builds its own pair once (tests/system/test_installed_package.py,
tests/system/test_nightly_fills_itself.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA_FOLDERS = ("boards", "budgets", "firmware")
TOP_FILES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "CHANGELOG.md")
# A user's own pins, each inside et-hil's range and different from constraints.txt.
USER_PINS = ("pytest==8.4.2", "hypothesis==6.168.3")


def tracked_files() -> list[str]:
    """The files a fresh clone has (what the wheel is built from)."""
    done = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        pytest.fail(f"git ls-files failed in {REPO}: {done.stderr}")
    return [line for line in done.stdout.splitlines() if (REPO / line).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    tracked = tracked_files()
    for name in tracked:
        if name.split("/")[0] in ("hil", *DATA_FOLDERS) or name in TOP_FILES:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(work / "dist"), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (built,) = (work / "dist").glob("et_hil-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    (site,) = root.glob("lib/python*/site-packages")
    (site / "et_hil_base.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # --ignore-installed: the shared folder behind the .pth already has other versions, which stay untouched.
    pins = subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", *USER_PINS],
        capture_output=True, text=True, timeout=300, env=clean_env(),
    )
    assert pins.returncode == 0, pins.stdout + pins.stderr
    done = subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
         str(wheel)],
        capture_output=True, text=True, timeout=300, env=clean_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that would point Python back at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, **extra}
