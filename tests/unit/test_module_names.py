"""The user's own layer names: each event's nn.Module path and source line from the ETRecord, checked against
the Inspector's own `module_hierarchy` / `stack_traces` and against hand-written fixtures, and shown by the
table, the budgets, the gate and JUnit with the same label."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from hil.records.module_names import event_places, module_path, source_line, where

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "conv_pair.py"
ITERATIONS = 3


def _line_of(path: Path, text: str) -> int:
    """The 1-based line of `path` holding `text` (found by the test, not by the product)."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# What torch.export 2.13 writes into a node's meta, copied from the Inspector's Event of a real export.
CONV2_STACK = {"L__self__": ("", "models.Net"), "L__self__conv2": ("conv2", "torch.nn.modules.conv.Conv2d")}
CONV2_TRACE = ('File "/home/me/proj/models.py", line 13, in forward\n    x = self.conv2(x)\n'
               '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 565, in forward\n'
               "    return self._conv_forward(input, self.weight, self.bias)")


def test_the_innermost_module_and_the_deepest_line_outside_torch_are_the_users_layer():
    assert module_path(CONV2_STACK) == "conv2"
    assert source_line(CONV2_TRACE) == "models.py:13"
    nested = {"L__self__": ("", "Net"), "L__self__head": ("head", "Sequential"), "L__self__head.1": ("head.1", "Linear")}
    assert module_path(nested) == "head.1"
    assert module_path({"L__self__": ("", "Net")}) is None  # torch.relu in the top forward: no layer
    assert module_path({"x": ("L['self'].block.conv", "Conv2d")}) == "block.conv"
    assert module_path(None) is None and source_line(None) is None
    # the user's own block in another file is deeper than the model's line: that is the layer's line
    two_files = ('File "/p/models.py", line 20, in forward\n    x = self.block(x)\n'
                 '  File "/p/blocks.py", line 7, in forward\n    return self.conv(x)\n'
                 '  File "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py", line 565, in forward\n')
    assert source_line(two_files) == "blocks.py:7"
    only_torch = 'File "/v/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1, in _call_impl\n'
    assert source_line(only_torch) is None
    # a user's own package called `torch_models` is not torch
    assert source_line('File "/v/site-packages/torch_models/net.py", line 4, in forward\n') == "net.py:4"


def test_places_are_each_named_once_in_the_inspectors_order_and_said_as_one_text():
    hierarchy = {"permute": {"a": ("head.1", "Linear")}, "addmm": {"a": ("head.1", "Linear")},
                 "relu": {"r": ("", "Net")}}
    traces = {"permute": 'File "/p/m.py", line 14, in forward\n', "addmm": 'File "/p/m.py", line 14, in forward\n',
              "relu": 'File "/p/m.py", line 12, in forward\n'}
    modules, sources = event_places(hierarchy, traces)
    assert (modules, sources) == (("head.1",), ("m.py:14", "m.py:12"))
    assert where(modules, sources) == "head.1 (m.py:14, m.py:12)"
    assert where((), ("m.py:12",)) == "(m.py:12)" and where((), ()) == "" and where(("fc",), ()) == "fc"


def _build(out: Path) -> None:
    """Export the conv_pair fixture (CPU only) and run it on the host runtime."""
    import torch
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from programs import write_host_etdump

    spec = importlib.util.spec_from_file_location("conv_pair", FIXTURE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, example = module.factory()
    edge = to_edge_transform_and_lower(torch.export.export(model, example), generate_etrecord=True)
    program = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    program.get_etrecord().save(str(out / "pair.etrecord"))
    write_host_etdump(program.buffer, example, ITERATIONS, out / "pair.etdump")


@pytest.fixture(scope="module")
def pair() -> Path:
    from programs import cached_folder

    return cached_folder("module-names", FIXTURE, _build)


@pytest.fixture
def pair_profile(pair: Path) -> dict[str, Any]:
    from hil.analysis.profile import build_profile

    return build_profile(pair / "pair.etdump", pair / "pair.etrecord", board="host", model="pair", simulated=False,
                         ticks_per_us=1000.0)


def test_each_event_names_the_layer_the_inspector_maps_it_to(pair: Path, pair_profile: dict[str, Any]) -> None:
    from executorch.devtools import Inspector

    inspector = Inspector(etdump_path=str(pair / "pair.etdump"), etrecord=str(pair / "pair.etrecord"))
    block = next(b for b in inspector.event_blocks if any(e.name == "Method::execute" for e in b.events))
    # the Inspector's own data: per kernel wrapper, the innermost nn_module_stack entry with a path
    theirs = [tuple(dict.fromkeys(p for stack in e.module_hierarchy.values()
                                  for p in [next((v[0] for v in reversed(list(stack.values())) if v[0]), None)] if p))
              for e in block.events if e.name.startswith("native_call_")]
    ours = [tuple(e["modules"]) for e in pair_profile["events"] if e["name"].startswith("native_call_")]
    assert ours == theirs == [("conv1",), (), ("conv2",)]  # conv1, relu (in the top forward), conv2
    conv1, conv2 = _line_of(FIXTURE, "self.conv1(x)"), _line_of(FIXTURE, "CONV2_LINE")
    convs = [e for e in pair_profile["events"] if e["name"] == "native_call_convolution.out"]
    assert [e["sources"] for e in convs] == [[f"conv_pair.py:{conv1}"], [f"conv_pair.py:{conv2}"]]


def test_the_table_names_conv2_beside_its_op_and_its_number(pair_profile: dict[str, Any]) -> None:
    from hil.cli.table import format_table

    lines = format_table(pair_profile).splitlines()
    conv2 = _line_of(FIXTURE, "CONV2_LINE")
    row = next(line for line in lines if line.startswith("native_call_convolution.o~ #2"))
    assert row.endswith(f"conv2 (conv_pair.py:{conv2})") and " cpu_op " in row
    assert lines[1].endswith("module (line)") and max(len(line) for line in lines) <= 100


def test_old_profiles_without_layers_read_validate_and_write_back_as_they_were() -> None:
    from hil.records.profile_model import Event
    from hil.records.validate.profile import check_event
    from hil.records.validate.fields import Fields

    old = {"name": "native_call_add.out", "kind": "cpu_op", "op_types": ["aten.add.Tensor"], "times_us": [1.0]}
    event = Event.from_json(old)
    assert event.modules == () and event.where == "" and event.to_json() == old
    check_event(Fields("old.json"), old, "events[0]")


@pytest.mark.parametrize(("value", "said"), [
    ({"modules": "conv2"}, "events[0].modules"),
    ({"modules": [3]}, "events[0].modules[0]"),
    ({"sources": ["models.py"]}, "events[0].sources[0]"),
])
def test_a_malformed_layer_field_is_refused_naming_the_file_and_key(value: dict[str, Any], said: str) -> None:
    from hil.base.errors import HilError
    from hil.records.validate.fields import Fields
    from hil.records.validate.profile import check_event

    event = {"name": "x", "kind": "cpu_op", "times_us": [1.0], **value}
    with pytest.raises(HilError) as caught:
        check_event(Fields("p.json"), event, "events[0]")
    assert "p.json" in str(caught.value) and said in str(caught.value) and "\n" not in str(caught.value)
