"""The report (one offline HTML file), trace.json (Chrome trace format), JUnit properties and OpenMetrics."""

from __future__ import annotations

import json
import re

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from hil import atomic
from hil.regress import history
from hil.regress.compare import compare_profiles, comparison_to_dict
from hil.report.figures import junit_properties, key_figures, openmetrics_text
from hil.report.html import write_report
from hil.report.trace import TRACKS, build_trace, write_trace_json
from test_regress_synth import synth_profile


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
    assert html.count("<svg") == 2 * 3  # per model: trend, per-op bars, timeline
    assert "synthnet on qemu" in html and "othernet on qemu" in html
    assert 'class="npu"' in html and 'class="cpu"' in html  # bars split NPU / CPU
    flags = re.findall(r'<circle class="flag"[^>]*><title>([^<]*)</title>', html)
    # night 6 is flagged (failed, regression against baseline and vs night 5); nothing else in synthnet
    assert any("2026-03-07" in f and "regression against baseline" in f for f in flags)
    assert not any("2026-03-0" in f and "2026-03-07" not in f and "2026-03-08" not in f for f in flags)
    assert "Latest run against the previous run" in html


def test_latest_regression_shows_in_the_table(tmp_path):
    db = tmp_path / "h.db"
    history.record_run(db, synth_profile(seed=1), {"written_at": "2026-01-01T00:00:00Z"}, passed=True)
    history.record_run(db, synth_profile(seed=2, slow={("cpu_op", "native_call__softmax.out", 0): 1.5}),
                       {"written_at": "2026-01-02T00:00:00Z"}, passed=True)
    html = write_report(db, tmp_path / "r.html").read_text()
    row = re.search(r'<tr class="reg"><td>native_call__softmax.out</td>.*?</tr>', html)
    assert row and "aten._softmax.default" in row.group(0) and "+5" in row.group(0)


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
    assert (props["hil.synthnet.top1.kind"], props["hil.synthnet.top1.name"]) == (slowest["kind"], slowest["name"])
    assert float(props["hil.synthnet.top1.p50_us"]) == pytest.approx(slowest["p50_us"], rel=1e-5)
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
