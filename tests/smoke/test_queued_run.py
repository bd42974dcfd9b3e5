"""A smoke run on a GKE queued-provisioning pool obtains its nodes through Kueue's
ProvisioningRequest admission check (issue 20 item 2), on the fake cluster: the queues and
checks accelfleet deploys (components/k8s/_kueue.py) are loaded into it, the fake Kueue makes
the ProvisioningRequest, and the fake autoscaler adds the pool's nodes, built from the recorded
real a3-highgpu-8g / ct6e-standard-4t nodes (with GKE's gke-queued taint and the request's
label, as the recorded queued-pool node carries) when it accepts the request.

Before: the smoke Job named no queue, the pool has no node, and the pods waited out the
run's timeout (`0/0 nodes are available`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from components.k8s import kueue_objects
from fleet import load_fleet
from fleet.inventory import SMOKE_QUEUE, build_inventory
from fleet.routing import fleet_routing
from smoke.cluster._queue import MAX_RUN_DURATION_ANNOTATION, QUEUE_NAME_LABEL
from smoke.cluster.workload import RenderOptions, render_run
from tests.smoke.fakekube._api import KIND_PLURALS
from tests.smoke.nodes import PROVISIONING_REQUEST_LABEL, pool_node
from tests.smoke.test_cluster_run import (
    HEAD,
    assert_nothing_left,
    reports,
    smoke_run,
)

pytest.importorskip("torch")

QUEUED = HEAD + """\
      - {name: h100-q, cluster: c1, team: research, accelerator: a3-highgpu-8g, nodes: 2,
         zone: us-central1-a, capacity: queued}
"""
QUEUED_TPU = HEAD + """\
      - {name: v6e-q, cluster: c1, team: research, accelerator: v6e, topology: 4x4,
         zone: us-central1-a, capacity: queued}
