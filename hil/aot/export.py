"""Export a model to a .pte with its ETRecord, cached by content hash.

torch.export -> (optional quantization) -> to_edge_transform_and_lower(generate_etrecord=True)
-> to_executorch -> model.pte, etrecord.bin, inputs.pt, meta.json, reads.json (and their sha256.json,
written last and checked by every read: hil.base.entry_check) in
`<cache>/models/<name>-<static16>/<variant16>/` (hil.aot.entries). The static key covers what can be
read without running the model: its source file, the local modules it imports and the data files it
declares (hil.aot.deps), the export/model code, the delegate and its lowering code, the options, and
the torch / executorch / et-hil versions. What the model's code reads while it runs (files, folders,
environment variables: hil.aot.follow) is recorded in reads.json and checked again by every lookup
(hil.aot.reads), so a retrained checkpoint or a changed variable misses. A hit re-hashes those files
and never imports torch.

Delegates plug in by name (`register_lowering`), so the simulated and the real Neutron backends
live in their own modules and are imported only when asked for.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.base import native_log, paths
from hil.aot import entries, follow, quantize, references
from hil.aot.quantize_step import example_references, pt2e_hook, quantized_module
from hil.aot.cache import ContentKey, package_versions, publish_dir, staging_dir
from hil.aot.entries import ETRECORD_NAME, INPUTS_NAME, META_NAME, PTE_NAME
from hil.aot.models import ModelSource, ResolvedSpec, load_model, resolve_spec
from hil.aot.reads import Reads, write_reads
from hil.base.atomic import write_bytes, write_json
from hil.base.entry_check import seal
from hil.base.errors import ModelError

if TYPE_CHECKING:
    import torch
    from torch import nn

META_SCHEMA = "et-hil/model/2"  # /2: entries are variants by run-time reads (hil.aot.entries)
VERSIONED_PACKAGES = ("torch", "executorch", "et-hil")
# The code that shapes every artifact is part of the key, so editing it never serves a stale .pte.
# A delegate's own code is keyed separately (see _lowering_key_files), so editing one delegate
# leaves the other delegates' cache entries valid.
_AOT_DIR = Path(__file__).resolve().parent
_PIPELINE_FILES = tuple(_AOT_DIR / name for name in ("export.py", "models.py", "cache.py", "cifarnet.py",
                                                      "entries.py", "reads.py", "follow.py",
                                                      "native_trace.py", "references.py", "references_run.py", "quantize.py",
                                                      "quantize_step.py"))


@dataclass(frozen=True)
class CompiledModel:
    """An exported model in the cache. `extra` is JSON data from the lowering (kernel maps, ...).

    `cache_key` is the entry's own key: the static key and the run-time reads (`reads`) together.
    """

    name: str
    pte_path: Path
    etrecord_path: Path
    inputs_path: Path
    delegated: bool
    cache_key: str
    cached: bool
    extra: dict[str, Any] = field(default_factory=dict)
    reads: Reads = field(default_factory=Reads)
    quantization: quantize.QuantizationRecord | None = None  # None: a float program


@dataclass
class LoweringPlan:
    """What a delegate asks export_model to do with one model.

    quantize:       (module, example_inputs) -> module to export instead (e.g. a PT2E-quantized one);
                    runs before torch.export; a hook that quantizes sets `quantization` (what manifests say).
    partitioners / transform_passes / compile_config: passed to `to_edge_transform_and_lower`.
    edge_transform: edge_manager -> edge_manager, after `to_edge_transform_and_lower` and before
                    `to_executorch`: a backend that rewrites the edge graph in place (cortex-m) rather than
                    delegating a partition; the edge manager keeps its ETRecord.
    after_lowering: (edge_manager, executorch_manager) -> JSON-able dict merged into `extra`,
                    for facts only known once lowered (e.g. a kernel-index -> debug-handle map).
    memory_planning: the memory planning pass of `to_executorch` (ExecuTorch's default when None).
    extra:          JSON-able facts known up front.
    """

    quantize: Callable[["nn.Module", tuple[Any, ...]], "nn.Module"] | None = None
    partitioners: list[Any] = field(default_factory=list)
    transform_passes: Sequence[Any] | None = None
    compile_config: Any = None
    edge_transform: Callable[[Any], Any] | None = None
    after_lowering: Callable[[Any, Any], dict[str, Any]] | None = None
    memory_planning: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    quantization: quantize.QuantizationRecord | None = None


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
    "cortex-m": ("hil.aot.cortex_m", "hil.aot.dim_order"),
}


def register_lowering(name: str, factory: LoweringFactory, *, key_files: Sequence[Path] = ()) -> None:
    """Make `delegate=name` available. The file defining `factory` (plus `key_files`) joins the
    cache key, so changing the lowering code re-exports."""
    source = inspect.getsourcefile(factory)
    files = ([Path(source).resolve()] if source else []) + [Path(p).resolve() for p in key_files]
    _LOWERINGS[name] = _Lowering(factory, tuple(dict.fromkeys(files)))


def _no_delegate(source: ModelSource, options: Mapping[str, Any]) -> LoweringPlan:
    """Portable CPU kernels only; with `quantize`, the int8 per-tensor scheme, leaving quantized_decomposed
    quantize/dequantize operators around float ones (ExecuTorch's quantized portable kernels run them)."""
    plan = LoweringPlan()
    if quantize.wants_quantization(options):
        plan.quantize = pt2e_hook(plan, options, quantize.neutron_scheme_quantizer, quantize.NEUTRON_SCHEME)
    return plan


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


def lowering_plan(delegate: str, source: ModelSource, options: Mapping[str, Any]) -> LoweringPlan:
    return _lowering(delegate).factory(source, options)  # what the export follows (and hil.aot.quantize_step)


def cache_key(spec: str, *, delegate: str = "none", options: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(model name, static sha256 hex key) for an export, computed without importing torch or running
    the model; which entry under it is served is decided by the recorded reads (hil.aot.entries)."""
    resolved, key = _static_key(spec, delegate, options)
    return resolved.name, key


def _static_key(spec: str, delegate: str, options: Mapping[str, Any] | None) -> tuple[ResolvedSpec, str]:
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
    return resolved, key.hexdigest()


def export_model(
    spec: str,
    *,
    delegate: str = "none",
    cache: Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> CompiledModel:
    """The cached export of `spec` for `delegate`, exporting it first when no entry's reads still hold.

    `options` are handed to the delegate's lowering (e.g. {"quantize": True}) and are part of the key.
    """
    resolved, key = _static_key(spec, delegate, options)
    folder = _entry_folder(resolved.name, key, cache)
    hit = _lookup(folder, key, resolved)
    if hit is not None:
        return hit
    try:
        with staging_dir(folder, ".staging-") as staging:
            meta, reads = _export_into(staging, spec, resolved, delegate, dict(options or {}), key)
            final = folder / entries.variant_name(reads)
            publish_dir(staging, final)  # False: the same reads were published by another session first
    except BaseException:
        with contextlib.suppress(OSError):
            folder.rmdir()  # a failed export leaves nothing, not even its empty folder
        raise
    if not reads.cacheable:
        entries.remove_old_uncached(folder, keep=final)
    return _entry(final, meta, reads, cached=False)


def cached_export(spec: str, *, delegate: str = "none", options: Mapping[str, Any] | None = None,
                  cache: Path | None = None) -> tuple[CompiledModel | None, Path]:
    """(the valid cache entry of this export or None, the static folder its entries live in); no torch."""
    resolved, key = _static_key(spec, delegate, options)
    folder = _entry_folder(resolved.name, key, cache)
    return _lookup(folder, key, resolved), folder


def entry_at(folder: Path) -> CompiledModel | None:
    """The entry an export just made in `folder` (what hil.aot.isolated's child reports), read back
    without checking its keys again: it is what just ran, cacheable or not."""
    found = entries.read_meta(Path(folder), None)
    return None if found is None else _entry(Path(folder), *found, cached=False)


def _entry_folder(name: str, key: str, cache: Path | None) -> Path:
    return Path(cache or paths.cache_dir()) / "models" / f"{name}-{key[:16]}"


def _lookup(folder: Path, key: str, resolved: ResolvedSpec) -> CompiledModel | None:
    model_dir = None if resolved.builtin else resolved.source_files[0].parent
    found = entries.find_valid(folder, key, model_dir)
    return None if found is None else _entry(*found, cached=True)


def is_cached(spec: str, *, delegate: str = "none", options: Mapping[str, Any] | None = None,
              cache: Path | None = None) -> bool:
    """Whether export_model would be a cache hit: decided without torch, to say "cache miss" before a slow export."""
    return cached_export(spec, delegate=delegate, options=options, cache=cache)[0] is not None


def load_inputs(compiled: CompiledModel) -> tuple["torch.Tensor", ...]:
    """The example inputs the model was exported with, for the host runtime and later stages."""
    import torch

    try:
        return tuple(torch.load(compiled.inputs_path, weights_only=True))
    except (OSError, RuntimeError) as exc:
        raise ModelError(f"cannot read example inputs {compiled.inputs_path}: {exc}") from exc


def _entry(folder: Path, meta: Mapping[str, Any], reads: Reads, *, cached: bool) -> CompiledModel:
    return CompiledModel(
        name=meta["name"],
        pte_path=folder / PTE_NAME,
        etrecord_path=folder / ETRECORD_NAME,
        inputs_path=folder / INPUTS_NAME,
        delegated=bool(meta["delegated"]),
        cache_key=meta["cache_key"],
        cached=cached,
        extra=dict(meta.get("extra", {})),
        reads=reads,
        quantization=quantize.QuantizationRecord.from_json(meta.get("quantization")),
    )


def _export_into(folder: Path, spec: str, resolved: ResolvedSpec, delegate: str, options: dict[str, Any],
                 key: str) -> tuple[dict[str, Any], Reads]:
    """Export for real, write the five files into `folder`, and return the meta and the reads written.

    The model's code (its file's top level, the factory, its forward while traced) runs inside a
    recording (hil.aot.follow): what it reads becomes the entry's reads.json. The numerics references of
    the example inputs (hil.aot.references) are computed here too, where the model's code already runs
    (the export's child, for a user's model), and kept in the entry: the eager outputs from the eval-mode
    module before any lowering or quantization touches it, the host runtime's from the program made.
    """
    import torch

    started = time.perf_counter()
    model_file = None if resolved.builtin else resolved.source_files[0]
    # The files of the static key are keyed already; torch reads the model's source at whim (linecache).
    keyed = (folder, *resolved.source_files, *resolved.dependencies)
    with follow.recording(model_file, ignore=keyed) as recorded:
        source = load_model(spec)
        plan = lowering_plan(delegate, source, options)
        module, record = quantized_module(source, plan, delegate, options)
        eager, float_eager = example_references(source, module, record)
        program, edge, scales = _lower(source, module, plan, delegate)
    record = record and replace(record, output_scales=scales)
    reads = recorded.result()
    extra = dict(plan.extra)
    if plan.after_lowering is not None:
        extra.update(plan.after_lowering(edge, program))
    delegated = _has_delegate(edge)
    write_bytes(folder / PTE_NAME, program.buffer)
    program.get_etrecord().save(str(folder / ETRECORD_NAME))
    torch.save(tuple(source.example_inputs), folder / INPUTS_NAME)
    # Outside a run (`hil export`, the export's child) the runtime's own lines go to the entry, off the terminal.
    with native_log.logged_to(native_log.current_log() or folder / native_log.LOG_NAME):
        host = references.host_reference(program.buffer, source.example_inputs, delegate)
    made = references.References(eager, host, float_eager)
    references.store(folder, references.inputs_digest(source.example_inputs), made)
    meta = {
        "schema": META_SCHEMA,
        "name": source.name,
        "spec": spec,
        "delegate": delegate,
        "delegated": delegated,
        "options": options,
        "static_key": key,
        "cache_key": entries.entry_key(key, reads),
        "source_files": [str(p) for p in source.source_files],
        "versions": package_versions(*VERSIONED_PACKAGES),
        "pte_size": len(program.buffer),
        "export_s": round(time.perf_counter() - started, 3),
        "extra": extra,
        "quantization": None if record is None else record.to_json(),
    }
    try:
        # Round-tripped so a fresh export returns exactly what a later cache hit reads back
        # (JSON turns int keys, e.g. of a kernel map, into strings).
        meta = json.loads(json.dumps(meta))
    except (TypeError, ValueError) as exc:
        raise ModelError(f"delegate '{delegate}' gave extra data that is not JSON ({exc}) for '{spec}'") from exc
    write_reads(folder, reads)
    write_json(folder / META_NAME, meta)
    seal(folder)  # last: an entry with its record is one whose files were all written
    return meta, reads


def _lower(source: ModelSource, module: "nn.Module", plan: LoweringPlan,
           delegate: str) -> tuple[Any, Any, tuple[float | None, ...]]:
    """(ExecutorchProgramManager, EdgeProgramManager, output scales read before to_executorch rewrites the
    graph); any framework failure becomes a ModelError
    naming the model's files, since that is what the user can change."""
    from executorch.exir import ExecutorchBackendConfig, to_edge_transform_and_lower
    from torch.export import export

    where = f"model '{source.name}' ({', '.join(map(str, source.source_files))}), delegate '{delegate}'"
    stage = "torch.export"
    if quantize.quantized_ops(module):
        quantize.load_out_variants()
    try:
        exported = export(module, source.example_inputs)
        stage = "lowering to edge"
        edge = to_edge_transform_and_lower(
            exported,
            partitioner=list(plan.partitioners),
            transform_passes=plan.transform_passes,
            compile_config=plan.compile_config,
            generate_etrecord=True,
        )
        if plan.edge_transform is not None:
            stage = f"the {delegate} passes"
            edge = plan.edge_transform(edge)
        scales = quantize.output_scales(edge.exported_program().graph)
        stage = "to_executorch"
        # Delegate payloads stay inline: the firmware links the .pte as one C array.
        planning = {} if plan.memory_planning is None else {"memory_planning_pass": plan.memory_planning}
        program = edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False, **planning))
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"{stage} failed for {where}: {type(exc).__name__}: {exc}") from exc
    return program, edge, scales


def _has_delegate(edge: Any) -> bool:
    """True when the lowered graph calls a backend: read from the graph, not assumed from the name."""
    graph = edge.exported_program().graph_module.graph
    return any(node.op == "call_function" and "executorch_call_delegate" in str(node.target) for node in graph.nodes)
