"""hil.records.validate: what each kind of file must hold, against files written by hand in this test.

The profile, manifest and database rows here are typed out (not made by the harness), so each rule is
checked against a file whose every field the test chose; each refusal is one FileContentError (exit
status 2 in the CLI) naming the file and the field.
"""

from __future__ import annotations

import copy
import sqlite3
from pathlib import Path

import pytest

from hil.cli.main import exit_code_for
from hil.base.errors import FileContentError
from hil.records.validate.history import check_event_row, check_header, check_run_row, check_tables
from hil.records.validate.manifest import check_manifest, check_simulation
from hil.records.validate.profile import check_baseline, check_profile

PROFILE = {
    "schema": "et-hil/profile/1", "board": "qemu", "model": "net", "simulated": True, "iterations": 2,
    "time_unit": "us", "time_scale": {"ticks_per_us": 1000.0, "neutron_ticks_per_us": 1000.0, "follows_clock": False,
                                      "unit": "us"},
    "events": [
        {"name": "Method::execute", "kind": "method", "method": "forward", "op_types": [], "times_us": [10.0, 12.0],
         "p50_us": 11.0, "delegate_debug_id": None, "instruction_id": 0},
        {"name": "native_call_add.out", "kind": "cpu_op", "method": "forward", "op_types": ["aten.add.Tensor"],
         "times_us": [4.0, 5.0], "call_overhead_us": [0.5, 0.25], "instruction_id": 1},
        {"name": "0", "kind": "npu_kernel", "op_types": ["aten.relu.default"], "times_us": [1.0, 1.0],
         "delegate_debug_id": "conv#1", "delegate_backend_name": "NeutronSimBackend"},
    ],
    "totals_us": {"method_execute": 11.0, "unattributed": -0.5},  # events on two clocks can leave a negative rest
    "npu_fraction": 0.09, "methods": {"forward": {"iterations": 2, "totals_us": {"method_execute": 11.0}}},
    "cpu_fallback_ops": ["aten.add.Tensor"], "warnings": [], "notes": [], "memory": {}, "console": None,
}


def _edited(path: tuple, value: object = ..., data: dict = PROFILE) -> dict:
    """A copy of `data` with the field at `path` set to `value` (deleted for `...`)."""
    copied = copy.deepcopy(data)
    parent = copied
    for key in path[:-1]:
        parent = parent[key]
    if value is ...:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return copied


def test_a_profile_as_the_harness_writes_it_is_accepted_and_returned_as_is():
    assert check_profile(PROFILE, "p.json") is PROFILE
    history_like = _edited(("events", 0, "times_us"))  # statistics only, as rebuilt from the history
    assert check_profile(history_like, "p.json") == history_like


@pytest.mark.parametrize(("path", "value", "says"), [
    (("events", 0, "times_us", 1), "12", "events[0].times_us[1] is '12', not a number"),
    (("events", 0, "times_us", 1), True, "events[0].times_us[1] is true, not a number"),
    (("events", 1, "times_us", 0), -1.0, "events[1].times_us[0] is -1.0, not a number >= 0"),
    (("events", 1, "call_overhead_us", 1), float("nan"), "events[1].call_overhead_us[1] = nan; figures must be finite"),
    (("events", 0, "p50_us"), 10**400, "events[0].p50_us = 1000000000000000000000000000000000000000...; figures"),
    (("events", 2, "kind"), "gpu_kernel", "events[2].kind is 'gpu_kernel', not one of method, cpu_op, delegate_call"),
    (("events", 2, "name"), 0, "events[2].name is 0, not a string"),
    (("events", 2, "name"), ..., "events[2].name is null, not a string"),
    (("events", 1, "op_types"), "aten.add.Tensor", "events[1].op_types is 'aten.add.Tensor', not a list"),
    (("events", 2, "delegate_debug_id"), [1], "events[2].delegate_debug_id is a list, not a whole number or a string"),
    (("events", 1), [], "events[1] is a list, not an object"),
    (("events",), {}, "events is an object, not a list"),
    (("events",), ..., "events is null, not a list"),
    (("schema",), "et-hil/profile/2", "schema is 'et-hil/profile/2', not one of et-hil/profile/1"),
    (("iterations",), 2.5, "iterations is 2.5, not a whole number >= 0"),
    (("time_scale", "ticks_per_us"), 0, "time_scale.ticks_per_us is 0, not a number > 0"),
    (("time_scale", "ticks_per_us"), ..., "time_scale.ticks_per_us is null, not a number"),
    (("totals_us", "method_execute"), float("inf"), "totals_us.method_execute = inf; figures must be finite"),
    (("npu_fraction",), -0.1, "npu_fraction is -0.1, not a number >= 0"),
    (("methods", "forward"), 3, "methods.forward is 3, not an object"),
    (("cpu_fallback_ops",), [None], "cpu_fallback_ops[0] is null, not a string"),
    (("console",), "Program complete", "console is 'Program complete', not an object"),
])
def test_a_profile_field_of_the_wrong_kind_is_named(path, value, says):
    with pytest.raises(FileContentError) as refused:
        check_profile(_edited(path, value), "run/profile.json")
    assert str(refused.value).startswith(f"run/profile.json: {says}")
    assert exit_code_for(refused.value) == 2 and "\n" not in str(refused.value)


