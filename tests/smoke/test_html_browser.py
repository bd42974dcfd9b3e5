"""The HTML report of a recorded run, opened in headless Chromium and looked at: the
screenshot is not blank, the verdict banner at the top is the failure red, and the failing
node's red shows below it (its row in the failures table, its red bar in the chart); and laid
out 375, 768 and 1280 px wide and measured through the DOM: the page never scrolls sideways and
no cell of the failures table runs into the next (issue 29: it collided below ~800 px).

Skipped, saying why, where no Chromium is installed; `make browser-test` installs Debian's
`chromium` package and runs this file.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from html import escape, unescape
from pathlib import Path
from typing import Any

import pytest

from smoke.cluster.run import RunReport
from smoke.reports.html import COLOURS, render_html
from tests.smoke.recorded import DATA

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
WIDTH, HEIGHT = 1280, 1800
RED = tuple(int(COLOURS["fail"][i:i + 2], 16) for i in (1, 3, 5))  # #c62828


def _browser() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) *
                                                          (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 0xFF
        prev = line
        rows.append(bytes(line) if bpp == 3 else bytes(
            b for j in range(0, stride, 4) for b in line[j:j + 3]))
    return width, height, rows


def _is_red(row: bytes, i: int) -> bool:
    return (abs(row[i] - RED[0]) < 12 and abs(row[i + 1] - RED[1]) < 12
            and abs(row[i + 2] - RED[2]) < 12)


def _red_rows(rows: list[bytes]) -> list[tuple[int, int]]:
    """Per row: the failure red's pixels (give or take anti-aliasing), and its longest run."""
    out = []
    for row in rows:
        count = run = longest = 0
        for i in range(0, len(row), 3):
            if _is_red(row, i):
                count, run = count + 1, run + 1
                longest = max(longest, run)
            else:
                run = 0
        out.append((count, longest))
    return out


def screenshot(html: Path, png: Path, profile: Path, browser: str) -> None:
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", html.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert png.exists(), f"no screenshot ({done.returncode}): {done.stderr[-2000:]}"


@pytest.mark.skipif(_browser() is None, reason="no Chromium on this machine: `make "
                    "browser-test` installs Debian's chromium package and runs this test")
