"""The QEMU replay image, built with the real cross compiler and run for real in QEMU and GDB.

The GDB test is the key proof: a breakpoint at `hil_etdump_ready` is hit, and dumping
`hil_etdump_result.buf .. +size` gives back exactly the bytes that went into the build.
Every run first goes through the run-configuration handshake (gdb writes `hil_run_config` at
`hil_config_ready`), as the harness does; without it the image refuses to replay anything.
"""

from __future__ import annotations

import random
import re
import shutil
import socket
import subprocess
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hil.base.errors import BuildError
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
RESULT_LINE = re.compile(r"^Result buf: 0x([0-9a-f]{8}), size: (\d+), crc32: 0x([0-9a-f]+)$")
RUNS = 3
MAGIC = 0x314C4948


def configure(iterations: int = RUNS, warmup: int = 0) -> list[str]:
    """gdb commands for the run-configuration handshake, as the harness performs it (magic last)."""
    return [
        "tbreak hil_config_ready", "continue",
        f"set var hil_run_config.iterations = {iterations}", f"set var hil_run_config.warmup = {warmup}",
        f"set var hil_run_config.magic = {MAGIC:#x}",
    ]


def _blob(size: int, seed: int) -> bytes:
    """ETDump-like bytes: random, with a flatbuffer-style size prefix and the `ED00` identifier."""
    body = random.Random(seed).randbytes(max(0, size - 8))
    return (len(body) + 4).to_bytes(4, "little") + b"ED00" + body


def _run(elf: Path) -> tuple[int, list[str]]:
    """Run the image to its semihosting exit without a debugger; UART0 is on stdout with -nographic."""
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


def _run_configured(elf: Path, tmp_path: Path, iterations: int = RUNS, warmup: int = 0) -> tuple[int, list[str], str]:
    """Run the image to its exit after the handshake; QEMU's status, the console lines, gdb's output."""
    rc, console, gdb_out = _run_under_gdb(elf, tmp_path, [*configure(iterations, warmup), "detach"])
    return rc, console.split("\r\n"), gdb_out


def test_image_prints_lines_then_result_and_exits_zero(tmp_path: Path) -> None:
    etdump = _blob(4099, seed=1)  # not a multiple of 16: the RAM copy must keep the exact size
    rc, lines, gdb_out = _run_configured(build_qemu_image(etdump, LINES, runs=RUNS, cache=tmp_path), tmp_path)
    assert rc == 0, gdb_out
    assert lines[0] == f"Run config: iterations {RUNS}, warm-up 0 (set by the debugger)"
    assert lines[1 : len(LINES) + 1] == LINES
    match = RESULT_LINE.match(lines[len(LINES) + 1])
    assert match, lines
    addr = int(match.group(1), 16)
    assert addr == 0x38000000 and addr % 16 == 0
    assert int(match.group(2)) == len(etdump)
    assert int(match.group(3), 16) == zlib.crc32(etdump)
    assert lines[len(LINES) + 2 :] == ["Program complete, exiting.", ""]


def test_warmup_and_iterations_together_must_make_the_runs_it_holds(tmp_path: Path) -> None:
    elf = build_qemu_image(_blob(300, seed=7), LINES, runs=5, cache=tmp_path)
    rc, lines, _ = _run_configured(elf, tmp_path, iterations=3, warmup=2)
    assert rc == 0 and lines[0] == "Run config: iterations 3, warm-up 2 (set by the debugger)"
    rc, lines, _ = _run_configured(elf, tmp_path, iterations=5, warmup=2)
    assert rc == 2
    assert lines == [
        "Run config: iterations 5, warm-up 2 (set by the debugger)",
        "HIL error: replay image holds 5 runs, asked for 7 (iterations 5, warm-up 2)",
        "Program failed, exiting.", "",
    ]


def test_without_a_debugger_the_image_refuses_to_replay(tmp_path: Path) -> None:
    rc, lines = _run(build_qemu_image(_blob(256, seed=8), LINES, runs=RUNS, cache=tmp_path))
    assert rc == 2
    assert lines == [
        f"Run config: iterations {RUNS}, warm-up 0 (defaults: no debugger wrote hil_run_config)",
        f"HIL error: replay image holds {RUNS} runs, but no debugger wrote hil_run_config",
        "Program failed, exiting.", "",
    ]


