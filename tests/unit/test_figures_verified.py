"""Every figure judged is a figure verified (issue 43, point 3): `hil compare`, `hil trace`, `hil inspect RUN`, the
gate and `hil report` check what they read against the sha256s a run's manifest lists, the manifest against its own
digest, and each history row against its checksum, before any figure is used.

Each damage is planted by the test in a copy of a run folder or history the test made, and the verdict it must get is
the test's own: a changed file must be refused in one line naming it and both sha256s (hashlib, here); a manifest
that parses to another JSON value must be refused, one that parses to the same value must change nothing; a history
cell that reads back otherwise must get its run named and left out. The round (tests/unit/test_figures_round.py)
puts 200+ mutants of each file through each command and counts silent differences: there must be none.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from profile_mutants import hil

from hil.base.errors import HilError


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """reader_seeds' run folders with their manifests as this et-hil writes them (sealed, a footprint recorded),
    and their history (written through hil.regress.history, so each row carries its checksum)."""
    from reader_seeds import make_seeds

    from hil.records.manifest import write_sealed

    made = make_seeds(tmp_path_factory.mktemp("sealed"))
    for name in ("cpu", "npu"):
        manifest = json.loads((made[name] / "manifest.json").read_text())
        manifest["footprint"] = {"stack": {"used_bytes": 2352, "size_bytes": 8192, "free_bytes": 5840}}
        write_sealed(made[name], manifest)
    return made


def _copy(seed: Path, where: Path) -> Path:
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(seed, where)
    return where


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_one_changed_byte_in_an_event_name_is_refused_by_compare_trace_inspect_and_the_gate(seeds, tmp_path):
    """The audit's case: one byte of an event name changed gave exit 0, the event left out of the judgement."""
    from hil.regress.judge import JudgeOptions, judge_run

    folder = _copy(seeds["npu"], tmp_path / "run")
    profile, manifest = folder / "profile.json", folder / "manifest.json"
    recorded = sha256(profile)
    profile.write_bytes(profile.read_bytes().replace(b'"name": "Method::execute"', b'"name": "Method::executf"', 1))
    changed = sha256(profile)
    line = f"{profile}: sha256 {changed} differs from the {recorded} {manifest} records: the file changed after the run"
    for argv, name in ((("compare", seeds["npu"], folder), "compare"), (("compare", folder, seeds["npu"]), "compare"),
                       (("compare", seeds["npu"], profile), "compare"), (("trace", folder), "trace")):
        assert hil(*argv) == (2, "", f"hil {name}: {line}\n"), argv
    assert not (folder / "trace.json").exists()
    assert hil("inspect", folder, "--json") == (3, "", f"hil inspect: {line}\n")  # inspect's evidence: exit 3
    db = tmp_path / "history.db"
    with pytest.raises(HilError) as refused:
        judge_run(folder, JudgeOptions(history=db), marker_budget=None, test_passed=True)
    assert str(refused.value) == line and not db.exists()  # refused before anything was recorded


@pytest.mark.parametrize("field, value", [("warmup", 2), ("footprint", {"stack": {"used_bytes": 9999}}),
                                          ("numerics", {"status": "ok"}), ("annotations", {"firmware": "runtime"})])
def test_a_figure_the_manifest_alone_holds_is_refused_when_changed(seeds, tmp_path, field, value):
    """warm-up 0 -> 2 printed "iterations 5 -> 3", stack 2352 -> 9999 printed as is: now refused, naming the
    manifest and the digest it carries, by `hil inspect` and `hil compare` alike."""
    folder = _copy(seeds["npu"], tmp_path / "run")
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest[field] = value
    path.write_text(json.dumps(manifest, indent=2))
    for argv, name in ((("inspect", folder, "--json"), "inspect"), (("compare", seeds["npu"], folder), "compare")):
        code, out, err = hil(*argv)
        assert (code, out) == (2, ""), err
        assert re.fullmatch(rf"hil {name}: {re.escape(str(path))}: its fields hash to sha256 [0-9a-f]{{64}}, but its "
                            rf"manifest_sha256 is {manifest['manifest_sha256']}: the manifest changed after the run\n",
                            err), err


