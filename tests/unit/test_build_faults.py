"""A build that failed for a full disk, told from its log (hil.firmware.build_faults), and a copy's full disk
told from copytree's error (hil.base.atomic.copy_error). The logs are written out by hand here, in the words
GCC, binutils, CMake and Ninja print (the system rows of test_fault_matrix_disk_full.py make them for real)."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from hil.base.atomic import copy_error
from hil.base.errors import WriteError
from hil.firmware.build_faults import disk_full, refused_write

ENOSPC = "No space left on device (ENOSPC, errno 28)"
COMPILE = ("[3/96] Building CXX object executorch/CMakeFiles/executorch_core.dir/runtime/core/evalue.cpp.obj\n"
           "FAILED: executorch/CMakeFiles/executorch_core.dir/runtime/core/evalue.cpp.obj\n"
           "/usr/bin/arm-none-eabi-g++ -c evalue.cpp -o evalue.cpp.obj\n"
           "Assembler messages:\n"
           "Fatal error: can't write 512 bytes to section .text of evalue.cpp.obj: 'No space left on device'\n")
ARCHIVE = ("[40/96] Linking CXX static library executorch/libexecutorch.a\n"
           "FAILED: executorch/libexecutorch.a\n"
           "/usr/bin/arm-none-eabi-ar: executorch/libexecutorch.a: No space left on device\n")
LINK = ("[96/96] Linking CXX executable hil_qemu_runtime.elf\n"
        "FAILED: hil_qemu_runtime.elf\n"
        "/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: final link failed: No space left on device\n"
        "collect2: error: ld returned 1 exit status\n")


@pytest.mark.parametrize(("text", "step"), [(COMPILE, "compile"), (ARCHIVE, "archive"), (LINK, "link")])
def test_a_build_log_saying_the_disk_is_full_names_what_failed_in_the_build(tmp_path, text, step):
    log = tmp_path / "build.log"
    log.write_text("$ cmake --build build --target hil_qemu_runtime\n" + text + "[exit status 1]\n")
    assert disk_full(log, "build") == f"the {step} failed: {ENOSPC}"


def test_a_configure_keeps_its_name_and_a_quota_its_errno(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("CMake Error at CMakeLists.txt:26 (project):\n  file write failed (No space left on device):\n")
    assert disk_full(log, "configure") == f"the configure failed: {ENOSPC}"
    log.write_text("FAILED: main.cpp.obj\nmain.cpp:1: fatal error: error writing to /tmp/cc1.s: Disk quota exceeded\n")
    assert disk_full(log, "build") == "the compile failed: Disk quota exceeded (EDQUOT, errno 122)"


def test_a_log_without_a_full_disk_or_no_log_at_all_says_nothing(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("main.cpp:42:7: error: 'foo' was not declared in this scope\n")
    assert disk_full(log, "build") is None
    assert disk_full(tmp_path / "missing.log", "build") is None


def test_a_log_that_refused_the_harness_line_is_the_disk_only_for_a_write_errno(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(LINK)
    assert refused_write(OSError(errno.ENOSPC, "No space left on device"), log, "build") == f"the link failed: {ENOSPC}"
    assert refused_write(OSError(errno.ENOSPC, "No space left on device"), tmp_path / "gone", "configure") == (
        f"the configure failed: {ENOSPC}")
    assert refused_write(OSError(errno.EIO, "Input/output error"), log, "build") is None


def test_copytrees_list_of_failures_is_one_write_error_naming_the_destination(tmp_path):
    dest = tmp_path / "executorch"
    rows = [("/src/a.h", f"{dest}/a.h", "[Errno 2] No such file or directory: '/src/a.h'"),
            ("/src/b.h", f"{dest}/b.h", "[Errno 28] No space left on device: '/src/b.h'")]
    error = copy_error(shutil.Error(rows), dest)
    assert isinstance(error, WriteError) and str(error) == f"cannot write {dest}: {ENOSPC}"
    assert error.errno == errno.ENOSPC and error.filename == str(dest)
    assert copy_error(shutil.Error(rows[:1]), dest) is None  # a missing source is no full disk
    assert copy_error(shutil.Error("Destination path already exists"), dest) is None
    direct = OSError(errno.ENOSPC, "No space left on device", "/src/b.h")  # copyfile names the source
    assert str(copy_error(direct, Path(dest))) == f"cannot write {dest}: {ENOSPC}"