@pytest.mark.parametrize(("iterations", "warmup"), [(0, 1), (1000, 1)])
def test_a_count_out_of_range_is_refused_by_the_firmware(tmp_path: Path, iterations: int, warmup: int) -> None:
    """The firmware's own check (hil_take_run_config), reached only when a debugger skips the harness's."""
    rc, lines, _ = _run_configured(build_qemu_image(_blob(64, seed=9), LINES, runs=RUNS, cache=tmp_path), tmp_path,
                                   iterations, warmup)
    assert rc == 2
    assert lines[:2] == [
        f"HIL error: run config out of range (iterations {iterations}, warm-up {warmup}, at most 1000 runs)",
        "Program failed, exiting.",
    ]


def test_without_the_handshake_the_image_has_neither_symbol(tmp_path: Path) -> None:
    """The stand-in for firmware that predates the handshake: it replays whatever it holds, unasked."""
    elf = build_qemu_image(_blob(64, seed=10), LINES, runs=RUNS, run_config="absent", cache=tmp_path)
    symbols = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    assert "hil_etdump_ready" in symbols
    assert "hil_config_ready" not in symbols and "hil_run_config" not in symbols
    rc, lines = _run(elf)
    assert rc == 0 and lines[0] == LINES[0]


def test_the_ignoring_variant_stops_for_the_debugger_then_runs_its_defaults(tmp_path: Path) -> None:
    """The stand-in for a buggy firmware the harness must catch by its console echo."""
    elf = build_qemu_image(_blob(64, seed=11), LINES, runs=RUNS, run_config="ignored", cache=tmp_path)
    rc, lines, gdb_out = _run_configured(elf, tmp_path, iterations=1, warmup=2)
    assert "Temporary breakpoint 1, hil_config_ready" in gdb_out
    assert rc == 0
    assert lines[0] == f"Run config: iterations {RUNS}, warm-up 0 (defaults: no debugger wrote hil_run_config)"
    assert lines[1 : len(LINES) + 1] == LINES


def test_gdb_breaks_at_ready_and_dumps_exact_1mib(tmp_path: Path) -> None:
    etdump = _blob(1024 * 1024 + 7, seed=2)
    elf = build_qemu_image(etdump, LINES, runs=RUNS, cache=tmp_path)
    dump = tmp_path / "trace.etdump"
    rc, console, gdb_out = _run_under_gdb(elf, tmp_path, [
        *configure(),
        "break hil_etdump_ready",
        "continue",
        "printf \"size=%u\\n\", hil_etdump_result.size",
        f"dump binary memory {dump} hil_etdump_result.buf (char *)hil_etdump_result.buf + hil_etdump_result.size",
        "detach",
    ])
    assert "Breakpoint 2, hil_etdump_ready" in gdb_out, gdb_out  # 1 was the handshake's tbreak
    assert f"size={len(etdump)}" in gdb_out
    assert dump.read_bytes() == etdump
    assert rc == 0
    assert console.endswith("Program complete, exiting.\r\n")


def test_without_ready_call_the_breakpoint_is_never_hit(tmp_path: Path) -> None:
    elf = build_qemu_image(_blob(256, seed=3), LINES, runs=RUNS, call_ready=False, cache=tmp_path)
    rc, console, gdb_out = _run_under_gdb(elf, tmp_path, [*configure(), "break hil_etdump_ready", "continue"])
    assert rc == 0
    assert "Breakpoint 2, hil_etdump_ready" not in gdb_out
    crc = zlib.crc32(_blob(256, seed=3))
    assert f"Result buf: 0x38000000, size: 256, crc32: 0x{crc:x}\r\nProgram complete, exiting.\r\n" in console


@pytest.mark.parametrize("override", [0, 0x7FFFFFFF])
def test_size_override_is_published_and_printed(tmp_path: Path, override: int) -> None:
    elf = build_qemu_image(_blob(512, seed=4), ["x"], runs=RUNS, result_size_override=override, cache=tmp_path)
    rc, console, gdb_out = _run_under_gdb(elf, tmp_path, [
        *configure(), "break hil_etdump_ready", "continue", "printf \"size=%u\\n\", hil_etdump_result.size", "detach",
    ])
    assert rc == 0
    assert f"size={override}\n" in gdb_out
    # The CRC covers the bytes written, whatever size the variant publishes.
    assert f"Result buf: 0x38000000, size: {override}, crc32: 0x{zlib.crc32(_blob(512, seed=4)):x}\r\n" in console


