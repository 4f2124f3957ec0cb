"""The report (one offline HTML file), trace.json (Chrome trace format), JUnit properties and OpenMetrics."""

from __future__ import annotations

import json
import re

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from hil.analysis.warmup import recompute_totals
from hil.base import atomic
from hil.records.profile_model import as_profile
from hil.regress import history
from hil.regress.compare import compare_profiles, comparison_to_dict
from hil.report.figures import junit_properties, key_figures, openmetrics_text
from hil.report.html import write_report
from hil.report.trace import TRACKS, build_trace, write_trace_json
from html_dom import read
from test_regress_synth import synth_profile

# A marked run's marker on a trend and its tooltip (hil.report.marks: regression, not judged, failed).
MARKED = r'<(?:circle|polygon) class="mark-[a-z-]+"[^>]*><title>([^<]*)</title>'


@pytest.fixture
def nightly_db(tmp_path):
    """Eight nights of two models; night 6 of synthnet has a 30% slower NPU kernel 2, recorded against a baseline."""
    db = tmp_path / "history.db"
    base = synth_profile(seed=999)
    for night in range(8):
        for model in ("synthnet", "othernet"):
            slow = {("npu_kernel", "2", 0): 1.3} if (model == "synthnet" and night == 6) else None
            profile = synth_profile(seed=night, model=model, slow=slow)
            cmp = comparison_to_dict(compare_profiles(base, profile)) if model == "synthnet" else None
            history.record_run(db, profile, {"written_at": f"2026-03-{night + 1:02d}T02:00:00Z", "git_commit": f"{night:07x}"},
                               passed=not (cmp or {}).get("has_regression"), comparison=cmp)
    return db


def test_report_is_one_offline_file_with_charts_trend_and_regressions(nightly_db, tmp_path):
    out = write_report(nightly_db, tmp_path / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".html") == ["report.html"]
    html = out.read_text()
    assert not re.search(r"https?://", html)
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", html), "nothing loaded from elsewhere"
    # per model: trend, per-op bars, timeline; synthnet's regression adds the trend of its flagged layer
    assert html.count('<svg class="chart"') == 2 * 3 + 1
    assert "synthnet on qemu" in html and "othernet on qemu" in html
    assert 'class="npu"' in html and 'class="cpu"' in html  # bars split NPU / CPU
    flags = re.findall(MARKED, html)
    # night 6 is flagged (failed, regression against baseline and vs night 5); nothing else in synthnet
    assert any("2026-03-07" in f and "regression against baseline" in f for f in flags)
    assert not any("2026-03-0" in f and "2026-03-07" not in f and "2026-03-08" not in f for f in flags)
    assert "Difference from the previous run of the same time base (p50 change; a diff, not a verdict)" in html


def test_the_previous_run_is_a_diff_not_a_verdict(tmp_path):
    db = tmp_path / "h.db"
    history.record_run(db, synth_profile(seed=1), {"written_at": "2026-01-01T00:00:00Z"}, passed=True)
    history.record_run(db, synth_profile(seed=2, slow={("cpu_op", "native_call__softmax.out", 0): 1.5}),
                       {"written_at": "2026-01-02T00:00:00Z"}, passed=True)
    html = write_report(db, tmp_path / "r.html").read_text()
    diff = html[html.index("Difference from the previous run"):]
    (table,) = read(diff).tables
    first = next(row for row in table if row[1] == "cpu_op")  # no layer named: event, kind, op types, ...
    assert first[0] == "native_call__softmax.out" and first[2] == "aten._softmax.default"
    assert first[5].startswith("+5") and 'class="reg"' not in diff and "regression" not in diff
    assert "not compared (the session had no --hil-baseline or --hil-history)" in html
    assert not re.findall(MARKED, html)  # no gate verdict, no failure: nothing marked


