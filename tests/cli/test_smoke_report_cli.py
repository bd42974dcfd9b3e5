"""`accelfleet smoke report RUN.json`: a saved run (the run.json of `smoke run --out`, the
document of `smoke run --json` or `smoke local --json`) shown and written again as HTML and
JUnit XML, with the saved run's verdict as the exit code (issue 38's blocker: a CI run's
report could not be seen)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from smoke.cluster.quarantine import ActionReport, NodeAction
from smoke.cluster.run import RunReport
from smoke.session import SmokeResult
from tests.hostile.conftest import invoke, refused
from tests.smoke.recorded import BAD_NODE, DATA


def _saved(tmp_path: Path, run: RunReport, quarantine: ActionReport | None = None) -> Path:
    path = tmp_path / "run.json"
    path.write_text(SmokeResult(run, quarantine=quarantine).to_json(), encoding="utf-8")
    return path


def _recorded() -> RunReport:
    return RunReport.from_dict(json.loads(DATA.read_text(encoding="utf-8")))


def test_a_failed_run_is_shown_written_as_html_and_junit_and_exits_1(tmp_path: Path) -> None:
    taken = ActionReport((NodeAction("ml-gke", "h100-train", BAD_NODE, "quarantined",
                                     cause="cuda3 matmul below the floor"),))
    saved = _saved(tmp_path, _recorded(), taken)
    html, junit = tmp_path / "out" / "report.html", tmp_path / "out" / "junit.xml"
    code, out = invoke("smoke", "report", str(saved), "--html", str(html), "--junit",
                       str(junit))
    assert code == 1, out
    assert BAD_NODE in out and "h100-train" in out, out
    assert f"QUARANTINED ml-gke/h100-train {BAD_NODE}" in out, out
    assert f"wrote {html}" in out and f"wrote {junit}" in out, out
    assert f"read {saved}" in out, out
    page = html.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") or page.lstrip().lower().startswith("<!doctype")
    assert BAD_NODE in page and "r2611221403-5e9a" in page
    suites = ET.fromstring(junit.read_text(encoding="utf-8"))
    failures = [c for c in suites.iter("testcase") if c.find("failure") is not None]
    assert failures and all(BAD_NODE in (c.get("name", "") + c.get("classname", ""))
                            for c in failures), [c.attrib for c in failures]


def test_a_passing_run_exits_0(tmp_path: Path) -> None:
    run = _recorded()
    run = replace(run, pools=tuple(replace(p, nodes=tuple(n for n in p.nodes
                                                          if n.node != BAD_NODE), checks=())
                                   for p in run.pools))
    code, out = invoke("smoke", "report", str(_saved(tmp_path, run)))
    assert code == 0, out
    assert "v5p-ms" in out and BAD_NODE not in out, out


def test_json_prints_the_run_document_again(tmp_path: Path) -> None:
    saved = _saved(tmp_path, _recorded())
    code, out = invoke("smoke", "report", str(saved), "--json")
    assert code == 1
    start = out.index("{")
    doc, _ = json.JSONDecoder().raw_decode(out[start:])
    assert doc["run_id"] == "r2611221403-5e9a" and not doc["ok"]


def test_a_smoke_local_document_is_a_run_of_one_local_node(tmp_path: Path) -> None:
    host = _recorded().pools[1].nodes[0].report
    assert host is not None
    path = tmp_path / "host.json"
    path.write_text(host.to_json(), encoding="utf-8")
    html = tmp_path / "local.html"
    code, out = invoke("smoke", "report", str(path), "--html", str(html))
    assert code == 0, out
    assert "local" in out and host.host in html.read_text(encoding="utf-8"), out


def test_an_interrupted_run_exits_1_saying_so(tmp_path: Path) -> None:
    code, out = invoke("smoke", "report", str(_saved(tmp_path, replace(_recorded(),
                                                                       cancelled=True))))
    assert code == 1, out
    assert "interrupted" in out, out


def test_what_is_no_saved_run_is_refused_naming_the_file(tmp_path: Path) -> None:
    other = tmp_path / "plan.json"
    other.write_text(json.dumps({"kind": "accelfleet.plan", "resources": []}), encoding="utf-8")
    code, out = invoke("smoke", "report", str(other))
    refused(code, out, str(other), "accelfleet.smoke/run", "smoke run --out DIR")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    refused(*invoke("smoke", "report", str(broken)))
    bad_quarantine = tmp_path / "q.json"
    bad_quarantine.write_text(json.dumps({**_recorded().to_dict(), "quarantine": [1]}),
                              encoding="utf-8")
    refused(*invoke("smoke", "report", str(bad_quarantine)), "quarantine")
    refused(*invoke("smoke", "report", str(tmp_path / "missing.json")), "missing.json")


def test_an_output_over_the_saved_run_is_refused_before_anything_is_written(
        tmp_path: Path) -> None:
    saved = _saved(tmp_path, _recorded())
    before = saved.read_text(encoding="utf-8")
    refused(*invoke("smoke", "report", str(saved), "--html", str(saved)), "overwrite")
    assert saved.read_text(encoding="utf-8") == before
