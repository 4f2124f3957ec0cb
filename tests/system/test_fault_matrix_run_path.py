"""The fault matrix, continued: the run path's own faults, each run as a user runs it (`hil ...` in a child).

Every row asserts what the rows of test_fault_matrix.py do (exit status, the one line naming the cause,
the matrix's generous time bound, the artifacts kept, no QEMU/gdb left: the `hil` fixture) and, where a
user's files sit beside the run, that their sha256 (hashlib, here) is what it was before.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sys
import time
from pathlib import Path

import pytest
from orphans import processes_tagged
from small_disk import small_disk
from test_fault_matrix import REPO, RUN, Hil, first_line, hil, manifest, variant  # noqa: F401  (fixtures)

# Files a user may keep under the names a run writes: an unset $OUT must not cost them.
PLANTED = ("model.pte", "serial.log", "profile.json", "manifest.json", "trace.json", "mi.log")


def plant(folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in PLANTED:
        (folder / name).write_bytes(f"the user's own {name}\n".encode() * 50)
    return hashes(folder)


def hashes(folder: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.iterdir())}


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def no_export_child(runner: Hil) -> bool:
    return not [cmd for cmd in processes_tagged(runner.tag) if "hil.aot.isolated" in cmd]


# --- row 8: --out names a folder; a run never deletes a file no run wrote ---------------------------

@pytest.mark.parametrize(("out", "says"), [
    ("", "--out is empty: name the folder for the run's artifacts"),
    (".", "the current folder, one of its parents or the home folder, and holds files of its own"),
    ("/", "--out /: the file-system root is no run folder"),
])
def test_an_out_that_names_no_run_folder_is_refused_and_the_users_files_stay(hil, tmp_path, out, says):
    project = tmp_path / "project"
    before = plant(project)
    done, elapsed = hil(*RUN, "--iterations", "1", "--out", out, cwd=project)
    assert done.returncode == 2 and elapsed < 30
    assert len(done.stderr.splitlines()) == 1 and says in first_line(done), done.stderr
    assert hashes(project) == before  # nothing deleted, replaced or added where the user works


def test_a_folder_holding_files_no_run_wrote_is_refused_before_any_work(hil, tmp_path):
    out = tmp_path / "results"
    before = plant(out)
    elsewhere = plant(tmp_path / "cwd")
    done, elapsed = hil(*RUN, "--iterations", "1", "--out", str(out), cwd=tmp_path / "cwd")
    assert done.returncode == 2 and elapsed < 30
    line = first_line(done)
    assert line.startswith(f"hil run: --out {out} holds ") and "which no et-hil run wrote" in line, done.stderr
    assert all(name in line for name in PLANTED)
    assert {k: v for k, v in hashes(out).items() if not k.startswith(".")} == before
    assert hashes(tmp_path / "cwd") == elsewhere and not (out / "qemu.log").exists()
    done, _ = hil("export", "--model", "cifar10", "--out", "", cwd=tmp_path / "cwd")
    assert done.returncode == 2 and "--out is empty" in first_line(done)


# --- row 9: a model's code cannot end the run as a success, nor hang it ------------------------------

FACTORIES = {
    "exits": ("import sys\n\ndef factory():\n    sys.exit(0)\n", (), "raised SystemExit(0)"),
    "interrupts": ("def factory():\n    raise KeyboardInterrupt\n", (), "raised KeyboardInterrupt"),
    "ends the process": ("import os\n\nos._exit(0)\n", (), "ended without a result (exit status 0)"),
    "hangs": ("def factory():\n    while True:\n        pass\n", ("--export-timeout", "5"),
              "did not finish within 5 s (--export-timeout)"),
}


@pytest.mark.parametrize("behaviour", list(FACTORIES))
def test_a_model_that_exits_interrupts_or_hangs_is_the_models_fault(hil, tmp_path, behaviour):
    source, extra, says = FACTORIES[behaviour]
    model = tmp_path / "model.py"
    model.write_text(source)
    spec, out = f"{model}:factory", tmp_path / "run"
    done, elapsed = hil(*RUN[:3], "--model", spec, "--no-delegate", "--iterations", "1", "--out", str(out), *extra)
    assert done.returncode == 2 and elapsed < 120  # the model's fault, never a success
    line = first_line(done)
    assert line.startswith(f"hil run: the export of model '{spec}' ({model})") and says in line, done.stderr
    kept = manifest(out)
    assert kept["status"] == "failed" and says in kept["error"] and "profile.json" not in kept["files"]
    assert no_export_child(hil)


# --- row 10: a full disk --------------------------------------------------------------------------

# The run sees a 512 KiB tmpfs (small_disk): model.pte (357 KiB) fits, etrecord.bin (781 KiB) does not.

def test_a_full_disk_is_one_line_naming_the_file_and_errno_and_what_was_written_stays_whole(hil, tmp_path):
    from hil.aot.export import export_model

    mount, keep = tmp_path / "disk", tmp_path / "kept"
    prefix = small_disk(mount, keep)
    done, elapsed = hil(*RUN, "--iterations", "1", "--out", str(mount / "run"), prefix=prefix)
    assert done.returncode == 3 and elapsed < 120, done.stderr  # the machine's fault
    says = f"hil run: cannot write {mount / 'run' / 'etrecord.bin'}: No space left on device (ENOSPC, errno 28)"
    assert first_line(done) == says and [line for line in done.stderr.splitlines() if "hil run:" in line] == [says]
    run = keep / "run"
    pte = export_model("cifar10", delegate="none").pte_path  # cached by the run: the bytes it copied
    assert hashlib.sha256((run / "model.pte").read_bytes()).digest() == hashlib.sha256(pte.read_bytes()).digest()
    assert not (run / "etrecord.bin").exists() and not list(run.glob(".etrecord.bin.*"))  # no half file
    kept = json.loads((run / "manifest.json").read_text())
    assert kept["status"] == "failed" and kept["error"] == says.removeprefix("hil run: ")


# --- row 11: the symbols a run needs, checked in the ELF before the board starts ---------------------

@pytest.fixture(scope="module")
def elfs(variant, tmp_path_factory):  # noqa: F811  (the fixture imported above)
    folder = tmp_path_factory.mktemp("elfs")
    good = variant()
    truncated = folder / "truncated.elf"
    truncated.write_bytes(good.read_bytes()[:3000])
    return {"good": good, "no handshake": variant(run_config="absent"), "truncated": truncated,
            "not arm": Path(sys.executable).resolve()}


@pytest.mark.parametrize(("elf", "extra", "says"), [
    ("good", ("--breakpoint", "no_such_function"), "has no symbol 'no_such_function' (the ETDump breakpoint"),
    ("good", ("--result-expr", "no_such_var"), "has no symbol 'no_such_var' (the result expression"),
    ("no handshake", (), "has no symbol 'hil_config_ready' (the run-configuration handshake's breakpoint)"),
    ("truncated", (), "is not a readable ELF file"),
    ("not arm", (), "not an Arm (EM_ARM) image"),
])
def test_an_elf_without_what_the_run_needs_is_refused_before_the_board_starts(hil, elfs, tmp_path, elf, extra, says):
    out = tmp_path / "run"
    done, elapsed = hil(*RUN, "--iterations", "1", "--elf", str(elfs[elf]), "--out", str(out), *extra)
    assert done.returncode == 2 and elapsed < 30
    assert len(done.stderr.splitlines()) == 1 and says in first_line(done) and str(elfs[elf]) in first_line(done)
    assert not (out / "qemu.log").exists() and not (out / "mi.log").exists()  # nothing started
    assert manifest(out)["error_kind"] == "input"


# --- row 12: the cause named: QEMU killed, a busy UART, no read-out from the ELF file ---------------

KILL_AT_CONNECT = """
    port = int(argv[argv.index("-gdb") + 1].rsplit(":", 1)[1])
    qemu = os.getpid()
    if os.fork() == 0:  # SIGKILL QEMU the moment a debugger's connection to its stub is established
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for row in open("/proc/net/tcp").read().splitlines()[1:]:
                fields = row.split()
                if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    os.kill(qemu, signal.SIGKILL)
                    os._exit(0)
            time.sleep(0.005)
        os._exit(1)
