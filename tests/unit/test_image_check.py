"""`hil check-image` on real Cortex-M33 ELFs, built here with the Arm GNU toolchain.

The images come from tests/fixtures/image_check/ (a stand-in firmware, a kernel registry TU, an
old handshake, a bad console format), the real firmware/common/hil_result.c, a model array made by
hil.firmware.model_array and console formats taken from the real hil_protocol.h, linked by a
small script laid out like the RT700's. Each image differs from the good one in the one way a
check must catch. Everything is compiled once per module; the links are milliseconds each.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hil.config.board_config import load_board_config
from hil.base.errors import HilError
from hil.records.elf_reader import read_elf
from hil.firmware.image_check import (
    PROTOCOL_MARKERS, Status, check_console_formats, check_flash_config, check_handshake, check_image,
    check_kernel_registration, check_load_addresses, check_model, check_regions, check_tensor_io, main,
)
from hil.firmware.image_spec import ImageSpec
from hil.firmware.model_array import pte_to_c_array
from hil.firmware.qemu_image import build_qemu_image
from hil.firmware.sdk_printf import format_problems
from hil.base.paths import BOARDS_DIR, FIRMWARE_DIR, REPO_ROOT

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "image_check"
PROTOCOL_H = FIRMWARE_DIR / "common" / "hil_protocol.h"
FLAGS = ["-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16", "-g", "-O2",
         "-ffunction-sections", "-fdata-sections", "-ffreestanding"]
# A program's first bytes: the root table's offset, then the file identifier of ExecuTorch's program schema
# (read from the installed wheel's schema/program.fbs below); the rest is noise. 3001 bytes: not a multiple
# of 16, like most programs.
PROGRAM_FBS = Path(importlib.util.find_spec("executorch").submodule_search_locations[0]) / "schema" / "program.fbs"
PTE_ID = re.search(r'file_identifier "(\w{4})";', PROGRAM_FBS.read_text()).group(1).encode()
MODEL = b"\x1c\0\0\0" + PTE_ID + random.Random(7).randbytes(2993)
M_DATA_END = 0x20430000
TOOL_TIMEOUT_S = 60

LINK_SCRIPT = """\
ENTRY(Reset_Handler)
SECTIONS
{{
  .flash_config {flash_config:#x} : {{ KEEP(*(.flash_conf)) }}
  .interrupts 0x28004000 : {{ KEEP(*(.isr_vector)) }}
  .text 0x28004300 : {{ *(.text .text.*) *(.rodata .rodata.*) }}
  .init_array : {{ KEEP(*(SORT(.init_array.*))) KEEP(*(.init_array)) }}
  .data 0x20010000 : AT({data_lma}) {{ *(.data .data.*) }}
  .bss {bss_address} (NOLOAD) : {{ *(.bss .bss.* COMMON) . += {bss_extra}; }}
  .modeldata {model_address:#x} : AT({model_lma}) {{ KEEP(*(.modeldata)) }}
  /DISCARD/ : {{ *(.ARM.exidx*) *(.ARM.extab*) }}
}}
"""
LAYOUT = {"flash_config": 0x28000000, "data_lma": "ADDR(.init_array) + SIZEOF(.init_array)",
          "bss_address": "", "bss_extra": 0, "model_address": 0x20430000,
          "model_lma": "LOADADDR(.data) + SIZEOF(.data)"}


def _run(cmd: list[object], cwd: Path) -> None:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))}\n{done.stdout}{done.stderr}"


def _protocol_formats() -> dict[str, str]:
    """HIL_FMT_* / HIL_MSG_* of the real header, evaluated (string literals and macro names joined)."""
    text = PROTOCOL_H.read_text().replace("\\\n", " ")
    bodies = dict(re.findall(r"^#define (HIL_\w+)[ \t]+(.+)$", text, re.M))

    def value(body: str) -> str:
        parts = re.findall(r'"((?:[^"\\]|\\.)*)"|(\w+)', body)
        return "".join(value(bodies[name]) if name else lit.encode().decode("unicode_escape") for lit, name in parts)

    return {name: value(body) for name, body in bodies.items() if name.startswith(("HIL_FMT_", "HIL_MSG_"))}


class Build:
    """The compiled objects of one session, and links of them under any layout."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def link(self, name: str, *, result: str = "hil_result.o", io: bool = True, extra: tuple[str, ...] = (),
             libs: tuple[str, ...] = ("portable", "quantized"), strings: bool = True, **layout: object) -> Path:
        script = self.root / f"{name}.ld"
        script.write_text(LINK_SCRIPT.format(**{**LAYOUT, **layout}))
        objects = ["firmware.o", "model_pte.o", result, *(["hil_io.o"] if io else []),
                   *(["protocol_strings.o"] if strings else []), *extra]
        archives = [f"{lib}/lib{lib}_ops_lib.a" for lib in libs]
        _run(["arm-none-eabi-g++", *FLAGS, "-nostdlib", "-nostartfiles", "-Wl,--no-warn-rwx-segments", f"-T{script}",
              *objects, "-Wl,--whole-archive", *archives, "-Wl,--no-whole-archive", "-o", f"{name}.elf"], self.root)
        return self.root / f"{name}.elf"

    def stripped(self, elf: Path, how: str) -> Path:
        out = elf.with_name(f"{elf.stem}-{how.strip('-')}.elf")
        _run(["arm-none-eabi-objcopy", how, elf, out], self.root)
        return out


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    root = tmp_path_factory.mktemp("image_check")
    (root / "model_pte.c").write_text(pte_to_c_array(MODEL))
    formats = ",\n    ".join(_protocol_formats())
    (root / "protocol_strings.c").write_text(
        f'#include "hil_protocol.h"\n__attribute__((used)) const char *const fixture_formats[] = {{\n    {formats}\n}};\n')
    sources = [FIXTURES / "firmware.c", FIXTURES / "old_hil_result.c", FIXTURES / "bad_format.c",
               FIRMWARE_DIR / "common" / "hil_result.c", FIRMWARE_DIR / "common" / "hil_io.c", root / "model_pte.c",
               root / "protocol_strings.c"]
    jobs = [[["arm-none-eabi-gcc", *FLAGS, f"-I{FIRMWARE_DIR / 'common'}", "-c", *sources]]]
    for lib, defines in (("portable", []), ("quantized", ["-DFIXTURE_SECOND_SET"])):
        # The same file name in two folders, as ExecuTorch generates one Register...cpp per operator library.
        (root / lib).mkdir()
        shutil.copy(FIXTURES / "registry.cpp", root / lib / "registry.cpp")
        jobs.append([
            ["arm-none-eabi-g++", *FLAGS, *defines, "-fno-exceptions", "-fno-rtti", "-c", root / lib / "registry.cpp",
             "-o", f"{lib}/registry.o"],
            ["arm-none-eabi-ar", "rcs", f"{lib}/lib{lib}_ops_lib.a", f"{lib}/registry.o"],
        ])
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        list(pool.map(lambda job: [_run(command, root) for command in job], jobs))
    return Build(root)


@pytest.fixture(scope="module")
def good(build: Build) -> Path:
    return build.link("good")


@pytest.fixture(scope="module")
def rt700() -> ImageSpec:
    return ImageSpec.from_board(load_board_config("rt700"))


def _cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, list[str], str]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out.splitlines(), err


