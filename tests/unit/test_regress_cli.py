"""`hil compare`, `hil baseline update`, `hil report`, `hil trace` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hil.base import atomic
from test_regress_synth import synth_profile

REPO = Path(__file__).resolve().parents[2]


def hil(*args: object, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *map(str, args)], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def run_folder(root: Path, name: str, profile: dict, commit: str = "c0ffee") -> Path:
    folder = root / name
    atomic.write_json(folder / "profile.json", profile)
    atomic.write_json(folder / "manifest.json", {
        "schema": "et-hil/manifest/1", "written_at": "2026-02-03T04:05:06Z", "git_commit": commit, "board": profile["board"],
        "model": profile["model"], "versions": {"executorch": "1.5.1"}, "firmware_sha256": "e" * 64,
        "files": {"model.pte": {"sha256": "d" * 64, "size": 1}}})
    return folder


def test_compare_exits_1_on_regression_and_0_otherwise(tmp_path):
    a = run_folder(tmp_path, "a", synth_profile(seed=1))
    same = run_folder(tmp_path, "same", synth_profile(seed=2))
    slow = run_folder(tmp_path, "slow", synth_profile(seed=2, slow={("npu_kernel", "4", 0): 1.10}))
    ok = hil("compare", a, same)
    assert ok.returncode == 0, ok.stderr
    assert "0 regression(s)" in ok.stdout
    bad = hil("compare", a / "profile.json", slow / "profile.json")
    assert bad.returncode == 1, bad.stderr
    assert "worst regressions" in bad.stdout and "call 0 / kernel 4: convolution, hardtanh" in bad.stdout
    assert "aten.convolution.default, aten.hardtanh.default" in bad.stdout
    as_json = json.loads(hil("compare", a, slow, "--json").stdout)
    assert as_json["has_regression"] and [e["name"] for e in as_json["events"] if e["verdict"] == "regression"] == ["call 0 / kernel 4: convolution, hardtanh"]
    # a loose tolerance accepts the same runs
    assert hil("compare", a, slow, "--tolerance", "20%").returncode == 0


def test_baseline_update_records_provenance_and_is_comparable(tmp_path):
    run = run_folder(tmp_path, "run", synth_profile(seed=1, iterations=6, warmup_factor=5.0), commit="1234abcd")
    out = hil("baseline", "update", run, "--out", tmp_path / "baselines", "--warmup", "1")
    assert out.returncode == 0, out.stderr
    path = tmp_path / "baselines" / "synthnet.json"
    data = json.loads(path.read_text())
    assert data["schema"] == "et-hil/baseline/1"
    prov = data["provenance"]
    assert (prov["git_commit"], prov["board"], prov["model"], prov["warmup_iterations"]) == ("1234abcd", "qemu", "synthnet", 1)
    assert prov["versions"] == {"executorch": "1.5.1"} and prov["model_sha256"] == "d" * 64 and prov["created_at"]
    assert data["profile"]["iterations"] == 5 and all("mad_us" in e for e in data["profile"]["events"])
    later = run_folder(tmp_path, "later", synth_profile(seed=9, iterations=6, warmup_factor=5.0))
    assert hil("compare", path, later, "--warmup", "1").returncode == 0
    # without dropping the cold iteration of the new run its p50 is still fine (median), so also 0
    assert hil("compare", path, later).returncode == 0


def test_errors_are_one_line_without_traceback(tmp_path):
    res = hil("compare", tmp_path / "missing", tmp_path / "missing2")
    assert res.returncode == 2  # an input error (hil.cli.main: exit status 2)
    assert "hil compare:" in res.stderr and "missing" in res.stderr and "Traceback" not in res.stderr
    (tmp_path / "x.json").write_text('{"schema": "other"}')
    res = hil("compare", tmp_path / "x.json", tmp_path / "x.json")
    assert res.returncode == 2 and "neither a profile" in res.stderr
    res = hil("report", tmp_path / "nope.db", "--out", tmp_path / "r.html")
    assert res.returncode == 2 and "no such file" in res.stderr and not (tmp_path / "r.html").exists()


def test_report_and_trace_commands_write_their_files(tmp_path):
    from hil.regress.history import record_run

    db = tmp_path / "h.db"
    for seed in range(3):
        record_run(db, synth_profile(seed=seed), {"written_at": f"2026-01-0{seed + 1}T00:00:00Z"}, passed=True)
    res = hil("report", db, "--out", tmp_path / "r.html")
    assert res.returncode == 0, res.stderr
    assert "<svg" in (tmp_path / "r.html").read_text()
    run = run_folder(tmp_path, "run", synth_profile(seed=1))
    res = hil("trace", run)
    assert res.returncode == 0, res.stderr
    assert json.loads((run / "trace.json").read_text())["traceEvents"]
