"""The comparison text a CI log shows, written out by hand: the numerics line under the headline, the
"cannot judge" table after the regressions, and how many rows a table shows by default."""

from __future__ import annotations

from hil.regress.compare import Comparison, EventDelta, compare_profiles, compare_runs, format_comparison

# What hil.numerics.gate.snr_drop says when the outputs got worse (its wording, a 40 -> 30 dB drop).
SNR_DROP = "output SNR vs eager PyTorch dropped from 40.0 dB to 30.0 dB (more than 3 dB)"


def _regression(name: str, baseline_us: float, now_us: float) -> EventDelta:
    """A slower CPU operator that the within-run rule convicted."""
    return EventDelta(f"cpu_op:{name}#0", "cpu_op", name, "-", baseline_us, now_us, 1.0, "regression", None, "within-run")


def test_a_numerics_drop_is_said_right_under_the_headline_before_the_notes():
    text = format_comparison(Comparison([], 0.05, 3.0, 0.0, ["baseline: 1 run(s)", "now: 1 run(s)"],
                                        numerics_drop=SNR_DROP))
    assert text.splitlines() == [
        "0 regression(s), 0 improvement(s) among 0 events (tolerance 5%, noise 3 sigma)",
        "numerics regression: output SNR vs eager PyTorch dropped from 40.0 dB to 30.0 dB (more than 3 dB)",
        "baseline: 1 run(s)",
        "now: 1 run(s)",
    ]


def test_events_no_rule_could_decide_follow_the_regressions_in_their_own_table():
    kernel = EventDelta("npu_kernel:0#0", "npu_kernel", "npu kernel 0", "aten.addmm.default", 80.0, 96.0, 2.0,
                        "regression", 0.05, "rank")
    # measured in 1 iteration, 4 us slower, the rank test needs 2 more baseline runs
    blind = EventDelta("cpu_op:native_call_add.out#0", "cpu_op", "native_call_add.out", "aten.add.Tensor", 10.0, 14.0,
                       0.5, "cannot judge", None, None, 2)
    text = format_comparison(Comparison([kernel, blind], 0.05, 3.0, 0.0, ["a note"]))
    # change % = 100 x (96 - 80) / 80 = +20.0 and 100 x (14 - 10) / 10 = +40.0
    assert text.splitlines() == [
        "1 regression(s), 0 improvement(s) among 2 events (tolerance 5%, noise 3 sigma)",
        "a note",
        "",
        "worst regressions (of 1):",
        "event         kind        op types            baseline us  now us  change %  added us  noise us     p",
        "------------  ----------  ------------------  -----------  ------  --------  --------  --------  ----",
        "npu kernel 0  npu_kernel  aten.addmm.default         80.0    96.0     +20.0     +16.0       2.0  0.05",
        "",
        "cannot judge: 2 more baseline run(s) needed (slower, of 1):",
        "event                kind    op types         baseline us  now us  change %  added us  noise us  p",
        "-------------------  ------  ---------------  -----------  ------  --------  --------  --------  -",
        "native_call_add.out  cpu_op  aten.add.Tensor         10.0    14.0     +40.0      +4.0       0.5  -",
    ]


def test_a_table_shows_the_ten_largest_by_default_and_counts_them_all():
    # op 1 .. op 11, each k us slower than its 100 us: op 11 adds most, op 1 least and is left out.
    eleven = [_regression(f"op {k}", 100.0, 100.0 + k) for k in range(1, 12)]
    lines = format_comparison(Comparison(eleven, 0.05, 3.0)).splitlines()
    assert lines[:2] == ["11 regression(s), 0 improvement(s) among 11 events (tolerance 5%, noise 3 sigma)", ""]
    assert lines[2] == "worst regressions (of 11):"
    shown = [line.split("  ")[0] for line in lines[5:]]
    assert shown == ["op 11", "op 10", "op 9", "op 8", "op 7", "op 6", "op 5", "op 4", "op 3", "op 2"]
    assert [line.split("  ")[0] for line in format_comparison(Comparison(eleven), limit=2).splitlines()[5:]] == [
        "op 11", "op 10"]


def test_the_limits_given_to_a_one_run_comparison_are_the_ones_it_judges_by():
    from test_regress_synth import synth_profile

    # kernel 1 10% slower: a regression at the default 5% tolerance (test_regress_compare), not at 50%
    lenient = compare_profiles(synth_profile(1), synth_profile(2, slow={("npu_kernel", "1", 0): 1.10}), tolerance=0.5)
    assert (lenient.tolerance, lenient.regressions) == (0.5, [])
    assert format_comparison(lenient).splitlines()[0].endswith("(tolerance 50%, noise 3 sigma)")


def _loaded(scale: float) -> Comparison:
    """4 identical baseline runs on host time (no jitter) against one run with every time x `scale`."""
    from test_regress_across_runs import runs

    return compare_runs(runs(range(4), jitter=0.0), runs([9], jitter=0.0, scale=scale))


def test_a_new_run_exactly_20_percent_slower_as_a_whole_is_still_judged_with_its_limits_widened():
    comparison = _loaded(1.2)  # the edge of machine load
    assert not comparison.disturbed and comparison.notes[2:] == [
        "new run(s) 20% slower as a whole (machine load): every limit widened by as much"]
    assert {d.verdict for d in comparison.deltas} == {"unchanged"}


def test_the_load_note_says_the_percentage_from_2_percent_on():
    # x 1.184: 18.4% said as "18%"; x 1.02: a 2% load, the least that is worth a note
    assert _loaded(1.184).notes[2:] == ["new run(s) 18% slower as a whole (machine load): every limit widened by as much"]
    assert _loaded(1.02).notes[2:] == ["new run(s) 2% slower as a whole (machine load): every limit widened by as much"]
