"""Flash bytes per kernel and of the runtime, on a hand-made image: two kernels' sources (op_<name>.c) and
a runtime source, built here with arm-none-eabi-gcc; what the product attributes is checked against
binutils' `nm --size-sort` and `readelf -S` of the same image and the sizes the sources were written with."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from hil.analysis import code_size
from hil.analysis.code_size import NOT_IN_IMAGE_DELEGATED, code_size_section, kernel_unit_of, operator_kernel
from hil.records.elf_reader import read_elf
from hil.records.profile_model import Event

# Each kernel source holds a function and a constant table of known size; the runtime one too.
SOURCES = {
    "op_add.c": "const unsigned char add_table[300] = {1};\n"
                "int add_out(int a, int b) { return a + b + add_table[a & 255]; }\n",
    "op_convolution.c": "const unsigned short conv_table[1000] = {2};\n"
                        "static int conv_helper(int x) { return x * conv_table[x & 511]; }\n"
                        "int convolution_out(int x) { return conv_helper(x) + conv_helper(x + 1); }\n",
    "runtime.c": "int add_out(int, int); int convolution_out(int);\n"
                 "const char runtime_name[40] = \"runtime\";\n"
                 "unsigned char state[4096];\n"  # RAM, not flash
                 "int main(void) { return add_out(1, 2) + convolution_out(3) + runtime_name[0] + state[0]; }\n"
                 "void _start(void) { main(); for (;;) {} }\n",
}


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("kernels")
    for name, text in SOURCES.items():
        (work / name).write_text(text)
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m33", "-mthumb", "-g", "-O1", "-fno-inline",
                    "-nostdlib", "-nostartfiles", "-Wl,-e,_start", *SOURCES, "-o", "kernels.elf"],
                   cwd=work, check=True, timeout=60, capture_output=True)
    return work / "kernels.elf"


def _nm(elf: Path) -> dict[str, tuple[int, str]]:
    """name -> (size, nm's type letter), parsed from `nm --size-sort -S`."""
    out = subprocess.run(["arm-none-eabi-nm", "--size-sort", "-S", str(elf)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    found = {}
    for line in out.splitlines():
        match = re.fullmatch(r"[0-9a-f]+ ([0-9a-f]+) (\w) (\S+)", line.strip())
        if match:
            found[match.group(3)] = (int(match.group(1), 16), match.group(2))
    return found


def _flash_sections(elf: Path) -> dict[str, int]:
    """name -> size of the allocated sections with file bytes (flag A, not NOBITS), parsed from `readelf -SW`."""
    out = subprocess.run(["arm-none-eabi-readelf", "-SW", str(elf)], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    found = {}
    for line in out.splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+(\S*)", line)
        if match and "A" in match.group(4) and match.group(2) != "NOBITS" and match.group(1) != ".modeldata":
            found[match.group(1)] = int(match.group(3), 16)
    return found


def _event(name: str, kind: str, *op_types: str) -> Event:
    return Event(name=name, kind=kind, op_types=op_types)


def test_kernels_and_runtime_add_up_to_nms_sizes(image: Path) -> None:
    nm = _nm(image)
    events = [_event("native_call_add.out", "cpu_op", "aten.add.Tensor"),
              _event("native_call_convolution.out", "cpu_op", "aten.convolution.default"),
              _event("DELEGATE_CALL", "delegate_call", "aten.linear.default"),
              _event("0", "npu_kernel", "aten.linear.default"),
              _event("1", "npu_kernel", "aten.convolution.default"),  # a convolution the NPU ran, beside the CPU's
              _event("native_call_mean.out", "cpu_op", "aten.mean.dim")]
    section = code_size_section(read_elf(image), events)
    code = {name: size for name, (size, kind) in nm.items() if kind in "Tt"}
    assert section["functions_bytes"] == sum(code.values())
    assert section["kernels"] == {"op_add": code["add_out"],
                                  "op_convolution": code["convolution_out"] + code["conv_helper"]}
    assert section["total_bytes"] == sum(_flash_sections(image).values())
    assert section["total_bytes"] >= sum(code.values()) + 300 + 2000 + 40  # the three tables are in flash
    assert section["runtime_bytes"] == section["total_bytes"] - section["kernels_bytes"]
    assert nm["state"][1] in "Bb" and nm["state"][0] == 4096  # RAM: no flash byte
    operators = section["operators"]
    assert operators["native_call_convolution.out"] == {
        "op_types": ["aten.convolution.default"], "kernel": "op_convolution",
        "bytes": section["kernels"]["op_convolution"]}
    for delegated in ("aten.linear.default", "aten.convolution.default"):
        assert operators[delegated]["bytes"] is None and operators[delegated]["note"] == NOT_IN_IMAGE_DELEGATED
    mean = operators["native_call_mean.out"]
    assert mean["bytes"] is None and "op_mean" in mean["note"]
    assert set(operators) == {"native_call_add.out", "native_call_convolution.out", "aten.linear.default",
                              "aten.convolution.default", "native_call_mean.out"}


@pytest.mark.parametrize(("operator", "kernel"), [
    ("aten.convolution.default", "convolution"), ("native_call_convolution.out", "convolution"),
    ("dim_order_ops._clone_dim_order.default", "_clone_dim_order"), ("native_call_add.out", "add"),
])
def test_operator_names_map_to_their_kernel_source(operator: str, kernel: str) -> None:
    assert operator_kernel(operator) == kernel


# Units of ExecuTorch's kernels/portable/cpu as an image holds them: op_softmax.cpp defines `_softmax.out`,
# op_native_batch_norm.cpp the `_native_batch_norm_legit*` family, op__to_dim_order_copy.cpp keeps its `_`.
IMAGE_UNITS = {"softmax": 10, "native_batch_norm": 20, "_to_dim_order_copy": 30, "add": 40, "addmm": 50}


@pytest.mark.parametrize(("operator", "unit"), [
    ("native_call__softmax.out", "softmax"),
    ("aten._softmax.default", "softmax"),
    ("native_call__native_batch_norm_legit_no_training.out", "native_batch_norm"),
    ("native_call__to_dim_order_copy.out", "_to_dim_order_copy"),
    ("native_call_addmm.out", "addmm"),
    ("native_call_add.out", "add"),
    ("native_call_mean.out", None),  # not in the image: said, never given another kernel's bytes
    ("native_call_adds.out", None),  # `add` is not a prefix up to an underscore
])
def test_an_operator_gets_the_unit_of_the_image_that_runs_it(operator: str, unit: str | None) -> None:
    assert kernel_unit_of(operator, IMAGE_UNITS) == unit


def test_the_sizes_are_measured_once_per_image_bytes(image: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIL_CACHE_DIR", str(tmp_path))
    measured = code_size.kernel_sizes(read_elf(image))
    assert code_size.remembered_sizes(read_elf(image)) == measured
    memo = tmp_path / "code-size" / f"{hashlib.sha256(image.read_bytes()).hexdigest()}.json"
    assert json.loads(memo.read_text())["kernels"] == measured[2]

    def no_dwarf(_elf):
        raise AssertionError("measured again")

    monkeypatch.setattr(code_size, "kernel_sizes", no_dwarf)
    assert code_size.remembered_sizes(read_elf(image)) == measured  # from the memo
    other = tmp_path / "other.elf"
    other.write_bytes(image.read_bytes() + b"\0")  # other bytes: another entry, measured
    with pytest.raises(AssertionError, match="measured again"):
        code_size.remembered_sizes(read_elf(other))
    memo.write_text(json.dumps({**json.loads(memo.read_text()), "sha256": "0" * 64}))  # an entry of another image
    with pytest.raises(AssertionError, match="measured again"):
        code_size.remembered_sizes(read_elf(image))
