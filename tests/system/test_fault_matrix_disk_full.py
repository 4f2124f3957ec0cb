"""The fault matrix, continued: a disk that fills during the run's later steps, run as a user runs it.

Row 10 (test_fault_matrix_run_path.py) fills the disk at the run's first copy. These rows fill it at the
debugger's read-out of the ETDump, at the copy of ExecuTorch's sources into the runtime cache, and at the
configure, compile or link of an image, each on a real tmpfs (small_disk) where the real gdb, copy, CMake,
compiler and linker meet ENOSPC. The moment is made certain by filling the tmpfs from a hook of the real tool
(gdb's `define dump binary hook-memory`, a wrapper script that fills it and runs the real cmake or gcc), never
by timing, and each fails within seconds of its start. Each asserts exit status 3 (the machine's fault), the
one `hil run:` line naming the path or step and ENOSPC, the manifest where its disk has room, the logs kept.
"""

from __future__ import annotations

import json
import re
import shutil

import pytest
from runtime_workspace import needs_runtime
from small_disk import small_disk
from test_fault_matrix import REPO, RUN, first_line, hil, manifest  # noqa: F401  (hil: the fixture)

ENOSPC = "No space left on device (ENOSPC, errno 28)"
# Fill the tmpfs at `mount` to the last byte (the tool's own failure is the test's, not this line's).
FILL = 'cat /dev/zero > {mount}/filler 2>/dev/null'


def only_line(done) -> str:
    """The command's one error line: the first stderr line, and the only one saying `hil run:`."""
    line = first_line(done)
    assert [text for text in done.stderr.splitlines() if "hil run:" in text] == [line], done.stderr
    return line


# --- row 14: the debugger's dump of the ETDump meets a full disk -------------------------------------

def test_a_full_disk_at_the_etdump_dump_names_the_dump_and_the_manifest_and_logs_stay(hil, tmp_path):
    mount, keep = tmp_path / "disk", tmp_path / "kept"
    prefix = small_disk(mount, keep, "4m")  # model.pte, etrecord.bin and the logs fit; then the hook fills it
    hook = tmp_path / "fill-at-dump.gdb"
    hook.write_text(f"define dump binary hook-memory\nshell {FILL.format(mount=mount)}\nend\n")
    gdb = tmp_path / "gdb"
    gdb.write_text(f'#!/bin/sh\nexec gdb-multiarch -x "{hook}" "$@"\n')
    gdb.chmod(0o755)
    board = tmp_path / "qemu.toml"
    board.write_text((REPO / "boards" / "qemu.toml").read_text().replace('gdb = "gdb-multiarch"', f'gdb = "{gdb}"'))
    done, elapsed = hil("run", "--board-config", str(board), *RUN[3:], "--iterations", "1", "--firmware", "replay",
                        "--out", str(mount / "run"), prefix=prefix)
    assert done.returncode == 3 and elapsed < 120, done.stderr
    says = f"hil run: cannot write {mount / 'run' / 'trace.etdump'}: {ENOSPC}"
    assert only_line(done) == says  # was: "gdb: dump wrote 0 of 2072 bytes" in 13 lines, no errno
    run = keep / "run"
    assert (keep / "filler").stat().st_size > 0  # the hook did fill it
    kept = json.loads((run / "manifest.json").read_text())  # written in the room the run kept for it
    assert kept["status"] == "failed" and kept["error"] == says.removeprefix("hil run: ")
    assert not (run / "trace.etdump").exists() and not list(run.glob(".hil-dump-*")) and not list(run.glob(".trace*"))
    assert "Result buf: " in (run / "serial.log").read_text()  # the console up to the breakpoint, on disk
    assert "dump binary memory" in (run / "mi.log").read_text()
    assert {"serial.log", "mi.log", "qemu.log"} <= set(kept["files"])


# --- row 15: the copy of ExecuTorch's sources into an empty runtime cache meets a full disk ---------

@needs_runtime
def test_a_full_cache_disk_at_the_source_copy_is_one_line_and_leaves_no_half_copy(hil, tmp_path):
    mount, keep = tmp_path / "cache", tmp_path / "kept"
    prefix = small_disk(mount, keep, "16m")  # the export (1.2 MB) fits, ExecuTorch's sources (95 MB) do not
    hil.env["HIL_CACHE_DIR"] = str(mount)
    out = tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--firmware", "runtime", "--out", str(out), prefix=prefix)
    assert done.returncode == 3 and elapsed < 120, done.stderr  # was: a shutil.Error traceback, exit 1, 2.1 MB
    [entry] = (keep / "firmware" / "qemu-runtime").iterdir()
    says = f"hil run: cannot write {mount / 'firmware' / 'qemu-runtime' / entry.name / 'executorch'}: {ENOSPC}"
    assert only_line(done) == says and len(done.stderr) < 2000
    assert sorted(path.name for path in entry.iterdir() if "executorch" in path.name) == []  # no half copy
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error"] == says.removeprefix("hil run: ")