def _pte(tmp_path: Path, data: bytes = MODEL) -> Path:
    path = tmp_path / "model.pte"
    path.write_bytes(data)
    return path


def test_good_image_passes_every_check_of_the_real_rt700_board_file(good, tmp_path, capsys):
    rc, lines, err = _cli(capsys, good, "--model", _pte(tmp_path), "--board", "rt700")
    assert (rc, err) == (0, "")
    assert [line.split(":")[0] for line in lines] == [
        "PASS flash-config", "PASS handshake", "PASS tensor-io", "PASS model", "PASS regions", "PASS load-addresses",
        "PASS kernel-registration",
        "PASS console-formats"]


def test_flash_config_off_its_address_fails(build, rt700, good):
    moved = check_flash_config(read_elf(build.link("flash_moved", flash_config=0x28000400)), rt700)
    assert moved.status is Status.FAIL
    assert moved.problems == (".flash_config is at 0x28000400, the boot ROM reads 0x28000000",)
    assert check_flash_config(read_elf(good), rt700).status is Status.PASS


def test_flash_config_is_not_applicable_without_a_boot_header(good):
    spec = ImageSpec.from_board(load_board_config("qemu"))
    assert check_flash_config(read_elf(good), spec).status is Status.NOT_APPLICABLE


def test_image_without_the_run_config_handshake_is_told_to_rebuild(build, rt700):
    result = check_handshake(read_elf(build.link("old_handshake", result="old_hil_result.o")), rt700)
    assert result.status is Status.FAIL
    assert "hil_run_config is missing" in result.detail and "hil_config_ready is missing" in result.detail
    assert "image predates the iteration handshake: rebuild it" in result.detail
    assert "hil_etdump_ready" not in result.detail  # the old pair is still there


