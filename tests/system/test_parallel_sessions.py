"""`pytest -n 2 --board qemu`: two emulated boards side by side, sharing a cold cache and one history file.

Both workers export the same model and build the same replay image at the same moment (an empty
HIL_CACHE_DIR), and append to one SQLite history. The history must hold every run once, each with the
numbers its own run folder holds, and the cache one complete entry per key with no half-written leftovers.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap

from tiny_models import linear_relu_source

TINY = linear_relu_source(inputs=16, outputs=8)

SUITE = textwrap.dedent(
    """
    import pytest

    @pytest.mark.parametrize("n", range(4))
    def test_tiny(n, hil_profile):
        run = hil_profile({model!r}, iterations=3, subdir="run")
        assert run.profile["totals_us"]["method_execute"] > 0
    """
)


def test_two_workers_two_qemu_boards_one_history(tmp_path):
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "test_par.py").write_text(SUITE.format(model=f"{tmp_path / 'tiny.py'}:factory"))
    db, cache = tmp_path / "history.db", tmp_path / "cache"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-n", "2", "test_par.py", "--board", "qemu",
         "--hil-artifacts", "art", "--hil-history", str(db), "--rootdir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, env={**os.environ, "HIL_CACHE_DIR": str(cache)},
    )
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout[-4000:] + done.stderr[-2000:]
    for worker in ("gw0", "gw1"):  # both workers ran tests
        assert re.search(rf"^\[{worker}\] .*PASSED", done.stdout, flags=re.MULTILINE), done.stdout[-3000:]

    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        runs = conn.execute("SELECT id, test_id, artifacts, total_us, passed FROM runs").fetchall()
        assert sorted(r["test_id"] for r in runs) == [f"test_par.py::test_tiny[{n}]" for n in range(4)]
        for run in runs:
            profile = json.loads((tmp_path / run["artifacts"] / "profile.json").read_text())
            assert run["passed"] == 1 and run["total_us"] == profile["totals_us"]["method_execute"]
            stored = conn.execute("SELECT name, p50_us FROM events WHERE run_id = ? ORDER BY seq", (run["id"],)).fetchall()
            assert [(e["name"], e["p50_us"]) for e in stored] == [(e["name"], e["p50_us"]) for e in profile["events"]]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    # One complete entry per cache key; no staging folder of the losing builder left behind.
    leftovers = [p for p in cache.rglob(".*") if p.is_dir()]
    assert leftovers == [], leftovers
    # The replay image's ELF, or the runtime image's where the pinned sources are: one per cache entry.
    elves = [*cache.rglob("firmware.elf"), *cache.rglob("hil_qemu_runtime.elf")]
    elves = [p for p in elves if "images" in p.parts or p.parent.parent.name == "qemu"]  # not a build folder's
    assert len(elves) == len({p.parent for p in elves}) >= 1
