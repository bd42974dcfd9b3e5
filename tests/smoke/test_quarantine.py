"""Quarantine and release on the fake API server, over HTTP with the real Kubernetes client:
the failing node and only it, the cap, a TPU slice taken whole, a node somebody else had
cordoned left as it was, and `smoke status`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from smoke.cluster.quarantine import COMPONENT, KEY, PREFIX, UNDO, Cap, quarantine
from smoke.cluster.release import release
from smoke.cluster.run import Check, NodeOutcome, PoolReport, PoolStatus, RunReport
from smoke.probes.results import HostReport, ProbeResult, Verdict
from tests.smoke.nodes import gke_node
from tests.smoke.test_cluster_run import (
    STACK,
    _recorded,
    add_pool_nodes,
    assert_nothing_left,
    eventually,
    settled,
    smoke_run,
)

TAINT = {"key": KEY, "value": "failed", "effect": "NoSchedule"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}  # GKE's own
# a cordoned node's taint, which the node lifecycle controller adds and lifts (seen on the real
# control plane; tests.smoke.fakekube._controllers._node_lifecycle cites the source)
CORDONED = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def _node(cluster: Any, name: str, **kw: Any) -> None:
    """A node as GKE makes it for a g2-standard-24 pool (the recorded real node, with GKE's
    GPU taint), with the extra `labels` / `taints` given."""
    cluster.add_node_object(gke_node(name, "g2-standard-24", nodepool="gpu-a", **kw))
    settled(cluster, name)


def _pool_of(count: int) -> str:
    return STACK.replace("nodes: 2,\n         zone: us-central1-a}\n      - {name: gpu-b",
                         f"nodes: {count},\n         zone: us-central1-a}}\n      - {{name: "
                         "gpu-b")


@pytest.fixture
def stack(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.q.yaml"
    path.write_text(_pool_of(3), encoding="utf-8")
    return path


def _plain(node: dict[str, Any] | None) -> dict[str, Any]:
    """A node as compared before and after: no resourceVersion, no managedFields, no status
    (a kubelet's heartbeats change it), no taint's timeAdded, no empty maps."""
    assert node is not None
    node = json.loads(json.dumps(node))
    node["metadata"].pop("resourceVersion")
    node["metadata"].pop("managedFields", None)
    node.pop("status", None)
    node["spec"]["taints"] = _taints(node)
    for k in ("labels", "annotations"):
        if not node["metadata"].get(k):
            node["metadata"].pop(k, None)
    return node


def _taints(node: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A node's taints without `timeAdded` (the node lifecycle controller stamps its own)."""
    return [{k: v for k, v in t.items() if k != "timeAdded"}
            for t in ((node or {}).get("spec") or {}).get("taints") or []]


def _events(cluster: Any, node: str) -> list[dict[str, Any]]:
    """The Events smoke recorded about the Node (of this uid: a Node of the same name deleted
    before has Events of its own), from any namespace, oldest first. The node lifecycle
    controller records its own (RegisteredNode, RemovingNode) about every node."""
    uid = (cluster.get("nodes", "", node) or {}).get("metadata", {}).get("uid")
    items = [e for e in cluster.list("events", None, field_selector=f"involvedObject.kind=Node,"
                                     f"involvedObject.name={node}")["items"]
             if e["involvedObject"].get("uid") in (uid, node)
             and (e.get("source") or {}).get("component") == COMPONENT]
    return sorted(items, key=lambda e: int(e["metadata"]["resourceVersion"]))


def _cli(cluster: Any, tmp_path: Path, *args: str) -> Any:
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    return CliRunner().invoke(app, ["smoke", *args, "--kubeconfig", str(kc), "--context",
                                    "c1=fake"])


def test_one_failing_node_is_quarantined_released_reported_and_followed(
        cluster: Any, stack: Path, tmp_path: Path) -> None:
    """The issue's 'done when': a run with one failing node quarantines exactly that node,
    `smoke release` restores it, the run's HTML report names the failure, and `smoke
    history` shows the node's trend across three runs."""
    nodes = add_pool_nodes(cluster, "gpu-a", 3)
    settled(cluster, *nodes)
    for node, tflops in zip(nodes, (800.0, 790.0, 640.0), strict=True):
        cluster.set_node_output(node, _recorded(node, tflops))
    bad = nodes[2]
    before = {n: _plain(cluster.get("nodes", "", n)) for n in nodes}
    history, html = tmp_path / "history.sqlite", tmp_path / "report.html"
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--quarantine", "--html", str(html), "--history",
                                  str(history))
    assert code == 1, output
    assert doc is not None
    actions = doc["quarantine"]["actions"]
    assert [(a["node"], a["state"]) for a in actions] == [(bad, "quarantined")]
    node = eventually(lambda: (n := cluster.get("nodes", "", bad)) and _taints(n) == [
        *before[bad]["spec"]["taints"], TAINT, CORDONED] and n)
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["labels"][KEY] == "failed"
    ann = node["metadata"]["annotations"]
    assert ann[PREFIX + "run"] == doc["run_id"]
    assert ann[PREFIX + "probe"] == "matmul_tflops_vs_pool"
    assert ann[PREFIX + "figure"] == "642.2 TFLOP/s"  # the median of its 8 GPUs
    assert ann[PREFIX + "threshold"].startswith("0.85 x peers' median 79")
    for other in nodes[:2]:
        assert _plain(cluster.get("nodes", "", other)) == before[other]
        assert _events(cluster, other) == []
    (event,) = _events(cluster, bad)
    assert event["metadata"]["namespace"] == "default"
    assert (event["type"], event["reason"]) == ("Warning", "SmokeQuarantined")
    assert doc["run_id"] in event["message"] and "0.81 of its peers" in event["message"]
    assert f"QUARANTINED c1/gpu-a {bad}" in output
    assert_nothing_left(cluster, doc["run_id"])

    page = html.read_text(encoding="utf-8")
    assert bad in page and "node outlier" in page and "quarantined" in page

    status = _cli(cluster, tmp_path, "status", str(stack))
    assert status.exit_code == 0, status.output
    assert bad in status.output and "matmul_tflops_vs_pool" in status.output
    assert doc["run_id"] in status.output and nodes[0] not in status.output

    released = _cli(cluster, tmp_path, "release", bad, "--stack", str(stack))
    assert released.exit_code == 0, released.output
    assert f"RELEASED c1/gpu-a {bad}" in released.output
    # uncordoned: the node lifecycle controller lifts its taint in its own time
    eventually(lambda: _plain(cluster.get("nodes", "", bad)) == before[bad])
    assert [e["reason"] for e in _events(cluster, bad)] == ["SmokeQuarantined",
                                                                 "SmokeReleased"]
    empty = _cli(cluster, tmp_path, "status", str(stack))
    assert "no quarantined node" in empty.output

    for _ in range(2):  # two more runs, the node still slow
        code, output, _doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a",
                                       "--history", str(history))
        assert code == 1, output
    trend = CliRunner().invoke(app, ["smoke", "history", "--history", str(history), "--node",
                                     bad, "--json"])
    assert trend.exit_code == 0, trend.output
    (matmul,) = [t for t in json.loads(trend.stdout) if t["probe"] == "matmul_tflops"]
    assert len(matmul["points"]) == 3 and matmul["last_verdict"] == "fail"
    assert [round(p["value"]) for p in matmul["points"]] == [642, 642, 642]
    table = CliRunner().invoke(app, ["smoke", "history", "--history", str(history),
                                     "--pool", "gpu-a"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and bad in table.output and "fail" in table.output


def test_the_cap_stops_quarantine_says_so_and_exits_1(cluster: Any, tmp_path: Path
                                                      ) -> None:
    stack = tmp_path / "Pulumi.four.yaml"
    stack.write_text(_pool_of(4), encoding="utf-8")
    nodes = add_pool_nodes(cluster, "gpu-a", 4)
    cluster.set_node_output(nodes[0], _recorded(nodes[0], 800.0))
    for node in nodes[1:]:
        cluster.set_node_output(node, json.dumps(HostReport(
            host=node, backend="torch", platform="gpu", versions={}, tier=1,
            results=(_fail(),)).to_dict()))
    # three nodes compute wrong answers, but 10% of 4 nodes is 1
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--quarantine", "--no-history")
    assert code == 1, output
    assert doc is not None
    states = {a["node"]: a["state"] for a in doc["quarantine"]["actions"]}
    assert sorted(states.values()) == ["over-cap", "over-cap", "quarantined"]
    taken = [n for n in nodes if cluster.get("nodes", "", n)["spec"].get("unschedulable")]
    assert taken == [n for n, s in states.items() if s == "quarantined"]
    assert "CAP c1/gpu-a: 2 more failing nodes not quarantined: the cap is 1 node of 4" \
        in output
    # the node quarantined already counts against the cap: with a cap of 2, one more
    run = _run_failing({n: [_fail()] for n in nodes[1:]})
    report = quarantine(run, {"c1": _client(cluster, tmp_path)}, pools={},
                        cap=Cap.parse("2"))
    assert sorted(a.state for a in report.actions) == ["already", "over-cap", "quarantined"]
    assert sum(bool(cluster.get("nodes", "", n)["spec"].get("unschedulable"))
               for n in nodes) == 2
    assert "1 already quarantined" in report.capped[0]


def test_max_quarantine_is_checked_before_any_work(tmp_path: Path) -> None:
    for args, words in ((["--quarantine", "--max-quarantine", "0"], "not a count"),
                        (["--quarantine", "--max-quarantine", "150%"], "not a count"),
                        (["--max-quarantine", "2"], "only applies with --quarantine")):
        result = CliRunner().invoke(app, ["smoke", "run", "--kubeconfig",
                                          str(tmp_path / "none"), *args])
        assert result.exit_code == 2, result.output
        assert words in result.output


@pytest.mark.parametrize("nodepool_labels", [True, False])
def test_a_tpu_slice_is_quarantined_whole_naming_the_failing_host(
        fake_cluster: Any, tmp_path: Path, nodepool_labels: bool) -> None:
    """One crashed host of slice 0 takes out slice 0's hosts (found by their GKE node pool,
    or without that label by the run's slice index), never slice 1's."""
    from tests.smoke.test_cluster_run import add_tpu_hosts

    stack, hosts = add_tpu_hosts(fake_cluster, tmp_path, nodepool_labels=nodepool_labels)
    bad = hosts[0]
    fake_cluster.set_node_output(bad, "libtpu: TPU chip 2 is unhealthy", exit_code=3)
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--tier", "2",
                                  "--quarantine", "--no-history")
    assert code == 1, output
    assert doc is not None
    slice_of = {n["node"]: n["slice"] for n in doc["pools"][0]["nodes"]}
    bad_slice = slice_of.get(bad)
    if nodepool_labels:
        expected = {h for h in hosts if int(h[-1]) // 2 == int(bad[-1]) // 2}
    else:
        expected = {h for h, s in slice_of.items() if s == bad_slice} | {bad}
    states = {a["node"]: a for a in doc["quarantine"]["actions"]}
    assert set(states) == expected and len(expected) == 2
    assert all(a["state"] == "quarantined" and a["host"] == bad for a in states.values())
    (mate,) = expected - {bad}
    assert f"QUARANTINED c1/v5p-ms {mate} (slice of failing host {bad})" in output
    for h in hosts:
        node = fake_cluster.get("nodes", "", h)
        assert bool(node["spec"].get("unschedulable")) == (h in expected)
    assert fake_cluster.get("nodes", "", mate)["metadata"]["annotations"][
        PREFIX + "host"] == bad
    assert "is in the TPU slice of" in _events(fake_cluster, mate)[0]["message"]
    # releasing one host of the slice releases the slice
    result = _cli(fake_cluster, tmp_path, "release", mate, "--stack", str(stack), "--json")
    assert result.exit_code == 0, result.output
    assert {a["node"] for a in json.loads(result.stdout)["actions"]} == expected
    assert not any(fake_cluster.get("nodes", "", h)["spec"].get("unschedulable")
                   for h in hosts)


# -- the API layer, with a run built here ---------------------------------------------------
def _run_failing(nodes: dict[str, list[ProbeResult]], pool: str = "gpu-a") -> RunReport:
    outcomes = tuple(NodeOutcome(i, f"pod-{i}", n, HostReport(
        host=n, backend="torch", platform="gpu", versions={}, tier=2, results=tuple(rs)))
        for i, (n, rs) in enumerate(nodes.items()))
    return RunReport(run_id="r2611230900-abcd", stack="test", started_at="", duration_s=1.0,
                     thresholds_version="t", agent_digest="", pools=(PoolReport(
                         pool, "c1", "g2-standard-24", "w", len(nodes), PoolStatus.DONE,
                         outcomes),))


def _fail(probe: str = "known_answer", verdict: Verdict = Verdict.FAIL) -> ProbeResult:
    return ProbeResult("cuda0", probe, 1, verdict, "wrong answer: max rel error 3e-01",
                       0.3, 5e-3, "rel err")


def _client(cluster: Any, tmp_path: Path) -> Any:
    from kubernetes import config  # type: ignore[attr-defined]

    kc = cluster.kubeconfig(tmp_path / "kc", context="fake")
    return config.new_client_from_config(config_file=str(kc), context="fake")


def test_a_node_cordoned_by_someone_else_is_left_as_it_was(cluster: Any,
                                                           tmp_path: Path) -> None:
    theirs = {"key": "maintenance", "value": "disk", "effect": "NoSchedule"}
    _node(cluster, "n1", labels={"team": "infra"}, taints=[theirs])
    cluster.patch("nodes", "", "n1", {"spec": {"unschedulable": True}, "metadata": {
        "annotations": {"infra/ticket": "OPS-42"}}})
    eventually(lambda: _taints(cluster.get("nodes", "", "n1")) == [GPU_TAINT, theirs,
                                                                   CORDONED])
    before = _plain(cluster.get("nodes", "", "n1"))
    clients = {"c1": _client(cluster, tmp_path)}
    report = quarantine(_run_failing({"n1": [_fail()]}), clients, pools={}, cap=Cap.parse("1"))
    assert [a.state for a in report.actions] == ["quarantined"]
    node = cluster.get("nodes", "", "n1")
    assert _taints(node) == [GPU_TAINT, theirs, CORDONED, TAINT]
    assert node["spec"]["unschedulable"]
    undo = json.loads(node["metadata"]["annotations"][UNDO])
    assert undo["cordoned"] is False and undo["tainted"] is True
    # meanwhile somebody else adds a taint of their own: the release keeps it
    late = {"key": "gpu-fw", "value": "update", "effect": "NoSchedule"}
    cluster.patch("nodes", "", "n1", {"spec": {"taints": [*node["spec"]["taints"], late]},
                                      "metadata": {"resourceVersion": node["metadata"][
                                          "resourceVersion"]}})
    done = release(clients, nodes=["n1"])
    assert [a.state for a in done.actions] == ["released"]
    assert "left cordoned" in done.actions[0].detail
    node = _plain(cluster.get("nodes", "", "n1"))
    assert node["spec"]["unschedulable"] is True
    assert node["spec"]["taints"] == [GPU_TAINT, theirs, CORDONED, late]
    node["spec"]["taints"] = [GPU_TAINT, theirs, CORDONED]
    assert node == before


def test_a_concurrent_change_is_reread_never_overwritten(cluster: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Between our read and our patch, somebody taints the node: the patch (guarded by the
    resourceVersion) gets 409 Conflict, is read again, and both taints stay."""
    import smoke.cluster.quarantine as q

    _node(cluster, "n1")
    raced = {"key": "race", "value": "x", "effect": "NoSchedule"}
    real = q._quarantine_patch
    calls = []

    def racing(node: dict[str, Any], ann: dict[str, str], unit: list[str]) -> Any:
        calls.append(1)
        if len(calls) == 1:
            cluster.patch("nodes", "", "n1", {"spec": {"taints": [GPU_TAINT, raced]}})
        return real(node, ann, unit)

    monkeypatch.setattr(q, "_quarantine_patch", racing)
    report = quarantine(_run_failing({"n1": [_fail()]}), {"c1": _client(cluster,
                                                                         tmp_path)},
                        pools={}, cap=Cap.parse("1"))
    assert [a.state for a in report.actions] == ["quarantined"] and len(calls) == 2
    eventually(lambda: _taints(cluster.get("nodes", "", "n1")) == [GPU_TAINT, raced, TAINT,
                                                                   CORDONED])


def test_warn_skipped_and_the_pool_collective_never_quarantine(cluster: Any,
                                                               tmp_path: Path) -> None:
    for n in ("n1", "n2", "n3"):
        _node(cluster, n)
    run = _run_failing({"n1": [_fail(verdict=Verdict.WARN)],
                        "n2": [_fail(verdict=Verdict.SKIPPED)],
                        "n3": [_fail("fabric_busbw")]})
    report = quarantine(run, {"c1": _client(cluster, tmp_path)}, pools={},
                        cap=Cap.parse("100%"))
    assert report.actions == () and report.ok
    assert not any(cluster.get("nodes", "", n)["spec"].get("unschedulable")
                   for n in ("n1", "n2", "n3"))
    assert _events(cluster, "n1") == []


def test_a_crashed_pod_and_an_outlier_quarantine_their_node(cluster: Any,
                                                           tmp_path: Path) -> None:
    _node(cluster, "n1")
    _node(cluster, "n2")
    # n2 reports a pass (an empty report is a failure of its own: issue 19 item 10)
    run = _run_failing({"n1": [], "n2": [_fail(verdict=Verdict.PASS)]})
    pool = run.pools[0]
    crash = ProbeResult("host", "pod", 0, Verdict.FAIL, "pod pod-0 exited 3")
    run = RunReport(**{**run.__dict__, "pools": (PoolReport(**{
        **pool.__dict__, "checks": (Check("n1", crash), Check(None, crash))}),)})
    report = quarantine(run, {"c1": _client(cluster, tmp_path)}, pools={},
                        cap=Cap.parse("100%"))
    assert [(a.node, a.state) for a in report.actions] == [("n1", "quarantined")]


def test_release_refuses_unknown_nodes_before_changing_anything(cluster: Any,
                                                                tmp_path: Path) -> None:
    _node(cluster, "n1")
    clients = {"c1": _client(cluster, tmp_path)}
    quarantine(_run_failing({"n1": [_fail()]}), clients, pools={}, cap=Cap.parse("1"))
    from fleet.errors import InputError

    with pytest.raises(InputError, match="no node nope"):
        release(clients, nodes=["n1", "nope"])
    assert cluster.get("nodes", "", "n1")["spec"]["unschedulable"] is True
    _node(cluster, "n2")
    done = release(clients, nodes=["n2"])
    assert [(a.state, a.detail) for a in done.actions] == [
        ("not-quarantined", "not quarantined by accelfleet: left as it is")]


def test_release_needs_nodes_or_one_pool(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["smoke", "release"])
    assert result.exit_code == 2 and "name the nodes to release, or one --pool" in \
        result.output
    result = CliRunner().invoke(app, ["smoke", "release", "n1", "--pool", "p"])
    assert result.exit_code == 2


def test_cap_parsing() -> None:
    assert Cap.parse("10%").limit(3) == 1 and Cap.parse("10%").limit(20) == 2
    assert Cap.parse("25%").limit(16) == 4 and Cap.parse("2").limit(100) == 2
    from fleet.errors import InputError

    for bad in ("0", "-1", "abc", "0%", "101%"):
        with pytest.raises(InputError):
            Cap.parse(bad)


@pytest.mark.parametrize(("command", "options"), [
    ("run", ("--quarantine", "--max-quarantine", "--html", "--metrics", "--history",
             "--no-history")),
    ("local", ("--html", "--metrics", "--history", "--no-history")),
    ("release", ("--pool", "--stack", "--outputs", "--kubeconfig", "--context", "--json")),
    ("status", ("--outputs", "--kubeconfig", "--context", "--json")),
    ("history", ("--pool", "--node", "--accelerator", "--last", "--history", "--json")),
])
def test_help_documents_every_new_option(command: str, options: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, ["smoke", command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for opt in options:
        assert opt in result.output, opt


def test_the_real_agent_beside_a_crashing_node_quarantines_it_then_release_lifts_it(
        cluster: Any, stack: Path, tmp_path: Path, cpu_nodes: None) -> None:
    """Two nodes run the real agent on this CPU (tiers 0-1), the third's agent dies on a CUDA
    error: `smoke run --quarantine` takes that node alone (cordon, taint, label, Event), and
    `smoke release` gives it back as it was."""
    nodes = add_pool_nodes(cluster, "gpu-a", 3)
    bad = nodes[1]
    cluster.set_node_command(bad, ["python", "-c", "import sys; print('CUDA error: an illegal "
                                   "memory access was encountered'); sys.exit(3)"])
    before = _plain(cluster.get("nodes", "", bad))
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a", "--tier", "1",
                                  "--quarantine", "--no-history")
    assert code == 1, output
    assert doc is not None
    assert sorted(r.host for r in _reports(doc)) == sorted(set(nodes) - {bad})
    assert [(a["node"], a["state"]) for a in doc["quarantine"]["actions"]] == [
        (bad, "quarantined")]
    eventually(lambda: _taints(cluster.get("nodes", "", bad)) == [
        *before["spec"]["taints"], TAINT, CORDONED])
    assert [e["reason"] for e in _events(cluster, bad)] == ["SmokeQuarantined"]
    assert "exited 3" in _events(cluster, bad)[0]["message"]
    assert_nothing_left(cluster, doc["run_id"])
    released = _cli(cluster, tmp_path, "release", bad, "--stack", str(stack))
    assert released.exit_code == 0, released.output
    eventually(lambda: _plain(cluster.get("nodes", "", bad)) == before)


def _reports(doc: dict[str, Any]) -> list[HostReport]:
    from tests.smoke.test_cluster_run import reports

    return reports(doc, "gpu-a")
