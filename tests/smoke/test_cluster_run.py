"""`accelfleet smoke run` end to end on the fake cluster: render -> submit -> schedule -> the
real agent runs as a local process -> log -> verdicts -> reports -> cleanup, over HTTP with the
real Kubernetes client. Every case checks that nothing of the run is left on the server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from smoke.probes.results import HostReport, ProbeResult, Verdict
from tests.smoke.nodes import pool_node
from tests.stacks import ONE_GKE_CLUSTER

pytest.importorskip("torch")

HEAD = ONE_GKE_CLUSTER + """\
    smoke:
      namespace: smoke-test
      timeout_s: 120
    pools:
"""
STACK = HEAD + """\
      - {name: gpu-a, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 2,
         zone: us-central1-a}
      - {name: gpu-b, cluster: c1, team: research, accelerator: g2-standard-24, nodes: 2,
         zone: us-central1-a}
"""
RUN_LABEL = "accelfleet.io/run"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def stack_pools(text: str) -> dict[str, Any]:
    """The resolved pools of a stack given as text (name -> ResolvedPool)."""
    import tempfile

    from fleet import load_fleet

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Pulumi.nodes.yaml"
        path.write_text(text, encoding="utf-8")
        return {p.name: p for p in load_fleet(str(path)).pools}


def add_pool_nodes(cluster: Any, pool: str, count: int, *, stack_text: str = STACK
                   ) -> list[str]:
    """`count` nodes of `pool` of the stack, each built from the recorded real node of its
    machine type (tests/smoke/data/nodes) plus what GKE derives from the pool; returned once
    each is schedulable (`settled`: on the real plane the node lifecycle controller lifts the
    not-ready taint in its own time, and a run with a 5 s timeout found one node still
    tainted and called its pod unschedulable)."""
    resolved = stack_pools(stack_text)[pool]
    names = [f"{pool}-node-{i}" for i in range(count)]
    for name in names:
        cluster.add_node_object(pool_node(resolved, name))
    settled(cluster, *names)
    return names


def eventually(what: Any, timeout_s: float = 60.0) -> Any:
    """Poll `what()` until it is truthy (controllers act in their own time: the real plane's
    node lifecycle controller, the fake's tick); fail naming it after `timeout_s`."""
    end = time.monotonic() + timeout_s
    while True:
        got = what()
        if got or time.monotonic() > end:
            assert got, f"still not true after {timeout_s} s: {what}"
            return got
        time.sleep(0.05)


NOT_READY = "node.kubernetes.io/not-ready"


def settled(cluster: Any, *names: str) -> None:
    """Wait until each node is as a running cluster has it: Ready, the not-ready taint the
    API server put on it at registration lifted by the node lifecycle controller."""
    for name in names:
        eventually(lambda name=name: not any(
            t.get("key") == NOT_READY
            for t in (cluster.get("nodes", "", name) or {}).get("spec", {}).get("taints") or []))


def smoke_run(cluster: Any, stack: Path, tmp_path: Path, *extra: str) -> tuple[int, str, dict[
        str, Any] | None]:
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    result = CliRunner().invoke(app, ["smoke", "run", str(stack), "--kubeconfig", str(kc),
                                      "--context", "c1=fake", "--json", *extra])
    doc = None
    text = result.stdout
    start = text.find("{\n")
    if start >= 0:
        end = text.rfind("\n}") + 2
        doc = json.loads(text[start:end])
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        output += "".join(traceback.format_exception(result.exception))
    return result.exit_code, output, doc


def assert_nothing_left(cluster: Any, run_id: str) -> None:
    deadline = time.monotonic() + 10
    while cluster.objects(f"{RUN_LABEL}={run_id}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert cluster.objects(f"{RUN_LABEL}={run_id}") == []


def reports(doc: dict[str, Any], pool: str) -> list[HostReport]:
    p = next(x for x in doc["pools"] if x["name"] == pool)
    return [HostReport.from_dict(n["report"]) for n in p["nodes"] if n["report"]]


def test_two_pools_of_two_nodes_healthy(cluster: Any, stack: Path, tmp_path: Path,
                                        cpu_nodes: None) -> None:
    add_pool_nodes(cluster, "gpu-a", 2)
    add_pool_nodes(cluster, "gpu-b", 2)
    junit = tmp_path / "out" / "junit.xml"
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--tier", "3", "--junit",
                                  str(junit))
    assert code == 0, output
    assert doc is not None and doc["ok"] and doc["summary"]["fail"] == 0
    hosts = {r.host for p in ("gpu-a", "gpu-b") for r in reports(doc, p)}
    assert hosts == {"gpu-a-node-0", "gpu-a-node-1", "gpu-b-node-0", "gpu-b-node-1"}
    for node in (n for p in doc["pools"] for n in p["nodes"]):  # startup apart from run
        assert node["timing"]["startup_s"] >= 0 and node["timing"]["run_s"] > 0, node["timing"]
    for pool in ("gpu-a", "gpu-b"):
        for r in reports(doc, pool):  # the cross-node tier really joined the pool's two nodes
            fabric = next(x for x in r.results if x.probe == "fabric_busbw")
            assert fabric.verdict is Verdict.PASS and fabric.details["world"] == 2
    import xml.etree.ElementTree as ET

    suites = ET.parse(junit).getroot().findall("testsuite")
    assert sorted(s.get("name") for s in suites) == ["c1/gpu-a", "c1/gpu-b"]
    assert_nothing_left(cluster, doc["run_id"])


def test_a_crashing_pod_is_named_and_its_peer_kept(cluster: Any, stack: Path,
                                                  tmp_path: Path, cpu_nodes: None) -> None:
    a = add_pool_nodes(cluster, "gpu-a", 2)
    add_pool_nodes(cluster, "gpu-b", 2)
    cluster.set_node_command(a[1], ["python", "-c", "import sys; print('CUDA error: an "
                                         "illegal memory access'); sys.exit(3)"])
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--tier", "1",
                                  "--pools", "gpu-a")
    assert code == 1, output
    assert "gpu-a" in output and a[1] in output and "exited 3" in output
    assert "illegal memory access" in output
    assert doc is not None
    assert [r.host for r in reports(doc, "gpu-a")] == [a[0]]
    assert_nothing_left(cluster, doc["run_id"])


