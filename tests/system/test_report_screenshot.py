"""The report as a person sees it: headless Chromium renders `hil report`'s HTML to a PNG.

What is checked comes from outside the harness: Chromium draws the page, and the PNG's own header (read
here with struct) says it was drawn at the asked size with real content (a blank page compresses to a few
KB). The screenshot is kept in the test's folder for a person to look at.
"""

from __future__ import annotations

import re
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


# --- The report read at a glance (a hand-made nightly history: tests/unit/report_history.py) -----------------

from report_history import REGRESSION_REASON, UNJUDGED_REASONS, write_history  # noqa: E402

GLANCE_WIDTH, GLANCE_HEIGHT = 1000, 1400
# The marks' colours as a person sees them: red for the regression, amber for a run not judged.
RED, AMBER = (0xd6, 0x28, 0x28), (0xf4, 0xa0, 0x00)
# Run in the page by Chromium, never by the product: what the browser measured, written on <body>.
_MEASURE = """<script>(function(){
var body = document.body, page = document.documentElement, shown = body.innerText;
body.setAttribute('data-scroll-width', String(page.scrollWidth));
['mark-regression', 'mark-not-judged'].forEach(function (css) {
  var mark = document.querySelector('svg.chart .' + css); if (!mark) return;
  var box = mark.getBoundingClientRect();
  body.setAttribute('data-' + css, Math.round(box.left + box.width / 2) + ',' + Math.round(box.top + box.height / 2));
});
JSON.parse(body.getAttribute('data-reasons')).forEach(function (reason, i) {
  body.setAttribute('data-seen-' + i, String(shown.split(reason).length - 1));
});
})();</script>"""


def _pixels(png: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, the pixel rows with PNG's row filters undone: RFC 2083 section 6)."""
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert depth == 8 and colour in (2, 6)
    data, pos = b"", 8
    while pos < len(png):
        (length,), kind = struct.unpack(">I", png[pos:pos + 4]), png[pos + 4:pos + 8]
        data += png[pos + 8:pos + 8 + length] if kind == b"IDAT" else b""
        pos += 12 + length
    raw, step = zlib.decompress(data), 4 if colour == 6 else 3
    stride, rows, prior = width * step, bytearray(), bytearray(width * step)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a, b = line[i - step] if i >= step else 0, prior[i]
            c = prior[i - step] if i >= step else 0
            p = a + b - c
            paeth = a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c) else c
            line[i] = (line[i] + (0, a, b, (a + b) // 2, paeth)[kind]) & 0xFF
        rows += line
        prior = line
    return width, height, step, bytes(rows)


def _colour_at(image: tuple[int, int, int, bytes], x: int, y: int) -> tuple[int, int, int]:
    width, _, step, rows = image
    at = (y * width + x) * step
    return rows[at], rows[at + 1], rows[at + 2]


def _near(colour: tuple[int, int, int], want: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 24 for a, b in zip(colour, want))


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={GLANCE_WIDTH},{GLANCE_HEIGHT}", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian's `chromium`; make setup installs it)")
def test_a_person_reads_the_report_at_a_glance_in_chromium_at_1000_px(tmp_path) -> None:
    """At a 1000 px window: no sideways scroll, the regression red and the runs not judged amber (sampled
    from the screenshot's pixels where Chromium drew them), each marked run's reason shown once."""
    import json

    report = write_report(write_history(tmp_path / "nightly.db"), tmp_path / "report.html")
    reasons = [*UNJUDGED_REASONS.values(), REGRESSION_REASON]
    page = report.read_text().replace("<body>", f"<body data-reasons='{json.dumps(reasons).replace(chr(39), '&#39;')}'>")
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", _MEASURE + "</body>"))
    dumped = _chromium("--dump-dom", measured.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    body = dict(re.findall(r'(data-[a-z0-9-]+)="([^"]*)"', re.search(r"<body[^>]*>", dumped.stdout).group(0)))
    assert int(body["data-scroll-width"]) <= GLANCE_WIDTH, body
    assert [body[f"data-seen-{i}"] for i in range(len(reasons))] == ["1"] * len(reasons), body
    shot = tmp_path / "report.png"
    done = _chromium(f"--screenshot={shot}", measured.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    image = _pixels(shot.read_bytes())
    assert image[:2] == (GLANCE_WIDTH, GLANCE_HEIGHT)
    regression = _colour_at(image, *map(int, body["data-mark-regression"].split(",")))
    unjudged = _colour_at(image, *map(int, body["data-mark-not-judged"].split(",")))
    assert _near(regression, RED) and _near(unjudged, AMBER), (regression, unjudged)
