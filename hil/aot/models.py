"""Turn a model spec into an eval-mode module, seeded example inputs, and the files that define it.

A spec is a built-in name (`list_builtin_models()`) or `path/to/file.py:factory`, where `factory()`
returns `(nn.Module, example_inputs_tuple)`, or, for a model it quantized itself (a `convert_pt2e` result),
`(int8_module, example_inputs_tuple, float_module)` so the quantization error can be reported. Nothing is fetched from a hub (there is no network):
built-ins get seeded random weights and inputs, so every run of the same spec is the same model.

`resolve_spec` answers "which files define this model?" without importing torch, so the export
cache can be checked in milliseconds; `load_model` does the heavy part.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from hil.aot.deps import declared_data_files, local_imports, package_root
from hil.base.errors import ModelError, ModelSpecError

if TYPE_CHECKING:
    import torch
    from torch import nn

# One seed for every built-in: weights and inputs only need to be fixed, not meaningful.
BUILTIN_SEED = 20250601


@dataclass(frozen=True)
class ModelSource:
    """A model ready to export. `source_files` are the files whose bytes define it (cache key)."""

    name: str
    module: "nn.Module"
    example_inputs: tuple["torch.Tensor", ...]
    source_files: list[Path]
    # The float model a quantized one was made from, when the factory gives it (a third item): its outputs
    # are kept apart from the reference, as the quantization error.
    float_module: "nn.Module | None" = None


@dataclass(frozen=True)
class ResolvedSpec:
    """What a spec names, found without importing the model: enough to build a cache key.

    For a user model, `dependencies` are the local modules it imports and the data files it declares
    (hil.aot.deps); the cache key covers them with the model file.
    """

    name: str
    source_files: list[Path]
    builtin: bool
    factory: str | None = None  # the factory's name, for user models
    dependencies: tuple[Path, ...] = ()


@dataclass(frozen=True)
class _Builtin:
    module: str  # dotted module that defines the model, located without importing it
    wrapper: str | None  # EagerModelBase subclass in `module`; None for our own builder


_MLPERF = "executorch.examples.models.mlperf_tiny"
_BUILTINS: dict[str, _Builtin] = {
    "cifar10": _Builtin("hil.aot.cifarnet", None),
    "resnet8": _Builtin(f"{_MLPERF}.resnet8", "ResNet8Model"),
    "ds_cnn": _Builtin(f"{_MLPERF}.ds_cnn", "DSCNNKWSModel"),
    "mobilenet_v1_025": _Builtin(f"{_MLPERF}.mobilenet_v1_025", "MobileNetV1025Model"),
    "deep_autoencoder": _Builtin(f"{_MLPERF}.deep_autoencoder", "DeepAutoEncoderModel"),
}


def list_builtin_models() -> list[str]:
    return sorted(_BUILTINS)


def _module_file(dotted: str) -> Path:
    """The .py file of `dotted`, found from its top-level package's folder.

    `importlib.util.find_spec("a.b.c")` would import `a.b` first, and the MLPerf package's
    `__init__` imports torch: walking the folders keeps cache look-ups fast.
    """
    top, *rest = dotted.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"package '{top}' (needed for model module {dotted}) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]).joinpath(*rest).with_suffix(".py")
    if not path.is_file():
        raise ModelError(f"model module {dotted} not found at {path} (installed {top} differs?)")
    return path


def _safe_name(text: str) -> str:
    """A name usable as a folder name in the cache and in artifact paths."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "model"


def resolve_spec(spec: str) -> ResolvedSpec:
    """Name and source files of `spec`, or a ModelError saying what is wrong with it."""
    if spec in _BUILTINS:
        return ResolvedSpec(spec, [_module_file(_BUILTINS[spec].module)], builtin=True)
    path_text, sep, factory = spec.rpartition(":")
    if not sep or not path_text.endswith(".py") or not factory.isidentifier():
        raise ModelSpecError(
            f"unknown model '{spec}': use a built-in ({', '.join(list_builtin_models())}) "
            "or path/to/file.py:factory"
        )
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ModelSpecError(f"model file {path} (from spec '{spec}') does not exist")
    name = path.stem if factory == "factory" else f"{path.stem}-{factory}"
    dependencies = (*local_imports(path), *declared_data_files(path))
    return ResolvedSpec(_safe_name(name), [path], builtin=False, factory=factory, dependencies=dependencies)


def rooted_spec(spec: str, root: Path) -> str:
    """`spec` with a relative model file taken from `root` (pytest's rootdir for a test's `hil_profile`),
    not from the current folder; a built-in name, an absolute path and anything else are returned as given."""
    path_text, sep, factory = spec.rpartition(":")
    if spec in _BUILTINS or not sep or not path_text.endswith(".py"):
        return spec
    path = Path(path_text).expanduser()
    return spec if path.is_absolute() else f"{Path(root) / path}:{factory}"


