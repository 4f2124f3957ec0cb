"""The nightly flow end to end on the real QEMU board: a pytest session writes a baseline and the
history, a second session against a baseline made 10x faster fails naming the event, and
`hil report` draws both runs. Tiny CPU-only model (delegate "none"), 3 iterations, warm-up 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from hil.analysis.warmup import recompute_totals, with_statistics
from hil.regress import history
from tiny_models import linear_relu_source
from shared_firmware import cache_sharing_firmware

TINY = linear_relu_source(inputs=16, outputs=8)

SUITE = '''
MODEL = {model!r}

def test_tiny_nightly(hil_profile):
    run = hil_profile(MODEL, delegate="none", iterations=3)
    assert run.profile["totals_us"]["method_execute"] > 0
'''


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "test_nightly.py", "--board", "qemu",
         "--hil-artifacts", "art", "--hil-warmup", "1", *args],
        cwd=cwd, capture_output=True, text=True, timeout=900, env={**os.environ, "HIL_CACHE_DIR": str(cache_sharing_firmware(cwd / "cache"))},
    )


def _project_commit(folder: Path) -> str:
    """Make `folder` a git repository with one commit (the project the nightly runs in); its commit."""
    git = ["git", "-C", str(folder), "-c", "user.name=nightly", "-c", "user.email=nightly@example.invalid"]
    for args in (["init", "-q"], ["add", "tiny.py", "test_nightly.py"], ["commit", "-q", "-m", "project"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def test_nightly_flow_on_the_qemu_board(tmp_path):
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "test_nightly.py").write_text(SUITE.format(model=f"{tmp_path / 'tiny.py'}:factory"))
    commit = _project_commit(tmp_path)
    db = tmp_path / "history.db"

    first = _pytest(tmp_path, "--hil-baseline", "baselines", "--hil-baseline-update", "--hil-history", str(db),
                    "--junitxml=first.xml")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    (baseline_file,) = (tmp_path / "baselines").glob("*.json")
    baseline = json.loads(baseline_file.read_text())
    assert baseline["provenance"]["board"] == "qemu" and baseline["provenance"]["versions"]["executorch"]
    assert baseline["profile"]["iterations"] == 3 and baseline["profile"]["warmup_iterations"] == 1
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "first.xml").getroot().iter("property")}
    model = baseline["profile"]["model"]
    test_id = "@test_nightly.py::test_tiny_nightly"
    assert float(props[f"hil.{model}.total_us{test_id}"]) > 0
    run_folder = Path(props[f"hil.{model}.artifacts{test_id}"])
    trace = json.loads((tmp_path / run_folder / "trace.json").read_text() if not run_folder.is_absolute()
                       else (run_folder / "trace.json").read_text())
    assert any(e["ph"] == "i" and "Inference time" in e["name"] for e in trace["traceEvents"])

    # make the baseline's Method::execute 10x faster: the next run is a +900% regression of that event.
    # The host runtime's real timings on a shared machine are too noisy for 3 iterations to say more,
    # so this session judges by tolerance alone (--hil-noise-k 0); the noise rule has its own tests.
    # The stored statistics and totals are redone from the edited times, as the analysis writes them: a
    # baseline whose figures disagree with its times is refused as edited (hil.analysis.stored_figures).
    for event in baseline["profile"]["events"]:
        if event["kind"] == "method":
            event["times_us"] = [round(t / 10, 3) for t in event["times_us"]]
    baseline["profile"] = recompute_totals(with_statistics(baseline["profile"])).to_json()
    baseline_file.write_text(json.dumps(baseline))
    second = _pytest(tmp_path, "--hil-baseline", "baselines", "--hil-history", str(db), "--hil-noise-k", "0")
    assert second.returncode == 1, second.stdout[-4000:] + second.stderr[-4000:]
    assert "performance regression" in second.stdout and "Method::execute" in second.stdout

    conn = history.open_existing(db)
    try:
        runs = history.read_runs(conn)
    finally:
        conn.close()
    # the project's commit (git in the test), not et-hil's own
    assert [r["passed"] for r in runs] == [1, 0] and all(r["board"] == "qemu" and r["git_commit"] == commit for r in runs)
    assert runs[0]["model_sha256"] == runs[1]["model_sha256"] and runs[0]["firmware_sha256"]

    report = subprocess.run([sys.executable, "-m", "hil.cli.main", "report", str(db), "--out", str(tmp_path / "r.html")],
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text()
    assert f"{model} on qemu" in html and "</span>, against baseline " in html and f"commit {commit}" in html
    assert '<circle class="mark-regression"' in html  # the regression marked as one on the trend
