"""Profile / Event: profile.json read and written again is the same bytes; the dict view still reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hil.analysis.profile_model import SCHEMA, Event, Profile, history_profile

FIXTURES = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "profiles").glob("*.json"))


def _written(obj) -> bytes:
    """How hil.atomic.write_json lays profile.json out (the format the fixtures were written in)."""
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
