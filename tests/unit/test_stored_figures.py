"""Stored figures against their times, on hand-made profiles whose figures are worked out here by hand:
a delegate overhead the rounding leaves undecided is accepted either way, a decided one must agree."""

from __future__ import annotations

import json
from pathlib import Path

from profile_mutants import hil


def _event(kind: str, name: str, time: float, **extra: object) -> dict:
    """An event timed `time` us in each of 3 iterations: every statistic is `time`, the MAD 0."""
    return {"name": name, "kind": kind, "method": "forward", "op_types": [], "instruction_id": 0,
            "times_us": [time] * 3, "p50_us": time, "p90_us": time, "min_us": time, "max_us": time, "mad_us": 0.0,
            "mean_us": time, **extra}


def _profile(dump_us: float, delegate_overhead: float) -> dict:
    """Method::execute 20 us holding one delegate call of 10 us: a 6 us kernel and a dump of `dump_us`."""
    return {"schema": "et-hil/profile/1", "board": "qemu", "model": "m", "iterations": 3, "time_unit": "us",
            "events": [_event("method", "Method::execute", 20.0), _event("delegate_call", "DELEGATE_CALL", 10.0),
                       _event("npu_kernel", "0", 6.0), _event("profiling_dump", "1", dump_us)],
            "totals_us": {"method_execute": 20.0, "npu_kernels": 6.0, "delegate_ops": 0.0, "cpu_ops": 0.0,
                          "cpu_call_overhead": 0.0, "delegate_calls": 10.0, "delegate_overhead": delegate_overhead,
                          "profiling_dump": dump_us, "unattributed": 10.0},
            "npu_fraction": 0.3}


def _compare(tmp_path: Path, profile: dict) -> tuple[int, str]:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(profile))
    code, _, err = hil("compare", path, path)
    return code, err


def test_a_dump_that_fits_its_call_exactly_leaves_the_overhead_to_the_unrounded_times(tmp_path):
    # 10 - 6 - 4 = 0: unrounded times 10.0004, 6.0002, 4.0004 leave -0.0002, and the overhead is then the call
    # minus its kernel, 4.0002 (hil.analysis.totals.call_overhead); 9.9996, 6.0, 3.9998 leave 0 beside the dump
    for overhead in (0.0, 4.0):
        code, err = _compare(tmp_path, _profile(4.0, overhead))
        assert code == 0, err


def test_a_dump_that_clearly_fits_must_give_the_stored_overhead(tmp_path):
    code, err = _compare(tmp_path, _profile(3.0, 1.0))  # 10 - 6 - 3 = 1 us beside the dump
    assert code == 0, err
    code, err = _compare(tmp_path, _profile(3.0, 4.0))
    assert code == 2
    assert err == (f"hil compare: {tmp_path / 'profile.json'}: totals_us.delegate_overhead is 4.0, but the events' "
                   "times give 1 (a stored figure must agree with the times within 0.0025 us, their rounding)\n")


def test_a_stored_statistic_off_by_more_than_its_rounding_is_refused_and_within_it_is_read(tmp_path):
    profile = _profile(3.0, 1.0)
    profile["events"][2]["mean_us"] = 6.0014  # within 3 x 0.5 ns: the most rounding can move a statistic
    assert _compare(tmp_path, profile)[0] == 0
    profile["events"][2]["mean_us"] = 6.002
    code, err = _compare(tmp_path, profile)
    assert code == 2 and err.startswith(f"hil compare: {tmp_path / 'profile.json'}: events[2].mean_us is 6.002, but its "
                                        "times_us give 6 (a stored figure must agree with the times within 0.0015 us")
