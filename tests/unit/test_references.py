"""The numerics references kept in the export's cache entry (hil.aot.references): stored by the export for its
example inputs, computed in a child and stored for other inputs, recomputed when damaged, computed and not
stored in a read-only cache.

Truths: the model is built here from its file (runpy) and run eagerly, and the program is run on
ExecuTorch's own host runtime (executorch.runtime) here; neither goes through the code under test.
"""

from __future__ import annotations

import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hil.aot.export import export_model, load_inputs
from hil.aot.references import FILE, References, folder_of, inputs_digest, load, store
from hil.aot.references_run import references_for

MODEL = textwrap.dedent(
    """
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(11)
            self.fc = torch.nn.Linear(5, 3)

        def forward(self, x):
            return torch.relu(self.fc(x))

    def factory():
        return Tiny().eval(), (torch.randn(1, 5),)
    """
)
REPO = Path(__file__).resolve().parents[2]
READ_ONLY = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 97; shift; exec "$@"'


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("references")
    model = folder / "tiny.py"
    model.write_text(MODEL)
    spec = f"{model}:factory"
    return model, spec, export_model(spec, cache=folder / "cache")


def truth(model: Path, pte: Path, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    from executorch.runtime import Runtime

    module, _ = runpy.run_path(str(model))["factory"]()
    with torch.no_grad():
        eager = module(*inputs)
    data = pte.read_bytes()
    host = Runtime.get().load_program(data).load_method("forward").execute(list(inputs))[0]
    return eager, host


def test_the_export_stores_the_references_of_its_example_inputs_and_stays_a_hit(exported):
    model, spec, compiled = exported
    inputs = tuple(load_inputs(compiled))
    entry = compiled.pte_path.parent
    stored = load(entry, inputs_digest(inputs))
    assert stored is not None and isinstance(stored.host_runtime, tuple)
    eager, host = truth(model, compiled.pte_path, inputs)
    assert torch.equal(stored.eager[0], eager) and torch.equal(stored.host_runtime[0], host)
    again = export_model(spec, cache=entry.parents[2])  # the entry's own record ignores the references folder
    assert again.cached and again.pte_path == compiled.pte_path


def test_the_digest_follows_dtype_shape_and_bytes():
    base = inputs_digest([torch.zeros(2, 3)])
    assert inputs_digest([torch.zeros(2, 3)]) == base
    changed = torch.zeros(2, 3)
    changed[1, 2] = 1e-30
    others = [[torch.zeros(3, 2)], [torch.zeros(2, 3, dtype=torch.float64)], [changed], [torch.zeros(2, 3)] * 2]
    assert len({base, *(inputs_digest(o) for o in others)}) == 1 + len(others)


def test_damaged_references_are_removed_and_computed_again_in_a_child(exported, tmp_path, caplog):
    model, spec, compiled = exported
    inputs = (torch.full((1, 5), 0.25),)
    entry, digest = compiled.pte_path.parent, inputs_digest(inputs)
    log = tmp_path / "export.log"
    first = references_for(spec, entry, compiled.pte_path, inputs, "none", timeout_s=120, log_path=log)
    assert (folder_of(entry, digest) / FILE).is_file() and log.read_text().startswith("$ ")  # the child's
    stored = folder_of(entry, digest) / FILE
    stored.write_bytes(stored.read_bytes()[:-7])  # truncated
    assert load(entry, digest) is None and not folder_of(entry, digest).exists()
    assert any("(numerics references) failed its check: references.pt is" in r.getMessage() for r in caplog.records)
    again = references_for(spec, entry, compiled.pte_path, inputs, "none", timeout_s=120, log_path=log)
    eager, host = truth(model, compiled.pte_path, inputs)
    assert isinstance(first.host_runtime, tuple) and isinstance(again.host_runtime, tuple)
    assert torch.equal(again.eager[0], eager) and torch.equal(again.host_runtime[0], host)
    assert torch.equal(first.eager[0], eager) and load(entry, digest) is not None  # stored again


def test_references_of_another_delegate_say_why_the_host_runtime_did_not_run(tmp_path):
    made = References((torch.ones(2),), "not run: the host runtime has no neutron backend")
    assert store(tmp_path, "ab" * 32, made)
    back = load(tmp_path, "ab" * 32)
    assert back is not None and back.host_runtime == made.host_runtime and torch.equal(back.eager[0], torch.ones(2))
    assert load(tmp_path, "cd" * 32) is None  # other inputs: none stored


def test_a_read_only_cache_computes_the_references_and_stores_nothing(exported, tmp_path):
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True,
                           timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace for a read-only bind mount: {probe.stderr.decode().strip()}")
    model, spec, compiled = exported
    entry, cache = compiled.pte_path.parent, compiled.pte_path.parents[3]
    code = textwrap.dedent(f"""
        import torch
        from pathlib import Path
        from hil.aot.references_run import references_for
        made = references_for({spec!r}, Path({str(entry)!r}), Path({str(compiled.pte_path)!r}),
                              (torch.full((1, 5), -3.0),), "none", timeout_s=120,
                              log_path=Path({str(tmp_path)!r}) / "x.log")
        torch.save(made.eager, {str(tmp_path / "eager.pt")!r})
        """)
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", READ_ONLY, "sh", str(cache),
                           sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    inputs = (torch.full((1, 5), -3.0),)
    eager, _ = truth(model, compiled.pte_path, inputs)
    assert torch.equal(torch.load(tmp_path / "eager.pt")[0], eager)
    assert not folder_of(entry, inputs_digest(inputs)).exists()
