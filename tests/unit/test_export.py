"""hil.aot.export and hil.aot.cache: real exports, the content-hash cache, and the lowering registry."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from hil.aot import cache as cache_mod
from hil.aot import export as export_mod
from hil.aot.export import CompiledModel, LoweringPlan, cache_key, export_model, load_inputs, register_lowering
from hil.aot.models import load_model
from hil.base.errors import ModelError

SMALL_CNN = Path(__file__).resolve().parent.parent / "fixtures" / "small_cnn.py"


@dataclass
class Timed:
    compiled: CompiledModel
    seconds: float


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("hil-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIL_CACHE_DIR", str(root))
        yield root


@pytest.fixture(scope="module")
def cifar10(cache_root: Path) -> Timed:
    started = time.perf_counter()
    compiled = export_model("cifar10")  # through HIL_CACHE_DIR, the default location
    return Timed(compiled, time.perf_counter() - started)


def test_export_writes_program_etrecord_inputs_and_meta(cifar10: Timed, cache_root: Path) -> None:
    compiled = cifar10.compiled
    assert not compiled.cached and not compiled.delegated
    # <cache>/models/<name>-<static key>/<variant by run-time reads>/; a built-in reads nothing of the user's.
    _, static = cache_key("cifar10")
    assert compiled.pte_path.parent.parent == cache_root / "models" / f"cifar10-{static[:16]}"
    assert compiled.reads.to_json()["files"] == {} and compiled.reads.to_json()["env"] == {}
    assert compiled.pte_path.read_bytes()[4:8] == b"ET12"
    assert compiled.etrecord_path.stat().st_size > 0
    expected = load_model("cifar10").example_inputs
    got = load_inputs(compiled)
    assert len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(got, expected))
    meta = json.loads((compiled.pte_path.parent / "meta.json").read_text())
    assert meta["cache_key"] == compiled.cache_key and meta["static_key"] == static and meta["delegate"] == "none"
    assert meta["pte_size"] == compiled.pte_path.stat().st_size
    assert set(meta["versions"]) == {"torch", "executorch", "et-hil"}
    # Nothing half-made is left beside the entry.
    assert [p.name for p in (cache_root / "models").iterdir()] == [compiled.pte_path.parent.parent.name]
    assert [p.name for p in compiled.pte_path.parent.parent.iterdir()] == [compiled.pte_path.parent.name]


def test_etrecord_is_accepted_by_the_inspector(cifar10: Timed) -> None:
    from executorch.devtools import Inspector

    from hil.replay.host_runtime import host_etdump

    compiled = cifar10.compiled
    etdump = host_etdump(compiled.pte_path.read_bytes(), load_inputs(compiled), 1)
    inspector = Inspector(etdump_data=etdump, etrecord=str(compiled.etrecord_path))
    op_types = {op for block in inspector.event_blocks for event in block.events for op in event.op_types}
    assert {"aten.convolution.default", "aten.max_pool2d_with_indices.default", "aten._softmax.default"} <= op_types


def test_second_call_is_a_fast_cache_hit(cifar10: Timed) -> None:
    started = time.perf_counter()
    again = export_model("cifar10")
    elapsed = time.perf_counter() - started
    first = cifar10.compiled
    assert again.cached
    paths = ("pte_path", "etrecord_path", "inputs_path")
    assert [getattr(again, p) for p in paths] == [getattr(first, p) for p in paths]
    assert again.cache_key == first.cache_key
    assert elapsed < min(0.5, cifar10.seconds / 10), (elapsed, cifar10.seconds)


def test_cache_hit_in_a_fresh_process_never_imports_torch(cifar10: Timed, cache_root: Path) -> None:
    code = (
        "import sys\nfrom hil.aot.export import export_model\n"
        "c = export_model('cifar10')\n"
        "print(c.cached, c.pte_path, 'torch' in sys.modules)\n"
    )
    env = {**os.environ, "HIL_CACHE_DIR": str(cache_root)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", str(cifar10.compiled.pte_path), "False"]


def test_editing_the_model_file_misses_the_cache(tmp_path: Path) -> None:
    user = tmp_path / "my_cnn.py"
    shutil.copy(SMALL_CNN, user)
    cache = tmp_path / "cache"
    first = export_model(f"{user}:factory", cache=cache)
    assert not first.cached
    original = user.read_text()
    user.write_text(original.replace("CHANNELS = 8", "CHANNELS = 6"))
    edited = export_model(f"{user}:factory", cache=cache)
    assert not edited.cached
    assert edited.cache_key != first.cache_key
    assert edited.pte_path.parent != first.pte_path.parent
    assert edited.pte_path.read_bytes() != first.pte_path.read_bytes()
    user.write_text(original)
    back = export_model(f"{user}:factory", cache=cache)
    assert back.cached and back.pte_path == first.pte_path
    # An entry someone damaged by hand is rebuilt, not served.
    back.etrecord_path.unlink()
    rebuilt = export_model(f"{user}:factory", cache=cache)
    assert not rebuilt.cached and rebuilt.etrecord_path.is_file() and rebuilt.pte_path == first.pte_path


def test_key_depends_on_delegate_and_options_not_their_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_mod, "_LOWERINGS", dict(export_mod._LOWERINGS))
    register_lowering("alt", lambda source, options: LoweringPlan())
    _, plain = cache_key("cifar10")
    _, with_opts = cache_key("cifar10", options={"quantize": True, "seed": 1})
    _, reordered = cache_key("cifar10", options={"seed": 1, "quantize": True})
    _, other_delegate = cache_key("cifar10", delegate="alt")
    assert plain != with_opts == reordered
    assert other_delegate != plain
    assert cache_key("cifar10") == ("cifar10", plain)


def test_unknown_delegate_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="unknown delegate 'tpu'") as info:
        export_model("cifar10", delegate="tpu", cache=tmp_path)
    assert "none" in str(info.value)
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_lazy_delegate_whose_module_is_absent_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(export_mod.LAZY_LOWERING_MODULES, "ghost", ("hil.aot.no_such_lowering",))
    with pytest.raises(ModelError, match="hil.aot.no_such_lowering, which is not installed"):
        export_model("cifar10", delegate="ghost", cache=tmp_path)


def _relu_partitioner() -> Any:
    """A real ExecuTorch partitioner that hands every ReLU to a stand-in backend.

    Exercises the same to_backend machinery a Neutron delegate uses, in well under a second
    (XNNPACK's lowering takes ~14 s here, too slow for a unit test).
    """
    from executorch.exir.backend.backend_details import BackendDetails, PreprocessResult
    from executorch.exir.backend.partitioner import DelegationSpec, Partitioner, PartitionResult

    class HilTestReluBackend(BackendDetails):  # found by class name when lowering
        @staticmethod
        def preprocess(edge_program: Any, compile_specs: Any) -> PreprocessResult:
            return PreprocessResult(processed_bytes=b"relu")

    class ReluPartitioner(Partitioner):
        def partition(self, exported_program: Any) -> PartitionResult:
            spec = DelegationSpec(HilTestReluBackend.__name__, [])
            tags = {}
            for index, node in enumerate(exported_program.graph_module.graph.nodes):
                if node.op == "call_function" and "relu" in str(node.target):
                    node.meta["delegation_tag"] = tags.setdefault(f"relu{index}", f"relu{index}")
            return PartitionResult(exported_program, {tag: spec for tag in tags})

    return ReluPartitioner()


def test_registered_lowering_quantizes_partitions_and_keeps_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A delegate plugged in by name: its quantize hook runs before export, its partitioner really
    delegates, and its extra survives a cache hit."""
    monkeypatch.setattr(export_mod, "_LOWERINGS", dict(export_mod._LOWERINGS))
    calls: list[str] = []

    def quantize(module: torch.nn.Module, inputs: tuple[Any, ...]) -> torch.nn.Module:
        calls.append(type(module).__name__)
        return module

    def after(edge: Any, program: Any) -> dict[str, Any]:
        return {"program_bytes": len(program.buffer), "kernel_map": {0: (3, 4)}}

    def lowering(source: Any, options: Any) -> LoweringPlan:
        return LoweringPlan(quantize=quantize, partitioners=[_relu_partitioner()], after_lowering=after,
                            extra={"backend": "relu-test", "options": dict(options)})

    register_lowering("test-relu", lowering)
    spec = f"{SMALL_CNN}:factory"
    compiled = export_model(spec, delegate="test-relu", cache=tmp_path, options={"profile": True})
    assert calls == ["SmallCnn"]
    assert compiled.delegated and not compiled.cached
    # Exactly what a cache hit reads back from JSON: int keys become strings, tuples lists.
    assert compiled.extra == {"backend": "relu-test", "options": {"profile": True}, "kernel_map": {"0": [3, 4]},
                              "program_bytes": compiled.pte_path.stat().st_size}
    assert b"HilTestReluBackend" in compiled.pte_path.read_bytes()
    again = export_model(spec, delegate="test-relu", cache=tmp_path, options={"profile": True})
    assert again.cached and again.extra == compiled.extra and calls == ["SmallCnn"]
    plain = export_model(spec, cache=tmp_path)
    assert not plain.delegated and plain.cache_key != compiled.cache_key


def test_extra_that_is_not_json_is_a_model_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(export_mod, "_LOWERINGS", dict(export_mod._LOWERINGS))
    register_lowering("bad-extra", lambda source, options: LoweringPlan(extra={"blob": object()}))
    with pytest.raises(ModelError, match="delegate 'bad-extra' gave extra data that is not JSON"):
        export_model(f"{SMALL_CNN}:factory", delegate="bad-extra", cache=tmp_path)
    assert list((tmp_path / "models").iterdir()) == []


def test_export_failure_is_a_model_error_and_caches_nothing(tmp_path: Path) -> None:
    user = tmp_path / "branchy.py"
    user.write_text(
        "import torch\n"
        "class Branchy(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.sum().item() > 0:  # data-dependent control flow: torch.export refuses it\n"
        "            return x * 2\n"
        "        return x\n"
        "def factory():\n"
        "    return Branchy(), (torch.ones(2),)\n"
    )
    with pytest.raises(ModelError, match="torch.export failed") as info:
        export_model(f"{user}:factory", cache=tmp_path / "cache")
    assert str(user) in str(info.value)
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_missing_inputs_file_is_a_model_error(cifar10: Timed, tmp_path: Path) -> None:
    broken = CompiledModel(**{**cifar10.compiled.__dict__, "inputs_path": tmp_path / "gone.pt"})
    with pytest.raises(ModelError, match="gone.pt"):
        load_inputs(broken)


# --- hil.aot.cache ----------------------------------------------------------------------------


def test_content_key_frames_its_parts(tmp_path: Path) -> None:
    def key(*parts: tuple[str, str]) -> str:
        k = cache_mod.ContentKey("t")
        for name, text in parts:
            k.add_text(name, text)
        return k.hexdigest()

    assert key(("a", "bc")) != key(("ab", "c"))
    assert key(("x", "ab"), ("y", "c")) != key(("x", "a"), ("y", "bc"))
    assert key(("x", "1")) == key(("x", "1"))
    one, two = tmp_path / "one.py", tmp_path / "two.py"
    one.write_text("A")
    two.write_text("B")
    swapped = cache_mod.ContentKey("t").add_file(one, name="two.py").add_file(two, name="one.py").hexdigest()
    assert cache_mod.ContentKey("t").add_files([one, two]).hexdigest() != swapped


def test_staged_dir_publishes_whole_or_not_at_all(tmp_path: Path) -> None:
    final = tmp_path / "entry"
    with pytest.raises(RuntimeError):
        with cache_mod.staged_dir(final) as staging:
            (staging / "half").write_text("x")
            raise RuntimeError("export died")
    assert list(tmp_path.iterdir()) == []
    with cache_mod.staged_dir(final) as staging:
        (staging / "file").write_text("first")
    # A racing writer that finishes second leaves the first one's entry untouched.
    with cache_mod.staged_dir(final) as staging:
        (staging / "file").write_text("second")
    assert (final / "file").read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["entry"]


def test_package_versions_reads_metadata() -> None:
    versions = cache_mod.package_versions("torch", "surely-not-a-package-xyz")
    assert versions["torch"] == torch.__version__.split("+")[0] or versions["torch"] == torch.__version__
    assert versions["surely-not-a-package-xyz"] == "missing"
