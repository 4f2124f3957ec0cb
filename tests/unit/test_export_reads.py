"""The export cache follows what a model's code reads at run time (hil.aot.follow, hil.aot.reads).

Each factory here changes only through something it reads while it runs: an environment variable,
a JSON config, a checkpoint. The static key (model file, imports, declared files) is the same before
and after, so without the recorded reads the old `.pte` would be served. Truth: the `.pte` bytes'
sha256 taken here with hashlib, and the weight tensors the test itself made, found (or not) as raw
float32 bytes in the program's constant data.
"""

from __future__ import annotations

import hashlib
import json
import py_compile
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hil.aot.export import cache_key, export_model
from hil.aot.isolated import export_isolated
from hil.aot.reads import first_change

ENV_MODEL = textwrap.dedent(
    """
    import os
    import torch

    def factory():
        width = int(os.environ.get("HIL_TEST_WIDTH", "8"))
        conv = torch.nn.Conv2d(1, width, 3, bias=False)
        with torch.no_grad():
            conv.weight.copy_(torch.randn(width, 1, 3, 3, generator=torch.Generator().manual_seed(3)))
        return conv.eval(), (torch.ones(1, 1, 5, 5),)
    """
)

CONFIG_MODEL = textwrap.dedent(
    """
    import json
    from pathlib import Path
    import torch

    def factory():
        width = json.loads((Path(__file__).parent / "config.json").read_text())["width"]
        return torch.nn.Sequential(torch.nn.Linear(4, width), torch.nn.ReLU()).eval(), (torch.ones(1, 4),)
    """
)

CHECKPOINT_MODEL = textwrap.dedent(
    """
    from pathlib import Path
    import torch

    CHECKPOINT = Path(__file__).parent / "weights.pt"

    def factory():
        torch.manual_seed(0)
        net = torch.nn.Linear(6, 3)
        if CHECKPOINT.exists():  # a first run before any training: the initial weights
            net.load_state_dict(torch.load(CHECKPOINT, weights_only=True))
        return net.eval(), (torch.ones(1, 6),)
    """
)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def has_tensor(pte: Path, tensor: torch.Tensor) -> bool:
    """The tensor's float32 bytes appear in the program (ExecuTorch keeps constants raw)."""
    return tensor.detach().to(torch.float32).contiguous().numpy().tobytes() in pte.read_bytes()


def test_a_width_from_an_environment_variable_re_exports_in_the_child(tmp_path, monkeypatch):
    model = tmp_path / "env_model.py"
    model.write_text(ENV_MODEL)
    spec, cache = f"{model}:factory", tmp_path / "cache"
    monkeypatch.delenv("HIL_TEST_WIDTH", raising=False)
    first = export_isolated(spec, cache=cache)
    again = export_isolated(spec, cache=cache)
    assert not first.cached and again.cached and again.pte_path == first.pte_path  # a hit: no child started
    assert first.reads.env == {"HIL_TEST_WIDTH": None}  # read while unset: a value appearing later must miss
    eight = torch.randn(8, 1, 3, 3, generator=torch.Generator().manual_seed(3))
    assert has_tensor(first.pte_path, eight)

    monkeypatch.setenv("HIL_TEST_WIDTH", "24")
    wide = export_isolated(spec, cache=cache)
    assert not wide.cached and sha256(wide.pte_path) != sha256(first.pte_path)
    assert has_tensor(wide.pte_path, torch.randn(24, 1, 3, 3, generator=torch.Generator().manual_seed(3)))
    assert wide.reads.env["HIL_TEST_WIDTH"] == hashlib.sha256(b"24").hexdigest()  # the value's hash, not the value
    meta = json.loads((wide.pte_path.parent / "meta.json").read_text())
    assert wide.cache_key != first.cache_key and meta["static_key"] == cache_key(spec)[1]  # same folder, new variant
    assert export_isolated(spec, cache=cache).cached

    monkeypatch.delenv("HIL_TEST_WIDTH")  # back to the first model: its entry is still there and valid
    back = export_isolated(spec, cache=cache)
    assert back.cached and back.pte_path == first.pte_path and sha256(back.pte_path) == sha256(first.pte_path)


