"""The report of a hand-made nightly (tests/unit/report_history.py) draws what the test knows it must:
runs not judged apart from the regression, an axis fitted to the runs with the change written at the
flagged run, the commits under the time axis, the user's module paths on the bars and in the diff table,
and the flagged layer's own trend. Read with Python's XML and HTML parsers, never the product's."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from hil.regress import history
from hil.report.html import write_report
from hil.report.marks import NOT_JUDGED, mark_of
from html_dom import read
from report_history import (CONV_KEY, DEEP_LAYER, NIGHTS, REGRESSION_NIGHT, REGRESSION_REASON, SLOWER,
                            UNJUDGED_NIGHTS, UNJUDGED_REASONS, commit, method_change, night_profile, write_history)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("glance")
    return write_report(write_history(folder / "nightly.db"), folder / "report.html").read_text()


def _chart(html: str, label_start: str) -> ET.Element:
    (svg,) = re.findall(rf'<svg class="chart" role="img" aria-label="{re.escape(label_start)}.*?</svg>', html, re.S)
    return ET.fromstring(svg)


def _texts(chart: ET.Element) -> list[str]:
    return [t.text or "" for t in chart.iter("text")]


def _line(chart: ET.Element) -> list[tuple[float, float]]:
    """The solid line's points, one per run in order."""
    line = next(p for p in chart.iter("polyline") if p.get("class") == "line-total")
    return [tuple(map(float, xy.split(","))) for xy in line.get("points").split()]


def _marks(chart: ET.Element, css: str) -> list[tuple[float, float]]:
    """Centres of the markers of one mark (circles, or polygons' mean points)."""
    found = []
    for element in chart.iter():
        if element.get("class") != css:
            continue
        if element.tag == "circle":
            found.append((float(element.get("cx")), float(element.get("cy"))))
        elif element.tag == "polygon":
            xy = [tuple(map(float, p.split(","))) for p in element.get("points").split()]
            found.append((sum(x for x, _ in xy) / len(xy), sum(y for _, y in xy) / len(xy)))
    return found


def test_runs_not_judged_are_marked_apart_from_the_regression_with_a_legend(page):
    trend = _chart(page, "trend of synthnet on qemu in ")
    line = _line(trend)
    assert len(line) == NIGHTS
    (regression,) = _marks(trend, "mark-regression")
    assert regression[0] == pytest.approx(line[REGRESSION_NIGHT - 1][0])
    unjudged = _marks(trend, "mark-not-judged")
    assert [x for x, _ in unjudged] == pytest.approx([line[n - 1][0] for n in UNJUDGED_NIGHTS], abs=0.1)
    assert all(e.tag == "polygon" for e in trend.iter() if e.get("class") == "mark-not-judged")  # a diamond
    legend = read(page).texts_of["mark-key"]
    assert [t.strip() for t in legend] == ["regression (the gate's verdict)",
                                          "not judged (the gate gave no verdict; why is said below)"]


def test_each_marked_run_says_its_reason_once_and_markup_from_a_run_stays_text(page):
    dom = read(page)
    for reason in [*UNJUDGED_REASONS.values(), REGRESSION_REASON]:
        assert dom.text.count(reason) == 1, reason
    assert not [tag for tag, _ in dom.elements if tag == "img"]


def test_the_axis_is_fitted_to_the_runs_and_the_change_is_written_at_the_flagged_run(page):
    trend = _chart(page, "trend of synthnet on qemu in ")
    line = _line(trend)
    totals = [night_profile(n)["totals_us"]["method_execute"] for n in range(1, NIGHTS + 1)]
    ticks = [float(t.replace(",", "")) for t in _texts(trend) if re.fullmatch(r"[0-9,]+(\.[0-9]+)?", t)
             and not re.fullmatch(r"(\d)\1{6}", t)]  # not the short shas
    value_ticks = [t for t in ticks if t > 1]
    assert 0 < min(value_ticks) <= min(totals) and max(value_ticks) >= max(totals)
    assert max(value_ticks) - min(value_ticks) < 0.01 * max(totals)  # fitted: the axis spans under 1%
    assert any(t.startswith("total us (axis from ") and t.endswith(", not 0)") for t in _texts(trend))
    # a +0.2% step of the total is tens of pixels, not one
    assert line[REGRESSION_NIGHT - 2][1] - line[REGRESSION_NIGHT - 1][1] > 40
    (called,) = [t for t in trend.iter("text") if "change" in (t.get("class") or "")]
    assert called.text == f"{method_change(REGRESSION_NIGHT):+.1f}% vs baseline" == "+0.2% vs baseline"
    assert float(called.get("x")) == pytest.approx(line[REGRESSION_NIGHT - 1][0])  # at the flagged run


def test_each_runs_commit_is_written_under_the_time_axis(page):
    trend = _chart(page, "trend of synthnet on qemu in ")
    shas = [t for t in _texts(trend) if re.fullmatch(r"[0-9a-f]{7}", t)]
    assert shas == [commit(n)[:7] for n in range(1, NIGHTS + 1)]


