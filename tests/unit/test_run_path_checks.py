"""The run path's small judges, against hand-written answers: which files in a folder a run wrote, what a
failed write says, the variable a result expression reads, which client QEMU's UART serves."""

from __future__ import annotations

import errno
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from hil.base.errors import WriteError
from hil.run.out_folder import JOURNAL_NAME, foreign_files
from hil.target.elf_preflight import result_root
from hil.target.qemu_fate import uart_peer

REPO = Path(__file__).resolve().parents[2]


def test_a_file_is_a_runs_when_its_manifest_lists_it_with_the_same_sha256_or_a_journal_names_it(tmp_path):
    (tmp_path / "model.pte").write_bytes(b"program")
    (tmp_path / "serial.log").write_bytes(b"console")
    (tmp_path / "profile.json").write_bytes(b"{}")
    listed = {"model.pte": {"sha256": hashlib.sha256(b"program").hexdigest(), "size": 7},
              "serial.log": {"sha256": hashlib.sha256(b"other console").hexdigest(), "size": 13}}
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": "et-hil/manifest/1", "files": listed}))
    names = ("model.pte", "serial.log", "profile.json", "manifest.json", "trace.json")
    assert foreign_files(tmp_path, names) == ["profile.json", "serial.log"]  # unlisted; changed since
    (tmp_path / JOURNAL_NAME).write_text(json.dumps({"schema": "et-hil/run-owned/1", "files": ["profile.json"]}))
    assert foreign_files(tmp_path, names) == ["serial.log"]
    (tmp_path / "manifest.json").write_text('{"written by": "the user"}')
    assert foreign_files(tmp_path, names) == ["manifest.json", "model.pte", "serial.log"]


def test_a_failed_write_names_the_file_and_the_errno():
    quota = WriteError.from_os(OSError(errno.EDQUOT, "Disk quota exceeded"), "/runs/a/profile.json")
    assert str(quota) == "cannot write /runs/a/profile.json: Disk quota exceeded (EDQUOT, errno 122)"
    assert isinstance(quota, OSError) and quota.errno == errno.EDQUOT
    assert WriteError.if_write_error(FileNotFoundError(errno.ENOENT, "No such file or directory"), "/x") is None
    rofs = WriteError.if_write_error(OSError(errno.EROFS, "Read-only file system"), "/ro/run")
    assert str(rofs) == "cannot write /ro/run: Read-only file system (EROFS, errno 30)"


def test_a_file_over_the_size_limit_is_efbig_and_the_old_file_stays_whole(tmp_path):
    target = tmp_path / "trace.json"
    target.write_bytes(b"the earlier run's trace\n" * 10)
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096));"
            "from hil.base import atomic; from hil.base.errors import WriteError\n"
            "try:\n    atomic.write_bytes(__import__('pathlib').Path(sys.argv[1]), bytes(10000))\n"
            "except WriteError as exc:\n    print(exc)")
    done = subprocess.run([sys.executable, "-c", code, str(target)], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == f"cannot write {target}: File too large (EFBIG, errno 27)"
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.json"]  # no temp file left


def test_the_variable_a_result_expression_reads():
    assert result_root("hil_etdump_result") == "hil_etdump_result"
    assert result_root("(&hil_etdump_result)->buf") == "hil_etdump_result"
    assert result_root("results[2].etdump") == "results"
    assert result_root("*(struct hil_result *)0x20000000") is None  # a cast: left to gdb
    assert result_root("a + b") is None


def test_the_client_qemus_uart_serves():
    info = ("gdb: filename=tcp:127.0.0.1:41387,server=on <-> 127.0.0.1:51332\r\n#chr097: filename=gdb\r\n"
            "serial0: filename=tcp:127.0.0.1:41025,server=on <-> 127.0.0.1:56934\r\n")
    assert uart_peer(info) == 56934  # `info chardev` as QEMU 7 prints it (a run's mi.log)
    assert uart_peer("serial0: filename=tcp:127.0.0.1:41025,server=on\r\n") is None
