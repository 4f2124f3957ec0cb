"""et-hil shares one pytest session with other hardware plugins (pytest-embedded, and labgrid's when installed).

pytest-embedded registers `--port` and `--target`; before the `--hil-` prefix, loading both
plugins aborted pytest at start-up with `argparse.ArgumentError`. The child session below loads
both through their entry points, gives each its own options, and profiles a model.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

NEIGHBOUR_TESTS = textwrap.dedent(
    """
    def test_both_plugins_read_their_own_options(request):
        config = request.config
        assert config.pluginmanager.has_plugin("pytest_embedded")  # loaded by its entry point
        assert config.getoption("port") == "/dev/embedded-port"   # pytest-embedded's --port
        assert config.getoption("target") == "esp32"              # pytest-embedded's --target
        assert config.getoption("hil_port") == "loop://"          # et-hil's --hil-port
        assert config.getoption("hil_target") == "mimxrt798sgfob"

    def test_et_hil_profiles_beside_pytest_embedded(hil_profile):
        run = hil_profile("cifar10", delegate="none", iterations=1)
        assert run.profile["events"]
    """
)


def test_et_hil_and_pytest_embedded_in_one_session(tmp_path):
    assert importlib.util.find_spec("pytest_embedded") is not None, (
        "pytest-embedded is not installed: `make test` installs the test extra (pip install -e .[test])"
    )
    (tmp_path / "test_neighbours.py").write_text(NEIGHBOUR_TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "--board", "qemu", "--hil-port", "loop://", "--hil-target", "mimxrt798sgfob",
         "--port", "/dev/embedded-port", "--target", "esp32", "--hil-artifacts", str(tmp_path / "artifacts"),
         str(tmp_path / "test_neighbours.py")],
        cwd=tmp_path, env=os.environ.copy(), capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
    assert "ArgumentError" not in done.stdout + done.stderr
