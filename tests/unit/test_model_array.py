"""hil.firmware.model_array: the generated C really puts the .pte bytes, aligned, in .modeldata.

Compiled with the real Arm cross compiler and read back with the real binutils, because the
firmware's link script and the ExecuTorch loader depend on exactly those object-file facts.
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from hil.firmware.model_array import main, pte_to_c_array, write_c_array
from hil.base.paths import REPO_ROOT

GCC = "arm-none-eabi-gcc"
OBJCOPY = "arm-none-eabi-objcopy"
READELF = "arm-none-eabi-readelf"


def _compile(c_source: Path) -> Path:
    obj = c_source.with_suffix(".o")
    subprocess.run([GCC, "-mcpu=cortex-m33", "-mthumb", "-std=c11", "-Wall", "-Werror",
                    "-c", str(c_source), "-o", str(obj)], check=True, timeout=60)
    return obj


def _section_bytes(obj: Path, section: str) -> bytes:
    out = obj.with_name(obj.name + section.replace(".", "_") + ".bin")
    subprocess.run([OBJCOPY, "-O", "binary", f"--only-section={section}", str(obj), str(out)],
                   check=True, timeout=60)
    return out.read_bytes()


def _section_alignment(obj: Path, section: str) -> int:
    """The sh_addralign of `section`, from `readelf -S -W` (columns after the name are fixed)."""
    text = subprocess.run([READELF, "-S", "-W", str(obj)], check=True, capture_output=True,
                          text=True, timeout=60).stdout
    for line in text.splitlines():
        fields = line.replace("[ ", "[").split()
        if len(fields) > 2 and fields[1] == section:
            return int(fields[-1])
    raise AssertionError(f"no section {section} in {obj}:\n{text}")


@pytest.fixture(scope="module", autouse=True)
def _need_toolchain() -> None:
    missing = [tool for tool in (GCC, OBJCOPY, READELF) if shutil.which(tool) is None]
    assert not missing, f"the Arm cross toolchain is part of the environment; missing {missing}"


@pytest.mark.parametrize(("size", "align"), [(1001, 16), (17, 16), (4096, 64)])
def test_section_holds_exact_bytes_with_alignment(tmp_path: Path, size: int, align: int) -> None:
    data = random.Random(size).randbytes(size)
    src = tmp_path / "model_pte.c"
    src.write_text(pte_to_c_array(data, align=align))
    obj = _compile(src)
    assert _section_bytes(obj, ".modeldata") == data
    assert _section_alignment(obj, ".modeldata") == align
    # model_pte_len is the only other initialised constant: a 32-bit size_t holding the length.
    assert struct.unpack("<I", _section_bytes(obj, ".rodata")) == (size,)


def test_symbol_and_section_options(tmp_path: Path) -> None:
    data = bytes(range(256)) * 3
    src = tmp_path / "other.c"
    src.write_text(pte_to_c_array(data, symbol="net_blob", section=".extmodel", align=32))
    obj = _compile(src)
    symbols = subprocess.run(["arm-none-eabi-nm", "-S", str(obj)], check=True, capture_output=True,
                             text=True, timeout=60).stdout
    sizes = {fields[-1]: int(fields[1], 16) for fields in map(str.split, symbols.splitlines())}
    assert sizes["net_blob"] == len(data)
    assert "net_blob_len" in sizes and "model_pte" not in sizes
    assert _section_bytes(obj, ".extmodel") == data
    assert _section_alignment(obj, ".extmodel") == 32


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"symbol": "1model"}, "not a C identifier"),
     ({"symbol": "model-pte"}, "not a C identifier"),
     ({"section": '.x"y'}, "section name"),
     ({"align": 24}, "power of two"),
     ({"align": 0}, "power of two")],
)
def test_rejects_what_the_compiler_would(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pte_to_c_array(b"\x01\x02", **kwargs)


def test_rejects_empty_program() -> None:
    with pytest.raises(ValueError, match="empty"):
        pte_to_c_array(b"")


def test_cli_module_writes_the_source_cmake_compiles(tmp_path: Path) -> None:
    """The exact invocation firmware/rt700/CMakeLists.txt uses."""
    pte = tmp_path / "model.pte"
    pte.write_bytes(random.Random(7).randbytes(333))
    out = tmp_path / "gen" / "model_pte.c"
    subprocess.run([sys.executable, "-m", "hil.firmware.model_array", str(pte), str(out)],
                   check=True, cwd=REPO_ROOT, timeout=60)
    assert re.search(r"const size_t model_pte_len = 333u;", out.read_text())
    assert _section_bytes(_compile(out), ".modeldata") == pte.read_bytes()


def test_cli_names_the_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.pte"
    assert main([str(missing), str(tmp_path / "out.c")]) == 1
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "out.c").exists()


def test_write_c_array_replaces_whole_file(tmp_path: Path) -> None:
    pte = tmp_path / "m.pte"
    out = tmp_path / "m.c"
    out.write_text("stale")
    pte.write_bytes(b"\xaa" * 20)
    write_c_array(pte, out)
    assert "stale" not in out.read_text() and out.read_text().count("0xaa") == 20