def test_headline_trend_and_table_tell_the_verdict_the_gate_stored(tmp_path):
    from hil.regress.judge import JudgeOptions, judge_run

    db = tmp_path / "h.db"
    for seed in range(3):
        history.record_run(db, synth_profile(seed), {"written_at": f"2026-01-0{seed + 1}T00:00:00Z"}, passed=True)
    folder = tmp_path / "now"
    atomic.write_json(folder / "profile.json", synth_profile(9, slow={("npu_kernel", "1", 0): 2.4}))
    verdict = judge_run(folder, JudgeOptions(baseline=tmp_path / "b", history=db), marker_budget=None, test_passed=True)
    assert verdict.decision.status == "regression"
    html = write_report(db, tmp_path / "r.html").read_text()
    source = f"the last 3 passed run(s) in history {db}"
    assert f'<span class="reg">{verdict.decision.reason}</span>, against {source}.' in html
    flags = re.findall(MARKED, html)  # on the trend and on the flagged layer's trend
    assert len(flags) == 2 and all(f.endswith(f"({verdict.decision.reason}, against {source})") for f in flags)
    assert html.count('<circle class="mark-regression"') == 2 + 1  # and its legend entry
    table = html[html.index(f"Latest run against {source} (the gate&#x27;s verdict)"):html.index("Difference from")]
    assert read(table).tables[0][1][0] == "call 0 / kernel 1: convolution" and '<tr class="reg">' in table


def test_trace_json_puts_etdump_events_and_console_lines_on_one_axis(tmp_path):
    profile = synth_profile(seed=1, iterations=3)
    folder = tmp_path / "run"
    atomic.write_json(folder / "profile.json", profile)
    console = ["MODEL example", "Starting the model execution...", "Model executed successfully.",
               *[f"     Inference time: {round(t)} us" for t in profile["events"][0]["times_us"]], "Program complete, exiting."]
    (folder / "serial.log").write_text("\n".join(console) + "\n")
    trace = json.loads(write_trace_json(folder).read_text())
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert all({"name", "ts", "dur", "pid", "tid"} <= set(e) for e in complete)
    assert len(complete) == 3 * len(profile["events"])
    by_kind = {e["cat"]: e["tid"] for e in complete}
    assert by_kind == {k: TRACKS[k] for k in ("method", "cpu_op", "delegate_call", "npu_kernel", "profiling_dump")}
    methods = sorted((e for e in complete if e["cat"] == "method"), key=lambda e: e["ts"])
    assert [m["dur"] for m in methods] == [round(t, 3) for t in profile["events"][0]["times_us"]]
    instants = [e for e in events if e["ph"] == "i"]
    assert [e["name"] for e in instants] == [c.strip() for c in console]
    inference = [e for e in instants if "Inference time" in e["name"]]
    assert [e["ts"] for e in inference] == [round(m["ts"] + m["dur"], 3) for m in methods]
    # NPU kernels sit inside their delegate call, CPU ops inside Method::execute
    call = next(e for e in complete if e["cat"] == "delegate_call")
    for k in (e for e in complete if e["cat"] == "npu_kernel" and e["args"]["iteration"] == 0):
        assert call["ts"] <= k["ts"] and k["ts"] + k["dur"] <= call["ts"] + call["dur"] + 1e-6
    assert build_trace(profile, [])["traceEvents"]


def test_junit_properties_and_openmetrics_carry_the_key_figures():
    profile = synth_profile(seed=1)
    props = dict(junit_properties(profile))
    assert float(props["hil.synthnet.total_us"]) == pytest.approx(profile["totals_us"]["method_execute"], rel=1e-5)
    assert float(props["hil.synthnet.npu_fraction"]) == pytest.approx(profile["npu_fraction"], rel=1e-5)
    slowest = max((e for e in profile["events"] if e["kind"] in ("npu_kernel", "cpu_op")), key=lambda e: e["p50_us"])
    runs_before = sum(e["name"] == slowest["name"] for e in profile["events"][:profile["events"].index(slowest)])
    expected = slowest["name"] + (f"_#{runs_before + 1}" if runs_before else "")  # a repeated operator's later run
    assert (props["hil.synthnet.top1.kind"], props["hil.synthnet.top1.name"]) == (slowest["kind"], expected)
    assert float(props["hil.synthnet.top1.p50_us"]) == pytest.approx(slowest["p50_us"], rel=1e-5)
    kernels = {props[f"hil.synthnet.top{n}.name"] for n in (1, 2, 3) if props[f"hil.synthnet.top{n}.kind"] == "npu_kernel"}
    # synthnet's one delegate call holds kernels 0..4 (test_regress_synth.KERNEL_OPS): named with the call and op types
    assert kernels and kernels <= {"call_0/kernel_0:convolution,relu", "call_0/kernel_1:convolution",
                                   "call_0/kernel_2:max_pool2d", "call_0/kernel_3:addmm",
                                   "call_0/kernel_4:convolution,hardtanh"}
    for name, value in props.items():  # machine-readable: a number, or names without blanks
        assert name.startswith("hil.synthnet.") and " " not in value, (name, value)
    assert len(key_figures(profile)["top"]) == 3
    text = openmetrics_text([(profile, {"test": 't::a "quoted"'})])
    assert text.endswith("# EOF\n")
    assert '# TYPE hil_latency_seconds gauge' in text
    assert re.search(r'^hil_npu_fraction\{model="synthnet",board="qemu",test="t::a \\"quoted\\""\} 0\.\d+$', text, re.M)
    series = [line.rsplit(" ", 1)[0] for line in text.splitlines() if line.startswith("hil_event_p50")]
    assert len(series) == len(set(series)) == 8  # 5 kernels + 3 CPU ops, the repeated conv kept apart


