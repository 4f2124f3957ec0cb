"""Export a model to a .pte with its ETRecord, cached by content hash.

torch.export -> (optional quantization) -> to_edge_transform_and_lower(generate_etrecord=True)
-> to_executorch -> model.pte, etrecord.bin, inputs.pt, meta.json in
`<cache>/models/<name>-<key16>/`. The key covers everything that changes the bytes: the model's
source file, the local modules it imports and the data files it declares (hil.aot.deps), the
export/model code, the delegate and its lowering code, the options, and the torch / executorch /
et-hil versions. A cache hit reads meta.json and never imports torch.

Delegates plug in by name (`register_lowering`), so the simulated and the real Neutron backends
live in their own modules and are imported only when asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil import paths
from hil.aot.cache import ContentKey, package_versions, staged_dir
from hil.aot.models import ModelSource, load_model, resolve_spec
from hil.atomic import write_bytes, write_json
from hil.errors import ModelError

if TYPE_CHECKING:
    import torch
    from torch import nn

PTE_NAME, ETRECORD_NAME, INPUTS_NAME, META_NAME = "model.pte", "etrecord.bin", "inputs.pt", "meta.json"
META_SCHEMA = "et-hil/model/1"
VERSIONED_PACKAGES = ("torch", "executorch", "et-hil")
# The code that shapes every artifact is part of the key, so editing it never serves a stale .pte.
# A delegate's own code is keyed separately (see _lowering_key_files), so editing one delegate
# leaves the other delegates' cache entries valid.
_AOT_DIR = Path(__file__).resolve().parent
_PIPELINE_FILES = tuple(_AOT_DIR / name for name in ("export.py", "models.py", "cache.py", "cifarnet.py"))


@dataclass(frozen=True)
class CompiledModel:
    """An exported model in the cache. `extra` is JSON data from the lowering (kernel maps, ...)."""

    name: str
    pte_path: Path
    etrecord_path: Path
    inputs_path: Path
    delegated: bool
    cache_key: str
    cached: bool
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoweringPlan:
    """What a delegate asks export_model to do with one model.

    quantize:       (module, example_inputs) -> module to export instead (e.g. a PT2E-quantized one);
                    runs before torch.export, so a delegate can quantize first.
    partitioners / transform_passes / compile_config: passed to `to_edge_transform_and_lower`.
    after_lowering: (edge_manager, executorch_manager) -> JSON-able dict merged into `extra`,
                    for facts only known once lowered (e.g. a kernel-index -> debug-handle map).
    extra:          JSON-able facts known up front.
    """

    quantize: Callable[["nn.Module", tuple[Any, ...]], "nn.Module"] | None = None
    partitioners: list[Any] = field(default_factory=list)
    transform_passes: Sequence[Any] | None = None
    compile_config: Any = None
    after_lowering: Callable[[Any, Any], dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


LoweringFactory = Callable[[ModelSource, Mapping[str, Any]], LoweringPlan]


@dataclass(frozen=True)
class _Lowering:
    factory: LoweringFactory
    key_files: tuple[Path, ...]


_LOWERINGS: dict[str, _Lowering] = {}
# Delegates that live in their own modules, imported on first use: the first module calls
# register_lowering(); all of them are the delegate's code for the cache key. They are located
# without being imported, so a cache hit for them needs no torch either.
LAZY_LOWERING_MODULES: dict[str, tuple[str, ...]] = {
    "neutron-sim": ("hil.aot.neutron_sim",),
    "neutron": ("hil.aot.neutron_sdk",),
}


def register_lowering(name: str, factory: LoweringFactory, *, key_files: Sequence[Path] = ()) -> None:
    """Make `delegate=name` available. The file defining `factory` (plus `key_files`) joins the
    cache key, so changing the lowering code re-exports."""
    source = inspect.getsourcefile(factory)
    files = ([Path(source).resolve()] if source else []) + [Path(p).resolve() for p in key_files]
    _LOWERINGS[name] = _Lowering(factory, tuple(dict.fromkeys(files)))


def _no_delegate(source: ModelSource, options: Mapping[str, Any]) -> LoweringPlan:
    """Portable CPU kernels only: nothing to partition, nothing to quantize."""
    return LoweringPlan()


register_lowering("none", _no_delegate)


def available_delegates() -> list[str]:
    return sorted({*_LOWERINGS, *LAZY_LOWERING_MODULES})


def _lowering_key_files(delegate: str) -> tuple[Path, ...]:
    """Files of the delegate's lowering code. A lazy delegate is keyed by its module files whether
    or not they were imported yet, so a fresh process computes the key the exporting one did."""
    if delegate in LAZY_LOWERING_MODULES:
        return tuple(_module_origin(delegate, module) for module in LAZY_LOWERING_MODULES[delegate])
    if delegate in _LOWERINGS:
        return _LOWERINGS[delegate].key_files
    raise ModelError(f"unknown delegate '{delegate}'; available: {', '.join(available_delegates())}")


def _module_origin(delegate: str, module: str) -> Path:
    try:
        spec = importlib.util.find_spec(module)
    except ImportError:
        spec = None
    if spec is None or not spec.origin:
        raise ModelError(f"delegate '{delegate}' is provided by {module}, which is not installed")
    return Path(spec.origin)


def _lowering(delegate: str) -> _Lowering:
    if delegate not in _LOWERINGS and delegate in LAZY_LOWERING_MODULES:
        module = LAZY_LOWERING_MODULES[delegate][0]
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ModelError(f"delegate '{delegate}' needs {module}, which failed to import: {exc}") from exc
    if delegate not in _LOWERINGS:
        raise ModelError(f"unknown delegate '{delegate}'; available: {', '.join(available_delegates())}")
    return _LOWERINGS[delegate]


def cache_key(spec: str, *, delegate: str = "none", options: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(model name, sha256 hex key) for an export, computed without importing torch."""
    resolved = resolve_spec(spec)
    key = ContentKey(META_SCHEMA)
    key.add_files(resolved.source_files).add_text("factory", resolved.factory or "")
    # Local imports and declared data files, named by their place relative to the model file, so a
    # moved checkout keeps its cache and a helper moved to another folder does not.
    model_dir = resolved.source_files[0].parent
    for path in resolved.dependencies:
        key.add_file(path, name=os.path.relpath(path, model_dir))
    key.add_files(_PIPELINE_FILES).add_files(_lowering_key_files(delegate))
    key.add_text("delegate", delegate).add_json("options", dict(options or {}))
    key.add_json("versions", package_versions(*VERSIONED_PACKAGES))
    return resolved.name, key.hexdigest()


