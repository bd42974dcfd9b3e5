"""Issue 30: a quarantine that fails loses nothing measured. run.json, JUnit, the HTML report,
the metrics and the history row are written before quarantine acts; an API answer that is
refused or malformed while quarantining (a node read, a patch, the list of quarantined nodes)
is an error in words (exit 1, the nodes left untouched named), never an internal error."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.smoke.fakekube import ApiError
from tests.smoke.test_cluster_run import _recorded, add_pool_nodes, smoke_run
from tests.smoke.test_quarantine import _pool_of

pytest.importorskip("torch")


def _no_metadata(answer: Any) -> Any:
    if isinstance(answer, dict):
        answer.pop("metadata", None)
        for item in answer.get("items") or []:
            item.pop("metadata", None)
    return answer


def _not_json_object(answer: Any) -> Any:
    return ["not", "a", "node"]


def _items_not_a_list(answer: Any) -> Any:
    if isinstance(answer, dict):
        answer["items"] = [42, "node"]
    return answer


def _forbidden(answer: Any) -> Any:
    raise ApiError(403, "Forbidden", 'nodes "x" is forbidden: User "ci" cannot patch resource '
                   '"nodes" in API group "" at the cluster scope')


CASES = {  # (method, path part, rule, what happens to the failing node)
    "node read without metadata": ("GET", "/api/v1/nodes/", _no_metadata, "error"),
    "node read not an object": ("GET", "/api/v1/nodes/", _not_json_object, "error"),
    # the patch took: the node is quarantined, and its Event still names it
    "patch answer without metadata": ("PATCH", "/api/v1/nodes/", _no_metadata,
                                      "quarantined"),
    # items that are not Nodes tell of no quarantined node: the failing one is taken
    "quarantined list malformed": ("GET", "/api/v1/nodes", _items_not_a_list, "quarantined"),
    "patch forbidden": ("PATCH", "/api/v1/nodes/", _forbidden, "error"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_failed_quarantine_keeps_every_result(fake_cluster: Any, tmp_path: Path,
                                                case: str) -> None:
    stack = tmp_path / "Pulumi.q.yaml"
    stack.write_text(_pool_of(3), encoding="utf-8")
    nodes = add_pool_nodes(fake_cluster, "gpu-a", 3)
    for node, tflops in zip(nodes, (800.0, 790.0, 640.0), strict=True):
        fake_cluster.set_node_output(node, _recorded(node, tflops))
    method, path, rule, state = CASES[case]
    # the quarantine's node answers lie; the run's own reads (the live pool's node list
    # carries a label selector) stay true until the run is over
    armed = {"on": False}

    def lying(answer: Any) -> Any:
        return rule(answer) if armed["on"] else answer

    fake_cluster.lie(method, path, lying)
    out, history = tmp_path / "out", tmp_path / "history.sqlite"
    html, metrics = tmp_path / "r.html", tmp_path / "m.prom"

    import smoke.cluster.quarantine as q

    real = q.quarantine

    def arm_then_quarantine(*args: Any, **kwargs: Any) -> Any:
        armed["on"] = True
        return real(*args, **kwargs)

    mp = pytest.MonkeyPatch()
    mp.setattr(q, "quarantine", arm_then_quarantine)
    try:
        code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--pools", "gpu-a",
                                      "--quarantine", "--out", str(out), "--html", str(html),
                                      "--metrics", str(metrics), "--history", str(history))
    finally:
        mp.undo()
    assert code == 1, output
    assert "internal error" not in output.lower()
    assert doc is not None
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["run_id"] == doc["run_id"] and run["nodes_tested"] == 3
    assert (out / "junit.xml").is_file() and html.is_file() and metrics.is_file()
    with sqlite3.connect(history) as conn:
        assert conn.execute("SELECT run_id FROM runs").fetchall() == [(doc["run_id"],)]
    actions = [(a["node"], a["state"]) for a in doc["quarantine"]["actions"]]
    assert actions == [(nodes[2], state)], doc["quarantine"]
    assert f"{state.upper()} c1/gpu-a {nodes[2]}" in output
    # run.json was written again after quarantine, saying what it did
    assert [a["state"] for a in run["quarantine"]["actions"]] == [state]
    if state == "error":
        assert "left untouched" in doc["quarantine"]["actions"][0]["detail"]
    else:
        event = fake_cluster.list("events", None, field_selector="involvedObject.name="
                                  + nodes[2])["items"]
        assert [e["reason"] for e in event
                if e["source"]["component"] != "node-controller"] == ["SmokeQuarantined"]
