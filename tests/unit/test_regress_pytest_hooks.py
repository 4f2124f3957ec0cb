"""The pytest side in a real pytest session (a child process): marker budgets, baseline failures,
history rows, JUnit properties and OpenMetrics, on run folders the tests write themselves."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from hil.regress import history
from hil.regress.baseline import write_baseline
from hil.regress.runs import LoadedRun
from test_regress_synth import synth_profile

HERE = Path(__file__).resolve().parent

SUITE = '''
import os, sys
import pytest
from pathlib import Path
import pytest
from hil.base import atomic
sys.path.insert(0, {here!r})
from test_regress_synth import synth_profile

def _run(request, name, **kw):
    folder = Path(os.environ["RUNS"]) / name
    atomic.write_json(folder / "profile.json", synth_profile(**kw))
    atomic.write_json(folder / "manifest.json", {{"git_commit": "0e7e", "board": "qemu", "model": "synthnet",
                                                  "project_commit": {{"commit": "feed", "dirty": False}}}})
    (folder / "serial.log").write_text("Inference time: 1 us\\n")
    request.node.user_properties.append(("hil_artifacts", str(folder)))

@pytest.mark.hil_budget(total_us=1, ops={{"0": 1e9}})
def test_over_budget(request):
    _run(request, "budget", seed=1)

def test_slow_kernel(request):
    _run(request, "slow", seed=2, slow={{("npu_kernel", "1", 0): 1.2}})

@pytest.mark.device  # an et-hil test: its figures go to the JUnit suite properties
def test_fine(request):
    _run(request, "fine", seed=3)

def test_fixture_budget(hil_budget):
    hil_budget(synth_profile(seed=4), npu_fraction_min=0.999)
'''


def test_budgets_baselines_history_and_junit_in_a_pytest_session(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE.format(here=str(HERE)))
    write_baseline(LoadedRun(synth_profile(seed=0), tmp_path / "x"), tmp_path / "baselines")
    db, xml, metrics = tmp_path / "h.db", tmp_path / "out.xml", tmp_path / "metrics.txt"
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "test_suite.py",
         "--hil-baseline", "baselines", "--hil-history", str(db), f"--junitxml={xml}", "--hil-openmetrics", str(metrics)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "RUNS": str(tmp_path / "runs"), "PYTHONPATH": str(HERE.parents[1])},
    )
    out = res.stdout
    assert res.returncode == 1, out + res.stderr
    assert "FAILED test_suite.py::test_over_budget" in out and "FAILED test_suite.py::test_slow_kernel" in out
    assert "PASSED test_suite.py::test_fine" in out and "FAILED test_suite.py::test_fixture_budget" in out
    assert "budget exceeded for model 'synthnet' on board 'qemu'" in out and "limit (max) 1 us" in out
    assert f"artifacts: {tmp_path / 'runs' / 'budget'}" in out
    assert "performance regression" in out and "call 0 / kernel 1: convolution" in out
    assert "aten.convolution.default" in out and f"artifacts: {tmp_path / 'runs' / 'slow'}" in out
    assert "NPU fraction (min)" in out
    conn = history.open_existing(db)
    try:
        runs = {Path(r["artifacts"]).name: r for r in history.read_runs(conn)}
    finally:
        conn.close()
    assert {k: v["passed"] for k, v in runs.items()} == {"budget": 0, "slow": 0, "fine": 1}
    assert runs["slow"]["comparison"]["has_regression"] and runs["fine"]["git_commit"] == "feed"  # the project's
    assert runs["fine"]["time_base"] == "simulated-ticks/cpu=324MHz/npu=250MHz"
    suite = ET.parse(xml).getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties").iter("property")}
    fine = "@test_suite.py::test_fine"
    assert float(props["hil.synthnet.total_us" + fine]) > 0 and "hil.synthnet.npu_fraction" + fine in props
    assert props["hil.synthnet.artifacts" + fine].endswith("fine")
    assert props["hil.synthnet.judged" + fine] == "true" and "hil.synthnet.not_judged" + fine not in props
    assert props["hil.synthnet.time_base" + fine] == "simulated-ticks/cpu=324MHz/npu=250MHz"
    # test_slow_kernel asked for nothing of et-hil: judged (it failed above), but no fixture of its own
    assert not [name for name in props if name.endswith("@test_suite.py::test_slow_kernel")]
    text = metrics.read_text()
    assert text.endswith("# EOF\n") and text.count("hil_latency_seconds{") == 3
    families = {f.name: f for f in text_string_to_metric_families(text)}  # prometheus_client's own parser
    latency = {s.labels["test"]: s.value for s in families["hil_latency_seconds"].samples}
    assert latency["test_suite.py::test_fine"] == pytest.approx(float(props["hil.synthnet.total_us" + fine]) / 1e6,
                                                                rel=1e-5)
    assert (tmp_path / "runs" / "fine" / "trace.json").is_file()


TWO_RUNS = '''
import os, sys
import pytest
from pathlib import Path
from hil.base import atomic
sys.path.insert(0, {here!r})
from test_regress_synth import synth_profile

def _run(request, name, model, seed):
    folder = Path(os.environ["RUNS"]) / name
    atomic.write_json(folder / "profile.json", synth_profile(seed, model=model))
    atomic.write_json(folder / "manifest.json", {{"board": "qemu", "model": model}})
    request.node.user_properties.append(("hil_artifacts", str(folder)))

@pytest.mark.device  # an et-hil test: its figures go to the JUnit XML
def test_two_models(request):
    _run(request, "a-factory-none", "a", 1)
    _run(request, "b-factory-none", "b", 2)

@pytest.mark.device
def test_one_model(request):
    _run(request, "c-factory-none", "c", 3)
'''


def _properties(xml: Path) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}


def _session_xml(tmp_path: Path, name: str, *args: str) -> Path:
    xml = tmp_path / f"{name}.xml"
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_two.py", f"--junitxml={xml}", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "RUNS": str(tmp_path / name), "PYTHONPATH": str(HERE.parents[1])})
    assert res.returncode == 0, res.stdout + res.stderr
    return xml


def test_junit_under_xdist_holds_every_figure_of_every_run_and_is_valid_xunit2(tmp_path):
    import xmlschema

    (tmp_path / "test_two.py").write_text(TWO_RUNS.format(here=str(HERE)))
    serial, parallel = _session_xml(tmp_path, "serial"), _session_xml(tmp_path, "parallel", "-n", "2")
    schema = xmlschema.XMLSchema(str(HERE.parent / "fixtures" / "junit" / "xunit2.xsd"))
    schema.validate(str(parallel))
    schema.validate(str(serial))
    names = set(_properties(parallel))
    assert names == set(_properties(serial)) and len(names) == 3 * 18
    two = "@test_regress_pytest_hooks.py"  # not a test id of this session: the two tests are test_two.py's
    assert two not in "".join(names)
    for run, test in (("a.a-factory-none", "test_two_models"), ("b.b-factory-none", "test_two_models"),
                      ("c", "test_one_model")):
        assert f"hil.{run}.total_us@test_two.py::{test}" in names, (run, sorted(names))
        assert f"hil.{run}.top1.name@test_two.py::{test}" in names
        assert _properties(parallel)[f"hil.{run}.time_base@test_two.py::{test}"] == "simulated-ticks/cpu=324MHz/npu=250MHz"
    values = _properties(parallel)
    assert values["hil.a.a-factory-none.artifacts@test_two.py::test_two_models"].endswith("a-factory-none")
    assert values["hil.b.b-factory-none.artifacts@test_two.py::test_two_models"].endswith("b-factory-none")


def test_the_legacy_family_also_gets_each_figure_as_a_testcase_property(tmp_path):
    (tmp_path / "test_two.py").write_text(TWO_RUNS.format(here=str(HERE)))
    xml = _session_xml(tmp_path, "legacy", "-n", "2", "-o", "junit_family=legacy")
    case = [c for c in ET.parse(xml).getroot().iter("testcase") if c.get("name") == "test_one_model"][0]
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert float(props["hil.c.total_us"]) > 0 and props["hil.c.artifacts"].endswith("c-factory-none")
