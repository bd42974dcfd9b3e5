"""Issue 38: the HTML report's nodes table overflowed its card at 700 px (nine columns in a
sideways-scrolling box). Below 960 px each row of the nodes and quarantine tables is a card
of labelled lines, as the failures table's are: the stylesheet says so and every cell carries
its label. (Laid out for real in headless Chromium by tests/smoke/test_html_browser.py where
one is installed, at 375, 700, 768 and 1280 px.)"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from smoke.cluster.quarantine import ActionReport, NodeAction
from smoke.cluster.run import RunReport
from smoke.reports.html import render_html
from tests.smoke.recorded import BAD_NODE, DATA


class _Tables(HTMLParser):
    """Each table inside a `rows` block: its header cells and each body cell's data-label."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, list[str | None]]] = []
        self._depth = 0  # inside a `rows` div
        self._in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and "rows" in (a.get("class") or "").split():
            self._depth = 1
            self.tables.append({"th": [], "td": []})
        elif tag == "div" and self._depth:
            self._depth += 1
        elif self._depth and tag == "thead":
            self._in_head = True
        elif self._depth and tag == "th":
            self.tables[-1]["th"].append(tag)
        elif self._depth and tag == "td" and not self._in_head:
            self.tables[-1]["td"].append(a.get("data-label"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "thead":
            self._in_head = False
        elif tag == "div" and self._depth:
            self._depth -= 1


def _page() -> str:
    run = RunReport.from_dict(json.loads(DATA.read_text(encoding="utf-8")))
    taken = ActionReport((NodeAction("ml-gke", "h100-train", BAD_NODE, "quarantined",
                                     cause="cuda3 matmul below the floor"),))
    return render_html(run, quarantine=taken)


def test_below_960_px_each_node_row_is_a_card_of_labelled_lines() -> None:
    page = _page()
    media = page[page.index("@media (max-width: 960px)"):]
    media = media[:media.index("@media (max-width: 600px)")]
    rule = re.search(r"\.rows table, \.rows tbody, \.rows tr, \.rows td \{ display: block;",
                     media)
    assert rule, media
    assert ".rows thead { display: none; }" in media
    assert re.search(r"\.rows td\[data-label\]::before \{ content: attr\(data-label\)", media)
    assert "white-space: normal; overflow-wrap: anywhere;" in media  # long node names wrap


def test_every_cell_of_the_nodes_and_quarantine_tables_carries_its_label() -> None:
    tables = _Tables()
    tables.feed(_page())
    assert len(tables.tables) >= 3  # h100-train's and v5p-ms's nodes, and the quarantine
    for t in tables.tables:
        assert t["th"] and t["td"], t
        assert all(t["td"]), t  # no cell without a data-label: it would show unlabelled
        width = len(t["th"])
        assert len(t["td"]) % width == 0, t
        assert t["td"][:width] == t["td"][width:2 * width] or len(t["td"]) == width, t