def test_a_profile_must_time_a_method():
    no_method = {**PROFILE, "events": PROFILE["events"][1:]}
    with pytest.raises(FileContentError, match=r"^p.json: events hold no Method::execute event: the profile times"):
        check_profile(no_method, "p.json")


def test_a_baseline_names_the_field_inside_its_profile():
    baseline = {"schema": "et-hil/baseline/1", "provenance": {"git_commit": "c0ffee"}, "profile": PROFILE}
    assert check_baseline(baseline, "b.json") is baseline
    with pytest.raises(FileContentError, match=r"^b.json: profile.events\[0\].times_us\[0\] is 'x', not a number$"):
        check_baseline(_edited(("profile", "events", 0, "times_us", 0), "x", baseline), "b.json")
    with pytest.raises(FileContentError, match=r"^b.json: provenance is a list, not an object$"):
        check_baseline({**baseline, "provenance": []}, "b.json")


MANIFEST = {"schema": "et-hil/manifest/1", "board": "qemu", "model": "cifar10", "iterations": 5, "warmup": 1,
            "status": "passed", "simulated": True, "time_scale": {"ticks_per_us": 324.0, "follows_clock": True},
            "files": {"trace.etdump": {"sha256": "ab" * 32, "size": 7464}},
            "etdump_crc32": {"checked": True, "firmware": "0x41712500", "read": "0x41712500"}}


def test_manifests_old_new_and_of_failed_runs_are_accepted():
    assert check_manifest(MANIFEST, "m.json") is MANIFEST
    assert check_manifest({"board": "qemu", "model": "x", "status": "failed", "error": "boom"}, "m.json")
    assert check_manifest({}, "m.json") == {}  # a run from before manifests said much


@pytest.mark.parametrize(("path", "value", "says"), [
    (("time_scale", "ticks_per_us"), "fast", "time_scale.ticks_per_us is 'fast', not a number"),
    (("time_scale", "neutron_ticks_per_us"), -250, "time_scale.neutron_ticks_per_us is -250, not a number > 0"),
    (("time_scale",), [324], "time_scale is a list, not an object"),
    (("warmup",), -1, "warmup is -1, not a whole number >= 0"),
    (("board",), {"name": "qemu"}, "board is an object, not a string"),
    (("simulated",), "yes", "simulated is 'yes', not true or false"),
    (("files", "trace.etdump", "sha256"), "AB" * 32, "files.trace.etdump.sha256 is 'ABABABAB"),
    (("files", "trace.etdump"), "ab" * 32, "files.trace.etdump is 'abababab"),
    (("etdump_crc32", "checked"), 1, "etdump_crc32.checked is 1, not true or false"),
    (("schema",), "et-hil/profile/1", "schema is 'et-hil/profile/1', not et-hil/manifest/N"),
])
def test_a_manifest_field_of_the_wrong_kind_is_named(path, value, says):
    with pytest.raises(FileContentError) as refused:
        check_manifest(_edited(path, value, MANIFEST), "run/manifest.json")
    assert str(refused.value).startswith(f"run/manifest.json: {says}")


