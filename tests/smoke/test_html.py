"""The HTML report's structure, parsed with the standard library (the browser test looks at
it): self-contained, every pool, charts with failing nodes first, every failure with its
reason, the run's facts, and nothing a report value carries ever becomes markup."""

from __future__ import annotations

import json
from dataclasses import replace
from html.parser import HTMLParser
from typing import ClassVar

from smoke._html import render_html
from smoke._quarantine import ActionReport, NodeAction
from smoke._results import ProbeResult, Verdict
from smoke._run import Check, RunReport
from tests.smoke.recorded import BAD_NODE, DATA, H100_NODES


def recorded() -> RunReport:
    return RunReport.from_dict(json.loads(DATA.read_text(encoding="utf-8")))


class Tree(HTMLParser):
    """Elements with their attributes, the open-element path of each, and text by element."""

    VOID: ClassVar[set[str]] = {"meta", "br", "img", "link", "input", "col", "hr", "rect",
                                "line", "path"}

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], tuple[str, ...]]] = []
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.texts: list[tuple[tuple[str, ...], dict[str, str], str]] = []
        self.doctype = ""

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a, tuple(t for t, _ in self.stack)))
        if tag not in self.VOID:
            self.stack.append((tag, a))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs},
                              tuple(t for t, _ in self.stack)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1][0] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if data.strip() and self.stack:
            self.texts.append((tuple(t for t, _ in self.stack), self.stack[-1][1],
                               data.strip()))

    def of(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a, _ in self.elements if t == tag
                and all(a.get(k, "") == v for k, v in attrs.items())]


def parse(html: str) -> Tree:
    tree = Tree()
    tree.feed(html)
    tree.close()
    assert tree.stack == [], f"unclosed: {tree.stack}"
    return tree


def _pool_section(html: str, pool: str) -> Tree:
    start = html.rindex("<section", 0, html.index(f'id="pool-{pool}"'))
    end = html.index("</section>", start) + len("</section>")
    return parse(html[start:end])


def test_self_contained_and_well_formed() -> None:
    html = render_html(recorded())
    tree = parse(html)
    assert tree.doctype.lower() == "doctype html"
    (csp,) = tree.of("meta", **{"http-equiv": "Content-Security-Policy"})
    assert "default-src 'none'" in csp["content"]
    assert tree.of("script") == [] and tree.of("link") == [] and tree.of("img") == []
    assert tree.of("iframe") == [] and tree.of("object") == []
    for _, attrs, _ in tree.elements:
        for name, value in attrs.items():
            assert name not in ("src", "href", "srcset", "action"), (name, value)
            assert "url(" not in value and "//" not in value.replace("://", ""), value
    assert "@import" not in html and "http://" not in html and "https://" not in html


def test_every_pool_every_failure_and_the_runs_facts() -> None:
    run = recorded()
    html = render_html(run)
    tree = parse(html)
    assert [a["id"] for a in tree.of("section") if a.get("id", "").startswith("pool-")] == [
        "pool-h100-train", "pool-v5p-ms", "pool-l4-idle"]
    banner = " ".join(t for path, a, t in tree.texts if "div" in path and (
        a.get("class") in ("big", "nodes")))
    assert "FAILED: 2 failures" in banner and BAD_NODE in banner
    rows = [t for path, _, t in tree.texts if "tr" in path and "table" in path]
    assert any("529 TFLOP/s below floor 593.4" in t for t in rows)
    assert any("node outlier" in t for t in rows)
    text = " ".join(t for _, _, t in tree.texts)
    for fact in (run.run_id, "prod", run.thresholds_version, "2.13.0", "0.10.2", "GPUDirectTCPX_v7",
                 "21.4 GB/s", "scaled to zero"):
        assert fact in text, fact


def test_charts_per_pool_failing_node_first_with_peak_floor_and_band() -> None:
    html = render_html(recorded())
    h100 = _pool_section(html, "h100-train")
    charts = h100.of("svg")
    assert [c["aria-label"] for c in charts] == ["h100-train bf16 matmul (TFLOP/s)",
                                                  "h100-train memory bandwidth (GB/s)"]
    # the node labels of the first chart, in order: the failing node first
    labels = [t for path, a, t in h100.texts if path[-1:] == ("text",)
              and a.get("font-size") == "12.5"]
    assert labels[:3] == [BAD_NODE, *sorted(H100_NODES[:2])]
    bars = [a for a in h100.of("rect") if a.get("height") == "12"]
    assert len(bars) == 2 * 24
    assert sum(a["fill"] == "#c62828" for a in bars) == 1  # cuda3 of the bad node
    marks = [t for path, _, t in h100.texts if path[-1:] == ("text",)]
    assert {"floor 593", "warn 623", "peak 989"} <= set(marks)
    assert any(m.startswith("floor 1,90") for m in marks)  # DCGM's H100 memory floor
    v5p = _pool_section(html, "v5p-ms")
    assert len(v5p.of("svg")) == 2 and "slice" in " ".join(t for _, _, t in v5p.texts)
    idle = _pool_section(html, "l4-idle")
    assert idle.of("svg") == []


def test_the_quarantine_is_reported_with_the_failing_host() -> None:
    q = ActionReport((NodeAction("ml-gke", "v5p-ms", "gke-ml-v5p-ms-0-1", "quarantined",
                                 "gke-ml-v5p-ms-0-0", "tpu2 matmul_tflops ..."),),
                     ("ml-gke/h100-train: 2 more failing nodes not quarantined",))
    tree = parse(render_html(recorded(), quarantine=q))
    assert [a for a in tree.of("section") if a.get("id") == "quarantine"]
    text = " ".join(t for _, _, t in tree.texts)
    assert "gke-ml-v5p-ms-0-0" in text and "quarantined" in text
    assert "2 more failing nodes not quarantined" in text


def test_values_never_become_markup() -> None:
    run = recorded()
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    pool = run.pools[0]
    pool = replace(pool, checks=(*pool.checks, Check(BAD_NODE, ProbeResult(
        "host", "pod", 0, Verdict.FAIL, evil))), name="h100<u>x</u>")
    html = render_html(replace(run, pools=(pool,), stack=evil))
    tree = parse(html)
    assert tree.of("script") == [] and tree.of("img") == [] and tree.of("u") == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_local_run_renders() -> None:
    from smoke._results import HostReport

    host = HostReport(host="workstation", backend="torch", platform="cpu",
                      versions={"torch": "2.13.0"}, tier=2, results=(
                          ProbeResult("cpu0", "matmul_tflops", 2, Verdict.PASS, "0.3 TFLOP/s",
                                      0.3, None, "TFLOP/s"),))
    tree = parse(render_html(RunReport.of_host(host, "l2611230900-abcd")))
    text = " ".join(t for _, _, t in tree.texts)
    assert "PASSED" in text and "workstation" in text and "(local)" in text
    assert "no catalog peak for this device" in text


