"""The fault matrix: each way a run can go wrong, run as a user runs it (`hil ...` in a child process).

Every row asserts the exit status, the one-line message naming the cause (the first line of stderr),
a generous time bound, the artifacts a failed run keeps (manifest.json with status and error, the
logs) and that no QEMU, gdb or debug server is left behind. Row 1 (no orphans, even after kill -9)
is tests/system/test_no_orphans.py; the rows of the run path's own faults (what --out may name, a model
that exits or hangs, a full disk, symbols missing from the ELF, QEMU killed, a busy UART, SIGTERM) are
tests/system/test_fault_matrix_run_path.py; a signal in each other step (import, export, read-out) is
test_fault_matrix_signals.py; inputs and budgets a user feeds a run, test_fault_matrix_inputs.py; files
handed back to `hil` damaged or foreign, test_fault_matrix_readers.py; a damaged cache entry (a truncated
model.pte or runtime ELF, a damaged replay image or runtime library, a read-only cache),
test_fault_matrix_cache.py; a disk that fills at the ETDump's read-out, the source copy, the configure, compile
or link, test_fault_matrix_disk_full.py;
a model's code that forks, exits or prints where the numerics references are
computed, test_fault_matrix_references.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from orphans import left_after

REPO = Path(__file__).resolve().parents[2]
UNMAPPED = 0x58000000  # the address the bus-fault image reads (firmware/qemu/main.c)
RUN = ("run", "--board", "qemu", "--model", "cifar10", "--no-delegate")
VARIANT_LINE = "fault-matrix replay image: the model run starts"


class Hil:
    """`hil ...` in a child process carrying a tag, so anything it leaves running can be found."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex
        # This checkout's hil wherever the command runs (cwd may be a user's project folder).
        path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        self.env = {**os.environ, "HIL_SESSION_TAG": self.tag, "PYTHONPATH": path}

    def __call__(self, *args: str, timeout: float = 300, cwd: Path = REPO,
                 prefix: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, float]:
        """`prefix`: a command the `hil` runs under (a mount namespace holding a small file system)."""
        start = time.monotonic()
        done = subprocess.run([*prefix, sys.executable, "-m", "hil.cli.main", *args], cwd=cwd, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        return done, time.monotonic() - start

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "hil.cli.main", *args], cwd=REPO, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def hil() -> Iterator[Hil]:
    runner = Hil()
    yield runner
    assert left_after(runner.tag) == [], "a QEMU, gdb or pyocd process outlived the hil command"


def first_line(done: subprocess.CompletedProcess) -> str:
    """The command's error line: the first stderr line that is not a progress line (`[hil] step...`)."""
    assert "Traceback" not in done.stderr, done.stderr
    return next((line for line in done.stderr.splitlines() if not line.startswith("[hil]")), "")


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def addr2line(elf: Path, address: int) -> tuple[str, str]:
    """binutils' function and `file.c:line` for `address` in `elf`."""
    function, where = subprocess.run(["arm-none-eabi-addr2line", "-f", "-e", str(elf), f"0x{address:x}"],
                                     capture_output=True, text=True, check=True, timeout=30).stdout.splitlines()[:2]
    path, line = where.split(" (")[0].rsplit(":", 1)
    return function, f"{Path(path).name}:{line}"


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory):
    """A replay image for one inference that faults, hangs, or prints a wrong or no CRC."""
    from hil.firmware.qemu_image import build_qemu_image

    def build(**options) -> Path:
        return build_qemu_image(bytes(range(256)) * 8, [VARIANT_LINE], runs=1, **options)

    return build


# --- row 2: crash forensics -------------------------------------------------------------------------


@pytest.mark.parametrize(("fault", "exception", "function", "words"), [
    ("bus", "BusFault", "replay_bus_fault", f"precise data bus error at 0x{UNMAPPED:08x}"),
    ("undef", "UsageFault", "replay_undefined_instruction", "undefined instruction"),
])
def test_a_fault_is_reported_with_its_cause_and_source_line(hil, variant, tmp_path, fault, exception, function, words):
    elf, out = variant(fault=fault), tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--elf", str(elf), "--out", str(out), "--timeout", "30")
    assert done.returncode == 3 and elapsed < 120  # a board error
    report = json.loads((out / "fault.json").read_text())
    found, where = addr2line(elf, int(report["stacked_frame"]["PC"], 16))  # binutils, not the harness
    assert found == function
    summary = f"{exception}: {words}, in {function} ({where})"
    assert first_line(done) == f"hil run: {summary} [board 'qemu']"
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["fault"] == summary and kept["error"].startswith(summary)
    assert {"fault.json", "serial.log", "mi.log", "qemu.log"} <= set(kept["files"])