def test_the_report_of_a_recorded_run_shows_the_failure_in_a_browser(tmp_path: Path) -> None:
    browser = _browser()
    assert browser is not None
    run = RunReport.from_dict(json.loads(DATA.read_text(encoding="utf-8")))
    html, png = tmp_path / "report.html", tmp_path / "report.png"
    html.write_text(render_html(run), encoding="utf-8")
    screenshot(html, png, tmp_path / "profile", browser)
    width, height, rows = decode_png(png.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    # not blank: many colours, a good share of the page not background
    pixels = {row[i:i + 3] for row in rows[::7] for i in range(0, len(row), 21)}
    assert len(pixels) > 40, f"{len(pixels)} colours: a blank page?"
    background = rows[5][:3]
    inked = sum(row[i:i + 3] != background for row in rows[::10] for i in range(0, len(row),
                                                                                30))
    assert inked > 0.2 * (len(rows[::10]) * (len(rows[0]) // 30))
    red = _red_rows(rows)
    # the verdict banner: a wide band of red near the top of the page
    banner = [y for y in range(300) if red[y][0] > 0.5 * width]
    assert len(banner) > 40, f"no red verdict banner at the top ({len(banner)} rows)"
    # below it, the failing node: a red bar in its chart (a long horizontal run of red,
    # which no floor line or text makes) and its red names in the failures table
    bar = [y for y in range(max(banner) + 20, height) if red[y][1] >= 150]
    assert len(bar) >= 8, f"no failing device's red bar below the banner ({len(bar)} rows)"
    assert sum(c for c, _ in red[max(banner) + 20:]) > 2500


# A phone (375 px), a tablet (768 px) and a laptop (1280 px). Headless Chromium lays a page
# out at least 500 px wide whatever --window-size says (innerWidth 500 at --window-size=375,
# Chromium 150), so the report is laid out in an iframe of each width, as a phone's viewport.
WIDTHS = (375, 700, 768, 1280)  # 700: the nodes table overflowed its card there (issue 38)
_MEASURE = """<script>
const frame = document.getElementById('report');
frame.addEventListener('load', () => {
  const doc = frame.contentDocument, win = frame.contentWindow, root = doc.documentElement;
  const out = {width: win.innerWidth, client: root.clientWidth, scroll: root.scrollWidth,
               rows: [], tables: []};
  for (const el of doc.querySelectorAll('.scroll')) {
    out.tables.push({scroll: el.scrollWidth, client: el.clientWidth});
  }
  for (const tr of doc.querySelectorAll('#failures tbody tr')) {
    const cells = {};
    for (const td of tr.querySelectorAll('td')) {
      const box = td.getBoundingClientRect(), style = win.getComputedStyle(td);
      const key = td.dataset.label || td.textContent.trim();
      cells[key] = {left: box.left, right: box.right, width: box.width, height: box.height,
                    scroll: td.scrollWidth, client: td.clientWidth, shown: style.display !==
                    'none' && style.visibility !== 'hidden', line: parseFloat(style.lineHeight),
                    text: td.textContent};
    }
    out.rows.push(cells);
  }
  document.body.setAttribute('data-measured', JSON.stringify(out));
});
</script>"""


def measure(html: str, width: int, tmp_path: Path, browser: str) -> dict[str, Any]:
    """The report laid out `width` px wide by the real browser: the page's client and scroll
    widths, and each failure row's cells (box, overflow, shown) as the page's script read them
    through the DOM (`--dump-dom` prints the document after it ran)."""
    outer = tmp_path / f"measure-{width}.html"
    outer.write_text(
        "<!DOCTYPE html><html><body style='margin: 0'>"
        f"<iframe id='report' style='border: 0; width: {width}px; height: 1600px' "
        f"srcdoc=\"{escape(html, quote=True)}\"></iframe>{_MEASURE}</body></html>",
        encoding="utf-8")
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1400,1000", "--virtual-time-budget=5000", "--dump-dom",
            outer.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'data-measured="([^"]*)"', done.stdout)
    assert found, f"the page recorded nothing ({done.returncode}): {done.stderr[-2000:]}"
    measured: dict[str, Any] = json.loads(unescape(found[1]))
    return measured


@pytest.mark.skipif(_browser() is None, reason="no Chromium on this machine: `make "
                    "browser-test` installs Debian's chromium package and runs this test")
@pytest.mark.parametrize("width", WIDTHS)
def test_the_failures_table_is_readable_at_phone_tablet_and_laptop_widths(
        width: int, tmp_path: Path) -> None:
    """Nothing overflows the page sideways; no failure's cell runs into the next (the pool
    name ran under the node's below ~800 px); the device and the probe are shown inside the
    screen; a reason wraps within it. A long unbroken cleanup error is part of the table."""
    browser = _browser()
    assert browser is not None
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    doc["cleanup_errors"] = ["delete Job accelfleet-smoke-r2611221403-5e9a-h100-train-"
                             "gke-ml-h100-train-9c1d-0123456789abcdef0123456789abcdef: "
                             "the API server answered 500"]
    run = RunReport.from_dict(doc)
    page = measure(render_html(run), width, tmp_path, browser)
    assert page["width"] == width, page["width"]
    assert page["scroll"] <= page["client"], (
        f"the page scrolls sideways at {width} px: {page['scroll']} > {page['client']}")
    if width < 960:  # the nodes and quarantine tables are cards: nothing scrolls in its card
        assert page["tables"] and all(t["scroll"] <= t["client"] + 1 for t in page["tables"]), (
            width, page["tables"])
    assert len(page["rows"]) == 3, page["rows"]  # two failures and the cleanup error
    for row in page["rows"]:
        for key, cell in row.items():
            if cell["shown"]:
                assert cell["scroll"] <= cell["client"] + 1, (
                    f"{key!r} overflows its cell at {width} px: {cell}")
                assert 0 <= cell["left"] and cell["right"] <= page["client"], (width, key, cell)
    for row in page["rows"][:2]:
        for key in ("node", "device", "probe", "reason"):
            assert row[key]["shown"] and row[key]["width"] > 20, (width, key, row[key])
    reason = page["rows"][0]["reason"]
    assert "below floor" in reason["text"]
    if width < 960:  # a card: the reason wraps onto lines of its own
        assert reason["height"] >= 1.9 * reason["line"], (width, reason)