def test_handshake_symbols_have_the_right_kind_and_size(good, rt700):
    result = check_handshake(read_elf(good), rt700)
    assert result.status is Status.PASS
    assert [s.split()[:2] for s in result.subjects] == [
        ["hil_etdump_ready", "FUNC"], ["hil_etdump_result", "OBJECT"], ["hil_config_ready", "FUNC"],
        ["hil_run_config", "OBJECT"]]
    # A breakpoint given as file:LINE is no symbol; the result expression is then a FUNC, not an object.
    odd = ImageSpec(**{**rt700.__dict__, "breakpoint": "main.cpp:123", "result_expr": "hil_config_ready"})
    result = check_handshake(read_elf(good), odd)
    assert result.problems == ("hil_config_ready is a FUNC, expected a OBJECT",)
    assert "main.cpp:123" in result.detail


def test_an_image_without_the_output_publication_symbol_fails_the_tensor_check(build, rt700, good):
    # sizeof(struct hil_io_t) on a Cortex-M33, by hand: 16 + 2 tables x 16 rows x (4 + 4 x 4 + 8 x 4 = 52) = 1680.
    passed = check_tensor_io(read_elf(good), rt700)
    assert passed.status is Status.PASS and passed.detail == "hil_io OBJECT of 1680 bytes present"
    result = check_tensor_io(read_elf(build.link("no_io", io=False)), rt700)
    assert result.status is Status.FAIL
    assert "hil_io is missing: the image cannot take real inputs or publish its outputs" in result.detail


@pytest.mark.parametrize(("change", "expected"), [
    (lambda m: m[:1234] + bytes([m[1234] ^ 1]) + m[1235:], "first difference at byte 0x4d2 of 3001"),
    (lambda m: m + b"\0", "3001 bytes, model.pte has 3002"),
])
def test_a_model_one_byte_off_fails(good, rt700, change, expected):
    image = read_elf(good)
    assert check_model(image, rt700, MODEL).status is Status.PASS
    result = check_model(image, rt700, change(MODEL))
    assert result.status is Status.FAIL
    assert "model_pte in .modeldata is not model.pte" in result.detail and expected in result.detail
    assert "rebuild the firmware with MODEL=model.pte" in result.detail


def test_without_symbols_the_model_section_is_compared_with_its_padding(build, good, rt700):
    image = read_elf(build.stripped(good, "--strip-all"))
    assert check_model(image, rt700, MODEL).status is Status.PASS
    flipped = check_model(image, rt700, MODEL[:9] + bytes([MODEL[9] ^ 0x80]) + MODEL[10:])
    assert flipped.status is Status.FAIL and ".modeldata (no model_pte symbol in it) is not model.pte: first difference at " \
        "byte 0x9" in flipped.detail
    shorter = check_model(image, rt700, MODEL[:-20])
    assert shorter.status is Status.FAIL and "20 bytes after the program that are not alignment padding" in shorter.detail
    # What else a stripped image cannot show is said, not passed.
    assert "no symbol table (stripped?)" in check_handshake(image, rt700).detail
    registration = check_kernel_registration(image)
    assert registration.status is Status.FAIL and registration.detail.startswith("cannot tell: .init_array entries 0x")


