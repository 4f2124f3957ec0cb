"""Every reader of a file a user or an earlier run provides refuses instead of crashing: property tests.

profile.json into `hil trace`, `hil compare` (either side) and `hil baseline update`, a baseline file
into `hil compare`, manifest.json into `hil inspect RUN_DIR`, `hil compare` and `hil baseline update`,
and history.db into `hil report`: each damaged as a hand edit, a half-written file or another
version's writer would (a field deleted or given another type, NaN, a huge number, cut bytes, a
SQLite cell of any type, a dropped table, a foreign file). For each the command, run through the
CLI's own `main` in this process, must end with its exit status (0 or 1 for a file it can use, 2
for one it refuses, 3 for a run folder whose files no longer match their manifest) and a refusal
must be one line naming the damaged file; any other exception is a traceback a user would have seen.

Seeded (`derandomize=True`: the same examples every run, no example database) and bounded, so they
run inside `make test` in seconds.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profile_mutants import Round, Tally, hil, mutants

PROPERTY = settings(derandomize=True, database=None, max_examples=80, deadline=timedelta(seconds=10),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
# `hil inspect` runs the Inspector (and flatc) per example: fewer of those.
SLOW_PROPERTY = settings(PROPERTY, max_examples=40, deadline=timedelta(seconds=30))


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from reader_seeds import make_seeds

    return make_seeds(tmp_path_factory.mktemp("seeds"))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scratch")


def assert_refused_in_one_line(code: int, err: str, command: str, path: Path, allowed: tuple[int, ...] = (2,)) -> None:
    assert code in allowed, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"hil {command}: ") and str(path) in err, err


# --- JSON, damaged ------------------------------------------------------------------------------------

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["method", "npu_kernel", "cpu_op", "forward", "Method::execute", "NaN", "1e999", "0" * 400]),
    st.lists(st.one_of(st.integers(-5, 5), st.floats(), st.text(max_size=3), st.none()), max_size=3),
    st.dictionaries(st.sampled_from(["ticks_per_us", "times_us", "kind", "x"]), st.integers(-5, 5), max_size=2),
)


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in children:
        found += _paths(child, (*path, key))
    return found


@st.composite
def mutated(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with one to three of its fields (at any depth) deleted or replaced by any JSON value."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)[1:]
        if not paths:
            break
        path = paths[draw(st.integers(0, len(paths) - 1))]
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.integers(0, 3)) == 0:
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(VALUES)
    return doc


@st.composite
def damaged_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` cut short, or with a few bytes overwritten."""
    blob = bytearray(data)
    at = draw(st.integers(0, len(blob)))
    if draw(st.booleans()):
        del blob[at:]
    else:
        blob[at:at + 4] = draw(st.binary(min_size=1, max_size=4))
    return bytes(blob)


def damaged_json(path: Path) -> st.SearchStrategy[bytes]:
    """The JSON file at `path` with its fields damaged (mostly), or its bytes."""
    text = path.read_bytes()
    fields = mutated(json.loads(text)).map(lambda doc: json.dumps(doc).encode())
    return st.one_of(fields, fields, fields, damaged_bytes(text))


def _copy(seed: Path, scratch: Path, name: str) -> Path:
    folder = scratch / name
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(seed, folder)
    return folder


def _strict_json(text: str) -> Any:
    """JSON as a standard reader takes it: NaN and Infinity are no numbers."""
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the output")

    return json.loads(text, parse_constant=refuse)


# --- profile.json and baselines into trace / compare / baseline update ----------------------------------

REGRESS_COMMANDS = ["trace", "compare A-B", "compare B-A", "baseline update"]


