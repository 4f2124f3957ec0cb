"""The README and the pages it links (docs/, CONTRIBUTING.md) document what the product has: every `hil` command,
fixture and marker, and only files that exist. The README's first screen tells a newcomer what to type."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import hil.plugin.hooks
import hil.plugin.regress_hooks
from hil.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
DOCS = "\n".join(page.read_text() for page in PAGES)


def test_every_hil_command_is_in_the_readme():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in sub.choices:
        assert re.search(rf"^hil {re.escape(name)}\b", DOCS, re.M), name


def test_every_fixture_and_marker_is_documented():
    fixtures = [name for module in (hil.plugin.hooks, hil.plugin.regress_hooks) for name, value in vars(module).items()
                if name.startswith("hil_") and "fixture" in type(value).__name__.lower()]
    assert {"hil_profile", "hil_board", "hil_board_config", "hil_artifacts_dir", "hil_budget"} <= set(fixtures)
    for name in fixtures:
        assert f"`{name}`" in DOCS, name
    for marker in ("hil_budget", "device", "hil_requires"):
        assert f"@pytest.mark.{marker}" in DOCS, marker


def test_no_reference_to_a_file_that_is_not_in_the_repository():
    for path in re.findall(r"`((?:hil|tests|boards|budgets|firmware|bench|docs)/[\w./-]+\.(?:py|md|toml|ld|h|c|mk))`",
                           DOCS):
        assert (REPO / path).is_file(), path
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, timeout=60,
                             check=True).stdout.split()
    for name in ("FACTS" + ".md", "DESIGN" + ".md"):  # notes users never had; state the facts where they are used
        offenders = [f for f in tracked if (REPO / f).is_file() and f != "tests/unit/test_readme.py"
                     and name in (REPO / f).read_text(errors="replace")]
        assert offenders == [], (name, offenders)


def test_the_first_screen_says_what_it_is_and_what_to_type():
    first_screen = "\n".join(README.splitlines()[:40])
    assert "make demo" in first_screen and "make test" in first_screen
    assert "## What runs where" in first_screen and "Python 3.11" in first_screen
    for page in re.findall(r"`(docs/[\w-]+\.md)`", README):  # every page the README links exists
        assert (REPO / page).is_file(), page


DEMO = REPO / "tests" / "fixtures" / "demo"  # what `make demo`'s first command (CPU-only cifar10) wrote, kept
DEMO_TICKS_PER_US = 20  # the runtime image's timer: 20 MHz of emulated time (1 us = 250 instructions at 4 ns)


def _readme_demo_row(name: str) -> float:
    block = README[README.index("cifar10 on qemu [runtime firmware"):]
    block = block[: block.index("```")]
    (row,) = [line for line in block.splitlines() if line.startswith(name)][:1]
    return float(row.split()[-2])


def test_the_readmes_demo_figures_are_those_of_the_demo_runs_own_etdump_and_console():
    """The README's cifar10 table against the ETDump and console of a `make demo` run (tests/fixtures/demo),
    read with ExecuTorch's own ETDump reader and by hand here, not by the harness's analysis: p50 of the
    five runs' durations, in the timer's 20 MHz ticks."""
    import statistics

    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc

    dump = deserialize_from_etdump_flatcc((DEMO / "cifar10-cpu.etdump").read_bytes())
    durations: dict[str, list[int]] = {}
    for run in dump.run_data:
        seen: set[str] = set()
        for event in run.events:
            e = event.profile_event
            if e is not None and e.name not in seen:  # the first of each name per run: the table's first row of it
                seen.add(e.name)
                durations.setdefault(e.name, []).append(e.end_time - e.start_time)
    for row, name in (("Method::execute", "Method::execute"), ("native_call_constant_pad_nd.~", "native_call_constant_pad_nd.out"),
                      ("native_call_convolution.out", "native_call_convolution.out")):
        assert len(durations[name]) == 5
        assert _readme_demo_row(row) == round(statistics.median(durations[name]) / DEMO_TICKS_PER_US, 3), row
    console = (DEMO / "cifar10-cpu-serial.log").read_text()
    printed = re.findall(r"^Inference time: (\d+) us", console, re.M)
    assert f"console inference time: {', '.join(printed)} us" in README and len(printed) == 5
    assert "Inputs: 1 tensor(s) set by the debugger" in console  # the example inputs, not the zero fallback
    assert "seeded example inputs" in README


def test_the_readmes_first_test_shows_computed_numerics_on_the_qemu_board():
    """A newcomer's first `pytest --board qemu`: its model runs with a delegate whose outputs the board computes
    (the simulated NPU's are not: "numerics: outputs not computed (simulated NPU)"). The test itself, run verbatim
    from the wheel, is tests/system/test_installed_package.py's; this is the quick check of what it asks for."""
    import ast

    from hil.config.board_config import load_board_config
    from hil.numerics.check import skip_reason

    block = re.search(r"```python\n(# tests/test_perf\.py\n.*?)```", README, re.S)
    assert block, "the README's first test is gone"
    first = next(node for node in ast.walk(ast.parse(block.group(1))) if isinstance(node, ast.FunctionDef))
    (call,) = [node for node in ast.walk(first) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "hil_profile"]
    given = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    delegate = given.get("delegate", load_board_config("qemu").get("aot.delegate", "none"))
    assert skip_reason(enabled=True, firmware="runtime", delegate=delegate) is None, delegate