def test_a_width_from_a_json_config_re_exports(tmp_path):
    model, config = tmp_path / "config_model.py", tmp_path / "config.json"
    model.write_text(CONFIG_MODEL)
    config.write_text('{"width": 8}')
    spec, cache = f"{model}:factory", tmp_path / "cache"
    first = export_isolated(spec, cache=cache)
    assert not first.cached and list(first.reads.files) == ["config.json"]  # relative to the model's folder
    assert export_isolated(spec, cache=cache).cached
    # A warm run in a fresh process: the config re-hashed, and still no torch.
    code = ("import sys\nfrom pathlib import Path\nfrom hil.aot.isolated import export_isolated\n"
            f"c = export_isolated({spec!r}, cache=Path({str(cache)!r}))\nprint(c.cached, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.split() == ["True", "False"], done.stderr
    static = cache_key(spec)
    config.write_text('{"width": 24}')
    assert cache_key(spec) == static  # the static key alone would have served the old model
    assert first_change(first.reads, tmp_path) == f"file {tmp_path / 'config.json'} changed"
    wider = export_isolated(spec, cache=cache)
    assert not wider.cached and sha256(wider.pte_path) != sha256(first.pte_path)
    assert wider.pte_path.stat().st_size > first.pte_path.stat().st_size  # 24x4 weights, not 8x4
    assert export_isolated(spec, cache=cache).cached


def test_a_checkpoint_retrained_with_the_same_shapes_re_exports_in_process(tmp_path):
    """In-process (export_model, as for a delegate only this process knows): recorded all the same."""
    model, checkpoint = tmp_path / "ckpt_model.py", tmp_path / "weights.pt"
    model.write_text(CHECKPOINT_MODEL)
    spec, cache = f"{model}:factory", tmp_path / "cache"
    untrained = export_model(spec, cache=cache)
    assert untrained.reads.probes == {"weights.pt": "absent"}
    assert export_model(spec, cache=cache).cached

    trained = {}
    for seed in (1, 2):  # two trainings: same shapes, other weights
        torch.manual_seed(seed)
        trained[seed] = torch.nn.Linear(6, 3).state_dict()
    torch.save(trained[1], checkpoint)  # a checkpoint appears: the factory now loads it
    first = export_model(spec, cache=cache)
    assert not first.cached and has_tensor(first.pte_path, trained[1]["weight"])
    assert export_model(spec, cache=cache).cached

    static = cache_key(spec)
    torch.save(trained[2], checkpoint)
    assert cache_key(spec) == static
    retrained = export_model(spec, cache=cache)
    assert not retrained.cached and sha256(retrained.pte_path) != sha256(first.pte_path)
    assert has_tensor(retrained.pte_path, trained[2]["weight"]) and not has_tensor(retrained.pte_path,
                                                                                   trained[1]["weight"])
    assert export_model(spec, cache=cache).pte_path == retrained.pte_path
    assert len({untrained.pte_path, first.pte_path, retrained.pte_path}) == 3


def test_a_model_that_reads_a_socket_is_exported_each_time_and_never_cached(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        model = tmp_path / "net_model.py"
        model.write_text(textwrap.dedent(f"""
            import socket
            import torch

            def factory():
                with socket.socket() as peer:
                    peer.connect(("127.0.0.1", {port}))
                return torch.nn.Linear(2, 2).eval(), (torch.ones(1, 2),)
            """))
        spec, cache = f"{model}:factory", tmp_path / "cache"
        first = export_isolated(spec, cache=cache)
        second = export_isolated(spec, cache=cache)
    for made in (first, second):
        assert not made.cached and made.pte_path.is_file()
        assert made.reads.not_cached_reason() == f"the model connected a socket to ('127.0.0.1', {port}): not cached"
        assert made.reads.summary()["not_cached"] == made.reads.not_cached_reason()
    assert first.pte_path.parent != second.pte_path.parent  # each run its own entry, none served to another


def test_a_folder_listed_and_a_relative_path_are_followed(tmp_path, monkeypatch):
    (tmp_path / "ckpts").mkdir()
    (tmp_path / "ckpts" / "a.txt").write_text("1")
    model = tmp_path / "glob_model.py"
    model.write_text(textwrap.dedent("""
        import os
        import torch

        def factory():
            names = sorted(os.listdir("ckpts"))  # relative to the working folder
            return torch.nn.Linear(2, len(names)).eval(), (torch.ones(1, 2),)
        """))
    monkeypatch.chdir(tmp_path)
    spec, cache = f"{model}:factory", tmp_path / "cache"
    first = export_model(spec, cache=cache)
    assert first.reads.folders.keys() == {"ckpts"} and first.reads.cwd == str(tmp_path)
    assert export_model(spec, cache=cache).cached
    (tmp_path / "ckpts" / "b.txt").write_text("2")
    assert not export_model(spec, cache=cache).cached
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert first_change(first.reads, tmp_path).startswith(f"the working folder is {elsewhere}")


@pytest.mark.parametrize("read", ["os.environ['HIL_TEST_X']", "os.getenv('HIL_TEST_X')", "'HIL_TEST_X' in os.environ",
                                  "os.environ.get('HIL_TEST_X')", "dict(os.environ)"])
def test_every_way_of_reading_a_variable_is_followed(tmp_path, monkeypatch, read):
    from hil.aot import follow

    monkeypatch.setenv("HIL_TEST_X", "1")
    model = tmp_path / "reader.py"
    model.write_text(f"import os\n\ndef factory():\n    return {read}\n")
    namespace: dict[str, object] = {}
    exec(compile(model.read_text(), str(model), "exec"), namespace)  # noqa: S102  (the test's own file)
    with follow.recording(model) as recorded:
        namespace["factory"]()  # type: ignore[operator]
    reads = recorded.result()
    assert reads.env["HIL_TEST_X"] == hashlib.sha256(b"1").hexdigest()
    assert (reads.env_names is not None) == (read == "dict(os.environ)")  # a walk over all names: the set is kept


def test_a_module_imported_by_a_computed_name_is_followed_even_from_its_pyc(tmp_path):
    """hil.aot.deps cannot see `importlib.import_module(name)`; the recording does, also when Python
    loads the module from `__pycache__` (no source opened)."""
    (tmp_path / "layer_sizes.py").write_text("WIDTH = 8\n")
    model = tmp_path / "dyn_model.py"
    model.write_text(textwrap.dedent("""
        import importlib
        import torch

        sizes = importlib.import_module("layer_" + "sizes")  # the model's folder is importable at its top level

        def factory():
            return torch.nn.Linear(4, sizes.WIDTH).eval(), (torch.ones(1, 4),)
        """))
    py_compile.compile(str(tmp_path / "layer_sizes.py"), doraise=True)  # Python imports it from the .pyc
    spec, cache = f"{model}:factory", tmp_path / "cache"
    first = export_isolated(spec, cache=cache)
    assert first.reads.files == {"layer_sizes.py": f"sha256:{sha256(tmp_path / 'layer_sizes.py')}"}
    assert export_isolated(spec, cache=cache).cached
    (tmp_path / "layer_sizes.py").write_text("WIDTH = 16\n")
    wider = export_isolated(spec, cache=cache)
    assert not wider.cached and sha256(wider.pte_path) != sha256(first.pte_path)


def test_a_sibling_import_lists_no_folder_so_new_files_beside_the_model_still_hit(tmp_path):
    """Python's import system lists the model's folder to find `import sibling_sizes`: that is no
    read of the model's (the module itself is keyed), so run outputs written beside it keep the hit."""
    (tmp_path / "sibling_sizes.py").write_text("WIDTH = 5\n")
    model = tmp_path / "sibling_model.py"
    model.write_text("import torch\nimport sibling_sizes\n\ndef factory():\n"
                     "    return torch.nn.Linear(3, sibling_sizes.WIDTH).eval(), (torch.ones(1, 3),)\n")
    spec, cache = f"{model}:factory", tmp_path / "cache"
    first = export_model(spec, cache=cache)
    assert first.reads.folders == {} and not first.cached
    (tmp_path / "run1").mkdir()
    assert export_model(spec, cache=cache).cached