def test_simulation_json_must_name_its_clock():
    assert check_simulation({"clock_mhz": 500, "npu_clock_mhz": 250}, "s.json")
    with pytest.raises(FileContentError, match=r"^s.json: clock_mhz is null, not a number$"):
        check_simulation({"npu_clock_mhz": 250}, "s.json")


# --- history rows -----------------------------------------------------------------------------------------

RUN_ROW = {"id": 7, "time": "2026-01-01T02:00:00Z", "board": "qemu", "model": "net", "git_commit": None,
           "simulated": 1, "iterations": 5, "total_us": 11.0, "npu_fraction": None, "passed": 1, "artifacts": None,
           "totals": '{"method_execute": 11.0}', "memory": "{}", "versions": None, "time_scale": "",
           "comparison": '{"decision": {"status": "pass", "reason": "pass"}, "events": []}'}


def test_a_history_row_is_decoded():
    decoded = check_run_row(RUN_ROW, "h.db")
    assert decoded["totals"] == {"method_execute": 11.0} and decoded["versions"] == {} == decoded["time_scale"]
    assert decoded["comparison"]["decision"]["status"] == "pass"
    assert check_run_row({**RUN_ROW, "comparison": None}, "h.db")["comparison"] is None


@pytest.mark.parametrize(("column", "value", "says"), [
    ("totals", '{"method_execute": 1', "totals is not JSON (Expecting ',' delimiter"),
    ("totals", "[1, 2]", "totals is a list, not an object"),
    ("totals", b"{}", "totals is b'{}', not JSON text"),
    ("total_us", "11.0", "total_us is '11.0', not a number"),
    ("total_us", -3.0, "total_us is -3.0, not a number >= 0"),
    ("passed", None, "passed is null, not a whole number >= 0"),
    ("model", 3, "model is 3, not a string"),
    ("comparison", '{"decision": "pass"}', "comparison.decision is 'pass', not an object"),
    ("comparison", '{"events": [{"verdict": "regression", "name": "x", "kind": "cpu_op", "op_types": "-", '
                   '"change_pct": "12%"}]}', "comparison.events[0].change_pct is '12%', not a number"),
])
def test_a_history_row_of_the_wrong_kind_names_the_run_and_column(column, value, says):
    with pytest.raises(FileContentError) as refused:
        check_run_row({**RUN_ROW, column: value}, "h.db")
    assert str(refused.value).startswith(f"history database h.db, run 7: {says}")


def test_a_history_event_row_names_its_key():
    row = {"run_id": 7, "seq": 0, "key": "cpu_op:add#0", "kind": "cpu_op", "name": "add", "op_types": '["aten.add"]',
           "delegate_debug_id": None, "n": 5, "p50_us": 1.0, "p90_us": None, "min_us": 0.5, "max_us": 2.0,
           "mad_us": 0.1, "mean_us": 1.1}
    assert check_event_row(row, "h.db")["op_types"] == ["aten.add"]
    with pytest.raises(FileContentError, match=r"^history database h.db, run 7: event cpu_op:add#0.p50_us is 'fast', "):
        check_event_row({**row, "p50_us": "fast"}, "h.db")
    with pytest.raises(FileContentError, match=r"^history database h.db, run 7: event 0.key is null, not a string$"):
        check_event_row({**row, "key": None}, "h.db")


def test_only_an_sqlite_file_with_both_tables_is_a_history(tmp_path: Path):
    db = tmp_path / "h.db"
    sqlite3.connect(db).execute("CREATE TABLE runs (id INTEGER)").connection.commit()
    check_header(db.read_bytes()[:16], db)  # sqlite.org/fileformat.html: "SQLite format 3\0"
    with pytest.raises(FileContentError, match=r"not an SQLite database \(an empty file\)"):
        check_header(b"", db)
    with pytest.raises(FileContentError, match=r"not an SQLite database \(it starts with b'\{\"runs\": \[\]\}'\)"):
        check_header(b'{"runs": []}', db)
    with pytest.raises(FileContentError, match=r"table 'runs' has no column time, board, model"):
        check_tables({"runs": {"id"}, "events": {"run_id"}}, db)
    with pytest.raises(FileContentError, match=r"no table 'events': not an et-hil history database"):
        check_tables({"runs": set(RUN_ROW), "events": set()}, db)
