"""Issue 35: the gate's alert rules (docs/gate.md "Alerts", a PrometheusRule) read only series
the controller exports. The rules are parsed out of the doc; every `accelfleet_gate_*` name in
their expressions must be a sample name of `smoke.gate._metrics.render` for a controller that
has seen each kind of event (a leader, nodes unproven and quarantined, proofs of every
verdict, a re-proof, an open breaker), so a renamed or dropped series fails here rather than
silencing an alert. The thresholds are the project's own figures."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml
from kubernetes.client import ApiClient

from fleet.gate import AUTOSCALER_STARTUP_WINDOW_S
from smoke.gate._metrics import PREFIX, render
from smoke.gate.controller import Gate, GateOptions
from tests.smoke.gate_cluster import gated_inventory, gke_gated_node

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "gate.md"
POOL = "h100-train"
METRIC = re.compile(rf"\b{PREFIX}[a-z0-9_]+\b")
WANTED = {"AccelfleetGateNoLeader", "AccelfleetGateDown", "AccelfleetGateQuarantineBreakerOpen",
          "AccelfleetGateNodeUnprovenPastDeadline", "AccelfleetGateProofsFailing"}


def _rule_document() -> dict[str, Any]:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    [doc] = [yaml.safe_load(b) for b in blocks if "kind: PrometheusRule" in b]
    return dict(doc)


def _rules() -> list[dict[str, Any]]:
    doc = _rule_document()
    return [r for g in doc["spec"]["groups"] for r in g["rules"]]


def _stamp(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _seen_everything() -> Gate:
    """A controller (never run) with every series filled: what it exports after a day."""
    gate = Gate(ApiClient(), "ml-gke", gated_inventory(), GateOptions(elect=False))
    old = gke_gated_node(POOL, "gke-h100-train-0")
    old["metadata"].update(creationTimestamp=_stamp(datetime.now(UTC) - timedelta(hours=1)),
                           resourceVersion="1", uid="u0")
    nodes = {"gke-h100-train-0": old}
    gate.watch = SimpleNamespace(snapshot=lambda: dict(nodes), expired=1, oversized=0,
                                 errors=2, lists=3, events=0)
    gate.verdict_counts = {(POOL, "pass"): 3, (POOL, "fail"): 2, (POOL, "infra"): 1}
    gate.ready_to_proven = {POOL: [120.0]}
    gate.reproof_seconds = {POOL: [300.0]}
    gate.node_hours = {(POOL, "research", "unproven"): 1.5,
                       (POOL, "research", "quarantined"): 0.5}
    gate.caps.judged(POOL, ["fail"] * 6)
    assert gate.caps.breaker(POOL)[0]  # open: most recent proofs failed
    return gate


def _samples(text: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines()
            if line and not line.startswith("#")}


def test_the_doc_has_the_rules_the_issue_asks_for_each_complete() -> None:
    doc = _rule_document()
    assert (doc["apiVersion"], doc["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    rules = _rules()
    names = [r["alert"] for r in rules]
    assert WANTED <= set(names) and len(names) == len(set(names))
    for r in rules:
        assert r["labels"]["severity"] in ("critical", "warning"), r["alert"]
        assert r["annotations"]["summary"], r["alert"]
        expr = r["expr"]
        assert expr.count("(") == expr.count(")") and expr.count("[") == expr.count("]")


def test_every_series_the_rules_read_is_exported() -> None:
    exported = _samples(render([_seen_everything()]))
    used = {m for r in _rules() for m in METRIC.findall(r["expr"])}
    assert used  # the rules do read the gate's series
    missing = sorted(used - exported)
    assert not missing, f"the alert rules read series /metrics does not export: {missing}"
    # the series each asked-for alert stands on
    assert {f"{PREFIX}leader", f"{PREFIX}up", f"{PREFIX}quarantine_breaker_open",
            f"{PREFIX}oldest_unproven_seconds", f"{PREFIX}proofs_total"} <= used


def test_the_rules_use_the_verdicts_and_the_window_the_controller_has() -> None:
    rules = {r["alert"]: r for r in _rules()}
    late = rules["AccelfleetGateNodeUnprovenPastDeadline"]["expr"]
    assert re.search(rf"> {AUTOSCALER_STARTUP_WINDOW_S}\b", late), late
    text = render([_seen_everything()])
    verdicts = set(re.findall(r'proofs_total\{[^}]*verdict="([a-z]+)"', text))
    for r in rules.values():
        for v in re.findall(r'verdict="([a-z]+)"', r["expr"]):
            assert v in verdicts, (r["alert"], v)


def test_the_oldest_unproven_node_is_exported_from_its_own_timestamps() -> None:
    text = render([_seen_everything()])
    [line] = [ln for ln in text.splitlines()
              if ln.startswith(f"{PREFIX}oldest_unproven_seconds{{")]
    assert line.startswith(f'{PREFIX}oldest_unproven_seconds{{cluster="ml-gke",pool="{POOL}"}}')
    assert 3600 <= float(line.split(" ")[-1]) < 3600 + 600  # created an hour ago