def _regress(command: str, damaged: Path, good: Path, scratch: Path) -> tuple[str, tuple[int, str, str]]:
    """Run `command` on the damaged run (`damaged`: a folder, or a profile or baseline file) and a good one."""
    if command == "trace":
        return "trace", hil("trace", damaged)
    if command == "compare A-B":
        return "compare", hil("compare", good, damaged)
    if command == "compare B-A":
        return "compare", hil("compare", damaged, good)
    return "baseline", hil("baseline", "update", damaged, "--out", scratch / "baselines")


@pytest.mark.parametrize("command", REGRESS_COMMANDS)
@pytest.mark.parametrize("seed", ["cpu", "npu"])
def test_a_damaged_profile_is_used_or_refused_in_one_line(seeds, scratch, seed, command):
    @PROPERTY
    @given(st.data(), st.booleans())
    def check(data: st.DataObject, as_file: bool) -> None:
        folder = _copy(seeds[seed], scratch, "run")
        (folder / "profile.json").write_bytes(data.draw(damaged_json(seeds[seed] / "profile.json")))
        given_as = folder / "profile.json" if as_file and command != "trace" else folder  # trace takes a folder
        name, (code, out, err) = _regress(command, given_as, seeds[seed], scratch)
        if code in (0, 1):
            assert "Traceback" not in err
            if name == "trace":
                assert _strict_json((folder / "trace.json").read_text())["traceEvents"]
            return
        assert_refused_in_one_line(code, err, name, folder)

    check()


@pytest.mark.parametrize("command", ["compare A-B", "compare B-A"])
def test_a_damaged_baseline_file_is_used_or_refused_in_one_line(seeds, scratch, command):
    baseline = scratch / "seed-baseline" / "npu.json"
    code, _, err = hil("baseline", "update", seeds["npu"], "--out", baseline)
    assert code == 0, err

    @PROPERTY
    @given(st.data())
    def check(data: st.DataObject) -> None:
        damaged = scratch / "damaged-baseline.json"
        damaged.write_bytes(data.draw(damaged_json(baseline)))
        name, (code, _, err) = _regress(command, damaged, seeds["npu"], scratch)
        if code not in (0, 1):
            assert_refused_in_one_line(code, err, name, damaged)

    check()


# Every mutant of the run lowered to the simulated Neutron backend (its 1,972), every 5th of the CPU-only one.
ROUND = {"npu": 1, "cpu": 5}


def test_a_round_of_profile_mutants_is_refused_or_shown_never_a_traceback_nor_a_silent_change(seeds, scratch):
    """Each field of profile.json deleted, given each other JSON type and NaN, each number changed
    (tests/unit/profile_mutants.py), into `hil trace`, `hil compare` (either side) and `hil baseline
    update`: no exception escapes, a refusal is exit 2 in one line naming the file, a baseline that
    `baseline update` wrote is read by `hil compare`, and no number change is accepted with the output
    of the unchanged profile (exit status, both streams, trace.json, the baseline file) by a command
    that reads that number. In-process: 44 s of CPU with the seeds (134 s wall at load average 7-11)."""
    tally = Tally()
    for name, step in ROUND.items():
        round_ = Round(name, seeds[name], scratch)
        round_.run(mutants(round_.profile)[::step], tally)
    assert tally.mutants >= 2000 and tally.number_changes >= 400
    assert tally.crashes == []
    assert tally.bad_refusals == []
    assert tally.unreadable_baselines == []
    assert tally.unnoticed == []
    assert tally.refused > tally.mutants / 2  # most damage is refused, not merely survived


# --- manifest.json into inspect / compare / baseline update ---------------------------------------------

@pytest.mark.parametrize("seed", ["cpu", "npu"])
def test_a_damaged_manifest_is_used_or_refused_in_one_line_by_inspect(seeds, scratch, seed):
    @SLOW_PROPERTY
    @given(st.data(), st.booleans())
    def check(data: st.DataObject, no_verify: bool) -> None:
        folder = _copy(seeds[seed], scratch, "run")
        (folder / "manifest.json").write_bytes(data.draw(damaged_json(seeds[seed] / "manifest.json")))
        code, out, err = hil("inspect", folder, "--json", *(["--no-verify"] if no_verify else []))
        if code == 0:
            assert _strict_json(out)["events"]
            return
        # 3: a file no longer matches the sha256 its manifest gives (hil.records.evidence)
        assert_refused_in_one_line(code, err, "inspect", folder, allowed=(2, 3))

    check()


