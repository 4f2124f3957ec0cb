"""Profile / Event: profile.json read and written again is the same bytes; the dict view still reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hil.records.profile_model import SCHEMA, Event, Profile, history_profile

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "profiles").glob("*.json"))


def _written(obj) -> bytes:
    """How hil.base.atomic.write_json lays profile.json out (the format the fixtures were written in)."""
    return (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode()


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_a_committed_profile_round_trips_byte_for_byte(path):
    raw = path.read_bytes()
    profile = Profile.read(path)
    assert _written(profile.to_json()) == raw
    assert profile == json.loads(raw)  # the mapping view is the JSON itself
    assert all(isinstance(e, Event) for e in profile.events)


def test_the_typed_fields_are_the_json_values():
    path = next(p for p in FIXTURES if p.stem == "runtime_neutron_sim")
    data = json.loads(path.read_bytes())
    profile = Profile.read(path)
    assert profile.schema == SCHEMA == data["schema"]
    assert (profile.board, profile.model, profile.delegate, profile.firmware) == \
        (data["board"], data["model"], data["delegate"], data["firmware"])
    assert dict(profile.time_base) == data["time_base"] and profile.simulated is data["simulated"]
    assert profile.totals_us["method_execute"] == data["totals_us"]["method_execute"]
    assert [e.kind for e in profile.events] == [e["kind"] for e in data["events"]]
    assert list(profile.events[0].times_us) == data["events"][0]["times_us"]
    assert profile.delegated_outputs == data["delegated_outputs"] and not profile.extra
    assert profile["totals_us"]["method_execute"] == data["totals_us"]["method_execute"]  # the README's read


def test_unknown_and_numerics_sections_survive_in_place():
    data = {"schema": SCHEMA, "board": "qemu", "numerics": {"outputs": [{"max_abs": 0.5}]}, "future": [1, {"a": None}],
            "events": [{"name": "Method::execute", "kind": "method", "new_event_key": True, "times_us": [1.0, 2.5]}],
            "totals_us": {"method_execute": 1.75}}
    profile = Profile.from_json(data)
    assert list(profile.to_json()) == list(data) and profile.to_json() == data
    assert profile.numerics["outputs"][0]["max_abs"] == 0.5


def test_the_view_is_read_only_and_fresh():
    profile = Profile.from_json({"events": [{"name": "x", "kind": "cpu_op", "times_us": [1.0]}], "warnings": [],
                                 "totals_us": {"method_execute": 2.0}, "memory": {"allocators": {"a": {"used": 1}}}})
    view = profile["events"]
    view[0]["times_us"].append(99.0)
    assert profile["events"][0]["times_us"] == [1.0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.board = "rt700"  # type: ignore[misc]
    with pytest.raises(TypeError):
        profile.totals_us["method_execute"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        profile.memory["allocators"]["a"]["used"] = 2  # type: ignore[index]
    assert "warmup_iterations" not in profile and profile.get("warmup_iterations") is None


def test_a_new_field_is_written_after_the_keys_read():
    profile = Profile.from_json({"schema": SCHEMA, "iterations": 5, "harness_steps_s": {"aot": 1.0}})
    trimmed = profile.replace(iterations=3, warmup_iterations=2)
    assert list(trimmed.to_json()) == ["schema", "iterations", "harness_steps_s", "warmup_iterations"]
    assert trimmed["iterations"] == 3


def test_a_profile_from_history_has_the_same_event_type_without_times():
    run = {"board": "qemu", "model": "m", "simulated": 1, "iterations": 5, "totals": {"method_execute": 10.0},
           "npu_fraction": None, "memory": {}, "time_scale": {}}
    rows = [{"seq": 0, "key": "method:Method::execute#0", "kind": "method", "name": "Method::execute",
             "op_types": [], "p50_us": 10.0, "mad_us": 0.5, "min_us": 9.0}]
    profile = history_profile(run, rows)
    (event,) = profile.events
    assert isinstance(event, Event) and event.times_us is None
    assert event.spread == (10.0, 0.5) and event.fastest == 9.0
    assert profile.simulated is True and profile.schema == SCHEMA


def test_a_null_collection_reads_empty_and_is_written_back_as_null():
    data = {"schema": SCHEMA, "events": [{"name": "x", "kind": "cpu_op", "op_types": None, "times_us": [1.0]}],
            "totals_us": None, "warnings": None}
    profile = Profile.from_json(data)
    assert profile.events[0].op_types == () and dict(profile.totals_us) == {} and profile.warnings == ()
    assert profile.to_json() == data and list(profile.to_json()) == list(data)
    assert profile.replace(warnings=["w"]).to_json()["warnings"] == ["w"]


def test_a_history_row_becomes_the_profile_json_written_out_by_hand():
    run = {"id": 7, "board": "rt700", "model": "ds_cnn", "simulated": 0, "iterations": 10, "time": "2026-11-30",
           "totals": {"method_execute": 812.5, "npu_kernels": 700.0}, "npu_fraction": 0.86,
           "memory": {"planned_bytes": 4096}, "time_scale": {"ticks_per_us": 500.0}, "numerics": {"snr_db": 41.5}}
    rows = [{"kind": "npu_kernel", "name": "Neutron::conv", "op_types": ["conv2d"], "p50_us": 700.0, "mad_us": 1.0}]
    assert history_profile(run, rows).to_json() == {
        "schema": "et-hil/profile/1", "board": "rt700", "model": "ds_cnn", "simulated": False, "iterations": 10,
        "time_unit": "us",
        "events": [{"kind": "npu_kernel", "name": "Neutron::conv", "op_types": ["conv2d"], "p50_us": 700.0,
                    "mad_us": 1.0}],
        "totals_us": {"method_execute": 812.5, "npu_kernels": 700.0}, "npu_fraction": 0.86,
        "memory": {"planned_bytes": 4096}, "time_scale": {"ticks_per_us": 500.0}, "numerics": {"snr_db": 41.5}}
    bare = history_profile({"board": "qemu", "model": "m", "totals": None, "memory": None, "time_scale": None}, [])
    assert bare.to_json() == {"schema": "et-hil/profile/1", "board": "qemu", "model": "m", "simulated": False,
                              "iterations": None, "time_unit": "us", "events": [], "totals_us": {},
                              "npu_fraction": None, "memory": {}, "time_scale": {}, "numerics": {}}


def test_events_are_picked_by_method_and_kind_and_totals_read_with_a_default():
    profile = Profile.from_json({"events": [
        {"name": "a", "kind": "cpu_op", "method": "forward"}, {"name": "b", "kind": "npu_kernel"},
        {"name": "c", "kind": "cpu_op", "method": "decode"}, {"name": "d", "kind": "method", "method": "decode"}],
        "totals_us": {"method_execute": 12.5, "npu_kernels": None}})
    assert [e.name for e in profile.events_of("forward")] == ["a", "b"]  # an event without a method is forward's
    assert [e.name for e in profile.events_of("decode")] == ["c", "d"] and profile.events_of("init") == ()
    assert [e.name for e in profile.of_kind("cpu_op")] == ["a", "c"]
    assert [e.name for e in profile.of_kind("npu_kernel", "method")] == ["b", "d"]
    assert profile.total("method_execute") == 12.5 and profile.method_execute_us == 12.5
    assert profile.total("npu_kernels") == 0.0 and profile.total("cpu_ops", default=-1.0) == -1.0
    assert profile.total("npu_kernels", 3.0) == 3.0  # a null total is no figure


def test_statistics_are_taken_again_from_the_times_only_when_there_are_times():
    # times 4, 1, 3, 2: sorted 1 2 3 4, median 2.5; |x - 2.5| = 1.5 .5 .5 1.5, MAD 1.0; mean 2.5
    event = Event.from_json({"name": "x", "kind": "cpu_op", "times_us": [4.0, 1.0, 3.0, 2.0], "p50_us": 99.0})
    redone = event.with_statistics()
    assert (redone.p50_us, redone.min_us, redone.max_us, redone.mad_us, redone.mean_us) == (2.5, 1.0, 4.0, 1.0, 2.5)
    kept = Event.from_json({"name": "y", "kind": "cpu_op", "p50_us": 7.0, "mad_us": 0.25})
    assert kept.with_statistics().to_json() == {"name": "y", "kind": "cpu_op", "p50_us": 7.0, "mad_us": 0.25}
    cut = event.without_first(2)
    assert cut.times_us == (3.0, 2.0) and cut.p50_us == 2.5 and cut.min_us == 2.0