def export_model(
    spec: str,
    *,
    delegate: str = "none",
    cache: Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> CompiledModel:
    """The cached export of `spec` for `delegate`, exporting it first when not yet cached.

    `options` are handed to the delegate's lowering (e.g. {"quantize": True}) and are part of the key.
    """
    name, key = cache_key(spec, delegate=delegate, options=options)
    folder = _entry_folder(name, key, cache)
    hit = _read_entry(folder, key)
    if hit is not None:
        return hit
    with staged_dir(folder) as staging:
        meta = _export_into(staging, spec, delegate, dict(options or {}), key)
    return _entry(folder, meta, cached=False)


def cached_export(spec: str, *, delegate: str = "none", options: Mapping[str, Any] | None = None,
                  cache: Path | None = None) -> tuple[CompiledModel | None, Path]:
    """(the complete cache entry of this export or None, the folder it has or would have); no torch."""
    name, key = cache_key(spec, delegate=delegate, options=options)
    folder = _entry_folder(name, key, cache)
    return _read_entry(folder, key), folder


def _entry_folder(name: str, key: str, cache: Path | None) -> Path:
    return Path(cache or paths.cache_dir()) / "models" / f"{name}-{key[:16]}"


def is_cached(spec: str, *, delegate: str = "none", options: Mapping[str, Any] | None = None,
              cache: Path | None = None) -> bool:
    """Whether export_model would be a cache hit: decided without torch, to say "cache miss" before a slow export."""
    name, key = cache_key(spec, delegate=delegate, options=options)
    return (_entry_folder(name, key, cache) / META_NAME).is_file()


def load_inputs(compiled: CompiledModel) -> tuple["torch.Tensor", ...]:
    """The example inputs the model was exported with, for the host runtime and later stages."""
    import torch

    try:
        return tuple(torch.load(compiled.inputs_path, weights_only=True))
    except (OSError, RuntimeError) as exc:
        raise ModelError(f"cannot read example inputs {compiled.inputs_path}: {exc}") from exc


def _entry(folder: Path, meta: Mapping[str, Any], *, cached: bool) -> CompiledModel:
    return CompiledModel(
        name=meta["name"],
        pte_path=folder / PTE_NAME,
        etrecord_path=folder / ETRECORD_NAME,
        inputs_path=folder / INPUTS_NAME,
        delegated=bool(meta["delegated"]),
        cache_key=meta["cache_key"],
        cached=cached,
        extra=dict(meta.get("extra", {})),
    )


def _read_entry(folder: Path, key: str) -> CompiledModel | None:
    """A complete cache entry for `key`, or None. Entries are renamed into place whole, so a
    folder with meta.json is complete unless someone deleted files by hand; then it is rebuilt."""
    try:
        meta = json.loads((folder / META_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    entry = _entry(folder, meta, cached=True)
    complete = all(p.is_file() for p in (entry.pte_path, entry.etrecord_path, entry.inputs_path))
    if meta.get("cache_key") != key or not complete:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return entry


def _export_into(folder: Path, spec: str, delegate: str, options: dict[str, Any], key: str) -> dict[str, Any]:
    """Export for real, write the four files into `folder`, and return the meta written."""
    import torch

    started = time.perf_counter()
    lowering = _lowering(delegate)
    source = load_model(spec)
    plan = lowering.factory(source, options)
    program, edge = _lower(source, plan, delegate)
    extra = dict(plan.extra)
    if plan.after_lowering is not None:
        extra.update(plan.after_lowering(edge, program))
    delegated = _has_delegate(edge)
    write_bytes(folder / PTE_NAME, program.buffer)
    program.get_etrecord().save(str(folder / ETRECORD_NAME))
    torch.save(tuple(source.example_inputs), folder / INPUTS_NAME)
    meta = {
        "schema": META_SCHEMA,
        "name": source.name,
        "spec": spec,
        "delegate": delegate,
        "delegated": delegated,
        "options": options,
        "cache_key": key,
        "source_files": [str(p) for p in source.source_files],
        "versions": package_versions(*VERSIONED_PACKAGES),
        "pte_size": len(program.buffer),
        "export_s": round(time.perf_counter() - started, 3),
        "extra": extra,
    }
    try:
        # Round-tripped so a fresh export returns exactly what a later cache hit reads back
        # (JSON turns int keys, e.g. of a kernel map, into strings).
        meta = json.loads(json.dumps(meta))
    except (TypeError, ValueError) as exc:
        raise ModelError(f"delegate '{delegate}' gave extra data that is not JSON ({exc}) for '{spec}'") from exc
    write_json(folder / META_NAME, meta)
    return meta


def _lower(source: ModelSource, plan: LoweringPlan, delegate: str) -> tuple[Any, Any]:
    """(ExecutorchProgramManager, EdgeProgramManager); any framework failure becomes a ModelError
    naming the model's files, since that is what the user can change."""
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from torch.export import export

    where = f"model '{source.name}' ({', '.join(map(str, source.source_files))}), delegate '{delegate}'"
    module, stage = source.module, "quantization"
    try:
        if plan.quantize is not None:
            module = plan.quantize(module, source.example_inputs)
        stage = "torch.export"
        exported = export(module, source.example_inputs)
        stage = "lowering to edge"
        edge = to_edge_transform_and_lower(
            exported,
            partitioner=list(plan.partitioners),
            transform_passes=plan.transform_passes,
            compile_config=plan.compile_config,
            generate_etrecord=True,
        )
        stage = "to_executorch"
        # Delegate payloads stay inline: the firmware links the .pte as one C array.
        program = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False))
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"{stage} failed for {where}: {type(exc).__name__}: {exc}") from exc
    return program, edge


def _has_delegate(edge: Any) -> bool:
    """True when the lowered graph calls a backend: read from the graph, not assumed from the name."""
    graph = edge.exported_program().graph_module.graph
    return any(node.op == "call_function" and "executorch_call_delegate" in str(node.target) for node in graph.nodes)