@pytest.mark.parametrize(("extra", "verdict"), [(0, Status.PASS), (1, Status.FAIL)])
def test_bss_ending_exactly_at_its_region_end_fits_and_one_byte_more_overflows(build, good, rt700, extra, verdict):
    size = read_elf(good).section(".bss").size
    # The model moves up 16 bytes (still in m_model) so that ld lets .bss run one byte past m_data.
    image = read_elf(build.link(f"bss_{extra}", bss_address=f"{M_DATA_END - size:#x}", bss_extra=extra,
                                model_address=M_DATA_END + 16))
    result = check_regions(image, rt700)
    assert result.status is verdict
    if extra:
        assert result.problems == (
            f"section .bss [0x{M_DATA_END - size:08x}, 0x{M_DATA_END + 1:08x}) overflows m_data "
            "[0x20010000, 0x20430000) by 0x1 bytes",)
    else:
        assert f".bss [0x{M_DATA_END - size:08x}, 0x{M_DATA_END:08x}) in m_data" in result.subjects


def test_a_load_address_past_its_region_fails(build, rt700):
    result = check_regions(read_elf(build.link("lma_out", data_lma="0x281ffff8")), rt700)
    assert result.status is Status.FAIL
    data, model = result.problems  # ld loads the model right after .data, so it is out too
    assert data.startswith("load address of section .data [0x281ffff8, 0x282")
    assert "overflows m_text [0x28004300, 0x28200000)" in data
    assert model.startswith("load address of section .modeldata [0x282") and "lies in no region" in model


def test_a_model_loaded_into_ram_only_fails_the_load_address_check(build, good, rt700):
    # NXP's eIQ example links its model into RAM only (the debugger loads it); a flash programmer such
    # as pyOCD writes load segments at their load addresses and cannot put RAM bytes on the board.
    assert check_load_addresses(read_elf(good), rt700).status is Status.PASS
    ram_model = read_elf(build.link("ram_model", model_lma="ADDR(.modeldata)"))
    assert check_regions(ram_model, rt700).status is Status.PASS  # every address is in some region...
    result = check_load_addresses(ram_model, rt700)  # ...but not every loaded byte is in flash
    assert result.status is Status.FAIL
    assert list(result.problems) == ["section .modeldata is loaded at [0x20430000, 0x20430bb9), outside m_flash_config, "
                               "m_interrupts, m_text: a flash programmer cannot put it on the board"]


def test_load_regions_must_name_declared_regions(tmp_path):
    board = tmp_path / "board.toml"
    board.write_text((BOARDS_DIR / "rt700.toml").read_text().replace(
        'load_regions = ["m_flash_config", "m_interrupts", "m_text"]', 'load_regions = ["m_flash"]'))
    with pytest.raises(HilError, match="load_regions: 'm_flash' is not one of the declared regions"):
        ImageSpec.from_board(load_board_config(path=board))


def test_a_section_in_no_region_names_the_nearest(good, tmp_path, capsys):
    board = tmp_path / "board.toml"
    text = (BOARDS_DIR / "rt700.toml").read_text()
    board.write_text(text.replace('{ name = "m_model",        start = 0x20430000, size = 0x00100000 },', ""))
    rc, lines, _ = _cli(capsys, good, "--model", _pte(tmp_path), "--board-config", board)
    assert rc == 1
    assert ("FAIL regions: section .modeldata [0x20430000, 0x20430bb9) lies in no region "
            "(nearest: m_data [0x20010000, 0x20430000))") in lines


def test_kernel_registry_linked_twice_fails_and_libraries_with_equal_file_names_pass(build, good):
    image = read_elf(good)
    result = check_kernel_registration(image)
    assert result.status is Status.PASS, result.detail
    # .init_array holds Thumb pointers (bit 0 set): entries are reported at the function's first instruction.
    for subject in result.subjects:
        address = int(subject.split()[0], 16)
        assert address % 2 == 0 and image.function_at(address).address == address
    portable, quantized = str(build.root / "portable" / "registry.cpp"), str(build.root / "quantized" / "registry.cpp")
    assert [s.split()[1:] for s in result.subjects] == [
        ["_GLOBAL__sub_I_registry.cpp", portable], ["_GLOBAL__sub_I_registry.cpp", quantized]]

    twice = check_kernel_registration(read_elf(build.link("twice", libs=("portable", "portable", "quantized"))))
    assert twice.status is Status.FAIL
    assert len(twice.problems) == 1
    assert re.fullmatch(f"{re.escape(portable)}: its static initializer _GLOBAL__sub_I_registry.cpp is in "
                        r"\.init_array 2 times \(0x2800[0-9a-f]{4}, 0x2800[0-9a-f]{4}\)", twice.problems[0])
    assert "drop the extra --whole-archive" in twice.detail