"""
# a run that is held (by Kueue, or for want of a node) ends at its timeout: the shortest
# `smoke run --timeout-s` takes that still leaves a loaded machine the time to create the Job
HELD_S = 10
QUEUED_TAINT = {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"}


def deploy(cluster: Any, stack: Path) -> None:
    """What `pulumi up` leaves on the cluster for Kueue: its objects, as accelfleet makes them,
    and the queued pools the autoscaler may grow (no node yet)."""
    fleet = load_fleet(str(stack))
    for routing in fleet_routing(fleet):
        for obj in kueue_objects(routing):
            if obj["kind"] == "Namespace":
                cluster.create("namespaces", "", obj)
                continue
            cluster.create(KIND_PLURALS[obj["kind"]], obj["metadata"].get("namespace", ""), obj)
    for pool in fleet.pools:
        def make(name: str, request: str, pool: Any = pool) -> dict[str, Any]:
            return pool_node(pool, name, provisioning_request=request)
        cluster.add_autoscaled_pool(pool.name, make)


def test_the_smoke_job_of_a_queued_pool_goes_through_kueue(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.q.yaml"
    stack.write_text(QUEUED, encoding="utf-8")
    inv = build_inventory(load_fleet(str(stack)), "q")
    run = render_run(inv, RenderOptions(run_id="r1", namespace="smoke-test", timeout_s=300))
    [workload] = run.pools
    [job] = [o for o in workload.objects if o["kind"] == "Job"]
    assert job["metadata"]["labels"][QUEUE_NAME_LABEL] == SMOKE_QUEUE
    assert job["metadata"]["annotations"][MAX_RUN_DURATION_ANNOTATION] == "300"
    assert job["spec"]["suspend"] is True
    kubernetes_validate.validate(job, "1.33", strict=True)
    tolerations = job["spec"]["template"]["spec"]["tolerations"]
    assert {**QUEUED_TAINT, "operator": "Equal"} in tolerations


def test_a_queued_pool_gets_its_nodes_through_a_provisioning_request(
        fake_cluster: Any, tmp_path: Path, cpu_nodes: None) -> None:
    stack = tmp_path / "Pulumi.q.yaml"
    stack.write_text(QUEUED, encoding="utf-8")
    deploy(fake_cluster, stack)
    assert fake_cluster.list("nodes", None)["items"] == []  # a queued pool starts empty
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--tier", "1")
    assert code == 0, output
    assert doc is not None
    [request] = fake_cluster.accepted
    assert request["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert request["spec"]["parameters"] == {"maxRunDurationSeconds": "120"}
    assert request["spec"]["podSets"][0]["count"] == 2
    nodes = fake_cluster.list("nodes", None)["items"]
    assert len(nodes) == 2
    hosts = sorted(r.host for r in reports(doc, "h100-q"))
    assert hosts == sorted(n["metadata"]["name"] for n in nodes)
    for node in nodes:  # as the recorded queued-pool node: GKE's labels and taints
        labels = node["metadata"]["labels"]
        assert labels["node.kubernetes.io/instance-type"] == "a3-highgpu-8g"
        assert labels[PROVISIONING_REQUEST_LABEL].startswith("gke-")
        assert QUEUED_TAINT in node["spec"]["taints"]
    assert_nothing_left(fake_cluster, doc["run_id"])
    assert fake_cluster.objects() == [o for o in fake_cluster.objects()
                                      if o["kind"] != "ProvisioningRequest"]


def test_a_queued_tpu_slice_gets_its_hosts_through_a_provisioning_request(
        fake_cluster: Any, tmp_path: Path, cpu_nodes: None) -> None:
    """A multi-host v6e 4x4 slice (4 hosts) as one JobSet through Kueue: one request for
    every host, with the TPU parameters of its ProvisioningRequestConfig."""
    stack = tmp_path / "Pulumi.qt.yaml"
    stack.write_text(QUEUED_TPU, encoding="utf-8")
    deploy(fake_cluster, stack)
    fake_cluster.set_node_output("*", json.dumps({"note": "not a report"}))
    smoke_run(fake_cluster, stack, tmp_path, "--tier", "0")
    [request] = fake_cluster.accepted
    assert request["spec"]["parameters"] == {"tpu-topology": "4x4",
                                             "maxRunDurationSeconds": "120"}
    assert request["spec"]["podSets"][0]["count"] == 4
    nodes = fake_cluster.list("nodes", None)["items"]
    assert len(nodes) == 4
    for node in nodes:
        labels = node["metadata"]["labels"]
        assert labels["cloud.google.com/gke-tpu-topology"] == "4x4"
        assert QUEUED_TAINT in node["spec"]["taints"]
    pods = [o for o in fake_cluster.list("pods", None)["items"]]
    assert all(p["spec"].get("nodeName") in {n["metadata"]["name"] for n in nodes}
               for p in pods)


def test_without_the_queue_the_pool_never_gets_a_node(fake_cluster: Any, tmp_path: Path,
                                                       cpu_nodes: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The finding: a smoke Job that names no queue makes no ProvisioningRequest, so a
    queued pool's pods stay unschedulable until the run's timeout."""
    import smoke.cluster.workload

    monkeypatch.setattr(smoke.cluster.workload, "through_kueue",
                        lambda objs, queue, timeout_s: objs)
    text = QUEUED
    stack = tmp_path / "Pulumi.q.yaml"
    stack.write_text(text, encoding="utf-8")
    deploy(fake_cluster, stack)
    code, output, _ = smoke_run(fake_cluster, stack, tmp_path, "--tier", "1",
                                "--timeout-s", str(HELD_S))
    assert code == 1
    assert "could not be scheduled" in output
    assert fake_cluster.accepted == []


