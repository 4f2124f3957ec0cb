"""The import graph of hil/ (read with ast here, not by hil.layers alone): no circle, no arrow up a floor, no two
top-level packages that import each other, and a short root."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hil.layers import (FLOORS, MAX_ROOT_MODULES, PACKAGE, cycles, floor_of, import_graph, package_ties, root_modules,
                        top_level, upward_arrows)

MAX_UPWARD = 0


def test_no_circle_of_imports_and_at_most_two_arrows_up():
    graph = import_graph()
    assert cycles(graph) == []
    up = upward_arrows(graph)
    assert len(up) <= MAX_UPWARD, up


def test_every_module_has_a_floor_and_the_graph_sees_lazy_imports():
    graph = import_graph()
    for module in graph:
        floor_of(module)  # KeyError names a module on no floor
    assert "hil.report.trace" in graph["hil.run.pipeline"]  # imported inside a function
    assert "hil.config.board_config" not in graph["hil.config.inputs"]  # only under TYPE_CHECKING


def test_no_two_top_level_packages_import_each_other_and_the_root_is_short():
    """Counted by each import's top-level folder (or root module) of hil/, as a reader of the folders sees them."""
    graph = import_graph()
    assert package_ties(graph) == []
    assert len(root_modules()) <= MAX_ROOT_MODULES, root_modules()
    for package in {top_level(m) for m in graph} - {"hil"}:  # each folder sits on one floor
        assert len({floor_of(m) for m in graph if top_level(m) == package}) == 1, package


def test_a_tie_between_packages_is_found_from_module_imports():
    graph = {"hil.a.x": {"hil.b.y"}, "hil.b.z": {"hil.a.w"}, "hil.a.w": set(), "hil.b.y": set(), "hil.c": {"hil.a.x"}}
    assert package_ties(graph) == [("hil.a", "hil.b")]
    assert top_level("hil.run.pipeline") == "hil.run" and top_level("hil.layers") == "hil.layers"


def test_a_circle_and_an_upward_arrow_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert upward_arrows({"hil.base.errors": {"hil.cli.main"}, "hil.cli.main": {"hil.base.errors"}}) == [("hil.base.errors", "hil.cli.main")]


def test_judging_imports_neither_the_report_nor_the_plugins():
    """`regress` judges and never publishes, and never reaches up to the front ends."""
    for path in sorted((PACKAGE / "regress").glob("*.py")):
        text = path.read_text()
        assert not re.search(r"^\s*(from|import) hil\.(report|plugin\w*|cli\w*)\b", text, re.M), path


# Keys only the profile and manifest models may read by name (hil.records.profile_model, hil.records.manifest).
PROFILE_KEYS = ("totals_us", "events", "times_us", "npu_fraction", "warmup_iterations", "p50_us", "mad_us",
                "op_types", "cpu_fallback_ops", "time_base", "firmware_sha256", "written_at", "git_commit", "numerics",
                "drift", "drift_snr_db", "drift_inputs")
# Readers of profiles and manifests: the modules that took a dict and now take a Profile / Manifest.
CONSUMERS = ("cli/table.py", "cli/inspect_cmd.py", "analysis/warmup.py", "report/figures.py",
             "report/html.py", "report/timeline.py", "report/trace.py", "regress/budgets.py", "regress/compare.py",
             "regress/history.py", "regress/baseline.py", "regress/judge.py", "regress/identity.py",
             "regress/stats.py", "regress/runs.py", "plugin/regress_hooks.py", "cli/regress_cmds.py", "run/pipeline.py",
             "run/board_session.py", "run/folder.py", "records/evidence.py", "numerics/gate.py", "numerics/budget.py",
             "drift/report.py", "drift/run_step.py")


# Dicts that share a key name with a profile but are not one: (module, the expression read from).
NOT_A_PROFILE = {
    ("report/html.py", "recorded"), ("report/html.py", "e"),  # the comparison the history stored (JSON text)
    ("report/html.py", "run"), ("report/html.py", "latest_run"),  # history rows of the runs table
    ("report/figures.py", "figures"), ("report/figures.py", "f"),  # key_figures' own summary
    ("regress/history.py", "row"),  # an events-table row, before it becomes an Event
    ("run/pipeline.py", "sections"),  # the sections a run adds, before they become the Profile's fields
    ("regress/runs.py", "data"), ("regress/runs.py", "data['profile']"),  # a file's shape, checked before parsing
    ("regress/baseline.py", "run.provenance"),  # a baseline file's provenance (its recorded time base key)
}


def _string_key_reads(tree: ast.AST, module: str) -> list[str]:
    found = []
    for node in ast.walk(tree):
        key, receiver = None, None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.slice, ast.Constant):
            key, receiver = node.slice.value, node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            key, receiver = node.args[0].value, node.func.value
        if key in PROFILE_KEYS and (module, ast.unparse(receiver)) not in NOT_A_PROFILE:
            found.append(f"line {node.lineno}: {ast.unparse(receiver)}[{key!r}]")
    return found


def test_no_consumer_reads_a_profile_or_manifest_by_string_key():
    offenders = {name: reads for name in CONSUMERS
                 if (reads := _string_key_reads(ast.parse((PACKAGE / name).read_text()), name))}
    assert offenders == {}


def test_the_grep_finds_a_string_key_read():
    tree = ast.parse("def f(profile, manifest):\n    return profile['totals_us'], manifest.get('firmware_sha256')")
    assert _string_key_reads(tree, "x.py") == ["line 2: profile['totals_us']", "line 2: manifest['firmware_sha256']"]


def test_the_floors_are_declared_lowest_first_with_the_front_ends_on_top():
    names = [name for name, _ in FLOORS]
    assert names[0] == "base" and names[-1] == "front ends" and len(set(names)) == len(names)
    assert floor_of("hil.cli.main") == floor_of("hil.plugin.hooks") == floor_of("hil.plugin.regress_hooks") == len(FLOORS) - 1
    assert Path(PACKAGE / "layers.py").is_file()
