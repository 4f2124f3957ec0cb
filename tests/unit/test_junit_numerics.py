"""The numerics in the JUnit XML: a run's SNR, max relative error and top-1 agreement against each reference
are suite properties beside its latency (`hil.<model>.numerics.vs_eager.snr_db`, ...), in a real pytest
session (a child process) on run folders whose `numerics` sections are written here by hand."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent

SUITE = '''
import json, os, sys
from pathlib import Path
import pytest
from hil.base import atomic
sys.path.insert(0, {here!r})
from test_regress_synth import synth_profile

COMPUTED = {{"status": "computed", "inputs": {{"source": "example inputs of synthnet", "tensors": []}},
             "vs_eager": {{"max_abs_error": 2.5e-08, "max_rel_error": 2.2e-07, "snr_db": 126.5, "cosine": 0.999999,
                          "bit_exact": False, "top1_agreement": 1.0}},
             "vs_host_runtime": {{"max_abs_error": 0.0, "max_rel_error": 0.0, "snr_db": None, "cosine": 1.0,
                                 "bit_exact": True, "top1_agreement": 1.0}}}}
NOT_COMPUTED = {{"status": "not computed", "reason": "simulated NPU"}}
NO_NUMBERS = {{"max_abs_error": None, "max_rel_error": None, "snr_db": None, "cosine": None, "bit_exact": False,
              "non_finite": True}}
NOT_FINITE = {{"status": "computed", "non_finite_outputs": [{{"index": 0, "dtype": "float32", "shape": [1, 4],
                                                              "nan": 4, "inf": 0}}],
              "vs_eager": NO_NUMBERS, "vs_host_runtime": NO_NUMBERS}}

def _run(request, name, model, numerics):
    folder = Path(os.environ["RUNS"]) / name
    atomic.write_json(folder / "profile.json", {{**synth_profile(3, model=model), "numerics": numerics}})
    atomic.write_json(folder / "manifest.json", {{"board": "qemu", "model": model}})
    request.node.user_properties.append(("hil_artifacts", str(folder)))

@pytest.mark.device
def test_computed(request):
    _run(request, "cpu", "cnn", COMPUTED)

@pytest.mark.device
def test_simulated(request):
    _run(request, "npu", "cnn", NOT_COMPUTED)

@pytest.mark.device
def test_nan(request):
    _run(request, "nan", "cnn", NOT_FINITE)
'''


def test_the_junit_xml_carries_each_references_snr_max_relative_error_and_top1(tmp_path):
    (tmp_path / "test_numerics.py").write_text(SUITE.format(here=str(HERE)))
    xml = tmp_path / "out.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_numerics.py",
                           f"--junitxml={xml}"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RUNS": str(tmp_path / "runs"), "PYTHONPATH": str(HERE.parents[1])})
    assert done.returncode == 0, done.stdout + done.stderr
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    cpu, npu = "@test_numerics.py::test_computed", "@test_numerics.py::test_simulated"
    eager, host = "hil.cnn.numerics.vs_eager.", "hil.cnn.numerics.vs_host_runtime."
    assert props["hil.cnn.numerics" + cpu] == "computed"
    assert {k: float(props[eager + k + cpu]) for k in ("snr_db", "max_rel_error", "max_abs_error", "top1_agreement")} \
        == {"snr_db": 126.5, "max_rel_error": 2.2e-07, "max_abs_error": 2.5e-08, "top1_agreement": 1.0}
    assert props[eager + "bit_exact" + cpu] == "false" and float(props[eager + "cosine" + cpu]) == 0.999999
    # identical outputs: no SNR to plot (it is infinite), said by bit_exact
    assert props[host + "bit_exact" + cpu] == "true" and host + "snr_db" + cpu not in props
    assert float(props[host + "max_rel_error" + cpu]) == 0.0
    nan = "@test_numerics.py::test_nan"
    assert props["hil.cnn.numerics" + npu] == "not computed" and props["hil.cnn.numerics" + nan] == "not finite"
    assert not [name for name in props if name.startswith("hil.cnn.numerics.") and name.endswith((npu, nan))]
    assert props["hil.cnn.series" + cpu] == "cnn"  # no delegate in the hand-written profile: the model alone
