"""The report as a person sees it: headless Chromium renders `hil report`'s HTML to a PNG.

What is checked comes from outside the harness: Chromium draws the page, and the PNG's own header (read
here with struct) says it was drawn at the asked size with real content (a blank page compresses to a few
KB). The screenshot is kept in the test's folder for a person to look at.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_regress_synth import synth_profile  # noqa: E402

from hil.regress import history  # noqa: E402
from hil.regress.compare import compare_profiles, comparison_to_dict  # noqa: E402
from hil.report.html import write_report  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH, HEIGHT = 1280, 2400


def _png_size_and_colours(png: bytes) -> tuple[int, int, int]:
    """(width, height, distinct RGB colours in a sample of rows), from the PNG's own chunks."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert depth == 8 and colour in (2, 6)
    data, pos = b"", 8
    while pos < len(png):
        (length,), kind = struct.unpack(">I", png[pos:pos + 4]), png[pos + 4:pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(data)
    step = 4 if colour == 6 else 3
    stride = 1 + width * step
    colours = set()
    for row in range(0, height, 37):  # unfiltered bytes suffice to tell a drawn page from a blank one
        line = raw[row * stride + 1:(row + 1) * stride]
        colours.update(line[i:i + 3] for i in range(0, len(line), step * 7))
    return width, height, len(colours)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian's `chromium`; make setup installs it)")
def test_the_report_renders_in_headless_chromium(tmp_path) -> None:
    db = tmp_path / "history.db"
    base = synth_profile(seed=999)
    for night in range(6):
        slow = {("npu_kernel", "2", 0): 1.3} if night == 4 else None
        profile = synth_profile(seed=night, slow=slow)
        cmp = comparison_to_dict(compare_profiles(base, profile))
        history.record_run(db, profile, {"written_at": f"2026-05-0{night + 1}T02:00:00Z"},
                           passed=not cmp.get("has_regression"), comparison=cmp)
    report = write_report(db, tmp_path / "report.html")
    shot = tmp_path / "report.png"
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}", report.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    width, height, colours = _png_size_and_colours(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    assert shot.stat().st_size > 30_000 and colours > 8, (shot.stat().st_size, colours)
