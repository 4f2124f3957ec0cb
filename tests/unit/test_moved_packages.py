"""The renamed packages' old import paths give the very same modules (one state), with a warning."""

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("old, new", [("hil.road.process", "hil.target.process"),
                                      ("hil.buffers.console", "hil.replay.console")])
def test_an_old_path_is_the_same_module_object(old, new):
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        moved = importlib.import_module(old)
    assert moved is importlib.import_module(new)
    assert moved.__name__ == new  # not a copy registered under the old name


def test_from_import_of_the_old_package_in_a_fresh_interpreter():
    # A fresh process: nothing imported under the new name first.
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    from hil.road.ports import free_tcp_port\nexcept DeprecationWarning as w:\n    print('warned:', w)\n"
            "import hil.target.ports, sys\n"
            "warnings.simplefilter('ignore')\nfrom hil.road.ports import free_tcp_port\n"
            "print(free_tcp_port is hil.target.ports.free_tcp_port, 'hil.road.ports' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "warned: hil.road is now hil.target" in out
    assert out.strip().endswith("True True")
