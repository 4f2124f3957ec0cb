"""The user's own layer names end to end on the QEMU board: a model file whose factory has a submodule named
`conv2`, through `hil run` (its table) and through the pytest plugin (the budget message, JUnit, and the
table `hil inspect` prints of the run folder the plugin kept)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "conv_pair.py"


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _conv2_row(table: str) -> str:
    rows = [line for line in table.splitlines() if re.search(r"\bconv2 \(conv_pair\.py:\d+\)$", line)]
    assert rows, table
    return rows[0]


def test_hil_run_names_conv2_and_its_line_on_the_cpu_and_inside_the_delegate(run_cli, tmp_path):
    model = tmp_path / "conv_pair.py"
    shutil.copyfile(FIXTURE, model)
    conv2 = _line_of(model, "CONV2_LINE")
    done = run_cli("run", "--board", "qemu", "--model", f"{model}:factory", "--delegate", "none", "--out",
                   str(tmp_path / "cpu"), "--iterations", "3", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    row = _conv2_row(done.stdout)
    assert row.startswith("native_call_convolution.o~ #2 cpu_op") and row.endswith(f"conv2 (conv_pair.py:{conv2})")
    done = run_cli("run", "--board", "qemu", "--model", f"{model}:factory", "--out", str(tmp_path / "npu"),
                   "--iterations", "3", "-q", "--quantize")  # int8: the simulated NPU takes no float operator
    assert done.returncode == 0, done.stderr[-3000:]
    # A Neutron kernel, named through the delegate's debug-handle map. In the int8 program a quantize node shares
    # its producer's debug handle (relu's, line 17), so each kernel holding one also names that line.
    assert re.search(r"^  \d+ +npu_kernel .* conv2 \(conv_pair\.py:", done.stdout, re.M), done.stdout
    profile = json.loads((tmp_path / "npu" / "profile.json").read_text())
    (kernel,) = [e for e in profile["events"] if e["kind"] == "npu_kernel" and e["modules"] == ["conv2"]]
    assert f"conv_pair.py:{conv2}" in kernel["sources"] and "aten.convolution.default" in kernel["op_types"]


SUITE = '''
def test_pair(hil_profile, hil_budget):
    run = hil_profile({model!r}, delegate="none")
    hil_budget(run, modules={{"conv2": 1}}, ops={{"aten.convolution.default": 1e9}})
'''


def test_the_plugin_names_conv2_in_the_budget_message_junit_and_the_kept_runs_table(tmp_path):
    (tmp_path / "conv_pair.py").write_text(FIXTURE.read_text())
    (tmp_path / "test_pair.py").write_text(SUITE.format(model=f"{tmp_path / 'conv_pair.py'}:factory"))
    conv2 = _line_of(tmp_path / "conv_pair.py", "CONV2_LINE")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_pair.py", "--board", "qemu",
         "--hil-artifacts", "art", "--hil-iterations", "3", "--rootdir", str(tmp_path), "--junitxml=out.xml",
         "-o", "junit_family=xunit2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    said = re.search(r"module 'conv2' \(sum of its events\): measured [\d.]+ us, limit \(max\) 1 us "
                     r"\[sum of 1 event\(s\): native_call_convolution.out #2 in conv2 \(conv_pair.py:(\d+)\)", done.stdout)
    assert said and int(said.group(1)) == conv2, done.stdout[-3000:]
    assert "op 'aten.convolution.default'" not in done.stdout  # each conv is under 1e9 us: no message
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "out.xml").iter("property")}
    modules = {v for k, v in props.items() if re.fullmatch(r"hil\.conv_pair\.top\d\.module@.*", k)}
    assert {"conv1", "conv2"} <= modules, props
    folders = [p.parent for p in (tmp_path / "art").rglob("profile.json")]
    assert len(folders) == 1, folders
    table = subprocess.run([sys.executable, "-m", "hil.cli.main", "inspect", str(folders[0])], cwd=REPO,
                           capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert table.returncode == 0, table.stderr[-2000:]
    assert _conv2_row(table.stdout).endswith(f"conv2 (conv_pair.py:{conv2})")
