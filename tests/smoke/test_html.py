"""The HTML report's structure, parsed with the standard library (the browser test looks at
it): self-contained, every pool, charts with failing nodes first, every failure with its
reason, the run's facts, and nothing a report value carries ever becomes markup."""

from __future__ import annotations

import json
from dataclasses import replace
from html.parser import HTMLParser
from typing import ClassVar

from smoke.cluster.quarantine import ActionReport, NodeAction
from smoke.cluster.run import Check, RunReport
from smoke.probes.results import ProbeResult, Verdict
from smoke.reports.html import render_html
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
    from smoke.probes.results import HostReport

    host = HostReport(host="workstation", backend="torch", platform="cpu",
                      versions={"torch": "2.13.0"}, tier=2, results=(
                          ProbeResult("cpu0", "matmul_tflops", 2, Verdict.PASS, "0.3 TFLOP/s",
                                      0.3, None, "TFLOP/s"),))
    tree = parse(render_html(RunReport.of_host(host, "l2611230900-abcd")))
    text = " ".join(t for _, _, t in tree.texts)
    assert "PASSED" in text and "workstation" in text and "(local)" in text
    assert "no catalog peak for this device" in text




# -- what NCCL each node ran (issue 19 item 4) ------------------------------------------------
NCCL_LOGS = DATA.parent / "nccl"


def _with_nccl(run: RunReport, logs: dict[str, str]) -> RunReport:
    """The h100-train nodes' fabric results carrying `details.nccl` as the agent records it:
    the reader's own judgment of a recorded real NCCL log (tests/smoke/data/nccl)."""
    from smoke.probes.nccl_log import Expect, judge
    from smoke.probes.nccl_log import parse as parse_nccl

    pool = run.pools[0]
    nodes = []
    for n in pool.nodes:
        log = logs.get(n.node or "")
        if log is None or n.report is None:
            nodes.append(n)
            continue
        text = (NCCL_LOGS / log).read_text(encoding="utf-8")
        nccl = judge(parse_nccl(text), Expect()).details
        results = tuple(replace(r, details={**r.details, "nccl": nccl})
                        if r.probe == "fabric_busbw" else r for r in n.report.results)
        nodes.append(replace(n, report=replace(n.report, results=results)))
    return replace(run, pools=(replace(pool, nodes=tuple(nodes)), *run.pools[1:]))


def test_each_node_row_names_the_nccl_plugin_and_transport_it_ran() -> None:
    good, bad = H100_NODES[0], BAD_NODE
    run = _with_nccl(recorded(), {good: "nccl-tcpxo-info.log",
                                  bad: "nccl-socket-gke-a3-info.log"})
    h100 = _pool_section(render_html(run), "h100-train")
    headers = [t for path, _, t in h100.texts if path[-1:] == ("th",)]
    assert "NCCL · net plugin · transport" in headers
    cells = {}
    for path, a, t in h100.texts:
        if path[-1:] == ("td",) and a.get("class") == "node":
            node = t
        elif path[-1:] == ("td",) and a.get("class") == "nccl":
            cells[node] = t
    # the real logs: TCPXO's FasTrak plugin 1.0.17 (that excerpt has no version line); the A3
    # node whose NCCL 2.22.3 loaded IBext_v8 and fell back to Socket
    assert cells[good] == "plugin FasTrak 1.0.17; via FasTrak"
    assert cells[bad] == "NCCL 2.22.3+cuda12.6; plugin IBext_v8 (v8); via Socket; GDRDMA off"
    assert cells[H100_NODES[1]] == "-"  # nothing recorded for that node
    # no column where no node recorded NCCL (the TPU pool)
    v5p = _pool_section(render_html(run), "v5p-ms")
    assert "NCCL · net plugin · transport" not in [t for _, _, t in v5p.texts]


def test_the_text_report_names_the_nccl_each_node_ran() -> None:
    from rich.console import Console

    from smoke.reports.text import nccl_used, run_table

    run = _with_nccl(recorded(), {BAD_NODE: "nccl-efa-ofi-eks-p4d-gdrdma-info.log"})
    out = Console(width=400, record=True)
    out.print(run_table(run))
    text = out.export_text()
    row = next(line for line in text.splitlines() if BAD_NODE in line)
    assert ("NCCL 2.27.3+cuda12.9; plugin Libfabric (v10), aws-ofi-nccl 1.16.2; via "
            "Libfabric; GDRDMA on") in row
    # hostile values stay text and only strings are shown
    evil = ProbeResult("host", "fabric_busbw", 3, Verdict.PASS, "", details={"nccl": {
        "nccl_versions": ["[red]2.0[/red]", {"x": 1}], "net_plugins": "p", "gdrdma": 5}})
    assert nccl_used([evil]) == "NCCL [red]2.0[/red]; plugin p; GDRDMA 5"
    # a local run's summary line too
    from smoke.probes.results import HostReport
    from smoke.reports.text import summary

    fabric = next(r for n in run.pools[0].nodes if n.node == BAD_NODE and n.report
                  for r in n.report.results if r.probe == "fabric_busbw")
    host = HostReport(host="ws", backend="torch", platform="gpu", versions={}, tier=3,
                      results=(fabric,))
    assert "plugin Libfabric (v10), aws-ofi-nccl 1.16.2; via Libfabric" in summary(host)