"""
STRAY_CLIENT = """
    port = int(argv[argv.index("-serial") + 1].split(",")[0].rsplit(":", 1)[1])
    if os.fork() == 0:  # a stray client: connects to QEMU's UART before the harness and holds it
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                held = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                time.sleep(0.002)
        time.sleep(300)
        os._exit(0)
"""


def run_with_qemu(hil: Hil, elf: Path, tmp_path: Path, name: str, behaviour: str):
    """`hil run` of `elf` on a copy of boards/qemu.toml whose QEMU is started by a script that adds
    `behaviour`, then execs QEMU: (the command, its seconds, its run folder)."""
    board, out = qemu_board_with(tmp_path, name, behaviour), tmp_path / "run"
    done, elapsed = hil("run", "--board-config", str(board), *RUN[3:], "--iterations", "1", "--out", str(out),
                        "--elf", str(elf))
    assert done.returncode == 3 and elapsed < 120, done.stderr
    return done, first_line(done), out


def qemu_board_with(tmp_path: Path, name: str, behaviour: str) -> Path:
    script = tmp_path / name
    script.write_text(f"#!{sys.executable}\nimport os, signal, socket, sys, time\nargv = sys.argv[1:]\n"
                      f"if True:{behaviour}\nos.execvp('qemu-system-arm', ['qemu-system-arm', *argv])\n")
    script.chmod(0o755)
    board = tmp_path / f"{name}.toml"
    board.write_text((REPO / "boards" / "qemu.toml").read_text().replace(
        'executable = "qemu-system-arm"', f'executable = "{script}"'))
    return board


def test_qemu_killed_at_connect_is_named_before_the_debugger(hil, variant, tmp_path):  # noqa: F811
    done, line, out = run_with_qemu(hil, variant(), tmp_path, "qemu-killed", KILL_AT_CONNECT)
    assert line.startswith(f"hil run: board 'qemu': QEMU was killed by SIGKILL (signal 9); last lines of {out}/qemu.log:")
    assert "the debugger then said:" in line, done.stderr
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error"].startswith("board 'qemu': QEMU was killed by SIGKILL")
    assert {"qemu.log", "mi.log"} <= set(kept["files"])


def test_a_stray_client_on_qemus_uart_is_named(hil, variant, tmp_path):  # noqa: F811
    done, line, out = run_with_qemu(hil, variant(), tmp_path, "qemu-stray", STRAY_CLIENT)
    assert "QEMU's UART (tcp port " in line and "is busy: another client holds it" in line, done.stderr
    assert "(qemu-stray)" in line and "no console output" not in done.stderr  # the holder named, by its name
    assert manifest(out)["status"] == "failed"
    deadline = time.monotonic() + 5
    while [cmd for cmd in processes_tagged(hil.tag) if "qemu-stray" in cmd] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [cmd for cmd in processes_tagged(hil.tag) if "qemu-stray" in cmd]  # the stray ended with QEMU


def test_qemu_killed_at_the_breakpoint_fails_the_read_out_instead_of_reading_the_elf(variant, tmp_path):  # noqa: F811
    from hil.boards.qemu import REBUILD_HINT, QemuBoard
    from hil.config.board_config import load_board_config
    from hil.base.errors import TargetError
    from hil.target.capture import RunContext, read_out_etdump
    from hil.target.run_config import RunPlan, run_planned

    cfg, elf = load_board_config("qemu"), variant()
    board = QemuBoard(cfg, tmp_path)
    try:
        board.flash(elf)
        gdb, serial = board.attach()
        ctx = RunContext(cfg.name, cfg.breakpoint, serial, board.mi_log, elf)
        run_planned(gdb, ctx, RunPlan(1), time.monotonic() + 60, rebuild=REBUILD_HINT)  # at hil_etdump_ready
        qemu = board._qemu.process.popen  # noqa: SLF001  (the test kills the real QEMU under the board)
        qemu.kill()
        qemu.wait(timeout=30)
        with pytest.raises(TargetError) as caught:
            read_out_etdump(gdb, ctx, cfg.result_expr, cfg.ram_regions, tmp_path / "trace.etdump")
    finally:
        board.close()
    assert "the target is gone" in str(caught.value)
    assert not (tmp_path / "trace.etdump").exists() and not list(tmp_path.glob(".hil-dump-*"))


# --- row 13: SIGTERM, SIGINT, SIGHUP, and a killed read-out's leftovers -----------------------------

@pytest.mark.parametrize(("signum", "named"), [(signal.SIGTERM, "signal 15 (SIGTERM)"),
                                               (signal.SIGINT, "signal 2 (SIGINT)"), (signal.SIGHUP, "signal 1 (SIGHUP)")])
def test_a_signal_ends_the_run_within_2_s_and_the_manifest_names_it(hil, variant, tmp_path, signum, named):  # noqa: F811
    out = tmp_path / "run"
    run = hil.popen(*RUN, "--iterations", "1", "--elf", str(variant(fault="hang")), "--out", str(out),
                    "--timeout", "120")
    try:
        deadline = time.monotonic() + 120
        while '"func":"hil_config_ready"' not in read(out / "mi.log"):  # the target is up and running
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.05)
        start = time.monotonic()
        run.send_signal(signum)  # Ctrl-C's SIGINT used to leave the error as "interrupted by " (issue 32)
        status = run.wait(timeout=60)
        elapsed = time.monotonic() - start
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert status == 130 and elapsed < 2.0
    assert "hil run: interrupted" in run.stderr.read()
    kept = manifest(out)
    assert kept["status"] == "failed" and kept["error"] == f"interrupted by {named}"
    assert kept["error_kind"] == "interrupted"


def test_a_killed_read_outs_partial_goes_when_the_next_command_opens_the_folder(hil, tmp_path):
    out = tmp_path / "run"
    done, _ = hil(*RUN, "--iterations", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    for command in (("inspect", str(out)), (*RUN, "--iterations", "1", "--out", str(out))):
        partial = out / ".hil-dump-k1ll3d.partial"  # what gdb's dump leaves when the run is SIGKILLed mid-read-out
        partial.write_bytes(bytes(100))
        done, elapsed = hil(*command)
        assert done.returncode == 0 and elapsed < 120, done.stderr
        assert not partial.exists()


def test_make_setup_installs_cmake():  # `make firmware` needs it (>= 3.24; Debian 12 has 3.25)
    makefile = (REPO / "Makefile").read_text().replace("\\\n", " ")
    packages = next(line for line in makefile.splitlines() if line.startswith("APT_PACKAGES :="))
    assert "cmake" in packages.split()

