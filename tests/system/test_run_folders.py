"""Runs never overwrite each other, and JUnit under `pytest -n 2` holds every run's figures: a real QEMU
session whose tests profile two models sharing the README's `factory` name, and one model twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from hil.report.figures import junit_properties
from tiny_models import linear_relu_source
from shared_firmware import cache_sharing_firmware

REPO = Path(__file__).resolve().parents[2]
SUITE = '''
A, B = {a!r}, {b!r}

def test_two_models(hil_profile):
    first, second = hil_profile(A, iterations=2), hil_profile(B, iterations=2)
    assert first.out_dir != second.out_dir

def test_same_model_twice(hil_profile):
    first, second = hil_profile(A, iterations=2), hil_profile(A, iterations=2)
    assert first.out_dir != second.out_dir
'''


def test_two_models_and_a_repeat_keep_their_own_folders_and_junit_figures_under_xdist(tmp_path):
    (tmp_path / "a.py").write_text(linear_relu_source(inputs=12, outputs=4, seed=1, name="A"))
    (tmp_path / "b.py").write_text(linear_relu_source(inputs=20, outputs=6, seed=2, name="B"))
    (tmp_path / "test_folders.py").write_text(SUITE.format(a=f"{tmp_path / 'a.py'}:factory",
                                                           b=f"{tmp_path / 'b.py'}:factory"))
    xml = tmp_path / "out.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "test_folders.py", "--board", "qemu",
         "--hil-artifacts", "art", "--rootdir", str(tmp_path), f"--junitxml={xml}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env={**os.environ, "HIL_CACHE_DIR": str(cache_sharing_firmware(tmp_path / "cache")), "PYTHONPATH": str(REPO)})
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]

    two, same = (next((tmp_path / "art").glob(f"test_folders.py*{name}*")) for name in ("two_models", "same_model"))
    assert sorted(p.name for p in two.iterdir() if p.is_dir()) == ["a-factory-neutron-sim", "b-factory-neutron-sim"]
    assert sorted(p.name for p in same.iterdir() if p.is_dir()) == ["a-factory-neutron-sim", "a-factory-neutron-sim-2"]
    models = {p.name: json.loads((p / "profile.json").read_text())["model"] for p in two.iterdir() if p.is_dir()}
    assert models == {"a-factory-neutron-sim": "a", "b-factory-neutron-sim": "b"}  # the first run's profile still says a
    # (the QEMU board file lowers to the simulated Neutron delegate: its name is part of the folder's)

    xmlschema.XMLSchema(str(REPO / "tests" / "fixtures" / "junit" / "xunit2.xsd")).validate(str(xml))
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    for folder, test in ((two / "a-factory-neutron-sim", "test_two_models"), (two / "b-factory-neutron-sim", "test_two_models"),
                         (same / "a-factory-neutron-sim", "test_same_model_twice"),
                         (same / "a-factory-neutron-sim-2", "test_same_model_twice")):
        profile = json.loads((folder / "profile.json").read_text())
        run = f"{profile['model']}.{folder.name}"
        # every key figure of the run's own profile, under the run's own name
        wanted = {name.replace(f"hil.{profile['model']}.", f"hil.{run}.", 1) for name, _ in junit_properties(profile)}
        wanted |= {f"hil.{run}.artifacts", f"hil.{run}.top1.name", f"hil.{run}.time_base"}
        got = {k.split("@")[0] for k in props if k.startswith(f"hil.{run}.") and k.endswith(f"@test_folders.py::{test}")}
        assert got == wanted, (folder, sorted(got ^ wanted))
        # the image that ran says the time base: the runtime image's emulated instructions (at the board's icount
        # shift), else the replay image's simulated Neutron ticks
        base = "runtime-instructions/shift=" if profile["firmware"] == "runtime" else "simulated-ticks/"
        assert props[f"hil.{run}.time_base@test_folders.py::{test}"].startswith(base)
        assert float(props[f"hil.{run}.total_us@test_folders.py::{test}"]) == pytest.approx(
            profile["totals_us"]["method_execute"], rel=1e-5)