def test_a_hang_is_reported_where_the_core_was(hil, variant, tmp_path):
    elf, out = variant(fault="hang"), tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--elf", str(elf), "--out", str(out), "--timeout", "5")
    assert done.returncode == 3 and elapsed < 120  # a board error
    report = json.loads((out / "fault.json").read_text())
    function, where = addr2line(elf, int(report["core"]["pc"], 16))
    assert function == "replay_hang"
    assert re.fullmatch(r"hil run: Hang: breakpoint 'hil_etdump_ready' not reached within \d\.\d s; the core is in"
                        rf" replay_hang \({re.escape(where)}\) \[board 'qemu'\]", first_line(done))
    assert manifest(out)["status"] == "failed" and "backtrace: #0 replay_hang" in done.stderr


def test_qemu_runs_a_users_own_elf_through_the_same_road(hil, tmp_path):
    first, again = tmp_path / "first", tmp_path / "again"
    done, _ = hil(*RUN, "--iterations", "2", "--out", str(first))
    assert done.returncode == 0, done.stderr
    elf = manifest(first)["firmware"]  # the replay image that run built: an mps2-an505 ELF like any other
    done, elapsed = hil(*RUN, "--iterations", "2", "--out", str(again), "--elf", elf)
    assert done.returncode == 0 and elapsed < 120, done.stderr
    assert (again / "trace.etdump").read_bytes() == (first / "trace.etdump").read_bytes()
    assert manifest(again)["firmware"] == elf


# --- row 3: a cache that cannot go stale -------------------------------------------------------------

MODEL_WITH_HELPER = textwrap.dedent(
    """
    import torch
    import helper

    def factory():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, helper.WIDTH), torch.nn.ReLU()), (torch.ones(1, 4),)
    """
)


def test_editing_an_imported_helper_re_exports_the_model(hil, tmp_path):
    (tmp_path / "model.py").write_text(MODEL_WITH_HELPER)
    (tmp_path / "helper.py").write_text("WIDTH = 8\n")
    spec = f"{tmp_path / 'model.py'}:factory"
    env_cache = tmp_path / "cache"
    hil.env["HIL_CACHE_DIR"] = str(env_cache)
    states = []
    for step in ("first", "unchanged", "edited"):
        if step == "edited":
            (tmp_path / "helper.py").write_text("WIDTH = 16\n")
        done, elapsed = hil("export", "--model", spec, "--out", str(tmp_path / step))
        assert done.returncode == 0 and elapsed < 120, done.stderr
        states.append(done.stdout.split(": ")[1].split(",")[0])
    assert states == ["exported", "from cache", "exported"]
    assert (tmp_path / "edited" / "model.pte").read_bytes() != (tmp_path / "first" / "model.pte").read_bytes()


# --- row 4: inputs checked before any work ------------------------------------------------------------

@pytest.mark.parametrize(("args", "says"), [
    (("--iterations", "0"), "iterations must be a whole number >= 1, not 0"),
    (("--iterations", "-1"), "iterations must be a whole number >= 1, not -1"),
    (("--warmup", "-3"), "warm-up must be a whole number >= 0, not -3"),
    (("--iterations", "100000"), "100000 runs: more than the 1000 board 'qemu' allows"),
    (("--timeout", "0"), "timeout (seconds) must be greater than 0, not 0.0"),
    (("--timeout", "-5"), "timeout (seconds) must be greater than 0, not -5.0"),
    (("--jitter", "nan"), "jitter must be a finite number, not nan"),
    (("--jitter", "1"), "jitter must be less than 1, not 1.0"),
    (("--elf", "/nonexistent/firmware.elf"), "firmware image /nonexistent/firmware.elf: cannot read it"),
    (("--model", "nosuch"), "unknown model 'nosuch'"),
    (("--delegate", "nosuch"), "unknown delegate 'nosuch'"),
])
def test_a_bad_input_is_refused_at_once_in_one_line(hil, tmp_path, args, says):
    out = tmp_path / "run"
    done, elapsed = hil("run", "--board", "qemu", "--model", "cifar10", "--out", str(out), *args)
    assert done.returncode == 2 and elapsed < 30
    assert len(done.stderr.splitlines()) == 1 and says in first_line(done), done.stderr
    kept = manifest(out)
    assert kept["status"] == "failed" and says in kept["error"] and kept["error_kind"] == "input"
    assert not (out / "qemu.log").exists() and not (out / "model.pte").exists()  # no work was done


def test_a_board_override_out_of_range_is_refused_before_the_run_folder_is_made(hil, tmp_path):
    # Board-file values, from the file or its command-line overrides, are checked when the board is read:
    # before the run starts, so there is no run folder to keep anything in.
    out = tmp_path / "run"
    done, elapsed = hil("run", "--board", "qemu", "--model", "cifar10", "--out", str(out), "--clock-mhz", "0")
    assert done.returncode == 2 and elapsed < 30
    assert len(done.stderr.splitlines()) == 1
    assert "[board].clock_mhz must be a number > 0, not 0.0" in first_line(done), done.stderr
    assert not out.exists()


