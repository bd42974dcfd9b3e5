"""The control plane fixture and the node stand-in themselves, on the real API server: a
recorded node registers and turns Ready (the node lifecycle controller lifts the not-ready
taint the API server's admission put on it), the real Job controller makes a pod, the real
scheduler binds it by taints and tolerations, the stand-in runs it, its log is read through
`pods/log`, deletion is honoured, and RBAC is on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controlplane.cluster import RealCluster
from tests.smoke.nodes import gke_node
from tests.waiting import wait_for

pytestmark = pytest.mark.controlplane


def _job(name: str, argv: list[str], *, tolerate: bool = True) -> dict[str, Any]:
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    return {"metadata": {"name": name}, "spec": {"backoffLimit": 0, "template": {
        "metadata": {"labels": {"app": name}},
        "spec": {"restartPolicy": "Never", "tolerations": tolerations if tolerate else [],
                 "containers": [{"name": "main", "image": "python:3.11", "command": argv}]}}}}


def test_a_recorded_node_turns_ready_and_loses_the_not_ready_taint(kube: RealCluster) -> None:
    kube.add_node_object(gke_node("gke-a-0", "a3-highgpu-8g", nodepool="a"))
    # the API server's TaintNodesByCondition admission puts the not-ready taint on a new node
    # (the create's answer has it; by the next read the lifecycle controller may have lifted it)
    node = kube.kubelet.registered["gke-a-0"]
    assert "node.kubernetes.io/not-ready" in {t["key"] for t in node["spec"].get("taints", [])}
    wait_for(lambda: "node.kubernetes.io/not-ready" not in {
        t["key"] for t in (kube.get("nodes", "", "gke-a-0") or {})["spec"].get("taints", [])})
    got = kube.get("nodes", "", "gke-a-0")
    assert got is not None
    assert got["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    lease = kube.get("leases", "kube-node-lease", "gke-a-0")
    assert lease is not None and lease["spec"]["holderIdentity"] == "gke-a-0"


def test_a_job_runs_on_a_node_and_its_log_is_read_through_the_api(kube: RealCluster) -> None:
    kube.add_node_object(gke_node("gke-a-0", "a3-highgpu-8g", nodepool="a"))
    kube.create("jobs", "plane", _job("hello", ["python", "-c", "print('hello from the node')"]))
    pod = wait_for(lambda: next((p for p in kube.list("pods", "plane", "app=hello")["items"]
                                 if p["status"].get("phase") == "Succeeded"), None))
    assert pod["spec"]["nodeName"] == "gke-a-0"
    (cs,) = pod["status"]["containerStatuses"]
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert kube.pod_log("plane", pod["metadata"]["name"]) == "hello from the node\n"
    wait_for(lambda: (kube.get("jobs", "plane", "hello") or {}).get("status", {}).get(
        "succeeded") == 1)


def test_a_failing_container_fails_the_pod_with_its_exit_code(kube: RealCluster) -> None:
    kube.add_node_object(gke_node("gke-a-0", "a3-highgpu-8g", nodepool="a"))
    kube.create("jobs", "plane", _job("boom", ["python", "-c", "raise SystemExit(3)"]))
    pod = wait_for(lambda: next((p for p in kube.list("pods", "plane", "app=boom")["items"]
                                 if p["status"].get("phase") == "Failed"), None))
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


def test_an_untolerated_taint_keeps_the_pod_pending(kube: RealCluster) -> None:
    kube.add_node_object(gke_node("gke-a-0", "a3-highgpu-8g", nodepool="a"))
    kube.create("jobs", "plane", _job("pending", ["python", "-c", "pass"], tolerate=False))
    pod = wait_for(lambda: next((p for p in kube.list("pods", "plane", "app=pending")["items"]
                                 if any(c.get("reason") == "Unschedulable" for c in
                                        p["status"].get("conditions") or [])), None))
    assert not pod["spec"].get("nodeName")
    assert "untolerated taint" in next(c["message"] for c in pod["status"]["conditions"]
                                       if c["type"] == "PodScheduled")


def test_a_deleted_pod_is_killed_and_removed(kube: RealCluster) -> None:
    kube.add_node_object(gke_node("gke-a-0", "a3-highgpu-8g", nodepool="a"))
    kube.create("jobs", "plane", _job("sleeper", ["python", "-c",
                                                 "import time; print('up', flush=True); "
                                                 "time.sleep(600)"]))
    pod = wait_for(lambda: next((p for p in kube.list("pods", "plane", "app=sleeper")["items"]
                                 if p["status"].get("phase") == "Running"), None))
    name = pod["metadata"]["name"]
    wait_for(lambda: kube.pod_log("plane", name) == "up\n")
    kube.delete("jobs", "plane", "sleeper", propagation="Background")
    wait_for(lambda: kube.get("pods", "plane", name) is None)
    assert not kube.kubelet.runs


def test_rbac_is_enforced(kube: RealCluster, control_plane: Any) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    kube.ensure_namespace("plane")
    kube.create("serviceaccounts", "plane", {"metadata": {"name": "nobody"}})
    api = control_plane.client(as_user="system:serviceaccount:plane:nobody")
    with pytest.raises(ApiException) as refused:
        client.CoreV1Api(api).list_node()
    assert refused.value.status == 403