def test_bars_and_the_diff_table_carry_the_users_module_paths(page):
    bars = _chart(page, "per-op p50 of synthnet")
    labels = [g.find("text").text for g in bars.iter("g")]
    assert {"features.3: native_call_convolution.out", f"{DEEP_LAYER}: native_call_convolution.out #2"[:45] + "\u2026",
            "classifier.softmax: native_call__softmax.out", "features.5: call 0 / kernel 2: max_pool2d"} <= set(labels)
    diff = page[page.index("Difference from the previous run"):]
    (table,) = read(diff).tables
    assert table[0][:2] == ["layer (line)", "event"]
    rows = {(row[0], row[1]) for row in table[1:]}
    assert {("features.3 (models.py:13)", "native_call_convolution.out"),
            (f"{DEEP_LAYER} (models.py:17)", "native_call_convolution.out #2"),
            ("features.0, features.1 (models.py:9)", "call 0 / kernel 0: convolution, relu"),
            ("-", "Method::execute")} <= rows


def test_the_flagged_layer_gets_its_own_trend_with_its_change(page):
    heading = read(page).texts_of["layer"]
    assert "features.3 (models.py:13): native_call_convolution.out" in heading
    layer = _chart(page, "trend of the flagged layer features.3 (models.py:13): native_call_convolution.out")
    line = _line(layer)
    assert len(line) == NIGHTS and len({y for i, (_, y) in enumerate(line) if i != REGRESSION_NIGHT - 1}) == 1
    (called,) = [t.text for t in layer.iter("text") if "change" in (t.get("class") or "")]
    assert called == f"+{100 * (SLOWER - 1):.1f}% vs baseline" == "+2.0% vs baseline"
    assert [t for t in _texts(layer) if re.fullmatch(r"[0-9a-f]{7}", t)] == [commit(n)[:7] for n in range(1, NIGHTS + 1)]
    assert CONV_KEY not in read(page).text  # named as the user does, never by the internal key


def test_the_history_keeps_each_events_layers_and_a_row_before_the_judged_flag_still_reads_unjudged(tmp_path):
    db = write_history(tmp_path / "h.db")
    conn = history.open_existing(db)
    try:
        run = history.read_runs(conn)[-1]
        events = {e["key"]: e for e in history.read_events(conn, run["id"])}
    finally:
        conn.close()
    assert events[CONV_KEY]["modules"] == ["features.3"] and events[CONV_KEY]["sources"] == ["models.py:13"]
    assert "modules" not in events["method:Method::execute#0"]  # the ETRecord named no layer for it
    old = {"passed": 1, "comparison": {"decision": {"status": "cannot judge", "reason": "cannot judge: old row"}}}
    assert mark_of(old).kind == NOT_JUDGED and mark_of(old).reason == "cannot judge: old row"


def test_a_failed_test_with_no_regression_is_its_own_mark(tmp_path):
    db = tmp_path / "h.db"
    passed = {"status": "pass", "failed": False, "reason": "pass: no regression among 10 events", "judged": True}
    for night, ok in ((1, True), (2, False), (3, True)):  # night 2's test failed on its own assertion
        history.record_run(db, night_profile(night), {"written_at": f"2026-07-0{night}T02:00:00Z"}, passed=ok,
                           comparison={"events": [], "decision": passed, "baseline": "b"})
    html = write_report(db, tmp_path / "r.html").read_text()
    trend = _chart(html, "trend of synthnet on qemu in ")
    (failed,) = _marks(trend, "mark-failed")
    assert failed[0] == pytest.approx(_line(trend)[1][0], abs=0.1)
    assert not _marks(trend, "mark-regression") and not _marks(trend, "mark-not-judged")
    dom = read(html)
    assert [t.strip() for t in dom.texts_of["mark-key"]] == ["the test failed (the gate found no regression)"]
    assert "failed, run 2026-07-02T02:00:00Z: the test failed (gate: pass: no regression among 10 events)" in dom.text


def test_the_last_run_of_another_time_base_still_says_why_it_was_not_judged(tmp_path):
    from timebase_runs import run_profile

    db, why = tmp_path / "h.db", "cannot judge: history h.db holds 0 of the 3 passed runs of time base replay-host-ns"
    unjudged = {"events": [], "decision": {"status": "cannot judge", "failed": False, "reason": why, "judged": False}}
    for seed, (kind, stored) in enumerate((("runtime", None), ("replay", unjudged), ("runtime", None))):
        history.record_run(db, run_profile(kind, seed, scale=0.024 if kind == "replay" else 1.0),
                           {"written_at": f"2026-02-0{seed + 1}T02:00:00Z"}, passed=True, comparison=stored)
    dom = read(write_report(db, tmp_path / "r.html").read_text())
    assert dom.text.count(why) == 1 and "Marked runs before the latest" not in dom.text  # under the replay's chart
    assert [t.strip() for t in dom.texts_of["mark-key"]] == ["not judged (the gate gave no verdict; why is said below)"]