def test_a_board_file_clock_that_is_no_number_and_an_unwritable_out_are_refused(hil, tmp_path):
    board = tmp_path / "board.toml"
    board.write_text((REPO / "boards" / "qemu.toml").read_text().replace("clock_mhz = 324", 'clock_mhz = "fast"'))
    done, elapsed = hil("run", "--board-config", str(board), "--model", "cifar10", "--out", str(tmp_path / "run"))
    assert done.returncode == 2 and elapsed < 30
    assert "[board].clock_mhz must be a number > 0, not 'fast'" in first_line(done) and len(done.stderr.splitlines()) == 1
    done, elapsed = hil(*RUN, "--out", "/proc/x")
    assert done.returncode == 2 and elapsed < 30
    assert first_line(done).startswith("hil run: --out /proc/x: cannot create or write there")


@pytest.mark.parametrize("clock", ["-5", "0", "nan"])
def test_inspect_refuses_a_clock_that_is_no_positive_number(hil, tmp_path, clock):
    done, elapsed = hil("inspect", str(tmp_path / "trace.etdump"), "--etrecord", str(tmp_path / "x.bin"),
                        "--clock-mhz", clock)
    assert done.returncode == 2 and elapsed < 30
    assert first_line(done).startswith("hil inspect: --clock-mhz must be") and len(done.stderr.splitlines()) == 1


BIG_MODEL = textwrap.dedent(
    """
    import torch

    def factory():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(640, 512)), (torch.ones(1, 640),)
    """
)


def test_a_model_too_large_for_the_board_is_refused_before_flashing(hil, tmp_path):
    (tmp_path / "big.py").write_text(BIG_MODEL)  # 640 x 512 float weights: 1.25 MiB, the model region is 1 MiB
    out = tmp_path / "run"
    done, elapsed = hil("run", "--board", "qemu", "--model", f"{tmp_path / 'big.py'}:factory", "--no-delegate",
                        "--out", str(out))
    assert done.returncode == 2 and elapsed < 120
    size = (out / "model.pte").stat().st_size
    assert size > 640 * 512 * 4
    assert f"program (.pte) {size} B" in first_line(done) and "exceeds memory.program_bytes 1048576 B" in done.stderr
    assert not (out / "qemu.log").exists() and manifest(out)["status"] == "failed"


# --- row 5: parsers that refuse instead of crashing ---------------------------------------------------

