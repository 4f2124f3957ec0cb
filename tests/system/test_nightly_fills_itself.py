"""The README's strict nightly, night after night, as a user runs it: et-hil installed from its wheel, a project
outside the checkout, `pytest --board qemu --hil-history DB --hil-strict --junitxml ...`, the history in a folder
outside the project (issue 42).

Nights 1-3 pass unjudged while the history fills (the terminal, the JUnit properties and the history row say
so); night 4 is judged against those three and passes with no warning at all (`-W error`). On every night the
project's ini file is read and its model path resolves against the project, though the history file (which
exists from night 2 on) lies elsewhere, and the JUnit XML validates as xunit2. A strict session whose named
baseline folder holds nothing for the model still fails: strict lets only a filling history pass unjudged.
The truths checked: pytest's exit codes, the XML read by xmlschema, the history read with sqlite3 itself.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from installed_wheel import clean_env
from installed_wheel import venv, wheel  # noqa: F401  (the fixtures)
from runtime_workspace import needs_runtime
from shared_firmware import cache_sharing_firmware
from test_shared_files import XUNIT2_XSD
from tiny_models import linear_relu_source

SUITE = textwrap.dedent(
    """
    def test_tiny(hil_profile):
        run = hil_profile("models/tiny.py:factory", delegate="none")
        assert run.profile["iterations"] == 3  # the project's ini file: hil_iterations = "3"
    """
)
INI = '[tool.pytest.ini_options]\nhil_iterations = "3"\nhil_firmware = "runtime"\n'
TEST_ID = "tests/test_tiny.py::test_tiny"


def _night(venv: Path, project: Path, db: Path, cache: Path, xml: str, *extra: str) -> subprocess.CompletedProcess:
    """One nightly, the README's command, from the project's folder (space-separated option values, as typed)."""
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "--board", "qemu",
         "--hil-history", str(db), "--hil-strict", "--junitxml", xml, *extra],
        cwd=project, capture_output=True, text=True, timeout=1200, env=clean_env(HIL_CACHE_DIR=str(cache)))


def _properties(xml: Path) -> dict[str, str]:
    import xmlschema

    xmlschema.XMLSchema(XUNIT2_XSD).validate(str(xml))
    found = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    return {name.rsplit("@", 1)[0]: value for name, value in found.items() if name.endswith(f"@{TEST_ID}")}


def _rows(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT passed, judged, not_judged, comparison FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()


@needs_runtime  # runtime-image instruction counts: the same model counts the same on night 4 as on night 1
def test_the_strict_nightly_fills_its_history_and_judges_the_fourth_night(venv, tmp_path):  # noqa: F811
    pytest.importorskip("xmlschema", reason="`make test` installs the test extra (pip install -e .[test])")
    project, store = tmp_path / "project", tmp_path / "elsewhere"
    (project / "tests").mkdir(parents=True)
    (project / "models").mkdir()
    store.mkdir()
    (project / "models" / "tiny.py").write_text(linear_relu_source(inputs=12, outputs=6, seed=42))
    (project / "tests" / "test_tiny.py").write_text(SUITE)
    (project / "pyproject.toml").write_text(INI)
    db, cache = store / "nightly.db", cache_sharing_firmware(tmp_path / "cache")

    for night in (1, 2, 3):
        done = _night(venv, project, db, cache, f"night{night}.xml")
        said = done.stdout + done.stderr
        assert done.returncode == 0, said[-4000:]
        section = said.split("hil: runs not judged", 1)[1]
        assert f"history filling: this run is passed run {night} of the 3 it needs" in section, said[-3000:]
        assert "record_xml_attribute" not in said and "1 passed, 1 warning" in said, said[-2000:]  # the one: not judged
        props = _properties(project / f"night{night}.xml")
        assert (props["hil.tiny.judged"], props["hil.tiny.not_judged"]) == ("false", "too-few-runs"), props
        assert props["hil.tiny.baseline_runs_needed"] == str(4 - night)

    done = _night(venv, project, db, cache, "night4.xml", "-W", "error::pytest.PytestWarning")
    said = done.stdout + done.stderr
    assert done.returncode == 0, said[-4000:]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("1 passed in") and "warning" not in last and "hil: runs not judged" not in said, said[-3000:]
    props = _properties(project / "night4.xml")
    assert (props["hil.tiny.judged"], props["hil.tiny.verdict"]) == ("true", "pass"), props

    rows = _rows(db)
    assert [(r[0], r[1], r[2]) for r in rows] == [(1, 0, "too-few-runs")] * 3 + [(1, 1, None)]
    assert json.loads(rows[3][3])["baseline_run_ids"] == [1, 2, 3]

    # strict with a baseline folder that holds nothing for the model, beside a new history: not a filling
    # history (a baseline was asked for and is missing), so the night fails; no-strict passes it unjudged.
    (project / "baselines").mkdir()
    fresh = store / "fresh.db"
    done = _night(venv, project, fresh, cache, "night5.xml", "--hil-baseline", "baselines")
    assert done.returncode == 1, (done.stdout + done.stderr)[-4000:]
    assert "no baseline under baselines" in done.stdout and "a failure because --hil-strict is on" in done.stdout
    assert [(r[0], r[1], r[2]) for r in _rows(fresh)] == [(0, 0, "no-baseline")]