def test_a_request_that_never_comes_through_names_kueue_and_the_request(
        fake_cluster: Any, tmp_path: Path, cpu_nodes: None) -> None:
    """A queued pool whose ProvisioningRequest is never provisioned: the Job stays suspended
    by Kueue. Before: "2 of 2 pods did not finish within 30 s", no word of Kueue."""
    text = QUEUED
    stack = tmp_path / "Pulumi.q.yaml"
    stack.write_text(text, encoding="utf-8")
    deploy(fake_cluster, stack)
    fake_cluster.accept_requests = False
    code, output, doc = smoke_run(fake_cluster, stack, tmp_path, "--tier", "1",
                                  "--timeout-s", str(HELD_S))
    assert code == 1, output
    assert doc is not None
    [pool] = [p for p in doc["pools"] if p["name"] == "h100-q"]
    reason = pool["reason"]
    assert "still held by Kueue" in reason
    assert "suspended" in reason
    assert "ProvisioningRequest job-" in reason
    assert "Provisioned=False (CapacityIsNotFound" in reason
    assert "admission check" in reason and "quota" in reason
    assert fake_cluster.accepted == []


def test_held_by_kueue_reads_a_jobsets_request_by_kueues_naming() -> None:
    """Real Kueue owns the request by the Workload (`jobset-<name>-<hash>`), not the JobSet:
    it is found by name; no request at all says the job was not admitted; a resumed job is
    not held."""
    from smoke.cluster._queue import held_by_kueue

    js = {"kind": "JobSet", "metadata": {"name": "smoke-v6e", "uid": "u1",
                                         "labels": {QUEUE_NAME_LABEL: "smoke"}},
          "spec": {"suspend": True}}
    req = {"metadata": {"name": "jobset-smoke-v6e-5d1e2-dws-prov-1"},
           "status": {"conditions": [{"type": "Failed", "status": "True",
                                      "reason": "CapacityIsNotFound"}]}}
    other = {"metadata": {"name": "job-someone-else-1a2b3-dws-prov-1"}}
    got = held_by_kueue(js, [other, req], 60, "smoke-test")
    assert got is not None
    assert "JobSet smoke-v6e is still held by Kueue after 60 s" in got
    assert "ProvisioningRequest jobset-smoke-v6e-5d1e2-dws-prov-1: Failed=True " \
        "(CapacityIsNotFound)" in got and "someone-else" not in got
    assert "-n smoke-test" in got
    assert "no ProvisioningRequest made" in (held_by_kueue(js, [other], 60, "ns") or "")
    assert held_by_kueue({**js, "spec": {"suspend": False}}, [req], 60, "ns") is None


@pytest.mark.controlplane
def test_on_a_real_plane_without_kueue_running_the_pool_is_named_held_by_kueue(
        kube: Any, tmp_path: Path, cpu_nodes: None) -> None:
    """The real API server with Kueue's CRDs and the objects accelfleet deploys for it, but no
    Kueue controller (as a cluster whose Kueue is down): the smoke Job is created suspended,
    nothing admits it, and the run names Kueue and says no request was made, within its
    timeout. The node of the pool exists: the hold is Kueue's, not the scheduler's."""
    text = QUEUED
    stack = tmp_path / "Pulumi.q.yaml"
    stack.write_text(text, encoding="utf-8")
    fleet = load_fleet(str(stack))
    for routing in fleet_routing(fleet):
        for obj in kueue_objects(routing):
            if obj["kind"] == "Namespace":
                kube.ensure_namespace(obj["metadata"]["name"])
                continue
            kube.create(KIND_PLURALS[obj["kind"]], obj["metadata"].get("namespace", ""), obj)
    [pool] = fleet.pools
    kube.add_node_object(pool_node(pool, "h100-q-node-0"))
    code, output, doc = smoke_run(kube, stack, tmp_path, "--tier", "1",
                                  "--timeout-s", str(HELD_S))
    assert code == 1, output
    assert doc is not None
    [got] = [p for p in doc["pools"] if p["name"] == "h100-q"]
    assert f"still held by Kueue after {HELD_S} s" in got["reason"], got
    assert "no ProvisioningRequest made for it" in got["reason"]
    jobs = [o for o in kube.objects() if o["kind"] == "Job"]
    assert jobs == []  # cleaned up all the same
    assert_nothing_left(kube, doc["run_id"])