# --- row 16: the compile or link of an image meets a full disk ---------------------------------------

# gcc's temporary .s and .o files go to TMPDIR: on the full disk, the compile fails; elsewhere, the link.
@pytest.mark.parametrize(("step", "temporaries", "tool"), [
    ("link", "", r"\bld: "),
    ("compile", 'TMPDIR={mount}/tmp; export TMPDIR; mkdir -p "$TMPDIR"; ', r"fatal error: error writing to "),
], ids=["link", "compile"])
def test_a_full_cache_disk_at_the_compile_or_link_names_the_step_and_the_kept_log(hil, tmp_path, step, temporaries,
                                                                                 tool):
    mount, keep = tmp_path / "cache", tmp_path / "kept"
    prefix = small_disk(mount, keep, "16m")
    gcc = tmp_path / "arm-none-eabi-gcc"  # fills the cache's disk, then runs the real compiler
    real = shutil.which("arm-none-eabi-gcc")
    gcc.write_text(f'#!/bin/sh\n[ "$1" = --version ] || {{ {temporaries.format(mount=mount)}{FILL.format(mount=mount)}; }}\n'
                   f'exec "{real}" "$@"\n')
    gcc.chmod(0o755)
    hil.env.update(HIL_CACHE_DIR=str(mount), HIL_ARM_GCC=str(gcc))
    out = tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--firmware", "replay", "--out", str(out), prefix=prefix)
    assert done.returncode == 3 and elapsed < 120, done.stderr  # was: "failed with exit status 1", no cause
    [failed] = (keep / "firmware" / "qemu").glob("*.failed")
    log = mount / "firmware" / "qemu" / failed.name / "build.log"
    says = f"hil run: QEMU replay image {failed.name[:16]}: the {step} failed: {ENOSPC} (log: {log})"
    assert only_line(done) == says
    said = (failed / "build.log").read_text()
    assert re.search(tool + r".*No space left on device", said), said  # the tool's own words, kept
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error"] == says.removeprefix("hil run: ")


# The configure's disk stays full (the harness's own line after it cannot be logged either), or is freed as the
# configure ends (a temporary file removed): both are the configure's full disk, read from the log or the errno.
@needs_runtime
@pytest.mark.parametrize("after", ["", "rm -f {mount}/filler; "], ids=["stays full", "freed after"])
def test_a_full_cache_disk_at_the_runtime_configure_names_the_step_and_the_kept_log(hil, tmp_path, after):
    mount, keep = tmp_path / "cache", tmp_path / "kept"
    prefix = small_disk(mount, keep, "256m")  # the export and ExecuTorch's sources (95 MB) fit; then it is filled
    tools = tmp_path / "bin"
    tools.mkdir()
    cmake, real = tools / "cmake", shutil.which("cmake")  # fills the cache's disk for the configure (`cmake -S`)
    cmake.write_text(f'#!/bin/sh\ncase " $* " in *" -S "*) {FILL.format(mount=mount)}; "{real}" "$@"; rc=$?;'
                     f' {after.format(mount=mount)}exit $rc;; esac\nexec "{real}" "$@"\n')
    cmake.chmod(0o755)
    hil.env.update(HIL_CACHE_DIR=str(mount), PATH=f"{tools}:{hil.env['PATH']}")
    out = tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--firmware", "runtime", "--out", str(out), prefix=prefix)
    assert done.returncode == 3 and elapsed < 120, done.stderr  # was: "cannot write <the run folder>", wrongly
    [entry] = (keep / "firmware" / "qemu-runtime").iterdir()
    [log] = (entry / "images").glob("*.build.log")
    says = (f"hil run: QEMU runtime image for {out / 'model.pte'}: the configure failed: {ENOSPC}"
            f" (log: {mount / log.relative_to(keep)})")
    assert only_line(done) == says
    assert "file write failed (No space left on device)" in log.read_text()  # CMake's own words, kept
    assert ("[exit status 1]" in log.read_text()) == bool(after)  # the harness's line, when the disk took it
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error"] == says.removeprefix("hil run: ")
