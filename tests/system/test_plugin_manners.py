"""The plugin in a project that is not et-hil's: quiet about torch/executorch, and invisible to tests that
never asked for it. A real pytest session (a child process) in a fresh folder, with the project's own ini."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROJECT_TESTS = textwrap.dedent(
    """
    def test_uses_et_hil(hil_artifacts_dir, request):
        import executorch.devtools, executorch.exir  # noqa: F401  (what every run imports)

    def test_never_touches_et_hil(request):
        assert request.fixturenames == ["request"]  # no fixture of et-hil's attaches itself to it
    """
)


def _session(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:pytest_embedded",
                           "--rootdir", str(tmp_path), *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONWARNINGS": ""})


def test_import_warnings_are_silenced_and_other_tests_are_left_alone(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the project's own settings: no filterwarnings of its own
    (tmp_path / "test_project.py").write_text(PROJECT_TESTS)
    done = _session(tmp_path, "-q")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout and "warning" not in done.stdout, done.stdout[-3000:]
    # The same import without the plugin's filters: the noise the filters remove is real.
    (tmp_path / "test_project.py").write_text("def test_import():\n    import executorch.devtools, executorch.exir\n")
    bare = _session(tmp_path, "-q", "-p", "no:hil", "-p", "no:hil_regress")
    assert bare.returncode == 0, bare.stdout[-3000:]
    assert "DeprecationWarning" in bare.stdout and "executorch" in bare.stdout


def test_the_projects_own_filterwarnings_still_win(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error::DeprecationWarning:torch\n")
    (tmp_path / "test_project.py").write_text(
        "import warnings\n\ndef test_strict(hil_artifacts_dir):\n"
        "    warnings.warn_explicit('old', DeprecationWarning, 'torch/x.py', 1, module='torch.x')\n")
    done = _session(tmp_path, "-q")
    assert done.returncode == 1 and "DeprecationWarning: old" in done.stdout, done.stdout[-3000:]
