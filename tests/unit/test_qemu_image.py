"""The QEMU replay image, built with the real cross compiler and run for real in QEMU and GDB.

The GDB test is the key proof: a breakpoint at `hil_etdump_ready` is hit, and dumping
`hil_etdump_result.buf .. +size` gives back exactly the bytes that went into the build.
"""

from __future__ import annotations

import random
import re
import shutil
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hil.errors import BuildError
from hil.firmware import qemu_image
from hil.firmware.qemu_image import build_qemu_image

QEMU_CMD = [
    "qemu-system-arm", "-M", "mps2-an505", "-cpu", "cortex-m33", "-nographic",
    "-semihosting-config", "enable=on,target=native",
]
RUN_TIMEOUT_S = 60
LINES = [
    "CIFARNET example using a ExecuTorch model",
    "Core/NPU Frequency: 324 MHz",
    "     Inference time: 907 us",
    "Unicode survives: µs",
]
RESULT_LINE = re.compile(r"^Result buf: 0x([0-9a-f]{8}), size: (\d+)$")


def _blob(size: int, seed: int) -> bytes:
    """ETDump-like bytes: random, with a flatbuffer-style size prefix and the `ED00` identifier."""
    body = random.Random(seed).randbytes(max(0, size - 8))
    return (len(body) + 4).to_bytes(4, "little") + b"ED00" + body


def _run(elf: Path) -> tuple[int, list[str]]:
    """Run the image to its semihosting exit; UART0 is on stdout with -nographic."""
    proc = subprocess.run(
        [*QEMU_CMD, "-kernel", str(elf)], stdin=subprocess.DEVNULL, capture_output=True, timeout=RUN_TIMEOUT_S,
    )
    return proc.returncode, proc.stdout.decode("utf-8").split("\r\n")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_under_gdb(elf: Path, tmp_path: Path, commands: list[str]) -> tuple[int, str, str]:
    """Start QEMU halted with its GDB stub, drive gdb-multiarch in batch mode, let the target finish.

    Returns QEMU's exit status, the console text and GDB's output.
    """
    port = _free_port()
    console = tmp_path / "console.txt"
    with open(console, "wb") as out:
        qemu = subprocess.Popen(
            [*QEMU_CMD, "-S", "-gdb", f"tcp:127.0.0.1:{port}", "-kernel", str(elf)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        script = ["-ex", f"target remote 127.0.0.1:{port}"]
        for command in commands:
            script += ["-ex", command]
        gdb = subprocess.run(
            ["gdb-multiarch", "-batch", "-nx", str(elf), *script],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        )
        rc = qemu.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if qemu.poll() is None:
            qemu.kill()
            qemu.wait()
    return rc, console.read_bytes().decode("utf-8"), gdb.stdout + gdb.stderr


def test_image_prints_lines_then_result_and_exits_zero(tmp_path: Path) -> None:
    etdump = _blob(4099, seed=1)  # not a multiple of 16: the RAM copy must keep the exact size
    rc, lines = _run(build_qemu_image(etdump, LINES, cache=tmp_path))
    assert rc == 0
    assert lines[: len(LINES)] == LINES
    match = RESULT_LINE.match(lines[len(LINES)])
    assert match, lines
    addr = int(match.group(1), 16)
    assert addr == 0x38000000 and addr % 16 == 0
    assert int(match.group(2)) == len(etdump)
    assert lines[len(LINES) + 1 :] == ["Program complete, exiting.", ""]


def test_gdb_breaks_at_ready_and_dumps_exact_1mib(tmp_path: Path) -> None:
    etdump = _blob(1024 * 1024 + 7, seed=2)
    elf = build_qemu_image(etdump, LINES, cache=tmp_path)
    dump = tmp_path / "trace.etdump"
    rc, console, gdb_out = _run_under_gdb(elf, tmp_path, [
        "break hil_etdump_ready",
        "continue",
        "printf \"size=%u\\n\", hil_etdump_result.size",
        f"dump binary memory {dump} hil_etdump_result.buf (char *)hil_etdump_result.buf + hil_etdump_result.size",
        "detach",
    ])
    assert "Breakpoint 1, hil_etdump_ready" in gdb_out, gdb_out
    assert f"size={len(etdump)}" in gdb_out
    assert dump.read_bytes() == etdump
    assert rc == 0
    assert console.endswith("Program complete, exiting.\r\n")


def test_without_ready_call_the_breakpoint_is_never_hit(tmp_path: Path) -> None:
    elf = build_qemu_image(_blob(256, seed=3), LINES, call_ready=False, cache=tmp_path)
    rc, console, gdb_out = _run_under_gdb(elf, tmp_path, ["break hil_etdump_ready", "continue"])
    assert rc == 0
    assert "Breakpoint 1, hil_etdump_ready" not in gdb_out
    assert "Result buf: 0x38000000, size: 256\r\nProgram complete, exiting.\r\n" in console


@pytest.mark.parametrize("override", [0, 0x7FFFFFFF])
def test_size_override_is_published_and_printed(tmp_path: Path, override: int) -> None:
    elf = build_qemu_image(_blob(512, seed=4), ["x"], result_size_override=override, cache=tmp_path)
    rc, console, gdb_out = _run_under_gdb(elf, tmp_path, [
        "break hil_etdump_ready", "continue", "printf \"size=%u\\n\", hil_etdump_result.size", "detach",
    ])
    assert rc == 0
    assert f"size={override}\n" in gdb_out
    assert f"Result buf: 0x38000000, size: {override}\r\n" in console


def test_second_build_hits_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    etdump = _blob(2048, seed=5)
    first = build_qemu_image(etdump, LINES, cache=tmp_path)
    assert first.parent.parent == tmp_path / "firmware" / "qemu"
    assert (first.parent / "build.log").is_file()
    mtime = first.stat().st_mtime_ns

    def no_compile(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the cached image was rebuilt")

    monkeypatch.setattr(qemu_image, "run_logged", no_compile)
    assert build_qemu_image(etdump, list(LINES), cache=tmp_path) == first
    assert first.stat().st_mtime_ns == mtime
    # Every input is part of the key: another line, byte or option is another image.
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump, [*LINES, "one more"], cache=tmp_path)
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump[:-1] + b"\0", LINES, cache=tmp_path)
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump, LINES, call_ready=False, cache=tmp_path)


