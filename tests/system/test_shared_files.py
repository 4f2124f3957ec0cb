"""Files people share: modes that follow the umask, JUnit XML that validates as xunit2, the project's commit.

One pytest session in a project of its own (a git repository this test creates and commits to),
with a fresh export cache (its firmware folder the suite's: the runtime libraries are built once per suite, the
tiny model's image is linked by this session), profiles a tiny model and writes JUnit XML and a history; `hil report` draws
it. Then, from outside the harness: every file and folder it wrote has the mode `open()`/`mkdir()`
give under umask 022; the XML passes an XSD of the xunit2 rules (properties only at suite level,
testcase attributes limited to name/classname/time) with numeric key figures; the manifest names
the project's commit as git itself reports it.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shared_firmware import cache_sharing_firmware
from tiny_models import linear_relu_source

# The xunit2 rules pytest follows (its default junit_family), written out for this test: a testcase
# holds only outcome and output elements, and properties live in the testsuite.
XUNIT2_XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:complexType name="outcome" mixed="true">
    <xs:attribute name="type" type="xs:string"/>
    <xs:attribute name="message" type="xs:string"/>
  </xs:complexType>
  <xs:element name="property">
    <xs:complexType>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="value" type="xs:string" use="required"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="properties">
    <xs:complexType><xs:sequence><xs:element ref="property" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
    </xs:complexType>
  </xs:element>
  <xs:element name="testcase">
    <xs:complexType>
      <xs:choice minOccurs="0" maxOccurs="unbounded">
        <xs:element name="skipped" type="outcome"/>
        <xs:element name="error" type="outcome"/>
        <xs:element name="failure" type="outcome"/>
        <xs:element name="system-out" type="xs:string"/>
        <xs:element name="system-err" type="xs:string"/>
      </xs:choice>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="classname" type="xs:string"/>
      <xs:attribute name="time" type="xs:string"/>
      <xs:attribute name="group" type="xs:string"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuite">
    <xs:complexType>
      <xs:choice minOccurs="0" maxOccurs="unbounded">
        <xs:element ref="properties"/>
        <xs:element ref="testcase"/>
        <xs:element name="system-out" type="xs:string"/>
        <xs:element name="system-err" type="xs:string"/>
      </xs:choice>
      <xs:anyAttribute processContents="skip"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence><xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
      <xs:anyAttribute processContents="skip"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""

TINY = linear_relu_source(inputs=8, outputs=4, seed=1)

SUITE = textwrap.dedent(
    """
    def test_tiny(hil_profile):
        assert hil_profile("tiny.py:factory", delegate="none", iterations=2).profile["events"]
    """
)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60).stdout.strip()


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    project = tmp_path_factory.mktemp("shared") / "project"
    project.mkdir()
    (project / "tiny.py").write_text(TINY)
    (project / "test_tiny.py").write_text(SUITE)
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "project")
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_SHA", "CI_COMMIT_SHA")}
    env["HIL_CACHE_DIR"] = str(cache_sharing_firmware(project / "cache"))

    def umask_022() -> None:
        os.umask(0o022)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--board", "qemu", "--rootdir", str(project),
         "--junitxml", "out/junit.xml", "--hil-history", "out/history.db", "test_tiny.py"],
        cwd=project, env=env, capture_output=True, text=True, timeout=900, preexec_fn=umask_022,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    report = subprocess.run([sys.executable, "-m", "hil.cli.main", "report", "out/history.db", "--out", "out/report.html"],
                            cwd=project, env=env, capture_output=True, text=True, timeout=300, preexec_fn=umask_022)
    assert report.returncode == 0, report.stderr
    return project


def test_everything_written_is_readable_by_others_under_umask_022(session):
    wrong = []
    (manifest,) = (session / "hil-artifacts").rglob("manifest.json")
    image = Path(json.loads(manifest.read_text())["firmware"]).parent  # the image folder this session linked
    # rglob does not enter the cache's `firmware` link (the suite's folder), so the image is named on its own.
    for root in (session / "hil-artifacts", session / "cache", session / "out", image):
        for path in [root, *root.rglob("*")]:
            mode = stat.S_IMODE(path.stat().st_mode)
            allowed = (0o755,) if path.is_dir() else (0o644, 0o755)  # 0755: an executable (the linked ELF)
            if mode not in allowed:
                wrong.append(f"{oct(mode)} {path.relative_to(session)}")
    assert not wrong, wrong
    assert list((session / "cache").rglob("model.pte")) and list((session / "hil-artifacts").rglob("profile.json"))


def test_junit_xml_is_valid_xunit2_with_numeric_figures(session):
    import xml.etree.ElementTree as ET

    try:
        import xmlschema
    except ImportError:
        pytest.fail("xmlschema is missing: `make test` installs the test extra (pip install -e .[test])")
    xml = session / "out" / "junit.xml"
    xmlschema.XMLSchema(XUNIT2_XSD).validate(str(xml))

    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    test_id = "@test_tiny.py::test_tiny"
    assert float(props[f"hil.tiny.total_us{test_id}"]) > 0
    assert int(props[f"hil.tiny.cpu_fallback_op_count{test_id}"]) >= 1  # a CPU-only program: every op falls back
    assert float(props[f"hil.tiny.top1.p50_us{test_id}"]) > 0


def test_the_manifest_records_the_projects_commit(session):
    head = _git(session, "rev-parse", "HEAD")
    (manifest,) = (session / "hil-artifacts").rglob("manifest.json")
    recorded = json.loads(manifest.read_text())["project_commit"]
    assert recorded["commit"] == head and recorded["source"] == f"git {session.resolve()}"


def test_outside_a_repository_the_ci_variable_names_the_commit(tmp_path, monkeypatch):
    from hil.records.manifest import CI_COMMIT_VARIABLES, project_commit

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # never find a repository above
    for name in CI_COMMIT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert project_commit(tmp_path) is None
    monkeypatch.setenv("CI_COMMIT_SHA", "0123abcd" * 5)
    assert project_commit(tmp_path) == {"commit": "0123abcd" * 5, "source": "CI_COMMIT_SHA", "dirty": None}