def test_without_debug_info_registration_is_judged_by_symbol_and_says_so(build, good):
    twice = build.link("twice_nodebug", libs=("portable", "portable", "quantized"))
    result = check_kernel_registration(read_elf(build.stripped(twice, "--strip-debug")))
    assert result.status is Status.FAIL
    assert re.match(r"static initializer _GLOBAL__sub_I_registry.cpp \(\d+ bytes\) is in \.init_array 2 times",
                    result.problems[0])
    assert "weaker check: no DWARF address ranges" in result.detail
    once = check_kernel_registration(read_elf(build.stripped(good, "--strip-debug")))
    assert once.status is Status.PASS and "weaker check" in once.detail


def test_protocol_strings_of_the_real_header_are_found_and_pass(good):
    result = check_console_formats(read_elf(good))
    assert result.status is Status.PASS, result.detail
    formats = _protocol_formats()
    # Every format with a conversion carries a marker, so a new HIL_FMT_ is never overlooked.
    assert [name for name, text in formats.items() if "%" in text and not any(m in text for m in PROTOCOL_MARKERS)] == []
    ours = {text for text in formats.values() if any(m in text for m in PROTOCOL_MARKERS)}
    merged = {t for t in ours if any(o != t and o.endswith(t) for o in ours)}  # the linker keeps one copy
    assert ours - merged <= set(result.subjects)
    assert f"{len(result.subjects)} line-protocol strings" in result.detail


def test_a_percent_p_percent_zu_protocol_string_fails_by_name(build):
    result = check_console_formats(read_elf(build.link("bad_format", extra=("bad_format.o",))))
    assert result.status is Status.FAIL
    assert result.problems == ("'Result buf: %p, size: %zu\\r\\n': %p (%p prints bare upper-case hex without 0x); "
                               "%zu (length modifier 'z' needs PRINTF_ADVANCED_ENABLE)",)


def test_an_image_without_protocol_strings_fails(build):
    result = check_console_formats(read_elf(build.link("no_strings", strings=False)))
    assert result.status is Status.FAIL
    assert result.detail == "no line-protocol strings found: is this an et-hil firmware?"


@pytest.mark.parametrize(("fmt", "problems"), [
    ("Result buf: 0x%x, size: %u", []),
    ("%d %i %u %x %X %o %b %c %s %8u %%", []),
    ("%p", ["%p (%p prints bare upper-case hex without 0x)"]),
    ("%zu %lu %llu %hu", ["%zu (length modifier 'z' needs PRINTF_ADVANCED_ENABLE)",
                          "%lu (length modifier 'l' needs PRINTF_ADVANCED_ENABLE)",
                          "%llu (length modifier 'll' needs PRINTF_ADVANCED_ENABLE)",
                          "%hu (length modifier 'h' needs PRINTF_ADVANCED_ENABLE)"]),
    ("%jd %td %Lf", ["%jd (length modifier 'j' is not supported)", "%td (length modifier 't' is not supported)",
                     "%Lf (length modifier 'L' is not supported, floats need PRINTF_FLOAT_ENABLE)"]),
    ("%.*s %*u", ["%.*s ('.*' precision needs PRINTF_ADVANCED_ENABLE)", "%*u ('*' width needs PRINTF_ADVANCED_ENABLE)"]),
    ("%.2f %e", ["%.2f (floats need PRINTF_FLOAT_ENABLE)", "%e ('e' is no conversion: printed as text, later arguments shift)"]),
    ("%08x %-4u", ["%08x (flag 0 pads with spaces without PRINTF_ADVANCED_ENABLE)",
                   "%-4u (flag '-' needs PRINTF_ADVANCED_ENABLE)"]),
    ("%.3u done 100%", ["%.3u (precision is ignored without PRINTF_ADVANCED_ENABLE)", "% (a lone '%' ends the string)"]),
])
def test_sdk_printf_formats(fmt, problems):
    assert format_problems(fmt) == problems