@pytest.mark.parametrize("command", ["compare A-B", "baseline update"])
def test_a_damaged_manifest_is_used_or_refused_in_one_line_by_the_regression_commands(seeds, scratch, command):
    @PROPERTY
    @given(st.data())
    def check(data: st.DataObject) -> None:
        folder = _copy(seeds["npu"], scratch, "run")
        (folder / "manifest.json").write_bytes(data.draw(damaged_json(seeds["npu"] / "manifest.json")))
        name, (code, _, err) = _regress(command, folder, seeds["npu"], scratch)
        if code not in (0, 1):
            assert_refused_in_one_line(code, err, name, folder / "manifest.json")

    check()


@pytest.mark.parametrize("name", ["trace.etdump", "etrecord.bin", "model.pte", "serial.log"])
def test_every_size_change_of_a_file_the_analysis_reads_is_refused_before_its_sha256(seeds, scratch, name):
    """A wrong `files.*.size` was accepted (20 of an audit's manifest mutants): each is refused, naming both sizes."""
    folder = _copy(seeds["npu"], scratch, "sizes")
    manifest = json.loads((folder / "manifest.json").read_text())
    size = (folder / name).stat().st_size
    for wrong in (size + 1, size - 1, 0, size * 2):
        manifest["files"][name]["size"] = wrong
        (folder / "manifest.json").write_text(json.dumps(manifest))
        code, _, err = hil("inspect", folder, "--json")
        assert (code, err) == (3, f"hil inspect: {folder / name}: {size} bytes, but {folder / 'manifest.json'} says "
                                  f"{wrong}: the file or its manifest changed after the run\n")


def test_a_manifest_without_the_neutron_clock_reads_neutron_ticks_at_the_cpu_clock(seeds, scratch):
    folder = _copy(seeds["npu"], scratch, "no-neutron-clock")
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["time_scale"]["neutron_ticks_per_us"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = hil("inspect", folder, "--json")
    assert code == 0, err
    scale = json.loads(out)["time_scale"]
    assert scale["ticks_per_us"] == scale["neutron_ticks_per_us"] == 324.0  # the run's clock, for both


# --- history.db into report -------------------------------------------------------------------------------

CELLS = st.one_of(
    st.none(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), st.sampled_from([math.inf, -math.inf]),
    st.text(max_size=6), st.binary(max_size=6),
    st.sampled_from(["{", "[]", "{}", "null", "1", '{"decision": 5}', '{"events": [{"verdict": "regression"}]}',
                     '{"ticks_per_us": -1}', '["x", 1]', "[" * 3000, '{"a": NaN}']),
)
TABLES = {"runs": ("time", "board", "model", "git_commit", "simulated", "iterations", "total_us", "npu_fraction",
                   "totals", "memory", "versions", "passed", "artifacts", "comparison", "time_scale"),
          "events": ("seq", "key", "kind", "name", "op_types", "delegate_debug_id", "n", "p50_us", "p90_us",
                     "min_us", "max_us", "mad_us", "mean_us")}
STATEMENTS = ["DROP TABLE events", "DROP TABLE runs", "ALTER TABLE runs DROP COLUMN totals", "DELETE FROM runs",
              "DELETE FROM events",
              # TEXT that is no UTF-8 (another writer's encoding): Python's sqlite3 cannot even return the row
              "UPDATE runs SET comparison = CAST(X'7B22FF22' AS TEXT) WHERE id = 2",
              "UPDATE events SET name = CAST(X'C328' AS TEXT) WHERE seq = 1"]


@st.composite
def damaged_history(draw: st.DrawFn, db: Path) -> bytes:
    """The history at `db` after cells of any type were written into its rows, a statement, or byte damage."""
    how = draw(st.sampled_from(["cells", "cells", "cells", "statement", "bytes", "foreign"]))
    if how == "bytes":
        return draw(damaged_bytes(db.read_bytes()))
    if how == "foreign":
        return draw(st.sampled_from([b"", b"lab-host-1\n", b"SQLite format 3\x00" + bytes(84), b'{"runs": []}']))
    work = db.with_name(f"{db.name}.work")
    shutil.copyfile(db, work)
    conn = sqlite3.connect(work, isolation_level=None)
    try:
        if how == "statement":
            conn.execute(draw(st.sampled_from(STATEMENTS)))
        for _ in range(draw(st.integers(1, 3)) if how == "cells" else 0):
            table = draw(st.sampled_from(sorted(TABLES)))
            rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            column, cell, row = draw(st.sampled_from(TABLES[table])), draw(CELLS), draw(st.integers(1, rows))
            with contextlib.suppress(sqlite3.IntegrityError):  # a NOT NULL column keeps its value
                conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (cell, row))
    finally:
        conn.close()
    return work.read_bytes()