def test_openmetrics_is_in_base_units_as_prometheus_clients_parser_reads_it():
    """The text parses with prometheus_client's OpenMetrics parser (strict about `# EOF`, units and escaping);
    every time is in seconds: the profile's microseconds, written by hand in synth_profile, over 1e6."""
    profile = synth_profile(seed=2)
    families = {f.name: f for f in text_string_to_metric_families(openmetrics_text([(profile, {"test": "t::x"})]))}
    seconds = ("hil_latency_seconds", "hil_npu_kernels_seconds", "hil_cpu_ops_seconds", "hil_event_p50_seconds")
    assert set(families) == {*seconds, "hil_npu_fraction"}
    for name in seconds:
        assert families[name].unit == "seconds" and families[name].type == "gauge", name
        assert {s.name for s in families[name].samples} == {name}
    assert families["hil_npu_fraction"].unit == ""
    (latency,) = families["hil_latency_seconds"].samples
    assert latency.labels == {"model": "synthnet", "board": "qemu", "test": "t::x"}
    assert latency.value == pytest.approx(profile["totals_us"]["method_execute"] * 1e-6, rel=1e-5)
    (fraction,) = families["hil_npu_fraction"].samples
    assert fraction.value == pytest.approx(profile["npu_fraction"], rel=1e-5)
    events: dict[str, list[float]] = {}
    for e in profile["events"]:
        if e["kind"] in ("npu_kernel", "cpu_op"):
            events.setdefault(e["name"], []).append(e["p50_us"] * 1e-6)
    samples = families["hil_event_p50_seconds"].samples
    assert len(samples) == sum(map(len, events.values())) == 8
    for sample in samples:  # a repeated event is one series per occurrence, in order
        expected = events[sample.labels["event"]][int(sample.labels.get("occurrence", 0))]
        assert sample.value == pytest.approx(expected, rel=1e-5), sample


