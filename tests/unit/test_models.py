"""hil.aot.models: built-in and user model specs, seeded weights, and errors that name the file."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hil.aot import cifarnet
from hil.aot.models import list_builtin_models, load_model, resolve_spec
from hil.base.errors import ModelError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SMALL_CNN = FIXTURES / "small_cnn.py"


@pytest.mark.parametrize("name", ["cifar10", "resnet8", "ds_cnn", "mobilenet_v1_025", "deep_autoencoder"])
def test_builtin_loads_in_eval_mode_and_runs(name: str) -> None:
    rng_before = torch.get_rng_state()
    source = load_model(name)
    assert torch.equal(torch.get_rng_state(), rng_before), "loading a model must not move the global RNG"
    assert source.name == name
    assert not source.module.training
    assert source.source_files and all(p.is_file() for p in source.source_files)
    with torch.no_grad():
        out = source.module(*source.example_inputs)
    assert torch.isfinite(out).all()
    assert out.shape[0] == source.example_inputs[0].shape[0]


def test_builtins_are_listed() -> None:
    assert set(list_builtin_models()) == {"cifar10", "resnet8", "ds_cnn", "mobilenet_v1_025", "deep_autoencoder"}


def test_builtin_weights_and_inputs_are_the_same_every_load() -> None:
    first, second = load_model("resnet8"), load_model("resnet8")
    assert torch.equal(first.example_inputs[0], second.example_inputs[0])
    for (key, a), (_, b) in zip(first.module.state_dict().items(), second.module.state_dict().items()):
        assert torch.equal(a, b), key


def test_cifarnet_has_nxp_shape_and_softmax_output() -> None:
    source = load_model("cifar10")
    assert tuple(source.example_inputs[0].shape) == cifarnet.INPUT_SHAPE
    assert source.source_files == [Path(cifarnet.__file__).resolve()]
    assert source.module.fc.in_features == 1024
    with torch.no_grad():
        out = source.module(*source.example_inputs)
    assert out.shape == (1, 10)
    assert torch.allclose(out.sum(dim=1), torch.ones(1))
    # Seeded weights differ from a fresh default init, so the seed is what decides them.
    other, _ = cifarnet.build(seed=1)
    assert not torch.equal(other.conv1.weight, source.module.conv1.weight)


def test_user_model_loads_with_its_file_as_source() -> None:
    source = load_model(f"{SMALL_CNN}:factory")
    assert source.name == "small_cnn"
    assert source.source_files == [SMALL_CNN.resolve()]
    assert not source.module.training
    assert source.module(*source.example_inputs).shape == (1, 4)


def test_user_model_may_import_a_sibling_file(tmp_path: Path) -> None:
    (tmp_path / "helper_layers.py").write_text("from torch import nn\ndef head():\n    return nn.Linear(4, 2)\n")
    (tmp_path / "net.py").write_text(
        "import torch\nfrom helper_layers import head\n"
        "def make():\n    return head(), (torch.ones(1, 4),)\n"
    )
    source = load_model(f"{tmp_path / 'net.py'}:make")
    assert source.name == "net-make"
    assert source.module(*source.example_inputs).shape == (1, 2)


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "user_model.py"
    path.write_text(textwrap.dedent(body))
    return path


@pytest.mark.parametrize(
    ("body", "factory", "message"),
    [
        ("import torch\nraise RuntimeError('boom in user code')\n", "factory", "RuntimeError: boom in user code"),
        ("def factory(:\n", "factory", "SyntaxError"),
        ("import torch\n", "factory", "no callable 'factory'"),
        ("factory = 3\n", "factory", "no callable 'factory'"),
        ("def factory():\n    raise ValueError('bad shape')\n", "factory", "ValueError: bad shape"),
        ("import torch\ndef factory():\n    return torch.nn.Linear(2, 2)\n", "factory", "got Linear"),
        ("import torch\ndef factory():\n    return 'x', (torch.ones(1),)\n", "factory", "first item is str"),
        ("import torch\ndef factory():\n    return torch.nn.Linear(2, 2), [1, 2]\n", "factory", "second item is list"),
        ("import torch\ndef factory():\n    return torch.nn.Linear(2, 2), ()\n", "factory", "second item is tuple"),
    ],
)
def test_user_model_errors_name_the_file(tmp_path: Path, body: str, factory: str, message: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(ModelError) as info:
        load_model(f"{path}:{factory}")
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_missing_model_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    with pytest.raises(ModelError, match="does not exist") as info:
        load_model(f"{missing}:factory")
    assert str(missing) in str(info.value)


@pytest.mark.parametrize("spec", ["resnet9", "model.py", "model.py:", "model.txt:factory", "m.py:not-an-identifier"])
def test_unknown_spec_lists_builtins(spec: str) -> None:
    with pytest.raises(ModelError, match="unknown model") as info:
        resolve_spec(spec)
    assert "cifar10" in str(info.value)


def test_resolving_a_spec_does_not_import_torch(tmp_path: Path) -> None:
    """The export cache decides hits from resolve_spec; it must stay cheap (no torch)."""
    user = tmp_path / "copy.py"
    shutil.copy(SMALL_CNN, user)
    code = (
        "import sys\nfrom hil.aot.models import resolve_spec\n"
        f"for spec in ['resnet8', 'cifar10', {str(user) + ':factory'!r}]:\n"
        "    assert all(p.is_file() for p in resolve_spec(spec).source_files), spec\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