def test_a_damaged_history_is_reported_or_refused_in_one_line_and_never_written(seeds, scratch):
    @PROPERTY
    @given(st.data())
    def check(data: st.DataObject) -> None:
        db = scratch / "history.db"
        db.write_bytes(data.draw(damaged_history(seeds["history.db"])))
        before = db.read_bytes()
        report = scratch / "report.html"
        report.unlink(missing_ok=True)
        code, _, err = hil("report", db, "--out", report)
        assert db.read_bytes() == before  # a reader never writes the database
        if code == 0:
            assert report.read_text().startswith("<!DOCTYPE html>")
            return
        assert_refused_in_one_line(code, err, "report", db)
        assert not report.exists()

    check()


def test_the_seed_files_are_read_as_they_are(seeds, scratch):
    """Undamaged, every command above succeeds (so the refusals above are the damage's)."""
    assert hil("trace", _copy(seeds["npu"], scratch, "good"))[0] == 0
    assert hil("compare", seeds["cpu"], seeds["cpu"])[0] == 0
    assert hil("inspect", seeds["npu"], "--json")[0] == 0
    code, _, err = hil("report", seeds["history.db"], "--out", scratch / "good.html")
    assert code == 0, err
    assert "npu on qemu" in (scratch / "good.html").read_text()  # the group whose only run failed is drawn too


def test_the_inspectors_unmapped_delegate_lines_are_one_warning_and_never_printed(seeds, capfd, caplog):
    """A dump with delegate calls read against a CPU-only program's ETRecord: the Inspector logs a line per
    delegated event; they become one warning naming the ETRecord and the instruction ids, and reach no
    other handler (caplog stands for a project's own logging set-up)."""
    from hil.analysis.blocks import inspect_etdump, read_etrecord
    from hil.analysis.profile import read_etdump

    dump, etrecord = seeds["npu"] / "trace.etdump", seeds["cpu"] / "etrecord.bin"
    inspected = inspect_etdump(read_etdump(dump), dump, etrecord, read_etrecord(etrecord))
    unmapped = [w for w in inspected.warnings if "no delegate mapping" in w]
    # The int8 program's delegate calls are instructions 1 and 5; the CPU program has no instruction 5, which the
    # Inspector passes over without a line (executorch/devtools/inspector/_inspector.py, _gen_resolve_debug_handles).
    assert len(unmapped) == 1 and f"in ETRecord {etrecord} (instruction id(s) 1)" in unmapped[0], inspected.warnings
    assert "No delegate mapping" not in capfd.readouterr().err
    assert not [r for r in caplog.records if "No delegate mapping" in r.getMessage()]