def test_default_cache_follows_hil_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIL_CACHE_DIR", str(tmp_path / "cache"))
    elf = build_qemu_image(b"", [], call_ready=False)
    assert elf.is_relative_to(tmp_path / "cache" / "firmware" / "qemu")
    rc, lines = _run(elf)
    assert rc == 0
    assert lines == ["Result buf: 0x38000000, size: 0", "Program complete, exiting.", ""]


def test_concurrent_builds_share_one_image(tmp_path: Path) -> None:
    etdump = _blob(1000, seed=6)
    with ThreadPoolExecutor(max_workers=2) as pool:
        paths = list(pool.map(lambda _: build_qemu_image(etdump, LINES, cache=tmp_path), range(2)))
    assert paths[0] == paths[1]
    assert [p.name for p in (tmp_path / "firmware" / "qemu").iterdir()] == [paths[0].parent.name]
    assert _run(paths[0])[0] == 0


def test_compile_error_names_command_and_keeps_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "src"
    shutil.copytree(qemu_image.FIRMWARE_SOURCE_DIR, broken)
    with open(broken / "main.c", "a", encoding="utf-8") as handle:
        handle.write("\nthis is not C;\n")
    monkeypatch.setattr(qemu_image, "FIRMWARE_SOURCE_DIR", broken)
    with pytest.raises(BuildError) as info:
        build_qemu_image(b"abc", ["x"], cache=tmp_path / "cache")
    message = str(info.value)
    assert "arm-none-eabi-gcc" in message and "exit status" in message
    log = Path(message.rsplit("(log: ", 1)[1].rstrip(")"))
    assert log.is_file() and log.parent.name.endswith(".failed")
    assert "main.c" in log.read_text() and "error" in log.read_text()
    assert not list((tmp_path / "cache" / "firmware" / "qemu").glob("*/firmware.elf"))


def test_compile_timeout_is_a_build_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qemu_image, "BUILD_TIMEOUT_S", 0.001)
    with pytest.raises(BuildError, match=r"timed out after 0\.001 s: .*arm-none-eabi-gcc.*\(log: .*build\.log\)"):
        build_qemu_image(b"abc", ["x"], cache=tmp_path)


def test_missing_compiler_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIL_ARM_GCC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match="apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"):
        build_qemu_image(b"abc", ["x"], cache=tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"console_lines": ["ok", "two\nlines"]}, "console line 2"),
        ({"console_lines": "one string"}, "not one string"),
        ({"result_size_override": 1 << 32}, "not a 32-bit size"),
        ({"result_size_override": -1}, "not a 32-bit size"),
        ({"etdump": bytes(qemu_image.MAX_ETDUMP_BYTES + 1)}, "does not fit"),
    ],
)
def test_bad_inputs_are_refused_before_compiling(tmp_path: Path, kwargs: dict, pattern: str) -> None:
    args = {"etdump": b"abc", "console_lines": ["x"], **kwargs}
    etdump, lines = args.pop("etdump"), args.pop("console_lines")
    with pytest.raises(BuildError, match=pattern):
        build_qemu_image(etdump, lines, cache=tmp_path, **args)
    assert not (tmp_path / "firmware").exists()
