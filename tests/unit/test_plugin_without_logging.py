"""The plugin (loaded by its entry point) works in a pytest without the logging plugin (`-p no:logging`:
mutmut runs the suite so)."""

import subprocess
import sys


def test_a_session_with_the_logging_plugin_off_runs(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:logging", "-p", "no:cacheprovider", "-q",
                           str(tmp_path / "test_one.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "INTERNALERROR" not in done.stdout + done.stderr