def test_inspect_reads_a_garbled_console_and_refuses_a_corrupt_manifest_in_one_line(hil, tmp_path):
    out = tmp_path / "run"
    done, _ = hil(*RUN, "--iterations", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    written = hashlib.sha256((out / "serial.log").read_bytes()).hexdigest()
    with open(out / "serial.log", "a") as log:
        log.write("Result buf: 0838000000, size: 12\r\nModel Size: 0x1 (" + "9" * 5000 + " B)\r\n")
    grown = hashlib.sha256((out / "serial.log").read_bytes()).hexdigest()
    done, _ = hil("inspect", str(out))  # the console no longer is the run's: refused, naming it and both hashes
    assert done.returncode == 3 and first_line(done).startswith(
        f"hil inspect: {out / 'serial.log'}: sha256 {grown} differs from the {written}"), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    done, elapsed = hil("inspect", str(out), "--no-verify")  # read anyway: garbled lines and all
    assert done.returncode == 0 and elapsed < 60, done.stderr
    assert "Method::execute" in done.stdout and "--no-verify" in done.stdout
    (out / "manifest.json").write_text('{"model": "cif')
    done, elapsed = hil("inspect", str(out))
    assert done.returncode == 2 and elapsed < 60
    assert len(done.stderr.splitlines()) == 1 and "manifest.json: not a readable manifest" in first_line(done)
    # the bare files beside it need no manifest
    done, elapsed = hil("inspect", str(out / "trace.etdump"), "--etrecord", str(out / "etrecord.bin"), "--ns")
    assert done.returncode == 0 and elapsed < 60 and "Method::execute" in done.stdout, done.stderr


# --- row 6: read-out you can trust --------------------------------------------------------------------

def test_a_crc_mismatch_fails_naming_both_values(hil, variant, tmp_path):
    out = tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--elf", str(variant(result_crc="wrong")), "--out", str(out))
    assert done.returncode == 3 and elapsed < 120  # a board error
    read = zlib.crc32((out / "trace.etdump").read_bytes())  # the dump is kept; its CRC computed here
    line = first_line(done)
    assert "ETDump CRC-32 mismatch" in line
    assert f"printed crc32 0x{read ^ 0x00010000:08x}" in line and f"have 0x{read:08x}" in line
    assert manifest(out)["status"] == "failed" and "CRC-32 mismatch" in manifest(out)["error"]


def test_firmware_without_a_crc_runs_and_the_manifest_says_the_check_was_skipped(hil, tmp_path):
    from hil.aot.export import export_model
    from hil.replay.simulated import simulated_buffer
    from hil.firmware.qemu_image import build_qemu_image

    buffer = simulated_buffer(export_model("cifar10", delegate="none"), iterations=1, clock_mhz=324, seed=0, jitter=0)
    elf = build_qemu_image(buffer.etdump, buffer.console_lines, runs=1, result_crc="absent")
    out = tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--elf", str(elf), "--out", str(out))
    assert done.returncode == 0 and elapsed < 120, done.stderr
    crc = manifest(out)["etdump_crc32"]
    assert crc["checked"] is False and "no CRC-32" in crc["note"]
    assert crc["read"] == f"0x{zlib.crc32(buffer.etdump):08x}"


# --- row 7: artifacts isolated ------------------------------------------------------------------------

def test_one_run_at_a_time_in_a_run_folder(hil, variant, tmp_path):
    out = tmp_path / "run"
    holder = hil.popen(*RUN, "--iterations", "1", "--elf", str(variant(fault="hang")), "--out", str(out),
                       "--timeout", "10")
    try:
        deadline = time.monotonic() + 120
        while not (out / "qemu.log").exists():  # the holder has the lock (taken before anything else)
            assert holder.poll() is None and time.monotonic() < deadline, holder.communicate()
            time.sleep(0.05)
        refused, elapsed = hil(*RUN, "--iterations", "1", "--out", str(out))
        assert refused.returncode == 2 and elapsed < 30
        assert first_line(refused) == (f"hil run: run folder {out} is in use by pid {holder.pid} on"
                                       f" {os.uname().nodename} (since {first_line(refused).split('(since ')[1]}")
        assert "--wait" in refused.stderr
        waited, elapsed = hil(*RUN, "--iterations", "1", "--out", str(out), "--wait")
        assert holder.wait(timeout=60) == 3  # the hang ran into its timeout (a board error), then the waiter went on
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert waited.returncode == 0 and elapsed < 180, waited.stderr
    console = (out / "serial.log").read_text()
    assert console.count("Run config:") == 1 and VARIANT_LINE not in console  # one run's log, the waiter's
    assert manifest(out)["status"] == "passed"


def test_the_manifest_describes_the_runs_own_files_only(hil, tmp_path):
    out = tmp_path / "run"
    (out / "older").mkdir(parents=True)
    (out / "older" / "profile.json").write_text("{}")
    with open(out / "unrelated.bin", "wb") as big:
        big.truncate(64 << 20)  # 64 MiB of someone else's data (sparse: costs no disk)
    done, elapsed = hil(*RUN, "--iterations", "1", "--out", str(out))
    assert done.returncode == 0 and elapsed < 120, done.stderr
    files = set(manifest(out)["files"])
    assert {"model.pte", "trace.etdump", "serial.log", "profile.json"} <= files
    assert "unrelated.bin" not in files and "older/profile.json" not in files
    assert (out / "unrelated.bin").stat().st_size == 64 << 20  # left alone


PER_ID_TESTS = textwrap.dedent(
    """
    import pytest
    from hil.base.errors import InputError

    @pytest.mark.parametrize("name", ["a/b", "a b", "x" * 200 + "1", "x" * 200 + "2"])
    def test_own_folder(hil_artifacts_dir, request, name):
        (hil_artifacts_dir / "id.txt").write_text(request.node.nodeid)

    @pytest.mark.parametrize("subdir", ["..", "../outside", "/tmp/elsewhere"])
    def test_subdir_stays_inside(hil_profile, subdir):
        with pytest.raises(InputError):
            hil_profile("cifar10", subdir=subdir)
    """
)


def test_every_test_id_gets_its_own_folder_inside_the_root(tmp_path):
    (tmp_path / "test_ids.py").write_text(PER_ID_TESTS)
    root = tmp_path / "artifacts"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board", "qemu",
                           "--hil-artifacts", str(root), "--rootdir", str(tmp_path), str(tmp_path / "test_ids.py")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and time.monotonic() - start < 120, done.stdout[-3000:]
    ids = [path.read_text() for path in root.rglob("id.txt")]
    assert len(ids) == 4 == len(set(ids))  # four tests, four folders, each holding its own test's id
    assert all(path.resolve().is_relative_to(root.resolve()) for path in root.rglob("*"))
    assert not (tmp_path / "outside").exists() and not Path("/tmp/elsewhere").exists()
    shutil.rmtree(root)
