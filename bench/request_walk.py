"""How a run's request walks the package's floors: files entered and climbs back up, in one run per source tree.

Why: a reader follows a run through the calls. Each time the walk leaves a file for one on a higher floor
(hil.layers.FLOORS of the tree that runs) it climbs back up, and the reader must hold both floors in mind;
a request checked field by field across two modules climbs at every field. This traces one real
`run_profile` (cifar10, one iteration, on the QEMU board with the replay image, so no runtime build is
needed) with `sys.setprofile`, and counts, over the run's main thread:

- files entered: distinct files of hil/ that a call went into;
- climbs: calls into a file other than the one the walk was last in, on a higher floor than that one;
- upward calls: calls whose caller's file sits on a lower floor than the callee's (a callback or a lower
  module reaching up): the climbs a reader cannot avoid, whatever the order of the calls;
- the same figures for the request's check alone (check_request and all it calls), and the visits per
  file there.

Usage: python bench/request_walk.py [TREE ...]   (default: this checkout; pass an older checkout to compare;
each tree runs in its own interpreter with PYTHONPATH set to it, one after the other, in the order given)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, os, sys, tempfile, importlib
from pathlib import Path
layers = importlib.import_module("hil.layers")
package = Path(layers.PACKAGE)
if (package / "pipeline.py").is_file():  # a tree from before the layering
    pipeline = importlib.import_module("hil.pipeline")
    configs = importlib.import_module("hil.config")
else:
    pipeline = importlib.import_module("hil.run.pipeline")
    configs = importlib.import_module("hil.config.board_config")
walk, request_walk = [], []
upward = {"run": [], "request": []}
state = {"last": None, "check": None}

def floor(path):
    return layers.floor_of(layers.module_name(Path(path)))

def profiler(frame, event, arg):
    if event == "return":
        if frame is state["check"]:
            state["check"] = None
        return
    if event != "call":
        return
    path = frame.f_code.co_filename
    if not path.startswith(str(package)):
        return
    if frame.f_code.co_name == "check_request" and state["check"] is None:
        state["check"] = frame
        state["last"] = None  # the request's walk starts in check_request's own file
    caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
    if caller.startswith(str(package)) and caller != path and floor(path) > floor(caller):
        pair = (str(Path(caller).relative_to(package)), str(Path(path).relative_to(package)))
        upward["run"].append(pair)
        if state["check"] is not None:
            upward["request"].append(pair)
    if path == state["last"]:
        return
    state["last"] = path
    walk.append(path)
    if state["check"] is not None:
        request_walk.append(path)

board = configs.load_board_config("qemu").with_overrides({"qemu.firmware": "replay"})
out = Path(tempfile.mkdtemp(prefix="walk-")) / "run"
request = pipeline.RunRequest(model="cifar10", board=board, out_dir=out, iterations=1)
sys.setprofile(profiler)
try:
    pipeline.run_profile(request)
finally:
    sys.setprofile(None)

def figures(files, up):
    climbs = sum(1 for a, b in zip(files, files[1:]) if floor(b) > floor(a))
    visits = {}
    for f in files:
        name = str(Path(f).relative_to(package))
        visits[name] = visits.get(name, 0) + 1
    return {"files_entered": len(set(files)), "entries": len(files), "climbs": climbs,
            "most_visited": sorted(visits.items(), key=lambda kv: -kv[1])[:6],
            "upward_calls": len(up), "upward_pairs": sorted(set(up))[:6]}

if os.environ.get("WALK_SHOW"):
    for f in request_walk:
        print(floor(f), Path(f).relative_to(package), file=sys.stderr)
print(json.dumps({"run": figures(walk, upward["run"]), "request": figures(request_walk, upward["request"])}))
'''


def measure(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "HIL_FIRMWARE": "replay"}
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=tempfile.gettempdir(), env=env, capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the traced run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    trees = [Path(a).resolve() for a in argv] or [REPO]
    print(f"load average {os.getloadavg()[0]:.2f} (counts, not times: the load does not change them)")
    for tree in trees:
        figures = measure(tree)
        for part in ("request", "run"):
            f = figures[part]
            top = ", ".join(f"{name} {count}" for name, count in f["most_visited"])
            print(f"{tree}: {part}: {f['files_entered']} files entered, {f['entries']} entries, {f['climbs']} climbs"
                  f" back up; most visited: {top}")
            pairs = ", ".join(f"{a} -> {b}" for a, b in f["upward_pairs"]) or "none"
            print(f"{tree}: {part}: {f['upward_calls']} calls from a lower floor up into a higher one: {pairs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
