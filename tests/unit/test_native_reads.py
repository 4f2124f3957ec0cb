"""Weights read by native code are followed by the export cache (hil.aot.native_trace, hil.aot.follow).

safetensors' `load_file` (Rust), `torch.jit.load` of a path (C++) and libc's `fopen`/`fread` through `ctypes` open
their files without Python's `open`: no audit hook hears them. Each model here reads its weights one of these ways;
the test retrains them (same shapes, other values) and wants a cache miss and a program that computes the new
model. Truths: the outputs of `torch.nn.functional.linear` with the weights the test itself wrote, the program run by
`executorch.runtime` (not by et-hil), the file's own bytes hashed with hashlib; and a warm lookup in a fresh process
that never imports torch.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hil.aot import references, references_run
from hil.aot.export import export_model
from hil.aot.isolated import export_isolated

IN, OUT = 6, 3
INPUT = torch.linspace(-1.0, 1.0, IN).reshape(1, IN)
HEAD = f"from pathlib import Path\nimport torch\n\nHERE = Path(__file__).parent\n\n"
TAIL = f"\n    return net.eval(), (torch.linspace(-1.0, 1.0, {IN}).reshape(1, {IN}),)\n"

READERS = {
    "safetensors": ("weights.safetensors", "from safetensors.torch import load_file\n\ndef factory():\n"
                    f"    net = torch.nn.Linear({IN}, {OUT})\n"
                    "    net.load_state_dict(load_file(str(HERE / 'weights.safetensors')))"),
    "torchscript": ("weights.ts", "def factory():\n"
                    f"    net = torch.nn.Linear({IN}, {OUT})\n"
                    "    net.load_state_dict(torch.jit.load(str(HERE / 'weights.ts')).state_dict())"),
    "ctypes": ("weights.f32", "import ctypes\n\ndef factory():\n"
               "    libc = ctypes.CDLL(None)\n"
               "    libc.fopen.restype = ctypes.c_void_p\n"
               "    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]\n"
               "    libc.fread.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]\n"
               "    libc.fclose.argtypes = [ctypes.c_void_p]\n"
               f"    count = {OUT * IN + OUT}\n"
               "    data = (ctypes.c_float * count)()\n"
               "    handle = libc.fopen(str(HERE / 'weights.f32').encode(), b'rb')\n"
               "    assert libc.fread(data, 4, count, handle) == count\n"
               "    libc.fclose(handle)\n"
               "    flat = torch.tensor(list(data))\n"
               f"    net = torch.nn.Linear({IN}, {OUT})\n"
               "    with torch.no_grad():\n"
               f"        net.weight.copy_(flat[:{OUT * IN}].reshape({OUT}, {IN}))\n"
               f"        net.bias.copy_(flat[{OUT * IN}:])"),
}


def trained(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"weight": torch.randn(OUT, IN, generator=generator), "bias": torch.randn(OUT, generator=generator)}


def save(kind: str, path: Path, weights: dict[str, torch.Tensor]) -> None:
    if kind == "safetensors":
        from safetensors.torch import save_file

        save_file(weights, str(path))
    elif kind == "torchscript":
        net = torch.nn.Linear(IN, OUT)
        net.load_state_dict(weights)
        torch.jit.save(torch.jit.script(net), str(path))
    else:
        path.write_bytes(torch.cat([weights["weight"].flatten(), weights["bias"]]).numpy().tobytes())


def expected(weights: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.nn.functional.linear(INPUT, weights["weight"], weights["bias"])


def runtime_output(pte: Path) -> torch.Tensor:
    from executorch.runtime import Runtime

    data = pte.read_bytes()
    (out,) = Runtime.get().load_program(data).load_method("forward").execute([INPUT])
    return out


def project(tmp_path: Path, kind: str) -> tuple[str, Path]:
    name, body = READERS[kind]
    model = tmp_path / "project" / "model.py"
    model.parent.mkdir()
    model.write_text(HEAD + textwrap.dedent(body) + TAIL)
    return f"{model}:factory", model.parent / name


@pytest.mark.parametrize("kind", sorted(READERS))
def test_weights_read_by_native_code_retrained_export_again(tmp_path, kind):
    spec, weights_file = project(tmp_path, kind)
    cache = tmp_path / "cache"
    save(kind, weights_file, trained(1))
    first = export_isolated(spec, cache=cache)
    assert first.reads.cacheable, first.reads.unfollowed
    assert first.reads.files == {weights_file.name: f"sha256:{hashlib.sha256(weights_file.read_bytes()).hexdigest()}"}
    assert torch.allclose(runtime_output(first.pte_path), expected(trained(1)), atol=1e-5)
    assert export_isolated(spec, cache=cache).cached

    save(kind, weights_file, trained(2))  # retrained: same shapes, same model file, other values
    second = export_isolated(spec, cache=cache)
    assert not second.cached and second.pte_path != first.pte_path
    assert hashlib.sha256(second.pte_path.read_bytes()).digest() != hashlib.sha256(first.pte_path.read_bytes()).digest()
    assert torch.allclose(runtime_output(second.pte_path), expected(trained(2)), atol=1e-5)
    # The numerics references come from the new entry, computed from the new weights: never the stale ones.
    stored = references.load(second.pte_path.parent, references.inputs_digest((INPUT,)))
    assert stored is not None and torch.allclose(stored.eager[0], expected(trained(2)), atol=1e-6)
    assert not torch.allclose(stored.eager[0], expected(trained(1)), atol=1e-3)
    assert export_isolated(spec, cache=cache).pte_path == second.pte_path


def test_an_unchanged_model_hits_in_a_fresh_process_without_torch(tmp_path):
    spec, weights_file = project(tmp_path, "safetensors")
    cache = tmp_path / "cache"
    save("safetensors", weights_file, trained(1))
    first = export_isolated(spec, cache=cache)
    code = ("import sys\nfrom pathlib import Path\nfrom hil.aot.isolated import export_isolated\n"
            f"c = export_isolated({spec!r}, cache=Path({str(cache)!r}))\n"
            "print(c.cached, c.pte_path, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.split() == ["True", str(first.pte_path), "False"], done.stderr


def test_in_hils_own_process_strace_attaches_and_follows_the_same(tmp_path):
    """export_model in this process (a delegate only this process knows): strace attaches to it for the window."""
    spec, weights_file = project(tmp_path, "ctypes")
    cache = tmp_path / "cache"
    save("ctypes", weights_file, trained(1))
    first = export_model(spec, cache=cache)
    assert list(first.reads.files) == [weights_file.name] and first.reads.cacheable
    save("ctypes", weights_file, trained(3))
    again = export_model(spec, cache=cache)
    assert not again.cached and torch.allclose(runtime_output(again.pte_path), expected(trained(3)), atol=1e-5)


def test_without_strace_nothing_is_cached_and_the_manifest_says_why(tmp_path):
    spec, weights_file = project(tmp_path, "safetensors")
    cache = tmp_path / "cache"
    save("safetensors", weights_file, trained(1))
    bare = tmp_path / "bin"  # the machine's tools but strace
    bare.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for tool in Path(folder).glob("*") if os.path.isdir(folder) else ():
            if tool.name != "strace" and not (bare / tool.name).exists():
                os.symlink(tool, bare / tool.name)
    code = ("from pathlib import Path\nfrom hil.aot.isolated import export_isolated\n"
            f"c = export_isolated({spec!r}, cache=Path({str(cache)!r}))\n"
            "print(c.cached, c.reads.cacheable)\nprint(c.reads.summary()['not_cached'])\n")
    env = {**os.environ, "PATH": str(bare)}  # no strace on it
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                           check=False) for _ in range(2)]
    for done in runs:
        assert done.returncode == 0, done.stderr[-2000:]
        flags, reason = done.stdout.splitlines()[-2:]
        assert flags == "False False"
        assert reason == ("reads by native code cannot be followed: strace is not installed (make setup installs it):"
                          " not cached")


def test_references_for_other_inputs_are_never_those_of_weights_retrained_after_the_lookup(tmp_path):
    """A run with its own inputs computes their references in a child that loads the model again: weights retrained
    since the entry was served must not give references of the new model stored beside the old program."""
    from hil.base.errors import ModelError

    spec, weights_file = project(tmp_path, "safetensors")
    save("safetensors", weights_file, trained(1))
    entry = export_isolated(spec, cache=tmp_path / "cache")
    save("safetensors", weights_file, trained(2))  # retrained between the lookup and the references
    other = (torch.full((1, IN), 0.25),)
    with pytest.raises(ModelError, match=rf"file {weights_file} changed since the program in .* was exported"):
        references_run.references_for(spec, entry.pte_path.parent, entry.pte_path, other, "none", timeout_s=300,
                                  log_path=tmp_path / "refs.log")
    assert references.load(entry.pte_path.parent, references.inputs_digest(other)) is None  # nothing stored
