"""Each harness line once, and the host runtime's C++ lines in the run folder's log, not on the terminal.

The doubling came from a console handler on the root logger (`logging.basicConfig()`: a user's, or
the one CPython's module-level `logging.debug` makes when executorch's exir/backend/backend_api.py
calls it); the C++ lines from ExecuTorch's `ET_LOG`, written to file descriptor 2 (here written with
`os.write(2, ...)`, which is what the C library's `fprintf(stderr, ...)` comes down to).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from hil.base import native_log

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=ENV)


def test_a_root_console_handler_does_not_draw_the_command_lines_again(tmp_path):
    done = _python(f"""
        import logging, sys
        logging.basicConfig(level=logging.INFO)          # what executorch's logging.debug call did mid-run
        logging.getLogger().addHandler(logging.FileHandler({str(tmp_path / "project.log")!r}))
        from hil.base import log
        with log.drawn_on(sys.stderr):
            log.info("export cifar10 (cache miss, delegate neutron-sim)…")
        log.info("after the command")                     # the front end is gone: propagation is back
        """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["[hil] export cifar10 (cache miss, delegate neutron-sim)…",
                                        "INFO:hil:after the command"]
    # A file on the root logger is no console: it keeps every record.
    assert (tmp_path / "project.log").read_text().splitlines() == [
        "export cifar10 (cache miss, delegate neutron-sim)…", "after the command"]


def test_pytest_with_a_conftest_basicconfig_shows_each_line_once_and_caplog_still_has_it(tmp_path):
    (tmp_path / "conftest.py").write_text("import logging\nlogging.basicConfig(level=logging.INFO)\n")
    (tmp_path / "test_steps.py").write_text(textwrap.dedent("""
        import logging
        from hil.base import log

        def test_steps(caplog):
            caplog.set_level(logging.INFO, logger="hil")
            log.info("flash hil_qemu_runtime.elf to qemu…")
            assert caplog.messages == ["flash hil_qemu_runtime.elf to qemu…"]
        """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-s", "-p", "no:cacheprovider", "--board", "qemu",
                           "--rootdir", str(tmp_path), "test_steps.py"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=ENV)
    text = done.stdout + done.stderr
    assert done.returncode == 0, text[-3000:]
    assert text.count("flash hil_qemu_runtime.elf to qemu…") == 1, text
    assert "    [hil] flash hil_qemu_runtime.elf to qemu…" in done.stdout
    assert "INFO:hil" not in text


def _write_fd2(text: str) -> None:
    os.write(2, text.encode())


def test_native_lines_go_to_the_run_log_not_to_fd_2(tmp_path, capfd):
    log_path = tmp_path / native_log.LOG_NAME
    with native_log.logged_to(log_path):
        with native_log.native_lines("numerics: load and run model.pte"):
            _write_fd2("[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version\n")
    _write_fd2("the terminal again\n")
    err = capfd.readouterr().err
    assert "cpuinfo_utils" not in err and "the terminal again" in err
    assert log_path.read_text().splitlines() == [
        "# numerics: load and run model.pte", "[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version"]


def test_lines_the_bindings_hand_to_sys_stderr_go_to_the_run_log_too(tmp_path, capfd):
    """pybind11's scoped_estream_redirect writes `std::cerr` into whatever `sys.stderr` is at the call (under
    pytest: its capture, which is no fd 2)."""
    log_path = tmp_path / native_log.LOG_NAME
    before = sys.stderr
    with native_log.logged_to(log_path), native_log.native_lines("numerics"):
        sys.stderr.write("[cpuinfo_utils.cpp:125] CPU info and manual query on # of cpus dont match.\n")
    assert sys.stderr is before
    assert "cpuinfo_utils" not in capfd.readouterr().err
    assert "[cpuinfo_utils.cpp:125] CPU info" in log_path.read_text()


def test_fd_2_is_restored_when_the_call_raises_and_a_silent_call_writes_no_log(tmp_path, capfd):
    log_path = tmp_path / native_log.LOG_NAME
    with native_log.logged_to(log_path):
        with pytest.raises(RuntimeError, match="bad program"):
            with native_log.native_lines("inputs: read the method meta"):
                _write_fd2("E executorch: invalid program\n")
                raise RuntimeError("bad program")
        _write_fd2("after the error\n")
        with native_log.native_lines("a call that says nothing"):
            pass
    assert "after the error" in capfd.readouterr().err
    assert log_path.read_text() == "# inputs: read the method meta\nE executorch: invalid program\n"


def test_outside_a_run_fd_2_is_left_alone(capfd):
    assert native_log.current_log() is None
    with native_log.native_lines("library call"):
        _write_fd2("said outside a run\n")
    assert "said outside a run" in capfd.readouterr().err


def test_two_threads_keep_their_lines_in_their_own_logs(tmp_path, capfd):
    def run(name: str) -> None:
        with native_log.logged_to(tmp_path / f"{name}.log"):
            for index in range(40):
                with native_log.native_lines(name):
                    time.sleep(0.002)  # the other thread gets its turn inside this one's call
                    _write_fd2(f"{name} {index}\n")

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for name, other in (("a", "b"), ("b", "a")):
        said = [line for line in (tmp_path / f"{name}.log").read_text().splitlines() if not line.startswith("#")]
        assert said == [f"{name} {index}" for index in range(40)]
    assert capfd.readouterr().err == ""


def test_the_host_runtimes_own_cpuinfo_lines_land_in_the_log(tmp_path):
    """A fresh process (ExecuTorch sizes its thread pool once per process, on the first execute). The export
    runs the host runtime too (the references of its example inputs, kept off the terminal in the entry's
    own host_runtime.log), so it is cached by a process of its own first."""
    exported = _python("""
        from hil.aot.export import export_model
        export_model("cifar10", delegate="none")
        """, tmp_path)
    assert exported.returncode == 0 and "cpuinfo_utils" not in exported.stderr, exported.stderr[-2000:]
    done = _python(f"""
        from pathlib import Path
        from hil.aot.export import export_model, load_inputs
        from hil.base import native_log
        from hil.aot.references import host_runtime_outputs
        compiled = export_model("cifar10", delegate="none")
        with native_log.logged_to(Path({str(tmp_path / native_log.LOG_NAME)!r})):
            outputs = host_runtime_outputs(compiled.pte_path, tuple(load_inputs(compiled)))
        print(tuple(outputs[0].shape))
        """, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "(1, 10)"
    assert "cpuinfo_utils" not in done.stderr
    logged = (tmp_path / native_log.LOG_NAME).read_text()
    assert logged.startswith("# numerics: load and run model.pte on the host runtime\n")
    assert "cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version" in logged