def test_second_build_hits_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    etdump = _blob(2048, seed=5)
    first = build_qemu_image(etdump, LINES, runs=RUNS, cache=tmp_path)
    assert first.parent.parent == tmp_path / "firmware" / "qemu"
    assert (first.parent / "build.log").is_file()
    mtime = first.stat().st_mtime_ns

    def no_compile(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the cached image was rebuilt")

    monkeypatch.setattr(qemu_image, "run_logged", no_compile)
    assert build_qemu_image(etdump, list(LINES), runs=RUNS, cache=tmp_path) == first
    assert first.stat().st_mtime_ns == mtime
    # Every input is part of the key: another line, byte, run count or option is another image.
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump, [*LINES, "one more"], runs=RUNS, cache=tmp_path)
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump[:-1] + b"\0", LINES, runs=RUNS, cache=tmp_path)
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump, LINES, runs=RUNS + 1, cache=tmp_path)
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump, LINES, runs=RUNS, call_ready=False, cache=tmp_path)
    with pytest.raises(AssertionError, match="rebuilt"):
        build_qemu_image(etdump, LINES, runs=RUNS, run_config="absent", cache=tmp_path)


def test_default_cache_follows_hil_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HIL_CACHE_DIR", str(tmp_path / "cache"))
    elf = build_qemu_image(b"", [], runs=1, call_ready=False)
    assert elf.is_relative_to(tmp_path / "cache" / "firmware" / "qemu")
    rc, lines, _ = _run_configured(elf, tmp_path, iterations=1)
    assert rc == 0
    assert lines == [
        "Run config: iterations 1, warm-up 0 (set by the debugger)",
        "Result buf: 0x38000000, size: 0, crc32: 0x0", "Program complete, exiting.", "",
    ]


def test_concurrent_builds_share_one_image(tmp_path: Path) -> None:
    etdump = _blob(1000, seed=6)
    with ThreadPoolExecutor(max_workers=2) as pool:
        paths = list(pool.map(lambda _: build_qemu_image(etdump, LINES, runs=RUNS, cache=tmp_path), range(2)))
    assert paths[0] == paths[1]
    assert [p.name for p in (tmp_path / "firmware" / "qemu").iterdir()] == [paths[0].parent.name]
    assert _run_configured(paths[0], tmp_path)[0] == 0


def test_compile_error_names_command_and_keeps_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "src"
    shutil.copytree(qemu_image.FIRMWARE_SOURCE_DIR, broken)
    with open(broken / "main.c", "a", encoding="utf-8") as handle:
        handle.write("\nthis is not C;\n")
    monkeypatch.setattr(qemu_image, "FIRMWARE_SOURCE_DIR", broken)
    with pytest.raises(BuildError) as info:
        build_qemu_image(b"abc", ["x"], runs=1, cache=tmp_path / "cache")
    message = str(info.value)
    assert "arm-none-eabi-gcc" in message and "exit status" in message
    log = Path(message.rsplit("(log: ", 1)[1].rstrip(")"))
    assert log.is_file() and log.parent.name.endswith(".failed")
    assert "main.c" in log.read_text() and "error" in log.read_text()
    assert not list((tmp_path / "cache" / "firmware" / "qemu").glob("*/firmware.elf"))


def test_compile_timeout_is_a_build_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(qemu_image, "BUILD_TIMEOUT_S", 0.001)
    with pytest.raises(BuildError, match=r"timed out after 0\.001 s: .*arm-none-eabi-gcc.*\(log: .*build\.log\)"):
        build_qemu_image(b"abc", ["x"], runs=1, cache=tmp_path)


def test_missing_compiler_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIL_ARM_GCC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match="apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"):
        build_qemu_image(b"abc", ["x"], runs=1, cache=tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"console_lines": ["ok", "two\nlines"]}, "console line 2"),
        ({"console_lines": "one string"}, "not one string"),
        ({"result_size_override": 1 << 32}, "not a 32-bit size"),
        ({"result_size_override": -1}, "not a 32-bit size"),
        ({"etdump": bytes(qemu_image.MAX_ETDUMP_BYTES + 1)}, "does not fit"),
        ({"runs": 0}, "runs must be a positive"),
        ({"runs": True}, "runs must be a positive"),
        ({"run_config": "maybe"}, "run_config must be one of taken, ignored, absent"),
    ],
)
def test_bad_inputs_are_refused_before_compiling(tmp_path: Path, kwargs: dict, pattern: str) -> None:
    args = {"etdump": b"abc", "console_lines": ["x"], "runs": 1, **kwargs}
    etdump, lines = args.pop("etdump"), args.pop("console_lines")
    with pytest.raises(BuildError, match=pattern):
        build_qemu_image(etdump, lines, cache=tmp_path, **args)
    assert not (tmp_path / "firmware").exists()
