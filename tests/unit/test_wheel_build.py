"""`pip wheel` of a checkout leaves the checkout as it was: no `build/`, no `et_hil.egg-info/` written into it.

The checkout is a copy of every tracked file (what a fresh clone has), made a git repository of its own so
`git status --porcelain --ignored` can say what the build left, ignored files included (.gitignore lists both
folders, so a plain `git status` would not). The wheel is built as tests/system/test_installed_package.py
builds it (offline, no build isolation), into a folder outside the copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _tree(root: Path) -> set[str]:
    """Every file and folder under `root` but .git, as paths relative to it."""
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (folder == str(root) and d == ".git")]
        found.update(os.path.relpath(os.path.join(folder, name), root) for name in (*dirs, *files))
    return found


def test_pip_wheel_of_a_checkout_writes_nothing_into_it(tmp_path):
    checkout = tmp_path / "et-hil"
    for name in _git(REPO, "ls-files").splitlines():
        if (REPO / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    _git(checkout, "init", "-q")
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-q", "-m", "copy")
    before = _tree(checkout)
    assert _git(checkout, "status", "--porcelain", "--ignored") == ""
    scratch = tmp_path / "tmp"  # the build's own temporary folders: removed when it ends
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                           "-w", str(tmp_path / "dist"), str(checkout)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(scratch.iterdir()) == []
    assert _git(checkout, "status", "--porcelain", "--ignored") == ""  # not `!! build/`, not `!! et_hil.egg-info/`
    assert _tree(checkout) == before
    (wheel,) = (tmp_path / "dist").glob("et_hil-*.whl")
    with zipfile.ZipFile(wheel) as built:  # what a run needs is still in it
        names = set(built.namelist())
    assert {"hil/cli/main.py", "hil/data/boards/qemu.toml", "hil/data/budgets/qemu.toml"} <= names
    assert any(n.endswith(".dist-info/entry_points.txt") for n in names)
