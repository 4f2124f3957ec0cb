"""The stack and flash footprint of a real run: `hil run` of a tiny model on the QEMU runtime image.

What the profile says is checked against binutils on the image that ran (`nm --size-sort -S -l`:
the symbols' sizes and their source lines; `readelf -S`: the sections; `nm`: the stack's bounds),
never against the product's own reading of it. One run of the small CNN test_qemu_runtime.py runs
too (the same program: its export and image are cache hits when that test ran first).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIL = [sys.executable, "-m", "hil.cli.main"]

from runtime_workspace import needs_runtime  # noqa: E402
pytestmark = needs_runtime
SMALL_CNN = f"{REPO / 'tests' / 'fixtures' / 'small_cnn.py'}:factory"
NM_LINE = re.compile(r"([0-9a-f]+) ([0-9a-f]+) (\w) (\S+)(?:\t(\S+):\d+)?")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The run folder and `hil run`'s printed table."""
    root = tmp_path_factory.mktemp("footprint")
    done = subprocess.run([*HIL, "run", "--board", "qemu", "--model", SMALL_CNN,
                           "--delegate", "none", "--iterations", "2", "--out", str(root / "out")],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "out", done.stdout


def _profile(out: Path) -> dict:
    return json.loads((out / "profile.json").read_text())


def _image(out: Path) -> str:
    return json.loads((out / "manifest.json").read_text())["firmware"]


def _nm(image: str) -> list[tuple[int, int, str, str, str | None]]:
    """(address, size, type letter, name, source file) of every sized symbol, from `nm --size-sort -S -l`."""
    text = subprocess.run(["arm-none-eabi-nm", "--size-sort", "-S", "-l", image], capture_output=True, text=True,
                          check=True, timeout=120).stdout
    rows = []
    for line in text.splitlines():
        match = NM_LINE.fullmatch(line.strip())
        assert match, line
        rows.append((int(match[1], 16), int(match[2], 16), match[3], match[4], match[5]))
    return rows


def _functions(rows: list, keep=lambda source: True) -> int:
    """Bytes of the code symbols (T, t, W) whose source passes `keep`, aliases (one address) once."""
    by_address: dict[int, int] = {}
    for address, size, kind, _name, source in rows:
        if kind in "TtWw" and keep(source):
            by_address[address] = max(size, by_address.get(address, 0))
    return sum(by_address.values())


def test_the_stack_mark_lies_in_the_images_stack_and_is_printed(run) -> None:
    out, table = run
    stack = _profile(out)["stack"]
    symbols = subprocess.run(["arm-none-eabi-nm", _image(out)], capture_output=True, text=True, check=True).stdout
    bounds = {name: int(address, 16) for address, name in re.findall(r"^([0-9a-f]+) \w (__Stack(?:Limit|Top))$",
                                                                       symbols, re.M)}
    assert (stack["limit"], stack["top"]) == (f"0x{bounds['__StackLimit']:08x}", f"0x{bounds['__StackTop']:08x}")
    assert stack["size_bytes"] == bounds["__StackTop"] - bounds["__StackLimit"] == 0x8000  # runtime/link.ld
    # More than the deepest frames of a run need to be live (main's, the executor's), far less than all.
    assert 512 <= stack["used_bytes"] < stack["size_bytes"] and not stack["overflowed"]
    assert stack["free_bytes"] == stack["size_bytes"] - stack["used_bytes"]
    assert f"stack high-water mark: {stack['used_bytes']} of {stack['size_bytes']} B" in table


def test_code_sizes_agree_with_nm_and_readelf_of_the_image(run) -> None:
    out, table = run
    code = _profile(out)["code_size"]
    image = _image(out)
    rows = _nm(image)
    assert code["functions_bytes"] == _functions(rows)
    sections = subprocess.run(["arm-none-eabi-readelf", "-SW", image], capture_output=True, text=True,
                              check=True).stdout
    flash = 0
    for name, kind, size, flags in re.findall(
            r"\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Z]*)", sections):
        if "A" in flags and kind != "NOBITS" and name != ".modeldata":
            flash += int(size, 16)
    assert code["total_bytes"] == flash
    assert code["runtime_bytes"] == flash - code["kernels_bytes"] == flash - sum(code["kernels"].values())
    # Each kernel of the program: at least every function nm places in its op_<name>.cpp, at most those
    # plus the functions nm places in a header (templates the kernel's unit instantiated).
    for event, kernel in (("native_call_convolution.out", "op_convolution"), ("native_call_relu.out", "op_relu"),
                          ("native_call_addmm.out", "op_addmm")):
        own = _functions(rows, lambda source, k=kernel: source is not None and Path(source).name == f"{k}.cpp")
        headers = _functions(rows, lambda source: source is not None and source.endswith(".h"))
        entry = code["operators"][event]
        assert entry["kernel"] == kernel and own > 0
        assert own <= entry["bytes"] <= own + headers, (kernel, own, entry)
    assert f"flash (code, constants): {flash} B" in table
