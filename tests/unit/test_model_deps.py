"""The export cache key covers a user model's local imports and declared data files, and nothing installed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hil.aot.deps import declared_data_files, is_installed, local_imports
from hil.aot.export import cache_key
from hil.base.errors import ModelSpecError

MODEL = textwrap.dedent(
    """
    import json
    import torch
    import helper
    from pkg.layers import block
    HIL_DATA_FILES = ["data/scale.txt"]

    def factory():
        raise NotImplementedError
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's model folder: the model, a helper module, a package with a relative import, a data file."""
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "helper.py").write_text("WIDTH = 8\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers.py").write_text("from .shapes import SHAPE\n\ndef block():\n    return SHAPE\n")
    (tmp_path / "pkg" / "shapes.py").write_text("SHAPE = (1, 8)\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "scale.txt").write_text("0.5\n")
    (tmp_path / "notes.md").write_text("not imported by anything\n")
    return tmp_path


def key(project: Path) -> str:
    return cache_key(f"{project / 'model.py'}:factory")[1]


def test_local_imports_are_found_transitively_and_installed_ones_are_not(project: Path) -> None:
    assert local_imports(project / "model.py") == sorted(
        [project / "helper.py", project / "pkg" / "__init__.py", project / "pkg" / "layers.py",
         project / "pkg" / "shapes.py"])
    assert declared_data_files(project / "model.py") == [project / "data" / "scale.txt"]
    import json
    import torch

    assert is_installed(Path(torch.__file__)) and is_installed(Path(json.__file__))
    assert not is_installed(project / "helper.py")


@pytest.mark.parametrize("edited", ["helper.py", "pkg/layers.py", "pkg/shapes.py", "data/scale.txt", "model.py"])
def test_editing_anything_the_model_uses_changes_the_key(project: Path, edited: str) -> None:
    before = key(project)
    path = project / edited
    path.write_text(path.read_text() + "# edited\n")
    assert key(project) != before


def test_editing_what_the_model_does_not_use_keeps_the_key(project: Path) -> None:
    before = key(project)
    (project / "notes.md").write_text("edited\n")
    (project / "unused.py").write_text("X = 1\n")
    assert key(project) == before


@pytest.mark.parametrize(("declaration", "complaint"), [
    ("HIL_DATA_FILES = 'weights.bin'", "literal list of file paths"),
    ("HIL_DATA_FILES = [name for name in ()]", "literal list of file paths"),
    ("HIL_DATA_FILES = ['missing.bin']", "'missing.bin', which is not a file"),
])
def test_a_bad_data_file_declaration_is_refused(tmp_path: Path, declaration: str, complaint: str) -> None:
    (tmp_path / "model.py").write_text(f"{declaration}\ndef factory():\n    pass\n")
    with pytest.raises(ModelSpecError, match=complaint):
        cache_key(f"{tmp_path / 'model.py'}:factory")


def test_a_site_packages_folder_on_sys_path_is_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A venv whose `.pth` names another environment's site-packages (how a wheel is tried against pinned torch):
    what lies there is installed, not the user's, so its sources are neither walked nor keyed."""
    from hil.aot.deps import installation_roots

    shared = tmp_path / "other-env" / "lib" / "site-packages"
    (shared / "vendored").mkdir(parents=True)
    (shared / "vendored" / "__init__.py").write_text("import vendored.core\n")
    (shared / "vendored" / "core.py").write_text("X = 1\n")
    elsewhere = tmp_path / "checkout"  # a plain folder on sys.path stays local
    elsewhere.mkdir()
    (elsewhere / "mine.py").write_text("Y = 2\n")
    (tmp_path / "model.py").write_text("import vendored\nimport mine\n")
    monkeypatch.syspath_prepend(str(shared))
    monkeypatch.syspath_prepend(str(elsewhere))
    installation_roots.cache_clear()
    try:
        assert local_imports(tmp_path / "model.py") == [elsewhere / "mine.py"]
    finally:
        installation_roots.cache_clear()
