"""The fault matrix, reader rows: files a user or an earlier run hands back to `hil`, damaged or foreign.

As in tests/system/test_fault_matrix.py, each row runs `hil ...` in a child process as a user does and
asserts the exit status (hil.cli.main's contract: 2 for a file the user gave that cannot be used), one line
naming the file and what is wrong, no traceback, a generous time bound, no process left behind, and
that nothing it was given was changed (sha256 of every planted file, computed here with hashlib).
The run folders are made once by `hil run` on the QEMU board.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
from pathlib import Path

import pytest
from test_fault_matrix import REPO, Hil, first_line, hil  # noqa: F401  (hil: the fixture, tagged and orphan-checked)

RUN = ("run", "--board", "qemu", "--model", "cifar10", "--iterations", "2")


def hashes(*paths: Path) -> dict[str, str]:
    """sha256 of every file under `paths` (a symlink as the link, not its target)."""
    found = {}
    for root in paths:
        for path in sorted([root, *root.rglob("*")] if root.is_dir() else [root]):
            if path.is_symlink():
                found[str(path)] = "link -> " + os.readlink(path)
            elif path.is_file():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def one_line(done, status: int = 2) -> str:
    """The command's one stderr line, after checking its exit status and that it printed nothing else."""
    assert done.returncode == status, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return first_line(done)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real runs of cifar10 on the QEMU board: CPU only, and int8 lowered to the simulated Neutron backend."""
    root = tmp_path_factory.mktemp("runs")
    made = {}
    for name, extra in (("cpu", ("--no-delegate",)), ("npu", ("--quantize",))):
        done, _ = Hil()(*RUN, *extra, "--out", str(root / name), timeout=900)
        assert done.returncode == 0, done.stderr
        made[name] = root / name
    return made


@pytest.fixture
def run(runs, tmp_path) -> Path:
    """A copy of the CPU-only run the test may damage."""
    return Path(shutil.copytree(runs["cpu"], tmp_path / "run"))


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _edit_copied_profile(run: Path, edit) -> None:
    """profile.json edited and read as a copy (its manifest gone): in the run folder its sha256 would refuse it
    before any field is read (tests/unit/test_figures_verified.py); these rows are about the fields."""
    (run / "manifest.json").unlink()
    _edit_json(run / "profile.json", edit)


def _edit_older_manifest(path: Path, edit) -> None:
    """manifest.json edited as one an et-hil before manifest digests wrote it (schema /1, no manifest_sha256):
    a sealed one would be refused for any edit (hil.records.manifest_seal); these rows are about the fields."""
    def older(manifest: dict) -> None:
        del manifest["manifest_sha256"]
        manifest["schema"] = "et-hil/manifest/1"
        edit(manifest)

    _edit_json(path, older)


# --- profile.json into trace / compare / baseline update ----------------------------------------------------

@pytest.mark.parametrize("command", ["trace", "compare", "baseline"])
def test_a_profile_with_a_field_of_the_wrong_type_is_refused_naming_the_field(hil, runs, run, tmp_path, command):
    _edit_copied_profile(run, lambda p: p["events"][1].update(times_us=["fast", 2.0]))
    planted = hashes(run)
    args = {"trace": ("trace", str(run)), "compare": ("compare", str(runs["cpu"]), str(run)),
            "baseline": ("baseline", "update", str(run), "--out", str(tmp_path / "baselines"))}[command]
    done, elapsed = hil(*args)
    line = one_line(done)
    assert line == f"hil {command}: {run / 'profile.json'}: events[1].times_us[0] is 'fast', not a number"
    assert elapsed < 60 and hashes(run) == planted  # nothing written into the folder (no trace.json)
    assert not (tmp_path / "baselines").exists()


@pytest.mark.parametrize("command", ["compare", "baseline"])
@pytest.mark.parametrize(("numerics", "shown"), [([], "a list"), ("computed", "'computed'")])
def test_a_profile_whose_numerics_is_no_object_is_refused_by_compare_and_baseline_update(hil, runs, run, tmp_path,
                                                                                         command, numerics, shown):
    """compare raised AttributeError (exit 1: "regression"); baseline update stored it for every later compare."""
    _edit_copied_profile(run, lambda p: p.update(numerics=numerics))
    planted = hashes(run)
    args = {"compare": ("compare", str(runs["cpu"]), str(run)),
            "baseline": ("baseline", "update", str(run), "--out", str(tmp_path / "baselines"))}[command]
    done, elapsed = hil(*args)
    assert one_line(done) == f"hil {command}: {run / 'profile.json'}: numerics is {shown}, not an object"
    assert elapsed < 60 and hashes(run) == planted and not (tmp_path / "baselines").exists()


STORED = r"\(a stored figure must agree with the times within [0-9.]+ us, their rounding\)"


@pytest.mark.parametrize("command", ["trace", "compare", "baseline"])
def test_a_profile_whose_stored_median_is_not_its_times_median_is_refused_naming_the_field(hil, runs, run, tmp_path,
                                                                                           command):
    """compare and trace took the median from the times again and never looked at the stored one (issue 32)."""
    times = json.loads((run / "profile.json").read_text())["events"][1]["times_us"]
    _edit_copied_profile(run, lambda p: p["events"][1].update(p50_us=round(statistics.median(times) + 1.5, 3)))
    planted = hashes(run)
    args = {"trace": ("trace", str(run)), "compare": ("compare", str(runs["cpu"]), str(run)),
            "baseline": ("baseline", "update", str(run), "--out", str(tmp_path / "baselines"))}[command]
    done, elapsed = hil(*args)
    stored = round(statistics.median(times) + 1.5, 3)
    assert re.fullmatch(rf"hil {command}: {re.escape(str(run / 'profile.json'))}: events\[1\]\.p50_us is {stored}, but "
                        rf"its times_us give {round(statistics.median(times), 6):.15g} {STORED}", one_line(done))
    assert elapsed < 60 and hashes(run) == planted and not (tmp_path / "baselines").exists()


def test_a_profile_whose_total_is_not_its_times_total_is_refused_by_compare(hil, runs, run):
    profile = json.loads((run / "profile.json").read_text())
    method = next(e for e in profile["events"] if e["kind"] == "method")["times_us"]  # one Method::execute event
    _edit_copied_profile(run, lambda p: p["totals_us"].update(method_execute=p["totals_us"]["method_execute"] + 9))
    done, elapsed = hil("compare", str(runs["cpu"]), str(run))
    assert re.fullmatch(rf"hil compare: {re.escape(str(run / 'profile.json'))}: totals_us\.method_execute is "
                        rf"{profile['totals_us']['method_execute'] + 9}, but the events' times give "
                        rf"{round(statistics.median(method), 6):.15g} {STORED}", one_line(done))
    assert elapsed < 60


def test_a_baseline_file_whose_statistics_were_edited_is_refused_by_compare(hil, runs, tmp_path):
    baseline = tmp_path / "cifar10.json"
    done, _ = hil("baseline", "update", str(runs["cpu"]), "--out", str(baseline))
    assert done.returncode == 0, done.stderr
    _edit_json(baseline, lambda b: b["profile"]["events"][0].update(max_us=b["profile"]["events"][0]["max_us"] * 2))
    times = json.loads(baseline.read_text())["profile"]["events"][0]["times_us"]
    done, elapsed = hil("compare", str(baseline), str(runs["cpu"]))
    assert re.fullmatch(rf"hil compare: {re.escape(str(baseline))}: profile\.events\[0\]\.max_us is [0-9.]+, but its "
                        rf"times_us give {max(times):.15g} {STORED}", one_line(done))
    assert elapsed < 60


def test_a_profile_without_a_method_execute_event_is_refused(hil, run):
    _edit_copied_profile(run, lambda p: p.update(events=[e for e in p["events"] if e["kind"] != "method"]))
    done, elapsed = hil("compare", str(run), str(run))
    assert one_line(done).endswith("profile.json: events hold no Method::execute event: the profile times nothing")
    assert elapsed < 60


# --- manifest.json into inspect ---------------------------------------------------------------------------

def test_inspect_reads_a_manifest_without_the_neutron_clock_and_refuses_a_clock_that_is_no_number(hil, runs, tmp_path):
    folder = Path(shutil.copytree(runs["npu"], tmp_path / "npu"))
    recorded = json.loads((folder / "manifest.json").read_text())["time_scale"]
    _edit_older_manifest(folder / "manifest.json", lambda m: m["time_scale"].pop("neutron_ticks_per_us"))
    done, elapsed = hil("inspect", str(folder), "--json", timeout=300)
    assert done.returncode == 0 and elapsed < 120, done.stderr
    scale = json.loads(done.stdout)["time_scale"]  # Neutron ticks counted at the CPU's rate, as documented
    assert scale["ticks_per_us"] == scale["neutron_ticks_per_us"] == recorded["ticks_per_us"]
    _edit_json(folder / "manifest.json", lambda m: m["time_scale"].update(ticks_per_us="fast"))
    done, elapsed = hil("inspect", str(folder), timeout=300)
    assert one_line(done) == f"hil inspect: {folder / 'manifest.json'}: time_scale.ticks_per_us is 'fast', not a number"
    assert elapsed < 120


@pytest.mark.parametrize(("given", "offset", "kind"), [
    (("{run}", "--pte", "{log}"), 4, "is not an ExecuTorch program (.pte)"),  # the flatbuffer's file identifier
    (("{log}", "--etrecord", "{run}/etrecord.bin"), 8, "is not an ETDump (a size-prefixed flatbuffer)"),  # after the size
])
def test_inspect_refuses_a_console_log_given_as_a_flatbuffer_before_the_import(hil, runs, given, offset, kind):
    log = runs["cpu"] / "serial.log"
    found = log.read_bytes()[offset:offset + 4]
    want = b"ET12" if offset == 4 else b"ED00"
    done, elapsed = hil("inspect", *(word.format(run=runs["cpu"], log=log) for word in given))
    assert one_line(done) == f"hil inspect: {log} {kind}: file identifier {found!r} at offset {offset}, not {want!r}"
    assert elapsed < 5  # refused before torch's and executorch's import (14.6 s before, issue 32)


def test_inspect_refuses_a_console_log_given_as_the_etrecord_before_the_import(hil, runs):
    log = runs["cpu"] / "serial.log"
    done, elapsed = hil("inspect", str(runs["cpu"] / "trace.etdump"), "--etrecord", str(log))
    assert one_line(done) == (f"hil inspect: ETRecord {log} is not an ETRecord (a zip file): it starts with"
                              f" {log.read_bytes()[:4]!r}")
    assert elapsed < 5


def test_inspect_refuses_a_manifest_whose_file_size_is_wrong(hil, run):
    dump, where = run / "trace.etdump", run / "manifest.json"
    size = dump.stat().st_size
    _edit_older_manifest(where, lambda m: m["files"]["trace.etdump"].update(size=size - 1))  # the sha256 still the file's own
    planted = hashes(run)
    done, elapsed = hil("inspect", str(run), timeout=300)
    assert one_line(done, status=3) == (f"hil inspect: {dump}: {size} bytes, but {where} says {size - 1}: the file or "
                                        "its manifest changed after the run")
    assert elapsed < 120 and hashes(run) == planted


def test_inspect_with_another_programs_etrecord_prints_its_one_error_line_only(hil, runs):
    done, elapsed = hil("inspect", str(runs["npu"] / "trace.etdump"), "--etrecord", str(runs["cpu"] / "etrecord.bin"),
                        timeout=300)
    line = one_line(done)  # the Inspector's "No delegate mapping found" lines no longer reach the terminal
    assert "does not belong to ETRecord" in line and "No delegate mapping" not in done.stderr
    assert elapsed < 120


# --- history.db into report -------------------------------------------------------------------------------

@pytest.fixture
def history(runs, tmp_path) -> Path:
    """A history of three runs, written by the pytest plugin's own writer."""
    from hil.regress.history import record_run

    db = tmp_path / "history.db"
    profile = json.loads((runs["cpu"] / "profile.json").read_text())
    for night in range(3):
        record_run(db, profile, {"written_at": f"2026-01-0{night + 1}T02:00:00Z"}, passed=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")  # one file to damage
    conn.close()
    return db


def test_report_refuses_an_empty_file_and_leaves_it_empty(hil, tmp_path):
    empty = tmp_path / "history.db"
    empty.touch()
    done, elapsed = hil("report", str(empty), "--out", str(tmp_path / "report.html"))
    assert one_line(done) == (f"hil report: history database {empty}: not an SQLite database (an empty file); "
                              "it is written by pytest --hil-history")
    assert elapsed < 30 and empty.stat().st_size == 0 and sorted(tmp_path.iterdir()) == [empty]


def test_report_refuses_a_malformed_database(hil, history, tmp_path):
    data = bytearray(history.read_bytes())
    data[4096:4096 + 64] = b"\xa5" * 64  # the second page: a b-tree page no longer
    history.write_bytes(bytes(data))
    planted = hashes(history)
    done, elapsed = hil("report", str(history), "--out", str(tmp_path / "report.html"))
    assert re.fullmatch(rf"hil report: history database {re.escape(str(history))}: .*malformed.*", one_line(done))
    assert elapsed < 30 and hashes(history) == planted and not (tmp_path / "report.html").exists()


def test_report_refuses_bad_json_in_a_column_naming_the_run_and_column(hil, history, tmp_path):
    conn = sqlite3.connect(history, isolation_level=None)
    conn.execute("UPDATE runs SET totals = '{\"method_execute\": 12' WHERE id = 2")
    conn.close()
    done, elapsed = hil("report", str(history), "--out", str(tmp_path / "report.html"))  # its checksum names it
    assert done.returncode == 0 and done.stderr.startswith(f"hil report: warning: history database {history}, run 2 ")
    conn = sqlite3.connect(history, isolation_level=None)  # as a history written before checksums: refused whole
    conn.execute("UPDATE runs SET checksum = NULL")
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    planted = hashes(history)
    done, elapsed = hil("report", str(history), "--out", str(tmp_path / "report.html"))
    assert one_line(done).startswith(f"hil report: history database {history}, run 2: totals is not JSON (")
    assert elapsed < 30 and hashes(history) == planted


# A read-only folder or file in a user and mount namespace of its own (root ignores permission bits):
# `$1` is bind-mounted onto itself, then remounted read-only, for the command that follows.
READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 97; shift; exec "$@"'


def read_only(path: Path) -> tuple[str, ...]:
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True,
                           timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace for a read-only bind mount: {probe.stderr.decode().strip()}")
    return ("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", READ_ONLY, "sh", str(path))


@pytest.fixture
def wal_history(runs, tmp_path) -> Path:
    """Three runs in a history kept in WAL mode, as the plugin's own writer leaves it (no -wal once closed)."""
    from hil.regress.history import record_run

    db = tmp_path / "shared" / "history.db"
    profile = json.loads((runs["cpu"] / "profile.json").read_text())
    for night in range(3):
        record_run(db, profile, {"written_at": f"2026-01-0{night + 1}T02:00:00Z"}, passed=True)
    (db.parent / "history.db.lock").unlink()  # the writer's set-up lock: a read-only folder holds the database alone
    assert db.read_bytes()[18:20] == b"\x02\x02"  # WAL: file format read and write versions 2 (sqlite.org/fileformat)
    return db


@pytest.mark.parametrize("what", ["folder", "file"])
def test_report_reads_a_wal_history_in_a_read_only_folder_or_file(hil, wal_history, tmp_path, what):
    planted = hashes(wal_history.parent)
    out = tmp_path / "report.html"
    done, elapsed = hil("report", str(wal_history), "--out", str(out),
                        prefix=read_only(wal_history.parent if what == "folder" else wal_history))
    assert done.returncode == 0 and elapsed < 60, done.stderr  # was: "unable to open database file", exit 2
    assert out.read_text().count("2026-01-0") >= 3  # the three nights, read from the database
    assert {k: v for k, v in hashes(wal_history.parent).items() if not k.endswith(("-wal", "-shm"))} == planted


def test_report_refuses_a_write_ahead_log_it_cannot_read_in_a_read_only_folder(hil, wal_history, tmp_path):
    copy = tmp_path / "archived"
    copy.mkdir()
    writer = sqlite3.connect(wal_history, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE runs SET board = 'qemu' WHERE id = 3")  # a change held in history.db-wal only
    for name in ("history.db", "history.db-wal"):
        shutil.copy(wal_history.parent / name, copy / name)  # archived while the writer had it open
    writer.close()
    planted = hashes(copy)
    done, elapsed = hil("report", str(copy / "history.db"), "--out", str(tmp_path / "report.html"),
                        prefix=read_only(copy))
    assert one_line(done) == (f"hil report: history database {copy / 'history.db'}: its write-ahead log "
                              f"{copy / 'history.db-wal'} holds changes not yet in the database, and {copy} cannot be "
                              "written, so SQLite cannot read them: copy the folder somewhere writable")
    assert elapsed < 60 and hashes(copy) == planted and not (tmp_path / "report.html").exists()


# --- outputs that cannot be written, copies that would destroy ----------------------------------------------

def test_baseline_update_into_a_path_through_a_file_is_refused(hil, run, tmp_path):
    (tmp_path / "hostname").write_text("lab-host-1\n")
    done, elapsed = hil("baseline", "update", str(run), "--out", str(tmp_path / "hostname" / "x.json"))
    assert one_line(done) == f"hil baseline: --out {tmp_path / 'hostname'}: a file, not a folder"
    assert elapsed < 30 and (tmp_path / "hostname").read_text() == "lab-host-1\n"


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_firmware_sources_force_refuses_to_replace_what_is_not_a_folder_before_copying(hil, tmp_path, kind):
    out, target = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    target.mkdir()
    (target / "mine.c").write_text("int mine;\n")
    if kind == "symlink":
        (out / "common").symlink_to(target)
    else:
        (out / "common").write_text("notes\n")
    planted = hashes(out, target)
    done, elapsed = hil("firmware-sources", "--out", str(out), "--force")
    what = "a symbolic link" if kind == "symlink" else "a file"
    assert one_line(done) == (f"hil firmware-sources: {out / 'common'} is {what}, not a folder of sources: remove it "
                              "first (--force replaces folders only)")
    assert elapsed < 30 and hashes(out, target) == planted  # rt700/ not copied, the link's target untouched


def test_firmware_sources_into_a_file_is_refused(hil, tmp_path):
    (tmp_path / "hostname").write_text("lab-host-1\n")
    done, elapsed = hil("firmware-sources", "--out", str(tmp_path / "hostname"))
    assert one_line(done) == f"hil firmware-sources: --out {tmp_path / 'hostname'}: a file, not a folder"
    assert elapsed < 30


# --- a .pte that is none, a board file with a BOM, a tool that is not the tool --------------------------------

def test_check_image_refuses_a_model_that_is_no_pte(hil, runs, tmp_path):
    (tmp_path / "hostname").write_text("lab-host-1\n")
    elf = json.loads((runs["cpu"] / "manifest.json").read_text())["firmware"]
    done, elapsed = hil("check-image", elf, "--board", "qemu", "--model", str(tmp_path / "hostname"))
    assert one_line(done) == (f"check-image: {tmp_path / 'hostname'} is not an ExecuTorch program (.pte): "
                              "file identifier b'host' at offset 4, not b'ET12'")
    assert elapsed < 30


def test_a_board_file_with_a_utf8_bom_is_read(hil, qemu_board_file):
    board = qemu_board_file()
    board.write_bytes(b"\xef\xbb\xbf" + board.read_bytes())
    done, elapsed = hil("doctor", "--board-config", str(board))
    assert done.returncode == 0 and elapsed < 60, done.stdout + done.stderr
    assert f"ok       board file: {board} (schema checked)" in done.stdout


def test_doctor_runs_gdb_and_refuses_one_that_is_not_gdb(hil, qemu_board_file):
    board = qemu_board_file(**{'gdb = "gdb-multiarch"': 'gdb = "/bin/false"'})
    done, elapsed = hil("doctor", "--board-config", str(board))
    assert done.returncode == 3 and elapsed < 60 and "Traceback" not in done.stderr
    assert "  MISSING  GDB: `/bin/false --version` exited with status 1" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("hil doctor: MISSING GDB (")