def _partial_overlaps(slices: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of slices on one track that overlap without one containing the other (1 ns of rounding allowed)."""
    found, eps = [], 0.002
    by_track: dict[int, list[dict]] = {}
    for e in slices:
        by_track.setdefault(e["tid"], []).append(e)
    for track in by_track.values():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        for i, a in enumerate(track):
            for b in track[i + 1:]:
                if b["ts"] >= a["ts"] + a["dur"] - eps:
                    break
                if b["ts"] + b["dur"] > a["ts"] + a["dur"] + eps:
                    found.append((a, b))
    return found


def test_a_profiling_dump_longer_than_its_call_gets_its_own_track_and_says_why(tmp_path):
    profile = synth_profile(seed=1, iterations=4)
    call = next(e for e in profile["events"] if e["kind"] == "delegate_call")
    dump = next(e for e in profile["events"] if e["kind"] == "profiling_dump")
    dump["times_us"] = [1.6 * t for t in call["times_us"]]  # on the NPU's clock, longer than the call
    dump.pop("p50_us")
    # its totals as the analysis writes them (a dump that does not fit moves the delegate overhead): the
    # trace refuses a profile whose stored figures disagree with its times (hil.analysis.stored_figures)
    profile = recompute_totals(as_profile(profile)).to_json()
    folder = tmp_path / "run"
    atomic.write_json(folder / "profile.json", profile)
    trace = json.loads(write_trace_json(folder).read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert _partial_overlaps(complete) == []
    dumps = [e for e in complete if e["cat"] == "profiling_dump"]
    calls = sorted((e for e in complete if e["cat"] == "delegate_call"), key=lambda e: e["ts"])
    assert [d["ts"] for d in sorted(dumps, key=lambda e: e["ts"])] == [c["ts"] for c in calls]  # starts with its call
    assert all("overlaps the kernels" in d["args"]["note"] and "longer than its delegate call" in d["args"]["note"]
               for d in dumps)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {d["tid"] for d in dumps} <= set(names) and len({d["tid"] for d in dumps}) >= 1
    # without a long dump nothing moves: every kind keeps its one track
    plain = build_trace(synth_profile(seed=2, iterations=4), [])
    assert _partial_overlaps([e for e in plain["traceEvents"] if e["ph"] == "X"]) == []
    assert {e["tid"] for e in plain["traceEvents"] if e["ph"] == "X"} <= set(TRACKS.values())


def test_slices_that_overlap_in_part_go_to_separate_lanes_and_nested_or_later_ones_share():
    from hil.report.timeline import Span, lanes_of

    dump = lambda start, end: Span("profiling_dump", "5", [], start, end - start)  # noqa: E731
    # the pair: 24.6-111.6 and 82.1-129.4 overlap in part; 130-140 fits after both
    spans = [dump(24.6, 111.6), dump(82.1, 129.4), dump(130.0, 140.0), Span("npu_kernel", "0", [], 30.0, 10.0)]
    assert lanes_of(spans) == [0, 1, 0, 0]
    trace = build_trace({"events": [], "model": "m", "board": "b"}, [])
    assert trace["traceEvents"][0]["args"]["name"] == "m on b"


def test_the_charts_are_readable_full_labels_named_kernels_axes_with_ticks_and_units(tmp_path):
    import xml.etree.ElementTree as ET

    db = tmp_path / "h.db"
    for night in range(6):
        profile = synth_profile(seed=night)
        call = next(e for e in profile["events"] if e["kind"] == "delegate_call")
        dump = next(e for e in profile["events"] if e["kind"] == "profiling_dump")
        dump["times_us"] = [1.2 * t for t in call["times_us"]]  # the dump runs past its call
        history.record_run(db, profile, {"written_at": f"2026-04-0{night + 1}T02:00:00Z"}, passed=True)
    html = write_report(db, tmp_path / "r.html").read_text()
    charts = [ET.fromstring(svg) for svg in re.findall(r"<svg.*?</svg>", html, re.S)]
    trend, bars, timeline = charts
    texts = lambda chart: [t.text or "" for t in chart.iter("text")]  # noqa: E731
    numbers = lambda chart: [t for t in texts(chart) if re.fullmatch(r"[0-9.,]+", t)]  # noqa: E731
    # the trend: 4+ ticks on the us axis, 5 on the NPU axis, both named; dates under the time axis
    assert any(t.startswith("total us") for t in texts(trend)) and "NPU fraction" in texts(trend)
    assert len(numbers(trend)) >= 4 + 5
    assert sum(t.startswith("2026-04-0") for t in texts(trend)) >= 4
    # the per-op bars: kernels named by call and op types; a label is whole or ends in an ellipsis with
    # the whole name in its tooltip
    for group in bars.iter("g"):
        shown, tip = group.find("text").text, group.find("title").text
        assert shown.endswith("\u2026") and tip.startswith(shown[:-1]) or tip.startswith(shown), (shown, tip)
    labels = [g.find("text").text for g in bars.iter("g")]
    assert "call 0 / kernel 0: convolution, relu" in labels and "call 0 / kernel 2: max_pool2d" in labels
    assert len(set(labels)) == len(labels)  # no two bars named alike
    assert len(numbers(bars)) >= 4 + len(labels) and "us" in texts(bars)
    # the timeline: 4+ ticks in us, and the dump that runs past its call says why under the chart
    assert len([t for t in texts(timeline) if re.fullmatch(r"[0-9.]+", t)]) >= 4
    assert "us from the start of Method::execute" in texts(timeline)
    said = " ".join(" ".join(texts(timeline)).split())
    assert "call 0 / profiling dump: overlaps the kernels" in said and "longer than its delegate call" in said


@pytest.mark.parametrize("high", [0.0, 1e-12, 1e-9, 2e-9, 0.5, 7.3, 900.0, 1e308, 5e-324])
def test_an_axis_always_reaches_its_highest_value_and_never_ends_at_zero(high):
    from hil.report.svg import nice_ticks

    ticks = nice_ticks(high)  # charts divide by the last tick
    assert ticks[0] == 0.0 and ticks[-1] >= high and ticks[-1] > 0 and len(ticks) >= 3