def test_a_manifest_without_its_digest_is_refused_and_one_written_before_digests_is_read(seeds, tmp_path):
    folder = _copy(seeds["npu"], tmp_path / "run")
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["manifest_sha256"]
    path.write_text(json.dumps(manifest))
    assert hil("compare", seeds["npu"], folder) == (
        2, "", f"hil compare: {path}: schema 'et-hil/manifest/2' but no manifest_sha256: the manifest's digest of its "
               "own fields was removed, so none of them can be verified\n")
    manifest["schema"] = "et-hil/manifest/1"  # as an et-hil before digests wrote it: read, unverified, as then
    path.write_text(json.dumps(manifest))
    assert hil("compare", seeds["npu"], folder)[0] == 0
    assert hil("inspect", folder, "--json")[0] == 0


def test_a_reformatted_manifest_holds_the_same_figures_and_is_read(seeds, tmp_path):
    folder = _copy(seeds["npu"], tmp_path / "run")
    path = folder / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text()), sort_keys=True, separators=(",", ":")))
    code, out, err = hil("inspect", folder, "--json")
    assert (code, err) == (0, "") and json.loads(out) == json.loads(hil("inspect", seeds["npu"], "--json")[1])


def _history_copy(seeds: dict[str, Path], tmp_path: Path) -> Path:
    db = tmp_path / "history.db"
    shutil.copyfile(seeds["history.db"], db)
    return db


def test_a_changed_figure_in_a_history_row_is_named_and_left_out_of_the_report_and_the_gate(seeds, tmp_path):
    from hil.regress import history
    from hil.regress.timebase import TimeBase

    db = _history_copy(seeds, tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    (run_id, model, base, time, total), = conn.execute(
        "SELECT id, model, time_base, time, total_us FROM runs WHERE passed = 1 ORDER BY id DESC LIMIT 1").fetchall()
    conn.execute("UPDATE runs SET total_us = ? WHERE id = ?", (total * 0.5, run_id))
    conn.close()
    code, out, err = hil("report", db, "--out", tmp_path / "r.html")
    named = f"history database {db}, run {run_id} (recorded {time}, run folder -): its cells give checksum v1:"
    assert code == 0 and err.startswith(f"hil report: warning: {named}") and len(err.splitlines()) == 1, err
    page = (tmp_path / "r.html").read_text()
    assert "6 run(s) of" in page and "Left out, damaged" in page  # 7 recorded, 1 left out
    recent = history.recent_runs(db, model, "qemu", TimeBase.parse(base), 10)
    assert run_id not in recent.ids and len(recent.ids) == 2 and recent.damaged[0].startswith(named)


def test_a_history_written_before_checksums_is_unverified_until_the_next_run_seals_it(seeds, tmp_path):
    from hil.regress import history

    db = _history_copy(seeds, tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE runs SET checksum = NULL")
    conn.execute("PRAGMA user_version = 0")
    conn.close()
    code, _, err = hil("report", db, "--out", tmp_path / "r.html")
    assert (code, err) == (0, "") and "7 run(s) written before the history kept checksums: unverified" in (
        tmp_path / "r.html").read_text()
    history.record_run(db, json.loads((seeds["cpu"] / "profile.json").read_text()), {}, passed=True)
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute("SELECT count(*) FROM runs WHERE checksum IS NULL").fetchone()[0] == 0
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.execute("UPDATE runs SET checksum = NULL WHERE id = 2")  # sealed since: a missing checksum is damage
    conn.close()
    code, _, err = hil("report", db, "--out", tmp_path / "r.html")
    assert code == 0 and err == (f"hil report: warning: history database {db}, run 2 (recorded 2026-01-01T02:00:00Z, "
                                 "run folder -): its checksum is missing (every row of this history carries one): "
                                 "left out\n")
