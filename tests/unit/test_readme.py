"""The README documents what the product has: every `hil` command, fixture and marker, and only files that exist."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import hil.plugin
import hil.regress.pytest_regress
from hil.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def test_every_hil_command_is_in_the_readme():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in sub.choices:
        assert re.search(rf"^hil {re.escape(name)}\b", README, re.M), name


def test_every_fixture_and_marker_is_documented():
    fixtures = [name for module in (hil.plugin, hil.regress.pytest_regress) for name, value in vars(module).items()
                if name.startswith("hil_") and "fixture" in type(value).__name__.lower()]
    assert {"hil_profile", "hil_board", "hil_board_config", "hil_artifacts_dir", "hil_budget"} <= set(fixtures)
    for name in fixtures:
        assert f"`{name}`" in README, name
    for marker in ("hil_budget", "device", "hil_requires"):
        assert f"@pytest.mark.{marker}" in README, marker


def test_no_reference_to_a_file_that_is_not_in_the_repository():
    for path in re.findall(r"`((?:hil|tests|boards|budgets|firmware|bench|docs)/[\w./-]+\.(?:py|md|toml|ld|h|c|mk))`",
                           README):
        assert (REPO / path).is_file(), path
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, timeout=60,
                             check=True).stdout.split()
    for name in ("FACTS" + ".md", "DESIGN" + ".md"):  # notes users never had; state the facts where they are used
        offenders = [f for f in tracked if (REPO / f).is_file() and f != "tests/unit/test_readme.py"
                     and name in (REPO / f).read_text(errors="replace")]
        assert offenders == [], (name, offenders)
