"""A model file inside a package imports its siblings as the user's own code does (hil.aot.models, hil.aot.deps).

`models/net.py` beside `models/__init__.py` is imported as `models.net` from the project root (the folder above the
topmost package): `from models.layers import Block` and `from .layers import Block` both work, and the cache key
follows `models/layers.py`. Truths: the program's outputs from `executorch.runtime` against the function the test
writes down itself (relu(scale * x)), and the sibling's bytes.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from hil.aot.deps import local_imports, package_root
from hil.aot.export import cache_key, export_model
from hil.aot.isolated import export_isolated
from hil.base.errors import ModelError

X = torch.tensor([[-1.0, 0.5, 2.0, -3.0]])

NET = textwrap.dedent(
    """
    import torch
    from models.layers import Block
    from .layers import Block as SameBlock
    from . import layers

    def factory():
        assert Block is SameBlock and __name__ == "models.net" and __package__ == "models"
        return torch.nn.Sequential(Block(layers.SCALE), torch.nn.ReLU()).eval(), (torch.ones(1, 4),)
    """
)
LAYERS = textwrap.dedent(
    """
    import torch

    SCALE = {scale}

    class Block(torch.nn.Linear):
        def __init__(self, scale):
            super().__init__(4, 4, bias=False)
            with torch.no_grad():
                self.weight.copy_(torch.eye(4) * scale)
    """
)


def make_project(tmp_path: Path, scale: float) -> Path:
    package = tmp_path / "proj" / "models"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "layers.py").write_text(LAYERS.format(scale=scale))
    (package / "net.py").write_text(NET)
    return package


def runtime_output(pte: Path) -> torch.Tensor:
    from executorch.runtime import Runtime

    data = pte.read_bytes()
    (out,) = Runtime.get().load_program(data).load_method("forward").execute([X])
    return out


def test_package_root_is_the_folder_above_the_topmost_package(tmp_path):
    package = make_project(tmp_path, 0.5)
    (package / "sub").mkdir()
    (package / "sub" / "__init__.py").write_text("")
    assert package_root(package / "net.py") == (tmp_path / "proj", "models")
    assert package_root(package / "sub" / "deep.py") == (tmp_path / "proj", "models.sub")
    assert package_root(tmp_path / "proj" / "loose.py") == (tmp_path / "proj", None)


def test_a_model_in_a_package_imports_its_siblings_and_follows_their_edits(tmp_path):
    package = make_project(tmp_path, 0.5)
    spec, cache = f"{package / 'net.py'}:factory", tmp_path / "cache"
    assert local_imports(package / "net.py") == sorted([package / "__init__.py", package / "layers.py"])
    first = export_isolated(spec, cache=cache)
    assert torch.allclose(runtime_output(first.pte_path), torch.relu(0.5 * X))
    assert export_isolated(spec, cache=cache).cached

    static = cache_key(spec)
    (package / "layers.py").write_text(LAYERS.format(scale=2.0))  # an edit to the sibling only
    assert cache_key(spec) != static
    edited = export_isolated(spec, cache=cache)
    assert not edited.cached and torch.allclose(runtime_output(edited.pte_path), torch.relu(2.0 * X))


def test_in_process_a_package_edited_between_two_exports_is_imported_afresh(tmp_path):
    """The package's modules left in sys.modules by the first export must not make the second."""
    package = make_project(tmp_path, 0.5)
    spec, cache = f"{package / 'net.py'}:factory", tmp_path / "cache"
    first = export_model(spec, cache=cache)
    assert torch.allclose(runtime_output(first.pte_path), torch.relu(0.5 * X))
    (package / "layers.py").write_text(LAYERS.format(scale=3.0))
    again = export_model(spec, cache=cache)
    assert not again.cached and torch.allclose(runtime_output(again.pte_path), torch.relu(3.0 * X))


def test_an_import_error_in_a_package_model_names_the_file_and_the_root(tmp_path):
    package = make_project(tmp_path, 0.5)
    (package / "net.py").write_text("from .missing import Block\n\ndef factory():\n    pass\n")
    with pytest.raises(ModelError, match=r"importing model file .*net\.py as models\.net \(from .*proj\) failed: "
                                         r"ModuleNotFoundError"):
        export_model(f"{package / 'net.py'}:factory", cache=tmp_path / "cache")