def load_model(spec: str) -> ModelSource:
    """Build the model `spec` names, in eval mode, with its example inputs."""
    resolved = resolve_spec(spec)
    float_module = None
    if resolved.builtin:
        module, inputs = _build_builtin(resolved.name)
    else:
        module, inputs, float_module = _call_factory(resolved.source_files[0], resolved.factory or "factory")
    return ModelSource(resolved.name, _eval_mode(module), inputs, [*resolved.source_files, *resolved.dependencies],
                       float_module=None if float_module is None else _eval_mode(float_module))


def _eval_mode(module: "nn.Module") -> "nn.Module":
    """`module` in eval mode. A module torch.export made (a user's `convert_pt2e` result) is left alone: its
    `.eval()` raises NotImplementedError, or, once torchao's `allow_exported_model_train_eval` patched it,
    returns None -- which, used as the model, failed the eager run with "'NoneType' object is not callable"."""

    if not is_exported_module(module):
        module.eval()
    return module


def _build_builtin(name: str) -> tuple["nn.Module", tuple["torch.Tensor", ...]]:
    import torch

    entry = _BUILTINS[name]
    if entry.wrapper is None:
        from hil.aot import cifarnet

        return cifarnet.build(BUILTIN_SEED)
    wrapper_cls = getattr(importlib.import_module(entry.module), entry.wrapper)
    # The MLPerf wrappers draw weights and inputs from the global RNG: seed a forked copy so the
    # caller's random state is left as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(BUILTIN_SEED)
        wrapper = wrapper_cls()
        module = wrapper.get_eager_model()
        inputs = tuple(wrapper.get_example_inputs())
    return module, inputs


@contextlib.contextmanager
def _importable(folder: Path) -> Iterator[None]:
    """`folder` first on sys.path while the model file runs (its top level, and its factory's late imports)."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))


def _import_file(path: Path) -> Any:
    """Execute a user's model file as a fresh module, as the user's own code would import it (the docs'
    "How a model file is imported"): a file in a package as `package.module` from the project root
    (hil.aot.deps.package_root: the folder above the topmost package), so absolute and relative imports of
    its siblings work; any other file as a top-level module of its own folder. Call inside `_importable(root)`."""
    root, package = package_root(path)
    if package is not None:
        return _import_in_package(path, root, package)
    digest = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:12]
    mod_name = f"hil_user_model_{_safe_name(path.stem).replace('.', '_')}_{digest}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"model file {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    # Registered like a normal import: dataclasses and typing in the user's file look it up there.
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # any failure inside user code is the user's file at fault
        sys.modules.pop(mod_name, None)
        raise ModelError(f"importing model file {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _import_in_package(path: Path, root: Path, package: str) -> Any:
    """`package.module` imported afresh: the package's modules already loaded (an earlier export in this process,
    maybe of files edited since) are dropped first, so what runs is what the cache key hashed."""
    name = package if path.stem == "__init__" else f"{package}.{path.stem}"
    top = package.split(".")[0]
    for loaded in [m for m in sys.modules if m == top or m.startswith(f"{top}.")]:
        del sys.modules[loaded]
    importlib.invalidate_caches()
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # any failure inside user code is the user's file at fault
        raise ModelError(f"importing model file {path} as {name} (from {root}) failed: {type(exc).__name__}: {exc}"
                         ) from exc
    if Path(getattr(module, "__file__", "") or "").resolve() != path:
        raise ModelError(f"model file {path}: importing {name} from {root} found {getattr(module, '__file__', None)}"
                         f" instead (another '{top}' earlier on sys.path?)")
    return module


def _call_factory(path: Path, factory: str) -> tuple["nn.Module", tuple["torch.Tensor", ...], "nn.Module | None"]:
    import torch
    from torch import nn

    with _importable(package_root(path)[0]):
        module = _import_file(path)
        func: Callable[[], Any] | None = getattr(module, factory, None)
        if not callable(func):
            raise ModelError(f"model file {path} has no callable '{factory}'")
        try:
            result = func()
        except Exception as exc:
            raise ModelError(f"{path}:{factory}() raised {type(exc).__name__}: {exc}") from exc
    expected = (f"{path}:{factory}() must return (nn.Module, tuple of example input tensors)"
                " or (int8 module, inputs, float nn.Module)")
    if not (isinstance(result, tuple) and len(result) in (2, 3)):
        raise ModelError(f"{expected}, got {type(result).__name__}")
    model, inputs, float_model = (*result, None) if len(result) == 2 else result
    if not isinstance(model, nn.Module):
        raise ModelError(f"{expected}; first item is {type(model).__name__}")
    if len(result) == 3 and not isinstance(float_model, nn.Module):
        raise ModelError(f"{expected}; third item is {type(float_model).__name__}")
    if not isinstance(inputs, (tuple, list)) or not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise ModelError(f"{expected}; second item is {type(inputs).__name__}: {inputs!r:.80}")
    return model, tuple(inputs), float_model


def is_exported_module(module: "nn.Module") -> bool:
    """True for a module torch.export made (e.g. a convert_pt2e result): its `.eval()` raises or is a no-op
    that returns None, so the harness must leave its mode alone (it is fixed at export)."""
    import torch

    return isinstance(module, torch.fx.GraphModule) and any("val" in node.meta for node in module.graph.nodes)