def _recorded(host: str, tflops: float) -> str:
    """An H100 host's report in the shape a real run prints, with this matmul figure; the
    sustained figure (0.95 of it) is an assumed healthy value: no sustained run is recorded."""
    results = [ProbeResult(f"cuda{i}", "inventory", 0, Verdict.PASS, "recorded", 79.19, 80.0,
                           "GiB") for i in range(8)]
    results += [ProbeResult(f"cuda{i}", "known_answer", 1, Verdict.PASS, "recorded", 2e-4,
                            5e-3, "rel err", details={"checksum": 1234.5}) for i in range(8)]
    results += [ProbeResult(f"cuda{i}", "matmul_tflops", 2, Verdict.PASS, "recorded",
                            tflops * (1 + i * 0.001), 989.0, "TFLOP/s") for i in range(8)]
    results += [ProbeResult(f"cuda{i}", "memory_gbps", 2, Verdict.PASS, "recorded", 2900.0,
                            3350.0, "GB/s") for i in range(8)]
    results += [ProbeResult(f"cuda{i}", "sustained_tflops", 2, Verdict.PASS, "recorded",
                            0.95 * tflops, 989.0, "TFLOP/s") for i in range(8)]
    rep = HostReport(host=host, backend="torch", platform="gpu", versions={"torch": "2.13.0"},
                     tier=2, results=tuple(results), accelerator="h100-80gb")
    return json.dumps(rep.to_dict())


def test_a_node_20_percent_slower_than_its_peers_fails_as_an_outlier(
        cluster: Any, tmp_path: Path, cpu_nodes: None) -> None:
    stack = tmp_path / "Pulumi.three.yaml"
    stack.write_text(STACK.replace("nodes: 2,\n         zone: us-central1-a}\n      - {name: "
                                   "gpu-b", "nodes: 3,\n         zone: us-central1-a}\n      - "
                                   "{name: gpu-b"), encoding="utf-8")
    nodes = add_pool_nodes(cluster, "gpu-a", 3)
    for node, tflops in zip(nodes, (800.0, 790.0, 640.0), strict=True):
        recorded = tmp_path / f"{node}.json"
        recorded.write_text(_recorded(node, tflops), encoding="utf-8")
        cluster.set_node_command(node, ["python", "-c", "import sys; print(open("
                                             "sys.argv[1]).read())", str(recorded)])
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a")
    assert code == 1, output
    assert doc is not None
    assert [f for f in doc["failures"]] == [
        next(f for f in doc["failures"] if nodes[2] in f)]
    assert "node outlier" in output and "0.81 of its peers" in output
    assert_nothing_left(cluster, doc["run_id"])


def test_an_unschedulable_pool_is_named_with_the_reason(cluster: Any, stack: Path,
                                                        tmp_path: Path,
                                                        cpu_nodes: None) -> None:
    for node in add_pool_nodes(cluster, "gpu-a", 2):  # none for gpu-b
        # gpu-a answers at once: the short timeout is for gpu-b's scheduling, not for a
        # loaded machine's agent start-up
        cluster.set_node_output(node, _recorded(node, 800.0))
    started = time.monotonic()
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--tier", "1",
                                  "--timeout-s", "5")
    assert code == 1, output
    assert time.monotonic() - started < 60
    assert doc is not None
    b = next(p for p in doc["pools"] if p["name"] == "gpu-b")
    assert b["status"] == "unschedulable"
    assert "could not be scheduled" in b["reason"] and "node affinity/selector" in b["reason"]
    assert len(reports(doc, "gpu-a")) == 2
    assert_nothing_left(cluster, doc["run_id"])


