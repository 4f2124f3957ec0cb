"""A model changed only through what its factory reads at run time is exported again, profiled and flagged.

The nightly case of issue 27: a CNN's first conv goes from 8 to 24 channels through an environment
variable alone (the model file, its imports and its declared files are unchanged). On the QEMU board
(`-icount`: exact instruction counts), the second run must profile the new program, not the cached
old one, and `hil compare` against the first run must flag it. Truth: the `.pte` sha256 taken here
with hashlib, the variable's value hashed here, and a convolution with 3x the output channels costing
more instructions than the one it replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from shared_firmware import cache_sharing_firmware

REPO = Path(__file__).resolve().parents[2]

CNN = textwrap.dedent(
    """
    import os
    import torch

    class EnvCnn(torch.nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, channels, 3, padding=1)
            self.fc = torch.nn.Linear(channels * 8 * 8, 4)

        def forward(self, x):
            return self.fc(torch.flatten(torch.relu(self.conv(x)), 1))

    def factory():
        torch.manual_seed(0)
        return EnvCnn(int(os.environ.get("HIL_NIGHTLY_CHANNELS", "8"))).eval(), (torch.ones(1, 1, 8, 8),)
    """
)


def _hil(tmp_path: Path, channels: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HIL_CACHE_DIR": str(cache_sharing_firmware(tmp_path / "cache")), "HIL_NIGHTLY_CHANNELS": channels,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "hil.cli.main", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900, env=env)


def _conv_cycles(run: Path) -> float:
    profile = json.loads((run / "profile.json").read_text())
    convs = [e for e in profile["events"] if "convolution" in e["name"]]
    assert len(convs) == 1, [e["name"] for e in profile["events"]]
    return convs[0]["p50_us"]


def test_a_width_changed_through_an_environment_variable_is_profiled_and_flagged(tmp_path):
    model = tmp_path / "env_cnn.py"
    model.write_text(CNN)
    runs = {}
    for channels in ("8", "24"):
        runs[channels] = tmp_path / f"run{channels}"
        done = _hil(tmp_path, channels, "run", "--board", "qemu", "--model", f"{model}:factory", "--no-delegate",
                    "--iterations", "2", "--out", str(runs[channels]))
        assert done.returncode == 0, done.stderr[-3000:]
    manifests = {c: json.loads((run / "manifest.json").read_text()) for c, run in runs.items()}
    narrow, wide = manifests["8"], manifests["24"]
    assert narrow["aot_cached"] is False and wide["aot_cached"] is False  # the 24-channel run exported again
    assert wide["aot_followed"]["environment"] == ["HIL_NIGHTLY_CHANNELS"] and wide["aot_followed"]["cacheable"]
    shas = {c: hashlib.sha256((run / "model.pte").read_bytes()).hexdigest() for c, run in runs.items()}
    assert shas["8"] != shas["24"]
    assert wide["files"]["model.pte"]["sha256"] == shas["24"] and narrow["files"]["model.pte"]["sha256"] == shas["8"]
    # One static key (the files did not change), two entries under it: one per value the factory read.
    (folder,) = (tmp_path / "cache" / "models").iterdir()
    recorded = sorted(json.loads(p.read_text())["env"]["HIL_NIGHTLY_CHANNELS"] for p in folder.glob("*/reads.json"))
    assert recorded == sorted(hashlib.sha256(value).hexdigest() for value in (b"8", b"24"))
    assert _conv_cycles(runs["24"]) > _conv_cycles(runs["8"])  # the program profiled is the wider one

    judged = _hil(tmp_path, "24", "compare", str(runs["8"]), str(runs["24"]), "--noise-k", "0")
    assert judged.returncode == 1 and "regression" in judged.stdout.lower(), judged.stdout[-3000:] + judged.stderr


SUITE = '''
MODEL = {model!r}

def test_cnn_nightly(hil_profile):
    run = hil_profile(MODEL, delegate="none", iterations=2)
    assert run.profile["totals_us"]["method_execute"] > 0
'''

CONFIG_CNN = CNN.replace('int(os.environ.get("HIL_NIGHTLY_CHANNELS", "8"))',
                         'json.loads((Path(__file__).parent / "cnn.json").read_text())["channels"]').replace(
    "import os\n", "import json\nfrom pathlib import Path\n")


def _session(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "test_nightly.py", "--board", "qemu",
         "--hil-artifacts", "art", "--hil-warmup", "1", "--hil-baseline", "baselines", "--hil-noise-k", "0", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "HIL_CACHE_DIR": str(cache_sharing_firmware(tmp_path / "cache")),
             "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})


def test_the_nightly_gate_flags_a_model_changed_only_through_its_config(tmp_path):
    """Through the pytest plugin, as a nightly runs it: the baseline from an 8-channel config, then the
    config says 24 and nothing else changes; the second session must profile the new model and fail."""
    (tmp_path / "cnn.py").write_text(CONFIG_CNN)
    (tmp_path / "test_nightly.py").write_text(SUITE.format(model=f"{tmp_path / 'cnn.py'}:factory"))
    (tmp_path / "cnn.json").write_text('{"channels": 8}')
    first = _session(tmp_path, "--hil-baseline-update")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    (first_manifest,) = (tmp_path / "art").rglob("manifest.json")
    narrow = json.loads(first_manifest.read_text())
    (tmp_path / "cnn.json").write_text('{"channels": 24}')
    second = _session(tmp_path)
    assert second.returncode == 1 and "test_cnn_nightly" in second.stdout, second.stdout[-3000:] + second.stderr[-3000:]
    wide = json.loads(first_manifest.read_text())  # the same test's folder, written again
    assert wide["aot_cached"] is False and wide["aot_followed"]["files"] == ["cnn.json"]
    assert wide["files"]["model.pte"]["sha256"] != narrow["files"]["model.pte"]["sha256"]
    assert hashlib.sha256((first_manifest.parent / "model.pte").read_bytes()).hexdigest() == \
        wide["files"]["model.pte"]["sha256"]
