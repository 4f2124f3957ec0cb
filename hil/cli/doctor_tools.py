"""One line of `hil doctor` and the way a tool is found and asked for its version.

Apart from hil/cli/doctor.py so that the firmware checks (hil/cli/doctor_firmware.py) and the bench's
checks share them without importing each other.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Seconds one check may take.
CHECK_TIMEOUT_S = 8.0


@dataclass
class Check:
    """One line of the report. `required=False` marks a missing piece that fails nothing."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True

    def line(self) -> str:
        state = "ok" if self.ok else ("MISSING" if self.required else "note")
        text = f"  {state:<8} {self.name}: {self.detail}"
        if not self.ok and self.fix:
            text += f"\n           fix: {self.fix}"
        return text


# What each tool's `--version` answers first: a path that runs something else (a wrapper, `/bin/false`,
# an x86 gcc) is found on PATH but is not the tool.
GDB_BANNER = r"^GNU gdb\b"
GCC_BANNER = r"^arm-none-eabi-gcc\b"
QEMU_BANNER = r"^QEMU emulator version\b"


def _answer(path: str, banner: str) -> tuple[bool, str]:
    """Run `path --version`: (True, its first line) when it exits 0 with the tool's banner, else (False, why)."""
    command = f"`{path} --version`"
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, errors="replace",
                              timeout=CHECK_TIMEOUT_S - 1, check=False)
    except subprocess.TimeoutExpired:
        return False, f"{command} gave no answer within {CHECK_TIMEOUT_S - 1:g} s"
    except OSError as exc:
        return False, f"{command} cannot run: {exc.strerror or exc}"
    first = next(iter((proc.stdout or proc.stderr).strip().splitlines()), "")
    if proc.returncode != 0:
        return False, f"{command} exited with status {proc.returncode}" + (f": {first[:120]}" if first else "")
    if not re.search(banner, first):
        return False, f"{command} answered {first[:120]!r}, not the tool's banner"
    return True, first


def _tool(name: str, executable: str, fix: str, banner: str, extra_dirs: list[Path] = ()) -> Check:
    path = shutil.which(executable) or next(
        (str(d / executable) for d in extra_dirs if (d / executable).is_file()), None
    )
    if path is None:
        return Check(name, False, f"'{executable}' not found on PATH", fix)
    ok, answer = _answer(path, banner)
    return Check(name, ok, f"{path} ({answer})" if ok else answer, fix)