@pytest.mark.parametrize(("status", "path"), [(500, "/jobs"), (429, "/pods"), (0, "/log"),
                                            (503, "/configmaps")])
def test_api_server_failing_twice_then_ok_completes(fake_cluster: Any, stack: Path,
                                                   tmp_path: Path, cpu_nodes: None,
                                                   status: int, path: str) -> None:
    """500 and 503, 429 (throttled) and a dropped connection (0), on creates, lists and log
    reads: each retried with backoff, and the run completes."""
    add_pool_nodes(fake_cluster, "gpu-a", 2)
    fake_cluster.fail_next(2, status=status, path_contains=path)
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--tier", "0",
                                  "--pools", "gpu-a")
    assert code == 0, output
    assert fake_cluster.failures_left() == 0  # both failures were really served
    assert doc is not None and len(reports(doc, "gpu-a")) == 2
    assert_nothing_left(fake_cluster, doc["run_id"])


def test_a_kubeconfig_pointing_nowhere_is_exit_2_naming_the_cluster(
        stack: Path, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kc"
    kc.write_text(f"apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster: {{server: "
                  f"'http://127.0.0.1:{port}'}}\nusers:\n- name: u\n  user: {{token: t}}\n"
                  "contexts:\n- name: c1\n  context: {cluster: x, user: u}\n"
                  "current-context: c1\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["smoke", "run", str(stack), "--kubeconfig", str(kc)])
    assert result.exit_code == 2
    assert "cluster c1" in result.output and "unreachable" in result.output
    assert "gcloud container clusters get-credentials c1" in result.output


def test_sigint_mid_run_exits_130_and_leaves_nothing(cluster: Any, stack: Path,
                                                     tmp_path: Path) -> None:
    nodes = add_pool_nodes(cluster, "gpu-a", 2)
    for n in nodes:
        cluster.set_node_command(n, ["python", "-c", "import time; time.sleep(120)"])
    kc = cluster.kubeconfig(tmp_path / "kubeconfig", context="fake")
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "cli", "smoke", "run", str(stack),
                             "--kubeconfig", str(kc), "--context", "c1=fake", "--pools",
                             "gpu-a"], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(repo)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = [o for o in cluster.objects(RUN_LABEL)
                   if o.get("kind") == "Pod" and (o.get("status") or {}).get("phase")
                   == "Running"]
        if len(running) == 2:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the run's pods never started: " + proc.communicate()[1][-2000:])
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert cluster.objects(RUN_LABEL) == []


def test_run_help_documents_every_option() -> None:
    result = CliRunner().invoke(app, ["smoke", "run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for opt in ("--outputs", "--kubeconfig", "--context", "--pools", "--tier", "--timeout-s",
                "--image", "--json", "--junit", "--out"):
        assert opt in result.output
    assert "130" in result.output


TPU_STACK = HEAD + """\
      - {name: v5p-ms, cluster: c1, team: research, accelerator: v5p, topology: 2x2x2,
         multislice: 2, zone: us-central1-a}
"""


def _tpu_report(host: str) -> str:
    """A v5p host's complete tier-2 report (the launcher checks every device and probe)."""
    results = [ProbeResult(f"tpu{i}", "inventory", 0, Verdict.PASS, "recorded", 95.7, 95.0,
                           "GiB") for i in range(4)]
    results += [ProbeResult(f"tpu{i}", "known_answer", 1, Verdict.PASS, "recorded", 1e-6,
                            5e-3, "rel err", details={"checksum": 99.5}) for i in range(4)]
    results += [ProbeResult("host", "psum", 1, Verdict.PASS, "recorded", 4.0, 4.0, "sum")]
    results += [ProbeResult(f"tpu{i}", "matmul_tflops", 2, Verdict.PASS, "recorded",
                            400.0 + i, 459.0, "TFLOP/s") for i in range(4)]
    results += [ProbeResult(f"tpu{i}", "memory_gbps", 2, Verdict.PASS, "recorded",
                            2400.0 + i, 2765.0, "GB/s") for i in range(4)]
    results += [ProbeResult(f"tpu{i}", "sustained_tflops", 2, Verdict.PASS, "recorded",
                            390.0, 459.0, "TFLOP/s") for i in range(4)]
    rep = HostReport(host=host, backend="jax", platform="tpu", versions={"jax": "0.10.2"},
                     tier=2, results=tuple(results), accelerator="v5p")
    return json.dumps(rep.to_dict())


def add_tpu_hosts(cluster: Any, tmp_path: Path, *, nodepool_labels: bool = False
                  ) -> tuple[Path, list[str]]:
    """TPU_STACK written to `tmp_path` and one fake node per host of its v5p multislice, each
    built from the recorded real TPU node (tests/smoke/data/nodes) with its slice's GKE node
    pool label (without `nodepool_labels`, none); every host prints a healthy recorded
    report."""
    from fleet import load_fleet
    from fleet.inventory import build_inventory

    stack = tmp_path / "Pulumi.tpu.yaml"
    stack.write_text(TPU_STACK, encoding="utf-8")
    pool = build_inventory(load_fleet(str(stack)), "tpu").pool("v5p-ms")
    resolved = load_fleet(str(stack)).pools[0]
    hosts = [f"tpu-host-{i}" for i in range(pool.hosts_per_slice * pool.slices)]
    for i, host in enumerate(hosts):
        # GKE makes one node pool per slice of a multislice
        node = pool_node(resolved, host, nodepool=f"v5p-ms-{i // pool.hosts_per_slice}")
        if not nodepool_labels:  # a node that lost its label: the run's slice index decides
            del node["metadata"]["labels"]["cloud.google.com/gke-nodepool"]
        cluster.add_node_object(node)
        cluster.set_node_output(host, _tpu_report(host))
    return stack, hosts


def test_a_multislice_runs_as_one_jobset_over_every_host(fake_cluster: Any, tmp_path: Path,
                                                         cpu_nodes: None) -> None:
    """The TPU path through the JobSet controller: one JobSet, a Job per slice, a pod per
    host, every host pinned by the inventory's selectors and tolerations."""
    stack, hosts = add_tpu_hosts(fake_cluster, tmp_path)
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--tier", "2")
    assert code == 0, output
    assert doc is not None
    assert sorted(r.host for r in reports(doc, "v5p-ms")) == hosts
    kinds = {(m, p.split("/")[-1]) for m, p in fake_cluster.requests if m == "POST"}
    assert ("POST", "jobsets") in kinds and ("POST", "jobs") not in kinds
    assert_nothing_left(fake_cluster, doc["run_id"])


def test_outputs_alone_reach_the_cluster_with_their_kubeconfig(
        cluster: Any, stack: Path, tmp_path: Path, cpu_nodes: None) -> None:
    """After `pulumi up`: the saved `pulumi stack output --json --show-secrets` carries the
    deployed inventory and each cluster's kubeconfig; no stack file, no user kubeconfig."""
    from fleet import load_fleet
    from fleet.inventory import build_inventory

    nodes = add_pool_nodes(cluster, "gpu-a", 2)
    for node in nodes:
        cluster.set_node_output(node, _recorded(node, 800.0))
    inventory = build_inventory(load_fleet(str(stack)), "fake").to_dict()
    kc = cluster.kubeconfig(tmp_path / "kc-from-outputs", context="c1").read_text()
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"inventory": inventory, "kubeconfigs": {"c1": kc},
                                   "clusters": {"c1": cluster.url}}), encoding="utf-8")
    result = CliRunner().invoke(app, ["smoke", "run", "--outputs", str(outputs), "--pools",
                                      "gpu-a", "--kubeconfig", str(tmp_path / "missing"),
                                      "--timeout-s", "60", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout[result.stdout.find("{\n"):])
    assert sorted(r.host for r in reports(doc, "gpu-a")) == nodes
    assert_nothing_left(cluster, doc["run_id"])


def test_a_report_claiming_another_host_fails_the_pod_that_printed_it(
        cluster: Any, stack: Path, tmp_path: Path, cpu_nodes: None) -> None:
    """The launcher checks each report's host against the node its pod ran on (NODE_NAME
    comes from spec.nodeName): node 1 printing node 0's report fails, naming both."""
    nodes = add_pool_nodes(cluster, "gpu-a", 2)
    cluster.set_node_output(nodes[0], _recorded(nodes[0], 800.0))
    cluster.set_node_output(nodes[1], _recorded(nodes[0], 800.0))
    code, output, doc = smoke_run(cluster, stack, tmp_path, "--pools", "gpu-a",
                                  "--timeout-s", "60")
    assert code == 1, output
    assert doc is not None
    pool = next(p for p in doc["pools"] if p["name"] == "gpu-a")
    by_node = {n["node"]: n for n in pool["nodes"]}
    failed = [r for r in by_node[nodes[1]]["report"]["results"] if r["verdict"] == "fail"]
    assert [r["details"] for r in failed] == [{"judged_by": "launcher", "report_host": nodes[0],
                                               "pod_node": nodes[1]}]
    assert nodes[0] in failed[0]["reason"] and nodes[1] in failed[0]["reason"]
    assert not [r for r in by_node[nodes[0]]["report"]["results"] if r["verdict"] == "fail"]
