"""A HardFault on the emulated RT700: the bench image with an undefined instruction planted at the first
instruction of `hil_publish_etdump` (firmware/common/hil_result.c), flashed through pyOCD's own server, must
end the run with the one-line forensics a bench would print, read through pyOCD's gdbserver (whose xPSR has
a flags type gdb refuses to cast: GdbMiSession.register_int).

What the line is checked against is computed here: the function's address from binutils' nm, its file and
line from binutils' addr2line, the planted bytes' place from pyelftools' section table. The UsageFault is
escalated to HardFault because the image never enables UsageFault (SHCSR.USGFAULTENA is 0 after reset).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SDK_DIR = os.environ.get("RT700_SDK_DIR", "")
# RT700_EMU_IMAGE_DIR (a folder `hil rt700-image` wrote) with RT700_EMU_MODEL (the model it was built from)
# skips the build while working on this test.
MODEL = os.environ.get("RT700_EMU_MODEL") or str(REPO / "tests/fixtures/small_cnn.py:factory")
UDF_THUMB = b"\x00\xde"  # UDF #0, T1 encoding 0xDE00, little-endian halfword
FUNCTION = "hil_publish_etdump"
# The run reaches the fault in seconds with the small CNN; a bigger RT700_EMU_MODEL may need RT700_EMU_TIMEOUT.
RUN_TIMEOUT_S = os.environ.get("RT700_EMU_TIMEOUT", "120")

pytestmark = pytest.mark.skipif(
    not SDK_DIR or not Path(SDK_DIR, "workspace.env").is_file(),
    reason="RT700_SDK_DIR does not name a workspace made by `hil sources`: no RT700 image can be built",
)


def _hil(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout, check=False)


def _address(elf: Path, name: str) -> int:
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, timeout=60).stdout
    return next(int(v, 16) for v, _k, n in (line.split() for line in out.splitlines() if len(line.split()) == 3)
                if n == name) & ~1  # a Thumb function's symbol has bit 0 set


def _plant(elf: Path, address: int, blob: bytes) -> None:
    """Overwrite the bytes at `address` in the file (the section holding it, by pyelftools' table)."""
    from elftools.elf.elffile import ELFFile

    with open(elf, "rb") as handle:
        sections = [(s["sh_addr"], s["sh_size"], s["sh_offset"]) for s in ELFFile(handle).iter_sections()
                    if s["sh_type"] == "SHT_PROGBITS" and s["sh_flags"] & 0x4]  # SHF_EXECINSTR
    start, _size, offset = next(entry for entry in sections if entry[0] <= address < entry[0] + entry[1])
    with open(elf, "r+b") as handle:
        handle.seek(offset + address - start)
        handle.write(blob)


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Path:
    given = os.environ.get("RT700_EMU_IMAGE_DIR")
    if given:
        return Path(given) / "hil_rt700.elf"
    out = tmp_path_factory.mktemp("rt700-emu-fault") / "image"
    done = _hil("rt700-image", "--model", MODEL, "--delegate", "none", "--out", str(out), timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "hil_rt700.elf"


def test_an_undefined_instruction_in_hil_publish_etdump_is_reported_in_one_line_with_its_source_line(image, tmp_path):
    faulty = tmp_path / "faulty.elf"
    shutil.copyfile(image, faulty)
    address = _address(faulty, FUNCTION)
    _plant(faulty, address, UDF_THUMB)
    where = subprocess.run(["arm-none-eabi-addr2line", "-e", str(faulty), hex(address)], capture_output=True,
                           text=True, timeout=60).stdout.strip()
    file, line = Path(where.split(":")[0]).name, where.split(":")[1].split()[0]
    assert file == "hil_result.c", where
    out = tmp_path / "run"
    done = _hil("run", "--board", "rt700-emu", "--model", MODEL, "--delegate", "none", "--elf", str(faulty),
                "--iterations", "1", "--timeout", RUN_TIMEOUT_S, "--out", str(out), timeout=float(RUN_TIMEOUT_S) + 600)
    assert done.returncode != 0, done.stdout[-2000:]
    expected = (f"UsageFault (escalated to HardFault): undefined instruction, in {FUNCTION} ({file}:{line})")
    assert expected in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