@pytest.fixture(scope="module")
def replay_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh QEMU replay image, built by the project's own code into an empty cache."""
    lines = ["Core/NPU Frequency: 324 MHz", "method_allocator_used: Total 0x80000 (524288 B); Used 0xfc5 (4037 B); "
             "Used/Total 0 %", "Inference time: 907 us"]
    return build_qemu_image(b"\x10\0\0\0ED00" + bytes(range(256)), lines, runs=1, cache=tmp_path_factory.mktemp("qemu"))


def test_the_qemu_replay_image_passes_against_the_qemu_board(replay_image, capsys):
    report = check_image(read_elf(replay_image), ImageSpec.from_board(load_board_config("qemu")), None)
    verdicts = {r.check: r.status for r in report.results}
    assert verdicts == {"flash-config": Status.NOT_APPLICABLE, "handshake": Status.PASS, "tensor-io": Status.NOT_APPLICABLE,
                        "model": Status.NOT_APPLICABLE, "regions": Status.PASS,
                        "load-addresses": Status.NOT_APPLICABLE, "kernel-registration": Status.PASS, "console-formats": Status.PASS}, report.to_dict()
    regions = next(r for r in report.results if r.check == "regions")
    assert any(s.startswith("load address of .data") and s.endswith("in CODE") for s in regions.subjects)


def test_hil_check_image_runs_end_to_end_with_json(replay_image):
    done = subprocess.run([sys.executable, "-m", "hil.cli.main", "check-image", str(replay_image), "--board", "qemu",
                           "--json"], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["board"] == "qemu" and len(report["checks"]) == 8


def test_a_failing_check_exits_1_and_json_says_which(build, tmp_path, capsys):
    rc, lines, _ = _cli(capsys, build.link("flash_moved_json", flash_config=0x28000400), "--model", _pte(tmp_path),
                        "--json")
    assert rc == 1
    report = json.loads("\n".join(lines))
    assert report["ok"] is False
    assert [c["check"] for c in report["checks"] if c["status"] == "FAIL"] == ["flash-config"]


def _board_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("case", "message"), [
    ("missing_elf", r"ELF file not found: .*nothing\.elf"),
    ("not_elf", r"board\.txt is not an ELF file"),
    ("truncated_elf", r"truncated\.elf is not a readable ELF file"),
    ("missing_model", r"cannot read model .*absent\.pte"),
    ("empty_model", r"model .*empty\.pte is empty"),
    ("text_model", r"hostname is not an ExecuTorch program \(\.pte\): file identifier b'host' at offset 4, not b'ET12'"),
    ("no_model", r"--model is required: board 'rt700' images carry the model in \.modeldata"),
    ("bad_toml", r"bad\.toml is not valid TOML"),
    ("bad_region", r"image\.regions\.size must be a non-negative integer, not 'big'"),
    ("unknown_board", r"unknown board 'nope'"),
])
def test_input_errors_exit_2_with_one_line(good, tmp_path, capsys, case, message):
    pte = _pte(tmp_path)
    (tmp_path / "board.txt").write_text("not an ELF\n")
    (tmp_path / "truncated.elf").write_bytes(good.read_bytes()[:100])
    (tmp_path / "empty.pte").write_bytes(b"")
    (tmp_path / "hostname").write_text("lab-host-1\n")  # a text file such as /etc/hostname
    argv = {
        "missing_elf": [tmp_path / "nothing.elf", "--model", pte],
        "not_elf": [tmp_path / "board.txt", "--model", pte],
        "truncated_elf": [tmp_path / "truncated.elf", "--model", pte],
        "missing_model": [good, "--model", tmp_path / "absent.pte"],
        "empty_model": [good, "--model", tmp_path / "empty.pte"],
        "text_model": [good, "--model", tmp_path / "hostname"],
        "no_model": [good],
        "bad_toml": [good, "--model", pte, "--board-config", _board_file(tmp_path, "bad.toml", "[board\n")],
        "bad_region": [good, "--model", pte, "--board-config", _board_file(
            tmp_path, "region.toml", '[board]\nkind = "rt700"\n[image]\nregions = [{ name = "m", start = 0, size = "big" }]\n')],
        "unknown_board": [good, "--model", pte, "--board", "nope"],
    }[case]
    rc, out, err = _cli(capsys, *argv)
    assert rc == 2 and out == []
    assert len(err.splitlines()) == 1 and re.search(message, err), err
